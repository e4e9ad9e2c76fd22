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
        Some(Request::Decode(d)) => {
            with_codec(d.codec.as_ref(), |c| Resp::Decode(decode(c, &d.chunks)))
        }
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
    Std {
        max: u64,
    },
    Lf {
        profile: Result<Profile, ProtocolError>,
        max: u64,
    },
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
        Codec::Std { max } => {
            standard::encode(&mut buf, f.flag as u8, f.sequence as u8, &f.payload, *max)
        }
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
                        Received::Unmatched => {
                            s.complete(Kind::Unmatched, None, Some(std_frame(f)))
                        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use pb::match_event::Event;

    fn codec(protocol: &str, lf: Option<(u32, i32)>, max: u64) -> Option<pb::Codec> {
        Some(pb::Codec {
            protocol: protocol.into(),
            limits: Some(pb::Limits { max_payload: max }),
            length_field: lf.map(|(offset, size)| pb::LengthFieldParams { offset, size }),
        })
    }

    fn req(r: Request) -> Resp {
        handle(pb::TesteeRequest { request: Some(r) })
    }

    fn ev(e: Event) -> pb::MatchEvent {
        pb::MatchEvent { event: Some(e) }
    }

    fn send(p: &[u8]) -> pb::MatchEvent {
        ev(Event::Send(Bytes::copy_from_slice(p)))
    }

    fn run(
        c: Option<pb::Codec>,
        timeout_ms: u32,
        events: Vec<pb::MatchEvent>,
    ) -> pb::MatchResponse {
        match req(Request::Match(pb::MatchRequest {
            codec: c,
            timeout_ms,
            events,
        })) {
            Resp::Match(m) => m,
            other => panic!("{other:?}"),
        }
    }

    /// (kind, request) pairs of the completions.
    fn kinds(m: &pb::MatchResponse) -> Vec<(Kind, u32)> {
        m.completions
            .iter()
            .map(|c| (Kind::try_from(c.kind).unwrap(), c.request))
            .collect()
    }

    #[test]
    fn hello_lists_protocols_and_features() {
        let Resp::Hello(h) = req(Request::Hello(pb::HelloRequest { harness_version: 1 })) else {
            panic!()
        };
        assert_eq!(h.harness_version, 1);
        assert_eq!(h.protocols, vec!["standard", "length-field"]);
        assert_eq!(h.features, vec!["decode", "encode", "match"]);
    }

    #[test]
    fn unknown_protocol_is_skipped() {
        let r = req(Request::Decode(pb::DecodeRequest {
            codec: codec("websocket", None, 0),
            chunks: vec![],
        }));
        assert!(matches!(r, Resp::Skipped(_)));
    }

    #[test]
    fn decode_reports_frames_then_error() {
        let chunks = vec![
            Bytes::from_static(&[0x01, 0x01, 0x01]),
            Bytes::from_static(&[0x00, 0x41, 0x01, 0x01]),
        ];
        let Resp::Decode(d) = req(Request::Decode(pb::DecodeRequest {
            codec: codec("standard", None, 0),
            chunks,
        })) else {
            panic!()
        };
        assert_eq!(d.frames.len(), 1);
        assert_eq!((d.frames[0].flag, d.frames[0].sequence), (1, 1));
        assert_eq!(&d.frames[0].payload[..], b"A");
        let e = d.error.unwrap();
        assert_eq!((e.requirement.as_str(), e.offset), ("STD-STR-3", 5));
        // Unsupported profile: LF-FMT-3 at 0, no frames.
        let Resp::Decode(d) = req(Request::Decode(pb::DecodeRequest {
            codec: codec("length-field", Some((0, 3)), 0),
            chunks: vec![Bytes::from_static(&[0, 0, 0])],
        })) else {
            panic!()
        };
        assert!(d.frames.is_empty());
        assert_eq!(d.error.unwrap().requirement, "LF-FMT-3");
    }

    #[test]
    fn encode_bytes_and_refusals() {
        use pb::encode_response::Result as E;
        let enc = |c, payload: &'static [u8]| match req(Request::Encode(pb::EncodeRequest {
            codec: c,
            frame: Some(pb::Frame {
                flag: 0xC1,
                sequence: 7,
                payload: Bytes::from_static(payload),
            }),
        })) {
            Resp::Encode(pb::EncodeResponse { result: Some(r) }) => r,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            enc(codec("standard", None, 0), b"abc"),
            E::Encoded(Bytes::from_static(&[0xC1, 7, 3, 0, b'a', b'b', b'c']))
        );
        assert_eq!(
            enc(codec("length-field", None, 0), b"abc"),
            E::Encoded(Bytes::from_static(&[3, 0, b'a', b'b', b'c']))
        );
        let E::Error(e) = enc(codec("standard", None, 2), b"abc") else {
            panic!()
        };
        assert_eq!(e.requirement, "STD-LIM-2");
        let E::Error(e) = enc(codec("length-field", Some((0, -1)), 0), b"abc") else {
            panic!()
        };
        assert_eq!(e.requirement, "LF-FMT-3");
    }

    #[test]
    fn standard_match_script() {
        let mut events = vec![
            send(b"a"),
            ev(Event::SendOneWay(Bytes::from_static(b"b"))),
            send(b"c"),
        ];
        // Reply to request 2 (seq 3), an error reply... to request 0 (seq 1), a peer request,
        // and an unmatched reply.
        events.push(ev(Event::Receive(Bytes::from_static(&[
            0x81, 3, 0, 0, 0xC1, 1, 1, 0, b'x', 0x01, 9, 0, 0, 0x81, 200, 0, 0,
        ]))));
        events.push(send(b"d")); // seq 4, request 3
        events.push(ev(Event::AdvanceMs(2999)));
        events.push(ev(Event::AdvanceMs(1)));
        let m = run(codec("standard", None, 0), 0, events);
        assert_eq!(m.sent.len(), 4);
        assert_eq!(&m.sent[0][..], &[0x01, 1, 1, 0, b'a']);
        assert_eq!(&m.sent[1][..], &[0x41, 2, 1, 0, b'b']);
        assert_eq!(&m.sent[2][..], &[0x01, 3, 1, 0, b'c']);
        assert_eq!(&m.sent[3][..], &[0x01, 4, 1, 0, b'd']);
        assert_eq!(
            kinds(&m),
            vec![
                (Kind::Reply, 2),
                (Kind::Reply, 0),
                (Kind::Unmatched, 0),
                (Kind::Timeout, 3)
            ]
        );
        assert_eq!(m.completions[1].frame.as_ref().unwrap().flag, 0xC1);
        assert!(m.error.is_none());
    }

    #[test]
    fn standard_refuses_a_busy_sequence() {
        let events: Vec<_> = (0..257).map(|_| send(b"")).collect();
        let m = run(codec("standard", None, 0), 0, events);
        assert_eq!(kinds(&m), vec![(Kind::Refused, 256)]);
        assert!(m.sent[256].is_empty());
        assert_eq!(m.sent[255][1], 0); // the 256th request took sequence 0
    }

    #[test]
    fn length_field_timeout_fails_the_connection() {
        let events = vec![
            send(b"a"),
            ev(Event::AdvanceMs(50)),
            send(b"b"),
            ev(Event::Receive(Bytes::from_static(&[1, 0]))), // partial reply
            ev(Event::AdvanceMs(60)),                        // request 0 expires at 100
            ev(Event::Receive(Bytes::from_static(b"a"))),
            send(b"c"),
        ];
        let m = run(codec("length-field", None, 0), 100, events);
        assert_eq!(
            kinds(&m),
            vec![(Kind::Timeout, 0), (Kind::Failed, 1), (Kind::Refused, 2)]
        );
        assert!(m.sent[2].is_empty());
    }

    #[test]
    fn decode_error_in_match_fails_pending() {
        let events = vec![
            send(b"a"),
            send(b"b"),
            send(b"c"),
            ev(Event::Receive(Bytes::from_static(&[
                1, 0, b'a', 0xFF, 0xFF,
            ]))),
        ];
        // max payload 10: 0xFFFF is LF-LIM-1 at offset 3.
        let m = run(codec("length-field", None, 10), 0, events);
        assert_eq!(
            kinds(&m),
            vec![(Kind::Reply, 0), (Kind::Failed, 1), (Kind::Failed, 2)]
        );
        let e = m.error.unwrap();
        assert_eq!((e.requirement.as_str(), e.offset), ("LF-LIM-1", 3));
    }
}
