//! fp-discovery-bench: upstream's B3 (galay-rpc `benchmark/b3_discovery.cpp`) and the case it
//! avoided, printed beside upstream's published B3 figure (spec/discovery.md §9).
//!
//! Every worker loops register -> discover -> deregister (3 operations per round) with upstream's
//! endpoint shape (service `BenchService<w % 10>`, instance `instance-<w>`, port 9000 + w % 100,
//! weight 100). Modes:
//!   private  each worker has its own registry (B3: nothing is ever contended)
//!   shared   every worker on one registry (distinct instance ids; services shared by 10 workers)
//!   hot      every worker on one registry and one service (the most contended case)
//! Upstream's workers are coroutines on IO schedulers; here they are OS threads.
//!
//!   fp-discovery-bench [--threads N] [--seconds S] [--mode private|shared|hot|both|all] [--json FILE]
//!   fp-discovery-bench --etcd ENDPOINTS [--threads N] [--seconds S] [--samples N] [--json FILE]
//!
//! `--etcd` measures the etcd registry instead (on_etcd.rs; needs the `etcd` feature).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use frameproof_discovery::{Endpoint, LocalRegistry, Registry};

#[cfg(feature = "etcd")]
mod on_etcd;

/// Upstream's published B3 throughput, and where it was measured: AsyncLocalServiceRegistry, 100
/// workers on 2 IO schedulers, Apple M4, 10 s, one private registry per worker, as galay-rpc's
/// performance report gave it (github.com/gzj-creator/galay-rpc, docs/05 at commit 4003c9b, since
/// stripped of figures). The JSON report has it under `"upstream"`, and under `"seed"`, its earlier
/// key, for readers of reports written before (the same in all three implementations).
const UPSTREAM_B3_OPS_PER_S: f64 = 5_432_424.0;
const UPSTREAM_B3_WHERE: &str =
    "galay-rpc B3 (benchmark/B3-ServiceDiscoveryBench.cpp, docs/05 at 4003c9b): 100 coroutine workers, 2 IO schedulers, private registries, Apple M4";

const USAGE: &str = "usage: fp-discovery-bench [--threads N] [--seconds S] [--mode private|shared|hot|both|all] [--json FILE]
       fp-discovery-bench --etcd ENDPOINTS [--threads N] [--seconds S] [--samples N] [--json FILE]";

struct Args {
    threads: usize,
    seconds: f64,
    modes: Vec<&'static str>,
    json: Option<String>,
    etcd: Option<String>,
    samples: usize,
}

fn usage_error(msg: &str) -> ! {
    eprintln!("usage error: {msg}\n{USAGE}");
    std::process::exit(2);
}

fn parse_args() -> Args {
    let mut a = Args {
        threads: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2),
        seconds: 2.0,
        modes: vec!["private", "shared"],
        json: None,
        etcd: None,
        samples: 200,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let v = it
            .next()
            .unwrap_or_else(|| usage_error(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--threads" => {
                a.threads = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0 && n <= 1024)
                    .unwrap_or_else(|| usage_error("bad --threads"))
            }
            "--seconds" => {
                a.seconds = v
                    .parse()
                    .ok()
                    .filter(|&s: &f64| s > 0.0 && s <= 600.0)
                    .unwrap_or_else(|| usage_error("bad --seconds"))
            }
            "--mode" => {
                a.modes = match v.as_str() {
                    "private" => vec!["private"],
                    "shared" => vec!["shared"],
                    "hot" => vec!["hot"],
                    "both" => vec!["private", "shared"],
                    "all" => vec!["private", "shared", "hot"],
                    _ => usage_error("--mode is private, shared, hot, both or all"),
                }
            }
            "--json" => a.json = Some(v),
            "--etcd" => a.etcd = Some(v),
            "--samples" => {
                a.samples = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0 && n <= 1_000_000)
                    .unwrap_or_else(|| usage_error("bad --samples"))
            }
            _ => usage_error(&format!("unknown flag {flag}")),
        }
    }
    a
}

struct Outcome {
    mode: &'static str,
    threads: usize,
    ops: u64,
    errors: u64,
    seconds: f64,
}

impl Outcome {
    fn ops_per_s(&self) -> f64 {
        self.ops as f64 / self.seconds
    }
}

fn run(mode: &'static str, threads: usize, seconds: f64) -> Outcome {
    let shared: Arc<LocalRegistry> = Arc::new(LocalRegistry::new());
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|w| {
            let reg = if mode != "private" {
                shared.clone()
            } else {
                Arc::new(LocalRegistry::new())
            };
            let (stop, ops, errors) = (stop.clone(), ops.clone(), errors.clone());
            std::thread::spawn(move || {
                let ep = Endpoint::new(
                    &format!("BenchService{}", if mode == "hot" { 0 } else { w % 10 }),
                    &format!("instance-{w}"),
                    "127.0.0.1",
                    9000 + (w % 100) as u32,
                    100,
                );
                let (mut n, mut bad) = (0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        match reg.register(&ep) {
                            Ok(()) => n += 1,
                            Err(_) => bad += 1,
                        }
                        match reg.discover(&ep.service) {
                            Ok(l) if l.iter().any(|e| e.instance_id == ep.instance_id) => n += 1,
                            _ => bad += 1,
                        }
                        match reg.deregister(&ep.service, &ep.instance_id) {
                            Ok(()) => n += 1,
                            Err(_) => bad += 1,
                        }
                    }
                }
                ops.fetch_add(n, Ordering::Relaxed);
                errors.fetch_add(bad, Ordering::Relaxed);
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("worker");
    }
    Outcome {
        mode,
        threads,
        ops: ops.load(Ordering::Relaxed),
        errors: errors.load(Ordering::Relaxed),
        seconds: start.elapsed().as_secs_f64(),
    }
}

fn write_json(path: &str, doc: &serde_json::Value) {
    std::fs::write(
        path,
        serde_json::to_string_pretty(doc).expect("json") + "\n",
    )
    .unwrap_or_else(|e| {
        eprintln!("cannot write {path}: {e}");
        std::process::exit(1)
    });
}

#[cfg(feature = "etcd")]
fn main_etcd(a: &Args, endpoints: &str) -> ! {
    let phases = on_etcd::run(endpoints, a.threads, a.seconds, a.samples).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    for p in &phases {
        println!("{}", p.line(a.threads));
    }
    if let Some(path) = &a.json {
        let eps: Vec<&str> = endpoints
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        let runs: Vec<serde_json::Value> = phases.iter().map(|p| p.json()).collect();
        write_json(
            path,
            &serde_json::json!({"implementation": "rust", "benchmark": "discovery-etcd",
                                              "endpoints": eps, "threads": a.threads, "runs": runs}),
        );
    }
    std::process::exit(if phases.iter().any(|p| p.errors > 0 || p.lost > 0) {
        1
    } else {
        0
    })
}

#[cfg(not(feature = "etcd"))]
fn main_etcd(_: &Args, _: &str) -> ! {
    usage_error(
        "this fp-discovery-bench was built without the etcd registry (cargo feature `etcd`)",
    )
}

fn main() {
    let a = parse_args();
    if let Some(endpoints) = a.etcd.clone() {
        main_etcd(&a, &endpoints);
    }
    let mut out = Vec::new();
    for &mode in &a.modes {
        let o = run(mode, a.threads, a.seconds);
        println!(
            "{:<8} {} threads, {:.1} s: {} ops ({} rounds), {} errors, {:.0} ops/s = {:.2}x upstream's {:.0} ops/s ({})",
            o.mode, o.threads, o.seconds, o.ops, o.ops / 3, o.errors, o.ops_per_s(), o.ops_per_s() / UPSTREAM_B3_OPS_PER_S,
            UPSTREAM_B3_OPS_PER_S, UPSTREAM_B3_WHERE
        );
        out.push(o);
    }
    if let Some(path) = a.json {
        let runs: Vec<serde_json::Value> = out
            .iter()
            .map(|o| serde_json::json!({"mode": o.mode, "threads": o.threads, "ops": o.ops, "errors": o.errors,
                                        "duration_s": (o.seconds * 1e6).round() / 1e6,
                                        "ops_per_s": (o.ops_per_s() * 10.0).round() / 10.0}))
            .collect();
        let doc = serde_json::json!({"implementation": "rust", "benchmark": "discovery-b3", "runs": runs,
                                     "upstream": {"ops_per_s": UPSTREAM_B3_OPS_PER_S, "where": UPSTREAM_B3_WHERE},
                                     "seed": {"ops_per_s": UPSTREAM_B3_OPS_PER_S, "where": UPSTREAM_B3_WHERE}});
        write_json(&path, &doc);
    }
    if out.iter().any(|o| o.errors > 0) {
        std::process::exit(1);
    }
}
