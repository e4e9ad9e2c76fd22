//! The protocol abstraction: what a protocol module provides and the programs use.
//!
//! A protocol is a type implementing [`Protocol`], built from a [`CodecConfig`]. It provides
//! a streaming decoder ([`FrameDecoder`]), an encoder, a client-side request/reply matcher
//! ([`ClientMatcher`]) and the server side of its echo service ([`ServerSession`]). The
//! programs (fp-testee, fp-server, fp-load) are generic over it and reach a concrete protocol
//! only through the registry ([`crate::registry`]), so they never branch on a protocol name.
//!
//! Frames are described to the outside world (the testee's protobuf messages, the vectors) by
//! [`FrameFields`]: the payload plus every other field of the frame, named as the vectors and
//! `schemas/testee.proto` name them (`{"flag": 1, "sequence": 1}` for `standard`).
//!
//! One module a job, re-exported here: the [`Protocol`] trait (this file); `client`: what a
//! client connection does ([`ClientMatcher`], the opening handshake [`Opening`], streams
//! [`StreamOps`]); `server`: a server endpoint ([`ServerSession`], and [`EchoSession`] for the
//! protocols that answer frame by frame); `fields`: [`FrameFields`]; `raw_echo`: the raw echo
//! baseline's header walking and reply rewriting ([`HeaderWalker`], [`ReplyRewriter`]).

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{Map, Value};

use crate::config::{CodecConfig, ConfigError};
use crate::matcher::{Expired, Received, RequestMatcher, SendError};
use crate::{FrameDecoder, ProtocolError};

mod client;
mod fields;
mod raw_echo;
mod server;

pub use client::*;
pub use fields::*;
pub use raw_echo::*;
pub use server::*;

/// The payloads of a load client's requests (reference-impls/README.md, fp-load `--variant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadForm {
    /// The binary pattern of the request's index.
    Binary,
    /// The lowercase hex of the binary pattern, cut to the payload size.
    Hex,
    /// English words drawn from the index (`--variant prose`: text as compressible as prose).
    Prose,
}

/// One protocol: its configuration and factories for its endpoints.
pub trait Protocol: Sized + Clone + Send + Sync + 'static {
    /// The registered name, e.g. `"standard"`.
    const NAME: &'static str;
    /// A decoded frame.
    type Frame: Send + 'static;
    /// The streaming decoder.
    type Decoder: FrameDecoder<Frame = Self::Frame> + Send + 'static;
    /// The server side of one connection.
    type Session: ServerSession + Send + 'static;
    /// The client side of one connection; `T` tags each pending request.
    type Client<T: Send + 'static>: ClientMatcher<T, Frame = Self::Frame> + Send + 'static;

    /// Builds the protocol from a configuration: its own parameter section, the limits.
    fn from_config(cfg: &CodecConfig) -> Result<Self, ConfigError>;

    /// A fresh streaming decoder.
    fn decoder(&self) -> Self::Decoder;

    /// Appends one encoded frame to `out`, or refuses it without writing anything.
    fn encode(&self, frame: &Self::Frame, out: &mut BytesMut) -> Result<(), ProtocolError>;

    /// The server endpoint of one connection: `endpoint` names one where the protocol has
    /// several (`""` = the default echo service); `sink` decodes and counts, replying nothing.
    fn session(&self, endpoint: &str, sink: bool) -> Result<Self::Session, ConfigError>;

    /// The network echo server's endpoint of one connection (fp-server). Default: the default
    /// endpoint; a protocol with several picks one per connection itself (rpc, `RPC-ECHO-7`).
    fn net_session(&self, sink: bool) -> Result<Self::Session, ConfigError> {
        self.session("", sink)
    }

    /// The largest frame (or message) the server accepts, in bytes: a server-wide memory
    /// budget below it is a usage error (`*-RES-1`).
    fn largest_unit(&self) -> u64;

    // -- micro-benchmarks (tools/bench/microbench.md, fp-microbench)

    /// The codec the benchmarks run `payload`-byte requests with (`Protocol.bench_codec` of the
    /// suite); `None`: the default one carries them.
    fn bench_codec(_payload: usize) -> Option<CodecConfig> {
        None
    }

    /// Appends the first `count` requests of a load-client connection with `len`-byte payloads
    /// (request i's payload written by `fill(i, payload)`), as fp-load writes them; a protocol
    /// whose client masks uses the fixed key `12 34 56 78`. Default: through the client matcher.
    fn bench_requests(
        &self,
        count: usize,
        len: usize,
        out: &mut BytesMut,
        fill: &mut dyn FnMut(u64, &mut [u8]),
    ) -> Result<(), String> {
        let mut client = self.client::<u64>(1 << 40);
        for i in 0..count as u64 {
            client
                .send_request(0, i, len, out, |p| fill(i, p))
                .map_err(|e| format!("request {i} refused: {e:?}"))?;
        }
        Ok(())
    }

    /// Appends the echo server's reply to `request` with the encoder of its reply path; false
    /// where the protocol has no such single-frame reply (no encode benchmark then).
    fn bench_reply(&self, _request: &Self::Frame, _out: &mut BytesMut) -> bool {
        false
    }

    /// The part of the server's decoding done in place ([`Echo::reply_in_place`]'s drain): calls
    /// `each` with the payload of every whole frame at the front of `dec`'s buffer that it takes,
    /// and returns how many; the decode benchmark runs it before `decode`, as the server does.
    /// Default: none (everything goes through `decode`).
    fn bench_drain(&self, _dec: &mut Self::Decoder, _each: &mut dyn FnMut(&[u8])) -> u64 {
        0
    }

    /// The protocol's own micro-benchmark cases: (op, payload) pairs.
    const BENCH_EXTRA: &'static [(&'static str, usize)] = &[];

    /// One of [`Protocol::BENCH_EXTRA`]: its input and the routine one iteration runs over it
    /// (returning what is consumed into the checksum).
    fn bench_extra(&self, _op: &str, _payload: usize) -> Option<(Vec<u8>, BenchRoutine)> {
        None
    }

    /// What the protocol itself says on the wire about an error (an rpc error code, a WebSocket
    /// close code), as the fields of the testee's `ProtocolError.detail` oneof
    /// (`{"websocket": {"close_code": 1002}}`); `None` where it says nothing.
    fn error_detail(&self, _error: &ProtocolError) -> Option<Map<String, Value>> {
        None
    }

    /// The client side of one connection; requests time out `timeout` units (of the caller's
    /// clock) after they are sent.
    fn client<T: Send + 'static>(&self, timeout: u64) -> Self::Client<T>;

    /// A frame's fields, for the testee and the reports.
    fn describe(frame: &Self::Frame) -> FrameFields;

    /// The frame that `fields` describes (testee `encode`); `Err` when the fields do not fit
    /// this protocol's frame (the testee answers `skipped`).
    fn frame(&self, fields: FrameFields) -> Result<Self::Frame, String>;

    /// A frame's payload.
    fn payload(frame: &Self::Frame) -> &[u8];

    /// Whether a request with a payload of `len` bytes can be sent (the load client checks
    /// before it connects).
    fn check_request(&self, len: usize) -> Result<(), ProtocolError>;

    /// The most requests a client may keep in flight on one connection, and the requirement
    /// that sets the bound.
    fn max_in_flight(&self) -> (usize, &'static str);

    /// Whether a frame that completed a request is the successful reply a load client expects
    /// (its payload is checked separately); `Err` says what is wrong with it.
    fn check_reply(&self, _frame: &Self::Frame) -> Result<(), String> {
        Ok(())
    }

    /// Whether a received frame that completes nothing ([`Received::Unmatched`],
    /// [`Received::PeerRequest`]) is an error of the load client's report and counts as a received
    /// reply. Default: it is. rpc: it is not: an unmatched RESPONSE (`RPC-MATCH-2`) and a frame of
    /// another type (`RPC-MATCH-4`) complete nothing and are neither replies nor errors.
    const STRAYS_ARE_ERRORS: bool = true;

    /// The load client's default `--batch` in `--mode batched`: how many requests a batch writes
    /// before it waits for all their replies. Default: 256, the benchmarks' pipelining window; the
    /// suite's protocol registry (conformance/frameproof/protocols) gives its load client the
    /// same figures.
    const DEFAULT_BATCH: usize = 256;

    /// The values of the load client's `--variant` (which kind of request it sends), the
    /// default first.
    const VARIANTS: &'static [&'static str] = &["default"];

    /// This protocol sending requests of `variant` (one of [`Protocol::VARIANTS`]).
    fn with_variant(self, _variant: &str) -> Self {
        self
    }

    /// What the load client's payloads are (`--variant`): the binary pattern, or text for
    /// protocols whose messages must be UTF-8 (websocket).
    fn payload_form(&self) -> PayloadForm {
        PayloadForm::Binary
    }

    /// This protocol as a network client uses it (websocket: the client role, which receives
    /// unmasked frames); the configuration a user gives names the server's side.
    fn client_side(self) -> Self {
        self
    }

    /// The client's opening handshake for a server at `host`, where the protocol has one.
    fn opening(&self, _host: &str) -> Option<Box<dyn Opening>> {
        None
    }

    /// The protocol of one connection whose opening handshake `opening` completed: what the
    /// server's answer agreed to ([`Opening::negotiated`]; websocket: permessage-deflate), else
    /// this one.
    fn opened(&self, _opening: &dyn Opening) -> Self {
        self.clone()
    }

    /// Appends what a client sends before it closes (websocket: a close frame with code 1000)
    /// and returns true, or false where the protocol has nothing to say.
    fn put_goodbye(&self, _out: &mut BytesMut) -> bool {
        false
    }

    /// Whether a received frame is the peer's answer to the goodbye (its close frame).
    fn is_goodbye(_frame: &Self::Frame) -> bool {
        false
    }

    /// Whether the protocol has streams (the load client's `--mode stream`, [`StreamOps`]).
    fn streams(&self) -> Option<&dyn StreamOps<Self::Frame>> {
        None
    }

    /// A [`HeaderWalker`] for this configuration, where the protocol has one (the raw echo
    /// baseline of tools/bench); `reply` turns requests into replies in place.
    fn walker(&self, _reply: bool) -> Option<Box<dyn HeaderWalker>> {
        None
    }

    /// The raw echo's rewriter where a reply differs in length from its request (rpc, websocket):
    /// see [`ReplyRewriter`]. Protocols with a [`HeaderWalker`] need none.
    fn rewriter(&self, _reply: bool) -> Option<Box<dyn ReplyRewriter>> {
        None
    }
}

/// A micro-benchmark routine over its input buffer, returning what is consumed (checksum).
pub type BenchRoutine = fn(&mut [u8]) -> u64;
