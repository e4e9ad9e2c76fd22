//! A client connection: request/reply matching, the opening handshake, streams, and the payload
//! written in place.

#[allow(unused_imports)]
use super::*;
use crate::matcher::FifoMatcher;

/// What a client's send returns: `Ok` once the frame is written, or why nothing was written.
pub type SendResult = Result<(), SendError<ProtocolError>>;

/// A request's payload: `len` bytes that `fill` writes in place in `out`, after the frame's
/// header.
pub struct Payload<'a, F> {
    pub len: usize,
    pub out: &'a mut BytesMut,
    pub fill: F,
}

impl<F: FnOnce(&mut [u8])> Payload<'_, F> {
    /// Appends the frame: room reserved for `header_len` header bytes and the payload, the
    /// header written by `put_header`, then the payload by `fill`.
    pub(crate) fn put_frame(self, header_len: usize, put_header: impl FnOnce(&mut BytesMut)) {
        self.out.reserve(header_len + self.len);
        put_header(self.out);
        put_payload(self.out, self.len, self.fill);
    }
}

/// Sends a request written by `write` on a FIFO-matched connection ([`FifoMatcher`]), kept as
/// `keep` says.
pub(crate) fn send_fifo<T>(
    m: &mut FifoMatcher<T>,
    keep: Keep<T>,
    write: impl FnOnce() -> Result<(), ProtocolError>,
) -> SendResult {
    match keep {
        Some((now, tag)) => m.send_request(now, tag, write),
        None => m.send_unpending(write),
    }
}

/// How a request is kept: `Some((now, tag))` pending under `tag` until `now + timeout` (or its
/// reply), `None` never pending.
pub type Keep<T> = Option<(u64, T)>;

/// What a client connection does with a request or a received frame.
///
/// Sends write the frame to `out` and call `fill` with its payload's `len` bytes (in `out`),
/// so that a caller can generate the payload in place. A refused send writes nothing and
/// changes nothing.
pub trait ClientMatcher<T> {
    type Frame;
    /// The matcher of the connection's pending requests, which `expire`, `fail`, `pending` and
    /// `is_failed` answer for.
    type Matcher: RequestMatcher<T>;

    fn matcher(&self) -> &Self::Matcher;

    fn matcher_mut(&mut self) -> &mut Self::Matcher;

    /// Sends a request: pending until `now + timeout` or its reply.
    fn send_request(
        &mut self,
        now: u64,
        tag: T,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> SendResult {
        self.send_payload(Some((now, tag)), Payload { len, out, fill })
    }

    /// Sends a request with this payload, kept as `keep` says ([`Self::send_request`],
    /// [`Self::send_unanswered`]).
    fn send_payload(&mut self, keep: Keep<T>, p: Payload<'_, impl FnOnce(&mut [u8])>)
        -> SendResult;

    /// Sends a request built from a whole frame (the testee's `send_frame`: an rpc call with its
    /// own service, method and mode); the client still sets what it owns (the id, `RPC-ID-1`).
    /// [`SendError::Unsupported`] where requests carry nothing but a payload.
    fn send_frame(
        &mut self,
        _now: u64,
        _tag: T,
        _frame: &Self::Frame,
        _out: &mut BytesMut,
    ) -> SendResult {
        Err(SendError::Unsupported)
    }

    /// Sends a one-way message, never pending; [`SendError::Unsupported`] where the protocol
    /// has none.
    fn send_one_way(
        &mut self,
        _len: usize,
        _out: &mut BytesMut,
        _fill: impl FnOnce(&mut [u8]),
    ) -> SendResult {
        Err(SendError::Unsupported)
    }

    /// Sends a request the peer is not expected to answer (load `receive` mode against a
    /// sink): written as a request, never pending.
    fn send_unanswered(
        &mut self,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> SendResult {
        self.send_payload(None, Payload { len, out, fill })
    }

    /// Processes one received frame.
    fn receive(&mut self, frame: &Self::Frame) -> Received<T>;

    /// A received frame as the client reads it, before [`Self::receive`]: `Ok(None)` as it is,
    /// `Ok(Some(f))` with what the opening negotiated undone (websocket: a compressed message
    /// inflated), `Err` when that fails (the reply is then an error).
    fn incoming(&mut self, _frame: &Self::Frame) -> Result<Option<Self::Frame>, String> {
        Ok(None)
    }

    /// Completes the requests whose deadline is `<= now`, and whatever the protocol fails
    /// with them.
    fn expire(&mut self, now: u64) -> Expired<T> {
        self.matcher_mut().expire_pending(now)
    }

    /// Fails the connection: every pending request, oldest first. Later sends are refused,
    /// later frames ignored.
    fn fail(&mut self) -> Vec<T> {
        self.matcher_mut().fail()
    }

    fn pending(&self) -> usize {
        self.matcher().pending()
    }

    fn is_failed(&self) -> bool {
        self.matcher().is_failed()
    }
}

/// A client's opening handshake (websocket): the request it writes, then the check of the
/// server's response.
pub trait Opening: Send {
    /// The bytes to write after connecting.
    fn request(&self) -> &[u8];
    /// The bytes received so far: `Ok(None)` while the response is incomplete, `Ok(Some(n))`
    /// when its `n` bytes are complete and right (frames follow them), `Err` when it is wrong.
    fn response(&self, buf: &[u8]) -> Result<Option<usize>, String>;
    /// Once the response was complete and right: what it agreed to beyond the protocol's base
    /// (websocket: the `Sec-WebSocket-Extensions` value accepted), read by [`Protocol::opened`](super::Protocol::opened).
    fn negotiated(&self) -> Option<String> {
        None
    }
}

/// Runs a client's opening handshake on a blocking stream: writes the request, reads until the
/// answer is complete and right. Returns the bytes that followed the answer (frames).
pub fn open_blocking<S: std::io::Read + std::io::Write>(
    opening: &dyn Opening,
    s: &mut S,
) -> Result<Vec<u8>, String> {
    s.write_all(opening.request())
        .map_err(|e| format!("writing the handshake: {e}"))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(n) = opening.response(&buf)? {
            return Ok(buf.split_off(n));
        }
        match s.read(&mut chunk) {
            Ok(0) => return Err("the server closed during the handshake".into()),
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
            Err(e) => return Err(format!("reading the handshake: {e}")),
        }
    }
}

/// The client side of a protocol's streams, as a load client runs them: open a stream, send
/// data frames and have each echoed, end the stream (rpc: STREAM_INIT, STREAM_DATA, STREAM_END).
pub trait StreamOps<F>: Send + Sync {
    /// Appends the frame that opens stream `id`.
    fn put_open(&self, id: u32, out: &mut BytesMut);
    /// Appends a data frame of stream `id` with `len` payload bytes written by `fill`.
    fn put_data(&self, id: u32, len: usize, out: &mut BytesMut, fill: &mut dyn FnMut(&mut [u8]));
    /// Appends the frame that ends stream `id`.
    fn put_end(&self, id: u32, out: &mut BytesMut);
    /// What a frame from the server is to the stream client.
    fn classify<'a>(&self, frame: &'a F) -> StreamReply<'a>;
}

/// A frame a stream client receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamReply<'a> {
    /// The stream `id` is open.
    Opened(u32),
    /// A data frame of stream `id` with this payload.
    Data(u32, &'a [u8]),
    /// The stream `id` has ended.
    Ended(u32),
    /// Anything else (a refusal, a cancel): described for the error report.
    Other,
}

/// Appends `len` payload bytes to `out` (after a header already written) and lets `fill` write
/// them in place.
pub(crate) fn put_payload(out: &mut BytesMut, len: usize, fill: impl FnOnce(&mut [u8])) {
    let at = out.len();
    out.put_bytes(0, len);
    fill(&mut out[at..]);
}
