//! fp-server: the conformance echo server (STD-ECHO-*, LF-ECHO-*, ...), per
//! reference-impls/README.md.
//!
//! ```text
//! fp-server (--codec JSON | --protocol NAME) --listen HOST:PORT [--sink] [--threads N] [--stats]
//!           [--memory-budget BYTES] [--idle-timeout-ms MS] [--frame-timeout-ms MS]
//!           [--max-output-bytes BYTES] [--write-timeout-ms MS] [--max-connections N]
//! ```
//!
//! Generic over the protocol: the registry builds the one `--codec` names, and each connection
//! is one task looping around that protocol's server session: read into the session's buffer,
//! let it process what arrived, write all the replies of that read, repeat.
//! Replies are written before the next read, so a connection holds at most one read's worth of
//! replies and one partial frame (at most the maximum payload plus a read chunk): memory is
//! bounded per connection, and a peer that does not read its replies is slowed down by TCP
//! instead of growing our buffers (RES-5: no read while output is pending).
//!
//! Server-wide limits (`*-RES-*`, reference-impls/README.md "Resource limits"): every
//! connection publishes what it holds (the session's unfinished input plus unsent output);
//! when the sum passes `--memory-budget` the connections holding the most (never one holding
//! <= 64 KiB) are closed (RES-1, RES-2). Each connection times itself: idle (or, websocket,
//! the opening handshake from the accept) RES-3, between bytes of an unfinished frame RES-4,
//! no write progress RES-5. Before closing for a timeout it reads what its socket holds, and
//! a timer that fires far too late (the process was stopped) restarts the clock (RES-8).
//! Beyond `--max-connections` a connection is accepted and closed at once (RES-6); accept
//! errors (descriptor exhaustion) wait for a close or 250 ms (RES-7).
//!
//! One module a job: this file (the command line, the start-up, the accept loop and the counts
//! printed at shutdown), `limits` (the limit flags and the server-wide state they act on: the
//! memory budget and the connection slots), `connection` (one connection's task: reads, the
//! session, writes, its timeouts).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use fp_net::{print_line, Cli, Server};
use frameproof_codec::protocol::Protocol;
use frameproof_codec::registry::Visitor;
use tokio::task::JoinSet;

mod connection;
mod limits;

use connection::connection;
use limits::{Limits, Shared, LIMIT_FLAGS};

/// How long shutdown waits for the aborted connection tasks to be dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// Accept errors (out of descriptors) retry after this, or sooner when a connection closes.
const ACCEPT_RETRY: Duration = Duration::from_millis(250);

const CLI: Cli = Cli {
    program: "fp-server",
    usage: "usage: fp-server (--codec JSON | --protocol NAME) --listen HOST:PORT \
[--sink] [--threads N] [--stats] [--memory-budget BYTES] [--idle-timeout-ms MS] \
[--frame-timeout-ms MS] [--max-output-bytes BYTES] [--write-timeout-ms MS] [--max-connections N]",
};

#[derive(Default)]
struct Counters {
    connections: AtomicU64,
    frames: AtomicU64,
    bytes: AtomicU64,
    protocol_errors: AtomicU64,
    /// Reads that returned data and the bytes they returned (printed with `--stats`).
    reads: AtomicU64,
    read_bytes: AtomicU64,
}

#[derive(Clone)]
struct Config {
    listen: String,
    codec: String,
    sink: bool,
    stats: bool,
    limits: Limits,
}

fn main() {
    let mut with_value = vec!["codec", "protocol", "listen", "threads"];
    with_value.extend(LIMIT_FLAGS.iter().map(|(n, _)| *n));
    let opts = CLI.parse(&with_value, &["sink", "stats"]);
    let codec = CLI.or_die(opts.codec());
    let threads = CLI.or_die(opts.threads());
    let cfg = Config {
        listen: CLI.or_die(opts.required("listen")).to_string(),
        codec: codec.to_json(),
        sink: opts.has("sink"),
        stats: opts.has("stats"),
        limits: CLI.or_die(Limits::parse(&opts)),
    };
    CLI.with_protocol(&codec, Start { cfg, threads });
}

/// Runs the server with the protocol the codec names.
struct Start {
    cfg: Config,
    threads: usize,
}

impl Visitor for Start {
    type Output = Result<(), String>;
    fn visit<P: Protocol>(self, proto: P) -> Result<(), String> {
        // The default endpoint, in the requested mode, must exist before we listen.
        proto
            .net_session(self.cfg.sink)
            .map_err(|e| e.to_string())?;
        let largest = proto.largest_unit();
        if (self.cfg.limits.memory_budget as u64) < largest {
            return Err(format!(
                "--memory-budget {} is below the largest frame the codec accepts ({largest} bytes)",
                self.cfg.limits.memory_budget
            ));
        }
        prepare_process(self.cfg.limits.max_connections);
        CLI.run(self.threads, serve(proto, self.cfg))
    }
}

async fn serve<P: Protocol>(proto: P, cfg: Config) -> i32 {
    let mut server = match Server::start(CLI.program, &cfg.listen).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    eprintln!(
        "fp-server: {}{} on {}",
        cfg.codec,
        if cfg.sink { " (sink)" } else { " echo" },
        cfg.listen
    );
    let counters = Arc::new(Counters::default());
    let shared = Arc::new(Shared::new(cfg.limits));
    let mut tasks = JoinSet::new();
    let mut accept_errors = 0u64;
    loop {
        tokio::select! {
            r = server.listener.accept() => match r {
                Ok((stream, _)) => {
                    if shared.open.load(Relaxed) >= cfg.limits.max_connections {
                        // RES-6: accepted and closed at once.
                        shared.refused.fetch_add(1, Relaxed);
                        drop(stream);
                    } else if let Ok(session) = proto.net_session(cfg.sink) {
                        shared.open.fetch_add(1, Relaxed);
                        let reg = shared.register();
                        let holder = reg.holder.clone();
                        holder.started(tasks.spawn(connection(stream, session, cfg.stats, counters.clone(), reg)));
                    }
                }
                Err(e) => {
                    // RES-7: out of descriptors (or buffers): keep serving, retry when a
                    // connection closes or after a while, never in a busy loop.
                    accept_errors += 1;
                    if accept_errors.is_power_of_two() {
                        eprintln!("fp-server: accept ({accept_errors} errors so far): {e}");
                    }
                    let closed = shared.closed.notified();
                    tokio::select! {
                        _ = closed => {}
                        _ = tokio::time::sleep(ACCEPT_RETRY) => {}
                        _ = server.signals.stopped() => break,
                    }
                }
            },
            _ = server.signals.stopped() => break,
        }
        while tasks.try_join_next().is_some() {}
    }
    drop(server);
    // Shutdown drops every connection (as a budget close does): abort, then wait for the drops.
    tasks.abort_all();
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    // `--stats` (tools/bench): also the reads that returned data and their bytes, for the
    // packets-per-recv figures.
    let extra = if cfg.stats {
        format!(
            ", \"reads\": {}, \"read_bytes\": {}",
            counters.reads.load(Relaxed),
            counters.read_bytes.load(Relaxed)
        )
    } else {
        String::new()
    };
    print_line(&format!(
        "{{\"connections\": {}, \"frames\": {}, \"bytes\": {}, \"protocol_errors\": {}, \
\"budget_closes\": {}, \"timeout_closes\": {}, \"refused\": {}{extra}}}",
        counters.connections.load(Relaxed),
        counters.frames.load(Relaxed),
        counters.bytes.load(Relaxed),
        counters.protocol_errors.load(Relaxed),
        shared.budget_closes.load(Relaxed),
        shared.timeout_closes.load(Relaxed),
        shared.refused.load(Relaxed)
    ));
    0
}

/// Raises the soft descriptor limit towards the hard one (enough for `max_connections` and a
/// margin, RES-6), and fixes glibc's mmap threshold so that the large buffers of closed
/// connections go back to the system (RES-1 holds for the RSS, not only for our count).
fn prepare_process(max_connections: usize) {
    // SAFETY: plain libc calls on local values.
    unsafe {
        let mut rl = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) == 0 {
            let want = (max_connections as libc::rlim_t).saturating_add(64);
            if rl.rlim_cur < want {
                rl.rlim_cur = if rl.rlim_max == libc::RLIM_INFINITY {
                    want
                } else {
                    want.min(rl.rlim_max)
                };
                let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &rl);
            }
        }
        #[cfg(target_env = "gnu")]
        {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        }
    }
}
