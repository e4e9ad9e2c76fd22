//! Streaming codecs and request/reply matching for the frameproof protocols.
//!
//! * [`standard`]: the 4-byte-header request/reply framing (`spec/standard.md`, `STD-*`).
//! * [`length_field`]: length-prefixed framing in every profile (`spec/length-field.md`, `LF-*`).
//! * [`matcher`]: client-side request/reply matching (sequence table for `standard`, FIFO for
//!   `length-field`), driven by a caller-supplied clock so that it works with a virtual clock
//!   (the testee's `match` request) as well as a real one (the load client).
//!
//! Decoders are streaming and zero-copy: bytes are appended to an internal [`bytes::BytesMut`]
//! in any split (or read straight into it with [`standard::StandardDecoder::buffer_mut`]), and
//! each decoded payload is a [`bytes::Bytes`] obtained with `split_to(..).freeze()`, sharing the
//! receive buffer. A declared length is checked against the limit as soon as the header is
//! complete, so a decoder never reserves or waits for a payload it will reject.
//!
//! Every error is a [`ProtocolError`] naming the requirement it enforces and the stream offset
//! of the offending frame's start.

pub mod length_field;
pub mod matcher;
pub mod standard;

use std::fmt;

/// Default maximum payload size for both protocols: 10 MiB (`STD-LIM-1`, `LF-LIM-1`).
pub const DEFAULT_MAX_PAYLOAD: u64 = 10 * 1024 * 1024;

/// Default request timeout (`STD-MATCH-3`, `LF-MATCH-3`), in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 3000;

/// A classified protocol error: which requirement the input (or the request) breaks, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    /// Requirement ID from the spec, e.g. `"STD-LIM-1"`.
    pub requirement: &'static str,
    /// Byte offset in the stream where the offending frame starts (0 for encoder and
    /// configuration errors).
    pub offset: u64,
    /// Human-readable detail.
    pub message: String,
}

impl ProtocolError {
    pub fn new(requirement: &'static str, offset: u64, message: impl Into<String>) -> Self {
        ProtocolError {
            requirement,
            offset,
            message: message.into(),
        }
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at offset {}: {}",
            self.requirement, self.offset, self.message
        )
    }
}

impl std::error::Error for ProtocolError {}

/// Resolves the "0 means the spec default" convention of the limits.
pub fn effective_max(max_payload: u64) -> u64 {
    if max_payload == 0 {
        DEFAULT_MAX_PAYLOAD
    } else {
        max_payload
    }
}

/// A streaming decoder of one protocol.
pub trait FrameDecoder {
    type Frame;

    /// Appends received bytes to the decoder's buffer.
    fn extend(&mut self, data: &[u8]);

    /// The receive buffer, to read socket data straight into it (`read_buf`) instead of
    /// [`FrameDecoder::extend`]. Bytes appended after an error are never decoded.
    fn buffer_mut(&mut self) -> &mut bytes::BytesMut;

    /// Returns the next complete frame, `Ok(None)` if more bytes are needed, or the error that
    /// rejected the stream. After an error every later call returns the same error
    /// (`STD-STR-4`, `LF-STR-4`).
    fn decode(&mut self) -> Result<Option<Self::Frame>, ProtocolError>;

    /// Signals the end of the stream: an error if the stream was rejected or ends inside a frame
    /// (`STD-STR-3`, `LF-STR-3`). Call after `decode` has returned `Ok(None)`.
    fn finish(&mut self) -> Result<(), ProtocolError>;

    /// Feeds one chunk and collects every frame it completes. On error, returns the frames
    /// completed before the offending frame together with the error.
    fn feed(&mut self, data: &[u8]) -> (Vec<Self::Frame>, Option<ProtocolError>) {
        self.extend(data);
        let mut out = Vec::new();
        loop {
            match self.decode() {
                Ok(Some(f)) => out.push(f),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }
}
