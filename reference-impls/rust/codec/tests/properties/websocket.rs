//! `websocket`: round trips in any split, outcomes independent of the split (either role), the
//! echo session against the serve model.

use frameproof_codec::websocket::{self, Role, WebSocket, WsDecoder, WsFrame};
use proptest::prelude::*;

use crate::common::{check_serve, cuts, key, payload_strategy, run};

/// A masked client frame (or an unmasked server frame with `key` None), FIN set.
pub(crate) fn ws_frame(opcode: u8, payload: &[u8], key: Option<[u8; 4]>) -> WsFrame {
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

pub(crate) fn ws_message() -> impl Strategy<Value = (u8, Vec<u8>, [u8; 4])> {
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
