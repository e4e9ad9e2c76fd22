//! One connection: a task looping around the protocol's server session (read into its buffer,
//! let it process what arrived, write the replies of that read before the next read), with the
//! connection's own timeouts (RES-3, RES-4, RES-5, RES-8).

use std::future::{poll_fn, Future};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use frameproof_codec::protocol::ServerSession;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::limits::{Registration, BUDGET_FLOOR};
use crate::Counters;

/// Bytes reserved in the receive buffer before each read.
const READ_CHUNK: usize = 64 * 1024;
/// Bound of [`linger`] in time and bytes.
const LINGER: Duration = Duration::from_millis(500);
const LINGER_BYTES: usize = 16 << 20;
/// A timer that fires this much after its deadline means the process was stopped (SIGSTOP):
/// the clock restarts instead of closing (RES-8).
const PAUSE: Duration = Duration::from_millis(500);
/// Receive/send buffers above this capacity are given back when they empty.
const KEEP_CAPACITY: usize = 2 * READ_CHUNK;

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
pub async fn connection<S: ServerSession>(
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
        reg.shared.hold(&reg.holder, holding(&mut session) + out.len());
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
            reg.shared.hold(&reg.holder, holding(&mut session));
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

/// What a connection holds, for the memory budget (RES-1): the bytes of its unfinished frame or
/// message, counted at the capacity of the buffers behind them once over the floor that is never
/// closed (RES-2). The receive buffer grows by doubling, so a holder of a 10 MiB partial frame can
/// occupy 16 MiB; counting the bytes alone let RSS pass the budget by a third under load.
/// Session state kept between messages (websocket's permessage-deflate compressor and inflater,
/// WSD-LIM-2) counts too; it is 0 without it.
fn holding<S: ServerSession>(session: &mut S) -> usize {
    let held = session.held();
    let state = session.state_cost();
    if held <= BUDGET_FLOOR {
        held + state
    } else {
        held.max(session.footprint()) + state
    }
}
