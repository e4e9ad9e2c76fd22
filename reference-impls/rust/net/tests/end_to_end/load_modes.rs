//! The load client's modes against the server: pipelined, per-packet, receive (against a sink),
//! by duration and batched; the counts of both sides agree and the report names what was run.

use std::time::{Duration, Instant};

use crate::common::{load, load_protocol, num, Server, LF_1, LF_BE4};

#[test]
fn standard_pipelined_counts_agree() {
    let s = Server::start(&["--protocol", "standard"]);
    let (rc, r) = load_protocol(
        &s,
        "standard",
        &[
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

#[test]
fn batched_mode_awaits_each_batch() {
    let srv = Server::start(&["--protocol", "standard"]);
    let batched =
        |more: &[&str]| load_protocol(&srv, "standard", &[&["--mode", "batched"], more].concat());
    let (code, json) = batched(&["--batch", "10", "--requests", "95"]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(num(&json, "replies_verified"), 95.0);
    assert_eq!(num(&json, "window"), 10.0);
    assert!(json.contains("\"mode\": \"batched\""), "{json}");
    // the default batch is the protocol's (`Protocol::DEFAULT_BATCH`)
    let (code, json) = batched(&["--requests", "600"]);
    assert_eq!((code, num(&json, "window")), (0, 255.0), "{json}");
    let counters = srv.stop();
    assert_eq!(num(&counters, "frames"), 695.0, "{counters}");
}
