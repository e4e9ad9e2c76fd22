//! fp-alloc: heap allocations per operation of the Rust codec path, counted by a global
//! allocator (tools/bench; the Rust counterpart of BenchmarkDotNet's "Allocated" column and of
//! the C# fp-bench bytes/op).
//!
//! One op = one request/reply round trip through the library, in memory (no sockets), exactly
//! what fp-load and fp-server do per message: the client matcher takes the request and the
//! encoder appends it to the client's write buffer; the server decoder decodes it and appends
//! the reply; the client decoder decodes the reply, the matcher completes it and the payload is
//! verified. Buffers are reused across ops as the programs reuse them. `per-packet`: one request
//! in flight; `batched`: a window of requests written, then all replies read (the protocol's
//! in-flight bound: 255 for standard, 256 for length-field).
//!
//! ```text
//! fp-alloc [--ops N] [--json FILE]
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use bytes::BytesMut;
use fp_net::{fill_payload, payload_matches, Options};
use frameproof_codec::config::CodecConfig;
use frameproof_codec::matcher::Received;
use frameproof_codec::protocol::{ClientMatcher, Protocol, ServerSession};
use frameproof_codec::registry::{self, Visitor};
use frameproof_codec::FrameDecoder;

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(l.size() as u64, Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(l.size() as u64, Relaxed);
        System.alloc_zeroed(l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(n as u64, Relaxed);
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Runs `ops` round trips in windows of `window` through the client, a server session and the
/// client's decoder of `proto`; returns (allocs/op, bytes/op).
fn measure<P: Protocol>(proto: &P, len: usize, window: usize, ops: u64) -> (f64, f64) {
    let mut client = proto.client::<u64>(1 << 40);
    let mut server = proto.session("", false).expect("the default endpoint");
    let mut replies = proto.decoder();
    let mut c2s = BytesMut::with_capacity(64 * 1024);
    let mut s2c = BytesMut::with_capacity(64 * 1024);
    let mut idx = 0u64;
    let mut round = |idx: &mut u64, c2s: &mut BytesMut, s2c: &mut BytesMut| {
        c2s.clear();
        s2c.clear();
        for _ in 0..window {
            let i = *idx;
            client
                .send_request(0, i, len, c2s, |p| fill_payload(i, p))
                .expect("send");
            *idx += 1;
        }
        server.extend(c2s);
        let served = server.process(s2c);
        assert_eq!((served.frames, served.error), (window as u64, None));
        replies.extend(s2c);
        let mut n = 0;
        while let Some(f) = replies.decode().expect("client decode") {
            match client.receive(&f) {
                Received::Reply(i) if payload_matches(i, len, P::payload(&f)) => n += 1,
                _ => panic!("bad reply"),
            }
        }
        assert_eq!(n, window);
    };
    for _ in 0..(1000 / window).max(4) {
        round(&mut idx, &mut c2s, &mut s2c); // warm-up: buffers reach their steady size
    }
    let rounds = (ops / window as u64).max(1);
    let (a0, b0) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed));
    for _ in 0..rounds {
        round(&mut idx, &mut c2s, &mut s2c);
    }
    let n = (rounds * window as u64) as f64;
    (
        (ALLOCS.load(Relaxed) - a0) as f64 / n,
        (BYTES.load(Relaxed) - b0) as f64 / n,
    )
}

/// One row per mode: per-packet (window 1) and batched (the protocol's in-flight bound).
struct Rows {
    len: usize,
    ops: u64,
}

impl Visitor for Rows {
    type Output = Vec<String>;
    fn visit<P: Protocol>(self, proto: P) -> Vec<String> {
        let len = self.len;
        let mut rows = Vec::new();
        for (mode, w) in [("per-packet", 1usize), ("batched", proto.max_in_flight().0)] {
            let (a, b) = measure(&proto, len, w, self.ops);
            let name = P::NAME;
            println!("{name:<14} {mode:<11} {len:>8} {w:>7} {a:>10.3} {b:>10.1}");
            rows.push(format!(
                "{{\"protocol\": \"{name}\", \"mode\": \"{mode}\", \"payload\": {len}, \"window\": {w}, \
\"allocs_per_op\": {a:.4}, \"bytes_per_op\": {b:.1}}}"
            ));
        }
        rows
    }
}

fn main() {
    let o = Options::parse(std::env::args().skip(1), &["ops", "json"], &[]).unwrap_or_else(|e| {
        eprintln!("fp-alloc: {e}\nusage: fp-alloc [--ops N] [--json FILE]");
        std::process::exit(2)
    });
    let ops: u64 = o.num("ops", 100_000).unwrap_or(100_000).max(256);
    // Self-check: the counter sees a known allocation.
    let a0 = ALLOCS.load(Relaxed);
    let v = std::hint::black_box(vec![0u8; 100]);
    assert_eq!(
        ALLOCS.load(Relaxed) - a0,
        1,
        "the counting allocator does not count"
    );
    drop(v);
    let mut rows = Vec::new();
    println!(
        "fp-alloc (rust, counting global allocator): allocations per request/reply round trip"
    );
    println!(
        "{:<14} {:<11} {:>8} {:>7} {:>10} {:>10}",
        "protocol", "mode", "payload", "window", "allocs/op", "bytes/op"
    );
    const STANDARD: &str = r#"{"protocol": "standard"}"#;
    const LF_2: &str = r#"{"protocol": "length-field"}"#;
    const LF_4: &str = r#"{"protocol": "length-field", "length_field": {"size": 4}}"#;
    for (codec, len) in [
        (STANDARD, 28usize),
        (LF_2, 30),
        (STANDARD, 1024),
        (LF_2, 1024),
        (STANDARD, 65536),
        (LF_4, 65536),
    ] {
        let ops = if len >= 65536 { ops / 20 } else { ops };
        let cfg = CodecConfig::parse(codec).expect("a valid codec");
        rows.extend(
            registry::with_protocol(&cfg, Rows { len, ops }).expect("a registered protocol"),
        );
    }
    if let Some(path) = o.get("json") {
        let j = format!(
            "{{\"implementation\": \"rust\", \"allocation_counter\": \"counting #[global_allocator] (alloc, alloc_zeroed, realloc)\", \
\"op\": \"in-memory request/reply round trip: client match+encode, server decode+encode, client decode+match+verify\", \
\"results\": [{}]}}\n",
            rows.join(", ")
        );
        std::fs::write(path, j).unwrap_or_else(|e| {
            eprintln!("fp-alloc: cannot write {path}: {e}");
            std::process::exit(1)
        });
    }
}
