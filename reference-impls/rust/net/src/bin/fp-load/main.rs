//! fp-load: the verifying load client, per reference-impls/README.md.
//!
//! ```text
//! fp-load (--codec JSON | --protocol NAME) --connect HOST:PORT
//!         [--connections N] (--requests N | --duration SECONDS) [--payload BYTES]
//!         [--mode per-packet|pipelined|batched|receive|stream] [--window W] [--batch N]
//!         [--timeout-ms MS] [--variant NAME] [--frames-per-stream F] [--json FILE]
//! ```
//!
//! `--variant` picks the kind of request among the protocol's own (`Protocol::VARIANTS`: rpc's
//! call modes); `--mode stream` (protocols with streams, `Protocol::streams`) runs streams one
//! after another on each connection: open, `F` data frames with at most `W` unanswered, each echo
//! verified in order, end; `--requests` then counts streams.
//!
//! Generic over the protocol: the registry builds the one `--codec` names, and every
//! connection uses that protocol's client matcher (sequence table for `standard`, FIFO for
//! `length-field`, ...) and decoder, driven by a microsecond clock since the start of the run.
//!
//! One module a job: `cli` (flags, defaults, the checks before connecting), this file (start-up
//! and the run's lifecycle: connect everything, start the clock, one task per connection, merge
//! their reports), `report` (the printed and the JSON report, the exit status), `connection`
//! (what every mode shares: handshake, goodbye, sending a request, verifying its reply), and one
//! module per load mode: `batched` (per-packet and batched), `pipelined`, `receive`, `stream`.
//! Every reply is verified against the payload regenerated from the request's index.
//!
//! Every loop is bounded: writing by the request quota or the duration, reading by the request
//! timeout (a timed-out request fails its connection).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use fp_net::online_cpus;
use frameproof_codec::protocol::Protocol;
use frameproof_codec::registry::Visitor;
use tokio::net::TcpStream;

mod batched;
mod cli;
mod connection;
mod pipelined;
mod receive;
mod report;
mod stream;

use cli::{check, parse_config, Config, Mode, CLI};
use connection::{open, Run};
use report::{report, Report};

use batched::batch_connection;
use pipelined::echo_connection;
use receive::receive_connection;
use stream::stream_connection;

fn main() {
    let cfg = CLI.or_die(parse_config());
    let codec = cfg.codec.clone();
    CLI.with_protocol(&codec, Start(cfg));
}

/// Runs the load with the protocol the codec names.
struct Start(Config);

impl Visitor for Start {
    type Output = Result<(), String>;
    fn visit<P: Protocol>(self, proto: P) -> Result<(), String> {
        let mut cfg = self.0;
        check(&proto, &cfg)?;
        let variant = cfg
            .variant
            .get_or_insert_with(|| P::VARIANTS[0].to_string());
        let proto = proto.with_variant(variant).client_side();
        if cfg.mode == Mode::Batched {
            let n = *cfg.batch.get_or_insert(P::DEFAULT_BATCH);
            cfg.window = n;
        }
        CLI.run(online_cpus(), run(proto, cfg))
    }
}

/// Connects with `TCP_NODELAY` set before the connection exists, so no socket of ours is ever
/// seen without it.
async fn connect(addr: std::net::SocketAddr) -> std::io::Result<TcpStream> {
    let sock = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    sock.set_nodelay(true)?;
    let s = sock.connect(addr).await?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// The run: connections, then the clock, one task per connection in the mode asked, and the
/// merged report; returns the exit status.
async fn run<P: Protocol>(proto: P, cfg: Config) -> i32 {
    // Connect everything first; the clock starts when all connections are up.
    // A failed set-up still produces a full report (with the error), so that a harness reading
    // the JSON sees what happened.
    let fail = |msg: String| {
        eprintln!("fp-load: {msg}");
        let mut r = Report::new();
        r.error(msg);
        r.all_written = false;
        report(&cfg, &r, 0.0)
    };
    let addr = match tokio::net::lookup_host(&cfg.addr)
        .await
        .map(|mut a| a.next())
    {
        Ok(Some(a)) => a,
        Ok(None) | Err(_) => return fail(format!("cannot resolve {}", cfg.addr)),
    };
    let mut streams = Vec::with_capacity(cfg.connections);
    for i in 0..cfg.connections {
        let mut s = match tokio::time::timeout(cfg.timeout, connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return fail(format!("connection {i} to {}: {e}", cfg.addr)),
            Err(_) => return fail(format!("connection {i} to {}: timed out", cfg.addr)),
        };
        match open(&proto, &cfg.addr, &mut s, cfg.timeout).await {
            Ok(opened) => streams.push((s, opened)),
            Err(e) => return fail(format!("connection {i} to {}: {e}", cfg.addr)),
        }
    }
    let start = Instant::now();
    let run = Arc::new(Run {
        proto,
        stop_at: cfg.duration.map(|d| start + d),
        start,
        next_index: AtomicU64::new(0),
        cfg: cfg.clone(),
    });
    let mut handles = Vec::with_capacity(cfg.connections);
    for (i, (stream, opened)) in streams.into_iter().enumerate() {
        // The first N % C connections send one more (README contract).
        let quota = cfg.requests.map(|n| {
            let c = cfg.connections as u64;
            n / c + u64::from((i as u64) < n % c)
        });
        let run = run.clone();
        handles.push(tokio::spawn(async move {
            match run.cfg.mode {
                Mode::Receive => receive_connection(run, stream, opened, quota).await,
                Mode::PerPacket | Mode::Batched => {
                    batch_connection(run, stream, opened, quota).await
                }
                Mode::Pipelined => echo_connection(run, stream, opened, quota).await,
                Mode::Stream => stream_connection(run, stream, opened, quota).await,
            }
        }));
    }
    let mut total = Report::new();
    for h in handles {
        match h.await {
            Ok(r) => total.merge(r),
            Err(e) => total.error(format!("connection task failed: {e}")),
        }
    }
    let end = total.last.unwrap_or_else(Instant::now);
    let duration = end.saturating_duration_since(start).as_secs_f64();
    report(&cfg, &total, duration)
}
