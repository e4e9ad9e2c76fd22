use super::*;
use crate::testutil::hex;

fn decode_all(max: u64, chunks: &[&[u8]]) -> (Vec<RpcFrame>, Option<(&'static str, u64)>) {
    let (f, e) = RpcDecoder::new(max).decode_stream(chunks.iter().copied());
    (f, e.map(|e| (e.requirement, e.offset)))
}

const UPSTREAM_REQUEST: &str = "47 52 50 43 01 01 04 00 00 00 00 01 00 00 00 1d \
    00 10 42 65 6e 63 68 45 63 68 6f 53 65 72 76 69 63 65 00 04 65 63 68 6f 68 65 6c 6c 6f";

/// fp-raw-echo's rewriter answers a well-formed stream byte for byte as the echo session
/// does (unary with every call mode and payload sizes across the u16/u32 edges; a stream),
/// in any split, and counts the frames.
#[test]
fn rewriter_answers_like_the_session_in_any_split() {
    let p = Rpc::new(0);
    let mut unary = BytesMut::new();
    for (i, len) in [0usize, 1, 47, 300, 70000].iter().enumerate() {
        let mut f = RpcFrame::echo_call(i as u32 + 7, Bytes::from(vec![i as u8 + 1; *len]));
        f.flags = i as u8 & MODE_MASK;
        encode(&mut unary, &f, 0).unwrap();
    }
    let mut stream = BytesMut::new();
    let mut init = RpcFrame::new(STREAM_INIT, 0, 9);
    init.service = Bytes::from_static(ECHO_SERVICE);
    init.method = Bytes::from_static(ECHO_METHOD);
    encode(&mut stream, &init, 0).unwrap();
    for len in [3usize, 128, 0] {
        let mut d = RpcFrame::new(STREAM_DATA, 0, 9);
        d.payload = Bytes::from(vec![5u8; len]);
        encode(&mut stream, &d, 0).unwrap();
    }
    encode(&mut stream, &RpcFrame::new(STREAM_END, 0, 9), 0).unwrap();
    for (wire, ep, frames) in [(&unary, "unary", 5u64), (&stream, "stream", 5)] {
        let mut want = BytesMut::new();
        let mut sess = p.session(ep, false).unwrap();
        sess.extend(wire);
        sess.process(&mut want);
        for split in [1usize, 2, 15, 16, 17, 19, 40, 4096, wire.len()] {
            let mut w = p.rewriter(true).unwrap();
            let mut got = Vec::new();
            for c in wire.chunks(split) {
                w.rewrite(c, &mut got);
            }
            assert_eq!(got, &want[..], "{ep}, split {split}");
            assert_eq!(w.frames(), frames, "{ep}, split {split}");
            let mut counting = p.rewriter(false).unwrap();
            let mut none = Vec::new();
            counting.rewrite(wire, &mut none);
            assert!(none.is_empty() && counting.frames() == frames);
        }
    }
}

#[test]
fn decodes_the_upstream_request_in_any_split() {
    let wire = hex(UPSTREAM_REQUEST);
    for cut in 0..=wire.len() {
        let (frames, err) = decode_all(0, &[&wire[..cut], &wire[cut..]]);
        assert_eq!(err, None, "cut {cut}");
        assert_eq!(frames.len(), 1);
        let f = &frames[0];
        assert_eq!((f.kind, f.flags, f.id), (1, 4, 1));
        assert_eq!(&f.service[..], b"BenchEchoService");
        assert_eq!(&f.method[..], b"echo");
        assert_eq!(&f.payload[..], b"hello");
        let mut out = BytesMut::new();
        encode(&mut out, f, 0).unwrap();
        assert_eq!(&out[..], &wire[..]);
    }
}

#[test]
fn header_errors_are_judged_when_the_header_is_complete() {
    let good = hex("47 52 50 43 01 12 00 00 00 00 00 07 00 00 00 01 61");
    let cases: [(&str, &str); 5] = [
        (
            "48 52 50 43 01 12 00 00 00 00 00 07 00 00 00 00",
            "RPC-HDR-2",
        ),
        (
            "47 52 50 43 02 12 00 00 00 00 00 07 00 00 00 00",
            "RPC-HDR-3",
        ),
        (
            "47 52 50 43 01 15 00 00 00 00 00 07 00 00 00 00",
            "RPC-HDR-4",
        ),
        (
            "47 52 50 43 01 13 00 00 00 00 00 07 00 00 00 03",
            "RPC-BODY-5",
        ),
        (
            "47 52 50 43 01 12 00 00 00 00 00 07 ff ff ff ff",
            "RPC-LIM-1",
        ),
    ];
    for (h, req) in cases {
        let bad = hex(h);
        let mut wire = good.clone();
        wire.extend(&bad);
        let (frames, err) = decode_all(0, &[&wire]);
        assert_eq!((frames.len(), err), (1, Some((req, 17))), "{req}");
        // 15 bytes of the bad header: truncation, whatever they hold
        let (_, err) = decode_all(0, &[&wire[..wire.len() - 1]]);
        assert_eq!(err, Some(("RPC-STR-3", 17)), "{req}");
    }
}

#[test]
fn body_errors_and_truncation() {
    // REQUEST body of 1 byte, RESPONSE of 1 byte, INIT whose method runs past the body
    let (_, err) = decode_all(
        0,
        &[&hex("47 52 50 43 01 01 00 00 00 00 00 00 00 00 00 01 00")],
    );
    assert_eq!(err, Some(("RPC-BODY-1", 0)));
    let (_, err) = decode_all(
        0,
        &[&hex("47 52 50 43 01 02 00 00 00 00 00 00 00 00 00 01 00")],
    );
    assert_eq!(err, Some(("RPC-BODY-2", 0)));
    let (_, err) = decode_all(
        0,
        &[&hex(
            "47 52 50 43 01 10 00 00 00 00 00 00 00 00 00 05 00 01 61 00 02",
        )],
    );
    assert_eq!(err, Some(("RPC-BODY-3", 0)));
    // a body cut short: truncated, not a body error
    let (_, err) = decode_all(
        0,
        &[&hex("47 52 50 43 01 01 00 00 00 00 00 00 00 00 00 09 00")],
    );
    assert_eq!(err, Some(("RPC-STR-3", 0)));
    // limit 4: a 5-byte body is refused from the header alone
    let (_, err) = decode_all(
        4,
        &[&hex("47 52 50 43 01 12 00 00 00 00 00 00 00 00 00 05")],
    );
    assert_eq!(err, Some(("RPC-LIM-1", 0)));
}

#[test]
fn encoder_refusals() {
    let mut f = RpcFrame::echo_call(0, Bytes::from_static(b"x"));
    let refused = |f: &RpcFrame, max| {
        let mut out = BytesMut::new();
        let e = encode(&mut out, f, max).unwrap_err();
        assert!(out.is_empty());
        e.requirement
    };
    assert_eq!(refused(&f, 23), "RPC-LIM-2");
    f.version = 2;
    assert_eq!(refused(&f, 0), "RPC-HDR-3");
    f.version = 1;
    f.kind = 0x55;
    assert_eq!(refused(&f, 0), "RPC-HDR-4");
    f.kind = STREAM_END as u32;
    assert_eq!(refused(&f, 0), "RPC-BODY-5");
    f.kind = RESPONSE as u32;
    f.error_code = 65536;
    assert_eq!(refused(&f, 0), "RPC-BODY-2");
    let mut g = RpcFrame::echo_call(0, Bytes::new());
    g.method = Bytes::from(vec![b'm'; 65536]);
    assert_eq!(refused(&g, 0), "RPC-BODY-6");
}

fn serve(p: &Rpc, endpoint: Option<&str>, wire: &[u8]) -> (Vec<u8>, Served) {
    let mut s = match endpoint {
        Some(e) => p.session(e, false).unwrap(),
        None => p.net_session(false).unwrap(),
    };
    let mut out = BytesMut::new();
    s.extend(wire);
    let r = s.finish(&mut out);
    (out.to_vec(), r)
}

fn enc(f: &RpcFrame) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode(&mut out, f, 0).unwrap();
    out.to_vec()
}

#[test]
fn unary_endpoint_echoes_and_closes_on_other_types() {
    let p = Rpc::new(0);
    let mut call = RpcFrame::echo_call(5, Bytes::from_static(b"hi"));
    call.flags = 0x01;
    let mut other = RpcFrame::echo_call(6, Bytes::from_static(b"x"));
    other.service = Bytes::from_static(b"Nope");
    let mut wire = enc(&call);
    wire.extend(enc(&other));
    let at = wire.len() as u64;
    wire.extend(enc(&RpcFrame::new(STREAM_END, 0, 7)));
    wire.extend(enc(&call));
    let (out, r) = serve(&p, Some(""), &wire);
    let mut want = hex("47 52 50 43 01 02 05 00 00 00 00 05 00 00 00 04 00 00 68 69");
    want.extend(hex("47 52 50 43 01 02 04 00 00 00 00 06 00 00 00 02 00 02"));
    assert_eq!(out, want);
    assert!(r.closed);
    let e = r.error.unwrap();
    assert_eq!((e.requirement, e.offset), ("RPC-ECHO-4", at));
}

/// RPC-ECHO-8, RPC-MODE-1/2: `unary_only` is echoed in call mode 0 and METHOD_NOT_FOUND (empty
/// payload, the id, the mode with END_STREAM) in modes 1-3; `echo` after it in every mode; a
/// STREAM_INIT naming it is cancelled (RPC-STREAM-6).
#[test]
fn unary_only_is_routed_by_call_mode() {
    let p = Rpc::new(0);
    let mut wire = Vec::new();
    let mut want = Vec::new();
    for (i, flags) in [0u8, 4, 1, 5, 2, 6, 3, 7].into_iter().enumerate() {
        let id = 0x8000_0000 | i as u32;
        let mut call = RpcFrame::echo_call(id, Bytes::from_static(b"pay"));
        call.method = Bytes::from_static(UNARY_ONLY_METHOD);
        call.flags = flags;
        wire.extend(enc(&call));
        let mut r = RpcFrame::new(RESPONSE, (flags & MODE_MASK) | END_STREAM, id);
        if flags & MODE_MASK == 0 {
            r.payload = call.payload.clone();
        } else {
            r.error_code = CODE_METHOD_NOT_FOUND.into();
        }
        want.extend(enc(&r));
    }
    let mut echo = RpcFrame::echo_call(9, Bytes::from_static(b"e"));
    echo.flags = 0x02;
    wire.extend(enc(&echo));
    want.extend(hex("47 52 50 43 01 02 06 00 00 00 00 09 00 00 00 03 00 00 65"));
    assert_eq!(
        &want[..21],
        &hex("47 52 50 43 01 02 04 00 80 00 00 00 00 00 00 05 00 00 70 61 79")[..]
    );
    assert_eq!(
        &want[42..60],
        &hex("47 52 50 43 01 02 05 00 80 00 00 02 00 00 00 02 00 03")[..]
    );
    for ep in [Some(""), None] {
        let (out, r) = serve(&p, ep, &wire);
        assert_eq!(out, want, "{ep:?}");
        assert_eq!((r.closed, r.error), (true, None));
        // byte by byte, each frame answered as it completes
        let mut s = match ep {
            Some(e) => p.session(e, false).unwrap(),
            None => p.net_session(false).unwrap(),
        };
        let mut out = BytesMut::new();
        for b in &wire {
            s.extend(std::slice::from_ref(b));
            s.process(&mut out);
        }
        s.finish(&mut out);
        assert_eq!(out.to_vec(), want, "{ep:?} byte by byte");
    }
    let mut init = RpcFrame::new(STREAM_INIT, 0, 7);
    init.service = Bytes::from_static(ECHO_SERVICE);
    init.method = Bytes::from_static(UNARY_ONLY_METHOD);
    for ep in [Some("stream"), None] {
        let (out, _) = serve(&p, ep, &enc(&init));
        assert_eq!(out, hex("47 52 50 43 01 14 00 00 00 00 00 07 00 00 00 00"), "{ep:?}");
    }
}

#[test]
fn stream_endpoint_state_machine_and_first_frame_choice() {
    let p = Rpc::new(0);
    let mut init = RpcFrame::new(STREAM_INIT, 0, 7);
    init.service = Bytes::from_static(ECHO_SERVICE);
    init.method = Bytes::from_static(ECHO_METHOD);
    let mut data = RpcFrame::new(STREAM_DATA, 0, 99);
    data.payload = Bytes::from_static(b"abc");
    let mut wire = enc(&RpcFrame::new(STREAM_DATA, 0, 3)); // before INIT: cancelled
    wire.extend(enc(&init));
    wire.extend(enc(&data));
    wire.extend(enc(&init)); // second INIT: cancels the open stream
    wire.extend(enc(&init));
    wire.extend(enc(&RpcFrame::new(STREAM_END, 0, 7)));
    let mut want = hex("47 52 50 43 01 14 00 00 00 00 00 03 00 00 00 00");
    want.extend(hex("47 52 50 43 01 11 00 00 00 00 00 07 00 00 00 00"));
    want.extend(hex(
        "47 52 50 43 01 12 00 00 00 00 00 07 00 00 00 03 61 62 63",
    ));
    want.extend(hex("47 52 50 43 01 14 00 00 00 00 00 07 00 00 00 00"));
    want.extend(hex("47 52 50 43 01 11 00 00 00 00 00 07 00 00 00 00"));
    want.extend(hex("47 52 50 43 01 13 00 00 00 00 00 07 00 00 00 00"));
    for ep in [Some("stream"), None] {
        let (out, r) = serve(&p, ep, &wire);
        assert_eq!(out, want, "{ep:?}");
        assert_eq!((r.closed, r.error), (true, None));
    }
    // the network endpoint picks unary for a REQUEST first
    let (out, _) = serve(&p, None, &enc(&RpcFrame::echo_call(1, Bytes::new())));
    assert_eq!(
        out,
        hex("47 52 50 43 01 02 04 00 00 00 00 01 00 00 00 02 00 00")
    );
}

#[test]
fn client_ids_matching_and_refusals() {
    let p = Rpc::new(64);
    let mut c = p.client::<u32>(100);
    let mut out = BytesMut::new();
    c.send_request(0, 0, 3, &mut out, |b| b.copy_from_slice(b"abc"))
        .unwrap();
    assert_eq!(&out[8..12], &[0, 0, 0, 0]);
    // over the limit: refused, takes no id
    assert!(matches!(
        c.send_request(0, 1, 100, &mut BytesMut::new(), |_| {}),
        Err(SendError::Encode(_))
    ));
    assert_eq!(c.next_id, 1);
    assert!(matches!(
        c.send_one_way(1, &mut BytesMut::new(), |_| {}),
        Err(SendError::Refused(_))
    ));
    let mut resp = RpcFrame::new(RESPONSE, 5, 0);
    resp.payload = Bytes::from_static(b"abc");
    assert_eq!(
        c.receive(&RpcFrame::new(STREAM_DATA, 0, 0)),
        Received::PeerRequest
    );
    assert_eq!(c.receive(&resp), Received::Reply(0));
    assert_eq!(c.receive(&resp), Received::Unmatched);
    assert!(p.check_reply(&resp).is_err()); // flags 0x05, unary calls expect 0x04
    assert!(p.with_variant("client-stream").check_reply(&resp).is_ok());
    resp.flags = 4;
    assert!(p.check_reply(&resp).is_ok());
    resp.error_code = 2;
    assert!(p.check_reply(&resp).is_err());
}
