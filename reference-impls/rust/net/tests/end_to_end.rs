//! End-to-end tests of the fp-server and fp-load binaries on 127.0.0.1: the counts of the load
//! client agree with the server's, errors close only the offending connection, half-close gets
//! every reply, and the load client detects missing replies (and stops, bounded by its timeout).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    stdout: BufReader<ChildStdout>,
    addr: String,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fp-server"))
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--threads", "2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start fp-server");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let addr = line
            .strip_prefix("LISTENING ")
            .unwrap_or_else(|| panic!("first line {line:?}"))
            .trim()
            .to_string();
        Server {
            child,
            stdout,
            addr,
        }
    }

    /// SIGTERM, then the counters line.
    fn stop(mut self) -> String {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "fp-server exit status {status}");
        rest.lines().last().unwrap_or("").to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs fp-load; returns its exit code and JSON report.
fn load(addr: &str, args: &[&str]) -> (i32, String) {
    let json = std::env::temp_dir().join(format!(
        "fp-load-test-{}-{}.json",
        std::process::id(),
        args.join("_")
            .replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "")
    ));
    let status = Command::new(env!("CARGO_BIN_EXE_fp-load"))
        .args(["--connect", addr])
        .args(args)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .status()
        .expect("run fp-load");
    let report = std::fs::read_to_string(&json).expect("JSON report");
    let _ = std::fs::remove_file(&json);
    (status.code().unwrap_or(-1), report)
}

/// The number after `"key": ` in a flat JSON text.
fn num(json: &str, key: &str) -> f64 {
    let pat = format!("\"{key}\": ");
    let at = json
        .find(&pat)
        .unwrap_or_else(|| panic!("{key} missing in {json}"))
        + pat.len();
    let end = json[at..]
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .map_or(json.len(), |e| at + e);
    json[at..end].parse().unwrap()
}

const LF_BE4: &str = r#"{"protocol": "length-field", "length_field": {"size": -4}}"#;
const LF_1: &str = r#"{"protocol":"length-field","length_field":{"size":1}}"#;

#[test]
fn standard_pipelined_counts_agree() {
    let s = Server::start(&["--protocol", "standard"]);
    let (rc, r) = load(
        &s.addr,
        &[
            "--protocol",
            "standard",
            "--connections",
            "3",
            "--requests",
            "5000",
            "--payload",
            "100",
            "--mode",
            "pipelined",
            "--window",
            "64",
        ],
    );
    assert_eq!(rc, 0, "{r}");
    for key in [
        "implementation",
        "protocol",
        "codec",
        "mode",
        "connections",
        "window",
        "payload",
        "requests_sent",
        "replies_received",
        "replies_verified",
        "errors",
        "error_details",
        "duration_s",
        "msgs_per_s",
        "mb_per_s",
        "latency_us",
        "p50",
        "p90",
        "p99",
        "p999",
        "max",
    ] {
        assert!(r.contains(&format!("\"{key}\": ")), "{key} missing: {r}");
    }
    assert!(r.contains("\"implementation\": \"rust\""));
    assert!(
        r.contains("\"protocol\": \"standard\", \"codec\": {\"protocol\": \"standard\"}, "),
        "{r}"
    );
    assert_eq!(num(&r, "requests_sent"), 5000.0);
    assert_eq!(num(&r, "replies_verified"), 5000.0);
    assert_eq!(num(&r, "errors"), 0.0);
    assert!(num(&r, "max") >= num(&r, "p50"));
    let c = s.stop();
    assert_eq!(num(&c, "connections"), 3.0, "{c}");
    assert_eq!(num(&c, "frames"), 5000.0);
    assert_eq!(num(&c, "bytes"), 500_000.0);
    assert_eq!(num(&c, "protocol_errors"), 0.0);
}

#[test]
fn length_field_varint_offset_per_packet() {
    let prof = [
        "--codec",
        r#"{"protocol": "length-field", "length_field": {"offset": 3, "size": 0}}"#,
    ];
    let s = Server::start(&prof);
    let mut args = prof.to_vec();
    args.extend([
        "--connections",
        "2",
        "--requests",
        "301",
        "--payload",
        "200",
        "--mode",
        "per-packet",
    ]);
    let (rc, r) = load(&s.addr, &args);
    assert_eq!(rc, 0, "{r}");
    assert_eq!(num(&r, "replies_verified"), 301.0);
    assert_eq!(num(&r, "window"), 1.0);
    let c = s.stop();
    assert_eq!(num(&c, "frames"), 301.0);
}

#[test]
fn receive_mode_against_sink() {
    let s = Server::start(&["--codec", LF_BE4, "--sink"]);
    let (rc, r) = load(
        &s.addr,
        &[
            "--codec",
            LF_BE4,
            "--connections",
            "3",
            "--requests",
            "100001",
            "--payload",
            "30",
            "--mode",
            "receive",
        ],
    );
    assert_eq!(rc, 0, "{r}");
    assert_eq!(num(&r, "requests_sent"), 100001.0);
    assert_eq!(num(&r, "replies_received"), 0.0);
    assert_eq!(num(&r, "p99"), 0.0);
    let c = s.stop();
    assert_eq!(num(&c, "frames"), 100001.0);
    assert_eq!(num(&c, "bytes"), 3_000_030.0);
}

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

fn read_all(s: &mut TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out)
        .expect("the server closes the connection");
    out
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
fn duration_mode_counts_agree() {
    for mode in ["per-packet", "pipelined", "receive"] {
        let mut sargs = vec!["--codec", LF_1];
        if mode == "receive" {
            sargs.push("--sink");
        }
        let s = Server::start(&sargs);
        let t = Instant::now();
        let mut args = vec![
            "--codec",
            LF_1,
            "--connections",
            "3",
            "--duration",
            "0.3",
            "--payload",
            "255",
            "--mode",
            mode,
        ];
        if mode != "per-packet" {
            args.extend(["--window", "50"]);
        }
        let (rc, r) = load(&s.addr, &args);
        assert!(t.elapsed() < Duration::from_secs(5), "{mode}");
        assert_eq!(rc, 0, "{mode}: {r}");
        let sent = num(&r, "requests_sent");
        assert!(sent > 0.0, "{mode}: {r}");
        if mode != "receive" {
            assert_eq!(num(&r, "replies_verified"), sent, "{mode}: {r}");
        }
        let d = num(&r, "duration_s");
        assert!((0.25..3.0).contains(&d), "{mode}: duration {d}");
        let c = s.stop();
        assert_eq!(num(&c, "frames"), sent, "{mode}: {c} vs {r}");
        assert_eq!(num(&c, "bytes"), sent * 255.0, "{mode}");
    }
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

#[test]
fn length_field_codec_is_reported_as_given() {
    let s = Server::start(&["--codec", LF_1]);
    let (rc, r) = load(
        &s.addr,
        &["--codec", LF_1, "--requests", "3", "--payload", "8"],
    );
    assert_eq!(rc, 0, "{r}");
    assert!(
        r.contains(r#""protocol": "length-field", "codec": {"protocol": "length-field", "length_field": {"size": 1}}, "mode": "per-packet""#),
        "{r}"
    );
    assert_eq!(num(&r, "window"), 1.0);
    assert_eq!(num(&r, "connections"), 1.0);
    assert_eq!(num(&r, "payload"), 8.0);
}

/// Runs a program with `args`; returns its exit code, stdout and stderr.
fn run_program(bin: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin).args(args).output().expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let server = env!("CARGO_BIN_EXE_fp-server");
    let load = env!("CARGO_BIN_EXE_fp-load");
    let std_codec = r#"{"protocol": "standard"}"#;
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            server,
            vec!["--listen", "127.0.0.1:0"],
            "--codec or --protocol is required",
        ),
        (
            server,
            vec![
                "--protocol",
                "standard",
                "--codec",
                std_codec,
                "--listen",
                "127.0.0.1:0",
            ],
            "not both",
        ),
        (
            server,
            vec!["--codec", "{\"protocol\"", "--listen", "127.0.0.1:0"],
            "not valid JSON",
        ),
        (
            server,
            vec![
                "--codec",
                r#"{"protocol": "standard", "sise": 1}"#,
                "--listen",
                "127.0.0.1:0",
            ],
            "\"sise\"",
        ),
        (
            server,
            vec![
                "--codec",
                r#"{"protocol": "length-field", "length_field": {"size": 3}}"#,
                "--listen",
                "127.0.0.1:0",
            ],
            "LF-FMT-3",
        ),
        (
            server,
            vec!["--protocol", "smtp", "--listen", "127.0.0.1:0"],
            "not implemented",
        ),
        (
            server,
            vec![
                "--protocol",
                "length-field",
                "--lf-size",
                "4",
                "--listen",
                "127.0.0.1:0",
            ],
            "unknown option --lf-size",
        ),
        (
            server,
            vec![
                "--protocol",
                "standard",
                "--max-payload",
                "9",
                "--listen",
                "127.0.0.1:0",
            ],
            "unknown option --max-payload",
        ),
        (
            server,
            vec!["--protocol", "standard"],
            "--listen is required",
        ),
        (
            load,
            vec![
                "--protocol",
                "standard",
                "--connect",
                "127.0.0.1:9",
                "--requests",
                "1",
                "--lf-offset",
                "2",
            ],
            "unknown option --lf-offset",
        ),
        (
            load,
            vec![
                "--protocol",
                "standard",
                "--connect",
                "127.0.0.1:9",
                "--requests",
                "1",
                "--window",
                "2",
            ],
            "per-packet",
        ),
        (
            load,
            vec![
                "--protocol",
                "standard",
                "--connect",
                "127.0.0.1:9",
                "--requests",
                "1",
                "--mode",
                "pipelined",
                "--window",
                "256",
            ],
            "STD-SEQ-3",
        ),
        (
            load,
            vec![
                "--protocol",
                "length-field",
                "--connect",
                "127.0.0.1:9",
                "--requests",
                "1",
                "--mode",
                "pipelined",
                "--window",
                "257",
            ],
            "LF-MATCH-4",
        ),
        (
            load,
            vec![
                "--codec",
                r#"{"protocol": "length-field", "length_field": {"size": 1}}"#,
                "--connect",
                "127.0.0.1:9",
                "--requests",
                "1",
                "--payload",
                "256",
            ],
            "LF-LEN-1",
        ),
        (
            load,
            vec![
                "--codec",
                r#"{"protocol": "standard", "limits": {"max_payload": 10}}"#,
                "--connect",
                "127.0.0.1:9",
                "--requests",
                "1",
            ],
            "STD-LIM-2",
        ),
        (
            load,
            vec!["--connect", "127.0.0.1:9", "--requests", "1"],
            "--codec or --protocol is required",
        ),
    ];
    for (bin, args, want) in cases {
        let (rc, stdout, stderr) = run_program(bin, &args);
        assert_eq!(rc, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: stdout {stdout:?}");
        assert!(stderr.starts_with("usage error: "), "{args:?}: {stderr}");
        assert!(
            stderr.lines().next().unwrap().contains(want),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("usage: "), "{args:?}: {stderr}");
    }
    for bin in [server, load] {
        let (rc, stdout, _) = run_program(bin, &["--help"]);
        assert_eq!(rc, 0);
        assert!(stdout.starts_with("usage: ") && stdout.contains("--codec JSON | --protocol NAME"));
    }
}

#[test]
fn rpc_calls_and_streams_on_one_port() {
    let srv = Server::start(&["--protocol", "rpc"]);
    // unary calls in the bidi mode, pipelined: every RESPONSE checked (flags 0x07, code 0)
    let (code, json) = load(
        &srv.addr,
        &[
            "--protocol",
            "rpc",
            "--variant",
            "bidi",
            "--mode",
            "pipelined",
            "--window",
            "8",
            "--connections",
            "2",
            "--requests",
            "300",
        ],
    );
    assert_eq!(code, 0, "{json}");
    assert_eq!(num(&json, "replies_verified"), 300.0);
    assert!(json.contains("\"variant\": \"bidi\""), "{json}");
    assert_eq!(num(&json, "streams_completed"), 0.0);
    // streams on the same port: the first frame picks the stream endpoint (RPC-ECHO-7)
    let (code, json) = load(
        &srv.addr,
        &[
            "--protocol",
            "rpc",
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
        let (code, json) = load(
            &srv.addr,
            &[
                "--protocol",
                "websocket",
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
                "--payload",
                "33",
            ],
        );
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

#[test]
fn batched_mode_awaits_each_batch() {
    let srv = Server::start(&["--protocol", "standard"]);
    let (code, json) = load(
        &srv.addr,
        &[
            "--protocol",
            "standard",
            "--mode",
            "batched",
            "--batch",
            "10",
            "--requests",
            "95",
        ],
    );
    assert_eq!(code, 0, "{json}");
    assert_eq!(num(&json, "replies_verified"), 95.0);
    assert_eq!(num(&json, "window"), 10.0);
    assert!(json.contains("\"mode\": \"batched\""), "{json}");
    // the default batch is the protocol's (`Protocol::DEFAULT_BATCH`)
    let (code, json) = load(
        &srv.addr,
        &[
            "--protocol",
            "standard",
            "--mode",
            "batched",
            "--requests",
            "600",
        ],
    );
    assert_eq!((code, num(&json, "window")), (0, 255.0), "{json}");
    let counters = srv.stop();
    assert_eq!(num(&counters, "frames"), 695.0, "{counters}");
}
