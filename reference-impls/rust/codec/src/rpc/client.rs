//! The load client's side: ids per connection, replies matched by id.

#[allow(unused_imports)]
use super::*;
use crate::protocol::{Keep, Payload, SendResult};

/// The client side of one rpc connection: ids 0, 1, 2 ... (`RPC-ID-1`), never one that is
/// pending (`RPC-ID-2`), responses matched by id (`RPC-MATCH-*`).
#[derive(Debug)]
pub struct RpcClient<T> {
    pub(super) m: IdMatcher<T>,
    pub(super) next_id: u32,
    pub(super) proto: Rpc,
}

impl<T> RpcClient<T> {
    /// Sends a call under the next id with `write(id)`, pending when `keep` is
    /// `Some((now, tag))`; a refused send takes no id.
    fn call(
        &mut self,
        keep: Keep<T>,
        write: impl FnOnce(u32) -> Result<(), ProtocolError>,
    ) -> SendResult {
        let id = self.next_id;
        match keep {
            Some((now, tag)) => self.m.send_request(now, id, tag, || write(id))?,
            None => self.m.send_unpending(|| write(id))?,
        }
        self.next_id = id.wrapping_add(1);
        Ok(())
    }
}

impl<T> ClientMatcher<T> for RpcClient<T> {
    type Frame = RpcFrame;
    type Matcher = IdMatcher<T>;

    /// A call to the echo service with the protocol's call mode (`--variant`) and END_STREAM
    /// (the testee's plain call: UNARY, flags 0x04). An unanswered call (load `receive` mode
    /// against a sink) takes an id too.
    fn send_payload(
        &mut self,
        keep: Keep<T>,
        p: Payload<'_, impl FnOnce(&mut [u8])>,
    ) -> SendResult {
        let rpc = self.proto;
        let flags = rpc.mode | END_STREAM;
        let Payload { len, out, fill } = p;
        self.call(keep, |id| rpc.write_echo_call(out, id, flags, len, fill))
    }

    /// A call with the frame's service, method, flags and payload; only REQUESTs are calls.
    fn send_frame(&mut self, now: u64, tag: T, frame: &RpcFrame, out: &mut BytesMut) -> SendResult {
        if self.m.is_failed() {
            return Err(SendError::ConnectionFailed);
        }
        if frame.kind != REQUEST as u32 {
            return Err(SendError::Refused("a client sends calls (REQUESTs) only"));
        }
        let max = self.proto.max_body;
        self.call(Some((now, tag)), |id| {
            let f = RpcFrame {
                service: frame.service.clone(),
                method: frame.method.clone(),
                payload: frame.payload.clone(),
                ..RpcFrame::new(REQUEST, frame.flags, id)
            };
            encode(out, &f, max)
        })
    }

    fn send_one_way(
        &mut self,
        _len: usize,
        _out: &mut BytesMut,
        _fill: impl FnOnce(&mut [u8]),
    ) -> SendResult {
        Err(SendError::Refused("rpc has no one-way call"))
    }

    /// `RPC-MATCH-4`: only RESPONSEs complete requests.
    fn receive(&mut self, f: &RpcFrame) -> Received<T> {
        if self.m.is_failed() {
            return Received::Ignored;
        }
        if f.kind != RESPONSE as u32 {
            return Received::PeerRequest;
        }
        self.m.receive(f.id)
    }

    fn matcher(&self) -> &IdMatcher<T> {
        &self.m
    }

    fn matcher_mut(&mut self) -> &mut IdMatcher<T> {
        &mut self.m
    }
}
