//! Property tests: encode/decode round trips, independence from how the stream is split into
//! chunks (STD-STR-1, LF-STR-1), error classification that does not depend on the split, and
//! the matchers against simple models.

use bytes::Bytes;
use frameproof_codec::length_field::{LengthFieldDecoder, LengthSize, Profile};
use frameproof_codec::matcher::{FifoMatcher, Received, SequenceMatcher};
use frameproof_codec::standard::{self, StandardDecoder};
use frameproof_codec::{FrameDecoder, ProtocolError};
use proptest::prelude::*;

type Outcome<F> = (Vec<F>, Option<ProtocolError>);

/// Feeds `data` split at `cuts` (sorted, deduplicated here), then ends the stream.
fn run<D: FrameDecoder>(mut d: D, data: &[u8], cuts: &[usize]) -> Outcome<D::Frame> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(data.len())).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut frames = Vec::new();
    let mut prev = 0;
    for &c in cuts.iter().chain(std::iter::once(&data.len())) {
        let (f, e) = d.feed(&data[prev..c]);
        frames.extend(f);
        if e.is_some() {
            return (frames, e);
        }
        prev = c;
    }
    let e = d.finish().err();
    (frames, e)
}

/// Drops the free-text message so outcomes compare on requirement and offset only.
fn key(e: Option<ProtocolError>) -> Option<(&'static str, u64)> {
    e.map(|e| (e.requirement, e.offset))
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
                prop_assert_eq!(m.receive(0x81, seq), want);
            }
            prop_assert_eq!(m.pending(), model.len());
        }
    }
}
