//! The load client's side: sequence numbers, replies matched by number.

#[allow(unused_imports)]
use super::*;
use crate::protocol::{Keep, Payload, SendResult};

/// The client side of a `standard` connection: sequence-number matching ([`SequenceMatcher`]).
#[derive(Debug)]
pub struct StandardClient<T> {
    pub(super) m: SequenceMatcher<T>,
    pub(super) proto: Standard,
}

impl Standard {
    /// Writes one frame with this payload (after the checks of [`check_encode`]).
    fn write(
        &self,
        flag: u8,
        seq: u8,
        p: Payload<'_, impl FnOnce(&mut [u8])>,
    ) -> Result<(), ProtocolError> {
        check_encode(p.len, self.max_payload)?;
        let len = p.len;
        p.put_frame(header_len(len), |out| put_header(out, flag, seq, len));
        Ok(())
    }
}

impl<T> StandardClient<T> {
    /// Sends a frame with `flag` under the next sequence number, never pending (STD-MATCH-4).
    fn send_unpending(&mut self, flag: u8, p: Payload<'_, impl FnOnce(&mut [u8])>) -> SendResult {
        let s = self.proto;
        self.m.send_one_way(|seq| s.write(flag, seq, p)).map(|_| ())
    }
}

impl<T> ClientMatcher<T> for StandardClient<T> {
    type Frame = StdFrame;
    type Matcher = SequenceMatcher<T>;

    /// Unanswered requests are numbered like one-way messages (STD-SEQ-1 order, no pending
    /// check).
    fn send_payload(
        &mut self,
        keep: Keep<T>,
        p: Payload<'_, impl FnOnce(&mut [u8])>,
    ) -> SendResult {
        let Some((now, tag)) = keep else {
            return self.send_unpending(REQUEST, p);
        };
        let s = self.proto;
        self.m
            .send_request(now, tag, |seq| s.write(REQUEST, seq, p))
            .map(|_| ())
    }

    fn send_one_way(
        &mut self,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> SendResult {
        self.send_unpending(ONE_WAY, Payload { len, out, fill })
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
