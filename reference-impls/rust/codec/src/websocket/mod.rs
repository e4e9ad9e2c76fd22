//! The `websocket` protocol (`spec/websocket.md`): RFC 6455 frames and messages over one
//! connection, for both roles (a server receives masked frames and sends unmasked ones, a client
//! the reverse), and the server side of the opening handshake.
//!
//! * [`WsDecoder`]: the receiving endpoint. Frames are judged from their header (§14 step 1),
//!   then against the message state (fragmentation, limits), then by payload (UTF-8 as the bytes
//!   arrive, fail-fast across fragments; the close payload once complete). Payloads are unmasked
//!   in place in the receive buffer ([`mask`], 16 bytes at a time) and delivered as slices of it.
//! * [`encode`]: a frame exactly as given (MASK bit and key included), refusing what §14 says.
//! * [`WsSession`]: the echo service (§13): messages echoed as one frame, pings answered, the
//!   close handshake, errors closed with their close code (WS-ERR-1). The network server's
//!   session first runs the opening handshake (§12, [`handshake_reply`]).
//! * [`WsClient`]: a load client's side: masked frames with fresh random keys, echoes matched
//!   FIFO; [`client_opening`] and [`ClientOpening`] for its handshake.

use base64::Engine as _;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde_json::{Map, Value};
use sha1::{Digest, Sha1};

use crate::config::{CodecConfig, ConfigError};
use crate::matcher::{FifoMatcher, Received, RequestMatcher};
use crate::protocol::{
    ClientMatcher, Decoding, FrameFields, PayloadForm, Protocol, ReplyRewriter, Rewrite, RewriteState,
    Served, ServerSession,
};
use crate::{FrameDecoder, ProtocolError, Violation};

mod client;
mod decoder;
mod deflate;
mod frame;
mod handshake;
mod protocol;
mod session;
mod utf8;

pub use client::*;
pub use decoder::*;
pub use deflate::*;
pub use frame::*;
pub use handshake::*;
pub use protocol::*;
pub use session::*;
pub use utf8::*;

#[cfg(test)]
mod deflate_tests;
#[cfg(test)]
mod tests;
