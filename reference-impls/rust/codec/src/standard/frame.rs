//! The frame, the flag bits and the header rules (§2, §3), and the encoder.

#[allow(unused_imports)]
use super::*;

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
