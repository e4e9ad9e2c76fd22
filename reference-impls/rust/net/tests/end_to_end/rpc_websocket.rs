//! The rpc and websocket servers: unary calls and streams on one port, the websocket handshake,
//! text messages and close.

use std::io::Write;
use std::net::TcpStream;

use crate::common::{load_protocol, num, read_all, Server};

/// Runs fp-load against `srv`: 300 requests of `protocol`'s `variant`, pipelined (window 8) over
/// 2 connections, with `more` arguments.
fn pipelined_300(srv: &Server, protocol: &str, variant: &str, more: &[&str]) -> (i32, String) {
    let run = [
        "--variant",
        variant,
        "--mode",
        "pipelined",
        "--window",
        "8",
        "--connections",
        "2",
        "--requests",
        "300",
    ];
    load_protocol(srv, protocol, &[&run[..], more].concat())
}

#[test]
fn rpc_calls_and_streams_on_one_port() {
    let srv = Server::start(&["--protocol", "rpc"]);
    // unary calls in the bidi mode, pipelined: every RESPONSE checked (flags 0x07, code 0)
    let (code, json) = pipelined_300(&srv, "rpc", "bidi", &[]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(num(&json, "replies_verified"), 300.0);
    assert!(json.contains("\"variant\": \"bidi\""), "{json}");
    assert_eq!(num(&json, "streams_completed"), 0.0);
    // streams on the same port: the first frame picks the stream endpoint (RPC-ECHO-7)
    let (code, json) = load_protocol(
        &srv,
        "rpc",
        &[
            "--mode",
            "stream",
            "--frames-per-stream",
            "5",
            "--window",
            "3",
            "--connections",
            "2",
            "--requests",
            "7",
        ],
    );
    assert_eq!(code, 0, "{json}");
    assert_eq!(num(&json, "streams_completed"), 7.0);
    assert_eq!(num(&json, "requests_sent"), 35.0);
    assert_eq!(num(&json, "replies_verified"), 35.0);
    let counters = srv.stop();
    // 300 REQUESTs, 7 x (INIT + 5 DATA + END)
    assert_eq!(num(&counters, "frames"), 300.0 + 7.0 * 7.0, "{counters}");
    assert_eq!(num(&counters, "protocol_errors"), 0.0, "{counters}");
}

#[test]
fn websocket_handshake_text_messages_and_close() {
    let srv = Server::start(&["--protocol", "websocket"]);
    for variant in ["binary", "text"] {
        let (code, json) = pipelined_300(&srv, "websocket", variant, &["--payload", "33"]);
        assert_eq!(code, 0, "{json}");
        assert_eq!(num(&json, "replies_verified"), 300.0, "{json}");
    }
    // a request that is not an upgrade is refused with 400 and no frames
    let mut s = TcpStream::connect(&srv.addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let answer = read_all(&mut s);
    assert!(answer.starts_with(b"HTTP/1.1 400"), "{answer:?}");
    let counters = srv.stop();
    // 600 messages and each connection's close frame
    assert_eq!(num(&counters, "frames"), 604.0, "{counters}");
    assert_eq!(num(&counters, "protocol_errors"), 1.0, "{counters}");
}
