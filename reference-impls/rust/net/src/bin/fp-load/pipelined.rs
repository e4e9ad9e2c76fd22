//! Pipelined mode (`--window W`): each connection runs a writer task and a reader task over the
//! two halves of its socket, so that a large window can never deadlock on full TCP buffers. A
//! semaphore of `window` permits is the sliding window: the writer takes one permit per request,
//! the reader gives it back when the request completes. The writer stops at the request quota or
//! the duration, the reader at the request timeout (a timed-out request fails the connection).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use frameproof_codec::protocol::{ClientMatcher, Protocol};
use frameproof_codec::FrameDecoder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{Notify, Semaphore};

use crate::connection::{
    fail_pending, goodbye, max_batch_frames, on_frame, send_request, Client, Opened, Run,
    READ_CHUNK,
};
use crate::report::Report;

/// How often the reader checks timeouts when no data arrives.
const TICK: Duration = Duration::from_millis(20);

/// Per-connection state shared by its writer and reader.
struct Conn<P: Protocol> {
    matcher: Mutex<Client<P>>,
    window: Semaphore,
    sent: AtomicU64,
    writer_done: AtomicBool,
    writer_wake: Notify,
    /// Set by the writer when a send was refused or a write failed.
    writer_error: Mutex<Option<String>>,
}

/// One connection of pipelined mode: requests with at most `--window` unanswered.
pub async fn echo_connection<P: Protocol>(
    run: Arc<Run<P>>,
    stream: TcpStream,
    opened: Opened<P>,
    quota: Option<u64>,
) -> Report {
    let (rd, wr) = stream.into_split();
    let conn = Arc::new(Conn::<P> {
        matcher: Mutex::new(run.client(&opened)),
        window: Semaphore::new(run.cfg.window),
        sent: AtomicU64::new(0),
        writer_done: AtomicBool::new(false),
        writer_wake: Notify::new(),
        writer_error: Mutex::new(None),
    });
    let mut writer = tokio::spawn(write_requests(run.clone(), conn.clone(), wr, quota));
    let (mut rep, mut rd, dec, failed) = read_replies(&run, &conn, rd, &opened).await;
    // The reader only returns when the writer is done or the connection failed: the writer
    // hands its half back when it is done (a failed connection closes the window, which ends it).
    match tokio::time::timeout(run.cfg.timeout, &mut writer).await {
        Ok(Ok(mut wr)) if !failed => goodbye(&run, &mut rd, &mut wr, dec).await,
        Ok(_) => {}
        Err(_) => writer.abort(),
    }
    rep.sent = conn.sent.load(Relaxed);
    if let Some(e) = conn.writer_error.lock().unwrap().take() {
        rep.error(e);
    }
    if let Some(q) = quota {
        rep.all_written = rep.sent == q;
    }
    rep
}

/// The writer: requests in batches of the permits it can take, until the quota or the
/// duration is reached or the connection fails; returns the write half.
async fn write_requests<P: Protocol>(
    run: Arc<Run<P>>,
    conn: Arc<Conn<P>>,
    mut wr: OwnedWriteHalf,
    quota: Option<u64>,
) -> OwnedWriteHalf {
    let len = run.cfg.payload;
    let mut batch = BytesMut::with_capacity(READ_CHUNK);
    let mut sent = 0u64;
    loop {
        let remaining = quota.map_or(u64::MAX, |q| q - sent);
        if remaining == 0 {
            break;
        }
        let permit = match run.stop_at {
            Some(stop) => tokio::select! {
                p = conn.window.acquire() => p,
                _ = tokio::time::sleep_until(stop.into()) => break,
            },
            None => conn.window.acquire().await,
        };
        let Ok(permit) = permit else {
            break; // the reader closed the window: the connection failed
        };
        if run.stop_at.is_some_and(|s| Instant::now() >= s) {
            break;
        }
        permit.forget();
        let mut n = 1u64;
        while n < remaining && n < max_batch_frames(len) {
            match conn.window.try_acquire() {
                Ok(p) => {
                    p.forget();
                    n += 1;
                }
                Err(_) => break,
            }
        }
        batch.clear();
        let mut k = 0u64;
        let mut refused = false;
        {
            let mut m = conn.matcher.lock().unwrap();
            let now = Instant::now();
            while k < n {
                match send_request(&run, &mut m, now, &mut batch) {
                    Ok(()) => k += 1,
                    Err(e) => {
                        // A failed connection is the reader's to report.
                        if !m.is_failed() {
                            *conn.writer_error.lock().unwrap() = Some(e);
                        }
                        refused = true;
                        break;
                    }
                }
            }
        }
        if k > 0 {
            if let Err(e) = wr.write_all(&batch).await {
                *conn.writer_error.lock().unwrap() = Some(format!("write failed: {e}"));
                break;
            }
            sent += k;
            conn.sent.store(sent, Relaxed);
        }
        if refused {
            break;
        }
    }
    conn.writer_done.store(true, Relaxed);
    conn.writer_wake.notify_one();
    // The write half goes back to the connection (dropping it would half-close).
    wr
}

/// Reads and verifies replies until the writer is done and nothing is pending, or the
/// connection fails; returns the report, the read half and the decoder (for the goodbye), and
/// whether the connection failed.
async fn read_replies<P: Protocol>(
    run: &Run<P>,
    conn: &Conn<P>,
    mut rd: OwnedReadHalf,
    opened: &Opened<P>,
) -> (Report, OwnedReadHalf, P::Decoder, bool) {
    let mut rep = Report::new();
    let mut dec = run.decoder(opened);
    let len = run.cfg.payload;
    let mut failed = false;
    loop {
        {
            let m = conn.matcher.lock().unwrap();
            if conn.writer_done.load(Relaxed) && m.pending() == 0 {
                break;
            }
        }
        dec.buffer_mut().reserve(READ_CHUNK);
        let read = tokio::select! {
            r = rd.read_buf(dec.buffer_mut()) => Some(r),
            _ = tokio::time::sleep(TICK) => None,
            _ = conn.writer_wake.notified() => None,
        };
        let eof = match read {
            Some(Ok(0)) => true,
            Some(Ok(_)) | None => false,
            Some(Err(e)) => {
                rep.error(format!("read failed: {e}"));
                fail_connection(conn, &mut rep, "the connection failed");
                failed = true;
                break;
            }
        };
        let now = Instant::now();
        let mut decode_error = None;
        {
            let mut m = conn.matcher.lock().unwrap();
            loop {
                match dec.decode() {
                    Ok(Some(f)) => {
                        if on_frame::<P>(run, &mut m, &f, now, &mut rep, len) {
                            conn.window.add_permits(1);
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        decode_error = Some(e);
                        break;
                    }
                }
            }
        }
        if let Some(e) = decode_error {
            rep.error(format!("reply stream rejected: {e}"));
            fail_connection(conn, &mut rep, "the reply stream was rejected");
            failed = true;
            break;
        }
        if eof {
            let pending = conn.matcher.lock().unwrap().pending();
            if pending > 0 || !conn.writer_done.load(Relaxed) {
                rep.error(format!(
                    "server closed the connection with {pending} requests pending"
                ));
                fail_connection(conn, &mut rep, "the server closed the connection");
            }
            failed = true;
            break;
        }
        // Timeouts: a load run treats any timeout as fatal for the connection (for
        // length-field it is anyway, LF-MATCH-3), which also bounds the writer.
        let expired = conn.matcher.lock().unwrap().expire(run.us(now));
        if !expired.is_empty() {
            for t in expired.timed_out.iter().chain(&expired.failed) {
                rep.error(format!(
                    "request {} timed out after {} ms",
                    t.index,
                    run.cfg.timeout.as_millis()
                ));
            }
            fail_connection(conn, &mut rep, "a request timed out");
            failed = true;
            break;
        }
    }
    (rep, rd, dec, failed)
}

/// Fails every pending request of the connection and stops its writer.
fn fail_connection<P: Protocol>(conn: &Conn<P>, rep: &mut Report, why: &str) {
    fail_pending::<P>(&mut conn.matcher.lock().unwrap(), rep, why);
    conn.window.close();
}
