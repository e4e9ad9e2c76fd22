//! The load client's side: ids per connection, replies matched by id.

#[allow(unused_imports)]
use super::*;

/// The client side of one rpc connection: ids 0, 1, 2 ... (`RPC-ID-1`), never one that is
/// pending (`RPC-ID-2`), responses matched by id (`RPC-MATCH-*`).
#[derive(Debug)]
pub struct RpcClient<T> {
    pub(super) m: IdMatcher<T>,
    pub(super) next_id: u32,
    pub(super) proto: Rpc,
}

impl<T> RpcClient<T> {
    /// The id the next call takes.
    pub fn next_id(&self) -> u32 {
        self.next_id
    }

    /// Sends a call under the next id with `write(id)`; a refused send takes no id.
    fn call(
        &mut self,
        now: u64,
        tag: T,
        write: impl FnOnce(u32) -> Result<(), ProtocolError>,
    ) -> Result<(), SendError<ProtocolError>> {
        let id = self.next_id;
        self.m.send_request(now, id, tag, || write(id))?;
        self.next_id = id.wrapping_add(1);
        Ok(())
    }
}

impl<T> ClientMatcher<T> for RpcClient<T> {
    type Frame = RpcFrame;
    type Matcher = IdMatcher<T>;

    /// A call to the echo service with the protocol's call mode (`--variant`) and END_STREAM
    /// (the testee's plain call: UNARY, flags 0x04).
    fn send_request(
        &mut self,
        now: u64,
        tag: T,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        let p = self.proto;
        let flags = p.mode | END_STREAM;
        self.call(now, tag, |id| p.write_echo_call(out, id, flags, len, fill))
    }

    /// A call with the frame's service, method, flags and payload; only REQUESTs are calls.
    fn send_frame(
        &mut self,
        now: u64,
        tag: T,
        frame: &RpcFrame,
        out: &mut BytesMut,
    ) -> Result<(), SendError<ProtocolError>> {
        if self.m.is_failed() {
            return Err(SendError::ConnectionFailed);
        }
        if frame.kind != REQUEST as u32 {
            return Err(SendError::Refused("a client sends calls (REQUESTs) only"));
        }
        let max = self.proto.max_body;
        self.call(now, tag, |id| {
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
    ) -> Result<(), SendError<ProtocolError>> {
        Err(SendError::Refused("rpc has no one-way call"))
    }

    /// A call that is not kept pending (load `receive` mode against a sink); it takes an id.
    fn send_unanswered(
        &mut self,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        let p = self.proto;
        let id = self.next_id;
        self.m
            .send_unpending(|| p.write_echo_call(out, id, p.mode | END_STREAM, len, fill))?;
        self.next_id = id.wrapping_add(1);
        Ok(())
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
