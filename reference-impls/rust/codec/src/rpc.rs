//! The `rpc` protocol (`spec/rpc.md`): galay-rpc's frames. A 16-byte big-endian header (magic
//! `GRPC`, version, type, flags, reserved, id, body length) and a typed body: REQUEST (service,
//! method, payload), RESPONSE (error code, payload), STREAM_INIT (service, method), the empty
//! stream control frames, and payload-only STREAM_DATA / HEARTBEAT / ERROR.
//!
//! The server side has two echo endpoints (§9 unary, §10 stream); the network server picks one
//! per connection from the type of its first frame (`RPC-ECHO-7`). The client side allocates
//! ids 0, 1, 2 ... per connection and matches responses by id ([`IdMatcher`]).

use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde_json::{Map, Value};

use crate::config::{CodecConfig, ConfigError};
use crate::matcher::{Expired, IdMatcher, Received, SendError};
use crate::protocol::{
    put_payload, ClientMatcher, FrameFields, Protocol, ReplyRewriter, Rewrite, RewriteState,
    Served, ServerSession, StreamOps, StreamReply,
};
use crate::{FrameDecoder, ProtocolError, Violation};

/// The 16-byte header (`RPC-HDR-1`).
pub const HEADER_LEN: usize = 16;
/// `RPC-HDR-2`.
pub const MAGIC: [u8; 4] = *b"GRPC";
/// `RPC-HDR-3`.
pub const VERSION: u8 = 1;
/// Message types (`RPC-HDR-4`).
pub const REQUEST: u8 = 0x01;
pub const RESPONSE: u8 = 0x02;
pub const HEARTBEAT: u8 = 0x03;
pub const ERROR: u8 = 0x04;
pub const STREAM_INIT: u8 = 0x10;
pub const STREAM_INIT_ACK: u8 = 0x11;
pub const STREAM_DATA: u8 = 0x12;
pub const STREAM_END: u8 = 0x13;
pub const STREAM_CANCEL: u8 = 0x14;
/// END_STREAM in the flags byte; the call mode is bits 0-1 (`RPC-HDR-5`).
pub const END_STREAM: u8 = 0x04;
pub const MODE_MASK: u8 = 0x03;
/// Default maximum body: 16 MiB (`RPC-LIM-1`).
pub const DEFAULT_MAX_BODY: u64 = 16 * 1024 * 1024;
/// The conformance echo service (§9, §10).
pub const ECHO_SERVICE: &[u8] = b"frameproof.Echo";
pub const ECHO_METHOD: &[u8] = b"echo";
/// Error codes the echo endpoint answers with (`RPC-ERR-1`, `RPC-ECHO-2`).
pub const CODE_OK: u16 = 0;
pub const CODE_SERVICE_NOT_FOUND: u16 = 2;
pub const CODE_METHOD_NOT_FOUND: u16 = 3;
/// Bytes a REQUEST to the echo service puts before its payload.
pub const ECHO_NAMES_LEN: usize = 2 + ECHO_SERVICE.len() + 2 + ECHO_METHOD.len();

/// Whether `t` is a type of `RPC-HDR-4`.
pub fn is_known_type(t: u32) -> bool {
    matches!(t, 0x01..=0x04 | 0x10..=0x14)
}

/// STREAM_INIT_ACK, STREAM_END, STREAM_CANCEL: empty body (`RPC-BODY-5`).
pub fn is_control(t: u32) -> bool {
    matches!(t, 0x11 | 0x13 | 0x14)
}

/// REQUEST and STREAM_INIT carry service and method (`RPC-BODY-1`, `RPC-BODY-3`).
pub fn has_names(t: u32) -> bool {
    t == REQUEST as u32 || t == STREAM_INIT as u32
}

/// The stream endpoint's types (`RPC-ECHO-7`).
pub fn is_stream_type(t: u32) -> bool {
    (0x10..=0x14).contains(&t)
}

/// One rpc frame: the header, the typed body fields, and the payload (the bytes after them).
/// `version`, `kind` and `error_code` are wider than on the wire so that a frame to encode can
/// hold a value the encoder must refuse (`RPC-HDR-3`, `RPC-HDR-4`, `RPC-BODY-2`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcFrame {
    pub version: u32,
    /// The message type (header byte 5).
    pub kind: u32,
    pub flags: u8,
    pub reserved: u8,
    pub id: u32,
    /// REQUEST and STREAM_INIT.
    pub service: Bytes,
    pub method: Bytes,
    /// RESPONSE.
    pub error_code: u32,
    pub payload: Bytes,
}

impl RpcFrame {
    /// A frame of type `kind` with version 1, the id, flags, and nothing else.
    pub fn new(kind: u8, flags: u8, id: u32) -> Self {
        RpcFrame {
            version: VERSION as u32,
            kind: kind as u32,
            flags,
            reserved: 0,
            id,
            service: Bytes::new(),
            method: Bytes::new(),
            error_code: 0,
            payload: Bytes::new(),
        }
    }

    /// The plain echo call (a testee `send(p)`, and a frame without rpc fields): a REQUEST to
    /// `frameproof.Echo` / `echo`, UNARY with END_STREAM (`RPC-ID-1`).
    pub fn echo_call(id: u32, payload: Bytes) -> Self {
        RpcFrame {
            service: Bytes::from_static(ECHO_SERVICE),
            method: Bytes::from_static(ECHO_METHOD),
            payload,
            ..RpcFrame::new(REQUEST, END_STREAM, id)
        }
    }

    /// Bytes the typed body fields take before the payload.
    fn body_head_len(&self) -> usize {
        if has_names(self.kind) {
            4 + self.service.len() + self.method.len()
        } else if self.kind == RESPONSE as u32 {
            2
        } else {
            0
        }
    }
}

fn refuse(v: Violation, why: String) -> ProtocolError {
    ProtocolError::new(v, 0, why)
}

/// Checks a frame against the encoder's rules (§11 "An encoder that refuses a frame") with the
/// maximum body `max_body` (0 = the default); returns the body length.
pub fn check_encode(f: &RpcFrame, max_body: u64) -> Result<usize, ProtocolError> {
    if f.version != VERSION as u32 {
        return Err(refuse(
            Violation::RpcHdr3,
            format!("version {} (only 1 is written)", f.version),
        ));
    }
    if !is_known_type(f.kind) {
        return Err(refuse(Violation::RpcHdr4, format!("type 0x{:02X}", f.kind)));
    }
    if is_control(f.kind) && !f.payload.is_empty() {
        return Err(refuse(
            Violation::RpcBody5,
            format!("type 0x{:02X} carries no body", f.kind),
        ));
    }
    if has_names(f.kind) && (f.service.len() > 0xFFFF || f.method.len() > 0xFFFF) {
        return Err(refuse(
            Violation::RpcBody6,
            "a service or method name longer than 65535 bytes".into(),
        ));
    }
    if f.kind == RESPONSE as u32 && f.error_code > 0xFFFF {
        return Err(refuse(
            Violation::RpcBody2,
            format!("error code {} above 65535", f.error_code),
        ));
    }
    let n = f.body_head_len() as u64 + f.payload.len() as u64;
    let max = effective_max_body(max_body).min(u32::MAX as u64);
    if n > max {
        return Err(refuse(
            Violation::RpcLim2,
            format!("body of {n} bytes above the maximum {max}"),
        ));
    }
    Ok(n as usize)
}

/// Writes a 16-byte header (no checks).
pub fn put_header(out: &mut impl BufMut, kind: u8, flags: u8, id: u32, body: usize) {
    // One append per header, not one per field.
    let [i0, i1, i2, i3] = id.to_be_bytes();
    let [n0, n1, n2, n3] = (body as u32).to_be_bytes();
    let [m0, m1, m2, m3] = MAGIC;
    out.put_slice(&[
        m0, m1, m2, m3, VERSION, kind, flags, 0, i0, i1, i2, i3, n0, n1, n2, n3,
    ]);
}

/// Appends the encoded frame to `out`, or refuses it without writing anything.
pub fn encode(out: &mut BytesMut, f: &RpcFrame, max_body: u64) -> Result<(), ProtocolError> {
    let n = check_encode(f, max_body)?;
    out.reserve(HEADER_LEN + n);
    out.put_slice(&MAGIC);
    out.put_slice(&[VERSION, f.kind as u8, f.flags, f.reserved]);
    out.put_u32(f.id);
    out.put_u32(n as u32);
    if has_names(f.kind) {
        out.put_u16(f.service.len() as u16);
        out.put_slice(&f.service);
        out.put_u16(f.method.len() as u16);
        out.put_slice(&f.method);
    } else if f.kind == RESPONSE as u32 {
        out.put_u16(f.error_code as u16);
    }
    out.put_slice(&f.payload);
    Ok(())
}

/// Streaming decoder (`RPC-STR-*`): the header is judged once its 16 bytes are there (§11:
/// magic, version, type, a control frame's body, the limit), the body fields once the whole body
/// is; the payload and names are slices of the receive buffer (no copy).
#[derive(Debug)]
pub struct RpcDecoder {
    buf: BytesMut,
    /// Stream offset of `buf[0]`.
    base: u64,
    max: u64,
    error: Option<ProtocolError>,
}

impl RpcDecoder {
    /// A decoder with the given maximum body (0 = the 16 MiB default).
    pub fn new(max_body: u64) -> Self {
        RpcDecoder {
            buf: BytesMut::new(),
            base: 0,
            max: effective_max_body(max_body),
            error: None,
        }
    }

    /// Stream offset of the first byte not yet delivered (the next frame's start).
    pub fn position(&self) -> u64 {
        self.base
    }

    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    fn fail(&mut self, v: Violation, message: String) -> ProtocolError {
        let e = ProtocolError::new(v, self.base, message);
        self.error = Some(e.clone());
        e
    }

    /// Judges the complete header at the start of the buffer; returns the body length.
    fn header(&mut self) -> Result<usize, ProtocolError> {
        let b = &self.buf[..HEADER_LEN];
        let (version, kind) = (b[4], b[5] as u32);
        let n = u32::from_be_bytes([b[12], b[13], b[14], b[15]]) as u64;
        if b[..4] != MAGIC {
            let m = format!("magic {:02X?}", &b[..4]);
            return Err(self.fail(Violation::RpcHdr2, m));
        }
        if version != VERSION {
            return Err(self.fail(Violation::RpcHdr3, format!("version {version}")));
        }
        if !is_known_type(kind) {
            return Err(self.fail(Violation::RpcHdr4, format!("type 0x{kind:02X}")));
        }
        if is_control(kind) && n != 0 {
            return Err(self.fail(
                Violation::RpcBody5,
                format!("type 0x{kind:02X} with a body of {n} bytes"),
            ));
        }
        if n > self.max {
            let m = format!("body of {n} bytes above the maximum {}", self.max);
            return Err(self.fail(Violation::RpcLim1, m));
        }
        Ok(n as usize)
    }
}

impl RpcDecoder {
    /// Calls `each(flags, id, service, method, payload)` for the complete, valid REQUEST frames at
    /// the front of the buffer, borrowed where they lie, then drops them from the buffer at once;
    /// returns (frames, payload bytes). Stops before any other frame (another type, an unfinished
    /// or invalid one: left for [`FrameDecoder::decode`], which classifies it) and after a failed
    /// stream. The unary endpoint's in-place path.
    pub fn drain_requests(
        &mut self,
        mut each: impl FnMut(u8, u32, &[u8], &[u8], &[u8]),
    ) -> (u64, u64) {
        if self.error.is_some() {
            return (0, 0);
        }
        let b = &self.buf[..];
        let (mut pos, mut frames, mut bytes) = (0usize, 0u64, 0u64);
        while let Some(h) = b.get(pos..pos + HEADER_LEN) {
            let n = u32::from_be_bytes([h[12], h[13], h[14], h[15]]) as u64;
            if h[..4] != MAGIC || h[4] != VERSION || h[5] != REQUEST || n > self.max {
                break;
            }
            let Some(body) = b.get(pos + HEADER_LEN..pos + HEADER_LEN + n as usize) else {
                break;
            };
            if check_names(body).is_err() {
                break;
            }
            let sl = u16::from_be_bytes([body[0], body[1]]) as usize;
            let ml = u16::from_be_bytes([body[2 + sl], body[3 + sl]]) as usize;
            let payload = &body[4 + sl + ml..];
            let id = u32::from_be_bytes([h[8], h[9], h[10], h[11]]);
            each(
                h[6],
                id,
                &body[2..2 + sl],
                &body[4 + sl..4 + sl + ml],
                payload,
            );
            frames += 1;
            bytes += payload.len() as u64;
            pos += HEADER_LEN + n as usize;
        }
        self.buf.advance(pos);
        self.base += pos as u64;
        (frames, bytes)
    }
}

/// Resolves "0 means the default" for the maximum body.
pub fn effective_max_body(max_body: u64) -> u64 {
    if max_body == 0 {
        DEFAULT_MAX_BODY
    } else {
        max_body
    }
}

/// Splits a REQUEST / STREAM_INIT body that passed [`check_names`] into service, method and
/// payload, as slices of the body.
fn names(body: &Bytes) -> (Bytes, Bytes, Bytes) {
    let sl = u16::from_be_bytes([body[0], body[1]]) as usize;
    let ml = u16::from_be_bytes([body[2 + sl], body[3 + sl]]) as usize;
    (
        body.slice(2..2 + sl),
        body.slice(4 + sl..4 + sl + ml),
        body.slice(4 + sl + ml..),
    )
}

impl FrameDecoder for RpcDecoder {
    type Frame = RpcFrame;

    fn extend(&mut self, data: &[u8]) {
        if self.error.is_none() {
            self.buf.extend_from_slice(data);
        }
    }

    fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    fn decode(&mut self) -> Result<Option<RpcFrame>, ProtocolError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let n = self.header()?;
        if self.buf.len() < HEADER_LEN + n {
            // Room for the rest of this frame only, at most 1 MiB at a time (RPC-LIM-3).
            let missing = HEADER_LEN + n - self.buf.len();
            self.buf.reserve(missing.min(1 << 20));
            return Ok(None);
        }
        let h = &self.buf[..HEADER_LEN];
        let mut f = RpcFrame {
            version: h[4] as u32,
            kind: h[5] as u32,
            flags: h[6],
            reserved: h[7],
            id: u32::from_be_bytes([h[8], h[9], h[10], h[11]]),
            service: Bytes::new(),
            method: Bytes::new(),
            error_code: 0,
            payload: Bytes::new(),
        };
        let body = self.buf[HEADER_LEN..HEADER_LEN + n].as_ref();
        if has_names(f.kind) {
            // judged before anything is consumed: the error is at the frame's start
            let v = if f.kind == REQUEST as u32 {
                Violation::RpcBody1
            } else {
                Violation::RpcBody3
            };
            if let Err(why) = check_names(body) {
                return Err(self.fail(v, why.into()));
            }
        } else if f.kind == RESPONSE as u32 && n < 2 {
            return Err(self.fail(
                Violation::RpcBody2,
                format!("RESPONSE body of {n} bytes, shorter than its error code"),
            ));
        }
        self.buf.advance(HEADER_LEN);
        let body = self.buf.split_to(n).freeze();
        self.base += (HEADER_LEN + n) as u64;
        if has_names(f.kind) {
            let (s, m, p) = names(&body);
            f.service = s;
            f.method = m;
            f.payload = p;
        } else if f.kind == RESPONSE as u32 {
            f.error_code = u16::from_be_bytes([body[0], body[1]]) as u32;
            f.payload = body.slice(2..);
        } else {
            f.payload = body;
        }
        Ok(Some(f))
    }

    fn finish(&mut self) -> Result<(), ProtocolError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if !self.buf.is_empty() {
            let n = self.buf.len();
            return Err(self.fail(
                Violation::RpcStr3,
                format!("stream ended inside a frame ({n} bytes of it received)"),
            ));
        }
        Ok(())
    }
}

/// `RPC-BODY-1`: the name fields of a REQUEST / STREAM_INIT body fit in it.
fn check_names(body: &[u8]) -> Result<(), &'static str> {
    let n = body.len();
    if n < 2 {
        return Err("no service length");
    }
    let sl = u16::from_be_bytes([body[0], body[1]]) as usize;
    if 2 + sl + 2 > n {
        return Err("service name beyond the body");
    }
    let ml = u16::from_be_bytes([body[2 + sl], body[3 + sl]]) as usize;
    if 4 + sl + ml > n {
        return Err("method name beyond the body");
    }
    Ok(())
}

/// The `rpc` protocol with its limit: the registry's entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rpc {
    /// Maximum body (the configured one, or the 16 MiB default).
    pub max_body: u64,
    /// The call mode a load client's REQUESTs carry (`--variant`, `RPC-MODE-1`).
    pub mode: u8,
}

impl Rpc {
    pub fn new(max_body: u64) -> Self {
        Rpc {
            max_body: effective_max_body(max_body),
            mode: 0,
        }
    }

    /// Writes a REQUEST to the echo service with `flags` and `len` payload bytes from `fill`.
    fn write_echo_call(
        &self,
        out: &mut BytesMut,
        id: u32,
        flags: u8,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), ProtocolError> {
        self.check_request(len)?;
        let n = ECHO_NAMES_LEN + len;
        out.reserve(HEADER_LEN + n);
        put_header(out, REQUEST, flags, id, n);
        out.put_u16(ECHO_SERVICE.len() as u16);
        out.put_slice(ECHO_SERVICE);
        out.put_u16(ECHO_METHOD.len() as u16);
        out.put_slice(ECHO_METHOD);
        put_payload(out, len, fill);
        Ok(())
    }
}

fn bytes_value(b: &[u8]) -> Value {
    Value::Array(b.iter().map(|&x| Value::from(x)).collect())
}

fn bytes_field(o: &Map<String, Value>, key: &str) -> Result<Bytes, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(Bytes::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_u64().filter(|&x| x <= 0xFF).map(|x| x as u8))
            .collect::<Option<Vec<u8>>>()
            .map(Bytes::from)
            .ok_or_else(|| format!("rpc.{key} is not a byte string")),
        Some(Value::String(s)) => Ok(Bytes::from(s.clone().into_bytes())),
        Some(v) => Err(format!("rpc.{key} = {v} is not a byte string")),
    }
}

impl Protocol for Rpc {
    const NAME: &'static str = "rpc";
    type Frame = RpcFrame;
    type Decoder = RpcDecoder;

    fn rewriter(&self, reply: bool) -> Option<Box<dyn ReplyRewriter>> {
        Some(Box::new(RpcRewriter {
            state: RewriteState::default(),
            reply,
        }))
    }
    type Session = RpcSession;
    type Client<T: Send + 'static> = RpcClient<T>;

    /// `{"protocol": "rpc", "rpc": {"max_body": N}}`; the limit travels as `rpc.max_body`, so a
    /// non-zero `limits.max_payload` is refused.
    fn from_config(cfg: &CodecConfig) -> Result<Self, ConfigError> {
        if cfg.max_payload != 0 {
            return Err(ConfigError::Invalid(
                "rpc's limit is rpc.max_body, not limits.max_payload".into(),
            ));
        }
        let mut s = cfg.section(Some("rpc"))?;
        let max = s.u64("max_body", 0)?;
        s.done()?;
        Ok(Rpc::new(max))
    }

    fn decoder(&self) -> RpcDecoder {
        RpcDecoder::new(self.max_body)
    }

    fn encode(&self, f: &RpcFrame, out: &mut BytesMut) -> Result<(), ProtocolError> {
        encode(out, f, self.max_body)
    }

    /// The unary endpoint's RESPONSE (`RPC-ECHO-1`).
    fn bench_drain(&self, dec: &mut RpcDecoder, each: &mut dyn FnMut(&[u8])) -> u64 {
        dec.drain_requests(|_, _, _, _, p| each(p)).0
    }

    fn bench_reply(&self, request: &RpcFrame, out: &mut BytesMut) -> bool {
        RpcSession::unary(request, out);
        true
    }

    fn largest_unit(&self) -> u64 {
        self.max_body
    }

    fn session(&self, endpoint: &str, sink: bool) -> Result<RpcSession, ConfigError> {
        let ep = match endpoint {
            "" | "unary" => Endpoint::Unary,
            "stream" => Endpoint::Stream { open: None },
            other => {
                return Err(ConfigError::Unsupported(format!(
                    "rpc has no endpoint {other:?} (it has unary, stream)"
                )))
            }
        };
        Ok(RpcSession::new(self, ep, sink))
    }

    /// `RPC-ECHO-7`: one port for both endpoints, chosen by the connection's first frame.
    fn net_session(&self, sink: bool) -> Result<RpcSession, ConfigError> {
        Ok(RpcSession::new(self, Endpoint::Auto, sink))
    }

    fn client<T: Send + 'static>(&self, timeout: u64) -> RpcClient<T> {
        RpcClient {
            m: IdMatcher::new(timeout),
            next_id: 0,
            proto: *self,
        }
    }

    fn describe(f: &RpcFrame) -> FrameFields {
        let mut r = Map::new();
        r.insert("version".into(), Value::from(f.version));
        r.insert("type".into(), Value::from(f.kind));
        r.insert("flags".into(), Value::from(f.flags));
        r.insert("reserved".into(), Value::from(f.reserved));
        r.insert("id".into(), Value::from(f.id));
        r.insert("service".into(), bytes_value(&f.service));
        r.insert("method".into(), bytes_value(&f.method));
        r.insert("error_code".into(), Value::from(f.error_code));
        let mut header = Map::new();
        header.insert("rpc".into(), Value::Object(r));
        FrameFields {
            payload: f.payload.clone(),
            header,
        }
    }

    /// The frame of the `rpc` fields; without them, the plain echo call (id 0).
    fn frame(&self, fields: FrameFields) -> Result<RpcFrame, String> {
        let Some(v) = fields.header.get("rpc").filter(|v| !v.is_null()) else {
            return Ok(RpcFrame::echo_call(0, fields.payload));
        };
        let Value::Object(o) = v else {
            return Err("frame field rpc is not an object".into());
        };
        let sub = FrameFields {
            payload: Bytes::new(),
            header: o.clone(),
        };
        Ok(RpcFrame {
            version: sub.uint("version", u32::MAX as u64)? as u32,
            kind: sub.uint("type", u32::MAX as u64)? as u32,
            flags: sub.uint("flags", u32::MAX as u64)? as u8,
            reserved: sub.uint("reserved", u32::MAX as u64)? as u8,
            id: sub.uint("id", u32::MAX as u64)? as u32,
            service: bytes_field(o, "service")?,
            method: bytes_field(o, "method")?,
            error_code: sub.uint("error_code", u32::MAX as u64)? as u32,
            payload: fields.payload,
        })
    }

    fn payload(f: &RpcFrame) -> &[u8] {
        &f.payload
    }

    fn check_request(&self, len: usize) -> Result<(), ProtocolError> {
        let n = (ECHO_NAMES_LEN + len) as u64;
        let max = self.max_body.min(u32::MAX as u64);
        if n > max {
            return Err(refuse(
                Violation::RpcLim2,
                format!("a call with {len} payload bytes has a body of {n} bytes, above the maximum {max}"),
            ));
        }
        Ok(())
    }

    /// Ids are 32-bit and never reused while pending (`RPC-ID-2`): no practical bound.
    fn max_in_flight(&self) -> (usize, &'static str) {
        (1 << 24, "RPC-ID-2")
    }

    /// `RPC-ECHO-1`, `RPC-MODE-2`: a RESPONSE with error code 0 and flags = the calls' mode
    /// with END_STREAM.
    fn check_reply(&self, f: &RpcFrame) -> Result<(), String> {
        if f.kind != RESPONSE as u32 {
            return Err(format!("reply of type 0x{:02X}, expected RESPONSE", f.kind));
        }
        if f.error_code != CODE_OK as u32 {
            return Err(format!("RESPONSE with error code {}", f.error_code));
        }
        let want = self.mode | END_STREAM;
        if f.flags != want {
            return Err(format!(
                "RESPONSE flags 0x{:02X}, expected 0x{want:02X} (RPC-MODE-2)",
                f.flags
            ));
        }
        Ok(())
    }

    /// The call modes (`RPC-MODE-1`), in the order of their values 0..3.
    const VARIANTS: &'static [&'static str] = &["unary", "client-stream", "server-stream", "bidi"];

    fn with_variant(self, variant: &str) -> Self {
        let mode = Self::VARIANTS
            .iter()
            .position(|v| *v == variant)
            .unwrap_or(0) as u8;
        Rpc { mode, ..self }
    }

    fn streams(&self) -> Option<&dyn StreamOps<RpcFrame>> {
        Some(self)
    }
}

/// The stream client of §10: STREAM_INIT to the echo service, STREAM_DATA, STREAM_END, all with
/// flags 0 and the stream's id.
impl StreamOps<RpcFrame> for Rpc {
    fn put_open(&self, id: u32, out: &mut BytesMut) {
        out.reserve(HEADER_LEN + ECHO_NAMES_LEN);
        put_header(out, STREAM_INIT, 0, id, ECHO_NAMES_LEN);
        out.put_u16(ECHO_SERVICE.len() as u16);
        out.put_slice(ECHO_SERVICE);
        out.put_u16(ECHO_METHOD.len() as u16);
        out.put_slice(ECHO_METHOD);
    }

    fn put_data(&self, id: u32, len: usize, out: &mut BytesMut, fill: &mut dyn FnMut(&mut [u8])) {
        out.reserve(HEADER_LEN + len);
        put_header(out, STREAM_DATA, 0, id, len);
        put_payload(out, len, fill);
    }

    fn put_end(&self, id: u32, out: &mut BytesMut) {
        put_control(out, STREAM_END, id);
    }

    fn classify<'a>(&self, f: &'a RpcFrame) -> StreamReply<'a> {
        match f.kind as u8 {
            STREAM_INIT_ACK => StreamReply::Opened(f.id),
            STREAM_DATA => StreamReply::Data(f.id, &f.payload),
            STREAM_END => StreamReply::Ended(f.id),
            _ => StreamReply::Other,
        }
    }
}

/// Which echo endpoint a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    /// Not chosen yet: the first frame picks (`RPC-ECHO-7`).
    Auto,
    /// §9.
    Unary,
    /// §10: waiting (`None`) or open with the id of its STREAM_INIT.
    Stream { open: Option<u32> },
}

/// The rpc [`ReplyRewriter`] (fp-raw-echo): a REQUEST becomes the RESPONSE of the echo service
/// (error code 0, its payload), STREAM_INIT its INIT_ACK, STREAM_DATA the same frame with flags 0,
/// STREAM_END its END (`RPC-ECHO-1`, `RPC-STREAM-*`), from the header and the name lengths only:
/// names are not compared, nothing is validated.
#[derive(Debug)]
pub struct RpcRewriter {
    state: RewriteState,
    reply: bool,
}

/// The rpc header rule of the rewriter: the 16 bytes, then for REQUEST and STREAM_INIT the
/// names (each a u16 length and its bytes, at most the body), which the reply drops.
fn rpc_rewrite(h: &[u8], out: &mut Vec<u8>, reply: bool) -> Rewrite {
    let kind = h[5];
    let body = u32::from_be_bytes([h[12], h[13], h[14], h[15]]) as usize;
    let mut hl = HEADER_LEN;
    if kind == REQUEST || kind == STREAM_INIT {
        // service, then method: [u16 length][bytes] each, clipped to the body (bounded: 128 KiB)
        for _ in 0..2 {
            let end = HEADER_LEN + body;
            if hl + 2 > end {
                hl = end;
                break;
            }
            if h.len() < hl + 2 {
                return Rewrite::Need(hl + 2);
            }
            hl = (hl + 2 + u16::from_be_bytes([h[hl], h[hl + 1]]) as usize).min(end);
        }
        if h.len() < hl {
            return Rewrite::Need(hl);
        }
    }
    let payload = (body - (hl - HEADER_LEN)) as u64;
    let id = u32::from_be_bytes([h[8], h[9], h[10], h[11]]);
    let copy = match kind {
        REQUEST => {
            if reply {
                put_header(
                    out,
                    RESPONSE,
                    (h[6] & MODE_MASK) | END_STREAM,
                    id,
                    2 + payload as usize,
                );
                out.put_u16(CODE_OK);
            }
            reply
        }
        STREAM_INIT | STREAM_END => {
            if reply {
                let k = if kind == STREAM_INIT {
                    STREAM_INIT_ACK
                } else {
                    STREAM_END
                };
                put_header(out, k, 0, id, 0);
            }
            false
        }
        STREAM_DATA => {
            if reply {
                put_header(out, STREAM_DATA, 0, id, payload as usize);
            }
            reply
        }
        _ => false,
    };
    Rewrite::Done {
        payload,
        copy,
        key: None,
    }
}

impl ReplyRewriter for RpcRewriter {
    fn rewrite(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let reply = self.reply;
        self.state.rewrite(
            input,
            out,
            HEADER_LEN,
            |h, o| rpc_rewrite(h, o, reply),
            |_, _, _| {},
        );
    }
    fn frames(&self) -> u64 {
        self.state.frames
    }
    fn payload_bytes(&self) -> u64 {
        self.state.payload_bytes
    }
}

/// The server side of one rpc connection: the unary endpoint, the stream endpoint, or (network
/// server) the one the first frame picks.
#[derive(Debug)]
pub struct RpcSession {
    dec: RpcDecoder,
    ep: Endpoint,
    sink: bool,
    closed: bool,
}

/// Writes a control frame of the stream endpoint (flags 0, empty body).
fn put_control(out: &mut BytesMut, kind: u8, id: u32) {
    put_header(out, kind, 0, id, 0);
}

impl RpcSession {
    fn new(p: &Rpc, ep: Endpoint, sink: bool) -> Self {
        RpcSession {
            dec: p.decoder(),
            ep,
            sink,
            closed: false,
        }
    }

    /// `RPC-ECHO-1`, `RPC-ECHO-2`, `RPC-MODE-2`: the RESPONSE to a REQUEST.
    fn unary(f: &RpcFrame, out: &mut BytesMut) {
        Self::unary_reply(f.flags, f.id, &f.service, &f.method, &f.payload, out);
    }

    /// The unary endpoint's RESPONSE to a REQUEST's fields (RPC-ECHO-1..3).
    fn unary_reply(
        flags: u8,
        id: u32,
        service: &[u8],
        method: &[u8],
        payload: &[u8],
        out: &mut BytesMut,
    ) {
        let code = if service != ECHO_SERVICE {
            CODE_SERVICE_NOT_FOUND
        } else if method != ECHO_METHOD {
            CODE_METHOD_NOT_FOUND
        } else {
            CODE_OK
        };
        let payload: &[u8] = if code == CODE_OK { payload } else { &[] };
        let flags = (flags & MODE_MASK) | END_STREAM;
        out.reserve(HEADER_LEN + 2 + payload.len());
        put_header(out, RESPONSE, flags, id, 2 + payload.len());
        out.put_u16(code);
        out.put_slice(payload);
    }

    /// `RPC-STREAM-1..7`: the stream endpoint's answer to one frame; returns the new state.
    fn stream(open: Option<u32>, f: &RpcFrame, out: &mut BytesMut) -> Option<u32> {
        let kind = f.kind as u8;
        match open {
            None => {
                if kind == STREAM_INIT && f.service == ECHO_SERVICE && f.method == ECHO_METHOD {
                    put_control(out, STREAM_INIT_ACK, f.id);
                    Some(f.id)
                } else {
                    put_control(out, STREAM_CANCEL, f.id);
                    None
                }
            }
            Some(sid) => match kind {
                STREAM_DATA => {
                    out.reserve(HEADER_LEN + f.payload.len());
                    put_header(out, STREAM_DATA, 0, sid, f.payload.len());
                    out.put_slice(&f.payload);
                    Some(sid)
                }
                STREAM_END => {
                    put_control(out, STREAM_END, sid);
                    None
                }
                STREAM_CANCEL => None,
                _ => {
                    put_control(out, STREAM_CANCEL, sid);
                    None
                }
            },
        }
    }
}

impl ServerSession for RpcSession {
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
            if matches!(self.ep, Endpoint::Unary | Endpoint::Auto) {
                // Whole REQUEST frames where they lie (the same replies as `unary`), then the
                // next frame through decode.
                let sink = self.sink;
                let (frames, bytes) =
                    self.dec
                        .drain_requests(|flags, id, service, method, payload| {
                            if !sink {
                                Self::unary_reply(flags, id, service, method, payload, out)
                            }
                        });
                if frames > 0 {
                    self.ep = Endpoint::Unary;
                }
                s.frames += frames;
                s.bytes += bytes;
            }
            let at = self.dec.position();
            let f = match self.dec.decode() {
                Ok(Some(f)) => f,
                Ok(None) => return s,
                Err(e) => {
                    self.closed = true;
                    s.closed = true;
                    s.error = Some(e);
                    return s;
                }
            };
            s.frames += 1;
            s.bytes += f.payload.len() as u64;
            if self.ep == Endpoint::Auto {
                self.ep = if is_stream_type(f.kind) {
                    Endpoint::Stream { open: None }
                } else {
                    Endpoint::Unary
                };
            }
            if self.sink {
                continue;
            }
            match self.ep {
                Endpoint::Unary if f.kind == REQUEST as u32 => Self::unary(&f, out),
                Endpoint::Unary | Endpoint::Auto => {
                    self.closed = true;
                    s.closed = true;
                    s.error = Some(ProtocolError::new(
                        Violation::RpcEcho4,
                        at,
                        format!("type 0x{:02X} on the unary endpoint", f.kind),
                    ));
                    return s;
                }
                Endpoint::Stream { open } => {
                    self.ep = Endpoint::Stream {
                        open: Self::stream(open, &f, out),
                    }
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

/// The client side of one rpc connection: ids 0, 1, 2 ... (`RPC-ID-1`), never one that is
/// pending (`RPC-ID-2`), responses matched by id (`RPC-MATCH-*`).
#[derive(Debug)]
pub struct RpcClient<T> {
    m: IdMatcher<T>,
    next_id: u32,
    proto: Rpc,
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
        if self.m.is_failed() {
            return Err(SendError::ConnectionFailed);
        }
        let p = self.proto;
        let id = self.next_id;
        p.write_echo_call(out, id, p.mode | END_STREAM, len, fill)
            .map_err(SendError::Encode)?;
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

    fn expire(&mut self, now: u64) -> Expired<T> {
        Expired {
            timed_out: self.m.expire(now),
            failed: Vec::new(),
        }
    }

    fn fail(&mut self) -> Vec<T> {
        self.m.fail()
    }

    fn pending(&self) -> usize {
        self.m.pending()
    }

    fn is_failed(&self) -> bool {
        self.m.is_failed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::hex;

    fn decode_all(max: u64, chunks: &[&[u8]]) -> (Vec<RpcFrame>, Option<(&'static str, u64)>) {
        let (f, e) = RpcDecoder::new(max).decode_stream(chunks.iter().copied());
        (f, e.map(|e| (e.requirement, e.offset)))
    }

    const UPSTREAM_REQUEST: &str = "47 52 50 43 01 01 04 00 00 00 00 01 00 00 00 1d \
        00 10 42 65 6e 63 68 45 63 68 6f 53 65 72 76 69 63 65 00 04 65 63 68 6f 68 65 6c 6c 6f";

    /// fp-raw-echo's rewriter answers a well-formed stream byte for byte as the echo session
    /// does (unary with every call mode and payload sizes across the u16/u32 edges; a stream),
    /// in any split, and counts the frames.
    #[test]
    fn rewriter_answers_like_the_session_in_any_split() {
        let p = Rpc::new(0);
        let mut unary = BytesMut::new();
        for (i, len) in [0usize, 1, 47, 300, 70000].iter().enumerate() {
            let mut f = RpcFrame::echo_call(i as u32 + 7, Bytes::from(vec![i as u8 + 1; *len]));
            f.flags = i as u8 & MODE_MASK;
            encode(&mut unary, &f, 0).unwrap();
        }
        let mut stream = BytesMut::new();
        let mut init = RpcFrame::new(STREAM_INIT, 0, 9);
        init.service = Bytes::from_static(ECHO_SERVICE);
        init.method = Bytes::from_static(ECHO_METHOD);
        encode(&mut stream, &init, 0).unwrap();
        for len in [3usize, 128, 0] {
            let mut d = RpcFrame::new(STREAM_DATA, 0, 9);
            d.payload = Bytes::from(vec![5u8; len]);
            encode(&mut stream, &d, 0).unwrap();
        }
        encode(&mut stream, &RpcFrame::new(STREAM_END, 0, 9), 0).unwrap();
        for (wire, ep, frames) in [(&unary, "unary", 5u64), (&stream, "stream", 5)] {
            let mut want = BytesMut::new();
            let mut sess = p.session(ep, false).unwrap();
            sess.extend(wire);
            sess.process(&mut want);
            for split in [1usize, 2, 15, 16, 17, 19, 40, 4096, wire.len()] {
                let mut w = p.rewriter(true).unwrap();
                let mut got = Vec::new();
                for c in wire.chunks(split) {
                    w.rewrite(c, &mut got);
                }
                assert_eq!(got, &want[..], "{ep}, split {split}");
                assert_eq!(w.frames(), frames, "{ep}, split {split}");
                let mut counting = p.rewriter(false).unwrap();
                let mut none = Vec::new();
                counting.rewrite(wire, &mut none);
                assert!(none.is_empty() && counting.frames() == frames);
            }
        }
    }

    #[test]
    fn decodes_the_upstream_request_in_any_split() {
        let wire = hex(UPSTREAM_REQUEST);
        for cut in 0..=wire.len() {
            let (frames, err) = decode_all(0, &[&wire[..cut], &wire[cut..]]);
            assert_eq!(err, None, "cut {cut}");
            assert_eq!(frames.len(), 1);
            let f = &frames[0];
            assert_eq!((f.kind, f.flags, f.id), (1, 4, 1));
            assert_eq!(&f.service[..], b"BenchEchoService");
            assert_eq!(&f.method[..], b"echo");
            assert_eq!(&f.payload[..], b"hello");
            let mut out = BytesMut::new();
            encode(&mut out, f, 0).unwrap();
            assert_eq!(&out[..], &wire[..]);
        }
    }

    #[test]
    fn header_errors_are_judged_when_the_header_is_complete() {
        let good = hex("47 52 50 43 01 12 00 00 00 00 00 07 00 00 00 01 61");
        let cases: [(&str, &str); 5] = [
            (
                "48 52 50 43 01 12 00 00 00 00 00 07 00 00 00 00",
                "RPC-HDR-2",
            ),
            (
                "47 52 50 43 02 12 00 00 00 00 00 07 00 00 00 00",
                "RPC-HDR-3",
            ),
            (
                "47 52 50 43 01 15 00 00 00 00 00 07 00 00 00 00",
                "RPC-HDR-4",
            ),
            (
                "47 52 50 43 01 13 00 00 00 00 00 07 00 00 00 03",
                "RPC-BODY-5",
            ),
            (
                "47 52 50 43 01 12 00 00 00 00 00 07 ff ff ff ff",
                "RPC-LIM-1",
            ),
        ];
        for (h, req) in cases {
            let bad = hex(h);
            let mut wire = good.clone();
            wire.extend(&bad);
            let (frames, err) = decode_all(0, &[&wire]);
            assert_eq!((frames.len(), err), (1, Some((req, 17))), "{req}");
            // 15 bytes of the bad header: truncation, whatever they hold
            let (_, err) = decode_all(0, &[&wire[..wire.len() - 1]]);
            assert_eq!(err, Some(("RPC-STR-3", 17)), "{req}");
        }
    }

    #[test]
    fn body_errors_and_truncation() {
        // REQUEST body of 1 byte, RESPONSE of 1 byte, INIT whose method runs past the body
        let (_, err) = decode_all(
            0,
            &[&hex("47 52 50 43 01 01 00 00 00 00 00 00 00 00 00 01 00")],
        );
        assert_eq!(err, Some(("RPC-BODY-1", 0)));
        let (_, err) = decode_all(
            0,
            &[&hex("47 52 50 43 01 02 00 00 00 00 00 00 00 00 00 01 00")],
        );
        assert_eq!(err, Some(("RPC-BODY-2", 0)));
        let (_, err) = decode_all(
            0,
            &[&hex(
                "47 52 50 43 01 10 00 00 00 00 00 00 00 00 00 05 00 01 61 00 02",
            )],
        );
        assert_eq!(err, Some(("RPC-BODY-3", 0)));
        // a body cut short: truncated, not a body error
        let (_, err) = decode_all(
            0,
            &[&hex("47 52 50 43 01 01 00 00 00 00 00 00 00 00 00 09 00")],
        );
        assert_eq!(err, Some(("RPC-STR-3", 0)));
        // limit 4: a 5-byte body is refused from the header alone
        let (_, err) = decode_all(
            4,
            &[&hex("47 52 50 43 01 12 00 00 00 00 00 00 00 00 00 05")],
        );
        assert_eq!(err, Some(("RPC-LIM-1", 0)));
    }

    #[test]
    fn encoder_refusals() {
        let mut f = RpcFrame::echo_call(0, Bytes::from_static(b"x"));
        let refused = |f: &RpcFrame, max| {
            let mut out = BytesMut::new();
            let e = encode(&mut out, f, max).unwrap_err();
            assert!(out.is_empty());
            e.requirement
        };
        assert_eq!(refused(&f, 23), "RPC-LIM-2");
        f.version = 2;
        assert_eq!(refused(&f, 0), "RPC-HDR-3");
        f.version = 1;
        f.kind = 0x55;
        assert_eq!(refused(&f, 0), "RPC-HDR-4");
        f.kind = STREAM_END as u32;
        assert_eq!(refused(&f, 0), "RPC-BODY-5");
        f.kind = RESPONSE as u32;
        f.error_code = 65536;
        assert_eq!(refused(&f, 0), "RPC-BODY-2");
        let mut g = RpcFrame::echo_call(0, Bytes::new());
        g.method = Bytes::from(vec![b'm'; 65536]);
        assert_eq!(refused(&g, 0), "RPC-BODY-6");
    }

    fn serve(p: &Rpc, endpoint: Option<&str>, wire: &[u8]) -> (Vec<u8>, Served) {
        let mut s = match endpoint {
            Some(e) => p.session(e, false).unwrap(),
            None => p.net_session(false).unwrap(),
        };
        let mut out = BytesMut::new();
        s.extend(wire);
        let r = s.finish(&mut out);
        (out.to_vec(), r)
    }

    fn enc(f: &RpcFrame) -> Vec<u8> {
        let mut out = BytesMut::new();
        encode(&mut out, f, 0).unwrap();
        out.to_vec()
    }

    #[test]
    fn unary_endpoint_echoes_and_closes_on_other_types() {
        let p = Rpc::new(0);
        let mut call = RpcFrame::echo_call(5, Bytes::from_static(b"hi"));
        call.flags = 0x01;
        let mut other = RpcFrame::echo_call(6, Bytes::from_static(b"x"));
        other.service = Bytes::from_static(b"Nope");
        let mut wire = enc(&call);
        wire.extend(enc(&other));
        let at = wire.len() as u64;
        wire.extend(enc(&RpcFrame::new(STREAM_END, 0, 7)));
        wire.extend(enc(&call));
        let (out, r) = serve(&p, Some(""), &wire);
        let mut want = hex("47 52 50 43 01 02 05 00 00 00 00 05 00 00 00 04 00 00 68 69");
        want.extend(hex("47 52 50 43 01 02 04 00 00 00 00 06 00 00 00 02 00 02"));
        assert_eq!(out, want);
        assert!(r.closed);
        let e = r.error.unwrap();
        assert_eq!((e.requirement, e.offset), ("RPC-ECHO-4", at));
    }

    #[test]
    fn stream_endpoint_state_machine_and_first_frame_choice() {
        let p = Rpc::new(0);
        let mut init = RpcFrame::new(STREAM_INIT, 0, 7);
        init.service = Bytes::from_static(ECHO_SERVICE);
        init.method = Bytes::from_static(ECHO_METHOD);
        let mut data = RpcFrame::new(STREAM_DATA, 0, 99);
        data.payload = Bytes::from_static(b"abc");
        let mut wire = enc(&RpcFrame::new(STREAM_DATA, 0, 3)); // before INIT: cancelled
        wire.extend(enc(&init));
        wire.extend(enc(&data));
        wire.extend(enc(&init)); // second INIT: cancels the open stream
        wire.extend(enc(&init));
        wire.extend(enc(&RpcFrame::new(STREAM_END, 0, 7)));
        let mut want = hex("47 52 50 43 01 14 00 00 00 00 00 03 00 00 00 00");
        want.extend(hex("47 52 50 43 01 11 00 00 00 00 00 07 00 00 00 00"));
        want.extend(hex(
            "47 52 50 43 01 12 00 00 00 00 00 07 00 00 00 03 61 62 63",
        ));
        want.extend(hex("47 52 50 43 01 14 00 00 00 00 00 07 00 00 00 00"));
        want.extend(hex("47 52 50 43 01 11 00 00 00 00 00 07 00 00 00 00"));
        want.extend(hex("47 52 50 43 01 13 00 00 00 00 00 07 00 00 00 00"));
        for ep in [Some("stream"), None] {
            let (out, r) = serve(&p, ep, &wire);
            assert_eq!(out, want, "{ep:?}");
            assert_eq!((r.closed, r.error), (true, None));
        }
        // the network endpoint picks unary for a REQUEST first
        let (out, _) = serve(&p, None, &enc(&RpcFrame::echo_call(1, Bytes::new())));
        assert_eq!(
            out,
            hex("47 52 50 43 01 02 04 00 00 00 00 01 00 00 00 02 00 00")
        );
    }

    #[test]
    fn client_ids_matching_and_refusals() {
        let p = Rpc::new(64);
        let mut c = p.client::<u32>(100);
        let mut out = BytesMut::new();
        c.send_request(0, 0, 3, &mut out, |b| b.copy_from_slice(b"abc"))
            .unwrap();
        assert_eq!(&out[8..12], &[0, 0, 0, 0]);
        // over the limit: refused, takes no id
        assert!(matches!(
            c.send_request(0, 1, 100, &mut BytesMut::new(), |_| {}),
            Err(SendError::Encode(_))
        ));
        assert_eq!(c.next_id(), 1);
        assert!(matches!(
            c.send_one_way(1, &mut BytesMut::new(), |_| {}),
            Err(SendError::Refused(_))
        ));
        let mut resp = RpcFrame::new(RESPONSE, 5, 0);
        resp.payload = Bytes::from_static(b"abc");
        assert_eq!(
            c.receive(&RpcFrame::new(STREAM_DATA, 0, 0)),
            Received::PeerRequest
        );
        assert_eq!(c.receive(&resp), Received::Reply(0));
        assert_eq!(c.receive(&resp), Received::Unmatched);
        assert!(p.check_reply(&resp).is_err()); // flags 0x05, unary calls expect 0x04
        assert!(p.with_variant("client-stream").check_reply(&resp).is_ok());
        resp.flags = 4;
        assert!(p.check_reply(&resp).is_ok());
        resp.error_code = 2;
        assert!(p.check_reply(&resp).is_err());
    }
}
