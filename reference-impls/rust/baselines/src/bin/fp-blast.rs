//! fp-blast: the benchmarks' pure-receive client (纯接收, "逐包 Send(32B)"): one `write()` per frame
//! (or `--batch K` frames per write), Nagle on unless `--nodelay`, no replies expected. Used by
//! tools/bench for the pure-receive and packets-per-recv measurements; it follows the fp-load
//! contract for `--mode receive` (options, JSON report) and is validated like the other clients.
//!
//! ```text
//! fp-blast (--codec JSON | --protocol NAME) --connect HOST:PORT --connections N
//!          (--requests N | --duration S) --payload BYTES --mode receive
//!          [--batch K | --window K] [--nodelay] [--timeout-ms MS] [--json FILE]
//! ```
//! Requests are written with the protocol's client (`send_unanswered`: numbered like requests,
//! never pending), so any registered protocol works.
//!
//! Bounded: `--requests` stops at N, `--duration` at S seconds, and either stops at
//! `--timeout-ms` (default 5000) past the duration or 60 s in requests mode. After sending, each
//! connection half-closes and waits (bounded) for the server to close, so the server has counted
//! every frame when the client exits.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use fp_net::{fill_payload, json_f64, Cli, Options, LOAD_CLIENT_OPTIONS};
use frameproof_codec::config::CodecConfig;
use frameproof_codec::protocol::{open_blocking, ClientMatcher, Protocol};
use frameproof_codec::registry::{self, Visitor};

const CLI: Cli = Cli {
    program: "fp-blast",
    usage: "usage: fp-blast (--codec JSON | --protocol NAME) --connect HOST:PORT --connections N \
(--requests N | --duration S) --payload BYTES --mode receive [--batch K | --window K] [--nodelay] \
[--timeout-ms MS] [--json FILE]",
};

fn main() {
    let o = CLI.parse(&[LOAD_CLIENT_OPTIONS, &["batch"]].concat(), &["nodelay"]);
    let codec = CLI.or_die(o.codec());
    let code = CLI.or_die(
        registry::with_protocol(
            &codec,
            Blast {
                o: &o,
                codec: &codec,
            },
        )
        .map_err(|e| e.to_string()),
    );
    std::process::exit(code);
}

struct Blast<'a> {
    o: &'a Options,
    codec: &'a CodecConfig,
}

impl Visitor for Blast<'_> {
    type Output = i32;
    fn visit<P: Protocol>(self, proto: P) -> i32 {
        run(proto, self.o, self.codec)
    }
}

fn die<T>(e: String) -> T {
    CLI.die(&e)
}

fn run<P: Protocol>(proto: P, o: &Options, codec: &CodecConfig) -> i32 {
    let proto = proto.client_side(); // websocket: the client role (masked frames)
    if o.get("mode").unwrap_or("receive") != "receive" {
        CLI.die("only --mode receive");
    }
    let addr = o.required("connect").unwrap_or_else(die).to_string();
    let conns: usize = o.num("connections", 1).unwrap_or_else(die).max(1);
    let requests: Option<u64> = o
        .get("requests")
        .map(|_| o.num("requests", 0).unwrap_or_else(die));
    let duration: Option<f64> = o
        .get("duration")
        .map(|_| o.num("duration", 0.0).unwrap_or_else(die));
    if requests.is_some() == duration.is_some() {
        CLI.die("give exactly one of --requests and --duration");
    }
    let payload: usize = o.num("payload", 32).unwrap_or_else(die);
    if let Err(e) = proto.check_request(payload) {
        CLI.die(&format!("--payload: {e}"));
    }
    // `--window` (the contract option) sets the batch too, so the runner can drive it like fp-load.
    let window: usize = o.num("window", 1).unwrap_or_else(die);
    let batch: usize = o.num("batch", window).unwrap_or_else(die).max(1);
    let timeout = Duration::from_millis(o.num("timeout-ms", 5000).unwrap_or_else(die));
    let nodelay = o.has("nodelay");
    let hard = match duration {
        Some(d) => Duration::from_secs_f64(d) + timeout,
        None => Duration::from_secs(60),
    };
    let start = Instant::now();
    let sent = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicU64::new(0));
    let mut hs = Vec::new();
    for c in 0..conns {
        let quota = requests.map(|n| n / conns as u64 + u64::from((c as u64) < n % conns as u64));
        let (addr, sent, failures, next) =
            (addr.clone(), sent.clone(), failures.clone(), next.clone());
        let proto = proto.clone();
        hs.push(std::thread::spawn(move || {
            let r = blast(
                &addr,
                &proto,
                payload,
                batch,
                nodelay,
                quota,
                duration.map(Duration::from_secs_f64),
                hard,
                start,
                &sent,
                &next,
            );
            if let Err(e) = r {
                eprintln!("fp-blast: connection {c}: {e}");
                failures.fetch_add(1, Relaxed);
            }
        }));
    }
    for h in hs {
        let _ = h.join();
    }
    let secs = start.elapsed().as_secs_f64();
    let n = sent.load(Relaxed);
    let ok = failures.load(Relaxed) == 0 && requests.is_none_or(|r| r == n);
    let mps = n as f64 / secs;
    println!(
        "fp-blast: {n} frames of {payload} B on {conns} connection(s) in {secs:.3} s: {mps:.0} msg/s{}",
        if ok { "" } else { " (FAILED)" }
    );
    if let Some(path) = o.get("json") {
        let j = format!(
            "{{\"implementation\": \"rust-blast\", \"protocol\": \"{}\", \"codec\": {}, \"mode\": \"receive\", \
\"connections\": {conns}, \"window\": {batch}, \"payload\": {payload}, \"requests_sent\": {n}, \"replies_received\": 0, \
\"replies_verified\": 0, \"errors\": 0, \"error_details\": [], \"duration_s\": {}, \"msgs_per_s\": {}, \"mb_per_s\": {}, \
\"variant\": \"{}\", \"streams_completed\": 0, \"streams_per_s\": 0.0, \
\"latency_us\": {{\"p50\": 0, \"p90\": 0, \"p99\": 0, \"p999\": 0, \"max\": 0}}}}\n",
            P::NAME,
            codec.to_json(),
            json_f64(secs, 6),
            json_f64(mps, 1),
            json_f64(mps * payload as f64 / 1e6, 3),
            P::VARIANTS[0]
        );
        if let Err(e) = std::fs::write(path, j) {
            eprintln!("fp-blast: cannot write {path}: {e}");
            return 1;
        }
    }
    if ok {
        0
    } else {
        1
    }
}

#[allow(clippy::too_many_arguments)]
fn blast<P: Protocol>(
    addr: &str,
    proto: &P,
    payload: usize,
    batch: usize,
    nodelay: bool,
    quota: Option<u64>,
    duration: Option<Duration>,
    hard: Duration,
    start: Instant,
    sent: &AtomicU64,
    next: &AtomicU64,
) -> std::io::Result<()> {
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(nodelay)?;
    opening(proto, addr, &mut s, hard.saturating_sub(start.elapsed()))?;
    let mut client = proto.client::<()>(0);
    let mut buf = BytesMut::new();
    let mut done = 0u64;
    loop {
        if quota.is_some_and(|q| done >= q) || start.elapsed() >= duration.unwrap_or(hard) {
            break;
        }
        let k = quota.map_or(batch as u64, |q| (q - done).min(batch as u64));
        buf.clear();
        for _ in 0..k {
            let index = next.fetch_add(1, Relaxed);
            client
                .send_unanswered(payload, &mut buf, |p| fill_payload(index, p))
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        s.write_all(&buf)?;
        done += k;
        sent.fetch_add(k, Relaxed);
    }
    // the protocol's goodbye where it has one (websocket: a close frame, RFC 6455 §7.1.2; HAR-CLI-1), then
    // the end of the write side
    buf.clear();
    if proto.put_goodbye(&mut buf) {
        s.write_all(&buf)?;
    }
    s.shutdown(Shutdown::Write)?;
    // Wait (bounded) for the server to close: then it has read every frame.
    let left = hard
        .saturating_sub(start.elapsed())
        .max(Duration::from_millis(500));
    s.set_read_timeout(Some(left))?;
    let mut scratch = [0u8; 4096];
    loop {
        match s.read(&mut scratch) {
            Ok(0) => return Ok(()),
            Ok(_) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The protocol's opening handshake, where it has one (websocket), before any frame; bounded by
/// `left`. Bytes after the server's answer would be frames, which a receive-only server never sends.
fn opening<P: Protocol>(
    proto: &P,
    addr: &str,
    s: &mut TcpStream,
    left: Duration,
) -> std::io::Result<()> {
    let Some(opening) = proto.opening(addr) else {
        return Ok(());
    };
    s.set_read_timeout(Some(left.max(Duration::from_millis(500))))?;
    open_blocking(opening.as_ref(), s)
        .map(|_| ())
        .map_err(|e| std::io::Error::other(format!("opening handshake: {e}")))
}
