//! The load client's side: requests, replies matched in order.

#[allow(unused_imports)]
use super::*;
use crate::protocol::{send_fifo, Keep, Payload, SendResult};

/// The client side of a `length-field` connection: FIFO matching ([`FifoMatcher`]).
#[derive(Debug)]
pub struct LengthFieldClient<T> {
    pub(super) m: FifoMatcher<T>,
    pub(super) proto: LengthField,
}

impl LengthField {
    /// Writes one frame with this payload (after the checks of [`Profile::check_encode`]).
    fn write(&self, p: Payload<'_, impl FnOnce(&mut [u8])>) -> Result<(), ProtocolError> {
        self.profile.check_encode(p.len, self.max_payload)?;
        let len = p.len;
        p.put_frame(self.profile.header_len(len), |out| {
            self.profile.put_header(out, len)
        });
        Ok(())
    }
}

impl<T> ClientMatcher<T> for LengthFieldClient<T> {
    type Frame = Bytes;
    type Matcher = FifoMatcher<T>;

    fn send_payload(
        &mut self,
        keep: Keep<T>,
        p: Payload<'_, impl FnOnce(&mut [u8])>,
    ) -> SendResult {
        let lf = self.proto;
        send_fifo(&mut self.m, keep, || lf.write(p))
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
