use super::*;
use crate::testutil::hex;

fn decode_all(role: Role, chunks: &[&[u8]]) -> (Vec<WsFrame>, Option<(&'static str, u64)>) {
    let (f, e) = WsDecoder::new(role, 0, 0).decode_stream(chunks.iter().copied());
    (f, e.map(|e| (e.requirement, e.offset)))
}

#[test]
fn rfc_examples_in_any_split() {
    let masked = hex("81 85 37 fa 21 3d 7f 9f 4d 51 58");
    for cut in 0..=masked.len() {
        let (f, e) = decode_all(Role::Server, &[&masked[..cut], &masked[cut..]]);
        assert_eq!(e, None);
        assert_eq!(&f[0].payload[..], b"Hello");
        assert_eq!(&f[0].mask_key[..], &[0x37, 0xfa, 0x21, 0x3d]);
    }
    let (f, e) = decode_all(Role::Client, &[&hex("01 03 48 65 6c 80 02 6c 6f")]);
    assert_eq!(e, None);
    assert_eq!((f.len(), &f[1].payload[..]), (2, &b"lo"[..]));
    let mut out = BytesMut::new();
    encode(&mut out, &f[0], 0).unwrap();
    assert_eq!(&out[..], &hex("01 03 48 65 6c")[..]);
}

#[test]
fn mask_matches_the_byte_loop_at_every_phase() {
    let key = [1, 2, 0x80, 0xFF];
    // 128 and more: the AVX2 blocks (where the CPU has them), and the word loop after them
    for len in [
        0, 1, 15, 16, 17, 33, 100, 127, 128, 129, 160, 161, 300, 1000,
    ] {
        for phase in 0..4 {
            let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let mut fast = data.clone();
            mask(&mut fast, key, phase);
            let slow: Vec<u8> = data
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ key[(i + phase) % 4])
                .collect();
            assert_eq!(fast, slow, "len {len} phase {phase}");
        }
    }
}

#[test]
fn utf8_fails_fast_across_fragments() {
    let mut u = Utf8::default();
    assert!(u.feed(b"\xce\xba\xe1"));
    assert!(!u.is_complete());
    assert!(u.feed(b"\xbd"));
    assert!(u.feed(b"\x83"));
    assert!(u.is_complete());
    let mut u = Utf8::default();
    assert!(u.feed(b"\xed"));
    assert!(!u.feed(b"\xa0")); // a surrogate: fails at the second byte
    assert!(!Utf8::default().feed(b"a\xf4\x90"));
    assert!(!Utf8::default().feed(b"\xc0"));
    // a non-final fragment cut after its invalid byte: WS-UTF8-2 before the frame is complete
    let (_, e) = decode_all(Role::Client, &[&hex("01 05 68 ff")]);
    assert_eq!(e, Some(("WS-UTF8-2", 0)));
    let (_, e) = decode_all(Role::Client, &[&hex("81 02 68 e1")]);
    assert_eq!(e, Some(("WS-UTF8-1", 0)));
    // the second fragment completes the code point
    let (f, e) = decode_all(Role::Client, &[&hex("01 01 e1 80 02 bd 83")]);
    assert_eq!((f.len(), e), (2, None));
}

#[test]
fn header_order_and_state() {
    let cases: [(&str, Role, &str); 8] = [
        ("c1 80 00 00 00 00", Role::Server, "WS-HDR-2"),
        ("83 80 00 00 00 00", Role::Server, "WS-HDR-3"),
        ("09 80 00 00 00 00", Role::Server, "WS-CTL-1"),
        ("81 00", Role::Server, "WS-MASK-1"),
        ("81 80 00 00 00 00", Role::Client, "WS-MASK-2"),
        ("89 7e 00 7e", Role::Client, "WS-CTL-2"),
        ("82 7e 00 7d", Role::Client, "WS-LEN-3"),
        ("80 00", Role::Client, "WS-FRAG-2"),
    ];
    for (h, role, want) in cases {
        assert_eq!(decode_all(role, &[&hex(h)]).1, Some((want, 0)), "{want}");
    }
    let (_, e) = decode_all(Role::Client, &[&hex("01 00 02 00")]);
    assert_eq!(e, Some(("WS-FRAG-3", 2)));
    let (_, e) = decode_all(Role::Client, &[&hex("82 7f 80 00 00 00 00 00 00 00")]);
    assert_eq!(e, Some(("WS-LEN-4", 0)));
    let (f, e) =
        WsDecoder::new(Role::Client, 4, 6).decode_stream([&hex("02 04 61 62 63 64 00 03")[..]]);
    assert_eq!(
        (f.len(), e.map(|e| (e.requirement, e.offset))),
        (1, Some(("WS-LIM-2", 6)))
    );
    // a close frame ends the stream; a ping between fragments is delivered
    let (f, e) = decode_all(
        Role::Client,
        &[&hex("01 01 61 89 00 80 01 62 88 02 03 e8 ff")],
    );
    assert_eq!((f.len(), e), (4, None));
    let (_, e) = decode_all(Role::Client, &[&hex("88 02 03 ed")]);
    assert_eq!(e, Some(("WS-CLOSE-2", 0)));
    let (_, e) = decode_all(Role::Client, &[&hex("88 01 03")]);
    assert_eq!(e, Some(("WS-CLOSE-1", 0)));
    let (_, e) = decode_all(Role::Client, &[&hex("82 03 61")]);
    assert_eq!(e, Some(("WS-STR-3", 0)));
}

#[test]
fn session_echoes_pings_and_closes() {
    let p = WebSocket::new(Role::Server, 0, 0);
    let mut s = p.session("", false).unwrap();
    let key = [1, 2, 3, 4];
    let mut wire = BytesMut::new();
    let frag = |out: &mut BytesMut, fin, op, data: &[u8]| {
        out.put_u8(if fin { 0x80 } else { 0 } | op);
        out.put_u8(0x80 | data.len() as u8);
        out.put_slice(&key);
        let at = out.len();
        out.put_slice(data);
        mask(&mut out[at..], key, 0);
    };
    frag(&mut wire, false, TEXT, b"He");
    frag(&mut wire, true, PING, b"p");
    frag(&mut wire, true, CONT, b"llo");
    frag(&mut wire, true, CLOSE, b"\x03\xe8bye");
    s.extend(&wire);
    let mut out = BytesMut::new();
    let r = s.process(&mut out);
    assert_eq!((r.closed, r.error.clone()), (true, None));
    assert_eq!(
        &out[..],
        &hex("8a 01 70 81 05 48 65 6c 6c 6f 88 02 03 e8")[..]
    );
    // an error: the close frame of its class
    let mut s = p.session("", false).unwrap();
    s.extend(&hex("81 00"));
    let mut out = BytesMut::new();
    let r = s.process(&mut out);
    assert_eq!(r.error.unwrap().requirement, "WS-MASK-1");
    assert_eq!(&out[..], &hex("88 02 03 ea")[..]);
}

#[test]
/// fp-raw-echo's rewriter answers the handshake and a well-formed client stream (lengths at
/// the 7/16/64-bit edges, a ping, a pong, the close) byte for byte as the echo session does,
/// in any split, and closes after the close frame.
fn rewriter_answers_like_the_session_in_any_split() {
    let p = WebSocket::new(Role::Server, 0, 0);
    let mut wire = BytesMut::new();
    wire.extend_from_slice(
        b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
    let key = [1, 2, 3, 4];
    for (i, len) in [0usize, 5, 125, 126, 65535, 65536, 70001]
        .iter()
        .enumerate()
    {
        let op = if i % 2 == 0 { BINARY } else { TEXT };
        put_masked_frame(&mut wire, op, key, *len, |b| b.fill(b'a' + i as u8));
    }
    put_masked_frame(&mut wire, PING, key, 3, |b| b.copy_from_slice(b"hey"));
    put_masked_frame(&mut wire, PONG, key, 1, |b| b[0] = b'x');
    put_masked_frame(&mut wire, CLOSE, key, 2, |b| {
        b.copy_from_slice(&1000u16.to_be_bytes())
    });
    let mut want = BytesMut::new();
    let mut sess = p.net_session(false).unwrap();
    sess.extend(&wire);
    let served = sess.process(&mut want);
    assert!(served.closed && served.error.is_none());
    for split in [1usize, 2, 3, 7, 100, 4096, wire.len()] {
        let mut w = p.rewriter(true).unwrap();
        let mut got = Vec::new();
        for c in wire.chunks(split) {
            assert!(!w.closed(), "split {split}");
            w.rewrite(c, &mut got);
        }
        assert!(w.closed(), "split {split}");
        assert_eq!(w.frames(), 10, "split {split}");
        assert!(
            got == want[..],
            "split {split}: {} bytes, want {}",
            got.len(),
            want.len()
        );
    }
    // counting only: the handshake, the pong and the close are still answered
    let mut w = p.rewriter(false).unwrap();
    let mut got = Vec::new();
    w.rewrite(&wire, &mut got);
    let hs = want.len() - got.len();
    assert!(hs > 0 && got.starts_with(b"HTTP/1.1 101") && got.ends_with(&[0x88, 2, 0x03, 0xE8]));
}

#[test]
fn handshake() {
    assert_eq!(
        accept_for("dGhlIHNhbXBsZSBub25jZQ=="),
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
    let req = "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
Sec-WebSocket-Protocol: chat, frameproof.echo\r\n\r\n\x01";
    assert!(handshake_reply(&req.as_bytes()[..20]).is_none());
    let (r, used) = handshake_reply(req.as_bytes()).unwrap();
    assert!(r.ok);
    assert_eq!(used, req.len() - 1);
    let text = String::from_utf8(r.bytes).unwrap();
    assert!(text.starts_with("HTTP/1.1 101"));
    assert!(text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
    assert!(text.contains("Sec-WebSocket-Protocol: frameproof.echo\r\n"));
    let (r, _) = handshake_reply(req.replace("13", "8").as_bytes()).unwrap();
    assert!(String::from_utf8(r.bytes)
        .unwrap()
        .starts_with("HTTP/1.1 426"));
    let (r, _) = handshake_reply(req.replace("Host: x\r\n", "").as_bytes()).unwrap();
    assert!(String::from_utf8(r.bytes)
        .unwrap()
        .starts_with("HTTP/1.1 400"));
    // the client side accepts the server's answer to its own key
    use crate::protocol::Opening;
    let c = client_opening("127.0.0.1:1");
    let (r, _) = handshake_reply(c.request()).unwrap();
    assert_eq!(c.response(&r.bytes), Ok(Some(r.bytes.len())));
    assert!(c.response(b"HTTP/1.1 400 Bad Request\r\n\r\n").is_err());
}

/// The client's checks of the 101 answer (WS-HS-7): every legal spelling accepted, the answers
/// RFC 6455 §4.1 says a client fails refused.
#[test]
fn client_opening_answer() {
    use crate::protocol::Opening;
    let o = client_opening("127.0.0.1:1");
    let request = String::from_utf8(o.request().to_vec()).unwrap();
    let key = request.split("Sec-WebSocket-Key: ").nth(1).unwrap().split("\r\n").next().unwrap();
    let accept = accept_for(key);
    let answer = |head: &str| {
        let text = format!("HTTP/1.1 101 Switching Protocols\r\n{head}Sec-WebSocket-Accept: {accept}\r\n\r\n");
        o.response(text.as_bytes())
    };
    for ok in [
        "Upgrade: websocket\r\nConnection: Upgrade\r\n",
        "upgrade:WebSocket \r\nCONNECTION: keep-alive, upgrade\r\n",
        "Connection: keep-alive\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nServer: x\r\n",
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Extensions: \r\n",
    ] {
        assert!(matches!(answer(ok), Ok(Some(_))), "refused {ok:?}: {:?}", answer(ok));
    }
    for bad in [
        "Connection: Upgrade\r\n",
        "Upgrade: h2c\r\nConnection: Upgrade\r\n",
        "Upgrade: websocket\r\nConnection: keep-alive\r\n",
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Extensions: permessage-deflate\r\n",
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Protocol: chat\r\n",
    ] {
        assert!(answer(bad).is_err(), "accepted {bad:?}");
    }
}

/// The echo service at its own path with its own subprotocol (`websocket.path`,
/// `websocket.subprotocol`): another path gets 404, the subprotocol is selected when offered; the
/// client offers it and takes an answer that selects it, not one that selects another.
#[test]
fn endpoint_path_and_subprotocol() {
    use crate::protocol::Opening;
    let cfg = CodecConfig::parse(
        r#"{"protocol": "websocket", "websocket": {"path": "/ws/echo", "subprotocol": "echo.v1"}}"#,
    )
    .unwrap();
    let p = WebSocket::from_config(&cfg).unwrap();
    assert_eq!(p.endpoint.path, Some("/ws/echo"));
    let c = client_opening_offering("127.0.0.1:1", "/ws/echo", Some("echo.v1"));
    let req = String::from_utf8(c.request().to_vec()).unwrap();
    assert!(
        req.starts_with("GET /ws/echo HTTP/1.1\r\n")
            && req.contains("Sec-WebSocket-Protocol: echo.v1\r\n")
    );
    let (r, _) = handshake_reply_at(c.request(), &p.endpoint).unwrap();
    assert!(String::from_utf8(r.bytes.clone())
        .unwrap()
        .contains("Sec-WebSocket-Protocol: echo.v1\r\n"));
    assert_eq!(c.response(&r.bytes), Ok(Some(r.bytes.len())));
    let other = String::from_utf8(r.bytes.clone())
        .unwrap()
        .replace("echo.v1", "echo.v2");
    assert!(c.response(other.as_bytes()).is_err());
    let (r, _) =
        handshake_reply_at(req.replacen("/ws/echo", "/ws", 1).as_bytes(), &p.endpoint).unwrap();
    assert!(!r.ok && r.bytes.starts_with(b"HTTP/1.1 404"));
    for bad in [
        r#"{"path": "ws"}"#,
        r#"{"subprotocol": "a, b"}"#,
        r#"{"subprotocols": "x"}"#,
    ] {
        let cfg = CodecConfig::parse(&format!(
            r#"{{"protocol": "websocket", "websocket": {bad}}}"#
        ))
        .unwrap();
        assert!(WebSocket::from_config(&cfg).is_err(), "{bad}");
    }
}
