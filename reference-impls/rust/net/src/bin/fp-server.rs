//! fp-server: the conformance echo server (STD-ECHO-*, LF-ECHO-*), per
//! reference-impls/README.md.
//!
//! ```text
//! fp-server --protocol standard|length-field --listen HOST:PORT
//!           [--lf-offset N] [--lf-size S] [--max-payload BYTES] [--sink] [--threads N]
//! ```
//!
//! Each connection is one task: read into the decoder's buffer, decode every complete frame,
//! write the replies of that read in one `write_all`, repeat. Replies are written before the next
//! read, so a connection holds at most one read's worth of replies and one partial frame (at most
//! the maximum payload plus a read chunk): memory is bounded per connection, and a peer that does
//! not read its replies is slowed down by TCP instead of growing our buffers.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use fp_net::{bind, Options, Protocol};
use frameproof_codec::length_field::{LengthFieldDecoder, Profile};
use frameproof_codec::standard::{self, StandardDecoder, StdFrame};
use frameproof_codec::{FrameDecoder, DEFAULT_MAX_PAYLOAD};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// Bytes reserved in the receive buffer before each read.
const READ_CHUNK: usize = 64 * 1024;
/// Bound of [`linger`] in time and bytes.
const LINGER: Duration = Duration::from_millis(500);
const LINGER_BYTES: usize = 16 << 20;
/// How long shutdown waits for connection tasks to stop before aborting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

const USAGE: &str = "usage: fp-server --protocol standard|length-field --listen HOST:PORT \
[--lf-offset N] [--lf-size S] [--max-payload BYTES] [--sink] [--threads N] [--stats]";

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

#[derive(Clone, Copy)]
struct Config {
    protocol: Protocol,
    max_payload: u64,
    sink: bool,
    stats: bool,
}

/// A decoder that knows how to echo its frames.
trait Echo: FrameDecoder {
    fn payload_len(frame: &Self::Frame) -> usize;
    /// Appends the reply to `frame` (if any) to `out`.
    fn reply(&self, frame: &Self::Frame, out: &mut BytesMut);
}

impl Echo for StandardDecoder {
    fn payload_len(f: &StdFrame) -> usize {
        f.payload.len()
    }
    fn reply(&self, f: &StdFrame, out: &mut BytesMut) {
        // STD-ECHO-1: only requests (bits 7 and 6 clear) are answered; STD-ECHO-2: nothing for
        // one-way messages or replies.
        if f.flag & (standard::FLAG_REPLY | standard::FLAG_ERROR_OR_ONE_WAY) == 0 {
            let flag = standard::FLAG_REPLY | f.kind();
            standard::put_header(out, flag, f.sequence, f.payload.len());
            out.put_slice(&f.payload);
        }
    }
}

impl Echo for LengthFieldDecoder {
    fn payload_len(f: &bytes::Bytes) -> usize {
        f.len()
    }
    fn reply(&self, f: &bytes::Bytes, out: &mut BytesMut) {
        let p: Profile = self.profile();
        p.put_header(out, f.len());
        out.put_slice(f);
    }
}

fn main() {
    let opts = match Options::parse(
        std::env::args().skip(1),
        &[
            "protocol",
            "listen",
            "lf-offset",
            "lf-size",
            "max-payload",
            "threads",
        ],
        &["sink", "stats", "help"],
    ) {
        Ok(o) => o,
        Err(e) => die(&e),
    };
    if opts.has("help") {
        println!("{USAGE}");
        return;
    }
    let protocol = opts.protocol().unwrap_or_else(|e| die(&e));
    let listen = opts
        .required("listen")
        .unwrap_or_else(|e| die(&e))
        .to_string();
    let max_payload: u64 = opts
        .num("max-payload", DEFAULT_MAX_PAYLOAD)
        .unwrap_or_else(|e| die(&e));
    let threads: usize = opts
        .num(
            "threads",
            std::thread::available_parallelism().map_or(2, |n| n.get()),
        )
        .unwrap_or_else(|e| die(&e))
        .max(1);
    let cfg = Config {
        protocol,
        max_payload: if max_payload == 0 {
            DEFAULT_MAX_PAYLOAD
        } else {
            max_payload
        },
        sink: opts.has("sink"),
        stats: opts.has("stats"),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .unwrap_or_else(|e| die(&format!("cannot start the runtime: {e}")));
    let code = rt.block_on(serve(listen, cfg));
    // Connection tasks were stopped; do not wait for blocked reads or writes.
    rt.shutdown_timeout(Duration::from_millis(100));
    std::process::exit(code);
}

fn die(msg: &str) -> ! {
    eprintln!("fp-server: {msg}\n{USAGE}");
    std::process::exit(2);
}

async fn serve(listen: String, cfg: Config) -> i32 {
    let listener = match bind(&listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("fp-server: cannot listen on {listen}: {e}");
            return 1;
        }
    };
    let (mut sigint, mut sigterm) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        _ => {
            eprintln!("fp-server: cannot install signal handlers");
            return 1;
        }
    };
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fp-server: {e}");
            return 1;
        }
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "LISTENING {addr}");
        let _ = out.flush();
    }
    eprintln!(
        "fp-server: {} echo{} on {addr}, max payload {}",
        cfg.protocol.name(),
        if cfg.sink { " (sink)" } else { "" },
        cfg.max_payload
    );
    let counters = Arc::new(Counters::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => {
                    let counters = counters.clone();
                    let stop = stop_rx.clone();
                    tasks.spawn(connection(stream, cfg, counters, stop));
                }
                Err(e) => {
                    // e.g. out of file descriptors: back off instead of spinning.
                    eprintln!("fp-server: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            _ = sigint.recv() => break,
            _ = sigterm.recv() => break,
        }
        while tasks.try_join_next().is_some() {}
    }
    drop(listener);
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
    let line = format!(
        "{{\"connections\": {}, \"frames\": {}, \"bytes\": {}, \"protocol_errors\": {}{extra}}}",
        counters.connections.load(Relaxed),
        counters.frames.load(Relaxed),
        counters.bytes.load(Relaxed),
        counters.protocol_errors.load(Relaxed)
    );
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    0
}

async fn connection(
    stream: TcpStream,
    cfg: Config,
    counters: Arc<Counters>,
    stop: watch::Receiver<bool>,
) {
    counters.connections.fetch_add(1, Relaxed);
    let _ = stream.set_nodelay(true);
    match cfg.protocol {
        Protocol::Standard => {
            echo(
                stream,
                StandardDecoder::new(cfg.max_payload),
                cfg.sink,
                cfg.stats,
                &counters,
                stop,
            )
            .await
        }
        Protocol::LengthField(p) => {
            echo(
                stream,
                LengthFieldDecoder::new(p, cfg.max_payload),
                cfg.sink,
                cfg.stats,
                &counters,
                stop,
            )
            .await
        }
    }
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

/// Serves one connection until EOF, a decoding error, an I/O error or shutdown.
async fn echo<D: Echo>(
    mut stream: TcpStream,
    mut dec: D,
    sink: bool,
    stats: bool,
    counters: &Counters,
    mut stop: watch::Receiver<bool>,
) {
    let mut out = BytesMut::with_capacity(if sink { 0 } else { READ_CHUNK });
    loop {
        dec.buffer_mut().reserve(READ_CHUNK);
        let read = tokio::select! {
            r = stream.read_buf(dec.buffer_mut()) => r,
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
        let (mut frames, mut bytes) = (0u64, 0u64);
        let mut failed = false;
        loop {
            match dec.decode() {
                Ok(Some(f)) => {
                    frames += 1;
                    bytes += D::payload_len(&f) as u64;
                    if !sink {
                        dec.reply(&f, &mut out);
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    eprintln!("fp-server: closing a connection: {e}");
                    failed = true;
                    break;
                }
            }
        }
        counters.frames.fetch_add(frames, Relaxed);
        counters.bytes.fetch_add(bytes, Relaxed);
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
        if !failed && eof {
            // Half-close: every complete frame was answered (STD-ECHO-5, LF-ECHO-3); a partial
            // frame is discarded and counted as a protocol error (STD-STR-3, LF-STR-3).
            if let Err(e) = dec.finish() {
                eprintln!("fp-server: peer closed inside a frame: {e}");
                failed = true;
            }
        }
        if failed {
            counters.protocol_errors.fetch_add(1, Relaxed);
        }
        if failed || eof {
            let _ = stream.shutdown().await;
            if failed && !eof {
                linger(&mut stream, &mut stop).await;
            }
            return;
        }
    }
}
