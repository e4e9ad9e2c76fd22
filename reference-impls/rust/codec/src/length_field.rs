//! The `length-field` protocol (`spec/length-field.md`): `offset` ignored header bytes, a length
//! field (u8, u16/u32 in either byte order, or an unsigned LEB128 varint), then the payload.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde_json::Map;

use crate::config::{CodecConfig, ConfigError};
use crate::matcher::{Expired, FifoMatcher, Received, SendError};
use crate::protocol::{
    put_payload, ClientMatcher, Echo, EchoSession, FrameFields, HeaderStep, HeaderWalker, Protocol,
    WalkState,
};
use crate::{effective_max, FrameDecoder, ProtocolError, Violation};

/// Largest length a 4-byte or varint field may carry (bit 31 clear; `LF-LEN-2`, `LF-LEN-3`).
pub const MAX_SIGNED: u64 = 0x7FFF_FFFF;
/// Pending-request bound of the FIFO matcher (`LF-MATCH-4`).
pub const DEFAULT_PENDING_BOUND: usize = 256;
/// Largest header offset this implementation accepts: the decoder needs no bound (header
/// bytes are dropped as they arrive), but the encoder writes that many zero bytes per frame.
pub const MAX_OFFSET: u32 = 1 << 24;

/// The length field of a profile (`LF-FMT-3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthSize {
    /// `1`: u8.
    U8,
    /// `2`: u16 little-endian (the default, `LF-FMT-2`).
    U16Le,
    /// `4`: u32 little-endian.
    U32Le,
    /// `-2`: u16 big-endian.
    U16Be,
    /// `-4`: u32 big-endian.
    U32Be,
    /// `0`: unsigned LEB128 varint.
    Varint,
}

impl LengthSize {
    /// Maps the wire parameter; any other value is `LF-FMT-3` at offset 0.
    pub fn from_param(size: i64) -> Result<Self, ProtocolError> {
        Ok(match size {
            1 => LengthSize::U8,
            2 => LengthSize::U16Le,
            4 => LengthSize::U32Le,
            -2 => LengthSize::U16Be,
            -4 => LengthSize::U32Be,
            0 => LengthSize::Varint,
            other => {
                return Err(ProtocolError::new(
                    Violation::LfFmt3,
                    0,
                    format!("unsupported length-field size {other}"),
                ))
            }
        })
    }

    pub fn param(self) -> i32 {
        match self {
            LengthSize::U8 => 1,
            LengthSize::U16Le => 2,
            LengthSize::U32Le => 4,
            LengthSize::U16Be => -2,
            LengthSize::U32Be => -4,
            LengthSize::Varint => 0,
        }
    }

    /// Largest length the field can represent.
    pub fn capacity(self) -> u64 {
        match self {
            LengthSize::U8 => 0xFF,
            LengthSize::U16Le | LengthSize::U16Be => 0xFFFF,
            LengthSize::U32Le | LengthSize::U32Be | LengthSize::Varint => MAX_SIGNED,
        }
    }

    /// Bytes the field takes for a length `len`.
    pub fn field_len(self, len: u64) -> usize {
        match self {
            LengthSize::U8 => 1,
            LengthSize::U16Le | LengthSize::U16Be => 2,
            LengthSize::U32Le | LengthSize::U32Be => 4,
            LengthSize::Varint => varint_len(len),
        }
    }
}

/// Bytes of the minimal LEB128 encoding of `v`.
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// A profile: header bytes before the length field, and the field itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub offset: u32,
    pub size: LengthSize,
}

impl Default for Profile {
    /// Offset 0, size 2 (`LF-FMT-2`).
    fn default() -> Self {
        Profile {
            offset: 0,
            size: LengthSize::U16Le,
        }
    }
}

impl Profile {
    /// Builds a profile from the wire parameters, refusing unsupported sizes (`LF-FMT-3`).
    pub fn new(offset: u32, size: i64) -> Result<Self, ProtocolError> {
        Ok(Profile {
            offset,
            size: LengthSize::from_param(size)?,
        })
    }

    /// Checks that a payload of `len` bytes may be encoded. Precedence per §7a: `LF-LEN-1`
    /// (the field cannot represent it), then `LF-LIM-2` (above the configured maximum).
    pub fn check_encode(&self, len: usize, max_payload: u64) -> Result<(), ProtocolError> {
        let len = len as u64;
        let cap = self.size.capacity();
        if len > cap {
            return Err(ProtocolError::new(
                Violation::LfLen1,
                0,
                format!(
                    "payload of {len} bytes does not fit a size-{} length field (max {cap})",
                    self.size.param()
                ),
            ));
        }
        let max = effective_max(max_payload);
        if len > max {
            return Err(ProtocolError::new(
                Violation::LfLim2,
                0,
                format!("payload of {len} bytes above the maximum {max}"),
            ));
        }
        Ok(())
    }

    /// Bytes before the payload for a payload of `len` bytes.
    pub fn header_len(&self, len: usize) -> usize {
        self.offset as usize + self.size.field_len(len as u64)
    }

    /// Writes the zero header bytes and the length field (no checks).
    pub fn put_header(&self, dst: &mut BytesMut, len: usize) {
        if self.offset > 0 {
            dst.put_bytes(0, self.offset as usize);
        }
        match self.size {
            LengthSize::U8 => dst.put_u8(len as u8),
            LengthSize::U16Le => dst.put_u16_le(len as u16),
            LengthSize::U16Be => dst.put_u16(len as u16),
            LengthSize::U32Le => dst.put_u32_le(len as u32),
            LengthSize::U32Be => dst.put_u32(len as u32),
            LengthSize::Varint => {
                let mut v = len as u64;
                while v >= 0x80 {
                    dst.put_u8((v as u8 & 0x7F) | 0x80);
                    v >>= 7;
                }
                dst.put_u8(v as u8);
            }
        }
    }

    /// Appends one encoded frame to `dst`, or refuses it without writing anything.
    pub fn encode(
        &self,
        dst: &mut BytesMut,
        payload: &[u8],
        max_payload: u64,
    ) -> Result<(), ProtocolError> {
        self.check_encode(payload.len(), max_payload)?;
        dst.reserve(self.header_len(payload.len()) + payload.len());
        self.put_header(dst, payload.len());
        dst.put_slice(payload);
        Ok(())
    }

    pub fn encode_to_vec(
        &self,
        payload: &[u8],
        max_payload: u64,
    ) -> Result<Vec<u8>, ProtocolError> {
        let mut b = BytesMut::new();
        self.encode(&mut b, payload, max_payload)?;
        Ok(b.to_vec())
    }
}

/// Streaming decoder for one length-field profile.
#[derive(Debug)]
pub struct LengthFieldDecoder {
    profile: Profile,
    max: u64,
    buf: BytesMut,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// Header bytes of the current frame already consumed (they are ignored, `LF-FMT-4`,
    /// so they are dropped as they arrive: a large offset needs no buffering).
    skipped: u64,
    error: Option<ProtocolError>,
}

enum Field {
    NeedMore,
    Complete { width: usize, len: u64 },
}

impl LengthFieldDecoder {
    /// A decoder for `profile` with the given maximum payload (0 = 10 MiB default; the field's
    /// capacity if smaller, `LF-LIM-1`).
    pub fn new(profile: Profile, max_payload: u64) -> Self {
        LengthFieldDecoder {
            profile,
            max: effective_max(max_payload).min(profile.size.capacity()),
            buf: BytesMut::new(),
            base: 0,
            skipped: 0,
            error: None,
        }
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    pub fn max_payload(&self) -> u64 {
        self.max
    }

    /// Stream offset where the current (undelivered) frame starts.
    pub fn frame_start(&self) -> u64 {
        self.base - self.skipped
    }

    fn fail(&mut self, violation: Violation, message: String) -> ProtocolError {
        let e = ProtocolError::new(violation, self.frame_start(), message);
        self.error = Some(e.clone());
        e
    }

    /// Reads the length field at the start of the buffer (header bytes already skipped).
    fn field(&mut self) -> Result<Field, ProtocolError> {
        match read_field(self.profile.size, &self.buf) {
            Ok(f) => Ok(f),
            Err((v, message)) => Err(self.fail(v, message)),
        }
    }

    /// Calls `each(payload)` for the complete, valid frames at the front of the buffer, borrowed
    /// where they lie, then drops them from the buffer at once; returns (frames, payload
    /// bytes). Stops before an unfinished or invalid frame (left for [`FrameDecoder::decode`],
    /// which classifies it), inside a frame's header and after a failed stream.
    pub fn drain_complete(&mut self, mut each: impl FnMut(&[u8])) -> (u64, u64) {
        if self.error.is_some() || self.skipped > 0 {
            return (0, 0);
        }
        let offset = self.profile.offset as usize;
        let b = &self.buf[..];
        let (mut pos, mut frames, mut bytes) = (0usize, 0u64, 0u64);
        while let Some(at) = b.get(pos + offset..) {
            let Ok(Field::Complete { width, len }) = read_field(self.profile.size, at) else {
                break;
            };
            if len > self.max || width + len as usize > at.len() {
                break;
            }
            each(&at[width..width + len as usize]);
            frames += 1;
            bytes += len;
            pos += offset + width + len as usize;
        }
        self.buf.advance(pos);
        self.base += pos as u64;
        (frames, bytes)
    }
}

/// The length field at the start of `b` (see [`LengthFieldDecoder::field`]); an error is the
/// violation and its message.
fn read_field(size: LengthSize, b: &[u8]) -> Result<Field, (Violation, String)> {
    let fixed = |w: usize| -> Option<&[u8]> { b.get(..w) };
    let (width, len) = match size {
        LengthSize::U8 => match fixed(1) {
            Some(f) => (1, f[0] as u64),
            None => return Ok(Field::NeedMore),
        },
        LengthSize::U16Le => match fixed(2) {
            Some(f) => (2, u16::from_le_bytes([f[0], f[1]]) as u64),
            None => return Ok(Field::NeedMore),
        },
        LengthSize::U16Be => match fixed(2) {
            Some(f) => (2, u16::from_be_bytes([f[0], f[1]]) as u64),
            None => return Ok(Field::NeedMore),
        },
        LengthSize::U32Le | LengthSize::U32Be => {
            let Some(f) = fixed(4) else {
                return Ok(Field::NeedMore);
            };
            let a = [f[0], f[1], f[2], f[3]];
            let v = if size == LengthSize::U32Le {
                u32::from_le_bytes(a)
            } else {
                u32::from_be_bytes(a)
            } as u64;
            if v > MAX_SIGNED {
                return Err((Violation::LfLen3, format!("length {v} has bit 31 set")));
            }
            (4, v)
        }
        LengthSize::Varint => {
            let mut v: u64 = 0;
            let mut done = None;
            for i in 0..5 {
                let Some(&byte) = b.get(i) else {
                    return Ok(Field::NeedMore);
                };
                v |= ((byte & 0x7F) as u64) << (7 * i);
                if byte & 0x80 == 0 {
                    done = Some(i + 1);
                    break;
                }
            }
            let Some(width) = done else {
                return Err((Violation::LfLen2, "varint longer than 5 bytes".into()));
            };
            if v > MAX_SIGNED {
                return Err((Violation::LfLen2, format!("varint value {v} above 2^31-1")));
            }
            (width, v)
        }
    };
    Ok(Field::Complete { width, len })
}

impl FrameDecoder for LengthFieldDecoder {
    type Frame = Bytes;

    fn extend(&mut self, data: &[u8]) {
        if self.error.is_none() {
            self.buf.extend_from_slice(data);
        }
    }

    fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    fn decode(&mut self) -> Result<Option<Bytes>, ProtocolError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let offset = self.profile.offset as u64;
        if self.skipped < offset {
            let n = (offset - self.skipped).min(self.buf.len() as u64) as usize;
            self.buf.advance(n);
            self.base += n as u64;
            self.skipped += n as u64;
            if self.skipped < offset {
                return Ok(None);
            }
        }
        let (width, len) = match self.field()? {
            Field::NeedMore => return Ok(None),
            Field::Complete { width, len } => (width, len),
        };
        if len > self.max {
            return Err(self.fail(
                Violation::LfLim1,
                format!("declared payload {len} above the maximum {}", self.max),
            ));
        }
        let len = len as usize;
        if self.buf.len() < width + len {
            let missing = width + len - self.buf.len();
            self.buf.reserve(missing.min(1 << 20));
            return Ok(None);
        }
        self.buf.advance(width);
        let payload = self.buf.split_to(len).freeze();
        self.base += (width + len) as u64;
        self.skipped = 0;
        Ok(Some(payload))
    }

    fn finish(&mut self) -> Result<(), ProtocolError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if !self.buf.is_empty() || self.skipped > 0 {
            return Err(self.fail(Violation::LfStr3, "stream ended inside a frame".into()));
        }
        Ok(())
    }
}

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
    /// Seed 000: the length-field batched echo awaits 128 concurrent requests.
    const SEED_BATCH: usize = 128;
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
        match endpoint {
            "" => Ok(EchoSession::new(*self, sink)),
            other => Err(ConfigError::Unsupported(format!(
                "length-field has no endpoint {other:?}"
            ))),
        }
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

/// The client side of a `length-field` connection: FIFO matching ([`FifoMatcher`]).
#[derive(Debug)]
pub struct LengthFieldClient<T> {
    m: FifoMatcher<T>,
    proto: LengthField,
}

impl LengthField {
    /// The reply to one frame ([`Echo::reply`]).
    #[inline]
    fn reply_to(&self, payload: &[u8], out: &mut BytesMut) {
        out.reserve(self.profile.header_len(payload.len()) + payload.len());
        self.profile.put_header(out, payload.len());
        out.put_slice(payload);
    }

    /// Writes one frame of `len` payload bytes (after the checks of [`Profile::check_encode`]).
    fn write(
        &self,
        out: &mut BytesMut,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), ProtocolError> {
        self.profile.check_encode(len, self.max_payload)?;
        out.reserve(self.profile.header_len(len) + len);
        self.profile.put_header(out, len);
        put_payload(out, len, fill);
        Ok(())
    }
}

impl<T> ClientMatcher<T> for LengthFieldClient<T> {
    type Frame = Bytes;

    fn send_request(
        &mut self,
        now: u64,
        tag: T,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        let p = self.proto;
        self.m.send_request(now, tag, || p.write(out, len, fill))
    }

    fn send_unanswered(
        &mut self,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        if self.m.is_failed() {
            return Err(SendError::ConnectionFailed);
        }
        self.proto.write(out, len, fill).map_err(SendError::Encode)
    }

    fn receive(&mut self, _frame: &Bytes) -> Received<T> {
        self.m.receive()
    }

    fn expire(&mut self, now: u64) -> Expired<T> {
        self.m.expire(now)
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

    fn decode_all(p: Profile, max: u64, chunks: &[&[u8]]) -> (Vec<Bytes>, Option<ProtocolError>) {
        LengthFieldDecoder::new(p, max).decode_stream(chunks.iter().copied())
    }

    #[test]
    fn worked_examples_every_profile() {
        for (offset, size, bytes) in [
            (0, 2, "03 00 61 62 63"),
            (0, -2, "00 03 61 62 63"),
            (0, 4, "03 00 00 00 61 62 63"),
            (0, -4, "00 00 00 03 61 62 63"),
            (0, 1, "03 61 62 63"),
            (0, 0, "03 61 62 63"),
            (2, 2, "00 00 03 00 61 62 63"),
        ] {
            let p = Profile::new(offset, size).unwrap();
            let wire = hex(bytes);
            assert_eq!(p.encode_to_vec(b"abc", 0).unwrap(), wire, "{offset},{size}");
            let (frames, err) = decode_all(p, 0, &[&wire]);
            assert_eq!(err, None);
            assert_eq!(frames, vec![Bytes::from_static(b"abc")]);
        }
        assert_eq!(Profile::default(), Profile::new(0, 2).unwrap());
    }

    #[test]
    fn varint_300_and_benchmark_frame() {
        let p = Profile::new(0, 0).unwrap();
        let payload = vec![1u8; 300];
        let wire = p.encode_to_vec(&payload, 0).unwrap();
        assert_eq!(&wire[..2], &[0xAC, 0x02]);
        assert_eq!(wire.len(), 302);
        let bm = Profile::default().encode_to_vec(&[0x55; 30], 0).unwrap();
        assert_eq!(&bm[..2], &[0x1E, 0x00]);
        assert_eq!(bm.len(), 32);
    }

    #[test]
    fn header_bytes_are_ignored() {
        let p = Profile::new(3, 2).unwrap();
        let (frames, err) = decode_all(p, 0, &[&hex("AA BB CC 02 00 68 69")]);
        assert_eq!(err, None);
        assert_eq!(frames, vec![Bytes::from_static(b"hi")]);
    }

    #[test]
    fn unsupported_sizes_are_lf_fmt_3() {
        for s in [-1, 3, 5, 8, -8, 100, i32::MIN as i64] {
            let e = Profile::new(0, s).unwrap_err();
            assert_eq!((e.requirement, e.offset), ("LF-FMT-3", 0));
        }
    }

    #[test]
    fn split_inside_length_field_and_varint() {
        let p = Profile::new(1, 0).unwrap();
        let payload = vec![9u8; 20000]; // 3-byte varint
        let wire = p.encode_to_vec(&payload, 0).unwrap();
        for a in 0..6 {
            for b in a..6 {
                let (frames, err) = decode_all(p, 0, &[&wire[..a], &wire[a..b], &wire[b..]]);
                assert_eq!(err, None);
                assert_eq!(frames.len(), 1);
                assert_eq!(frames[0].len(), 20000);
            }
        }
    }

    #[test]
    fn varint_rules() {
        let p = Profile::new(0, 0).unwrap();
        // Longer than 5 bytes.
        let (_, e) = decode_all(p, 0, &[&hex("80 80 80 80 80 00")]);
        assert_eq!(e.unwrap().requirement, "LF-LEN-2");
        // The sixth byte is not needed to decide.
        let mut d = LengthFieldDecoder::new(p, 0);
        d.extend(&hex("80 80 80 80 80"));
        assert_eq!(d.decode().unwrap_err().requirement, "LF-LEN-2");
        // 2^31 in 5 bytes.
        let (_, e) = decode_all(p, u64::MAX, &[&hex("80 80 80 80 08")]);
        assert_eq!(e.unwrap().requirement, "LF-LEN-2");
        // 2^31 - 1 is above the default max: LIM-1, not LEN-2.
        let (_, e) = decode_all(p, 0, &[&hex("FF FF FF FF 07")]);
        assert_eq!(e.unwrap().requirement, "LF-LIM-1");
        // Non-minimal accepted (LF-LEN-4 MAY).
        let (frames, e) = decode_all(p, 0, &[&hex("80 00 83 80 00 61 62 63")]);
        assert_eq!(e, None);
        assert_eq!(frames, vec![Bytes::new(), Bytes::from_static(b"abc")]);
        // Stream ends inside a varint.
        let (frames, e) = decode_all(p, 0, &[&hex("01 7A 80 80")]);
        assert_eq!(frames.len(), 1);
        let e = e.unwrap();
        assert_eq!((e.requirement, e.offset), ("LF-STR-3", 2));
    }

    #[test]
    fn bit_31_is_lf_len_3() {
        for (size, bytes) in [(4, "00 00 00 80"), (-4, "80 00 00 00")] {
            let p = Profile::new(0, size).unwrap();
            let (frames, e) = decode_all(p, u64::MAX, &[&hex("00 00 00 00"), &hex(bytes)]);
            // size 4/-4: "00 00 00 00" is an empty frame.
            assert_eq!(frames.len(), 1);
            let e = e.unwrap();
            assert_eq!((e.requirement, e.offset), ("LF-LEN-3", 4));
        }
    }

    #[test]
    fn oversize_rejected_from_length_field() {
        let p = Profile::new(2, 4).unwrap();
        let mut d = LengthFieldDecoder::new(p, 0);
        d.extend(&hex("00 00 01 00 A0 00"));
        let e = d.decode().unwrap_err();
        assert_eq!((e.requirement, e.offset), ("LF-LIM-1", 0));
        assert!(d.buffer_mut().capacity() < 1 << 16);
        let (_, e) = decode_all(Profile::default(), 4, &[&hex("05 00 00")]);
        assert_eq!(e.unwrap().requirement, "LF-LIM-1");
        let (frames, e) = decode_all(Profile::default(), 4, &[&hex("04 00 01 02 03 04")]);
        assert_eq!((frames.len(), e), (1, None));
    }

    #[test]
    fn truncation_is_lf_str_3() {
        let p = Profile::new(2, 2).unwrap();
        let good = hex("00 00 01 00 41");
        for partial in [
            hex("00"),
            hex("00 00"),
            hex("00 00 05"),
            hex("00 00 05 00 61"),
        ] {
            let mut wire = good.clone();
            wire.extend(&partial);
            let (frames, e) = decode_all(p, 0, &[&wire]);
            assert_eq!(frames.len(), 1);
            let e = e.unwrap();
            assert_eq!((e.requirement, e.offset), ("LF-STR-3", 5));
        }
    }

    #[test]
    fn no_frame_after_error() {
        let p = Profile::new(0, 4).unwrap();
        let mut d = LengthFieldDecoder::new(p, 0);
        let (frames, e) = d.feed(&hex("01 00 00 00 41 FF FF FF FF 00 00 00 00"));
        assert_eq!(frames.len(), 1);
        let e = e.unwrap();
        assert_eq!((e.requirement, e.offset), ("LF-LEN-3", 5));
        let (frames, e2) = d.feed(&hex("00 00 00 00"));
        assert!(frames.is_empty());
        assert_eq!(e2, Some(e));
    }

    #[test]
    fn encoder_refusals() {
        let cases = [
            (1, 256usize, 0u64, Some("LF-LEN-1")),
            (1, 255, 0, None),
            (2, 65536, 0, Some("LF-LEN-1")),
            (-2, 65536, u64::MAX, Some("LF-LEN-1")),
            (-2, 65535, 0, None),
            (2, 100, 99, Some("LF-LIM-2")),
            (1, 300, 10, Some("LF-LEN-1")),
            (4, 1 << 31, u64::MAX, Some("LF-LEN-1")),
            (0, 1 << 31, u64::MAX, Some("LF-LEN-1")),
            (4, (1 << 31) - 1, u64::MAX, None),
            (0, 10 * 1024 * 1024 + 1, 0, Some("LF-LIM-2")),
        ];
        for (size, len, max, want) in cases {
            let p = Profile::new(0, size).unwrap();
            let got = p.check_encode(len, max).err().map(|e| e.requirement);
            assert_eq!(got, want, "size {size} len {len} max {max}");
        }
        let mut b = BytesMut::new();
        assert!(Profile::new(0, 1)
            .unwrap()
            .encode(&mut b, &[0; 256], 0)
            .is_err());
        assert!(b.is_empty());
    }

    #[test]
    fn varint_encoding_is_minimal() {
        let p = Profile::new(0, 0).unwrap();
        for (n, want) in [(0usize, 1usize), (127, 1), (128, 2), (16383, 2), (16384, 3)] {
            let wire = p.encode_to_vec(&vec![0; n], 0).unwrap();
            assert_eq!(wire.len() - n, want, "len {n}");
            assert_eq!(varint_len(n as u64), want);
        }
        assert_eq!(varint_len(MAX_SIGNED), 5);
    }

    #[test]
    fn walker_counts_little_endian_profiles_only() {
        let data = hex("02 00 09 09 00 00 01 00 05");
        for cut in 0..data.len() {
            let mut w = LengthField {
                profile: Profile::default(),
                max_payload: 0,
            }
            .walker(true)
            .unwrap();
            let mut d = data.clone();
            let (a, b) = d.split_at_mut(cut);
            w.walk(a);
            w.walk(b);
            assert_eq!((w.frames(), w.payload_bytes()), (3, 3), "cut {cut}");
            assert_eq!(d, data, "an echo rewrites nothing");
        }
        for (offset, size, has) in [
            (0, 1, true),
            (0, 4, true),
            (1, 2, false),
            (0, -2, false),
            (0, 0, false),
        ] {
            let p = LengthField {
                profile: Profile::new(offset, size).unwrap(),
                max_payload: 0,
            };
            assert_eq!(p.walker(false).is_some(), has, "{offset},{size}");
        }
    }
}
