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
//! let it process what arrived, write the replies of that read in one `write_all`, repeat.
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

use std::collections::HashMap;
use std::future::{poll_fn, Future};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Poll;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use fp_net::{print_line, Cli, Server};
use frameproof_codec::protocol::{Protocol, ServerSession};
use frameproof_codec::registry::Visitor;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;

/// Bytes reserved in the receive buffer before each read.
const READ_CHUNK: usize = 64 * 1024;
/// Bound of [`linger`] in time and bytes.
const LINGER: Duration = Duration::from_millis(500);
const LINGER_BYTES: usize = 16 << 20;
/// How long shutdown waits for the aborted connection tasks to be dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// A connection holding at most this is never closed for the memory budget (RES-2).
const BUDGET_FLOOR: usize = 64 * 1024;
/// A timer that fires this much after its deadline means the process was stopped (SIGSTOP):
/// the clock restarts instead of closing (RES-8).
const PAUSE: Duration = Duration::from_millis(500);
/// Accept errors (out of descriptors) retry after this, or sooner when a connection closes.
const ACCEPT_RETRY: Duration = Duration::from_millis(250);
/// Receive/send buffers above this capacity are given back when they empty.
const KEEP_CAPACITY: usize = 2 * READ_CHUNK;

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

/// The server-wide limits (`*-RES-*`) with the spec's defaults.
#[derive(Clone, Copy, Debug)]
struct Limits {
    memory_budget: usize,
    idle: Duration,
    frame: Duration,
    max_output: usize,
    write: Duration,
    max_connections: usize,
}

/// The limit flags: positive integers, else a usage error.
const LIMIT_FLAGS: [(&str, u64); 6] = [
    ("memory-budget", 256 << 20),
    ("idle-timeout-ms", 30_000),
    ("frame-timeout-ms", 10_000),
    ("max-output-bytes", 1 << 20),
    ("write-timeout-ms", 10_000),
    ("max-connections", 4096),
];

impl Limits {
    fn parse(opts: &fp_net::Options) -> Result<Limits, String> {
        let mut v = [0u64; 6];
        for (i, (name, default)) in LIMIT_FLAGS.iter().enumerate() {
            v[i] = match opts.get(name) {
                None => *default,
                Some(s) => match s.parse::<u64>() {
                    Ok(n) if n > 0 && n <= (1u64 << 48) => n,
                    _ => return Err(format!("--{name}: {s:?} is not a positive integer")),
                },
            };
        }
        Ok(Limits {
            memory_budget: v[0] as usize,
            idle: Duration::from_millis(v[1]),
            frame: Duration::from_millis(v[2]),
            max_output: v[3] as usize,
            write: Duration::from_millis(v[4]),
            max_connections: v[5] as usize,
        })
    }
}

/// What one connection holds, published for the budget, and its order to close.
///
/// A budget close aborts the connection's task (dropping it closes the socket and releases its
/// buffers) instead of signalling it: a signal would have to be awaited beside every read and
/// write, which cost the per-packet echo about a quarter of its user-space instructions.
#[derive(Default)]
struct Holder {
    held: AtomicUsize,
    kill: AtomicBool,
    /// The connection's task, set right after its spawn.
    task: OnceLock<AbortHandle>,
}

impl Holder {
    /// Orders the close. `kill` and `task` are written and read in opposite orders here and
    /// in [`Holder::started`] (SeqCst), so whichever comes second sees the other and aborts.
    fn kill(&self) {
        self.kill.store(true, SeqCst);
        self.abort();
    }

    fn started(&self, task: AbortHandle) {
        let _ = self.task.set(task);
        if self.kill.load(SeqCst) {
            self.abort();
        }
    }

    fn abort(&self) {
        if let Some(t) = self.task.get() {
            t.abort();
        }
    }
}

/// The server-wide state of the limits: connections open, their holdings, and their sum.
struct Shared {
    limits: Limits,
    open: AtomicUsize,
    total: AtomicUsize,
    holders: Mutex<HashMap<u64, Arc<Holder>>>,
    next_id: AtomicU64,
    /// A connection closed (a descriptor may be free again: RES-7).
    closed: Notify,
    budget_closes: AtomicU64,
    timeout_closes: AtomicU64,
    refused: AtomicU64,
}

impl Shared {
    /// Publishes a connection's holding; over the budget, closes the largest holders above
    /// the floor until the sum fits (RES-1, RES-2).
    fn hold(&self, h: &Holder, now: usize) {
        if h.kill.load(Relaxed) {
            return;
        }
        let old = h.held.swap(now, Relaxed);
        let total = if now >= old {
            self.total.fetch_add(now - old, Relaxed) + (now - old)
        } else {
            self.total.fetch_sub(old - now, Relaxed) - (old - now)
        };
        if total <= self.limits.memory_budget {
            return;
        }
        let holders = self.holders.lock().unwrap_or_else(|e| e.into_inner());
        while self.total.load(Relaxed) > self.limits.memory_budget {
            let big = holders
                .values()
                .filter(|c| !c.kill.load(Relaxed))
                .max_by_key(|c| c.held.load(Relaxed));
            let Some(big) = big else { break };
            let held = big.held.load(Relaxed);
            if held <= BUDGET_FLOOR {
                break;
            }
            big.kill();
            self.total.fetch_sub(big.held.swap(0, Relaxed), Relaxed);
            self.budget_closes.fetch_add(1, Relaxed);
        }
    }

    fn register(self: &Arc<Self>) -> Registration {
        let id = self.next_id.fetch_add(1, Relaxed);
        let h = Arc::new(Holder::default());
        self.holders
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, h.clone());
        Registration {
            shared: self.clone(),
            id,
            holder: h,
        }
    }
}

/// A connection's place in [`Shared`]; dropping it releases the holding and the slot.
struct Registration {
    shared: Arc<Shared>,
    id: u64,
    holder: Arc<Holder>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let s = &self.shared;
        s.holders
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
        s.total.fetch_sub(self.holder.held.swap(0, Relaxed), Relaxed);
        s.open.fetch_sub(1, Relaxed);
        s.closed.notify_waiters();
    }
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
    let shared = Arc::new(Shared {
        limits: cfg.limits,
        open: AtomicUsize::new(0),
        total: AtomicUsize::new(0),
        holders: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(0),
        closed: Notify::new(),
        budget_closes: AtomicU64::new(0),
        timeout_closes: AtomicU64::new(0),
        refused: AtomicU64::new(0),
    });
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

/// After closing our side on an error, reads and discards what the peer still sends for a
/// short while, so that closing with unread data (which makes the kernel send a reset that can
/// destroy the replies we just wrote) does not happen while the peer is still reading them.
async fn linger(stream: &mut TcpStream) {
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
        }
    }
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

/// Why a connection ends early.
enum Stop {
    /// Shutdown, a reset, a budget close: drop the socket.
    Drop,
    /// A timeout (RES-3, RES-4, RES-5).
    Timeout(&'static str),
}

/// True when the kernel holds bytes or an EOF for `stream` (a non-blocking MSG_PEEK of one byte).
fn bytes_waiting(stream: &TcpStream) -> bool {
    use std::os::unix::io::AsRawFd;
    let mut b = [0u8; 1];
    // SAFETY: a one-byte buffer we own, a socket descriptor `stream` keeps open for the call.
    let n = unsafe {
        libc::recv(stream.as_raw_fd(), b.as_mut_ptr().cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT)
    };
    n >= 0
}

/// Waits for `deadline`; a timer that fires far too late (the process was stopped) reports
/// `false` (the caller restarts its clock, RES-8).
fn overslept(deadline: Instant) -> bool {
    Instant::now().saturating_duration_since(deadline) > PAUSE
}

/// Serves one connection with its session until the session closes (a decoding error, the
/// peer's EOF), an I/O error, a limit or shutdown.
async fn connection<S: ServerSession>(
    mut stream: TcpStream,
    mut session: S,
    stats: bool,
    counters: Arc<Counters>,
    reg: Registration,
) {
    counters.connections.fetch_add(1, Relaxed);
    let _ = stream.set_nodelay(true);
    let limits = reg.shared.limits;
    // The opening handshake's clock runs from the accept; the others from the last byte.
    let mut accepted = Instant::now();
    let mut last_byte = accepted;
    let mut out = BytesMut::new();
    // Bytes read per read: no more than the output bound, so one read's replies stay near it.
    let chunk = READ_CHUNK.min(limits.max_output.max(4096));
    // One timer per connection, armed lazily: moved earlier when the deadline is, and re-armed
    // when it fires before a deadline that has moved later since (each read moves it). A timer
    // set per read cost the per-packet echo more user-space instructions than its codec.
    let mut armed = accepted + limits.idle;
    let timer = tokio::time::sleep_until(armed);
    tokio::pin!(timer);
    // The timer fired at the deadline: read what the socket holds first (RES-8).
    let mut timed_out = false;
    loop {
        // What to wait for: the handshake from the accept (RES-3), the rest of a frame (RES-4)
        // or the next request (RES-3).
        let held = session.held();
        let deadline = if session.awaiting_opening() {
            accepted + limits.idle
        } else if held > 0 {
            last_byte + limits.frame
        } else {
            last_byte + limits.idle
        };
        let buf = session.buffer_mut();
        if buf.is_empty() && buf.capacity() > KEEP_CAPACITY {
            *buf = BytesMut::new();
        }
        buf.reserve(chunk);
        // tokio answers WouldBlock without a system call while its reactor knows the socket
        // has nothing to read. At most `chunk` bytes: the buffer's spare capacity can be more,
        // and the replies of a larger read outgrew KEEP_CAPACITY, so `out` was dropped after
        // every write and grown again, copying, by the next read (1 KiB websocket pipelined).
        let read = match stream.try_read_buf(&mut (&mut *buf).limit(chunk)) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if timed_out {
                    timed_out = false;
                    // tokio answers WouldBlock until its reactor has seen the socket's readiness,
                    // which right after a SIGCONT may lag the timer: ask the kernel whether bytes
                    // (or an EOF) are waiting; if so the peer was not silent (RES-8), so restart
                    // the clock and read.
                    if bytes_waiting(&stream) {
                        last_byte = Instant::now();
                        continue;
                    }
                    let why = if session.awaiting_opening() {
                        "no opening handshake within the idle timeout (RES-3)"
                    } else if held > 0 {
                        "an unfinished frame received no byte within the frame timeout (RES-4)"
                    } else {
                        "idle beyond the idle timeout (RES-3)"
                    };
                    close_for(&mut stream, &reg, Stop::Timeout(why)).await;
                    return;
                }
                if timer.is_elapsed() || deadline < armed {
                    timer.as_mut().reset(deadline);
                    armed = deadline;
                }
                let readable = poll_fn(|cx| {
                    if stream.poll_read_ready(cx).is_ready() {
                        return Poll::Ready(true); // or an error, which the read reports
                    }
                    timer.as_mut().poll(cx).map(|()| false)
                })
                .await;
                if !readable && Instant::now() >= deadline {
                    if overslept(deadline) {
                        // Stopped and resumed: restart the clocks (RES-8).
                        last_byte = Instant::now();
                        accepted = last_byte;
                    } else {
                        timed_out = true;
                    }
                }
                // Otherwise the timer was armed for an earlier deadline: re-armed above.
                continue;
            }
            r => r,
        };
        timed_out = false;
        let eof = match read {
            Ok(0) => true,
            Ok(n) => {
                last_byte = Instant::now();
                if stats {
                    counters.reads.fetch_add(1, Relaxed);
                    counters.read_bytes.fetch_add(n as u64, Relaxed);
                }
                false
            }
            Err(_) => return, // reset by the peer: nothing to reply to
        };
        // The replies of an echo are about as long as the read: room for them at once, not by
        // doubling from the first reply (kept across reads up to KEEP_CAPACITY).
        if let Ok(n) = read {
            out.reserve(n);
        }
        // At EOF (half-close) every complete frame is answered (STD-ECHO-5, LF-ECHO-3) and a
        // partial frame is the session's truncation error (STD-STR-3, LF-STR-3).
        let served = if eof {
            session.finish(&mut out)
        } else {
            session.process(&mut out)
        };
        counters.frames.fetch_add(served.frames, Relaxed);
        counters.bytes.fetch_add(served.bytes, Relaxed);
        reg.shared.hold(&reg.holder, session.held() + out.len());
        if reg.holder.kill.load(Relaxed) {
            return; // closed for the budget (RES-1): this task is aborted at its next await
        }
        if !out.is_empty() {
            // Replies to the frames before an error are sent too (STD-ECHO-4, LF-ECHO-2).
            // Nothing is read until they are written (RES-5); no progress for the write
            // timeout closes the connection.
            match write_out(&mut stream, &out, limits.write).await {
                Ok(()) => {}
                Err(Stop::Drop) => return,
                Err(t) => {
                    close_for(&mut stream, &reg, t).await;
                    return;
                }
            }
            out.clear();
            if out.capacity() > KEEP_CAPACITY {
                out = BytesMut::new();
            }
            reg.shared.hold(&reg.holder, session.held());
        }
        if let Some(e) = &served.error {
            eprintln!("fp-server: closing a connection: {e}");
            counters.protocol_errors.fetch_add(1, Relaxed);
        }
        if served.closed {
            // The replies are written; the failed session's buffers (a reassembled message can
            // be 100 MiB) go back before the peer sees our FIN, not after the linger (RES-1).
            drop(session);
            drop(out);
            reg.shared.hold(&reg.holder, 0);
            let _ = stream.shutdown().await;
            if served.error.is_some() && !eof {
                linger(&mut stream).await;
            }
            return;
        }
    }
}

/// Writes `out`, closing when the peer takes nothing for `timeout` (RES-5) or on a reset. A
/// budget close or shutdown aborts the task wherever it waits.
async fn write_out(stream: &mut TcpStream, out: &[u8], timeout: Duration) -> Result<(), Stop> {
    let mut pos = 0;
    // Usually the socket takes it all at once: no timer.
    loop {
        match stream.try_write(&out[pos..]) {
            Ok(0) => return Err(Stop::Drop),
            Ok(n) => {
                pos += n;
                if pos == out.len() {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(_) => return Err(Stop::Drop),
        }
    }
    let mut progress = Instant::now();
    while pos < out.len() {
        let deadline = progress + timeout;
        tokio::select! {
            biased;
            w = stream.write(&out[pos..]) => match w {
                Ok(0) | Err(_) => return Err(Stop::Drop),
                Ok(n) => {
                    pos += n;
                    progress = Instant::now();
                }
            },
            _ = tokio::time::sleep_until(deadline) => {
                if overslept(deadline) {
                    progress = Instant::now(); // stopped and resumed (RES-8)
                } else {
                    return Err(Stop::Timeout("pending output made no progress within the write timeout (RES-5)"));
                }
            }
        }
    }
    Ok(())
}

/// Closes a connection for a limit (counted; the socket is dropped by the caller).
async fn close_for(stream: &mut TcpStream, reg: &Registration, why: Stop) {
    if let Stop::Timeout(why) = why {
        reg.shared.timeout_closes.fetch_add(1, Relaxed);
        let n = reg.shared.timeout_closes.load(Relaxed);
        if n.is_power_of_two() {
            eprintln!("fp-server: closing a connection: {why} ({n} so far)");
        }
        let _ = stream.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(args: &[&str]) -> Result<Limits, String> {
        let names: Vec<&str> = LIMIT_FLAGS.iter().map(|(n, _)| *n).collect();
        let o = fp_net::Options::parse(args.iter().map(|s| s.to_string()), &names, &[])?;
        Limits::parse(&o)
    }

    #[test]
    fn limit_flags_defaults_and_usage_errors() {
        let d = limits(&[]).unwrap();
        assert_eq!(d.memory_budget, 256 << 20);
        assert_eq!(d.idle, Duration::from_millis(30_000));
        assert_eq!(d.frame, Duration::from_millis(10_000));
        assert_eq!(d.max_output, 1 << 20);
        assert_eq!(d.write, Duration::from_millis(10_000));
        assert_eq!(d.max_connections, 4096);
        let l = limits(&["--memory-budget", "8388608", "--idle-timeout-ms", "1000"]).unwrap();
        assert_eq!((l.memory_budget, l.idle), (8 << 20, Duration::from_secs(1)));
        for bad in ["0", "-1", "x", "1.5"] {
            assert!(limits(&["--max-connections", bad]).unwrap_err().contains("positive"), "{bad}");
        }
    }

    fn shared(budget: usize) -> Arc<Shared> {
        Arc::new(Shared {
            limits: Limits {
                memory_budget: budget,
                ..limits(&[]).unwrap()
            },
            open: AtomicUsize::new(0),
            total: AtomicUsize::new(0),
            holders: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            closed: Notify::new(),
            budget_closes: AtomicU64::new(0),
            timeout_closes: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        })
    }

    #[test]
    fn budget_closes_the_largest_holders_never_small_ones() {
        let s = shared(1 << 20);
        let regs: Vec<Registration> = (0..6)
            .map(|_| {
                s.open.fetch_add(1, Relaxed);
                s.register()
            })
            .collect();
        // Five small holders (at the floor) and nothing over budget yet.
        for r in &regs[..5] {
            s.hold(&r.holder, BUDGET_FLOOR);
        }
        assert_eq!(s.budget_closes.load(Relaxed), 0);
        // A large one pushes the sum over: it alone is closed.
        s.hold(&regs[5].holder, 900 << 10);
        assert!(regs[5].holder.kill.load(Relaxed));
        assert!(regs[..5].iter().all(|r| !r.holder.kill.load(Relaxed)));
        assert_eq!(s.total.load(Relaxed), 5 * BUDGET_FLOOR);
        // Over the budget with only holders at the floor: none is closed (RES-2).
        let small = shared(BUDGET_FLOOR);
        let a = small.register();
        let b = small.register();
        small.open.fetch_add(2, Relaxed);
        small.hold(&a.holder, BUDGET_FLOOR);
        small.hold(&b.holder, BUDGET_FLOOR);
        assert!(!a.holder.kill.load(Relaxed) && !b.holder.kill.load(Relaxed));
        drop(regs);
        assert_eq!(s.total.load(Relaxed), 0);
        assert_eq!(s.open.load(Relaxed), 0);
        assert!(s.holders.lock().unwrap().is_empty());
    }
}
