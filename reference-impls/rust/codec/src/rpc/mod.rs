//! The `rpc` protocol (`spec/rpc.md`): galay-rpc's frames. A 16-byte big-endian header (magic
//! `GRPC`, version, type, flags, reserved, id, body length) and a typed body: REQUEST (service,
//! method, payload), RESPONSE (error code, payload), STREAM_INIT (service, method), the empty
//! stream control frames, and payload-only STREAM_DATA / HEARTBEAT / ERROR.
//!
//! The server side has two echo endpoints (§9 unary, §10 stream); the network server picks one
//! per connection from the type of its first frame (`RPC-ECHO-7`). The client side allocates
//! ids 0, 1, 2 ... per connection and matches responses by id ([`IdMatcher`]).

use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde_json::{Map, Value};

use crate::config::{CodecConfig, ConfigError};
use crate::matcher::{IdMatcher, Received, RequestMatcher, SendError};
use crate::protocol::{
    put_payload, ClientMatcher, Decoding, FrameFields, Protocol, ReplyRewriter, Rewrite,
    RewriteState, Served, ServerSession, StreamOps, StreamReply,
};
use crate::{FrameDecoder, ProtocolError, Violation};

mod client;
mod decoder;
mod frame;
mod protocol;
mod session;

pub use client::*;
pub use decoder::*;
pub use frame::*;
pub use protocol::*;
pub use session::*;

#[cfg(test)]
mod tests;
