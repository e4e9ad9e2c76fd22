//! `--etcd ENDPOINTS`: the benchmark on the etcd registry (spec/discovery.md §9, "On etcd"):
//! register/s and discover/s from W threads sharing one registry, and the latency from a
//! registration in one registry to the ADDED callback of a watcher in another.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use frameproof_discovery::etcd::{EtcdConfig, EtcdRegistry};
use frameproof_discovery::{Endpoint, EventType, Registry};

/// How long a watch sample may take before it counts as lost.
const LOST_AFTER: Duration = Duration::from_secs(5);

pub struct Phase {
    pub op: &'static str,
    pub ops: u64,
    pub errors: u64,
    pub seconds: f64,
    /// each call's (or sample's) latency, microseconds
    pub latencies: Vec<f64>,
    pub lost: u64,
}

/// Nearest rank: the ceil(p*n)-th smallest.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

impl Phase {
    pub fn json(&self) -> serde_json::Value {
        let mut l = self.latencies.clone();
        l.sort_by(|a, b| a.partial_cmp(b).expect("latency"));
        let (p50, p99) = (round1(percentile(&l, 0.50)), round1(percentile(&l, 0.99)));
        if self.op == "watch" {
            serde_json::json!({"op": "watch", "samples": self.ops + self.lost + self.errors, "lost": self.lost,
                               "errors": self.errors, "p50_us": p50, "p99_us": p99,
                               "max_us": round1(l.last().copied().unwrap_or(0.0))})
        } else {
            serde_json::json!({"op": self.op, "ops": self.ops, "errors": self.errors,
                               "duration_s": (self.seconds * 1e6).round() / 1e6,
                               "ops_per_s": round1(self.ops as f64 / self.seconds),
                               "p50_us": p50, "p99_us": p99})
        }
    }

    pub fn line(&self, threads: usize) -> String {
        let j = self.json();
        if self.op == "watch" {
            format!("watch    {} samples, {} lost, {} errors: PUT -> callback p50 {} us, p99 {} us, max {} us",
                    j["samples"], j["lost"], j["errors"], j["p50_us"], j["p99_us"], j["max_us"])
        } else {
            format!(
                "{:<8} {} threads, {:.1} s: {} ops, {} errors, {} ops/s, p50 {} us, p99 {} us",
                self.op,
                threads,
                self.seconds,
                self.ops,
                self.errors,
                j["ops_per_s"],
                j["p50_us"],
                j["p99_us"]
            )
        }
    }
}

fn connect(endpoints: &str, prefix: &str) -> Result<EtcdRegistry, String> {
    let mut cfg = EtcdConfig::new(endpoints);
    cfg.prefix = prefix.to_string();
    EtcdRegistry::connect(cfg).map_err(|c| format!("cannot reach etcd at {endpoints}: {c:?}"))
}

fn endpoint(service: &str, id: &str, w: usize) -> Endpoint {
    Endpoint::new(service, id, "127.0.0.1", 9000 + w as u32, 100)
}

/// W threads run `op` on the shared registry for `seconds`; each call timed.
fn timed<F>(
    op: &'static str,
    reg: &Arc<EtcdRegistry>,
    threads: usize,
    seconds: f64,
    call: F,
) -> Phase
where
    F: Fn(&EtcdRegistry, usize) -> bool + Send + Sync + 'static,
{
    let call = Arc::new(call);
    let start = Instant::now();
    let until = start + Duration::from_secs_f64(seconds);
    let handles: Vec<_> = (0..threads)
        .map(|w| {
            let (reg, call) = (reg.clone(), call.clone());
            std::thread::spawn(move || {
                let (mut ok, mut bad, mut lat) = (0u64, 0u64, Vec::new());
                while Instant::now() < until {
                    let t = Instant::now();
                    if call(&reg, w) {
                        ok += 1;
                    } else {
                        bad += 1;
                    }
                    lat.push(t.elapsed().as_secs_f64() * 1e6);
                }
                (ok, bad, lat)
            })
        })
        .collect();
    let mut p = Phase {
        op,
        ops: 0,
        errors: 0,
        seconds: 0.0,
        latencies: Vec::new(),
        lost: 0,
    };
    for h in handles {
        let (ok, bad, lat) = h.join().expect("worker");
        p.ops += ok;
        p.errors += bad;
        p.latencies.extend(lat);
    }
    p.seconds = start.elapsed().as_secs_f64();
    p
}

fn watch_phase(writer: &EtcdRegistry, watcher: &EtcdRegistry, samples: usize) -> Phase {
    let seen: Arc<(Mutex<Vec<Option<Instant>>>, Condvar)> =
        Arc::new((Mutex::new(vec![None; samples]), Condvar::new()));
    let s = seen.clone();
    let mut p = Phase {
        op: "watch",
        ops: 0,
        errors: 0,
        seconds: 0.0,
        latencies: Vec::new(),
        lost: 0,
    };
    let id = match watcher.watch(
        "WatchBench",
        Box::new(move |ev| {
            let at = Instant::now();
            if ev.kind != EventType::Added {
                return;
            }
            if let Some(i) = ev
                .endpoint
                .instance_id
                .strip_prefix("w-")
                .and_then(|n| n.parse::<usize>().ok())
            {
                let (m, cv) = &*s;
                let mut v = m.lock().expect("seen");
                if i < v.len() && v[i].is_none() {
                    v[i] = Some(at);
                    cv.notify_all();
                }
            }
        }),
    ) {
        Ok(id) => id,
        Err(c) => {
            eprintln!("watch WatchBench: {c:?}");
            p.errors = 1;
            return p;
        }
    };
    let start = Instant::now();
    let mut failed_in_a_row = 0;
    for i in 0..samples {
        if failed_in_a_row == 3 {
            break; // etcd is gone: the run ends in seconds, not samples x 5 s
        }
        let t = Instant::now();
        if writer
            .register(&endpoint("WatchBench", &format!("w-{i}"), i % 100))
            .is_err()
        {
            p.errors += 1;
            failed_in_a_row += 1;
            continue;
        }
        let (m, cv) = &*seen;
        let v = m.lock().expect("seen");
        let (v, _) = cv
            .wait_timeout_while(v, LOST_AFTER, |v| v[i].is_none())
            .expect("seen");
        match v[i] {
            Some(at) => {
                failed_in_a_row = 0;
                p.ops += 1;
                p.latencies.push(at.duration_since(t).as_secs_f64() * 1e6);
            }
            None => {
                p.lost += 1;
                failed_in_a_row += 1;
            }
        }
    }
    p.seconds = start.elapsed().as_secs_f64();
    let _ = watcher.unwatch(id);
    p
}

/// Runs the three phases; the registries are dropped at the end (their leases revoked).
pub fn run(
    endpoints: &str,
    threads: usize,
    seconds: f64,
    samples: usize,
) -> Result<Vec<Phase>, String> {
    let prefix = format!("fpbench/rust-{}", std::process::id());
    let reg = Arc::new(connect(endpoints, &prefix)?);
    // the client connects lazily: one call first, so that an etcd that is not there fails the run
    // once, within the request timeout, and not every phase
    if let Err(c) = reg.discover("BenchService") {
        return Err(format!("etcd at {endpoints} does not answer: {c:?}"));
    }
    let register = timed("register", &reg, threads, seconds, |r, w| {
        r.register(&endpoint("BenchService", &format!("instance-{w}"), w))
            .is_ok()
    });
    let discover = timed(
        "discover",
        &reg,
        threads,
        seconds,
        move |r, _| matches!(r.discover("BenchService"), Ok(l) if l.len() == threads),
    );
    let watcher = connect(endpoints, &prefix)?;
    let watch = watch_phase(&reg, &watcher, samples);
    for w in 0..threads {
        let _ = reg.deregister("BenchService", &format!("instance-{w}"));
    }
    Ok(vec![register, discover, watch])
}
