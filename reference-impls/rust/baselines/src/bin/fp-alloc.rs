//! fp-alloc: heap allocations per operation of the Rust codec path, counted by a global
//! allocator (tools/bench; the Rust counterpart of BenchmarkDotNet's "Allocated" column and of
//! the C# fp-bench bytes/op).
//!
//! One op = one request/reply round trip through the library, in memory (no sockets), exactly
//! what fp-load and fp-server do per message: the client matcher takes the request and the
//! encoder appends it to the client's write buffer; the server decoder decodes it and appends
//! the reply; the client decoder decodes the reply, the matcher completes it and the payload is
//! verified. Buffers are reused across ops as the programs reuse them. `per-packet`: one request
//! in flight; `batched`: a window of requests written, then all replies read (255 for standard,
//! 256 for length-field, the seeds' windows).
//!
//! ```text
//! fp-alloc [--ops N] [--json FILE]
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use bytes::BytesMut;
use fp_net::{fill_payload, payload_matches, Options};
use frameproof_codec::length_field::{LengthFieldDecoder, Profile, DEFAULT_PENDING_BOUND};
use frameproof_codec::matcher::{FifoMatcher, Received, SequenceMatcher};
use frameproof_codec::standard::{self, StandardDecoder};
use frameproof_codec::{FrameDecoder, ProtocolError, DEFAULT_MAX_PAYLOAD};

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

trait Proto {
    /// Client: encode request `idx` into `out` and make it pending.
    fn send(&mut self, idx: u64, payload: &mut [u8], out: &mut BytesMut);
    /// Server: decode everything in `input`, append replies to `out`; returns frames.
    fn serve(&mut self, input: &[u8], out: &mut BytesMut) -> u64;
    /// Client: decode replies in `input`, match and verify; returns verified replies.
    fn receive(&mut self, input: &[u8], len: usize) -> u64;
}

struct Std {
    m: SequenceMatcher<u64>,
    sd: StandardDecoder,
    cd: StandardDecoder,
}

impl Proto for Std {
    fn send(&mut self, idx: u64, p: &mut [u8], out: &mut BytesMut) {
        fill_payload(idx, p);
        self.m
            .send_request(0, idx, |seq| {
                standard::encode(out, 0x01, seq, p, DEFAULT_MAX_PAYLOAD)
            })
            .expect("send");
    }
    fn serve(&mut self, input: &[u8], out: &mut BytesMut) -> u64 {
        self.sd.extend(input);
        let mut n = 0;
        while let Some(f) = self.sd.decode().expect("server decode") {
            standard::put_header(out, 0x80 | f.kind(), f.sequence, f.payload.len());
            out.extend_from_slice(&f.payload);
            n += 1;
        }
        n
    }
    fn receive(&mut self, input: &[u8], len: usize) -> u64 {
        self.cd.extend(input);
        let mut n = 0;
        while let Some(f) = self.cd.decode().expect("client decode") {
            match self.m.receive(f.flag, f.sequence) {
                Received::Reply(idx) if payload_matches(idx, len, &f.payload) => n += 1,
                r => panic!("bad reply {r:?}"),
            }
        }
        n
    }
}

struct Lf {
    p: Profile,
    m: FifoMatcher<u64>,
    sd: LengthFieldDecoder,
    cd: LengthFieldDecoder,
}

impl Proto for Lf {
    fn send(&mut self, idx: u64, p: &mut [u8], out: &mut BytesMut) {
        fill_payload(idx, p);
        let prof = self.p;
        self.m
            .send_request(0, idx, || -> Result<(), ProtocolError> {
                prof.check_encode(p.len(), DEFAULT_MAX_PAYLOAD)?;
                prof.put_header(out, p.len());
                out.extend_from_slice(p);
                Ok(())
            })
            .expect("send");
    }
    fn serve(&mut self, input: &[u8], out: &mut BytesMut) -> u64 {
        self.sd.extend(input);
        let mut n = 0;
        while let Some(f) = self.sd.decode().expect("server decode") {
            self.p.put_header(out, f.len());
            out.extend_from_slice(&f);
            n += 1;
        }
        n
    }
    fn receive(&mut self, input: &[u8], len: usize) -> u64 {
        self.cd.extend(input);
        let mut n = 0;
        while let Some(f) = self.cd.decode().expect("client decode") {
            match self.m.receive() {
                Received::Reply(idx) if payload_matches(idx, len, &f) => n += 1,
                r => panic!("bad reply {r:?}"),
            }
        }
        n
    }
}

/// Runs `ops` round trips in windows of `window`; returns (allocs/op, bytes/op).
fn measure(proto: &mut dyn Proto, len: usize, window: usize, ops: u64) -> (f64, f64) {
    let mut p = vec![0u8; len];
    let mut c2s = BytesMut::with_capacity(64 * 1024);
    let mut s2c = BytesMut::with_capacity(64 * 1024);
    let mut idx = 0u64;
    let mut round = |idx: &mut u64, c2s: &mut BytesMut, s2c: &mut BytesMut| {
        c2s.clear();
        s2c.clear();
        for _ in 0..window {
            proto.send(*idx, &mut p, c2s);
            *idx += 1;
        }
        assert_eq!(proto.serve(c2s, s2c), window as u64);
        assert_eq!(proto.receive(s2c, len), window as u64);
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
    for (proto_name, len) in [
        ("standard", 28usize),
        ("length-field", 30),
        ("standard", 1024),
        ("length-field", 1024),
        ("standard", 65536),
        ("length-field", 65536),
    ] {
        for (mode, w) in [
            ("per-packet", 1usize),
            ("batched", if proto_name == "standard" { 255 } else { 256 }),
        ] {
            let ops = if len >= 65536 { ops / 20 } else { ops };
            let (a, b) = if proto_name == "standard" {
                let mut s = Std {
                    m: SequenceMatcher::new(1 << 40),
                    sd: StandardDecoder::new(DEFAULT_MAX_PAYLOAD),
                    cd: StandardDecoder::new(DEFAULT_MAX_PAYLOAD),
                };
                measure(&mut s, len, w, ops)
            } else {
                let prof = Profile::new(0, if len > 65535 { 4 } else { 2 }).unwrap();
                let mut s = Lf {
                    p: prof,
                    m: FifoMatcher::new(1 << 40, DEFAULT_PENDING_BOUND),
                    sd: LengthFieldDecoder::new(prof, DEFAULT_MAX_PAYLOAD),
                    cd: LengthFieldDecoder::new(prof, DEFAULT_MAX_PAYLOAD),
                };
                measure(&mut s, len, w, ops)
            };
            println!("{proto_name:<14} {mode:<11} {len:>8} {w:>7} {a:>10.3} {b:>10.1}");
            rows.push(format!(
                "{{\"protocol\": \"{proto_name}\", \"mode\": \"{mode}\", \"payload\": {len}, \"window\": {w}, \
\"allocs_per_op\": {a:.4}, \"bytes_per_op\": {b:.1}}}"
            ));
        }
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
