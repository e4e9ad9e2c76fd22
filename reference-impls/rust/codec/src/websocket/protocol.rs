//! The protocol's entry in the registry: configuration, JSON frames, sessions and clients.

#[allow(unused_imports)]
use super::*;

/// The `websocket` protocol: role, limits, and the load client's message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebSocket {
    pub role: Role,
    /// Frame limit (`limits.max_payload`, resolved).
    pub max_frame: u64,
    /// Message limit (`websocket.max_message`, resolved).
    pub max_message: u64,
    /// The load client's messages: TEXT or BINARY (`--variant`).
    pub opcode: u8,
    /// `--variant prose`: TEXT messages of English words (else hex text or binary).
    pub prose: bool,
    /// The echo service's path and subprotocol (`websocket.path`, `websocket.subprotocol`).
    pub endpoint: Endpoint,
    /// A client's connection after its opening: permessage-deflate as the server agreed it
    /// ([`Protocol::opened`]).
    pub deflate: Option<Agreement>,
}

impl WebSocket {
    pub fn new(role: Role, max_frame: u64, max_message: u64) -> Self {
        let d = WsDecoder::new(role, max_frame, max_message);
        WebSocket {
            role,
            max_frame: d.max_frame,
            max_message: d.max_message,
            opcode: BINARY,
            prose: false,
            endpoint: Endpoint::default(),
            deflate: None,
        }
    }

    /// The same protocol in the server role (what `serve` and the network server are).
    fn server(&self) -> WebSocket {
        WebSocket {
            role: Role::Server,
            ..*self
        }
    }
}

/// `websocket.path` / `websocket.subprotocol`: a string `ok` accepts, kept for the process's
/// life (a program reads its codec once; `&'static` keeps [`WebSocket`] `Copy`).
fn endpoint_name(
    v: Option<&Value>,
    key: &str,
    ok: impl Fn(&str) -> bool,
) -> Result<Option<&'static str>, ConfigError> {
    match v {
        None => Ok(None),
        Some(Value::String(p)) if ok(p) => Ok(Some(Box::leak(p.clone().into_boxed_str()))),
        Some(v) => Err(ConfigError::Invalid(format!(
            "codec.websocket.{key} must be {}, not {v}",
            if key == "path" {
                "a request target starting with '/' (visible ASCII)"
            } else {
                "one token (RFC 6455 §4.1)"
            }
        ))),
    }
}

fn bytes_value(b: &[u8]) -> Value {
    Value::Array(b.iter().map(|&x| Value::from(x)).collect())
}

impl Protocol for WebSocket {
    const NAME: &'static str = "websocket";
    type Frame = WsFrame;
    type Decoder = WsDecoder;

    fn rewriter(&self, reply: bool) -> Option<Box<dyn ReplyRewriter>> {
        Some(Box::new(WsRewriter {
            state: RewriteState::default(),
            head: Vec::new(),
            opened: false,
            closed: false,
            reply,
            endpoint: self.endpoint,
        }))
    }
    type Session = WsSession;
    type Client<T: Send + 'static> = WsClient<T>;

    /// `{"protocol": "websocket", "limits": {"max_payload": N}, "websocket": {"role":
    /// "server" | "client", "max_message": M, "path": "/ws/echo", "subprotocol": "echo.v1",
    /// "permessage_deflate": false}}`;
    /// the role may also be the testee protocol's enum value (0 or 1 = server, 2 = client).
    fn from_config(cfg: &CodecConfig) -> Result<Self, ConfigError> {
        let mut s = cfg.section(Some("websocket"))?;
        let role = match s.value("role") {
            None => Role::Server,
            Some(Value::String(r)) if r == "server" => Role::Server,
            Some(Value::String(r)) if r == "client" => Role::Client,
            Some(v) if v.as_u64() == Some(0) || v.as_u64() == Some(1) => Role::Server,
            Some(v) if v.as_u64() == Some(2) => Role::Client,
            Some(v) => {
                return Err(ConfigError::Invalid(format!(
                    "codec.websocket.role must be \"server\" or \"client\", not {v}"
                )))
            }
        };
        let max_message = s.u64("max_message", 0)?;
        let path = endpoint_name(s.value("path"), "path", |p| {
            p.starts_with('/') && p.bytes().all(|b| (0x21..0x7f).contains(&b))
        })?;
        let subprotocol = endpoint_name(s.value("subprotocol"), "subprotocol", |p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        })?;
        let permessage_deflate = match s.value("permessage_deflate") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                return Err(ConfigError::Invalid(format!(
                    "codec.websocket.permessage_deflate must be true or false, not {v}"
                )))
            }
        };
        s.done()?;
        Ok(WebSocket {
            endpoint: Endpoint {
                path,
                subprotocol,
                permessage_deflate,
            },
            ..WebSocket::new(role, cfg.max_payload, max_message)
        })
    }

    fn decoder(&self) -> WsDecoder {
        let mut d = WsDecoder::new(self.role, self.max_frame, self.max_message);
        d.set_deflate(self.deflate.is_some());
        d
    }

    fn encode(&self, f: &WsFrame, out: &mut BytesMut) -> Result<(), ProtocolError> {
        encode(out, f, self.max_frame)
    }

    /// Masked binary FIN frames with the micro-benchmarks' key ([`BENCH_KEY`], `12 34 56 78`).
    fn bench_requests(
        &self,
        count: usize,
        len: usize,
        out: &mut BytesMut,
        fill: &mut dyn FnMut(u64, &mut [u8]),
    ) -> Result<(), String> {
        for i in 0..count as u64 {
            put_masked_frame(out, BINARY, BENCH_KEY, len, |p| fill(i, p));
        }
        Ok(())
    }

    /// The echo session's reply: an unmasked server frame of the message's opcode.
    fn bench_drain(&self, dec: &mut WsDecoder, each: &mut dyn FnMut(&[u8])) -> u64 {
        dec.drain_complete(|_, p| each(p)).0
    }

    fn bench_reply(&self, request: &WsFrame, out: &mut BytesMut) -> bool {
        put_server_frame(out, request.opcode as u8, &request.payload);
        true
    }

    /// Masking 1024 bytes, and the text validation of WS-UTF8-* (tools/bench/microbench.md).
    const BENCH_EXTRA: &'static [(&'static str, usize)] =
        &[("mask", 1024), ("utf8", 67), ("utf8", 71)];

    fn bench_extra(
        &self,
        op: &str,
        payload: usize,
    ) -> Option<(Vec<u8>, crate::protocol::BenchRoutine)> {
        fn mask_once(b: &mut [u8]) -> u64 {
            mask(b, BENCH_KEY, 0);
            b.last().copied().unwrap_or(0) as u64
        }
        fn validate(b: &mut [u8]) -> u64 {
            let mut v = Utf8::default();
            (v.feed(b) && v.is_complete()) as u64
        }
        let text = |t: &str| (t.len() == payload).then(|| t.as_bytes().to_vec());
        match (op, payload) {
            ("mask", 1024) => Some((
                (0..1024).map(|i| i as u8).collect(),
                mask_once as crate::protocol::BenchRoutine,
            )),
            ("utf8", 67) => Some((
                text("Hello World! This is a test message for UTF-8 validation benchmark.")?,
                validate as crate::protocol::BenchRoutine,
            )),
            ("utf8", 71) => Some((
                text("Hello 世界! 这是一个用于 UTF-8 验证的测试消息, mixed ok.")?,
                validate as crate::protocol::BenchRoutine,
            )),
            _ => None,
        }
    }

    fn largest_unit(&self) -> u64 {
        self.max_frame.max(self.max_message)
    }

    fn session(&self, endpoint: &str, sink: bool) -> Result<WsSession, ConfigError> {
        match endpoint {
            "" | "echo" => Ok(WsSession::new(&self.server(), sink, false)),
            other => Err(ConfigError::Unsupported(format!(
                "websocket has no endpoint {other:?} (it has the default one)"
            ))),
        }
    }

    /// The network server's connections start with the opening handshake (§12).
    fn net_session(&self, sink: bool) -> Result<WsSession, ConfigError> {
        Ok(WsSession::new(&self.server(), sink, true))
    }

    fn error_detail(&self, e: &ProtocolError) -> Option<Map<String, Value>> {
        let code = close_code(e.violation)?;
        let mut d = Map::new();
        d.insert("close_code".into(), Value::from(code));
        let mut o = Map::new();
        o.insert("websocket".into(), Value::Object(d));
        Some(o)
    }

    fn client<T: Send + 'static>(&self, timeout: u64) -> WsClient<T> {
        WsClient {
            m: FifoMatcher::new(timeout, usize::MAX),
            keys: Keys::default(),
            proto: *self,
            deflate: self
                .deflate
                .map(|a| Box::new(DeflateState::new(&a, self.max_message, Role::Client))),
        }
    }

    fn describe(f: &WsFrame) -> FrameFields {
        let mut w = Map::new();
        w.insert("fin".into(), Value::from(f.fin));
        w.insert("rsv".into(), Value::from(f.rsv));
        w.insert("opcode".into(), Value::from(f.opcode));
        w.insert("masked".into(), Value::from(f.masked));
        w.insert("mask_key".into(), bytes_value(&f.mask_key));
        let mut header = Map::new();
        header.insert("websocket".into(), Value::Object(w));
        FrameFields {
            payload: f.payload.clone(),
            header,
        }
    }

    /// The frame of the `websocket` fields; without them, an unmasked binary FIN frame.
    fn frame(&self, fields: FrameFields) -> Result<WsFrame, String> {
        let Some(v) = fields.header.get("websocket").filter(|v| !v.is_null()) else {
            return Ok(WsFrame::server(BINARY, fields.payload));
        };
        let Value::Object(o) = v else {
            return Err("frame field websocket is not an object".into());
        };
        let flag = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
        let sub = FrameFields {
            payload: Bytes::new(),
            header: o.clone(),
        };
        let key = match o.get("mask_key") {
            None | Some(Value::Null) => Bytes::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_u64().filter(|&x| x <= 0xFF).map(|x| x as u8))
                .collect::<Option<Vec<u8>>>()
                .map(Bytes::from)
                .ok_or("websocket.mask_key is not a byte string")?,
            Some(v) => return Err(format!("websocket.mask_key = {v} is not a byte string")),
        };
        Ok(WsFrame {
            fin: flag("fin"),
            rsv: sub.uint("rsv", u32::MAX as u64)? as u32,
            opcode: sub.uint("opcode", u32::MAX as u64)? as u32,
            masked: flag("masked"),
            mask_key: key,
            payload: fields.payload,
        })
    }

    fn payload(f: &WsFrame) -> &[u8] {
        &f.payload
    }

    fn check_request(&self, len: usize) -> Result<(), ProtocolError> {
        if len as u64 > self.max_frame {
            return Err(ProtocolError::new(
                Violation::WsLim3,
                0,
                format!(
                    "payload of {len} bytes above the maximum {}",
                    self.max_frame
                ),
            ));
        }
        Ok(())
    }

    /// Echoes are matched FIFO; the bound only protects memory.
    fn max_in_flight(&self) -> (usize, &'static str) {
        (1 << 20, "WS-ECHO-1")
    }

    /// WS-ECHO-1: one FIN frame with the message's opcode.
    fn check_reply(&self, f: &WsFrame) -> Result<(), String> {
        if !f.fin || f.opcode != self.opcode as u32 || f.masked {
            return Err(format!(
                "echo is opcode 0x{:X} fin {} masked {}, expected an unmasked FIN frame of opcode 0x{:X}",
                f.opcode, f.fin, f.masked, self.opcode
            ));
        }
        Ok(())
    }

    const VARIANTS: &'static [&'static str] = &["binary", "text", "prose"];

    fn with_variant(self, variant: &str) -> Self {
        WebSocket {
            opcode: if variant == "binary" { BINARY } else { TEXT },
            prose: variant == "prose",
            ..self
        }
    }

    fn client_side(self) -> Self {
        WebSocket {
            role: Role::Client,
            ..self
        }
    }

    fn payload_form(&self) -> PayloadForm {
        match (self.opcode, self.prose) {
            (TEXT, true) => PayloadForm::Prose,
            (TEXT, false) => PayloadForm::Hex,
            _ => PayloadForm::Binary,
        }
    }

    fn opening(&self, host: &str) -> Option<Box<dyn crate::protocol::Opening>> {
        let path = self.endpoint.path.unwrap_or("/");
        Some(Box::new(client_opening_with(
            host,
            path,
            self.endpoint.subprotocol,
            self.endpoint.permessage_deflate,
        )))
    }

    /// permessage-deflate as the answer agreed it (`websocket.permessage_deflate`: offered).
    fn opened(&self, opening: &dyn crate::protocol::Opening) -> Self {
        let deflate = opening
            .negotiated()
            .and_then(|v| check_response(&CLIENT_OFFER, &[v]).ok().flatten());
        WebSocket { deflate, ..*self }
    }

    fn put_goodbye(&self, out: &mut BytesMut) -> bool {
        let key = Keys::default().key();
        put_masked_frame(out, CLOSE, key, 2, |p| {
            p.copy_from_slice(&1000u16.to_be_bytes())
        });
        true
    }

    fn is_goodbye(f: &WsFrame) -> bool {
        f.opcode == CLOSE as u32
    }
}
