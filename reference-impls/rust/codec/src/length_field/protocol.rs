//! The protocol's entry in the registry: configuration, JSON frames, the echo reply (in place
//! too) and the raw echo's header walker.

#[allow(unused_imports)]
use super::*;

/// The `length-field` protocol in one profile, with its limits: the registry's entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LengthField {
    pub profile: Profile,
    /// Maximum payload as configured (0 = the 10 MiB default; the decoder also caps it at the
    /// field's capacity, `LF-LIM-1`).
    pub max_payload: u64,
}

impl Protocol for LengthField {
    const NAME: &'static str = "length-field";
    /// The default `--batch`: 128 requests, the batch of the benchmarks' batched echo for this
    /// protocol.
    const DEFAULT_BATCH: usize = 128;
    type Frame = Bytes;
    type Decoder = LengthFieldDecoder;
    type Session = EchoSession<LengthField>;
    type Client<T: Send + 'static> = LengthFieldClient<T>;

    /// Section `length_field`: `offset` (default 0) and `size` (default 2, `LF-FMT-2`); an
    /// unsupported size is `LF-FMT-3`.
    fn from_config(cfg: &CodecConfig) -> Result<Self, ConfigError> {
        let mut s = cfg.section(Some("length_field"))?;
        let offset = s.u32("offset", 0)?;
        let size = s.i32("size", 2)?;
        s.done()?;
        let profile = Profile::new(offset, size as i64)?;
        if offset > MAX_OFFSET {
            return Err(ConfigError::Unsupported(format!(
                "length-field offset above {MAX_OFFSET} bytes is not supported"
            )));
        }
        Ok(LengthField {
            profile,
            max_payload: cfg.max_payload,
        })
    }

    fn decoder(&self) -> LengthFieldDecoder {
        LengthFieldDecoder::new(self.profile, self.max_payload)
    }

    fn encode(&self, payload: &Bytes, out: &mut BytesMut) -> Result<(), ProtocolError> {
        self.profile.encode(out, payload, self.max_payload)
    }

    fn bench_drain(&self, dec: &mut LengthFieldDecoder, each: &mut dyn FnMut(&[u8])) -> u64 {
        dec.drain_complete(|p| each(p)).0
    }

    fn bench_reply(&self, request: &Self::Frame, out: &mut BytesMut) -> bool {
        <Self as Echo>::reply(self, request, out);
        true
    }

    /// Payloads beyond the 2-byte default field use the 4-byte profile on both ends.
    fn bench_codec(payload: usize) -> Option<CodecConfig> {
        (payload > 0xFFFF).then(|| {
            CodecConfig::parse(
                r#"{"protocol": "length-field", "length_field": {"offset": 0, "size": 4}}"#,
            )
            .expect("a valid codec")
        })
    }

    fn largest_unit(&self) -> u64 {
        crate::effective_max(self.max_payload).min(self.profile.size.capacity())
    }

    fn session(&self, endpoint: &str, sink: bool) -> Result<Self::Session, ConfigError> {
        EchoSession::of_endpoint(self, endpoint, sink)
    }

    fn client<T: Send + 'static>(&self, timeout: u64) -> LengthFieldClient<T> {
        LengthFieldClient {
            m: FifoMatcher::new(timeout, DEFAULT_PENDING_BOUND),
            proto: *self,
        }
    }

    /// Only the payload: a length-field frame has no other field.
    fn describe(payload: &Bytes) -> FrameFields {
        FrameFields {
            payload: payload.clone(),
            header: Map::new(),
        }
    }

    /// The payload; other fields (a `standard` flag or sequence) are not part of the frame.
    fn frame(&self, fields: FrameFields) -> Result<Bytes, String> {
        Ok(fields.payload)
    }

    fn payload(payload: &Bytes) -> &[u8] {
        payload
    }

    fn check_request(&self, len: usize) -> Result<(), ProtocolError> {
        self.profile.check_encode(len, self.max_payload)
    }

    fn max_in_flight(&self) -> (usize, &'static str) {
        (DEFAULT_PENDING_BOUND, "LF-MATCH-4")
    }

    /// Profiles at offset 0 with a 1, 2 or 4-byte little-endian length (an echo needs no
    /// rewriting: the reply is the request).
    fn walker(&self, _reply: bool) -> Option<Box<dyn HeaderWalker>> {
        let width = match (self.profile.offset, self.profile.size) {
            (0, LengthSize::U8) => 1,
            (0, LengthSize::U16Le) => 2,
            (0, LengthSize::U32Le) => 4,
            _ => return None,
        };
        Some(Box::new(LengthFieldWalker {
            state: WalkState::default(),
            width,
        }))
    }
}

/// The `length-field` [`HeaderWalker`] for little-endian fixed-size fields at offset 0.
#[derive(Debug)]
pub struct LengthFieldWalker {
    state: WalkState,
    width: usize,
}

impl HeaderWalker for LengthFieldWalker {
    fn walk(&mut self, buf: &mut [u8]) {
        self.state.walk(
            buf,
            self.width,
            |h| {
                let mut b = [0u8; 8];
                b[..h.len()].copy_from_slice(h);
                HeaderStep::Payload(u64::from_le_bytes(b))
            },
            |_| {},
        );
    }
    fn frames(&self) -> u64 {
        self.state.frames
    }
    fn payload_bytes(&self) -> u64 {
        self.state.payload_bytes
    }
}

impl Echo for LengthField {
    /// LF-ECHO-1: every frame is answered with the same payload, framed in the same profile.
    fn reply(&self, payload: &Bytes, out: &mut BytesMut) {
        self.reply_to(payload, out);
    }

    fn reply_in_place(
        &self,
        dec: &mut LengthFieldDecoder,
        out: &mut BytesMut,
        sink: bool,
    ) -> (u64, u64) {
        dec.drain_complete(|payload| {
            if !sink {
                self.reply_to(payload, out)
            }
        })
    }
}

impl LengthField {
    /// The reply to one frame ([`Echo::reply`]).
    #[inline]
    fn reply_to(&self, payload: &[u8], out: &mut BytesMut) {
        out.reserve(self.profile.header_len(payload.len()) + payload.len());
        self.profile.put_header(out, payload.len());
        out.put_slice(payload);
    }
}
