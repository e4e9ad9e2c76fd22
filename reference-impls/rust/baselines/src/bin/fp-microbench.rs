//! fp-microbench: the codec micro-benchmarks of tools/bench/microbench.md, one case per run.
//!
//! ```text
//! fp-microbench --case NAME --iterations N --json FILE [--samples S] [--warmup W]
//! fp-microbench --list
//! ```
//!
//! Cases `<protocol>/<op>/<payload>/<frames_per_read>` for every registered protocol (`decode`
//! and `encode`, payloads 32, 1024, 65536, 1 and 16 frames per read) and each protocol's own
//! (`Protocol::BENCH_EXTRA`: websocket `mask` and `utf8`). Generic over the protocol: the
//! registry builds it, and its hooks give the requests as fp-load writes them
//! (`Protocol::bench_requests`), the reply path's encoder (`Protocol::bench_reply`) and the
//! extra routines. Exactly W + S x N iterations run (the iteration-count mode callgrind needs);
//! allocations are counted by a counting `#[global_allocator]` during the first timed sample.
//! A case this program does not have: exit 3, no JSON.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use bytes::BytesMut;
use fp_net::{fill_payload, json_f64, json_string, Cli};
use frameproof_codec::config::CodecConfig;
use frameproof_codec::protocol::Protocol;
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
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new as u64, Relaxed);
        System.realloc(p, l, new)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const CLI: Cli = Cli {
    program: "fp-microbench",
    usage: "usage: fp-microbench --case NAME --iterations N --json FILE [--samples S] [--warmup W]\n       \
fp-microbench --list",
};

const PAYLOADS: [usize; 3] = [32, 1024, 65536];
const FRAMES: [usize; 2] = [1, 16];
/// Exit status for a case this program does not have.
const NO_CASE: i32 = 3;

/// One case of the catalog.
#[derive(Clone, Debug, PartialEq)]
struct Case {
    protocol: String,
    op: String,
    payload: usize,
    frames: usize,
}

impl Case {
    fn name(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.protocol, self.op, self.payload, self.frames
        )
    }

    fn parse(name: &str) -> Option<Case> {
        let p: Vec<&str> = name.split('/').collect();
        if p.len() != 4 {
            return None;
        }
        Some(Case {
            protocol: p[0].into(),
            op: p[1].into(),
            payload: p[2].parse().ok()?,
            frames: p[3].parse().ok()?,
        })
    }
}

/// The cases of one protocol.
struct ListCases;

impl Visitor for ListCases {
    type Output = Vec<Case>;
    fn visit<P: Protocol>(self, _proto: P) -> Vec<Case> {
        let mut out = Vec::new();
        for op in ["decode", "encode"] {
            for payload in PAYLOADS {
                for frames in FRAMES {
                    out.push(Case {
                        protocol: P::NAME.into(),
                        op: op.into(),
                        payload,
                        frames,
                    });
                }
            }
        }
        for (op, payload) in P::BENCH_EXTRA {
            out.push(Case {
                protocol: P::NAME.into(),
                op: op.to_string(),
                payload: *payload,
                frames: 1,
            });
        }
        out
    }
}

fn all_cases() -> Vec<Case> {
    registry::PROTOCOLS
        .iter()
        .flat_map(|name| {
            registry::with_protocol(&CodecConfig::named(name), ListCases).unwrap_or_default()
        })
        .collect()
}

/// How a case is run: the number of iterations of each phase.
#[derive(Clone, Copy)]
struct Plan {
    iterations: u64,
    samples: usize,
    warmup: u64,
}

/// What a run measured.
struct Measured {
    sample_ns: Vec<f64>,
    allocs: u64,
    alloc_bytes: u64,
    bytes_per_frame: usize,
    checksum: u64,
}

/// Runs `iteration` W + S x N times: the warmup, then S timed samples, counting the allocations
/// of the first.
fn measure(plan: Plan, mut iteration: impl FnMut() -> u64) -> (Vec<f64>, u64, u64, u64) {
    let mut checksum = 0u64;
    for _ in 0..plan.warmup {
        checksum = checksum.wrapping_add(iteration());
    }
    let mut ns = Vec::with_capacity(plan.samples);
    let (mut allocs, mut bytes) = (0, 0);
    for s in 0..plan.samples {
        let (a0, b0) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed));
        let t = Instant::now();
        for _ in 0..plan.iterations {
            checksum = checksum.wrapping_add(iteration());
        }
        let dt = t.elapsed().as_nanos() as f64;
        if s == 0 {
            allocs = ALLOCS.load(Relaxed) - a0;
            bytes = BYTES.load(Relaxed) - b0;
        }
        ns.push(dt.max(1.0));
    }
    (ns, allocs, bytes, black_box(checksum))
}

/// Runs one case with the protocol the case's codec names.
struct Run {
    case: Case,
    plan: Plan,
}

impl Visitor for Run {
    type Output = Result<Measured, String>;
    fn visit<P: Protocol>(self, proto: P) -> Result<Measured, String> {
        let Run { case, plan } = self;
        let f = case.frames;
        if case.op != "decode" && case.op != "encode" {
            let (mut input, routine) = proto
                .bench_extra(&case.op, case.payload)
                .ok_or_else(|| format!("no routine for {}", case.name()))?;
            let (sample_ns, allocs, alloc_bytes, checksum) =
                measure(plan, || routine(black_box(&mut input[..])));
            return Ok(Measured {
                sample_ns,
                allocs,
                alloc_bytes,
                bytes_per_frame: case.payload,
                checksum,
            });
        }
        // The read: F requests exactly as the load client writes them.
        let mut read = BytesMut::new();
        proto.bench_requests(f, case.payload, &mut read, &mut |i, p| fill_payload(i, p))?;
        // The request frames, decoded once (the encode case's replies answer them).
        let mut dec = proto.decoder();
        dec.buffer_mut().extend_from_slice(&read);
        let mut requests = Vec::with_capacity(f);
        while let Some(fr) = dec
            .decode()
            .map_err(|e| format!("the read does not decode: {e}"))?
        {
            requests.push(fr);
        }
        if requests.len() != f {
            return Err(format!(
                "the read decodes to {} frames, not {f}",
                requests.len()
            ));
        }
        if case.op == "decode" {
            let mut dec = proto.decoder();
            dec.buffer_mut().reserve(read.len());
            let mut frames = 0u64;
            let (sample_ns, allocs, alloc_bytes, checksum) = measure(plan, || {
                // (1) the read lands in the decoder's buffer, (2) every frame out, (3) consumed.
                dec.buffer_mut().extend_from_slice(&read);
                let mut sum = 0u64;
                // The whole frames the server answers where they lie, then the rest as frames.
                frames += proto.bench_drain(&mut dec, &mut |p| {
                    sum = sum.wrapping_add(p.len() as u64 + p.first().copied().unwrap_or(0) as u64);
                });
                while let Ok(Some(fr)) = dec.decode() {
                    let p = P::payload(&fr);
                    sum = sum.wrapping_add(p.len() as u64 + p.first().copied().unwrap_or(0) as u64);
                    frames += 1;
                }
                sum
            });
            let want = plan.warmup + plan.iterations * plan.samples as u64;
            if frames != want * f as u64 || !dec.buffer_mut().is_empty() {
                return Err(format!(
                    "decoded {frames} frames in {want} iterations of {f}"
                ));
            }
            return Ok(Measured {
                sample_ns,
                allocs,
                alloc_bytes,
                bytes_per_frame: read.len() / f,
                checksum,
            });
        }
        let mut out = BytesMut::new();
        if !requests.iter().all(|r| proto.bench_reply(r, &mut out)) {
            return Err(format!("{} has no reply encoder", P::NAME));
        }
        // the replies are what a client accepts: one each, in order, each a valid reply carrying its
        // request's payload (a reply path that writes nothing, or wrong bytes, is not measured)
        let client = proto.clone().client_side();
        let mut replies = client.decoder();
        replies.buffer_mut().extend_from_slice(&out);
        for (i, r) in requests.iter().enumerate() {
            match replies.decode() {
                Ok(Some(reply)) => {
                    if let Err(why) = client.check_reply(&reply) {
                        return Err(format!("reply {i}: {why}"));
                    }
                    if P::payload(&reply) != P::payload(r) {
                        return Err(format!("reply {i}: its payload differs from the request's"));
                    }
                }
                Ok(None) => return Err(format!("reply {i} of {f} missing ({} bytes written)", out.len())),
                Err(e) => return Err(format!("reply {i} of {f} does not decode: {e}")),
            }
        }
        if !replies.buffer_mut().is_empty() {
            return Err(format!("{} bytes after the {f} replies", replies.buffer_mut().len()));
        }
        let bytes_per_frame = out.len() / f;
        out.clear();
        let (sample_ns, allocs, alloc_bytes, checksum) = measure(plan, || {
            out.clear();
            for r in &requests {
                proto.bench_reply(r, &mut out);
            }
            out.len() as u64 + out.last().copied().unwrap_or(0) as u64
        });
        Ok(Measured {
            sample_ns,
            allocs,
            alloc_bytes,
            bytes_per_frame,
            checksum,
        })
    }
}

fn main() {
    let opts = CLI.parse(
        &["case", "iterations", "json", "samples", "warmup"],
        &["list"],
    );
    if opts.has("list") {
        for c in all_cases() {
            println!("{}", c.name());
        }
        return;
    }
    let name = CLI.or_die(opts.required("case")).to_string();
    let iterations: u64 = CLI.or_die(opts.num("iterations", 0));
    let samples: usize = CLI.or_die(opts.num("samples", 11));
    if iterations == 0 || samples == 0 {
        CLI.die("--iterations and --samples must be positive");
    }
    let warmup: u64 = CLI.or_die(opts.num("warmup", (iterations / 10).max(1)));
    let json = CLI.or_die(opts.required("json")).to_string();
    let case = match Case::parse(&name).filter(|c| all_cases().contains(c)) {
        Some(c) => c,
        None => {
            eprintln!("fp-microbench: no such case here: {name}");
            std::process::exit(NO_CASE);
        }
    };
    // The case's codec: the protocol's default, or its benchmark profile for the payload.
    let named = CodecConfig::named(&case.protocol);
    let codec = registry::with_protocol(&named, BenchCodec(case.payload))
        .ok()
        .flatten()
        .unwrap_or(named);
    let plan = Plan {
        iterations,
        samples,
        warmup,
    };
    let m = match registry::with_protocol(
        &codec,
        Run {
            case: case.clone(),
            plan,
        },
    ) {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => {
            eprintln!("fp-microbench: {}: {e}", case.name());
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("fp-microbench: {}: {e}", case.name());
            std::process::exit(1);
        }
    };
    let per = (iterations * case.frames as u64) as f64;
    let mut ns: Vec<f64> = m.sample_ns.iter().map(|t| t / per).collect();
    ns.sort_by(|a, b| a.total_cmp(b));
    let median = if ns.len() % 2 == 1 {
        ns[ns.len() / 2]
    } else {
        (ns[ns.len() / 2 - 1] + ns[ns.len() / 2]) / 2.0
    };
    let text = format!(
        "{{\"schema\": \"frameproof-microbench/1\", \"implementation\": \"rust\", \"case\": {}, \
\"protocol\": {}, \"op\": {}, \"payload\": {}, \"frames_per_read\": {}, \"iterations\": {iterations}, \
\"samples\": {samples}, \"warmup_iterations\": {warmup}, \"ns_per_frame\": {{\"median\": {}, \"min\": {}, \
\"max\": {}, \"n\": {}}}, \"bytes_per_frame\": {}, \"allocs_per_frame\": {}, \"bytes_alloc_per_frame\": {}, \
\"allocation_counter\": \"counting #[global_allocator]\", \"instructions_per_frame\": null, \"checksum\": {}}}\n",
        json_string(&case.name()),
        json_string(&case.protocol),
        json_string(&case.op),
        case.payload,
        case.frames,
        json_f64(median.max(1e-6), 4),
        json_f64(ns[0].max(1e-6), 4),
        json_f64(ns[ns.len() - 1].max(1e-6), 4),
        ns.len(),
        m.bytes_per_frame,
        json_f64(m.allocs as f64 / per, 6),
        json_f64(m.alloc_bytes as f64 / per, 6),
        m.checksum & ((1 << 53) - 1),
    );
    if let Err(e) = std::fs::write(&json, text) {
        eprintln!("fp-microbench: cannot write {json}: {e}");
        std::process::exit(1);
    }
}

/// The protocol's benchmark codec for a payload (`Protocol::bench_codec`).
struct BenchCodec(usize);

impl Visitor for BenchCodec {
    type Output = Option<CodecConfig>;
    fn visit<P: Protocol>(self, _proto: P) -> Option<CodecConfig> {
        P::bench_codec(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_of_the_catalog_runs_and_counts_its_frames() {
        let cases = all_cases();
        assert_eq!(cases.len(), registry::PROTOCOLS.len() * 12 + 3);
        let plan = Plan {
            iterations: 2,
            samples: 2,
            warmup: 1,
        };
        for case in cases {
            assert_eq!(Case::parse(&case.name()).as_ref(), Some(&case));
            let named = CodecConfig::named(&case.protocol);
            let codec = registry::with_protocol(&named, BenchCodec(case.payload))
                .unwrap()
                .unwrap_or(named);
            let m = registry::with_protocol(
                &codec,
                Run {
                    case: case.clone(),
                    plan,
                },
            )
            .unwrap()
            .unwrap_or_else(|e| panic!("{}: {e}", case.name()));
            assert_eq!(m.sample_ns.len(), 2);
            assert!(m.bytes_per_frame >= case.payload, "{}", case.name());
            assert!(m.checksum > 0, "{}", case.name());
        }
        assert!(Case::parse("standard/decode/32").is_none());
    }
}
