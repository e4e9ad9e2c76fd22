//! The profile (offset and length field, §2, §3), its limits, header rules and encoder.

#[allow(unused_imports)]
use super::*;

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
}
