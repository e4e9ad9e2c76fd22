//! Streaming codecs, request/reply matching and server sessions for the frameproof protocols.
//!
//! * [`protocol`]: the abstraction every protocol implements ([`protocol::Protocol`]: decoder,
//!   encoder, client matcher, server session) and the programs are generic over.
//! * [`registry`]: protocol name -> module, the only list of the protocols.
//! * [`config`]: the codec configuration (`--codec` JSON, the vectors' `"codec"`).
//! * One module per protocol: [`standard`], the 4-byte-header request/reply framing
//!   (`spec/standard.md`, `STD-*`); [`length_field`], length-prefixed framing in every profile
//!   (`spec/length-field.md`, `LF-*`); [`rpc`], galay-rpc's 16-byte big-endian header with
//!   typed bodies, unary calls and streams (`spec/rpc.md`, `RPC-*`); [`websocket`], RFC 6455
//!   frames, messages and the opening handshake (`spec/websocket.md`, `WS-*`).
//! * [`matcher`]: the bookkeeping of client-side matching (sequence table for `standard`, FIFO
//!   for `length-field`), driven by a caller-supplied clock so that it works with a virtual
//!   clock (the testee's `match` request) as well as a real one (the load client).
//!
//! Decoders are streaming and zero-copy: bytes are appended to an internal [`bytes::BytesMut`]
//! in any split (or read straight into it with [`standard::StandardDecoder::buffer_mut`]), and
//! each decoded payload is a [`bytes::Bytes`] obtained with `split_to(..).freeze()`, sharing the
//! receive buffer. A declared length is checked against the limit as soon as the header is
//! complete, so a decoder never reserves or waits for a payload it will reject.
//!
//! Every error is a [`ProtocolError`] naming the requirement it enforces and the stream offset
//! of the offending frame's start.

pub mod config;
pub mod length_field;
pub mod matcher;
pub mod protocol;
pub mod registry;
pub mod rpc;
pub mod standard;
pub mod websocket;

use std::fmt;

/// Default maximum payload size for both protocols: 10 MiB (`STD-LIM-1`, `LF-LIM-1`).
pub const DEFAULT_MAX_PAYLOAD: u64 = 10 * 1024 * 1024;

/// Default request timeout (`STD-MATCH-3`, `LF-MATCH-3`), in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 3000;

/// The requirement a rejected input or a refused frame breaks, one variant per requirement ID
/// that a codec of this crate enforces by returning an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Violation {
    /// `STD-LEN-3`: extended length below 65535 (non-canonical).
    StdLen3,
    /// `STD-LEN-4`: extended length (or payload to encode) with bit 31 set.
    StdLen4,
    /// `STD-LIM-1`: declared payload above the receiver's maximum.
    StdLim1,
    /// `STD-LIM-2`: payload to encode above the sender's maximum.
    StdLim2,
    /// `STD-STR-3`: the stream ended inside a frame.
    StdStr3,
    /// `LF-FMT-3`: unsupported length-field size (configuration error).
    LfFmt3,
    /// `LF-LEN-1`: payload to encode does not fit the length field.
    LfLen1,
    /// `LF-LEN-2`: varint longer than 5 bytes or above 2³¹−1.
    LfLen2,
    /// `LF-LEN-3`: 4-byte length with bit 31 set.
    LfLen3,
    /// `LF-LIM-1`: declared payload above the receiver's maximum.
    LfLim1,
    /// `LF-LIM-2`: payload to encode above the sender's maximum.
    LfLim2,
    /// `LF-STR-3`: the stream ended inside a frame.
    LfStr3,
    /// `RPC-HDR-2`: bad magic.
    RpcHdr2,
    /// `RPC-HDR-3`: version other than 1 (received, or to encode).
    RpcHdr3,
    /// `RPC-HDR-4`: unknown message type (received, or to encode).
    RpcHdr4,
    /// `RPC-BODY-1`: a REQUEST body too short for its name fields.
    RpcBody1,
    /// `RPC-BODY-2`: a RESPONSE body shorter than 2 bytes, or an error code above 65535 to encode.
    RpcBody2,
    /// `RPC-BODY-3`: a STREAM_INIT body too short for its name fields.
    RpcBody3,
    /// `RPC-BODY-5`: STREAM_INIT_ACK/END/CANCEL with a body.
    RpcBody5,
    /// `RPC-BODY-6`: a service or method name longer than 65535 bytes to encode.
    RpcBody6,
    /// `RPC-LIM-1`: declared body above the receiver's maximum.
    RpcLim1,
    /// `RPC-LIM-2`: body to encode above the sender's maximum.
    RpcLim2,
    /// `RPC-STR-3`: the stream ended inside a frame.
    RpcStr3,
    /// `RPC-ECHO-4`: a frame other than REQUEST on the unary endpoint.
    RpcEcho4,
    /// `WS-HDR-2`: a reserved RSV bit set.
    WsHdr2,
    /// `WS-HDR-3`: a reserved opcode.
    WsHdr3,
    /// `WS-LEN-3`: a length not in its minimal form.
    WsLen3,
    /// `WS-LEN-4`: a 64-bit length with its most significant bit set.
    WsLen4,
    /// `WS-MASK-1`: an unmasked frame received by a server.
    WsMask1,
    /// `WS-MASK-2`: a masked frame received by a client.
    WsMask2,
    /// `WS-MASK-4`: a masking key that does not fit the MASK bit (encoder).
    WsMask4,
    /// `WS-CTL-1`: a fragmented control frame.
    WsCtl1,
    /// `WS-CTL-2`: a control frame payload over 125 bytes.
    WsCtl2,
    /// `WS-FRAG-2`: a continuation frame outside a message.
    WsFrag2,
    /// `WS-FRAG-3`: a new message inside a fragmented one.
    WsFrag3,
    /// `WS-UTF8-1`: invalid UTF-8 in a text message (found in its last frame).
    WsUtf81,
    /// `WS-UTF8-2`: invalid UTF-8 in a text message (found in a fragment before the last).
    WsUtf82,
    /// `WS-CLOSE-1`: a close payload of 1 byte.
    WsClose1,
    /// `WS-CLOSE-2`: a close code a peer may not send.
    WsClose2,
    /// `WS-CLOSE-3`: a close reason that is not UTF-8.
    WsClose3,
    /// `WS-LIM-1`: a frame above the frame limit.
    WsLim1,
    /// `WS-LIM-2`: a message above the message limit.
    WsLim2,
    /// `WS-LIM-3`: a payload to encode above the frame limit.
    WsLim3,
    /// `WS-STR-3`: the stream ended inside a frame.
    WsStr3,
    /// `WS-HS-1`: an opening handshake request that is not a valid upgrade.
    WsHs1,
    /// `WS-HS-3`: an opening handshake with another version than 13.
    WsHs3,
    /// `WSD-FRM-2`: RSV1 on a continuation or control frame (permessage-deflate agreed).
    WsdFrm2,
    /// `WSD-CMP-3`: a compressed message that does not inflate.
    WsdCmp3,
    /// `WSD-LIM-1`: a compressed message that inflates past the message limit.
    WsdLim1,
}

impl Violation {
    /// The requirement ID as written in the spec, e.g. `"STD-LIM-1"`.
    pub fn id(self) -> &'static str {
        match self {
            Violation::StdLen3 => "STD-LEN-3",
            Violation::StdLen4 => "STD-LEN-4",
            Violation::StdLim1 => "STD-LIM-1",
            Violation::StdLim2 => "STD-LIM-2",
            Violation::StdStr3 => "STD-STR-3",
            Violation::LfFmt3 => "LF-FMT-3",
            Violation::LfLen1 => "LF-LEN-1",
            Violation::LfLen2 => "LF-LEN-2",
            Violation::LfLen3 => "LF-LEN-3",
            Violation::LfLim1 => "LF-LIM-1",
            Violation::LfLim2 => "LF-LIM-2",
            Violation::LfStr3 => "LF-STR-3",
            Violation::RpcHdr2 => "RPC-HDR-2",
            Violation::RpcHdr3 => "RPC-HDR-3",
            Violation::RpcHdr4 => "RPC-HDR-4",
            Violation::RpcBody1 => "RPC-BODY-1",
            Violation::RpcBody2 => "RPC-BODY-2",
            Violation::RpcBody3 => "RPC-BODY-3",
            Violation::RpcBody5 => "RPC-BODY-5",
            Violation::RpcBody6 => "RPC-BODY-6",
            Violation::RpcLim1 => "RPC-LIM-1",
            Violation::RpcLim2 => "RPC-LIM-2",
            Violation::RpcStr3 => "RPC-STR-3",
            Violation::RpcEcho4 => "RPC-ECHO-4",
            Violation::WsHdr2 => "WS-HDR-2",
            Violation::WsHdr3 => "WS-HDR-3",
            Violation::WsLen3 => "WS-LEN-3",
            Violation::WsLen4 => "WS-LEN-4",
            Violation::WsMask1 => "WS-MASK-1",
            Violation::WsMask2 => "WS-MASK-2",
            Violation::WsMask4 => "WS-MASK-4",
            Violation::WsCtl1 => "WS-CTL-1",
            Violation::WsCtl2 => "WS-CTL-2",
            Violation::WsFrag2 => "WS-FRAG-2",
            Violation::WsFrag3 => "WS-FRAG-3",
            Violation::WsUtf81 => "WS-UTF8-1",
            Violation::WsUtf82 => "WS-UTF8-2",
            Violation::WsClose1 => "WS-CLOSE-1",
            Violation::WsClose2 => "WS-CLOSE-2",
            Violation::WsClose3 => "WS-CLOSE-3",
            Violation::WsLim1 => "WS-LIM-1",
            Violation::WsLim2 => "WS-LIM-2",
            Violation::WsLim3 => "WS-LIM-3",
            Violation::WsStr3 => "WS-STR-3",
            Violation::WsHs1 => "WS-HS-1",
            Violation::WsHs3 => "WS-HS-3",
            Violation::WsdFrm2 => "WSD-FRM-2",
            Violation::WsdCmp3 => "WSD-CMP-3",
            Violation::WsdLim1 => "WSD-LIM-1",
        }
    }

    /// True for an input that ended inside a frame (as opposed to a malformed one).
    pub fn is_truncation(self) -> bool {
        matches!(
            self,
            Violation::StdStr3 | Violation::LfStr3 | Violation::RpcStr3 | Violation::WsStr3
        )
    }
}

/// A classified protocol error: which requirement the input (or the request) breaks, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    /// The broken requirement.
    pub violation: Violation,
    /// Requirement ID from the spec, e.g. `"STD-LIM-1"` (`violation.id()`).
    pub requirement: &'static str,
    /// Byte offset in the stream where the offending frame starts (0 for encoder and
    /// configuration errors).
    pub offset: u64,
    /// Human-readable detail.
    pub message: String,
}

impl ProtocolError {
    pub fn new(violation: Violation, offset: u64, message: impl Into<String>) -> Self {
        ProtocolError {
            violation,
            requirement: violation.id(),
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

    /// Decodes a whole stream given in chunks: feeds them one by one exactly as split, then
    /// ends the stream. Returns every frame delivered and the error that stopped the stream,
    /// if any (frames after it are never delivered).
    fn decode_stream<'a>(
        &mut self,
        chunks: impl IntoIterator<Item = &'a [u8]>,
    ) -> (Vec<Self::Frame>, Option<ProtocolError>)
    where
        Self: Sized,
    {
        let mut frames = Vec::new();
        for chunk in chunks {
            let (f, e) = self.feed(chunk);
            frames.extend(f);
            if e.is_some() {
                return (frames, e);
            }
        }
        let e = self.finish().err();
        (frames, e)
    }
}

/// Helpers of the unit tests.
#[cfg(test)]
pub(crate) mod testutil {
    /// Bytes from hex pairs separated by spaces: `"01 0A FF"`.
    pub fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|h| u8::from_str_radix(h, 16).unwrap())
            .collect()
    }

    /// One standard frame's bytes (the library encodes into the caller's buffer only).
    pub fn std_wire(
        flag: u8,
        sequence: u8,
        payload: &[u8],
        max: u64,
    ) -> Result<Vec<u8>, crate::ProtocolError> {
        let mut b = bytes::BytesMut::new();
        crate::standard::encode(&mut b, flag, sequence, payload, max)?;
        Ok(b.to_vec())
    }

    /// One length-field frame's bytes under `p`.
    pub fn lf_wire(
        p: crate::length_field::Profile,
        payload: &[u8],
        max: u64,
    ) -> Result<Vec<u8>, crate::ProtocolError> {
        let mut b = bytes::BytesMut::new();
        p.encode(&mut b, payload, max)?;
        Ok(b.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::length_field::{LengthFieldDecoder, Profile};
    use crate::standard::StandardDecoder;

    #[test]
    fn violations_carry_their_ids() {
        let all = [
            Violation::StdLen3,
            Violation::StdLen4,
            Violation::StdLim1,
            Violation::StdLim2,
            Violation::StdStr3,
            Violation::LfFmt3,
            Violation::LfLen1,
            Violation::LfLen2,
            Violation::LfLen3,
            Violation::LfLim1,
            Violation::LfLim2,
            Violation::LfStr3,
            Violation::RpcHdr2,
            Violation::RpcHdr3,
            Violation::RpcHdr4,
            Violation::RpcBody1,
            Violation::RpcBody2,
            Violation::RpcBody3,
            Violation::RpcBody5,
            Violation::RpcBody6,
            Violation::RpcLim1,
            Violation::RpcLim2,
            Violation::RpcStr3,
            Violation::RpcEcho4,
            Violation::WsHdr2,
            Violation::WsHdr3,
            Violation::WsLen3,
            Violation::WsLen4,
            Violation::WsMask1,
            Violation::WsMask2,
            Violation::WsMask4,
            Violation::WsCtl1,
            Violation::WsCtl2,
            Violation::WsFrag2,
            Violation::WsFrag3,
            Violation::WsUtf81,
            Violation::WsUtf82,
            Violation::WsClose1,
            Violation::WsClose2,
            Violation::WsClose3,
            Violation::WsLim1,
            Violation::WsLim2,
            Violation::WsLim3,
            Violation::WsStr3,
            Violation::WsHs1,
            Violation::WsHs3,
            Violation::WsdFrm2,
            Violation::WsdCmp3,
            Violation::WsdLim1,
        ];
        let ids: std::collections::HashSet<&str> = all.iter().map(|v| v.id()).collect();
        assert_eq!(ids.len(), all.len());
        for v in all {
            let e = ProtocolError::new(v, 7, "x");
            assert_eq!(e.requirement, v.id());
            assert!(e
                .to_string()
                .starts_with(&format!("{} at offset 7", v.id())));
            assert_eq!(v.is_truncation(), v.id().ends_with("STR-3"));
        }
    }

    #[test]
    fn decoders_report_typed_violations() {
        let mut d = StandardDecoder::new(0);
        let (_, e) = d.feed(&[1, 1, 0xFF, 0xFF, 0, 0, 0, 0x80]);
        assert_eq!(e.unwrap().violation, Violation::StdLen4);
        let mut d = LengthFieldDecoder::new(Profile::new(0, 0).unwrap(), 0);
        let (_, e) = d.feed(&[0x80; 5]);
        assert_eq!(e.unwrap().violation, Violation::LfLen2);
        let mut d = LengthFieldDecoder::new(Profile::default(), 0);
        d.feed(&[1]);
        assert_eq!(d.finish().unwrap_err().violation, Violation::LfStr3);
    }
}
