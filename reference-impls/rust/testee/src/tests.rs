//! The testee's unit tests: requests in, responses out, through `handle`.
use super::*;
use pb::match_event::Event;

fn codec(protocol: &str, lf: Option<(u32, i32)>, max: u64) -> Option<pb::Codec> {
    Some(pb::Codec {
        protocol: protocol.into(),
        limits: Some(pb::Limits { max_payload: max }),
        params: lf.map(|(offset, size)| {
            pb::codec::Params::LengthField(pb::LengthFieldParams { offset, size })
        }),
    })
}

fn req(r: Request) -> Resp {
    handle(pb::TesteeRequest { request: Some(r) })
}

fn ev(e: Event) -> pb::MatchEvent {
    pb::MatchEvent { event: Some(e) }
}

fn send(p: &[u8]) -> pb::MatchEvent {
    ev(Event::Send(Bytes::copy_from_slice(p)))
}

fn run(
    c: Option<pb::Codec>,
    timeout_ms: u32,
    events: Vec<pb::MatchEvent>,
) -> pb::MatchResponse {
    match req(Request::Match(pb::MatchRequest {
        codec: c,
        timeout_ms,
        events,
    })) {
        Resp::Match(m) => m,
        other => panic!("{other:?}"),
    }
}

/// (kind, request) pairs of the completions.
fn kinds(m: &pb::MatchResponse) -> Vec<(Kind, u32)> {
    m.completions
        .iter()
        .map(|c| (Kind::try_from(c.kind).unwrap(), c.request))
        .collect()
}

fn hello(max_harness_version: u32) -> pb::HelloResponse {
    match req(Request::Hello(pb::HelloRequest {
        harness_version: 1,
        max_harness_version,
    })) {
        Resp::Hello(h) => h,
        other => panic!("{other:?}"),
    }
}

#[test]
fn hello_negotiates_the_version() {
    // A v1 runner (no max_harness_version): version 1, v1 features.
    let h = hello(0);
    assert_eq!(h.harness_version, 1);
    assert_eq!(
        h.protocols,
        vec!["standard", "length-field", "rpc", "websocket"]
    );
    assert_eq!(h.features, vec!["decode", "encode", "match"]);
    assert_eq!(hello(1).harness_version, 1);
    // A v2 runner: version 2 with serve; v3 adds the long stream; a later runner still gets 3.
    for max in [2, 3, 100] {
        let h = hello(max);
        assert_eq!(h.harness_version, max.min(3), "max {max}");
        let mut want = vec!["decode", "encode", "match", "serve"];
        if cfg!(feature = "discovery") {
            want.push("discovery");
        }
        if cfg!(feature = "discovery-etcd") {
            want.push("discovery-etcd");
        }
        want.push("rpc-unary-only");
        if max >= 3 {
            want.push("long-stream");
        }
        assert_eq!(h.features, want);
    }
}

#[test]
fn codec_serializes_to_the_vector_json() {
    let json = |c: Option<pb::Codec>| serde_json::to_string(&c.unwrap()).unwrap();
    assert_eq!(
        json(codec("length-field", Some((2, -4)), 16)),
        r#"{"protocol":"length-field","limits":{"max_payload":16},"length_field":{"offset":2,"size":-4}}"#
    );
    let bare = pb::Codec {
        protocol: "standard".into(),
        ..Default::default()
    };
    assert_eq!(json(Some(bare.clone())), r#"{"protocol":"standard"}"#);
    assert_eq!(codec_config(bare).unwrap(), CodecConfig::named("standard"));
    // Frames: the header fields by name, the oneof flattened under its field name.
    let f = pb::Frame {
        flag: 0x81,
        sequence: 3,
        payload: Bytes::from_static(b"xy"),
        header: Some(pb::frame::Header::Rpc(pb::RpcHeader {
            id: 7,
            ..Default::default()
        })),
    };
    let fields = frame_fields(f.clone());
    assert_eq!(&fields.payload[..], b"xy");
    assert_eq!(fields.header["flag"], 0x81);
    assert_eq!(fields.header["rpc"]["id"], 7);
    assert!(!fields.header.contains_key("payload"));
    let back: pb::Frame = serde_json::from_value(Value::Object(fields.header)).unwrap();
    assert_eq!(back.header, f.header);
}

#[test]
fn other_protocols_parameters_are_skipped() {
    let mut c = codec("standard", Some((0, 2)), 0);
    let r = req(Request::Decode(pb::DecodeRequest {
        codec: c.clone(),
        chunks: vec![],
    }));
    assert!(
        matches!(&r, Resp::Skipped(m) if m.contains("length_field")),
        "{r:?}"
    );
    c.as_mut().unwrap().protocol = "length-field".into();
    c.as_mut().unwrap().params = Some(pb::codec::Params::Rpc(pb::RpcParams::default()));
    let r = req(Request::Decode(pb::DecodeRequest {
        codec: c,
        chunks: vec![],
    }));
    assert!(matches!(&r, Resp::Skipped(m) if m.contains("rpc")), "{r:?}");
    let r = req(Request::Decode(pb::DecodeRequest {
        codec: None,
        chunks: vec![],
    }));
    assert!(matches!(r, Resp::Skipped(_)));
}

#[test]
fn unknown_protocol_is_skipped() {
    let r = req(Request::Decode(pb::DecodeRequest {
        codec: codec("smtp", None, 0),
        chunks: vec![],
    }));
    assert!(matches!(r, Resp::Skipped(_)));
}

#[test]
fn decode_reports_frames_then_error() {
    let chunks = vec![
        Bytes::from_static(&[0x01, 0x01, 0x01]),
        Bytes::from_static(&[0x00, 0x41, 0x01, 0x01]),
    ];
    let Resp::Decode(d) = req(Request::Decode(pb::DecodeRequest {
        codec: codec("standard", None, 0),
        chunks,
    })) else {
        panic!()
    };
    assert_eq!(d.frames.len(), 1);
    assert_eq!((d.frames[0].flag, d.frames[0].sequence), (1, 1));
    assert_eq!(&d.frames[0].payload[..], b"A");
    let e = d.error.unwrap();
    assert_eq!((e.requirement.as_str(), e.offset), ("STD-STR-3", 5));
    // Unsupported profile: LF-FMT-3 at 0, no frames.
    let Resp::Decode(d) = req(Request::Decode(pb::DecodeRequest {
        codec: codec("length-field", Some((0, 3)), 0),
        chunks: vec![Bytes::from_static(&[0, 0, 0])],
    })) else {
        panic!()
    };
    assert!(d.frames.is_empty());
    assert_eq!(d.error.unwrap().requirement, "LF-FMT-3");
}

#[test]
fn encode_bytes_and_refusals() {
    use pb::encode_response::Result as E;
    let enc = |c, payload: &'static [u8]| match req(Request::Encode(pb::EncodeRequest {
        codec: c,
        frame: Some(pb::Frame {
            flag: 0xC1,
            sequence: 7,
            payload: Bytes::from_static(payload),
            header: None,
        }),
    })) {
        Resp::Encode(pb::EncodeResponse { result: Some(r) }) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        enc(codec("standard", None, 0), b"abc"),
        E::Encoded(Bytes::from_static(&[0xC1, 7, 3, 0, b'a', b'b', b'c']))
    );
    assert_eq!(
        enc(codec("length-field", None, 0), b"abc"),
        E::Encoded(Bytes::from_static(&[3, 0, b'a', b'b', b'c']))
    );
    let E::Error(e) = enc(codec("standard", None, 2), b"abc") else {
        panic!()
    };
    assert_eq!(e.requirement, "STD-LIM-2");
    let E::Error(e) = enc(codec("length-field", Some((0, -1)), 0), b"abc") else {
        panic!()
    };
    assert_eq!(e.requirement, "LF-FMT-3");
}

#[test]
fn standard_match_script() {
    let mut events = vec![
        send(b"a"),
        ev(Event::SendOneWay(Bytes::from_static(b"b"))),
        send(b"c"),
    ];
    // Reply to request 2 (seq 3), an error reply... to request 0 (seq 1), a peer request,
    // and an unmatched reply.
    events.push(ev(Event::Receive(Bytes::from_static(&[
        0x81, 3, 0, 0, 0xC1, 1, 1, 0, b'x', 0x01, 9, 0, 0, 0x81, 200, 0, 0,
    ]))));
    events.push(send(b"d")); // seq 4, request 3
    events.push(ev(Event::AdvanceMs(2999)));
    events.push(ev(Event::AdvanceMs(1)));
    let m = run(codec("standard", None, 0), 0, events);
    assert_eq!(m.sent.len(), 4);
    assert_eq!(&m.sent[0][..], &[0x01, 1, 1, 0, b'a']);
    assert_eq!(&m.sent[1][..], &[0x41, 2, 1, 0, b'b']);
    assert_eq!(&m.sent[2][..], &[0x01, 3, 1, 0, b'c']);
    assert_eq!(&m.sent[3][..], &[0x01, 4, 1, 0, b'd']);
    assert_eq!(
        kinds(&m),
        vec![
            (Kind::Reply, 2),
            (Kind::Reply, 0),
            (Kind::Unmatched, 0),
            (Kind::Timeout, 3)
        ]
    );
    assert_eq!(m.completions[1].frame.as_ref().unwrap().flag, 0xC1);
    assert!(m.error.is_none());
}

#[test]
fn standard_refuses_a_busy_sequence() {
    let events: Vec<_> = (0..257).map(|_| send(b"")).collect();
    let m = run(codec("standard", None, 0), 0, events);
    assert_eq!(kinds(&m), vec![(Kind::Refused, 256)]);
    assert!(m.sent[256].is_empty());
    assert_eq!(m.sent[255][1], 0); // the 256th request took sequence 0
}

#[test]
fn length_field_timeout_fails_the_connection() {
    let events = vec![
        send(b"a"),
        ev(Event::AdvanceMs(50)),
        send(b"b"),
        ev(Event::Receive(Bytes::from_static(&[1, 0]))), // partial reply
        ev(Event::AdvanceMs(60)),                        // request 0 expires at 100
        ev(Event::Receive(Bytes::from_static(b"a"))),
        send(b"c"),
    ];
    let m = run(codec("length-field", None, 0), 100, events);
    assert_eq!(
        kinds(&m),
        vec![(Kind::Timeout, 0), (Kind::Failed, 1), (Kind::Refused, 2)]
    );
    assert!(m.sent[2].is_empty());
}

#[test]
fn decode_error_in_match_fails_pending() {
    let events = vec![
        send(b"a"),
        send(b"b"),
        send(b"c"),
        ev(Event::Receive(Bytes::from_static(&[
            1, 0, b'a', 0xFF, 0xFF,
        ]))),
    ];
    // max payload 10: 0xFFFF is LF-LIM-1 at offset 3.
    let m = run(codec("length-field", None, 10), 0, events);
    assert_eq!(
        kinds(&m),
        vec![(Kind::Reply, 0), (Kind::Failed, 1), (Kind::Failed, 2)]
    );
    let e = m.error.unwrap();
    assert_eq!((e.requirement.as_str(), e.offset), ("LF-LIM-1", 3));
}

fn serve_req(
    c: Option<pb::Codec>,
    chunks: &[&'static [u8]],
    half_close: bool,
) -> pb::ServeResponse {
    match req(Request::Serve(pb::ServeRequest {
        codec: c,
        endpoint: String::new(),
        chunks: chunks.iter().map(|c| Bytes::from_static(c)).collect(),
        half_close,
    })) {
        Resp::Serve(s) => s,
        other => panic!("{other:?}"),
    }
}

fn written(s: &pb::ServeResponse) -> Vec<Vec<u8>> {
    s.written.iter().map(|w| w.to_vec()).collect()
}

#[test]
fn serve_writes_after_each_chunk_and_closes_on_eof() {
    // A request split over two chunks, a one-way message (no reply), a request.
    let s = serve_req(
        codec("standard", None, 0),
        &[
            &[0x01, 0x05, 0x02],
            &[0x00, b'h', b'i', 0x41, 1, 0, 0],
            &[0x02, 9, 0, 0],
        ],
        true,
    );
    assert_eq!(
        written(&s),
        vec![
            vec![],
            vec![0x81, 0x05, 0x02, 0x00, b'h', b'i'],
            vec![0x82, 9, 0, 0],
            vec![],
        ]
    );
    assert!(s.closed);
    assert_eq!(s.error, None);
    // Without half_close the connection stays open.
    let s = serve_req(codec("length-field", None, 0), &[&[1, 0, b'a', 1]], false);
    assert_eq!(written(&s), vec![vec![1, 0, b'a']]);
    assert!(!s.closed);
}

#[test]
fn serve_error_closes_after_the_earlier_replies() {
    // Two frames, then a 0xFFFF length above max 10 (LF-LIM-1 at offset 6); the last chunk
    // is never fed.
    let s = serve_req(
        codec("length-field", None, 10),
        &[&[1, 0, b'a', 1, 0, b'b', 0xFF, 0xFF], &[0, 0]],
        true,
    );
    assert_eq!(written(&s), vec![vec![1, 0, b'a', 1, 0, b'b']]);
    assert!(s.closed);
    let e = s.error.unwrap();
    assert_eq!((e.requirement.as_str(), e.offset), ("LF-LIM-1", 6));
}

#[test]
fn serve_eof_inside_a_frame_is_truncation() {
    let s = serve_req(
        codec("standard", None, 0),
        &[&[0x01, 1, 0, 0, 0x01, 2, 5]],
        true,
    );
    assert_eq!(written(&s), vec![vec![0x81, 1, 0, 0], vec![]]);
    assert!(s.closed);
    let e = s.error.unwrap();
    assert_eq!((e.requirement.as_str(), e.offset), ("STD-STR-3", 4));
}

#[test]
fn serve_refusals() {
    let s = serve_req(codec("length-field", Some((0, 3)), 0), &[&[1]], true);
    assert!(s.written.is_empty());
    assert!(s.closed);
    assert_eq!(s.error.unwrap().requirement, "LF-FMT-3");
    let r = req(Request::Serve(pb::ServeRequest {
        codec: codec("standard", None, 0),
        endpoint: "unary".into(),
        chunks: vec![],
        half_close: true,
    }));
    assert!(matches!(r, Resp::Skipped(_)), "{r:?}");
}

#[test]
fn one_way_in_length_field_is_skipped() {
    let events = vec![ev(Event::SendOneWay(Bytes::from_static(b"x")))];
    let r = req(Request::Match(pb::MatchRequest {
        codec: codec("length-field", None, 0),
        timeout_ms: 0,
        events,
    }));
    assert!(matches!(r, Resp::Skipped(_)), "{r:?}");
}
