//! permessage-deflate (spec/websocket-deflate.md): negotiation, framing, compression, limits.

use super::*;
use crate::testutil::hex;

const KEY: [u8; 4] = [1, 2, 3, 4];

/// A masked client frame with RSV1 as given.
fn frame(out: &mut BytesMut, fin: bool, rsv1: bool, op: u8, payload: &[u8]) {
    let at = out.len();
    put_header(out, fin, op, true, payload.len());
    if rsv1 {
        out[at] |= 0x40;
    }
    out.put_slice(&KEY);
    let p = out.len();
    out.put_slice(payload);
    mask(&mut out[p..], KEY, 0);
}

fn request(offers: &[&str]) -> String {
    let mut r = String::from(
        "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n",
    );
    for o in offers {
        r.push_str(&format!("Sec-WebSocket-Extensions: {o}\r\n"));
    }
    r + "\r\n"
}

/// A network session of a server with `websocket` options `opts`, after the opening handshake
/// with `offers`; the 101's extension header (None: declined).
fn opened(opts: &str, offers: &[&str]) -> (WsSession, Option<String>) {
    let cfg = CodecConfig::parse(&format!(
        r#"{{"protocol": "websocket", "websocket": {{{opts}}}}}"#
    ))
    .unwrap();
    let p = WebSocket::from_config(&cfg).unwrap();
    let mut s = p.net_session(false).unwrap();
    s.extend(request(offers).as_bytes());
    let mut out = BytesMut::new();
    let r = s.process(&mut out);
    assert!(!r.closed, "{r:?}");
    let text = String::from_utf8(out.to_vec()).unwrap();
    assert!(text.starts_with("HTTP/1.1 101") && text.ends_with("\r\n\r\n"));
    let ext = text
        .split("\r\n")
        .find_map(|l| l.strip_prefix("Sec-WebSocket-Extensions: "))
        .map(str::to_string);
    (s, ext)
}

/// The server frames in `out` (RSV1 allowed).
fn server_frames(out: &[u8]) -> Vec<WsFrame> {
    let mut d = WsDecoder::new(Role::Client, 0, 0);
    d.set_deflate(true);
    let (f, e) = d.decode_stream([out]);
    assert!(e.is_none(), "{e:?}");
    f
}

const ON: &str = r#""permessage_deflate": true"#;

#[test]
fn offers_in_every_spelling_read_the_same() {
    let want = Agreement {
        server_no_context_takeover: true,
        client_no_context_takeover: false,
        server_max_window_bits: Some(10),
        client_max_window_bits: Some(15),
    };
    let spellings: [&[&str]; 6] = [
        &["permessage-deflate; server_no_context_takeover; server_max_window_bits=10; client_max_window_bits"],
        &["PerMessage-Deflate ;Server_No_Context_Takeover;SERVER_MAX_WINDOW_BITS = \"10\" ; client_max_window_bits"],
        &["x-webkit-deflate-frame", "permessage-deflate;server_no_context_takeover;server_max_window_bits=10;client_max_window_bits"],
        &["x-foo; a=1, permessage-deflate\t;\tserver_no_context_takeover ;server_max_window_bits=\"10\";client_max_window_bits"],
        &[", permessage-deflate; server_no_context_takeover; server_max_window_bits=10; client_max_window_bits ,"],
        &["permessage-deflate; client_max_window_bits; server_max_window_bits=10; server_no_context_takeover, permessage-deflate"],
    ];
    for s in spellings {
        assert_eq!(accept(s), Some(want), "{s:?}");
    }
    assert_eq!(
        want.header(),
        "permessage-deflate; server_no_context_takeover; server_max_window_bits=10; client_max_window_bits=15"
    );
    // a plain offer: nothing stated but the name
    let plain = accept(&["permessage-deflate"]).unwrap();
    assert_eq!(plain.header(), "permessage-deflate");
    let c = accept(&["permessage-deflate; client_max_window_bits=9; client_no_context_takeover"]);
    assert_eq!(
        c.unwrap().header(),
        "permessage-deflate; client_no_context_takeover; client_max_window_bits=9"
    );
    // the parser keeps names as spelt and unquotes values
    let e = parse_extensions(&["a; b = \"c\", d"]).unwrap();
    assert_eq!(e[0].1, vec![("b".to_string(), Some("c".to_string()))]);
    assert_eq!(e[1].0, "d");
}

#[test]
fn invalid_offers_are_declined_and_the_next_one_taken() {
    for bad in [
        "permessage-deflate; foo",
        "permessage-deflate; server_no_context_takeover=1",
        "permessage-deflate; client_no_context_takeover=\"x\"",
        "permessage-deflate; server_max_window_bits",
        "permessage-deflate; server_max_window_bits=08",
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; client_max_window_bits=7",
        "permessage-deflate; client_max_window_bits=+9",
        "permessage-deflate; server_no_context_takeover; Server_No_Context_Takeover",
        "permessage-deflate; server_max_window_bits=8", // zlib compresses with 9 (WSD-NEG-4)
        "x-other",
    ] {
        assert_eq!(accept(&[bad]), None, "{bad}");
        let next = format!("{bad}, permessage-deflate; server_max_window_bits=12");
        let a = accept(&[next.as_str()]).unwrap_or_else(|| panic!("{next}"));
        assert_eq!(a.server_max_window_bits, Some(12), "{next}");
    }
    // a list that does not parse declines every offer
    for bad in [
        "permessage-deflate; server_max_window_bits=\"1 0\"",
        "permessage-deflate;; server_no_context_takeover",
        "permessage-deflate server_no_context_takeover",
        "permessage-deflate; server_max_window_bits=\"10",
    ] {
        assert_eq!(accept(&[bad, "permessage-deflate"]), None, "{bad}");
    }
    // client_max_window_bits=8 is fine: inflating with 15 bits reads it
    let a = accept(&["permessage-deflate; client_max_window_bits=8"]).unwrap();
    assert_eq!(a.client_max_window_bits, Some(8));
}

#[test]
fn opt_in_only() {
    let (_, ext) = opened("", &["permessage-deflate"]);
    assert_eq!(ext, None);
    let (_, ext) = opened(r#""permessage_deflate": false"#, &["permessage-deflate"]);
    assert_eq!(ext, None);
    let (_, ext) = opened(ON, &["permessage-deflate; client_max_window_bits"]);
    assert_eq!(
        ext.as_deref(),
        Some("permessage-deflate; client_max_window_bits=15")
    );
    let (_, ext) = opened(ON, &[]);
    assert_eq!(ext, None);
    let cfg =
        CodecConfig::parse(r#"{"protocol": "websocket", "websocket": {"permessage_deflate": 1}}"#)
            .unwrap();
    assert!(WebSocket::from_config(&cfg).is_err());
    // without the extension, RSV1 is WS-HDR-2 (1002) as before
    let (mut s, _) = opened("", &["permessage-deflate"]);
    let mut wire = BytesMut::new();
    frame(&mut wire, true, true, TEXT, &hex("f2 48 cd c9 c9 07 00"));
    s.extend(&wire);
    let mut out = BytesMut::new();
    let r = s.process(&mut out);
    assert_eq!(r.error.unwrap().requirement, "WS-HDR-2");
    assert_eq!(&out[..], &hex("88 02 03 ea")[..]);
}

#[test]
fn rfc_examples_and_empty_message() {
    let mut d = Deflater::new(15, false);
    let mut out = Vec::new();
    d.compress(b"Hello", &mut out);
    assert_eq!(out, hex("f2 48 cd c9 c9 07 00")); // RFC 7692 §7.2.3.1
    out.clear();
    d.compress(b"Hello", &mut out);
    assert_eq!(out, hex("f2 00 11 00 00")); // §7.2.3.2: the window of the first
    out.clear();
    d.compress(b"", &mut out);
    assert_eq!(out, vec![0]);
    let mut i = Inflater::new(15, false, 1 << 20);
    let mut msg = Vec::new();
    for (p, want) in [
        (hex("f2 48 cd c9 c9 07 00"), &b"Hello"[..]),
        (hex("f2 00 11 00 00"), b"Hello"),
        (hex("00"), b""),
        (hex("f3 48 cd c9 c9 07 00"), b"Hello"), // §7.2.3.5: a final block
        (hex("00 05 00 fa ff 48 65 6c 6c 6f 00"), b"Hello"), // stored, then an empty block
    ] {
        msg.clear();
        i.begin(&msg);
        i.feed(&p, &mut msg).unwrap();
        i.finish(&mut msg).unwrap();
        assert_eq!(msg, want);
    }
}

const PLAIN: &[u8] = b"plain, plain, plain, plain, plain";

/// Random bytes (xorshift64*, seeded): DEFLATE expands them, about 5 octets a 16 KiB block.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// WSD-FRM-3: a message whose compressed payload would be longer than itself goes uncompressed
/// and resets the compressor; the next compressible message is compressed again, refers to
/// nothing earlier, and inflates at a receiver that kept its window.
#[test]
fn incompressible_message_goes_uncompressed() {
    for bits in [9u8, 15] {
        let random = noise(100_000, 7);
        let mut z = Vec::new();
        Deflater::new(15, false).compress(&random, &mut z);
        assert!(z.len() > random.len(), "what the rule avoids");
        let words = b"the same words again and again ".repeat(20);
        let mut d = Deflater::new(bits, false);
        let mut receiver = Inflater::new(15, false, 1 << 20);
        let inflate = |i: &mut Inflater, p: &[u8]| {
            let mut m = Vec::new();
            i.begin(&m);
            i.feed(p, &mut m).unwrap();
            i.finish(&mut m).unwrap();
            m
        };
        let mut out = Vec::new();
        assert!(d.payload(&words, &mut out));
        assert!(out.len() < words.len());
        assert_eq!(inflate(&mut receiver, &out), words);
        out.clear();
        assert!(!d.payload(&random, &mut out), "{bits}");
        assert!(out.is_empty());
        assert_eq!(d.cost(), 0, "the compressor reset: made again at the next message");
        let after = [&random[random.len() - 100..], &words[..]].concat();
        assert!(d.payload(&after, &mut out));
        let mut fresh = Vec::new();
        Deflater::new(bits, false).compress(&after, &mut fresh);
        assert_eq!(out, fresh, "refers to nothing earlier");
        assert_eq!(inflate(&mut receiver, &out), after);
        out.clear();
        assert!(!d.payload(b"", &mut out), "an empty message: 0x00 is longer");
        assert!(!d.payload(b"Hello", &mut out), "7 bytes compressed");
    }
}

/// WSD-FRM-3 through the server session: random bytes, compressed by the client, are echoed
/// uncompressed (RSV1 clear, the plain message); the next message is echoed compressed again and
/// inflates at a client that kept its window.
#[test]
fn session_echoes_incompressible_message_uncompressed() {
    let (mut s, ext) = opened(ON, &["permessage-deflate"]);
    assert!(ext.is_some());
    let mut client = Deflater::new(15, false);
    let mut reader = Inflater::new(15, false, 1 << 20);
    let words = b"the same words again and again ".repeat(20);
    let random = noise(100_000, 5);
    let after = [&random[random.len() - 100..], &words[..]].concat();
    for (m, compressed) in [(&words, true), (&random, false), (&after, true)] {
        let mut p = Vec::new();
        client.compress(m, &mut p);
        let mut wire = BytesMut::new();
        frame(&mut wire, true, true, BINARY, &p);
        s.extend(&wire);
        let mut out = BytesMut::new();
        assert!(s.process(&mut out).error.is_none());
        let frames = server_frames(&out);
        assert_eq!(frames.len(), 1);
        let f = &frames[0];
        assert_eq!(f.rsv == 4, compressed, "{} bytes", m.len());
        if compressed {
            assert!(f.payload.len() < m.len());
            let mut got = Vec::new();
            reader.begin(&got);
            reader.feed(&f.payload, &mut got).unwrap();
            reader.finish(&mut got).unwrap();
            assert_eq!(&got, m);
        } else {
            assert_eq!(&f.payload[..], &m[..]);
        }
    }
}

/// Messages through the server session, compressed by a client with and without context
/// takeover, fragmented or not: each echo is one RSV1 frame that inflates to the message.
#[test]
fn session_round_trip_with_and_without_context_takeover() {
    for (offer, server_reset, client_reset) in [
        ("permessage-deflate", false, false),
        (
            "permessage-deflate; server_no_context_takeover",
            true,
            false,
        ),
        (
            "permessage-deflate; client_no_context_takeover",
            false,
            true,
        ),
        (
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; \
             server_max_window_bits=9; client_max_window_bits=9",
            true,
            true,
        ),
    ] {
        let (mut s, ext) = opened(ON, &[offer]);
        assert!(ext.is_some(), "{offer}");
        let bits = if offer.contains("=9") { 9 } else { 15 };
        let mut client = Deflater::new(bits, client_reset);
        let mut reader = Inflater::new(bits, server_reset, 1 << 20);
        let text = "Hello, permessage-deflate! ".repeat(40);
        let mut sizes = Vec::new();
        for round in 0..4 {
            let mut p = Vec::new();
            client.compress(text.as_bytes(), &mut p);
            let mut wire = BytesMut::new();
            if round % 2 == 0 {
                frame(&mut wire, true, true, TEXT, &p);
            } else {
                let (a, b) = p.split_at(p.len() / 3);
                let (b, c) = b.split_at(b.len() / 2);
                frame(&mut wire, false, true, TEXT, a);
                frame(&mut wire, true, false, PING, b"x");
                frame(&mut wire, false, false, CONT, b);
                frame(&mut wire, true, false, CONT, c);
            }
            // uncompressed (WSD-CTX-3), compressible: echoed compressed ("plain" alone is not, WSD-FRM-3)
            frame(&mut wire, true, false, BINARY, PLAIN);
            s.extend(&wire);
            let mut out = BytesMut::new();
            let r = s.process(&mut out);
            assert!(r.error.is_none(), "{offer}: {r:?}");
            let frames: Vec<WsFrame> = server_frames(&out)
                .into_iter()
                .filter(|f| f.opcode != PONG as u32)
                .collect();
            assert_eq!(frames.len(), 2);
            for (f, (op, want)) in frames
                .iter()
                .zip([(TEXT, text.as_bytes()), (BINARY, PLAIN)])
            {
                assert!(
                    f.fin && f.rsv == 4 && f.opcode == op as u32,
                    "{offer}: {f:?}"
                );
                let mut m = Vec::new();
                reader.begin(&m);
                reader.feed(&f.payload, &mut m).unwrap();
                reader.finish(&mut m).unwrap();
                assert_eq!(m, want, "{offer} round {round}");
            }
            sizes.push(frames[0].payload.len());
        }
        // with context takeover the echoes after the first refer back to it
        assert_eq!(sizes[1] < sizes[0], !server_reset, "{offer}: {sizes:?}");
    }
}

#[test]
fn rsv1_on_continuation_or_control_is_1002() {
    for (first_rsv1, op, rsv1) in [(true, CONT, true), (false, CONT, true), (false, PING, true)] {
        let (mut s, _) = opened(ON, &["permessage-deflate"]);
        let mut wire = BytesMut::new();
        frame(&mut wire, false, first_rsv1, BINARY, &hex("f2 48"));
        frame(&mut wire, true, rsv1, op, b"x");
        s.extend(&wire);
        let mut out = BytesMut::new();
        let r = s.process(&mut out);
        assert_eq!(r.error.unwrap().requirement, "WSD-FRM-2");
        assert_eq!(&out[..], &hex("88 02 03 ea")[..]);
    }
    // RSV2 stays WS-HDR-2
    let (mut s, _) = opened(ON, &["permessage-deflate"]);
    s.extend(&hex("a1 80 00 00 00 00"));
    let r = s.process(&mut BytesMut::new());
    assert_eq!(r.error.unwrap().requirement, "WS-HDR-2");
}

#[test]
fn invalid_data_and_invalid_text_are_1007() {
    let mut not_utf8 = Vec::new();
    Deflater::new(15, false).compress(b"ok \xff\xfe", &mut not_utf8);
    for (op, payload, want) in [
        (BINARY, hex("ff ff"), "WSD-CMP-3"), // a reserved block type
        (BINARY, hex("00 05 00 00 00 41"), "WSD-CMP-3"), // a stored length check fails
        (TEXT, not_utf8, "WS-UTF8-1"),
    ] {
        let (mut s, _) = opened(ON, &["permessage-deflate"]);
        let mut wire = BytesMut::new();
        frame(&mut wire, true, true, op, &payload);
        s.extend(&wire);
        let mut out = BytesMut::new();
        let r = s.process(&mut out);
        assert_eq!(r.error.unwrap().requirement, want);
        assert_eq!(&out[..], &hex("88 02 03 ef")[..]);
    }
}

/// A bomb: ~1 KiB on the wire inflating to 1 MiB against a 256 KiB limit is refused with 1009
/// as soon as the limit is passed; the inflater produced at most the limit plus one step.
#[test]
fn bomb_is_1009_within_one_step() {
    let max: u64 = 256 << 10;
    let mut p = Vec::new();
    Deflater::new(15, false).compress(&vec![0u8; 1 << 20], &mut p);
    assert!(p.len() < 1200, "{}", p.len());
    let mut i = Inflater::new(15, false, max);
    let mut out = Vec::new();
    i.begin(&out);
    let e = i.feed(&p, &mut out).unwrap_err();
    assert_eq!(e.code, 1009);
    assert!(
        i.produced > max && i.produced <= max + STEP as u64,
        "{}",
        i.produced
    );
    assert!(out.len() as u64 <= max + STEP as u64);
    // through the session: the close frame 1009
    let (mut s, _) = opened(
        &format!(r#"{ON}, "max_message": {max}"#),
        &["permessage-deflate"],
    );
    let mut wire = BytesMut::new();
    frame(&mut wire, true, true, BINARY, &p);
    s.extend(&wire);
    let mut out = BytesMut::new();
    let r = s.process(&mut out);
    assert_eq!(r.error.unwrap().requirement, "WSD-LIM-1");
    assert_eq!(&out[..], &hex("88 02 03 f1")[..]);
    // a message at the limit passes
    let (mut s, _) = opened(
        &format!(r#"{ON}, "max_message": {max}"#),
        &["permessage-deflate"],
    );
    let mut p = Vec::new();
    Deflater::new(15, false).compress(&vec![7u8; max as usize], &mut p);
    let mut wire = BytesMut::new();
    frame(&mut wire, true, true, BINARY, &p);
    s.extend(&wire);
    let r = s.process(&mut BytesMut::new());
    assert!(r.error.is_none(), "{r:?}");
}

/// The zlib state is created at the first compressed message and counted (WSD-LIM-3; counted: WSD-LIM-2); without
/// context takeover it is given back after each message.
#[test]
fn state_is_lazy_and_counted() {
    use crate::protocol::ServerSession;
    let (mut s, _) = opened(ON, &["permessage-deflate"]);
    assert_eq!(s.state_cost(), 0);
    let mut wire = BytesMut::new();
    // compressible, so its echo is compressed ("Hello" alone would go uncompressed, WSD-FRM-3)
    let mut p = Vec::new();
    Deflater::new(15, true).compress(b"Hello, Hello, Hello, Hello, Hello", &mut p);
    frame(&mut wire, true, true, TEXT, &p);
    s.extend(&wire);
    assert!(s.process(&mut BytesMut::new()).error.is_none());
    assert!(s.state_cost() > 256 << 10, "{}", s.state_cost());
    let both = "permessage-deflate; server_no_context_takeover; client_no_context_takeover";
    let (mut s, _) = opened(ON, &[both]);
    s.extend(&wire);
    assert!(s.process(&mut BytesMut::new()).error.is_none());
    assert_eq!(s.state_cost(), 0);
}

/// A message that ends with a final block (WSD-CMP-5): the rest of its payload is ignored, and
/// the next message starts a new stream whose window holds the earlier messages.
#[test]
fn final_block_then_new_stream_with_the_window() {
    use flate2::{Compress, Compression, FlushCompress};
    let mut z = Compress::new_with_window_bits(Compression::new(6), false, 15);
    let mut p = Vec::with_capacity(256);
    z.compress_vec(b"abcdefgh abcdefgh", &mut p, FlushCompress::Finish)
        .unwrap();
    p.extend_from_slice(b"\x01\x02junk");
    let mut i = Inflater::new(15, false, 1 << 20);
    let mut m = Vec::new();
    i.begin(&m);
    i.feed(&p, &mut m).unwrap();
    i.finish(&mut m).unwrap();
    assert_eq!(m, b"abcdefgh abcdefgh");
    // a new stream that refers back into the first message
    let mut z = Compress::new_with_window_bits(Compression::new(6), false, 15);
    z.set_dictionary(b"abcdefgh abcdefgh").unwrap();
    let mut q = Vec::with_capacity(256);
    z.compress_vec(b"abcdefgh abcdefgh", &mut q, FlushCompress::Sync)
        .unwrap();
    q.truncate(q.len() - 4);
    m.clear();
    i.begin(&m);
    i.feed(&q, &mut m).unwrap();
    i.finish(&mut m).unwrap();
    assert_eq!(m, b"abcdefgh abcdefgh");
}

/// The client's offer and its check of the response (WSD-NEG-5): every response a client must
/// fail refused, the parameters a server may add followed, a declined offer no agreement.
#[test]
fn client_checks_the_response() {
    assert_eq!(
        CLIENT_OFFER.header(),
        "permessage-deflate; client_max_window_bits"
    );
    let check = |v: &str| check_response(&CLIENT_OFFER, &[v]);
    assert_eq!(check(""), Ok(None));
    let a = check("permessage-deflate").unwrap().unwrap();
    assert!(!a.client_no_context_takeover && !a.server_no_context_takeover);
    // a response may add client_no_context_takeover unasked (WSD-NEG-5); an offer's hint binds
    let a = check("permessage-deflate; client_no_context_takeover")
        .unwrap()
        .unwrap();
    assert!(a.client_no_context_takeover);
    let hint = Offer {
        client_no_context_takeover: true,
        ..CLIENT_OFFER
    };
    let a = check_response(&hint, &["permessage-deflate"])
        .unwrap()
        .unwrap();
    assert!(a.client_no_context_takeover);
    assert_eq!(
        (a.server_max_window_bits, a.client_max_window_bits),
        (None, None)
    );
    let a = check(
        "PerMessage-Deflate ; server_no_context_takeover;client_max_window_bits=\"9\"; \
         server_max_window_bits=10",
    )
    .unwrap()
    .unwrap();
    assert!(a.server_no_context_takeover);
    assert_eq!(
        (a.server_max_window_bits, a.client_max_window_bits),
        (Some(10), Some(9))
    );
    for bad in [
        "permessage-deflate; foo",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_max_window_bits=010",
        "permessage-deflate; server_max_window_bits",
        "permessage-deflate; client_no_context_takeover=1",
        "permessage-deflate; client_max_window_bits",
        "permessage-deflate, permessage-deflate",
        "x-webkit-deflate-frame",
        "permessage-deflate; ",
    ] {
        assert!(check(bad).is_err(), "accepted {bad:?}");
    }
    // client_max_window_bits not offered, or larger than offered; server_max_window_bits larger
    let plain = Offer::default();
    assert!(check_response(&plain, &["permessage-deflate; client_max_window_bits=15"]).is_err());
    let small = Offer {
        server_max_window_bits: Some(10),
        client_max_window_bits: ClientBits::Bits(10),
        ..Offer::default()
    };
    assert!(check_response(&small, &["permessage-deflate; client_max_window_bits=11"]).is_err());
    assert!(check_response(&small, &["permessage-deflate; server_max_window_bits=11"]).is_err());
    assert!(check_response(&small, &["permessage-deflate; server_max_window_bits=10"]).is_ok());
}

/// The client's opening: the offer sent with `websocket.permessage_deflate`, the server's answer
/// read into the agreement, a response naming the extension refused when nothing was offered.
#[test]
fn client_opening_offers_and_reads_the_agreement() {
    use crate::protocol::Opening;
    let c = client_opening_with("127.0.0.1:1", "/", None, true);
    let req = String::from_utf8(c.request().to_vec()).unwrap();
    assert!(req.contains(&format!(
        "Sec-WebSocket-Extensions: {}\r\n",
        CLIENT_OFFER.header()
    )));
    let ep = Endpoint {
        permessage_deflate: true,
        ..Endpoint::default()
    };
    let (r, _) = handshake_reply_at(c.request(), &ep).unwrap();
    assert_eq!(c.response(&r.bytes), Ok(Some(r.bytes.len())));
    assert_eq!(c.agreement(), r.deflate);
    assert!(c
        .agreement()
        .is_some_and(|a| a.client_max_window_bits == Some(15)));
    // declined: no agreement, and frames without compression
    let (r, _) = handshake_reply_at(c.request(), &Endpoint::default()).unwrap();
    assert_eq!(c.response(&r.bytes), Ok(Some(r.bytes.len())));
    assert_eq!(c.agreement(), None);
    let text = String::from_utf8(r.bytes).unwrap().replace(
        "\r\n\r\n",
        "\r\nSec-WebSocket-Extensions: permessage-deflate; foo\r\n\r\n",
    );
    assert!(c
        .response(text.as_bytes())
        .unwrap_err()
        .contains("WSD-NEG-5"));
    let plain = client_opening_with("127.0.0.1:1", "/", None, false);
    let (r, _) = handshake_reply_at(plain.request(), &ep).unwrap();
    assert!(!String::from_utf8(r.bytes.clone())
        .unwrap()
        .contains("Extensions"));
    let named = String::from_utf8(r.bytes).unwrap().replace(
        "\r\n\r\n",
        "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
    );
    assert!(plain.response(named.as_bytes()).is_err());
}

/// The client role of the echo session with the extension agreed: the server's compressed
/// messages (fragmented, with context takeover) inflated, the echoes masked and compressed with
/// the client's window, RSV1 on the one frame, and read back by a server session's inflater;
/// with an 8-bit client window (zlib cannot compress with it) the echoes go uncompressed.
#[test]
fn client_session_inflates_and_compresses_masked() {
    // (client window, compressed, client_no_context_takeover agreed)
    for (client_bits, compressed, reset) in [
        (None, true, false),
        (Some(9), true, true),
        (Some(8), false, false),
    ] {
        let a = Agreement {
            server_no_context_takeover: false,
            client_no_context_takeover: reset,
            server_max_window_bits: None,
            client_max_window_bits: client_bits,
        };
        let mut s = WsSession::client_with(1 << 20, Some(a));
        let mut server = Deflater::new(15, false);
        let mut reader = Inflater::new(client_bits.unwrap_or(15), reset, 1 << 20);
        let mut sizes = Vec::new();
        let text = "a message the server compresses, with context. ".repeat(30);
        for round in 0..3 {
            let mut p = Vec::new();
            server.compress(text.as_bytes(), &mut p);
            let mut wire = BytesMut::new();
            let (x, y) = p.split_at(p.len() / 2);
            for (first, last, part) in [(true, false, x), (false, true, y)] {
                let at = wire.len();
                put_header(
                    &mut wire,
                    last,
                    if first { TEXT } else { CONT },
                    false,
                    part.len(),
                );
                if first {
                    wire[at] |= 0x40;
                }
                wire.put_slice(part);
            }
            s.extend(&wire);
            let mut out = BytesMut::new();
            let r = s.process(&mut out);
            assert!(r.error.is_none(), "{client_bits:?}: {r:?}");
            let mut d = WsDecoder::new(Role::Server, 0, 0);
            d.set_deflate(true);
            let (frames, e) = d.decode_stream([&out[..]]);
            assert!(e.is_none(), "{e:?}");
            assert_eq!(frames.len(), 1);
            let f = &frames[0];
            assert!(f.fin && f.masked && f.opcode == TEXT as u32, "{f:?}");
            assert_eq!(f.rsv == 4, compressed, "round {round}: {f:?}");
            let mut m = Vec::new();
            if compressed {
                reader.begin(&m);
                reader.feed(&f.payload, &mut m).unwrap();
                reader.finish(&mut m).unwrap();
            } else {
                m = f.payload.to_vec();
            }
            assert_eq!(m, text.as_bytes(), "{client_bits:?} round {round}");
            sizes.push(f.payload.len());
        }
        // with context kept the echoes after the first refer back to it (WSD-CTX-1)
        if compressed {
            assert_eq!(sizes[1] < sizes[0], !reset, "{client_bits:?}: {sizes:?}");
        }
    }
}

/// The client's inflater keeps the limit (WSD-LIM-1: 1009) and refuses data that does not
/// inflate (WSD-CMP-3: 1007), closing with a masked close frame.
#[test]
fn client_session_limits_and_invalid_data() {
    let a = check_response(&CLIENT_OFFER, &["permessage-deflate"])
        .unwrap()
        .unwrap();
    for (payload, code) in [
        (vec![0u8; 64 * 1024], 1009u16),
        (vec![0xff, 0xff, 0xff], 1007),
    ] {
        let mut s = WsSession::client_with(16 * 1024, Some(a));
        let mut p = Vec::new();
        Deflater::new(15, false).compress(&payload, &mut p);
        let body = if code == 1009 { p } else { payload };
        let mut wire = BytesMut::new();
        put_header(&mut wire, true, BINARY, false, body.len());
        wire[0] |= 0x40;
        wire.put_slice(&body);
        s.extend(&wire);
        let mut out = BytesMut::new();
        let r = s.process(&mut out);
        assert!(r.closed && r.error.is_some(), "{code}: {r:?}");
        let mut d = WsDecoder::new(Role::Server, 0, 0);
        let (frames, _) = d.decode_stream([&out[..]]);
        assert_eq!(frames.len(), 1);
        assert!(frames[0].masked && frames[0].opcode == CLOSE as u32);
        assert_eq!(frames[0].payload[..], code.to_be_bytes());
    }
}

/// The load client with `websocket.permessage_deflate`: it offers, reads the agreement into its
/// connection's protocol ([`Protocol::opened`]), sends masked compressed requests the server
/// session inflates and echoes compressed, and inflates the echoes before matching them.
#[test]
fn load_client_compresses_and_inflates() {
    use crate::protocol::ClientMatcher;
    let cfg = CodecConfig::parse(
        r#"{"protocol": "websocket", "websocket": {"permessage_deflate": true}}"#,
    )
    .unwrap();
    let p = WebSocket::from_config(&cfg).unwrap();
    let opening = p.client_side().opening("127.0.0.1:1").unwrap();
    let mut server = p.net_session(false).unwrap();
    server.extend(opening.request());
    let mut answer = BytesMut::new();
    assert!(server.process(&mut answer).error.is_none());
    assert_eq!(opening.response(&answer), Ok(Some(answer.len())));
    let conn = p.client_side().opened(&*opening);
    assert!(conn.deflate.is_some_and(|a| !a.client_no_context_takeover));
    let mut client = conn.client::<u32>(1_000_000);
    let mut dec = conn.decoder();
    let payload = b"compressible payload, compressible payload, compressible payload".repeat(8);
    for i in 0..3u32 {
        let mut out = BytesMut::new();
        client
            .send_request(0, i, payload.len(), &mut out, |b| {
                b.copy_from_slice(&payload)
            })
            .unwrap();
        assert_eq!(out[0] & 0x40, 0x40, "RSV1 on the request");
        assert!(out.len() < payload.len(), "compressed: {} bytes", out.len());
        server.extend(&out);
        let mut echo = BytesMut::new();
        assert!(server.process(&mut echo).error.is_none());
        dec.extend(&echo);
        let f = dec.decode().unwrap().unwrap();
        assert_eq!(f.rsv, 4);
        let g = client.incoming(&f).unwrap().unwrap();
        assert_eq!((g.rsv, &g.payload[..]), (0, &payload[..]));
        assert!(matches!(client.receive(&g), crate::matcher::Received::Reply(t) if t == i));
    }
    // random bytes go uncompressed, RSV1 clear (WSD-FRM-3), and so does their echo
    let random = noise(100_000, 3);
    let mut out = BytesMut::new();
    client
        .send_request(0, 3, random.len(), &mut out, |b| b.copy_from_slice(&random))
        .unwrap();
    assert_eq!(out[0] & 0x40, 0, "no RSV1 on an incompressible request");
    server.extend(&out);
    let mut echo = BytesMut::new();
    assert!(server.process(&mut echo).error.is_none());
    dec.extend(&echo);
    let f = dec.decode().unwrap().unwrap();
    assert_eq!((f.rsv, &f.payload[..]), (0, &random[..]));
    assert!(client.incoming(&f).unwrap().is_none());
    assert!(matches!(client.receive(&f), crate::matcher::Received::Reply(3)));
    // without the codec key: no offer, no agreement, frames as they are
    let plain = WebSocket::from_config(&CodecConfig::named("websocket")).unwrap();
    let o = plain.client_side().opening("127.0.0.1:1").unwrap();
    assert!(!String::from_utf8_lossy(o.request()).contains("Extensions"));
    assert_eq!(plain.client_side().opened(&*o).deflate, None);
}
