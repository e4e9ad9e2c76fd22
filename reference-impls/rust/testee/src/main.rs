//! fp-testee: speaks the frameproof testee protocol (spec/testee.md) on stdin/stdout.
//!
//! Every message is `u32 LE length | protobuf`. Logs go to stderr only; the process exits 0 at
//! EOF on stdin.

use std::io::{self, BufReader, BufWriter, Read, Write};

use bytes::{Bytes, BytesMut};
use frameproof_codec::length_field::{LengthFieldDecoder, Profile, DEFAULT_PENDING_BOUND};
use frameproof_codec::matcher::{FifoMatcher, Received, SendError, SequenceMatcher};
use frameproof_codec::standard::{self, StandardDecoder};
use frameproof_codec::{FrameDecoder, ProtocolError, DEFAULT_TIMEOUT_MS};
use prost::Message;

#[allow(clippy::all)]
mod pb {
    include!(concat!(env!("OUT_DIR"), "/frameproof.testee.v1.rs"));
}

use pb::completion::Kind;
use pb::testee_request::Request;
use pb::testee_response::Result as Resp;

const HARNESS_VERSION: u32 = 1;
/// Largest request accepted from the runner (a sanity bound, far above any test).
const MAX_MESSAGE: usize = 1 << 30;
/// Largest length-field header offset the testee accepts (the decoder itself needs no bound;
/// the encoder writes that many zero bytes).
const MAX_OFFSET: u32 = 1 << 24;

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
        let result = match pb::TesteeRequest::decode(&msg[..]) {
            Ok(req) => std::panic::catch_unwind(|| handle(req)).unwrap_or_else(|p| {
                let what = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into());
                Resp::RuntimeError(format!("internal error: {what}"))
            }),
            Err(e) => Resp::RuntimeError(format!("cannot parse TesteeRequest: {e}")),
        };
        let out = pb::TesteeResponse {
            result: Some(result),
        }
        .encode_to_vec();
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

fn handle(req: pb::TesteeRequest) -> Resp {
    match req.request {
        Some(Request::Hello(h)) => {
            if h.harness_version != HARNESS_VERSION {
                eprintln!(
                    "fp-testee: runner speaks harness version {}, this testee {}",
                    h.harness_version, HARNESS_VERSION
                );
            }
            Resp::Hello(pb::HelloResponse {
                harness_version: HARNESS_VERSION,
                name: "frameproof-rust".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                protocols: vec!["standard".into(), "length-field".into()],
                features: vec!["decode".into(), "encode".into(), "match".into()],
            })
        }
        Some(Request::Decode(d)) => with_codec(d.codec.as_ref(), |c| Resp::Decode(decode(c, &d.chunks))),
        Some(Request::Encode(e)) => with_codec(e.codec.as_ref(), |c| {
            let frame = e.frame.clone().unwrap_or_default();
            if frame.flag > 0xFF || frame.sequence > 0xFF {
                return Resp::Skipped(format!(
                    "flag {} / sequence {} do not fit a byte",
                    frame.flag, frame.sequence
                ));
            }
            Resp::Encode(encode(c, &frame))
        }),
        Some(Request::Match(m)) => with_codec(m.codec.as_ref(), |c| Resp::Match(run_match(c, &m))),
        None => Resp::Skipped("empty or unknown request".into()),
    }
}

/// A codec configuration as requested; `Lf` holds the profile or the `LF-FMT-3` refusal.
enum Codec {
    Std { max: u64 },
    Lf { profile: Result<Profile, ProtocolError>, max: u64 },
}

fn with_codec(codec: Option<&pb::Codec>, f: impl FnOnce(&Codec) -> Resp) -> Resp {
    let default = pb::Codec::default();
    let c = codec.unwrap_or(&default);
    let max = c.limits.as_ref().map_or(0, |l| l.max_payload);
    let codec = match c.protocol.as_str() {
        "standard" => Codec::Std { max },
        "length-field" => {
            let profile = match &c.length_field {
                None => Ok(Profile::default()),
                Some(p) => Profile::new(p.offset, p.size as i64),
            };
            // Encoding writes `offset` zero bytes per frame; refuse to allocate absurd amounts.
            if profile.as_ref().is_ok_and(|p| p.offset > MAX_OFFSET) {
                return Resp::Skipped(format!(
                    "length-field offset above {MAX_OFFSET} bytes is not supported by this testee"
                ));
            }
            Codec::Lf { profile, max }
        }
        other => return Resp::Skipped(format!("protocol {other:?} not implemented")),
    };
    f(&codec)
}

fn perr(e: &ProtocolError) -> pb::ProtocolError {
    pb::ProtocolError {
        requirement: e.requirement.to_string(),
        offset: e.offset,
        message: e.message.clone(),
    }
}

fn std_frame(f: &standard::StdFrame) -> pb::Frame {
    pb::Frame {
        flag: f.flag as u32,
        sequence: f.sequence as u32,
        payload: f.payload.clone(),
    }
}

fn lf_frame(p: &Bytes) -> pb::Frame {
    pb::Frame {
        flag: 0,
        sequence: 0,
        payload: p.clone(),
    }
}

/// Feeds every chunk, then ends the stream; stops at the first error.
fn run_decoder<D: FrameDecoder>(
    mut d: D,
    chunks: &[Bytes],
    conv: impl Fn(&D::Frame) -> pb::Frame,
) -> pb::DecodeResponse {
    let mut resp = pb::DecodeResponse::default();
    for chunk in chunks {
        let (frames, err) = d.feed(chunk);
        resp.frames.extend(frames.iter().map(&conv));
        if let Some(e) = err {
            resp.error = Some(perr(&e));
            return resp;
        }
    }
    if let Err(e) = d.finish() {
        resp.error = Some(perr(&e));
    }
    resp
}

fn decode(c: &Codec, chunks: &[Bytes]) -> pb::DecodeResponse {
    match c {
        Codec::Std { max } => run_decoder(StandardDecoder::new(*max), chunks, std_frame),
        Codec::Lf { profile, max } => match profile {
            Ok(p) => run_decoder(LengthFieldDecoder::new(*p, *max), chunks, lf_frame),
            Err(e) => pb::DecodeResponse {
                frames: vec![],
                error: Some(perr(e)),
            },
        },
    }
}

fn encode(c: &Codec, f: &pb::Frame) -> pb::EncodeResponse {
    use pb::encode_response::Result as E;
    let mut buf = BytesMut::new();
    let r = match c {
        Codec::Std { max } => standard::encode(
            &mut buf,
            f.flag as u8,
            f.sequence as u8,
            &f.payload,
            *max,
        ),
        Codec::Lf { profile, max } => match profile {
            Ok(p) => p.encode(&mut buf, &f.payload, *max),
            Err(e) => Err(e.clone()),
        },
    };
    pb::EncodeResponse {
        result: Some(match r {
            Ok(()) => E::Encoded(buf.freeze()),
            Err(e) => E::Error(perr(&e)),
        }),
    }
}

/// Collects the `match` response.
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
    fn sent(&mut self, bytes: Bytes) {
        self.resp.sent.push(bytes);
    }
}

fn run_match(c: &Codec, m: &pb::MatchRequest) -> pb::MatchResponse {
    let timeout = if m.timeout_ms == 0 {
        DEFAULT_TIMEOUT_MS
    } else {
        m.timeout_ms as u64
    };
    match c {
        Codec::Std { max } => match_standard(*max, timeout, &m.events),
        Codec::Lf { profile, max } => match profile {
            Ok(p) => match_length_field(*p, *max, timeout, &m.events),
            Err(e) => pb::MatchResponse {
                error: Some(perr(e)),
                ..Default::default()
            },
        },
    }
}

fn match_standard(max: u64, timeout: u64, events: &[pb::MatchEvent]) -> pb::MatchResponse {
    use pb::match_event::Event;
    let mut s = Script {
        resp: pb::MatchResponse::default(),
    };
    let mut m: SequenceMatcher<u32> = SequenceMatcher::new(timeout);
    let mut dec = StandardDecoder::new(max);
    let mut now: u64 = 0;
    let mut index: u32 = 0;
    for ev in events {
        match &ev.event {
            Some(Event::Send(p)) | Some(Event::SendOneWay(p)) => {
                let one_way = matches!(ev.event, Some(Event::SendOneWay(_)));
                let i = index;
                index += 1;
                let mut buf = BytesMut::new();
                let r = if one_way {
                    m.send_one_way(|seq| standard::encode(&mut buf, 0x41, seq, p, max))
                } else {
                    m.send_request(now, i, |seq| standard::encode(&mut buf, 0x01, seq, p, max))
                };
                match r {
                    Ok(_) => s.sent(buf.freeze()),
                    Err(_) => {
                        s.sent(Bytes::new());
                        s.complete(Kind::Refused, Some(i), None);
                    }
                }
            }
            Some(Event::Receive(bytes)) => {
                if m.is_failed() {
                    continue;
                }
                let (frames, err) = dec.feed(bytes);
                for f in &frames {
                    match m.receive(f.flag, f.sequence) {
                        Received::Reply(i) => s.complete(Kind::Reply, Some(i), Some(std_frame(f))),
                        Received::Unmatched => s.complete(Kind::Unmatched, None, Some(std_frame(f))),
                        Received::PeerRequest | Received::Ignored => {}
                    }
                }
                if let Some(e) = err {
                    s.resp.error = Some(perr(&e));
                    for i in m.fail() {
                        s.complete(Kind::Failed, Some(i), None);
                    }
                }
            }
            Some(Event::AdvanceMs(t)) => {
                now += *t as u64;
                for i in m.expire(now) {
                    s.complete(Kind::Timeout, Some(i), None);
                }
            }
            None => {}
        }
    }
    s.resp
}

fn match_length_field(
    profile: Profile,
    max: u64,
    timeout: u64,
    events: &[pb::MatchEvent],
) -> pb::MatchResponse {
    use pb::match_event::Event;
    let mut s = Script {
        resp: pb::MatchResponse::default(),
    };
    let mut m: FifoMatcher<u32> = FifoMatcher::new(timeout, DEFAULT_PENDING_BOUND);
    let mut dec = LengthFieldDecoder::new(profile, max);
    let mut now: u64 = 0;
    let mut index: u32 = 0;
    for ev in events {
        match &ev.event {
            Some(Event::Send(p)) | Some(Event::SendOneWay(p)) => {
                // A one-way message does not exist in length-field; it is sent like a request
                // (the runner does not use it).
                let i = index;
                index += 1;
                let mut buf = BytesMut::new();
                let r: Result<(), SendError<ProtocolError>> =
                    m.send_request(now, i, || profile.encode(&mut buf, p, max));
                match r {
                    Ok(()) => s.sent(buf.freeze()),
                    Err(_) => {
                        s.sent(Bytes::new());
                        s.complete(Kind::Refused, Some(i), None);
                    }
                }
            }
            Some(Event::Receive(bytes)) => {
                if m.is_failed() {
                    continue;
                }
                let (frames, err) = dec.feed(bytes);
                for f in &frames {
                    match m.receive() {
                        Received::Reply(i) => s.complete(Kind::Reply, Some(i), Some(lf_frame(f))),
                        Received::Unmatched => s.complete(Kind::Unmatched, None, Some(lf_frame(f))),
                        Received::PeerRequest | Received::Ignored => {}
                    }
                }
                if let Some(e) = err {
                    s.resp.error = Some(perr(&e));
                    for i in m.fail() {
                        s.complete(Kind::Failed, Some(i), None);
                    }
                }
            }
            Some(Event::AdvanceMs(t)) => {
                now += *t as u64;
                let ex = m.expire(now);
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
    s.resp
}
