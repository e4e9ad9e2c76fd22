//! The matchers against simple models.

use frameproof_codec::matcher::{FifoMatcher, Received, RequestMatcher, SequenceMatcher};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

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
}
