//! What a run measured: the per-connection counts and latencies, merged, then printed and
//! written as the JSON report the suite reads (`--json`); the exit status says whether the run
//! passed.

use std::io::Write;
use std::time::Instant;

use fp_net::{json_f64, json_string};
use hdrhistogram::Histogram;

use crate::cli::{Config, Mode};

/// Error descriptions kept in the report.
const MAX_DETAILS: usize = 10;
/// Highest latency the histogram tracks (larger values are clamped), in microseconds.
const HIST_MAX_US: u64 = 3_600_000_000;

/// What one connection (or the whole run, merged) measured.
pub struct Report {
    pub sent: u64,
    pub received: u64,
    pub verified: u64,
    pub verified_bytes: u64,
    pub errors: u64,
    pub details: Vec<String>,
    pub hist: Histogram<u64>,
    /// When the last reply arrived (receive mode: when the server closed).
    pub last: Option<Instant>,
    /// Every request this connection had to send was written.
    pub all_written: bool,
    /// Stream mode: streams opened, and completed (ended with every echo verified).
    pub streams_started: u64,
    pub streams_completed: u64,
}

impl Report {
    pub fn new() -> Report {
        Report {
            sent: 0,
            received: 0,
            verified: 0,
            verified_bytes: 0,
            errors: 0,
            details: Vec::new(),
            hist: Histogram::new_with_bounds(1, HIST_MAX_US, 3).expect("histogram bounds"),
            last: None,
            all_written: true,
            streams_started: 0,
            streams_completed: 0,
        }
    }

    pub fn error(&mut self, detail: String) {
        self.errors += 1;
        if self.details.len() < MAX_DETAILS {
            self.details.push(detail);
        }
    }

    pub fn merge(&mut self, o: Report) {
        self.sent += o.sent;
        self.received += o.received;
        self.verified += o.verified;
        self.verified_bytes += o.verified_bytes;
        self.errors += o.errors;
        for d in o.details {
            if self.details.len() < MAX_DETAILS {
                self.details.push(d);
            }
        }
        let _ = self.hist.add(&o.hist);
        self.last = match (self.last, o.last) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.all_written &= o.all_written;
        self.streams_started += o.streams_started;
        self.streams_completed += o.streams_completed;
    }
}

/// Prints the report, writes it as JSON where `--json` asks, and returns the exit status: 0 when
/// every request was written and answered by its verified reply (receive mode: written), else 1.
pub fn report(cfg: &Config, r: &Report, duration: f64) -> i32 {
    let receive = cfg.mode == Mode::Receive;
    let (msgs, bytes) = if receive {
        (r.sent, r.sent * cfg.payload as u64)
    } else {
        (r.verified, r.verified_bytes)
    };
    let per_s = |v: u64| {
        if duration > 0.0 {
            v as f64 / duration
        } else {
            0.0
        }
    };
    let msgs_per_s = per_s(msgs);
    let streams_per_s = per_s(r.streams_completed);
    let mb_per_s = per_s(bytes) / 1e6;
    let q = |q: f64| {
        if r.hist.is_empty() {
            0
        } else {
            r.hist.value_at_quantile(q)
        }
    };
    let (p50, p90, p99, p999) = (q(0.5), q(0.9), q(0.99), q(0.999));
    let max = if r.hist.is_empty() { 0 } else { r.hist.max() };
    let variant = cfg.variant.as_deref().unwrap_or("default");
    println!(
        "fp-load (rust): {} {} {}, {} connections, window {}, payload {} B",
        cfg.codec.to_json(),
        variant,
        cfg.mode.name(),
        cfg.connections,
        cfg.window,
        cfg.payload
    );
    println!(
        "  requests sent {}, replies received {}, verified {}, errors {}",
        r.sent, r.received, r.verified, r.errors
    );
    println!("  {duration:.3} s, {msgs_per_s:.1} msg/s, {mb_per_s:.2} MB/s");
    if cfg.mode == Mode::Stream {
        println!(
            "  streams completed {} of {}, {streams_per_s:.1} streams/s",
            r.streams_completed, r.streams_started
        );
    }
    if !receive {
        println!("  latency us: p50 {p50}  p90 {p90}  p99 {p99}  p99.9 {p999}  max {max}");
    }
    for d in &r.details {
        println!("  error: {d}");
    }
    if let Some(path) = &cfg.json {
        let details: Vec<String> = r.details.iter().map(|d| json_string(d)).collect();
        let json = format!(
            "{{\"implementation\": \"rust\", \"protocol\": {}, \"codec\": {}, \"mode\": {}, \
\"variant\": {}, \"connections\": {}, \"window\": {}, \"payload\": {}, \
\"requests_sent\": {}, \"replies_received\": {}, \"replies_verified\": {}, \
\"errors\": {}, \"error_details\": [{}], \
\"duration_s\": {}, \"msgs_per_s\": {}, \"mb_per_s\": {}, \
\"streams_completed\": {}, \"streams_per_s\": {}, \
\"latency_us\": {{\"p50\": {p50}, \"p90\": {p90}, \"p99\": {p99}, \"p999\": {p999}, \"max\": {max}}}}}\n",
            json_string(&cfg.codec.protocol),
            cfg.codec.to_json(),
            json_string(cfg.mode.name()),
            json_string(variant),
            cfg.connections,
            cfg.window,
            cfg.payload,
            r.sent,
            r.received,
            r.verified,
            r.errors,
            details.join(", "),
            json_f64(duration, 6),
            json_f64(msgs_per_s, 1),
            json_f64(mb_per_s, 3),
            r.streams_completed,
            json_f64(streams_per_s, 1),
        );
        if let Err(e) = std::fs::File::create(path).and_then(|mut f| f.write_all(json.as_bytes())) {
            eprintln!("fp-load: cannot write {path}: {e}");
            return 1;
        }
    }
    let ok = if receive {
        r.errors == 0 && r.all_written
    } else {
        r.errors == 0
            && r.all_written
            && r.verified == r.sent
            && r.streams_completed == r.streams_started
    };
    if ok {
        0
    } else {
        1
    }
}
