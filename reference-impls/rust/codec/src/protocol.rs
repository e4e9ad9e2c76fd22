//! The protocol abstraction: what a protocol module provides and the programs use.
//!
//! A protocol is a type implementing [`Protocol`], built from a [`CodecConfig`]. It provides
//! a streaming decoder ([`FrameDecoder`]), an encoder, a client-side request/reply matcher
//! ([`ClientMatcher`]) and the server side of its echo service ([`ServerSession`]). The
//! programs (fp-testee, fp-server, fp-load) are generic over it and reach a concrete protocol
//! only through the registry ([`crate::registry`]), so they never branch on a protocol name.
//!
//! Frames are described to the outside world (the testee's protobuf messages, the vectors) by
//! [`FrameFields`]: the payload plus every other field of the frame, named as the vectors and
//! `schemas/testee.proto` name them (`{"flag": 1, "sequence": 1}` for `standard`).

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{Map, Value};

use crate::config::{CodecConfig, ConfigError};
use crate::matcher::{Expired, Received, SendError};
use crate::{FrameDecoder, ProtocolError};

/// One protocol: its configuration and factories for its endpoints.
pub trait Protocol: Sized + Clone + Send + Sync + 'static {
    /// The registered name, e.g. `"standard"`.
    const NAME: &'static str;
    /// A decoded frame.
    type Frame: Send + 'static;
    /// The streaming decoder.
    type Decoder: FrameDecoder<Frame = Self::Frame> + Send + 'static;
    /// The server side of one connection.
    type Session: ServerSession + Send + 'static;
    /// The client side of one connection; `T` tags each pending request.
    type Client<T: Send + 'static>: ClientMatcher<T, Frame = Self::Frame> + Send + 'static;

    /// Builds the protocol from a configuration: its own parameter section, the limits.
    fn from_config(cfg: &CodecConfig) -> Result<Self, ConfigError>;

    /// A fresh streaming decoder.
    fn decoder(&self) -> Self::Decoder;

    /// Appends one encoded frame to `out`, or refuses it without writing anything.
    fn encode(&self, frame: &Self::Frame, out: &mut BytesMut) -> Result<(), ProtocolError>;

    /// The server endpoint of one connection: `endpoint` names one where the protocol has
    /// several (`""` = the default echo service); `sink` decodes and counts, replying nothing.
    fn session(&self, endpoint: &str, sink: bool) -> Result<Self::Session, ConfigError>;

    /// The network echo server's endpoint of one connection (fp-server). Default: the default
    /// endpoint; a protocol with several picks one per connection itself (rpc, `RPC-ECHO-7`).
    fn net_session(&self, sink: bool) -> Result<Self::Session, ConfigError> {
        self.session("", sink)
    }

    /// The largest frame (or message) the server accepts, in bytes: a server-wide memory
    /// budget below it is a usage error (`*-RES-1`).
    fn largest_unit(&self) -> u64;

    // -- micro-benchmarks (tools/bench/microbench.md, fp-microbench)

    /// The codec the benchmarks run `payload`-byte requests with (`Protocol.bench_codec` of the
    /// suite); `None`: the default one carries them.
    fn bench_codec(_payload: usize) -> Option<CodecConfig> {
        None
    }

    /// Appends the first `count` requests of a load-client connection with `len`-byte payloads
    /// (request i's payload written by `fill(i, payload)`), as fp-load writes them; a protocol
    /// whose client masks uses the fixed key `12 34 56 78`. Default: through the client matcher.
    fn bench_requests(
        &self,
        count: usize,
        len: usize,
        out: &mut BytesMut,
        fill: &mut dyn FnMut(u64, &mut [u8]),
    ) -> Result<(), String> {
        let mut client = self.client::<u64>(1 << 40);
        for i in 0..count as u64 {
            client
                .send_request(0, i, len, out, |p| fill(i, p))
                .map_err(|e| format!("request {i} refused: {e:?}"))?;
        }
        Ok(())
    }

    /// Appends the echo server's reply to `request` with the encoder of its reply path; false
    /// where the protocol has no such single-frame reply (no encode benchmark then).
    fn bench_reply(&self, _request: &Self::Frame, _out: &mut BytesMut) -> bool {
        false
    }

    /// The part of the server's decoding done in place ([`Echo::reply_in_place`]'s drain): calls
    /// `each` with the payload of every whole frame at the front of `dec`'s buffer that it takes,
    /// and returns how many; the decode benchmark runs it before `decode`, as the server does.
    /// Default: none (everything goes through `decode`).
    fn bench_drain(&self, _dec: &mut Self::Decoder, _each: &mut dyn FnMut(&[u8])) -> u64 {
        0
    }

    /// The protocol's own micro-benchmark cases: (op, payload) pairs.
    const BENCH_EXTRA: &'static [(&'static str, usize)] = &[];

    /// One of [`Protocol::BENCH_EXTRA`]: its input and the routine one iteration runs over it
    /// (returning what is consumed into the checksum).
    fn bench_extra(&self, _op: &str, _payload: usize) -> Option<(Vec<u8>, BenchRoutine)> {
        None
    }

    /// What the protocol itself says on the wire about an error (an rpc error code, a WebSocket
    /// close code), as the fields of the testee's `ProtocolError.detail` oneof
    /// (`{"websocket": {"close_code": 1002}}`); `None` where it says nothing.
    fn error_detail(&self, _error: &ProtocolError) -> Option<Map<String, Value>> {
        None
    }

    /// The client side of one connection; requests time out `timeout` units (of the caller's
    /// clock) after they are sent.
    fn client<T: Send + 'static>(&self, timeout: u64) -> Self::Client<T>;

    /// A frame's fields, for the testee and the reports.
    fn describe(frame: &Self::Frame) -> FrameFields;

    /// The frame that `fields` describes (testee `encode`); `Err` when the fields do not fit
    /// this protocol's frame (the testee answers `skipped`).
    fn frame(&self, fields: FrameFields) -> Result<Self::Frame, String>;

    /// A frame's payload.
    fn payload(frame: &Self::Frame) -> &[u8];

    /// Whether a request with a payload of `len` bytes can be sent (the load client checks
    /// before it connects).
    fn check_request(&self, len: usize) -> Result<(), ProtocolError>;

    /// The most requests a client may keep in flight on one connection, and the requirement
    /// that sets the bound.
    fn max_in_flight(&self) -> (usize, &'static str);

    /// Whether a frame that completed a request is the successful reply a load client expects
    /// (its payload is checked separately); `Err` says what is wrong with it.
    fn check_reply(&self, _frame: &Self::Frame) -> Result<(), String> {
        Ok(())
    }

    /// The load client's default `--batch` in `--mode batched`: the seeds' batch of concurrent
    /// requests (conformance/frameproof/protocols: `seed_batch`, else `seed_window`).
    const SEED_BATCH: usize = 256;

    /// The values of the load client's `--variant` (which kind of request it sends), the
    /// default first.
    const VARIANTS: &'static [&'static str] = &["default"];

    /// This protocol sending requests of `variant` (one of [`Protocol::VARIANTS`]).
    fn with_variant(self, _variant: &str) -> Self {
        self
    }

    /// The load client's payloads are text: the lowercase hex of the binary pattern, cut to the
    /// payload size (websocket's text messages must be UTF-8).
    fn text_payloads(&self) -> bool {
        false
    }

    /// This protocol as a network client uses it (websocket: the client role, which receives
    /// unmasked frames); the configuration a user gives names the server's side.
    fn client_side(self) -> Self {
        self
    }

    /// The client's opening handshake for a server at `host`, where the protocol has one.
    fn opening(&self, _host: &str) -> Option<Box<dyn Opening>> {
        None
    }

    /// Appends what a client sends before it closes (websocket: a close frame with code 1000)
    /// and returns true, or false where the protocol has nothing to say.
    fn put_goodbye(&self, _out: &mut BytesMut) -> bool {
        false
    }

    /// Whether a received frame is the peer's answer to the goodbye (its close frame).
    fn is_goodbye(_frame: &Self::Frame) -> bool {
        false
    }

    /// Whether the protocol has streams (the load client's `--mode stream`, [`StreamOps`]).
    fn streams(&self) -> Option<&dyn StreamOps<Self::Frame>> {
        None
    }

    /// A [`HeaderWalker`] for this configuration, where the protocol has one (the raw echo
    /// baseline of tools/bench); `reply` turns requests into replies in place.
    fn walker(&self, _reply: bool) -> Option<Box<dyn HeaderWalker>> {
        None
    }

    /// The raw echo's rewriter where a reply differs in length from its request (rpc, websocket):
    /// see [`ReplyRewriter`]. Protocols with a [`HeaderWalker`] need none.
    fn rewriter(&self, _reply: bool) -> Option<Box<dyn ReplyRewriter>> {
        None
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

/// Walks a byte stream frame by frame by reading only the headers: no buffering, no copies,
/// no validation. It counts frames and payload bytes and, with `reply`, turns each request into
/// its echo reply in place where the protocol allows that (`standard`: set bit 7 of the flag).
/// It is the ceiling any codec server is measured against (fp-raw-echo), not a server.
pub trait HeaderWalker: Send {
    /// The next bytes of the stream, in any split.
    fn walk(&mut self, buf: &mut [u8]);
    /// Complete frames so far, and the payload bytes they declared.
    fn frames(&self) -> u64;
    fn payload_bytes(&self) -> u64;
}

/// The state every [`HeaderWalker`] keeps: the header bytes seen so far and the payload bytes
/// left of the current frame. A protocol supplies the header length and its decoding.
#[derive(Debug, Default)]
pub struct WalkState {
    hdr: [u8; 8],
    have: usize,
    remaining: u64,
    pub frames: u64,
    pub payload_bytes: u64,
}

/// What a protocol's header parser says about the header bytes seen so far.
pub enum HeaderStep {
    /// This many header bytes are needed in all.
    Need(usize),
    /// The header is complete and declares this payload length.
    Payload(u64),
}

impl WalkState {
    /// Walks `buf`. `header(bytes)` classifies the header bytes seen so far (at least
    /// `first` of them, at most 8); `on_first(byte)` may rewrite the first byte of each frame.
    pub fn walk(
        &mut self,
        buf: &mut [u8],
        first: usize,
        header: impl Fn(&[u8]) -> HeaderStep,
        on_first: impl Fn(&mut u8),
    ) {
        let n = buf.len();
        let mut need = first;
        let mut i = 0;
        while i < n {
            if self.remaining > 0 {
                let take = self.remaining.min((n - i) as u64);
                i += take as usize;
                self.remaining -= take;
                if self.remaining == 0 {
                    self.frames += 1;
                }
                continue;
            }
            if self.have == 0 {
                on_first(&mut buf[i]);
            }
            self.hdr[self.have] = buf[i];
            self.have += 1;
            i += 1;
            if self.have < need.max(first) {
                continue;
            }
            match header(&self.hdr[..self.have]) {
                HeaderStep::Need(k) => need = k,
                HeaderStep::Payload(len) => {
                    self.have = 0;
                    need = first;
                    self.payload_bytes += len;
                    self.remaining = len;
                    if len == 0 {
                        self.frames += 1;
                    }
                }
            }
        }
    }
}

/// The ceiling for protocols whose replies are not their requests with a byte changed (rpc: a
/// RESPONSE with an error code for a REQUEST with names; websocket: unmasked frames for masked
/// ones, after the opening handshake). Like a [`HeaderWalker`] it reads only headers and never
/// validates; the replies go to a reused output buffer, so each payload is copied once, as it is
/// in every codec server, and nothing is allocated per frame. It assumes the well-formed request
/// stream of the load clients; it is fp-raw-echo's, not a server.
pub trait ReplyRewriter: Send {
    /// The next bytes of the stream, in any split: the replies to what completes are appended to
    /// `out` (with `reply` false only what a server sends even when it only counts: websocket's
    /// handshake answer, pongs and its close).
    fn rewrite(&mut self, input: &[u8], out: &mut Vec<u8>);
    /// Frames whose payload has been seen in full, and the payload bytes they declared.
    fn frames(&self) -> u64;
    fn payload_bytes(&self) -> u64;
    /// The peer's stream is over for this protocol (websocket: its close frame was answered, or
    /// the opening handshake refused): the echo stops reading and closes.
    fn closed(&self) -> bool {
        false
    }
}

/// What a protocol's header rule says about the header bytes a [`RewriteState`] has so far.
pub enum Rewrite {
    /// This many header bytes are needed in all (more than there are).
    Need(usize),
    /// The header is complete and its reply header appended. `payload` bytes follow: copied to
    /// the reply when `copy` (XOR-unmasked with `key`, starting at key octet 0, when given),
    /// skipped otherwise.
    Done {
        payload: u64,
        copy: bool,
        key: Option<[u8; 4]>,
    },
}

/// The state every [`ReplyRewriter`] keeps: a header split across reads (held until complete;
/// a protocol bounds its header length), and the payload left of the current frame.
#[derive(Debug, Default)]
pub struct RewriteState {
    stash: Vec<u8>,
    need: usize,
    left: u64,
    copy: bool,
    key: Option<[u8; 4]>,
    phase: usize,
    pub frames: u64,
    pub payload_bytes: u64,
}

impl RewriteState {
    /// Between frames: no payload left, no header begun.
    pub fn between_frames(&self) -> bool {
        self.left == 0 && self.stash.is_empty()
    }

    /// Rewrites `input` into `out`. `first`: the header bytes any header has; `header(bytes, out)`
    /// judges the header bytes so far and, once complete, appends the reply header; `unmask` is
    /// the protocol's XOR (key, phase).
    pub fn rewrite(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        first: usize,
        mut header: impl FnMut(&[u8], &mut Vec<u8>) -> Rewrite,
        unmask: impl Fn(&mut [u8], [u8; 4], usize),
    ) {
        let n = input.len();
        let mut i = 0;
        while i < n {
            if self.left > 0 {
                let take = self.left.min((n - i) as u64) as usize;
                if self.copy {
                    let at = out.len();
                    out.extend_from_slice(&input[i..i + take]);
                    if let Some(k) = self.key {
                        unmask(&mut out[at..], k, self.phase);
                    }
                }
                self.phase += take;
                i += take;
                self.left -= take as u64;
                if self.left == 0 {
                    self.frames += 1;
                }
                continue;
            }
            let need = self.need.max(first);
            // The usual case: the whole header is in this read, judged where it lies.
            let step = if self.stash.is_empty() {
                let avail = &input[i..];
                if avail.len() < need {
                    self.stash.extend_from_slice(avail);
                    i = n;
                    continue;
                }
                let r = header(&avail[..need], out);
                if let Rewrite::Done { .. } = r {
                    i += need;
                }
                r
            } else {
                let take = (need - self.stash.len()).min(n - i);
                self.stash.extend_from_slice(&input[i..i + take]);
                i += take;
                if self.stash.len() < need {
                    continue;
                }
                let r = header(&self.stash, out);
                if let Rewrite::Done { .. } = r {
                    self.stash.clear();
                }
                r
            };
            match step {
                Rewrite::Need(k) => self.need = k.max(need + 1), // judged again with more bytes
                Rewrite::Done { payload, copy, key } => {
                    self.need = 0;
                    self.payload_bytes += payload;
                    self.left = payload;
                    self.copy = copy;
                    self.key = key;
                    self.phase = 0;
                    if payload == 0 {
                        self.frames += 1;
                    }
                }
            }
        }
    }
}

/// A frame's fields: the payload, and every other field by the name the vectors and
/// `schemas/testee.proto` (`Frame`) give it. Fields at their default may be left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FrameFields {
    pub payload: Bytes,
    pub header: Map<String, Value>,
}

impl FrameFields {
    /// An unsigned header field (0 when absent); `Err` if it is not an integer up to `max`.
    pub fn uint(&self, key: &str, max: u64) -> Result<u64, String> {
        match self.header.get(key) {
            None | Some(Value::Null) => Ok(0),
            Some(v) => v
                .as_u64()
                .filter(|&n| n <= max)
                .ok_or_else(|| format!("frame field {key} = {v} does not fit (0..={max})")),
        }
    }
}

impl std::fmt::Display for FrameFields {
    /// `{"flag": 129, "sequence": 3} + 5 payload bytes`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut header = String::new();
        crate::config::write_json(&Value::Object(self.header.clone()), &mut header);
        write!(f, "{header} + {} payload bytes", self.payload.len())
    }
}

/// What a client connection does with a request or a received frame.
///
/// Sends write the frame to `out` and call `fill` with its payload's `len` bytes (in `out`),
/// so that a caller can generate the payload in place. A refused send writes nothing and
/// changes nothing.
pub trait ClientMatcher<T> {
    type Frame;

    /// Sends a request: pending until `now + timeout` or its reply.
    fn send_request(
        &mut self,
        now: u64,
        tag: T,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>>;

    /// Sends a request built from a whole frame (the testee's `send_frame`: an rpc call with its
    /// own service, method and mode); the client still sets what it owns (the id, `RPC-ID-1`).
    /// [`SendError::Unsupported`] where requests carry nothing but a payload.
    fn send_frame(
        &mut self,
        _now: u64,
        _tag: T,
        _frame: &Self::Frame,
        _out: &mut BytesMut,
    ) -> Result<(), SendError<ProtocolError>> {
        Err(SendError::Unsupported)
    }

    /// Sends a one-way message, never pending; [`SendError::Unsupported`] where the protocol
    /// has none.
    fn send_one_way(
        &mut self,
        _len: usize,
        _out: &mut BytesMut,
        _fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        Err(SendError::Unsupported)
    }

    /// Sends a request the peer is not expected to answer (load `receive` mode against a
    /// sink): written as a request, never pending.
    fn send_unanswered(
        &mut self,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>>;

    /// Processes one received frame.
    fn receive(&mut self, frame: &Self::Frame) -> Received<T>;

    /// Completes the requests whose deadline is `<= now`, and whatever the protocol fails
    /// with them.
    fn expire(&mut self, now: u64) -> Expired<T>;

    /// Fails the connection: every pending request, oldest first. Later sends are refused,
    /// later frames ignored.
    fn fail(&mut self) -> Vec<T>;

    fn pending(&self) -> usize;

    fn is_failed(&self) -> bool;
}

/// What a server endpoint did with the input it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    /// Frames decoded, and the payload bytes they carried.
    pub frames: u64,
    pub bytes: u64,
    /// The endpoint closed the connection (after writing its last replies).
    pub closed: bool,
    /// Why, if the input broke a requirement.
    pub error: Option<ProtocolError>,
}

/// A micro-benchmark routine over its input buffer, returning what is consumed (checksum).
pub type BenchRoutine = fn(&mut [u8]) -> u64;

/// The server side of one connection: bytes in, bytes out, closed or not, and the classified
/// error. The network server is a loop around it (read into [`ServerSession::buffer_mut`],
/// [`ServerSession::process`], write what it appended); the testee's `serve` drives it offline.
pub trait ServerSession {
    /// The receive buffer, to read socket data straight into it.
    fn buffer_mut(&mut self) -> &mut BytesMut;

    /// Appends received bytes (ignored once the session is closed).
    fn extend(&mut self, data: &[u8]);

    /// Handles everything complete in the buffer; appends the replies to `out`.
    fn process(&mut self, out: &mut BytesMut) -> Served;

    /// The peer's EOF: handles what is left, appends the last replies and closes.
    fn finish(&mut self, out: &mut BytesMut) -> Served;

    fn is_closed(&self) -> bool;

    /// Bytes held for what is unfinished (a partial handshake, frame or message), for the
    /// server's memory budget (`*-RES-1`). Default: the receive buffer's length.
    fn held(&mut self) -> usize {
        self.buffer_mut().len()
    }

    /// Whether the session still waits for its opening handshake (websocket): the idle
    /// timeout then bounds the handshake from the accept on (`WS-RES-3`).
    fn awaiting_opening(&self) -> bool {
        false
    }
}

/// A protocol whose server answers each decoded frame on its own (or not at all): the echo
/// services of `standard` and `length-field`. [`EchoSession`] is its server session.
pub trait Echo: Protocol {
    /// Appends the reply to `frame`, if it gets one.
    fn reply(&self, frame: &Self::Frame, out: &mut BytesMut);

    /// Answers the complete, valid frames at the front of `dec`'s buffer where they lie (none is
    /// taken out of the buffer as a frame of its own: no reference count, no allocation) and
    /// drops their bytes at once; returns (frames, payload bytes). Stops before anything else
    /// (an unfinished or invalid frame), which [`FrameDecoder::decode`] then reports. The same
    /// replies as [`Echo::reply`] on each decoded frame; the default answers none this way.
    fn reply_in_place(
        &self,
        _dec: &mut Self::Decoder,
        _out: &mut BytesMut,
        _sink: bool,
    ) -> (u64, u64) {
        (0, 0)
    }
}

/// The server session of an [`Echo`] protocol: every complete frame is answered as soon as it
/// is decoded; a decoding error closes after the replies to the frames before it; at EOF the
/// session closes, with the decoder's truncation error if a frame was left unfinished.
#[derive(Debug)]
pub struct EchoSession<P: Echo> {
    proto: P,
    dec: P::Decoder,
    sink: bool,
    closed: bool,
}

impl<P: Echo> EchoSession<P> {
    pub fn new(proto: P, sink: bool) -> Self {
        EchoSession {
            dec: proto.decoder(),
            proto,
            sink,
            closed: false,
        }
    }
}

impl<P: Echo> ServerSession for EchoSession<P> {
    fn buffer_mut(&mut self) -> &mut BytesMut {
        self.dec.buffer_mut()
    }

    fn extend(&mut self, data: &[u8]) {
        if !self.closed {
            self.dec.extend(data);
        }
    }

    fn process(&mut self, out: &mut BytesMut) -> Served {
        let mut s = Served::default();
        if self.closed {
            s.closed = true;
            return s;
        }
        loop {
            let (frames, bytes) = self.proto.reply_in_place(&mut self.dec, out, self.sink);
            s.frames += frames;
            s.bytes += bytes;
            match self.dec.decode() {
                Ok(Some(f)) => {
                    s.frames += 1;
                    s.bytes += P::payload(&f).len() as u64;
                    if !self.sink {
                        self.proto.reply(&f, out);
                    }
                }
                Ok(None) => return s,
                Err(e) => {
                    self.closed = true;
                    s.closed = true;
                    s.error = Some(e);
                    return s;
                }
            }
        }
    }

    fn finish(&mut self, out: &mut BytesMut) -> Served {
        let mut s = self.process(out);
        if !s.closed {
            s.error = self.dec.finish().err();
            s.closed = true;
            self.closed = true;
        }
        s
    }

    fn is_closed(&self) -> bool {
        self.closed
    }
}

/// Appends `len` payload bytes to `out` (after a header already written) and lets `fill` write
/// them in place.
pub(crate) fn put_payload(out: &mut BytesMut, len: usize, fill: impl FnOnce(&mut [u8])) {
    let at = out.len();
    out.put_bytes(0, len);
    fill(&mut out[at..]);
}
