//! Property tests: encode/decode round trips, independence from how the stream is split into
//! chunks (STD-STR-1, LF-STR-1), error classification that does not depend on the split, the
//! matchers against simple models, and the server sessions (what they write after each chunk,
//! for any split, against a model built from the decoder).

use bytes::Bytes;
use frameproof_codec::length_field::LengthField;
use frameproof_codec::length_field::{LengthFieldDecoder, LengthSize, Profile};
use frameproof_codec::matcher::{FifoMatcher, Received, SequenceMatcher};
use frameproof_codec::protocol::{Protocol, ServerSession};
use frameproof_codec::standard::Standard;
use frameproof_codec::standard::{self, StandardDecoder};
use frameproof_codec::{FrameDecoder, ProtocolError};
use proptest::prelude::*;

type Outcome<F> = (Vec<F>, Option<ProtocolError>);

/// Feeds `data` split at `cuts` (sorted, deduplicated here), then ends the stream.
fn run<D: FrameDecoder>(mut d: D, data: &[u8], cuts: &[usize]) -> Outcome<D::Frame> {
    let ends = chunk_ends(data.len(), cuts);
    let starts = std::iter::once(0).chain(ends.clone());
    d.decode_stream(starts.zip(ends).map(|(a, b)| &data[a..b]))
}

/// Where the chunks of a stream of `len` bytes cut at `cuts` end (sorted, deduplicated, the
/// last one `len`).
fn chunk_ends(len: usize, cuts: &[usize]) -> Vec<usize> {
    let mut ends: Vec<usize> = cuts.iter().map(|&c| c.min(len)).collect();
    ends.push(len);
    ends.sort_unstable();
    ends.dedup();
    ends
}

/// Drops the free-text message so outcomes compare on requirement and offset only.
fn key(e: Option<ProtocolError>) -> Option<(&'static str, u64)> {
    e.map(|e| (e.requirement, e.offset))
}

/// What a server session did with a stream: the bytes written after each chunk (the last entry
/// after EOF), and the close.
type ServeOutcome = (Vec<Vec<u8>>, bool, Option<(&'static str, u64)>);

/// Feeds `data` split at `cuts` to a fresh session of `p`, then signals EOF (stopping early
/// when the session closes), as the testee's `serve` does.
fn serve<P: Protocol>(p: &P, data: &[u8], cuts: &[usize]) -> ServeOutcome {
    let mut s = p.session("", false).unwrap();
    let mut written = Vec::new();
    let mut prev = 0;
    for c in chunk_ends(data.len(), cuts) {
        let mut out = bytes::BytesMut::new();
        s.extend(&data[prev..c]);
        let r = s.process(&mut out);
        written.push(out.to_vec());
        if r.closed {
            return (written, true, key(r.error));
        }
        prev = c;
    }
    let mut out = bytes::BytesMut::new();
    let r = s.finish(&mut out);
    written.push(out.to_vec());
    (written, r.closed, key(r.error))
}

/// The model: decode the whole stream, reply to each frame with `reply`; the error is the
/// decoder's (at EOF included).
fn serve_model<P: Protocol>(
    p: &P,
    data: &[u8],
    reply: impl Fn(&P::Frame) -> Vec<u8>,
) -> (Vec<u8>, Option<(&'static str, u64)>) {
    let (frames, err) = run(p.decoder(), data, &[]);
    (frames.iter().flat_map(reply).collect(), key(err))
}

/// Checks a session against the model for one split: the same bytes in all, the same close,
/// and after each chunk exactly the replies to the frames that chunk completed.
fn check_serve<P: Protocol>(
    p: &P,
    data: &[u8],
    cuts: &[usize],
    reply: impl Fn(&P::Frame) -> Vec<u8> + Copy,
) -> Result<(), TestCaseError> {
    let (written, closed, err) = serve(p, data, cuts);
    let (want, want_err) = serve_model(p, data, reply);
    prop_assert!(closed, "EOF closes");
    prop_assert_eq!(err, want_err);
    prop_assert_eq!(written.concat(), want);
    // Chunk by chunk: the bytes written so far are the replies to the frames complete in the
    // prefix fed so far (a decoder fed the prefix, without EOF).
    let mut so_far: Vec<u8> = Vec::new();
    for (i, c) in chunk_ends(data.len(), cuts)
        .into_iter()
        .enumerate()
        .take(written.len())
    {
        so_far.extend(&written[i]);
        let mut d = p.decoder();
        let (frames, _) = d.feed(&data[..c]);
        let expected: Vec<u8> = frames.iter().flat_map(reply).collect();
        prop_assert_eq!(&so_far, &expected, "after chunk {} (bytes ..{})", i, c);
    }
    Ok(())
}

/// STD-ECHO-1/2: a request (bits 7 and 6 clear) gets flag 0x80 | kind, same sequence and payload.
fn standard_reply(f: &standard::StdFrame) -> Vec<u8> {
    if f.flag & 0xC0 != 0 {
        return Vec::new();
    }
    standard::encode_to_vec(0x80 | (f.flag & 0x3F), f.sequence, &f.payload, u64::MAX).unwrap()
}

fn payload_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..64),
        2 => proptest::collection::vec(any::<u8>(), 64..1500),
        1 => (65530usize..65540).prop_map(|n| vec![0xA5; n]),
    ]
}

fn std_frame() -> impl Strategy<Value = (u8, u8, Vec<u8>)> {
    (any::<u8>(), any::<u8>(), payload_strategy())
}

fn size_strategy() -> impl Strategy<Value = LengthSize> {
    prop_oneof![
        Just(LengthSize::U8),
        Just(LengthSize::U16Le),
        Just(LengthSize::U32Le),
        Just(LengthSize::U16Be),
        Just(LengthSize::U32Be),
        Just(LengthSize::Varint),
    ]
}

fn profile_strategy() -> impl Strategy<Value = Profile> {
    (0u32..5, size_strategy()).prop_map(|(offset, size)| Profile { offset, size })
}

fn cuts() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0usize..200_000, 0..12)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn standard_round_trip_any_split(frames in proptest::collection::vec(std_frame(), 0..8), cuts in cuts()) {
        let mut wire = Vec::new();
        for (flag, seq, p) in &frames {
            wire.extend(standard::encode_to_vec(*flag, *seq, p, 0).unwrap());
        }
        // Cuts also land inside headers: add one inside every header.
        let mut cuts = cuts;
        let mut at = 0;
        for (_, _, p) in &frames {
            cuts.push(at + 1 + p.len() % 7);
            at += standard::header_len(p.len()) + p.len();
        }
        let (got, err) = run(StandardDecoder::new(0), &wire, &cuts);
        prop_assert_eq!(err, None);
        prop_assert_eq!(got.len(), frames.len());
        for (g, (flag, seq, p)) in got.iter().zip(&frames) {
            prop_assert_eq!(g.flag, *flag);
            prop_assert_eq!(g.sequence, *seq);
            prop_assert_eq!(&g.payload[..], &p[..]);
        }
    }

    #[test]
    fn standard_outcome_is_split_independent(data in proptest::collection::vec(any::<u8>(), 0..300),
                                             max in prop_oneof![Just(0u64), 0u64..300],
                                             cuts in proptest::collection::vec(0usize..300, 0..20)) {
        let (whole, e1) = run(StandardDecoder::new(max), &data, &[]);
        let (split, e2) = run(StandardDecoder::new(max), &data, &cuts);
        prop_assert_eq!(&whole, &split);
        prop_assert_eq!(key(e1.clone()), key(e2));
        // Byte by byte as well.
        let every: Vec<usize> = (1..data.len()).collect();
        let (bytewise, e3) = run(StandardDecoder::new(max), &data, &every);
        prop_assert_eq!(&whole, &bytewise);
        prop_assert_eq!(key(e1), key(e3));
    }

    #[test]
    fn standard_limit_is_enforced_both_ways(len in 0usize..2000, max in 1u64..2000) {
        let payload = vec![1u8; len];
        let enc = standard::encode_to_vec(0x01, 1, &payload, max);
        let big = standard::encode_to_vec(0x01, 1, &payload, 0).unwrap();
        let (frames, err) = run(StandardDecoder::new(max), &big[..4], &[]);
        if len as u64 > max {
            prop_assert_eq!(enc.unwrap_err().requirement, "STD-LIM-2");
            // Rejected from the 4 header bytes alone.
            prop_assert_eq!(key(err), Some(("STD-LIM-1", 0)));
        } else {
            prop_assert!(enc.is_ok());
            prop_assert!(frames.len() == 1 || key(err) == Some(("STD-STR-3", 0)));
        }
    }

    #[test]
    fn length_field_round_trip_any_split(profile in profile_strategy(),
                                         payloads in proptest::collection::vec(payload_strategy(), 0..8),
                                         cuts in cuts()) {
        let cap = profile.size.capacity() as usize;
        let payloads: Vec<Vec<u8>> = payloads.into_iter().filter(|p| p.len() <= cap).collect();
        let mut wire = Vec::new();
        for p in &payloads {
            let enc = profile.encode_to_vec(p, 0).unwrap();
            prop_assert_eq!(enc.len(), profile.header_len(p.len()) + p.len());
            prop_assert!(enc[..profile.offset as usize].iter().all(|&b| b == 0));
            wire.extend(enc);
        }
        let mut cuts = cuts;
        let mut at = 0;
        for p in &payloads {
            cuts.push(at + profile.offset as usize + 1); // inside or just after the length field
            at += profile.header_len(p.len()) + p.len();
        }
        let (got, err) = run(LengthFieldDecoder::new(profile, 0), &wire, &cuts);
        prop_assert_eq!(err, None);
        let want: Vec<Bytes> = payloads.into_iter().map(Bytes::from).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn length_field_outcome_is_split_independent(profile in profile_strategy(),
                                                 data in proptest::collection::vec(any::<u8>(), 0..300),
                                                 max in prop_oneof![Just(0u64), 0u64..300],
                                                 cuts in proptest::collection::vec(0usize..300, 0..20)) {
        let (whole, e1) = run(LengthFieldDecoder::new(profile, max), &data, &[]);
        let (split, e2) = run(LengthFieldDecoder::new(profile, max), &data, &cuts);
        prop_assert_eq!(&whole, &split);
        prop_assert_eq!(key(e1.clone()), key(e2));
        let every: Vec<usize> = (1..data.len()).collect();
        let (bytewise, e3) = run(LengthFieldDecoder::new(profile, max), &data, &every);
        prop_assert_eq!(&whole, &bytewise);
        prop_assert_eq!(key(e1), key(e3));
    }

    #[test]
    fn varint_decodes_what_it_encodes(len in 0usize..70_000) {
        let p = Profile { offset: 0, size: LengthSize::Varint };
        let payload = vec![3u8; len];
        let wire = p.encode_to_vec(&payload, 0).unwrap();
        // Minimal: the last length byte has no continuation bit and is non-zero unless len < 128.
        let w = p.header_len(len);
        prop_assert_eq!(wire[w - 1] & 0x80, 0);
        prop_assert!(w == 1 || wire[w - 1] != 0);
        let (got, err) = run(LengthFieldDecoder::new(p, 0), &wire, &[1, 2]);
        prop_assert_eq!(err, None);
        prop_assert_eq!(got.len(), 1);
        prop_assert_eq!(got[0].len(), len);
    }

    /// The FIFO matcher completes requests in send order and never holds more than the bound.
    #[test]
    fn fifo_matcher_model(ops in proptest::collection::vec(0u8..3, 0..600)) {
        let mut m: FifoMatcher<u32> = FifoMatcher::new(1_000_000, 256);
        let mut model: std::collections::VecDeque<u32> = Default::default();
        let mut next = 0u32;
        for op in ops {
            if op < 2 {
                let r: Result<(), frameproof_codec::matcher::SendError<()>> = m.send_request(0, next, || Ok(()));
                if model.len() >= 256 {
                    prop_assert!(r.is_err());
                } else {
                    prop_assert!(r.is_ok());
                    model.push_back(next);
                }
                next += 1;
            } else {
                let want = match model.pop_front() { Some(i) => Received::Reply(i), None => Received::Unmatched };
                prop_assert_eq!(m.receive(), want);
            }
            prop_assert_eq!(m.pending(), model.len());
        }
    }

    /// The sequence matcher allocates 1, 2, ... modulo 256, never has two pending requests with
    /// one number, and replies complete exactly the request with their number.
    #[test]
    fn sequence_matcher_model(ops in proptest::collection::vec((0u8..3, any::<u8>()), 0..800)) {
        let mut m: SequenceMatcher<u32> = SequenceMatcher::new(1_000_000);
        let mut model: std::collections::HashMap<u8, u32> = Default::default();
        let mut counter: u8 = 0;
        let mut next = 0u32;
        for (op, seq) in ops {
            if op < 2 {
                let want = counter.wrapping_add(1);
                let r: Result<u8, frameproof_codec::matcher::SendError<()>> = m.send_request(0, next, |_| Ok(()));
                match model.entry(want) {
                    std::collections::hash_map::Entry::Occupied(_) => prop_assert!(r.is_err()),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        prop_assert_eq!(r, Ok(want));
                        v.insert(next);
                        counter = want;
                    }
                }
                next += 1;
            } else {
                let want = match model.remove(&seq) { Some(i) => Received::Reply(i), None => Received::Unmatched };
                prop_assert_eq!(m.receive(true, seq), want);
            }
            prop_assert_eq!(m.pending(), model.len());
        }
    }

    /// STD-ECHO-*: for any stream (valid frames, then garbage or a cut) and any split, the
    /// session writes after each chunk the replies to the frames it completed, closes on a
    /// decoding error after the replies before it, and at EOF with STD-STR-3 if a frame is
    /// unfinished.
    #[test]
    fn standard_session_any_split(frames in proptest::collection::vec(std_frame(), 0..6),
                                  tail in proptest::collection::vec(any::<u8>(), 0..12),
                                  max in prop_oneof![Just(0u64), 0u64..2000],
                                  cuts in proptest::collection::vec(0usize..4000, 0..10)) {
        let mut wire = Vec::new();
        for (flag, seq, p) in &frames {
            wire.extend(standard::encode_to_vec(*flag, *seq, p, 0).unwrap());
        }
        wire.extend(tail);
        let cuts: Vec<usize> = cuts.into_iter().map(|c| c % (wire.len() + 1)).collect();
        let p = Standard { max_payload: frameproof_codec::effective_max(max) };
        check_serve(&p, &wire, &cuts, standard_reply)?;
        let every: Vec<usize> = (1..wire.len().min(400)).collect();
        check_serve(&p, &wire, &every, standard_reply)?;
    }

    /// LF-ECHO-*: the same for every length-field profile.
    #[test]
    fn length_field_session_any_split(profile in profile_strategy(),
                                      payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..6),
                                      tail in proptest::collection::vec(any::<u8>(), 0..12),
                                      max in prop_oneof![Just(0u64), 0u64..400],
                                      cuts in proptest::collection::vec(0usize..4000, 0..10)) {
        let cap = profile.size.capacity() as usize;
        let mut wire = Vec::new();
        for p in payloads.iter().filter(|p| p.len() <= cap) {
            wire.extend(profile.encode_to_vec(p, 0).unwrap());
        }
        wire.extend(tail);
        let cuts: Vec<usize> = cuts.into_iter().map(|c| c % (wire.len() + 1)).collect();
        let p = LengthField { profile, max_payload: max };
        let reply = |f: &Bytes| profile.encode_to_vec(f, u64::MAX).unwrap();
        check_serve(&p, &wire, &cuts, reply)?;
        let every: Vec<usize> = (1..wire.len().min(400)).collect();
        check_serve(&p, &wire, &every, reply)?;
    }
}

/// A decoding error closes the session after the replies to the frames before it; nothing of
/// the later input is answered, even when it arrives in the same chunk or later.
#[test]
fn session_error_closes_after_earlier_replies() {
    let p = Standard { max_payload: 10 };
    let mut wire = standard::encode_to_vec(0x01, 1, b"ok", 0).unwrap();
    wire.extend([0x01, 2, 11, 0]); // STD-LIM-1 at offset 6
    wire.extend(standard::encode_to_vec(0x01, 3, b"late", 0).unwrap());
    for cut in 0..=wire.len() {
        let (written, closed, err) = serve(&p, &wire, &[cut]);
        assert!(closed);
        assert_eq!(err, Some(("STD-LIM-1", 6)), "cut {cut}");
        assert_eq!(
            written.concat(),
            standard::encode_to_vec(0x81, 1, b"ok", 0).unwrap()
        );
        // The session stopped at the chunk that held the bad header: no EOF entry.
        assert_eq!(written.len(), if cut >= 10 { 1 } else { 2 }, "cut {cut}");
    }
}

/// EOF inside a frame: the replies to the complete frames, then STD-STR-3 / LF-STR-3 at the
/// unfinished frame's start; a clean EOF closes without an error.
#[test]
fn session_eof_with_a_partial_frame() {
    let p = LengthField {
        profile: Profile::new(2, 2).unwrap(),
        max_payload: 0,
    };
    let full = p.profile.encode_to_vec(b"abc", 0).unwrap();
    for partial in 0..full.len() {
        let mut wire = full.clone();
        wire.extend(&full[..partial]);
        let (written, closed, err) = serve(&p, &wire, &[]);
        assert!(closed);
        assert_eq!(written.concat(), full);
        let want = if partial == 0 {
            None
        } else {
            Some(("LF-STR-3", full.len() as u64))
        };
        assert_eq!(err, want, "partial {partial}");
    }
}

// ------------------------------------------------------------------ rpc and websocket

use frameproof_codec::rpc::{self, Rpc, RpcDecoder, RpcFrame};
use frameproof_codec::websocket::{self, Role, WebSocket, WsDecoder, WsFrame};

fn rpc_frame() -> impl Strategy<Value = RpcFrame> {
    let kind = prop_oneof![
        Just(rpc::REQUEST),
        Just(rpc::RESPONSE),
        Just(rpc::HEARTBEAT),
        Just(rpc::STREAM_INIT),
        Just(rpc::STREAM_INIT_ACK),
        Just(rpc::STREAM_DATA),
        Just(rpc::STREAM_END),
    ];
    let name = proptest::collection::vec(any::<u8>(), 0..20);
    (
        kind,
        any::<u8>(),
        any::<u32>(),
        name.clone(),
        name,
        any::<u16>(),
        payload_strategy(),
    )
        .prop_map(|(kind, flags, id, service, method, code, payload)| {
            let mut f = RpcFrame::new(kind, flags, id);
            if rpc::has_names(kind as u32) {
                f.service = service.into();
                f.method = method.into();
            }
            if kind == rpc::RESPONSE {
                f.error_code = code as u32;
            }
            if !rpc::is_control(kind as u32) {
                f.payload = payload.into();
            }
            f
        })
}

fn rpc_wire(frames: &[RpcFrame]) -> Vec<u8> {
    let mut out = bytes::BytesMut::new();
    for f in frames {
        rpc::encode(&mut out, f, 0).unwrap();
    }
    out.to_vec()
}

/// A masked client frame (or an unmasked server frame with `key` None), FIN set.
fn ws_frame(opcode: u8, payload: &[u8], key: Option<[u8; 4]>) -> WsFrame {
    WsFrame {
        fin: true,
        rsv: 0,
        opcode: opcode as u32,
        masked: key.is_some(),
        mask_key: key
            .map(|k| bytes::Bytes::copy_from_slice(&k))
            .unwrap_or_default(),
        payload: bytes::Bytes::copy_from_slice(payload),
    }
}

fn ws_message() -> impl Strategy<Value = (u8, Vec<u8>, [u8; 4])> {
    (
        prop_oneof![
            Just(websocket::BINARY),
            Just(websocket::TEXT),
            Just(websocket::PING),
            Just(websocket::PONG)
        ],
        payload_strategy(),
        any::<[u8; 4]>(),
    )
        .prop_map(|(op, mut p, key)| {
            if op == websocket::TEXT {
                p = String::from_utf8_lossy(&p).into_owned().into_bytes();
            }
            if op >= 8 {
                p.truncate(125);
            }
            (op, p, key)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    /// RPC-STR-1/2, RPC-HDR-1, RPC-BODY-7: any split of frames of every type decodes to them.
    #[test]
    fn rpc_round_trip_any_split(frames in proptest::collection::vec(rpc_frame(), 0..6), cuts in cuts()) {
        let wire = rpc_wire(&frames);
        let (got, err) = run(RpcDecoder::new(0), &wire, &cuts);
        prop_assert_eq!(err, None);
        prop_assert_eq!(got, frames);
    }

    /// RPC-STR-1 for rejected streams too: frames and error do not depend on the split.
    #[test]
    fn rpc_outcome_is_split_independent(frames in proptest::collection::vec(rpc_frame(), 0..4),
                                        noise in proptest::collection::vec(any::<u8>(), 0..40),
                                        at in any::<prop::sample::Index>(),
                                        max in prop_oneof![Just(0u64), 1u64..200],
                                        cuts in proptest::collection::vec(0usize..400, 0..20)) {
        let mut wire = rpc_wire(&frames);
        let i = at.index(wire.len() + 1);
        wire.splice(i..i, noise);
        let (w, we) = run(RpcDecoder::new(max), &wire, &[]);
        let (c, ce) = run(RpcDecoder::new(max), &wire, &cuts);
        prop_assert_eq!(w, c);
        prop_assert_eq!(key(we), key(ce));
    }

    /// RPC-ECHO-1/3, RPC-MODE-2: the unary endpoint answers every REQUEST as the frames complete.
    #[test]
    fn rpc_unary_session_any_split(calls in proptest::collection::vec((any::<u8>(), any::<u32>(), payload_strategy(), any::<bool>()), 0..6),
                                   cuts in cuts()) {
        let frames: Vec<RpcFrame> = calls.into_iter().map(|(flags, id, p, other)| {
            let mut f = RpcFrame::echo_call(id, p.into());
            f.flags = flags;
            if other { f.method = bytes::Bytes::from_static(b"nope"); }
            f
        }).collect();
        let reply = |f: &RpcFrame| {
            let ok = f.method == rpc::ECHO_METHOD;
            let mut r = RpcFrame::new(rpc::RESPONSE, (f.flags & 3) | 4, f.id);
            r.error_code = if ok { 0 } else { 3 };
            if ok { r.payload = f.payload.clone(); }
            rpc_wire(&[r])
        };
        check_serve(&Rpc::new(0), &rpc_wire(&frames), &cuts, reply)?;
    }

    /// WS-STR-1/2, WS-MASK-3: masked frames in any split decode to their unmasked payloads.
    #[test]
    fn websocket_round_trip_any_split(msgs in proptest::collection::vec(ws_message(), 0..6), cuts in cuts()) {
        let mut wire = bytes::BytesMut::new();
        for (op, p, k) in &msgs {
            websocket::encode(&mut wire, &ws_frame(*op, p, Some(*k)), 0).unwrap();
        }
        let (got, err) = run(WsDecoder::new(Role::Server, 0, 0), &wire, &cuts);
        prop_assert_eq!(err, None);
        prop_assert_eq!(got.len(), msgs.len());
        for (g, (op, p, k)) in got.iter().zip(&msgs) {
            prop_assert_eq!(g, &ws_frame(*op, p, Some(*k)));
        }
    }

    /// WS-STR-1 and the UTF-8 fail-fast rule: the outcome of any byte stream (either role) does not
    /// depend on the split.
    #[test]
    fn websocket_outcome_is_split_independent(data in proptest::collection::vec(any::<u8>(), 0..300),
                                              client in any::<bool>(),
                                              max in prop_oneof![Just(0u64), 1u64..200],
                                              cuts in proptest::collection::vec(0usize..300, 0..20)) {
        let role = if client { Role::Client } else { Role::Server };
        let (w, we) = run(WsDecoder::new(role, max, max), &data, &[]);
        let (c, ce) = run(WsDecoder::new(role, max, max), &data, &cuts);
        prop_assert_eq!(w, c);
        prop_assert_eq!(key(we), key(ce));
    }

    /// WS-ECHO-1, WS-PING-1/2: messages echoed unmasked, pings answered, pongs not, in any split.
    #[test]
    fn websocket_session_any_split(msgs in proptest::collection::vec(ws_message(), 0..6), cuts in cuts()) {
        let mut wire = bytes::BytesMut::new();
        for (op, p, k) in &msgs {
            websocket::encode(&mut wire, &ws_frame(*op, p, Some(*k)), 0).unwrap();
        }
        let reply = |f: &WsFrame| {
            let mut out = bytes::BytesMut::new();
            let op = match f.opcode as u8 { websocket::PING => websocket::PONG, websocket::PONG => return Vec::new(), op => op };
            websocket::put_server_frame(&mut out, op, &f.payload);
            out.to_vec()
        };
        check_serve(&WebSocket::new(Role::Server, 0, 0), &wire, &cuts, reply)?;
    }
}

// ------------------------------------------------------------------ in-place answers (drain_complete)

/// One decoder's deliveries as comparable values: (opcode or flag, sequence, payload).
type Delivered = (Vec<(u8, u8, Vec<u8>)>, Option<(&'static str, u64)>);

/// Feeds `data` split at `cuts` to `d`, after each chunk first taking what `drain` takes in place
/// (when `in_place`), then decoding the rest as the sessions do; ends the stream.
fn deliver<D: FrameDecoder>(
    mut d: D,
    data: &[u8],
    cuts: &[usize],
    in_place: bool,
    drain: impl Fn(&mut D, &mut Vec<(u8, u8, Vec<u8>)>),
    view: impl Fn(&D::Frame) -> (u8, u8, Vec<u8>),
) -> Delivered {
    let mut got = Vec::new();
    let mut prev = 0;
    for c in chunk_ends(data.len(), cuts) {
        d.extend(&data[prev..c]);
        prev = c;
        if in_place {
            drain(&mut d, &mut got);
        }
        loop {
            match d.decode() {
                Ok(Some(f)) => got.push(view(&f)),
                Ok(None) => break,
                Err(e) => return (got, key(Some(e))),
            }
        }
    }
    (got, key(d.finish().err()))
}

fn noisy_wire(valid: Vec<u8>, noise: &[u8], at: prop::sample::Index) -> Vec<u8> {
    let mut wire = valid;
    let i = at.index(wire.len() + 1);
    wire.splice(i..i, noise.iter().copied());
    wire
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// The servers' in-place path (StandardDecoder::drain_complete, then decode for the rest)
    /// delivers exactly what decode alone does, valid or not, in any split.
    #[test]
    fn standard_drain_is_decode(frames in proptest::collection::vec(std_frame(), 0..6),
                                noise in proptest::collection::vec(any::<u8>(), 0..12),
                                at in any::<prop::sample::Index>(),
                                max in prop_oneof![Just(0u64), 0u64..2000],
                                cuts in proptest::collection::vec(0usize..4000, 0..10)) {
        let mut valid = Vec::new();
        for (flag, seq, p) in &frames {
            valid.extend(standard::encode_to_vec(*flag, *seq, p, 0).unwrap());
        }
        let wire = noisy_wire(valid, &noise, at);
        let drain = |d: &mut StandardDecoder, got: &mut Vec<(u8, u8, Vec<u8>)>| {
            d.drain_complete(|f, s, p| got.push((f, s, p.to_vec())));
        };
        let view = |f: &standard::StdFrame| (f.flag, f.sequence, f.payload.to_vec());
        let a = deliver(StandardDecoder::new(max), &wire, &cuts, true, drain, view);
        let b = deliver(StandardDecoder::new(max), &wire, &cuts, false, drain, view);
        prop_assert_eq!(a, b);
    }

    /// The same for every length-field profile (header offsets included).
    #[test]
    fn length_field_drain_is_decode(profile in profile_strategy(),
                                    payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..6),
                                    noise in proptest::collection::vec(any::<u8>(), 0..12),
                                    at in any::<prop::sample::Index>(),
                                    max in prop_oneof![Just(0u64), 0u64..400],
                                    cuts in proptest::collection::vec(0usize..4000, 0..10)) {
        let cap = profile.size.capacity() as usize;
        let mut valid = Vec::new();
        for p in payloads.iter().filter(|p| p.len() <= cap) {
            valid.extend(profile.encode_to_vec(p, 0).unwrap());
        }
        let wire = noisy_wire(valid, &noise, at);
        let drain = |d: &mut LengthFieldDecoder, got: &mut Vec<(u8, u8, Vec<u8>)>| {
            d.drain_complete(|p| got.push((0, 0, p.to_vec())));
        };
        let view = |f: &Bytes| (0, 0, f.to_vec());
        let a = deliver(LengthFieldDecoder::new(profile, max), &wire, &cuts, true, drain, view);
        let b = deliver(LengthFieldDecoder::new(profile, max), &wire, &cuts, false, drain, view);
        prop_assert_eq!(a, b);
    }

    /// The same for a server's websocket decoder: whole messages, fragments, control frames,
    /// invalid UTF-8 (the noise), limits.
    #[test]
    fn websocket_drain_is_decode(msgs in proptest::collection::vec(ws_message(), 0..6),
                                 bad_text in proptest::collection::vec(any::<u8>(), 0..8),
                                 fragment in any::<bool>(),
                                 noise in proptest::collection::vec(any::<u8>(), 0..12),
                                 at in any::<prop::sample::Index>(),
                                 max in prop_oneof![Just(0u64), 1u64..2000],
                                 cuts in cuts()) {
        let mut valid = bytes::BytesMut::new();
        for (op, p, k) in &msgs {
            websocket::encode(&mut valid, &ws_frame(*op, p, Some(*k)), 0).unwrap();
        }
        // A text message that may not be UTF-8, whole or as two fragments.
        let mut f = ws_frame(websocket::TEXT, &bad_text, Some([1, 2, 3, 4]));
        if fragment {
            f.fin = false;
            websocket::encode(&mut valid, &f, 0).unwrap();
            f = ws_frame(websocket::CONT, b"", Some([5, 6, 7, 8]));
        }
        websocket::encode(&mut valid, &f, 0).unwrap();
        let wire = noisy_wire(valid.to_vec(), &noise, at);
        let drain = |d: &mut WsDecoder, got: &mut Vec<(u8, u8, Vec<u8>)>| {
            d.drain_complete(|op, p| got.push((op, 1, p.to_vec())));
        };
        let view = |f: &WsFrame| (f.opcode as u8, f.fin as u8, f.payload.to_vec());
        let a = deliver(WsDecoder::new(Role::Server, max, max), &wire, &cuts, true, drain, view);
        let b = deliver(WsDecoder::new(Role::Server, max, max), &wire, &cuts, false, drain, view);
        prop_assert_eq!(a, b);
    }
}

/// A REQUEST's fields as one comparable byte string: id, service, method (each behind its
/// length) and payload.
fn rpc_fields(id: u32, service: &[u8], method: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut v = id.to_be_bytes().to_vec();
    for part in [service, method] {
        v.extend((part.len() as u32).to_be_bytes());
        v.extend(part);
    }
    v.extend(payload);
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// The unary endpoint's in-place path (RpcDecoder::drain_requests, then decode for the rest)
    /// delivers exactly what decode alone does, for frames of every type, noise, any split.
    #[test]
    fn rpc_drain_is_decode(frames in proptest::collection::vec(rpc_frame(), 0..6),
                           noise in proptest::collection::vec(any::<u8>(), 0..24),
                           at in any::<prop::sample::Index>(),
                           max in prop_oneof![Just(0u64), 0u64..400],
                           cuts in cuts()) {
        let wire = noisy_wire(rpc_wire(&frames), &noise, at);
        let drain = |d: &mut RpcDecoder, got: &mut Vec<(u8, u8, Vec<u8>)>| {
            d.drain_requests(|flags, id, s, m, p| got.push((rpc::REQUEST, flags, rpc_fields(id, s, m, p))));
        };
        let view = |f: &RpcFrame| (f.kind as u8, f.flags, rpc_fields(f.id, &f.service, &f.method, &f.payload));
        let a = deliver(RpcDecoder::new(max), &wire, &cuts, true, drain, view);
        let b = deliver(RpcDecoder::new(max), &wire, &cuts, false, drain, view);
        prop_assert_eq!(a, b);
    }
}
