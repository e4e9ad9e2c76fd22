//! The protocol's entry in the registry: configuration, JSON frames, the echo reply (in place
//! too) and the raw echo's header walker.

#[allow(unused_imports)]
use super::*;

/// The `standard` protocol with its limits: the registry's entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standard {
    /// Maximum payload (the configured one, or the 10 MiB default).
    pub max_payload: u64,
}

/// Flag of a request (kind 1) and of a one-way message (kind 1).
pub(super) const REQUEST: u8 = 0x01;
pub(super) const ONE_WAY: u8 = FLAG_ERROR_OR_ONE_WAY | 0x01;

impl Protocol for Standard {
    const NAME: &'static str = "standard";
    /// The default `--batch`: as many requests as may be in flight at once (`STD-SEQ-3`).
    const DEFAULT_BATCH: usize = 255;
    type Frame = StdFrame;
    type Decoder = StandardDecoder;
    type Session = EchoSession<Standard>;
    type Client<T: Send + 'static> = StandardClient<T>;

    fn from_config(cfg: &CodecConfig) -> Result<Self, ConfigError> {
        cfg.section(None)?.done()?;
        Ok(Standard {
            max_payload: effective_max(cfg.max_payload),
        })
    }

    fn decoder(&self) -> StandardDecoder {
        StandardDecoder::new(self.max_payload)
    }

    fn encode(&self, f: &StdFrame, out: &mut BytesMut) -> Result<(), ProtocolError> {
        encode(out, f.flag, f.sequence, &f.payload, self.max_payload)
    }

    fn bench_drain(&self, dec: &mut StandardDecoder, each: &mut dyn FnMut(&[u8])) -> u64 {
        dec.drain_complete(|_, _, p| each(p)).0
    }

    fn bench_reply(&self, request: &Self::Frame, out: &mut BytesMut) -> bool {
        <Self as Echo>::reply(self, request, out);
        true
    }

    fn largest_unit(&self) -> u64 {
        effective_max(self.max_payload)
    }

    fn session(&self, endpoint: &str, sink: bool) -> Result<Self::Session, ConfigError> {
        EchoSession::of_endpoint(self, endpoint, sink)
    }

    fn client<T: Send + 'static>(&self, timeout: u64) -> StandardClient<T> {
        StandardClient {
            m: SequenceMatcher::new(timeout),
            proto: *self,
        }
    }

    fn describe(f: &StdFrame) -> FrameFields {
        let mut header = Map::new();
        header.insert("flag".into(), Value::from(f.flag));
        header.insert("sequence".into(), Value::from(f.sequence));
        FrameFields {
            payload: f.payload.clone(),
            header,
        }
    }

    fn frame(&self, fields: FrameFields) -> Result<StdFrame, String> {
        Ok(StdFrame {
            flag: fields.uint("flag", 0xFF)? as u8,
            sequence: fields.uint("sequence", 0xFF)? as u8,
            payload: fields.payload,
        })
    }

    fn payload(f: &StdFrame) -> &[u8] {
        &f.payload
    }

    fn check_request(&self, len: usize) -> Result<(), ProtocolError> {
        check_encode(len, self.max_payload)
    }

    fn max_in_flight(&self) -> (usize, &'static str) {
        (255, "STD-SEQ-3")
    }

    fn check_reply(&self, f: &StdFrame) -> Result<(), String> {
        if f.flag == FLAG_REPLY | REQUEST {
            Ok(())
        } else {
            Err(format!("reply flag 0x{:02X}, expected 0x81", f.flag))
        }
    }

    fn walker(&self, reply: bool) -> Option<Box<dyn HeaderWalker>> {
        Some(Box::new(StandardWalker {
            state: WalkState::default(),
            reply,
        }))
    }
}

/// The `standard` [`HeaderWalker`]: with `reply`, sets bit 7 of each flag byte (request 0x01
/// becomes the reply 0x81), which is all an echo of a well-formed request stream needs.
#[derive(Debug)]
pub struct StandardWalker {
    state: WalkState,
    reply: bool,
}

impl HeaderWalker for StandardWalker {
    fn walk(&mut self, buf: &mut [u8]) {
        let reply = self.reply;
        self.state.walk(
            buf,
            4,
            |h| match u16::from_le_bytes([h[2], h[3]]) {
                EXTENDED if h.len() < 8 => HeaderStep::Need(8),
                EXTENDED => {
                    HeaderStep::Payload(u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as u64)
                }
                short => HeaderStep::Payload(short as u64),
            },
            |flag| {
                if reply {
                    *flag |= FLAG_REPLY
                }
            },
        );
    }
    fn frames(&self) -> u64 {
        self.state.frames
    }
    fn payload_bytes(&self) -> u64 {
        self.state.payload_bytes
    }
}

impl Echo for Standard {
    /// STD-ECHO-1: only requests (bits 7 and 6 clear) are answered, with the reply bit set and
    /// the same kind, sequence and payload; STD-ECHO-2: nothing for one-way messages or replies.
    fn reply(&self, f: &StdFrame, out: &mut BytesMut) {
        reply_to(f.flag, f.sequence, &f.payload, out);
    }

    fn reply_in_place(
        &self,
        dec: &mut StandardDecoder,
        out: &mut BytesMut,
        sink: bool,
    ) -> (u64, u64) {
        dec.drain_complete(|flag, seq, payload| {
            if !sink {
                reply_to(flag, seq, payload, out)
            }
        })
    }
}

/// The reply to one frame ([`Echo::reply`]).
#[inline]
fn reply_to(flag: u8, sequence: u8, payload: &[u8], out: &mut BytesMut) {
    if flag & (FLAG_REPLY | FLAG_ERROR_OR_ONE_WAY) == 0 {
        out.reserve(header_len(payload.len()) + payload.len());
        put_header(
            out,
            FLAG_REPLY | (flag & KIND_MASK),
            sequence,
            payload.len(),
        );
        out.put_slice(payload);
    }
}
