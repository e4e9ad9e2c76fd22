//! `rpc`: round trips in any split, outcomes independent of the split, the unary endpoint
//! against the serve model.

use frameproof_codec::rpc::{self, Rpc, RpcDecoder, RpcFrame};
use proptest::prelude::*;

use crate::common::{check_serve, cuts, key, payload_strategy, run};

pub(crate) fn rpc_frame() -> impl Strategy<Value = RpcFrame> {
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

pub(crate) fn rpc_wire(frames: &[RpcFrame]) -> Vec<u8> {
    let mut out = bytes::BytesMut::new();
    for f in frames {
        rpc::encode(&mut out, f, 0).unwrap();
    }
    out.to_vec()
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

    /// RPC-ECHO-1/3, RPC-MODE-2, RPC-ECHO-8: the unary endpoint answers every REQUEST as the
    /// frames complete; `unary_only` is routed in call mode 0 only.
    #[test]
    fn rpc_unary_session_any_split(calls in proptest::collection::vec((any::<u8>(), any::<u32>(), payload_strategy(), 0u8..3), 0..6),
                                   cuts in cuts()) {
        let frames: Vec<RpcFrame> = calls.into_iter().map(|(flags, id, p, method)| {
            let mut f = RpcFrame::echo_call(id, p.into());
            f.flags = flags;
            match method {
                1 => f.method = bytes::Bytes::from_static(b"nope"),
                2 => f.method = bytes::Bytes::from_static(rpc::UNARY_ONLY_METHOD),
                _ => {}
            }
            f
        }).collect();
        let reply = |f: &RpcFrame| {
            let ok = f.method == rpc::ECHO_METHOD || (f.method == rpc::UNARY_ONLY_METHOD && f.flags & 3 == 0);
            let mut r = RpcFrame::new(rpc::RESPONSE, (f.flags & 3) | 4, f.id);
            r.error_code = if ok { 0 } else { 3 };
            if ok { r.payload = f.payload.clone(); }
            rpc_wire(&[r])
        };
        check_serve(&Rpc::new(0), &rpc_wire(&frames), &cuts, reply)?;
    }
}
