//! fp-server: the conformance echo server (STD-ECHO-*, LF-ECHO-*, ...), per
//! reference-impls/README.md.
//!
//! ```text
//! fp-server (--codec JSON | --protocol NAME) --listen HOST:PORT [--sink] [--threads N] [--stats]
//! ```
//!
//! Generic over the protocol: the registry builds the one `--codec` names, and each connection
//! is one task looping around that protocol's server session: read into the session's buffer,
//! let it process what arrived, write the replies of that read in one `write_all`, repeat.
//! Replies are written before the next read, so a connection holds at most one read's worth of
//! replies and one partial frame (at most the maximum payload plus a read chunk): memory is
//! bounded per connection, and a peer that does not read its replies is slowed down by TCP
//! instead of growing our buffers.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use fp_net::{print_line, Cli, Server};
use frameproof_codec::protocol::{Protocol, ServerSession};
use frameproof_codec::registry::Visitor;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// Bytes reserved in the receive buffer before each read.
const READ_CHUNK: usize = 64 * 1024;
/// Bound of [`linger`] in time and bytes.
const LINGER: Duration = Duration::from_millis(500);
const LINGER_BYTES: usize = 16 << 20;
/// How long shutdown waits for connection tasks to stop before aborting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

const CLI: Cli = Cli {
    program: "fp-server",
    usage: "usage: fp-server (--codec JSON | --protocol NAME) --listen HOST:PORT \
[--sink] [--threads N] [--stats]",
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
}

fn main() {
    let opts = CLI.parse(
        &["codec", "protocol", "listen", "threads"],
        &["sink", "stats"],
    );
    let codec = CLI.or_die(opts.codec());
    let threads = CLI.or_die(opts.threads());
    let cfg = Config {
        listen: CLI.or_die(opts.required("listen")).to_string(),
        codec: codec.to_json(),
        sink: opts.has("sink"),
        stats: opts.has("stats"),
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
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            r = server.listener.accept() => match r {
                Ok((stream, _)) => {
                    if let Ok(session) = proto.net_session(cfg.sink) {
                        tasks.spawn(connection(stream, session, cfg.stats, counters.clone(), stop_rx.clone()));
                    }
                }
                Err(e) => {
                    // e.g. out of file descriptors: back off instead of spinning.
                    eprintln!("fp-server: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            _ = server.signals.stopped() => break,
        }
        while tasks.try_join_next().is_some() {}
    }
    drop(server);
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.abort_all();
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
        "{{\"connections\": {}, \"frames\": {}, \"bytes\": {}, \"protocol_errors\": {}{extra}}}",
        counters.connections.load(Relaxed),
        counters.frames.load(Relaxed),
        counters.bytes.load(Relaxed),
        counters.protocol_errors.load(Relaxed)
    ));
    0
}

/// After closing our side on an error, reads and discards what the peer still sends for a
/// short while, so that closing with unread data (which makes the kernel send a reset that can
/// destroy the replies we just wrote) does not happen while the peer is still reading them.
async fn linger(stream: &mut TcpStream, stop: &mut watch::Receiver<bool>) {
    let mut scratch = vec![0u8; READ_CHUNK];
    let deadline = tokio::time::Instant::now() + LINGER;
    let mut discarded = 0usize;
    while discarded < LINGER_BYTES {
        tokio::select! {
            r = stream.read(&mut scratch) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => discarded += n,
            },
            _ = tokio::time::sleep_until(deadline) => return,
            _ = stop.changed() => return,
        }
    }
}

/// Serves one connection with its session until the session closes (a decoding error, the
/// peer's EOF), an I/O error or shutdown.
async fn connection<S: ServerSession>(
    mut stream: TcpStream,
    mut session: S,
    stats: bool,
    counters: Arc<Counters>,
    mut stop: watch::Receiver<bool>,
) {
    counters.connections.fetch_add(1, Relaxed);
    let _ = stream.set_nodelay(true);
    let mut out = BytesMut::new();
    loop {
        session.buffer_mut().reserve(READ_CHUNK);
        let read = tokio::select! {
            r = stream.read_buf(session.buffer_mut()) => r,
            _ = stop.changed() => return,
        };
        let eof = match read {
            Ok(0) => true,
            Ok(n) => {
                if stats {
                    counters.reads.fetch_add(1, Relaxed);
                    counters.read_bytes.fetch_add(n as u64, Relaxed);
                }
                false
            }
            Err(_) => return, // reset by the peer: nothing to reply to
        };
        // At EOF (half-close) every complete frame is answered (STD-ECHO-5, LF-ECHO-3) and a
        // partial frame is the session's truncation error (STD-STR-3, LF-STR-3).
        let served = if eof {
            session.finish(&mut out)
        } else {
            session.process(&mut out)
        };
        counters.frames.fetch_add(served.frames, Relaxed);
        counters.bytes.fetch_add(served.bytes, Relaxed);
        if !out.is_empty() {
            // Replies to the frames before an error are sent too (STD-ECHO-4, LF-ECHO-2).
            let w = tokio::select! {
                w = stream.write_all(&out) => w,
                _ = stop.changed() => return,
            };
            out.clear();
            if w.is_err() {
                return;
            }
        }
        if let Some(e) = &served.error {
            eprintln!("fp-server: closing a connection: {e}");
            counters.protocol_errors.fetch_add(1, Relaxed);
        }
        if served.closed {
            let _ = stream.shutdown().await;
            if served.error.is_some() && !eof {
                linger(&mut stream, &mut stop).await;
            }
            return;
        }
    }
}
