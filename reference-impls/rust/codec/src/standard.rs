//! The `standard` protocol (`spec/standard.md`): a 4-byte header (flag, sequence, u16 LE
//! length), or 8 bytes when the length field is `FF FF` and a u32 LE extended length follows.

use bytes::{Buf, BufMut, Bytes, BytesMut};

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
    dst.put_u8(flag);
    dst.put_u8(sequence);
    if len < EXTENDED as usize {
        dst.put_u16_le(len as u16);
    } else {
        dst.put_u16_le(EXTENDED);
        dst.put_u32_le(len as u32);
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
        let b = &self.buf[..];
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
                return Err(self.fail(
                    Violation::StdLen3,
                    format!("non-canonical extended length {ext} (below 65535)"),
                ));
            }
            if ext > MAX_EXTENDED {
                return Err(self.fail(
                    Violation::StdLen4,
                    format!("extended length {ext} has bit 31 set"),
                ));
            }
            (8, ext)
        } else {
            (4, short as u64)
        };
        if len > self.max {
            return Err(self.fail(
                Violation::StdLim1,
                format!("declared payload {len} above the maximum {}", self.max),
            ));
        }
        Ok(Header::Complete {
            header,
            payload: len as usize,
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|h| u8::from_str_radix(h, 16).unwrap())
            .collect()
    }

    fn decode_all(chunks: &[&[u8]], max: u64) -> (Vec<StdFrame>, Option<ProtocolError>) {
        let mut d = StandardDecoder::new(max);
        let mut frames = Vec::new();
        for c in chunks {
            let (f, e) = d.feed(c);
            frames.extend(f);
            if e.is_some() {
                return (frames, e);
            }
        }
        (frames, d.finish().err())
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
}
