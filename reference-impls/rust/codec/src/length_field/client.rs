//! The load client's side: requests, replies matched in order.

#[allow(unused_imports)]
use super::*;

/// The client side of a `length-field` connection: FIFO matching ([`FifoMatcher`]).
#[derive(Debug)]
pub struct LengthFieldClient<T> {
    pub(super) m: FifoMatcher<T>,
    pub(super) proto: LengthField,
}

impl LengthField {
    /// Writes one frame of `len` payload bytes (after the checks of [`Profile::check_encode`]).
    fn write(
        &self,
        out: &mut BytesMut,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), ProtocolError> {
        self.profile.check_encode(len, self.max_payload)?;
        out.reserve(self.profile.header_len(len) + len);
        self.profile.put_header(out, len);
        put_payload(out, len, fill);
        Ok(())
    }
}

impl<T> ClientMatcher<T> for LengthFieldClient<T> {
    type Frame = Bytes;
    type Matcher = FifoMatcher<T>;

    fn send_request(
        &mut self,
        now: u64,
        tag: T,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        let p = self.proto;
        self.m.send_request(now, tag, || p.write(out, len, fill))
    }

    fn send_unanswered(
        &mut self,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        let p = self.proto;
        self.m.send_unpending(|| p.write(out, len, fill))
    }

    fn receive(&mut self, _frame: &Bytes) -> Received<T> {
        self.m.receive()
    }

    fn matcher(&self) -> &FifoMatcher<T> {
        &self.m
    }

    fn matcher_mut(&mut self) -> &mut FifoMatcher<T> {
        &mut self.m
    }
}
