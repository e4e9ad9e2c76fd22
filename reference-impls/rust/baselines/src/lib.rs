//! Shared pieces of the benchmark baselines (tools/bench): the command line and accept loop of
//! the two echo baselines, and per-connection counters printed on SIGTERM in the fp-server JSON
//! format (plus `reads` / `read_bytes`). The start-up itself (options, `--codec`, runtime,
//! listener, signals, `LISTENING` line) is fp-net's, shared with fp-server.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use fp_net::{print_line, Cli, Server};
use frameproof_codec::config::CodecConfig;
use tokio::net::TcpStream;

/// Counters of one connection (single writer, so plain stores are enough).
#[derive(Default)]
pub struct ConnStats {
    pub frames: AtomicU64,
    pub bytes: AtomicU64,
    pub reads: AtomicU64,
    pub read_bytes: AtomicU64,
    pub protocol_errors: AtomicU64,
}

/// Every connection's counters, summed when the server stops.
#[derive(Default)]
pub struct AllStats {
    conns: Mutex<Vec<Arc<ConnStats>>>,
}

impl AllStats {
    pub fn add(&self) -> Arc<ConnStats> {
        let s = Arc::new(ConnStats::default());
        self.conns.lock().unwrap().push(s.clone());
        s
    }

    /// The fp-server counters line, with `reads` (recv calls that returned data) and
    /// `read_bytes` (wire bytes those returned).
    pub fn json_line(&self) -> String {
        let c = self.conns.lock().unwrap();
        let sum =
            |f: fn(&ConnStats) -> &AtomicU64| c.iter().map(|s| f(s).load(Relaxed)).sum::<u64>();
        format!(
            "{{\"connections\": {}, \"frames\": {}, \"bytes\": {}, \"protocol_errors\": {}, \"reads\": {}, \"read_bytes\": {}}}",
            c.len(),
            sum(|s| &s.frames),
            sum(|s| &s.bytes),
            sum(|s| &s.protocol_errors),
            sum(|s| &s.reads),
            sum(|s| &s.read_bytes)
        )
    }
}

/// The command line of an echo baseline:
/// `(--codec JSON | --protocol NAME) --listen HOST:PORT [--sink] [--threads N] [--stats]`
/// (`--stats` is accepted for fp-server compatibility; the counters always include it).
pub struct EchoArgs {
    pub codec: CodecConfig,
    pub listen: String,
    pub threads: usize,
    pub sink: bool,
}

impl EchoArgs {
    pub fn parse(cli: &Cli) -> EchoArgs {
        let o = cli.parse(
            &["codec", "protocol", "listen", "threads"],
            &["sink", "stats"],
        );
        EchoArgs {
            codec: cli.or_die(o.codec()),
            listen: cli.or_die(o.required("listen")).to_string(),
            threads: cli.or_die(o.threads()),
            sink: o.has("sink"),
        }
    }
}

/// Accepts connections until SIGINT/SIGTERM, each served by `conn` with its own counters, then
/// prints the counters line; returns the exit status.
pub async fn serve_counted<F, Fut>(program: &str, listen: &str, conn: F) -> i32
where
    F: Fn(TcpStream, Arc<ConnStats>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut server = match Server::start(program, listen).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let stats = AllStats::default();
    loop {
        tokio::select! {
            r = server.listener.accept() => if let Ok((s, _)) = r {
                tokio::spawn(conn(s, stats.add()));
            },
            _ = server.signals.stopped() => break,
        }
    }
    print_line(&stats.json_line());
    0
}
