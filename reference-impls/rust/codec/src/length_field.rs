//! The `length-field` protocol (`spec/length-field.md`): `offset` ignored header bytes, a length
//! field (u8, u16/u32 in either byte order, or an unsigned LEB128 varint), then the payload.
//!
//! * `profile`: [`Profile`] (the offset and the [`LengthSize`] of the field), its header rules
//!   and encoder.
//! * the decoder, in this file: [`LengthFieldDecoder`] (conformance/tests/test_fuzz.py plants the
//!   fuzzer's test bugs in this file's decoder).
//! * `protocol`: [`LengthField`], the registry's entry point, with its echo reply and
//!   [`LengthFieldWalker`].
//! * `client`: [`LengthFieldClient`], FIFO matching.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde_json::Map;

use crate::config::{CodecConfig, ConfigError};
use crate::matcher::{FifoMatcher, Received};
use crate::protocol::{
    ClientMatcher, Echo, EchoSession, FrameFields, HeaderStep, HeaderWalker, Protocol, WalkState,
};
use crate::{effective_max, FrameDecoder, ProtocolError, Violation};

mod client;
mod profile;
mod protocol;

pub use client::*;
pub use profile::*;
pub use protocol::*;

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

#[cfg(test)]
mod tests;
