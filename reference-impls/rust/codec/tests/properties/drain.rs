//! The servers' in-place answers (`drain_complete`, `drain_requests`): they deliver exactly what
//! decode alone does, valid or not, in any split.

use bytes::Bytes;
use frameproof_codec::length_field::LengthFieldDecoder;
use frameproof_codec::rpc::{self, RpcDecoder, RpcFrame};
use frameproof_codec::standard::{self, StandardDecoder};
use frameproof_codec::websocket::{self, Role, WsDecoder, WsFrame};
use frameproof_codec::FrameDecoder;
use proptest::prelude::*;

use crate::common::{chunk_ends, cuts, key, lf_wire, std_wire};
use crate::rpc::{rpc_frame, rpc_wire};
use crate::standard_length_field::{profile_strategy, std_frame};
use crate::websocket::{ws_frame, ws_message};

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
            valid.extend(std_wire(*flag, *seq, p, 0).unwrap());
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
            valid.extend(lf_wire(profile, p, 0).unwrap());
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
