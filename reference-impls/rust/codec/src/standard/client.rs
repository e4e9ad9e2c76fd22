//! The load client's side: sequence numbers, replies matched by number.

#[allow(unused_imports)]
use super::*;

/// The client side of a `standard` connection: sequence-number matching ([`SequenceMatcher`]).
#[derive(Debug)]
pub struct StandardClient<T> {
    pub(super) m: SequenceMatcher<T>,
    pub(super) proto: Standard,
}

impl Standard {
    /// Writes one frame of `len` payload bytes (after the checks of [`check_encode`]).
    fn write(
        &self,
        out: &mut BytesMut,
        flag: u8,
        seq: u8,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), ProtocolError> {
        check_encode(len, self.max_payload)?;
        out.reserve(header_len(len) + len);
        put_header(out, flag, seq, len);
        put_payload(out, len, fill);
        Ok(())
    }
}

impl<T> StandardClient<T> {
    /// Sends a frame with `flag` under the next sequence number, never pending (STD-MATCH-4).
    fn send_unpending(
        &mut self,
        flag: u8,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        let p = self.proto;
        self.m
            .send_one_way(|seq| p.write(out, flag, seq, len, fill))
            .map(|_| ())
    }
}

impl<T> ClientMatcher<T> for StandardClient<T> {
    type Frame = StdFrame;
    type Matcher = SequenceMatcher<T>;

    fn send_request(
        &mut self,
        now: u64,
        tag: T,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        let p = self.proto;
        self.m
            .send_request(now, tag, |seq| p.write(out, REQUEST, seq, len, fill))
            .map(|_| ())
    }

    fn send_one_way(
        &mut self,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        self.send_unpending(ONE_WAY, len, out, fill)
    }

    /// A request numbered like a one-way message (STD-SEQ-1 order, no pending check).
    fn send_unanswered(
        &mut self,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        self.send_unpending(REQUEST, len, out, fill)
    }

    fn receive(&mut self, f: &StdFrame) -> Received<T> {
        self.m.receive(f.is_reply(), f.sequence)
    }

    fn matcher(&self) -> &SequenceMatcher<T> {
        &self.m
    }

    fn matcher_mut(&mut self) -> &mut SequenceMatcher<T> {
        &mut self.m
    }
}
