//! The protocol's entry in the registry: configuration, JSON frames, sessions, streams, clients.

#[allow(unused_imports)]
use super::*;

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
    pub(super) fn write_echo_call(
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

    /// `RPC-MATCH-2`, `RPC-MATCH-4`: a RESPONSE matching no pending request, and a frame of any
    /// other type, complete nothing and are not a connection error.
    const STRAYS_ARE_ERRORS: bool = false;

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
