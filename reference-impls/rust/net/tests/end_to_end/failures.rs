//! Failures: missing replies and a mismatched profile are the load client's errors, a decoding
//! error or an oversize header closes only that connection, a refused connection still reports.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::{load, num, read_all, Server, LF_BE4};

#[test]
fn missing_replies_are_errors_and_bounded() {
    // A sink server never replies: every request times out; fp-load must stop and fail.
    let s = Server::start(&["--protocol", "standard", "--sink"]);
    let t = Instant::now();
    let (rc, r) = load(
        &s.addr,
        &[
            "--protocol",
            "standard",
            "--connections",
            "2",
            "--requests",
            "1000",
            "--payload",
            "16",
            "--mode",
            "pipelined",
            "--window",
            "8",
            "--timeout-ms",
            "300",
        ],
    );
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(rc, 1, "{r}");
    assert_eq!(num(&r, "replies_verified"), 0.0);
    let sent = num(&r, "requests_sent");
    assert!((2.0..=16.0).contains(&sent), "{r}");
    assert_eq!(
        num(&r, "errors"),
        sent,
        "each unanswered request is one error: {r}"
    );
    assert!(r.contains("timed out"));
}

#[test]
fn profile_mismatch_is_detected() {
    // The server frames replies with u32 big-endian lengths, the client expects u32
    // little-endian: the client must report errors rather than accept the replies.
    let s = Server::start(&["--codec", LF_BE4]);
    let (rc, r) = load(
        &s.addr,
        &[
            "--codec",
            r#"{"protocol": "length-field", "length_field": {"size": 4}}"#,
            "--connections",
            "1",
            "--requests",
            "10",
            "--payload",
            "8",
            "--mode",
            "per-packet",
            "--timeout-ms",
            "500",
        ],
    );
    assert_eq!(rc, 1, "{r}");
    assert!(num(&r, "errors") >= 1.0);
    assert_eq!(num(&r, "replies_verified"), 0.0);
}

#[test]
fn decode_error_closes_only_that_connection() {
    let s = Server::start(&["--protocol", "standard"]);
    let mut good = TcpStream::connect(&s.addr).unwrap();
    let mut bad = TcpStream::connect(&s.addr).unwrap();
    // A request, then a non-canonical extended header (STD-LEN-3), then a request.
    bad.write_all(&[0x01, 0x07, 0x02, 0x00, b'h', b'i'])
        .unwrap();
    bad.write_all(&[0x01, 0x08, 0xFF, 0xFF, 0x00, 0x01, 0x00, 0x00])
        .unwrap();
    bad.write_all(&[0x01, 0x09, 0x00, 0x00]).unwrap();
    assert_eq!(read_all(&mut bad), vec![0x81, 0x07, 0x02, 0x00, b'h', b'i']);
    // The other connection: a request, a one-way message, a reply frame (no answer for the
    // last two), a kind-63 request, then half-close with a partial frame.
    good.write_all(&[0x01, 0x01, 0x01, 0x00, b'a']).unwrap();
    good.write_all(&[0x41, 0x02, 0x00, 0x00, 0x81, 0x03, 0x00, 0x00])
        .unwrap();
    good.write_all(&[0x3F, 0x04, 0x00, 0x00, 0x01, 0x05, 0x09])
        .unwrap();
    good.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(
        read_all(&mut good),
        vec![0x81, 0x01, 0x01, 0x00, b'a', 0xBF, 0x04, 0x00, 0x00]
    );
    let c = s.stop();
    assert_eq!(num(&c, "connections"), 2.0, "{c}");
    assert_eq!(num(&c, "frames"), 5.0);
    assert_eq!(num(&c, "bytes"), 3.0);
    // The bad header and the partial frame at half-close.
    assert_eq!(num(&c, "protocol_errors"), 2.0);
}

#[test]
fn oversize_header_rejected_without_payload() {
    let s = Server::start(&[
        "--codec",
        r#"{"protocol": "length-field", "limits": {"max_payload": 1000}, "length_field": {"size": 4}}"#,
    ]);
    let mut c = TcpStream::connect(&s.addr).unwrap();
    // 1001 bytes declared, none sent: the server must close from the header alone.
    c.write_all(&[0x02, 0x00, 0x00, 0x00, b'o', b'k', 0xE9, 0x03, 0x00, 0x00])
        .unwrap();
    assert_eq!(read_all(&mut c), vec![0x02, 0x00, 0x00, 0x00, b'o', b'k']);
    let counters = s.stop();
    assert_eq!(num(&counters, "protocol_errors"), 1.0);
}

#[test]
fn refused_connection_still_reports() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (rc, r) = load(
        &format!("127.0.0.1:{port}"),
        &[
            "--protocol",
            "standard",
            "--connections",
            "1",
            "--requests",
            "5",
            "--payload",
            "8",
            "--mode",
            "per-packet",
        ],
    );
    assert_eq!(rc, 1);
    assert_eq!(num(&r, "errors"), 1.0);
    assert_eq!(num(&r, "requests_sent"), 0.0);
    assert!(r.contains("\"error_details\": [\"connection 0"), "{r}");
}
