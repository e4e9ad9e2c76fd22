//! `standard` and `length-field`: round trips in any split, outcomes independent of the split,
//! the limits, and the echo sessions against the serve model.

use bytes::Bytes;
use frameproof_codec::length_field::LengthField;
use frameproof_codec::length_field::{LengthFieldDecoder, LengthSize, Profile};
use frameproof_codec::standard::Standard;
use frameproof_codec::standard::{self, StandardDecoder};
use proptest::prelude::*;

use crate::common::{check_serve, cuts, key, lf_wire, payload_strategy, run, serve, std_wire};

/// STD-ECHO-1/2: a request (bits 7 and 6 clear) gets flag 0x80 | kind, same sequence and payload.
fn standard_reply(f: &standard::StdFrame) -> Vec<u8> {
    if f.flag & 0xC0 != 0 {
        return Vec::new();
    }
    std_wire(0x80 | (f.flag & 0x3F), f.sequence, &f.payload, u64::MAX).unwrap()
}

pub(crate) fn std_frame() -> impl Strategy<Value = (u8, u8, Vec<u8>)> {
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

pub(crate) fn profile_strategy() -> impl Strategy<Value = Profile> {
    (0u32..5, size_strategy()).prop_map(|(offset, size)| Profile { offset, size })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn standard_round_trip_any_split(frames in proptest::collection::vec(std_frame(), 0..8), cuts in cuts()) {
        let mut wire = Vec::new();
        for (flag, seq, p) in &frames {
            wire.extend(std_wire(*flag, *seq, p, 0).unwrap());
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
        let enc = std_wire(0x01, 1, &payload, max);
        let big = std_wire(0x01, 1, &payload, 0).unwrap();
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
            let enc = lf_wire(profile, p, 0).unwrap();
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
        let wire = lf_wire(p, &payload, 0).unwrap();
        // Minimal: the last length byte has no continuation bit and is non-zero unless len < 128.
        let w = p.header_len(len);
        prop_assert_eq!(wire[w - 1] & 0x80, 0);
        prop_assert!(w == 1 || wire[w - 1] != 0);
        let (got, err) = run(LengthFieldDecoder::new(p, 0), &wire, &[1, 2]);
        prop_assert_eq!(err, None);
        prop_assert_eq!(got.len(), 1);
        prop_assert_eq!(got[0].len(), len);
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
            wire.extend(std_wire(*flag, *seq, p, 0).unwrap());
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
            wire.extend(lf_wire(profile, p, 0).unwrap());
        }
        wire.extend(tail);
        let cuts: Vec<usize> = cuts.into_iter().map(|c| c % (wire.len() + 1)).collect();
        let p = LengthField { profile, max_payload: max };
        let reply = |f: &Bytes| lf_wire(profile, f, u64::MAX).unwrap();
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
    let mut wire = std_wire(0x01, 1, b"ok", 0).unwrap();
    wire.extend([0x01, 2, 11, 0]); // STD-LIM-1 at offset 6
    wire.extend(std_wire(0x01, 3, b"late", 0).unwrap());
    for cut in 0..=wire.len() {
        let (written, closed, err) = serve(&p, &wire, &[cut]);
        assert!(closed);
        assert_eq!(err, Some(("STD-LIM-1", 6)), "cut {cut}");
        assert_eq!(written.concat(), std_wire(0x81, 1, b"ok", 0).unwrap());
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
    let full = lf_wire(p.profile, b"abc", 0).unwrap();
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
