//! The `standard` protocol (`spec/standard.md`): a 4-byte header (flag, sequence, u16 LE
//! length), or 8 bytes when the length field is `FF FF` and a u32 LE extended length follows.
//!
//! * `frame`: the flag bits, [`StdFrame`], the header rules and [`encode`].
//! * the decoder, in this file: [`StandardDecoder`] (conformance/tests/test_fuzz.py plants the
//!   fuzzer's test bugs in this file's decoder).
//! * `protocol`: [`Standard`], the registry's entry point, with its echo reply and
//!   [`StandardWalker`].
//! * `client`: [`StandardClient`], sequence-number matching.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde_json::{Map, Value};

use crate::config::{CodecConfig, ConfigError};
use crate::matcher::{Received, SequenceMatcher};
use crate::protocol::{
    ClientMatcher, Echo, EchoSession, FrameFields, HeaderStep, HeaderWalker, Protocol, WalkState,
};
use crate::{effective_max, FrameDecoder, ProtocolError, Violation};

mod client;
mod frame;
mod protocol;

pub use client::*;
pub use frame::*;
pub use protocol::*;

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

#[cfg(test)]
mod tests;
