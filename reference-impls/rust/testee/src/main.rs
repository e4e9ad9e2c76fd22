//! fp-testee: speaks the frameproof testee protocol (spec/testee.md) on stdin/stdout.
//!
//! Every message is `u32 LE length | protobuf`. Logs go to stderr only; the process exits 0 at
//! EOF on stdin.

use std::io::{self, BufReader, BufWriter, Read, Write};

use bytes::{Bytes, BytesMut};
use frameproof_codec::config::{CodecConfig, ConfigError};
use frameproof_codec::matcher::{Received, SendError};
use frameproof_codec::protocol::{ClientMatcher, FrameFields, Protocol, ServerSession};
use frameproof_codec::registry::{self, Visitor};
use frameproof_codec::{FrameDecoder, ProtocolError, DEFAULT_TIMEOUT_MS};
use prost::Message;
use serde_json::Value;

// The schema is shared by every testee and grows (messages of other requests): what this testee
// does not use is still generated.
#[allow(clippy::all, dead_code)]
mod pb {
    include!(concat!(env!("OUT_DIR"), "/frameproof.testee.v1.rs"));
}

#[cfg(feature = "discovery")]
mod discovery;
mod long_stream;

use pb::completion::Kind;
use pb::testee_request::Request;
use pb::testee_response::Result as Resp;

/// The highest harness version this testee speaks (spec/testee.md, "Versions").
const MAX_HARNESS_VERSION: u32 = 3;
/// Largest request accepted from the runner (a sanity bound, far above any test).
const MAX_MESSAGE: usize = 1 << 30;

fn main() {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut input = BufReader::with_capacity(1 << 16, stdin.lock());
    let mut output = BufWriter::with_capacity(1 << 16, stdout.lock());
    loop {
        let mut len = [0u8; 4];
        match read_full(&mut input, &mut len) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                eprintln!("fp-testee: reading stdin: {e}");
                std::process::exit(1);
            }
        }
        let n = u32::from_le_bytes(len) as usize;
        if n > MAX_MESSAGE {
            eprintln!("fp-testee: message of {n} bytes is too large");
            std::process::exit(1);
        }
        let mut msg = vec![0u8; n];
        match read_full(&mut input, &mut msg) {
            Ok(true) => {}
            Ok(false) | Err(_) => {
                eprintln!("fp-testee: stdin ended inside a message");
                std::process::exit(1);
            }
        }
        let out = answer(&msg);
        let ok = output
            .write_all(&(out.len() as u32).to_le_bytes())
            .and_then(|_| output.write_all(&out))
            .and_then(|_| output.flush());
        if let Err(e) = ok {
            eprintln!("fp-testee: writing stdout: {e}");
            std::process::exit(1);
        }
    }
}

/// Fills `buf`; `Ok(false)` on a clean EOF before the first byte.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The encoded `TesteeResponse` to one encoded request (a discovery script's or a long stream's
/// answer is the wire-compatible view of spec/testee.md).
fn answer(msg: &[u8]) -> Vec<u8> {
    let result = match pb::TesteeRequest::decode(msg) {
        Ok(pb::TesteeRequest { request: None }) => match outside_oneof(msg) {
            Some(encoded) => return encoded,
            None => Resp::Skipped("empty or unknown request".into()),
        },
        Ok(req) => guarded(|| handle(req)).unwrap_or_else(Resp::RuntimeError),
        Err(e) => Resp::RuntimeError(format!("cannot parse TesteeRequest: {e}")),
    };
    pb::TesteeResponse {
        result: Some(result),
    }
    .encode_to_vec()
}

/// A request that travels outside the `request` oneof (a discovery script, a long stream),
/// answered in its own view; `None` when `msg` is neither.
fn outside_oneof(msg: &[u8]) -> Option<Vec<u8>> {
    #[cfg(feature = "discovery")]
    if let Ok(pb::TesteeDiscoveryRequest { discovery: Some(d) }) = pb::TesteeDiscoveryRequest::decode(msg) {
        let answer = match guarded(|| discovery::run(&d)) {
            Ok(discovery::Answer::Done(d)) => pb::TesteeDiscoveryResponse {
                discovery: Some(d),
                ..Default::default()
            },
            Ok(discovery::Answer::Skipped(why)) => pb::TesteeDiscoveryResponse {
                skipped: why,
                ..Default::default()
            },
            Err(e) => pb::TesteeDiscoveryResponse {
                runtime_error: e,
                ..Default::default()
            },
        };
        return Some(answer.encode_to_vec());
    }
    let Ok(pb::TesteeLongStreamRequest {
        long_stream: Some(mut r),
    }) = pb::TesteeLongStreamRequest::decode(msg)
    else {
        return None;
    };
    let answer = match codec_config(r.codec.take().unwrap_or_default()) {
        Err(e) => pb::TesteeLongStreamResponse {
            skipped: format!("codec not supported: {e}"),
            ..Default::default()
        },
        Ok(cfg) => match guarded(|| registry::with_protocol(&cfg, long_stream::LongStream(&r))) {
            Ok(Ok(Ok(out))) => pb::TesteeLongStreamResponse {
                long_stream: Some(out),
                ..Default::default()
            },
            Ok(Ok(Err(why))) | Err(why) => pb::TesteeLongStreamResponse {
                runtime_error: why,
                ..Default::default()
            },
            Ok(Err(e)) => pb::TesteeLongStreamResponse {
                skipped: e.to_string(),
                ..Default::default()
            },
        },
    };
    Some(answer.encode_to_vec())
}

/// Runs `f`, turning a panic into the runtime error it answers.
fn guarded<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Result<T, String> {
    std::panic::catch_unwind(f).map_err(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into());
        format!("internal error: {what}")
    })
}

fn handle(req: pb::TesteeRequest) -> Resp {
    let (codec, job) = match req.request {
        Some(Request::Hello(h)) => return Resp::Hello(hello(&h)),
        Some(Request::Decode(mut d)) => (d.codec.take(), Job::Decode(d)),
        Some(Request::Encode(mut e)) => (e.codec.take(), Job::Encode(e)),
        Some(Request::Match(mut m)) => (m.codec.take(), Job::Match(m)),
        Some(Request::Serve(mut s)) => (s.codec.take(), Job::Serve(s)),
        // an empty request, or one this testee does not know (the schema may be newer)
        _ => return Resp::Skipped("empty or unknown request".into()),
    };
    let cfg = match codec_config(codec.unwrap_or_default()) {
        Ok(c) => c,
        Err(e) => return Resp::Skipped(format!("codec not supported: {e}")),
    };
    match registry::with_protocol(&cfg, &job) {
        Ok(resp) => resp,
        Err(ConfigError::Protocol(e)) => job.refused(&e),
        Err(e) => Resp::Skipped(e.to_string()),
    }
}

/// Answers with the highest version both sides speak (the runner always sends
/// `harness_version = 1` and, from v2, its highest version in `max_harness_version`).
fn hello(h: &pb::HelloRequest) -> pb::HelloResponse {
    let version = h.max_harness_version.clamp(1, MAX_HARNESS_VERSION);
    if h.harness_version != 1 {
        eprintln!(
            "fp-testee: runner sent harness_version {}, expected 1",
            h.harness_version
        );
    }
    let mut features = vec!["decode".to_string(), "encode".into(), "match".into()];
    if version >= 2 {
        features.push("serve".into());
        #[cfg(feature = "discovery")]
        features.push("discovery".into());
        #[cfg(feature = "discovery-etcd")]
        features.push("discovery-etcd".into());
        // the rpc unary endpoint registers `unary_only` for call mode 0 only (RPC-ECHO-8)
        features.push("rpc-unary-only".into());
    }
    if version >= 3 {
        features.push("long-stream".into());
    }
    pb::HelloResponse {
        harness_version: version,
        name: "frameproof-rust".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        protocols: registry::PROTOCOLS.iter().map(|p| p.to_string()).collect(),
        features,
    }
}

/// The request's `Codec` as the codec JSON (the generated types serialize to it, build.rs).
fn codec_config(codec: pb::Codec) -> Result<CodecConfig, ConfigError> {
    let json = serde_json::to_value(&codec)
        .map_err(|e| ConfigError::Invalid(format!("codec does not serialize: {e}")))?;
    CodecConfig::from_value(json)
}

/// A request about one codec, run by [`registry::with_protocol`] with the codec's protocol.
enum Job {
    Decode(pb::DecodeRequest),
    Encode(pb::EncodeRequest),
    Match(pb::MatchRequest),
    Serve(pb::ServeRequest),
}

impl Visitor for &Job {
    type Output = Resp;
    fn visit<P: Protocol>(self, p: P) -> Resp {
        match self {
            Job::Decode(d) => Resp::Decode(decode(&p, &d.chunks)),
            Job::Encode(e) => encode(&p, e.frame.clone().unwrap_or_default()),
            Job::Match(m) => run_match(&p, m),
            Job::Serve(s) => serve(&p, s),
        }
    }
}

impl Job {
    /// The answer when the configuration itself is an error of the protocol (`LF-FMT-3`):
    /// no frames, no bytes, that error.
    fn refused(&self, e: &ProtocolError) -> Resp {
        let error = Some(perr(e));
        match self {
            Job::Decode(_) => Resp::Decode(pb::DecodeResponse {
                frames: vec![],
                error,
            }),
            Job::Encode(_) => Resp::Encode(pb::EncodeResponse {
                result: Some(pb::encode_response::Result::Error(perr(e))),
            }),
            Job::Match(_) => Resp::Match(pb::MatchResponse {
                error,
                ..Default::default()
            }),
            Job::Serve(_) => Resp::Serve(pb::ServeResponse {
                written: vec![],
                closed: true,
                error,
            }),
        }
    }
}

fn perr(e: &ProtocolError) -> pb::ProtocolError {
    pb::ProtocolError {
        requirement: e.requirement.to_string(),
        offset: e.offset,
        message: e.message.clone(),
        detail: None,
    }
}

/// The error with what the protocol says about it on the wire (`ProtocolError.detail`, v2).
pub(crate) fn perr_of<P: Protocol>(p: &P, e: &ProtocolError) -> pb::ProtocolError {
    let mut out = perr(e);
    if let Some(detail) = p.error_detail(e) {
        match serde_json::from_value::<pb::ProtocolError>(Value::Object(detail)) {
            Ok(d) => out.detail = d.detail,
            Err(why) => eprintln!("fp-testee: error detail does not fit ProtocolError: {why}"),
        }
    }
    out
}

/// A decoded frame as the testee protocol's `Frame`.
pub(crate) fn pb_frame<P: Protocol>(f: &P::Frame) -> pb::Frame {
    let fields = P::describe(f);
    let mut frame: pb::Frame = serde_json::from_value(Value::Object(fields.header))
        .expect("a protocol describes its frames with the fields of schemas/testee.proto");
    frame.payload = fields.payload;
    frame
}

/// A requested frame as the codec's [`FrameFields`].
fn frame_fields(mut f: pb::Frame) -> FrameFields {
    let payload = std::mem::take(&mut f.payload);
    let header = match serde_json::to_value(&f) {
        Ok(Value::Object(mut h)) => {
            h.remove("payload");
            h
        }
        _ => serde_json::Map::new(),
    };
    FrameFields { payload, header }
}

/// Feeds every chunk, then ends the stream; stops at the first error.
fn decode<P: Protocol>(p: &P, chunks: &[Bytes]) -> pb::DecodeResponse {
    let (frames, err) = p.decoder().decode_stream(chunks.iter().map(|c| &c[..]));
    pb::DecodeResponse {
        frames: frames.iter().map(pb_frame::<P>).collect(),
        error: err.as_ref().map(|e| perr_of(p, e)),
    }
}

fn encode<P: Protocol>(p: &P, f: pb::Frame) -> Resp {
    use pb::encode_response::Result as E;
    let frame = match p.frame(frame_fields(f)) {
        Ok(f) => f,
        Err(why) => return Resp::Skipped(why),
    };
    let mut buf = BytesMut::new();
    let result = match p.encode(&frame, &mut buf) {
        Ok(()) => E::Encoded(buf.freeze()),
        Err(e) => E::Error(perr_of(p, &e)),
    };
    Resp::Encode(pb::EncodeResponse {
        result: Some(result),
    })
}

/// Collects the `match` response.
#[derive(Default)]
struct Script {
    resp: pb::MatchResponse,
}

impl Script {
    fn complete(&mut self, kind: Kind, request: Option<u32>, frame: Option<pb::Frame>) {
        self.resp.completions.push(pb::Completion {
            kind: kind as i32,
            request: request.unwrap_or(0),
            frame,
        });
    }
}

/// One client connection with a virtual millisecond clock (spec/testee.md, "match").
fn run_match<P: Protocol>(p: &P, m: &pb::MatchRequest) -> Resp {
    use pb::match_event::Event;
    let timeout = match m.timeout_ms {
        0 => DEFAULT_TIMEOUT_MS,
        t => t as u64,
    };
    let mut s = Script::default();
    let mut client = p.client::<u32>(timeout);
    let mut dec = p.decoder();
    let mut now: u64 = 0;
    let mut index: u32 = 0;
    for ev in &m.events {
        match &ev.event {
            Some(Event::Send(payload)) | Some(Event::SendOneWay(payload)) => {
                let i = index;
                index += 1;
                let mut buf = BytesMut::new();
                let fill = |dst: &mut [u8]| dst.copy_from_slice(payload);
                let r = if matches!(ev.event, Some(Event::SendOneWay(_))) {
                    client.send_one_way(payload.len(), &mut buf, fill)
                } else {
                    client.send_request(now, i, payload.len(), &mut buf, fill)
                };
                match r {
                    Ok(()) => s.resp.sent.push(buf.freeze()),
                    Err(SendError::Unsupported) => {
                        return Resp::Skipped(format!("{} has no one-way messages", P::NAME))
                    }
                    Err(_) => {
                        s.resp.sent.push(Bytes::new());
                        s.complete(Kind::Refused, Some(i), None);
                    }
                }
            }
            Some(Event::SendFrame(f)) => {
                let i = index;
                index += 1;
                let frame = match p.frame(frame_fields(f.clone())) {
                    Ok(f) => f,
                    Err(why) => return Resp::Skipped(why),
                };
                let mut buf = BytesMut::new();
                match client.send_frame(now, i, &frame, &mut buf) {
                    Ok(()) => s.resp.sent.push(buf.freeze()),
                    Err(SendError::Unsupported) => {
                        return Resp::Skipped(format!("send_frame is not used with {}", P::NAME))
                    }
                    Err(_) => {
                        s.resp.sent.push(Bytes::new());
                        s.complete(Kind::Refused, Some(i), None);
                    }
                }
            }
            Some(Event::Receive(bytes)) => {
                if client.is_failed() {
                    continue;
                }
                let (frames, err) = dec.feed(bytes);
                for f in &frames {
                    match client.receive(f) {
                        Received::Reply(i) => {
                            s.complete(Kind::Reply, Some(i), Some(pb_frame::<P>(f)))
                        }
                        Received::Unmatched => {
                            s.complete(Kind::Unmatched, None, Some(pb_frame::<P>(f)))
                        }
                        Received::PeerRequest | Received::Ignored => {}
                    }
                }
                if let Some(e) = err {
                    s.resp.error = Some(perr_of(p, &e));
                    for i in client.fail() {
                        s.complete(Kind::Failed, Some(i), None);
                    }
                }
            }
            Some(Event::AdvanceMs(t)) => {
                now += *t as u64;
                let ex = client.expire(now);
                for i in ex.timed_out {
                    s.complete(Kind::Timeout, Some(i), None);
                }
                for i in ex.failed {
                    s.complete(Kind::Failed, Some(i), None);
                }
            }
            None => {}
        }
    }
    Resp::Match(s.resp)
}

/// One connection to the server side, offline (spec/testee.md, "serve (version 2)").
fn serve<P: Protocol>(p: &P, r: &pb::ServeRequest) -> Resp {
    let mut session = match p.session(&r.endpoint, false) {
        Ok(s) => s,
        Err(ConfigError::Protocol(e)) => return Job::Serve(r.clone()).refused(&e),
        Err(e) => return Resp::Skipped(e.to_string()),
    };
    let mut resp = pb::ServeResponse::default();
    let mut out = BytesMut::new();
    let mut inputs = r.chunks.iter().map(Some).collect::<Vec<_>>();
    if r.half_close {
        inputs.push(None); // the peer's EOF
    }
    for input in inputs {
        let served = match input {
            Some(chunk) => {
                session.extend(chunk);
                session.process(&mut out)
            }
            None => session.finish(&mut out),
        };
        resp.written.push(out.split().freeze());
        if served.closed {
            resp.closed = true;
            resp.error = served.error.as_ref().map(|e| perr_of(p, e));
            break;
        }
    }
    Resp::Serve(resp)
}

#[cfg(test)]
mod tests;
