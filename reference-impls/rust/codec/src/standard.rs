//! The `standard` protocol (`spec/standard.md`): a 4-byte header (flag, sequence, u16 LE
//! length), or 8 bytes when the length field is `FF FF` and a u32 LE extended length follows.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde_json::{Map, Value};

use crate::config::{CodecConfig, ConfigError};
use crate::matcher::{Expired, Received, SendError, SequenceMatcher};
use crate::protocol::{
    put_payload, ClientMatcher, Echo, EchoSession, FrameFields, HeaderStep, HeaderWalker, Protocol,
    WalkState,
};
use crate::{effective_max, FrameDecoder, ProtocolError, Violation};

/// Reply bit of the flag byte (`STD-HDR-2`).
pub const FLAG_REPLY: u8 = 0x80;
/// Error bit on a reply, one-way bit on a request (`STD-HDR-3`).
pub const FLAG_ERROR_OR_ONE_WAY: u8 = 0x40;
/// Data-kind bits (`STD-HDR-4`).
pub const KIND_MASK: u8 = 0x3F;
/// Length-field value announcing the extended form (`STD-LEN-2`).
pub const EXTENDED: u16 = 0xFFFF;
/// Largest length an extended header may carry (`STD-LEN-4`: bit 31 clear).
pub const MAX_EXTENDED: u64 = 0x7FFF_FFFF;

/// One `standard` frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdFrame {
    /// The whole flag byte: reply bit, error/one-way bit, kind.
    pub flag: u8,
    /// The sequence byte.
    pub sequence: u8,
    pub payload: Bytes,
}

impl StdFrame {
    pub fn is_reply(&self) -> bool {
        self.flag & FLAG_REPLY != 0
    }
    /// Error (on a reply) or one-way (on a request).
    pub fn error_or_one_way(&self) -> bool {
        self.flag & FLAG_ERROR_OR_ONE_WAY != 0
    }
    pub fn kind(&self) -> u8 {
        self.flag & KIND_MASK
    }
}

/// Header length for a payload of `len` bytes (`STD-LEN-1`, `STD-LEN-2`).
pub fn header_len(len: usize) -> usize {
    if len < EXTENDED as usize {
        4
    } else {
        8
    }
}

/// Checks that a payload of `len` bytes may be encoded under `max_payload` (0 = default).
/// Precedence per §8a: `STD-LEN-4` for 2³¹ bytes or more, else `STD-LIM-2`.
pub fn check_encode(len: usize, max_payload: u64) -> Result<(), ProtocolError> {
    let len = len as u64;
    if len > MAX_EXTENDED {
        return Err(ProtocolError::new(
            Violation::StdLen4,
            0,
            format!("payload of {len} bytes needs bit 31 of the extended length"),
        ));
    }
    let max = effective_max(max_payload);
    if len > max {
        return Err(ProtocolError::new(
            Violation::StdLim2,
            0,
            format!("payload of {len} bytes above the maximum {max}"),
        ));
    }
    Ok(())
}

/// Writes only the header of a frame whose payload has `len` bytes (no checks).
pub fn put_header(dst: &mut BytesMut, flag: u8, sequence: u8, len: usize) {
    // One append per header, not one per field.
    if len < EXTENDED as usize {
        let [l0, l1] = (len as u16).to_le_bytes();
        dst.put_slice(&[flag, sequence, l0, l1]);
    } else {
        let [e0, e1, e2, e3] = (len as u32).to_le_bytes();
        dst.put_slice(&[flag, sequence, 0xFF, 0xFF, e0, e1, e2, e3]);
    }
}

/// Appends one encoded frame to `dst`, or refuses it (`STD-LEN-4`, `STD-LIM-2`) without
/// writing anything. The flag and sequence bytes are written verbatim.
pub fn encode(
    dst: &mut BytesMut,
    flag: u8,
    sequence: u8,
    payload: &[u8],
    max_payload: u64,
) -> Result<(), ProtocolError> {
    check_encode(payload.len(), max_payload)?;
    dst.reserve(header_len(payload.len()) + payload.len());
    put_header(dst, flag, sequence, payload.len());
    dst.put_slice(payload);
    Ok(())
}

/// Encodes one frame into a new buffer.
pub fn encode_to_vec(
    flag: u8,
    sequence: u8,
    payload: &[u8],
    max_payload: u64,
) -> Result<Vec<u8>, ProtocolError> {
    let mut b = BytesMut::new();
    encode(&mut b, flag, sequence, payload, max_payload)?;
    Ok(b.to_vec())
}

/// Streaming decoder for the `standard` protocol.
#[derive(Debug)]
pub struct StandardDecoder {
    buf: BytesMut,
    /// Stream offset of `buf[0]`.
    base: u64,
    max: u64,
    error: Option<ProtocolError>,
}

/// Result of inspecting the header at the start of the buffer.
enum Header {
    NeedMore,
    Complete { header: usize, payload: usize },
}

impl StandardDecoder {
    /// A decoder with the given maximum payload (0 = the 10 MiB default).
    pub fn new(max_payload: u64) -> Self {
        StandardDecoder {
            buf: BytesMut::new(),
            base: 0,
            max: effective_max(max_payload),
            error: None,
        }
    }

    /// Bytes received but not yet delivered as a frame.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Stream offset of the first byte not yet delivered.
    pub fn position(&self) -> u64 {
        self.base
    }

    pub fn max_payload(&self) -> u64 {
        self.max
    }

    fn fail(&mut self, violation: Violation, message: String) -> ProtocolError {
        let e = ProtocolError::new(violation, self.base, message);
        self.error = Some(e.clone());
        e
    }

    /// Classifies the header at the start of the buffer (§8a precedence: LEN-3/LEN-4, then
    /// LIM-1; truncation is only decided at end of stream).
    fn header(&mut self) -> Result<Header, ProtocolError> {
        match classify(&self.buf, self.max) {
            Ok(h) => Ok(h),
            Err((v, message)) => Err(self.fail(v, message)),
        }
    }

    /// Calls `each(flag, sequence, payload)` for the complete, valid frames at the front of the
    /// buffer, borrowed where they lie, then drops them from the buffer at once; returns
    /// (frames, payload bytes). Stops before an unfinished or invalid frame (left for
    /// [`FrameDecoder::decode`], which classifies it) and after a failed stream.
    pub fn drain_complete(&mut self, mut each: impl FnMut(u8, u8, &[u8])) -> (u64, u64) {
        if self.error.is_some() {
            return (0, 0);
        }
        let b = &self.buf[..];
        let (mut pos, mut frames, mut bytes) = (0usize, 0u64, 0u64);
        while let Ok(Header::Complete { header, payload }) = classify(&b[pos..], self.max) {
            let end = pos + header + payload;
            if end > b.len() {
                break;
            }
            each(b[pos], b[pos + 1], &b[pos + header..end]);
            frames += 1;
            bytes += payload as u64;
            pos = end;
        }
        self.buf.advance(pos);
        self.base += pos as u64;
        (frames, bytes)
    }
}

/// The header at the start of `b` (see [`StandardDecoder::header`]); an error is the
/// violation and its message.
fn classify(b: &[u8], max: u64) -> Result<Header, (Violation, String)> {
    if b.len() < 4 {
        return Ok(Header::NeedMore);
    }
    let short = u16::from_le_bytes([b[2], b[3]]);
    let (header, len) = if short == EXTENDED {
        if b.len() < 8 {
            return Ok(Header::NeedMore);
        }
        let ext = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as u64;
        if ext < EXTENDED as u64 {
            return Err((
                Violation::StdLen3,
                format!("non-canonical extended length {ext} (below 65535)"),
            ));
        }
        if ext > MAX_EXTENDED {
            return Err((
                Violation::StdLen4,
                format!("extended length {ext} has bit 31 set"),
            ));
        }
        (8, ext)
    } else {
        (4, short as u64)
    };
    if len > max {
        return Err((
            Violation::StdLim1,
            format!("declared payload {len} above the maximum {max}"),
        ));
    }
    Ok(Header::Complete {
        header,
        payload: len as usize,
    })
}

impl FrameDecoder for StandardDecoder {
    type Frame = StdFrame;

    fn extend(&mut self, data: &[u8]) {
        if self.error.is_none() {
            self.buf.extend_from_slice(data);
        }
    }

    fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    fn decode(&mut self) -> Result<Option<StdFrame>, ProtocolError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let (header, payload) = match self.header()? {
            Header::NeedMore => return Ok(None),
            Header::Complete { header, payload } => (header, payload),
        };
        if self.buf.len() < header + payload {
            // Make room for the rest of the frame only (bounded by max payload, STD-LIM-3).
            let missing = header + payload - self.buf.len();
            self.buf.reserve(missing.min(1 << 20));
            return Ok(None);
        }
        let flag = self.buf[0];
        let sequence = self.buf[1];
        self.buf.advance(header);
        let payload = self.buf.split_to(payload).freeze();
        self.base += (header + payload.len()) as u64;
        Ok(Some(StdFrame {
            flag,
            sequence,
            payload,
        }))
    }

    fn finish(&mut self) -> Result<(), ProtocolError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if !self.buf.is_empty() {
            let n = self.buf.len();
            return Err(self.fail(
                Violation::StdStr3,
                format!("stream ended inside a frame ({n} bytes of it received)"),
            ));
        }
        Ok(())
    }
}

/// The `standard` protocol with its limits: the registry's entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standard {
    /// Maximum payload (the configured one, or the 10 MiB default).
    pub max_payload: u64,
}

/// Flag of a request (kind 1) and of a one-way message (kind 1).
const REQUEST: u8 = 0x01;
const ONE_WAY: u8 = FLAG_ERROR_OR_ONE_WAY | 0x01;

impl Protocol for Standard {
    const NAME: &'static str = "standard";
    /// Seed 000: 255 concurrent `SendMessageAsync`, `WhenAll`, next round.
    const SEED_BATCH: usize = 255;
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
        match endpoint {
            "" => Ok(EchoSession::new(*self, sink)),
            other => Err(ConfigError::Unsupported(format!(
                "standard has no endpoint {other:?}"
            ))),
        }
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

/// The client side of a `standard` connection: sequence-number matching ([`SequenceMatcher`]).
#[derive(Debug)]
pub struct StandardClient<T> {
    m: SequenceMatcher<T>,
    proto: Standard,
}

impl Standard {
    /// Writes one frame of `len` payload bytes (after the checks of [`check_encode`]).
    fn write(
        &self,
        out: &mut BytesMut,
        flag: u8,
        seq: u8,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), ProtocolError> {
        check_encode(len, self.max_payload)?;
        out.reserve(header_len(len) + len);
        put_header(out, flag, seq, len);
        put_payload(out, len, fill);
        Ok(())
    }
}

impl<T> StandardClient<T> {
    /// Sends a frame with `flag` under the next sequence number, never pending (STD-MATCH-4).
    fn send_unpending(
        &mut self,
        flag: u8,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        let p = self.proto;
        self.m
            .send_one_way(|seq| p.write(out, flag, seq, len, fill))
            .map(|_| ())
    }
}

impl<T> ClientMatcher<T> for StandardClient<T> {
    type Frame = StdFrame;

    fn send_request(
        &mut self,
        now: u64,
        tag: T,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        let p = self.proto;
        self.m
            .send_request(now, tag, |seq| p.write(out, REQUEST, seq, len, fill))
            .map(|_| ())
    }

    fn send_one_way(
        &mut self,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        self.send_unpending(ONE_WAY, len, out, fill)
    }

    /// A request numbered like a one-way message (STD-SEQ-1 order, no pending check).
    fn send_unanswered(
        &mut self,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        self.send_unpending(REQUEST, len, out, fill)
    }

    fn receive(&mut self, f: &StdFrame) -> Received<T> {
        self.m.receive(f.flag, f.sequence)
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

    fn decode_all(chunks: &[&[u8]], max: u64) -> (Vec<StdFrame>, Option<ProtocolError>) {
        StandardDecoder::new(max).decode_stream(chunks.iter().copied())
    }

    #[test]
    fn worked_examples_encode_and_decode() {
        let cases: &[(u8, u8, &[u8], &str)] = &[
            (0x01, 1, b"Open", "01 01 04 00 4F 70 65 6E"),
            (
                0x81,
                1,
                "执行成功".as_bytes(),
                "81 01 0C 00 E6 89 A7 E8 A1 8C E6 88 90 E5 8A 9F",
            ),
            (0x81, 1, b"OK", "81 01 02 00 4F 4B"),
            (0x41, 1, b"abc", "41 01 03 00 61 62 63"),
            (0xC1, 1, b"abc", "C1 01 03 00 61 62 63"),
            (0x01, 1, b"", "01 01 00 00"),
        ];
        for (flag, seq, payload, bytes) in cases {
            let wire = hex(bytes);
            assert_eq!(encode_to_vec(*flag, *seq, payload, 0).unwrap(), wire);
            let (frames, err) = decode_all(&[&wire], 0);
            assert_eq!(err, None);
            assert_eq!(frames.len(), 1);
            assert_eq!(frames[0].flag, *flag);
            assert_eq!(frames[0].sequence, *seq);
            assert_eq!(&frames[0].payload[..], *payload);
        }
    }

    #[test]
    fn flag_bits_are_reported() {
        let (frames, _) = decode_all(&[&hex("C1 01 03 00 61 62 63")], 0);
        assert!(frames[0].is_reply());
        assert!(frames[0].error_or_one_way());
        assert_eq!(frames[0].kind(), 1);
        let (frames, _) = decode_all(&[&hex("3F 07 00 00")], 0);
        assert!(!frames[0].is_reply());
        assert!(!frames[0].error_or_one_way());
        assert_eq!(frames[0].kind(), 63);
    }

    #[test]
    fn length_boundaries() {
        for (n, head) in [
            (65534usize, "01 01 FE FF"),
            (65535, "01 01 FF FF FF FF 00 00"),
            (70000, "01 01 FF FF 70 11 01 00"),
        ] {
            let payload: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            let wire = encode_to_vec(0x01, 1, &payload, 0).unwrap();
            let h = hex(head);
            assert_eq!(&wire[..h.len()], &h[..], "header for {n}");
            assert_eq!(wire.len(), h.len() + n);
            let (frames, err) = decode_all(&[&wire], 0);
            assert_eq!(err, None);
            assert_eq!(&frames[0].payload[..], &payload[..]);
        }
    }

    #[test]
    fn sticky_packet() {
        let mut wire = encode_to_vec(0x01, 0x10, b"sticky-first-message", 0).unwrap();
        wire.extend(encode_to_vec(0x01, 0x11, b"sticky-second-message", 0).unwrap());
        assert_eq!(wire.len(), 49);
        assert_eq!(&wire[..4], &hex("01 10 14 00")[..]);
        let (frames, err) = decode_all(&[&wire], 0);
        assert_eq!(err, None);
        assert_eq!(frames.len(), 2);
        assert_eq!(&frames[0].payload[..], b"sticky-first-message");
        assert_eq!(frames[1].sequence, 0x11);
        assert_eq!(&frames[1].payload[..], b"sticky-second-message");
    }

    #[test]
    fn split_inside_extended_header() {
        let payload = vec![7u8; 65535];
        let wire = encode_to_vec(0x02, 9, &payload, 0).unwrap();
        for cut in 1..9 {
            let (frames, err) = decode_all(&[&wire[..cut], &wire[cut..]], 0);
            assert_eq!(err, None, "cut {cut}");
            assert_eq!(frames.len(), 1);
            assert_eq!(frames[0].payload.len(), 65535);
        }
    }

    #[test]
    fn non_canonical_extended_is_std_len_3() {
        // A valid frame first, so the offset of the offending frame is 6.
        let mut wire = hex("01 01 02 00 41 42");
        wire.extend(hex("01 02 FF FF FE FF 00 00"));
        let (frames, err) = decode_all(&[&wire], 0);
        assert_eq!(frames.len(), 1);
        let err = err.unwrap();
        assert_eq!((err.requirement, err.offset), ("STD-LEN-3", 6));
        // Zero extended length too.
        let (_, err) = decode_all(&[&hex("01 01 FF FF 00 00 00 00")], 0);
        assert_eq!(err.unwrap().requirement, "STD-LEN-3");
    }

    #[test]
    fn bit_31_is_std_len_4_even_above_max() {
        let (frames, err) = decode_all(&[&hex("01 01 FF FF 00 00 00 80")], 0);
        assert!(frames.is_empty());
        let err = err.unwrap();
        assert_eq!((err.requirement, err.offset), ("STD-LEN-4", 0));
    }

    #[test]
    fn oversize_rejected_at_header_time() {
        // 10 MiB + 1 declared; only the header is sent and no end of stream: the error must
        // come from the header alone.
        let mut d = StandardDecoder::new(0);
        d.extend(&hex("01 05 FF FF 01 00 A0 00"));
        let e = d.decode().unwrap_err();
        assert_eq!((e.requirement, e.offset), ("STD-LIM-1", 0));
        assert!(
            d.buffer_mut().capacity() < 1 << 16,
            "must not reserve the promised size"
        );
        // Exactly the maximum is fine.
        let mut d = StandardDecoder::new(0);
        d.extend(&hex("01 05 FF FF 00 00 A0 00"));
        assert_eq!(d.decode(), Ok(None));
        // A configured small maximum applies to the short form too.
        let (_, err) = decode_all(&[&hex("01 01 0B 00")], 10);
        assert_eq!(err.unwrap().requirement, "STD-LIM-1");
        let (frames, err) = decode_all(&[&hex("01 01 0A 00"), &[0u8; 10]], 10);
        assert_eq!((frames.len(), err), (1, None));
    }

    #[test]
    fn precedence_len_before_lim() {
        // Non-canonical and (with max 10) also above the maximum: LEN-3 wins.
        let (_, err) = decode_all(&[&hex("01 01 FF FF 00 01 00 00")], 10);
        assert_eq!(err.unwrap().requirement, "STD-LEN-3");
    }

    #[test]
    fn truncation_is_std_str_3_at_frame_start() {
        let good = hex("01 01 02 00 41 42");
        for partial in [
            hex("01"),
            hex("01 01 05"),
            hex("01 01 05 00 61"),
            hex("01 01 FF FF"),
            hex("01 01 FF FF FF"),
        ] {
            let mut wire = good.clone();
            wire.extend(&partial);
            let (frames, err) = decode_all(&[&wire], 0);
            assert_eq!(frames.len(), 1);
            let err = err.unwrap();
            assert_eq!((err.requirement, err.offset), ("STD-STR-3", 6));
        }
        // Oversize declared and truncated: LIM-1 has precedence.
        let (_, err) = decode_all(&[&hex("01 01 0B 00 00")], 10);
        assert_eq!(err.unwrap().requirement, "STD-LIM-1");
    }

    #[test]
    fn no_frame_after_error() {
        let mut wire = hex("01 01 FF FF 00 00 00 00");
        wire.extend(hex("01 01 00 00"));
        let mut d = StandardDecoder::new(0);
        let (frames, err) = d.feed(&wire);
        assert!(frames.is_empty());
        assert!(err.is_some());
        let (frames, err2) = d.feed(&hex("01 01 00 00"));
        assert!(frames.is_empty());
        assert_eq!(err2, err);
        assert_eq!(d.finish().unwrap_err(), err.unwrap());
    }

    #[test]
    fn encoder_refusals() {
        let e = check_encode(11, 10).unwrap_err();
        assert_eq!((e.requirement, e.offset), ("STD-LIM-2", 0));
        let e = check_encode(1 << 31, u64::MAX).unwrap_err();
        assert_eq!(e.requirement, "STD-LEN-4");
        let e = check_encode(1 << 31, 0).unwrap_err();
        assert_eq!(e.requirement, "STD-LEN-4");
        assert!(check_encode((1 << 31) - 1, u64::MAX).is_ok());
        let e = check_encode(DEFAULT_MAX as usize + 1, 0).unwrap_err();
        assert_eq!(e.requirement, "STD-LIM-2");
        let mut b = BytesMut::new();
        assert!(encode(&mut b, 1, 1, &[0; 11], 10).is_err());
        assert!(b.is_empty(), "nothing written on refusal");
    }

    use crate::DEFAULT_MAX_PAYLOAD as DEFAULT_MAX;

    #[test]
    fn walker_flips_and_counts_across_splits() {
        let lens = [0usize, 5, 65535, 70000, 3];
        let wire = |flag: u8| {
            let mut b = BytesMut::new();
            for (i, len) in lens.iter().enumerate() {
                encode(&mut b, flag, i as u8 + 1, &vec![7u8; *len], 1 << 24).unwrap();
            }
            b.to_vec()
        };
        let (requests, replies) = (wire(0x01), wire(0x81));
        let p = Standard {
            max_payload: 1 << 24,
        };
        for split in [1usize, 2, 3, 5, 7, 4096] {
            let mut w = p.walker(true).unwrap();
            let mut data = requests.clone();
            for c in data.chunks_mut(split) {
                w.walk(c);
            }
            assert_eq!(w.frames(), 5);
            assert_eq!(w.payload_bytes(), 65535 + 70000 + 8);
            assert_eq!(data, replies, "split {split}");
        }
        let mut w = p.walker(false).unwrap();
        let mut data = requests.clone();
        w.walk(&mut data);
        assert_eq!((w.frames(), data), (5, requests));
    }

    #[test]
    fn echo_session_answers_requests_only() {
        use crate::protocol::ServerSession;
        let p = Standard {
            max_payload: DEFAULT_MAX,
        };
        let mut s = p.session("", false).unwrap();
        let mut out = BytesMut::new();
        // request kind 5, one-way, reply, error reply: only the first is answered.
        s.extend(&hex("05 09 01 00 41 41 02 00 00 81 03 00 00 C1 04 00 00"));
        let served = s.process(&mut out);
        assert_eq!((served.frames, served.bytes, served.closed), (4, 1, false));
        assert_eq!(&out[..], &hex("85 09 01 00 41")[..]);
        let mut sink = p.session("", true).unwrap();
        let mut out = BytesMut::new();
        sink.extend(&hex("01 01 00 00"));
        assert_eq!(sink.finish(&mut out).frames, 1);
        assert!(out.is_empty());
        assert!(p.session("stream", false).is_err());
    }
}
