//! Receive mode: requests the server is not expected to answer (a sink).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use frameproof_codec::matcher::Received;
use frameproof_codec::protocol::{ClientMatcher, Protocol};
use frameproof_codec::FrameDecoder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::connection::{describe, max_batch_frames, Opened, Run, READ_CHUNK};
use crate::report::Report;

/// Receive mode: write requests in batches of `window` frames, expect no replies; then
/// half-close and wait (at most the timeout) for the server to close, which tells that it has
/// consumed everything.
pub async fn receive_connection<P: Protocol>(
    run: Arc<Run<P>>,
    stream: TcpStream,
    opened: Opened<P>,
    quota: Option<u64>,
) -> Report {
    let mut rep = Report::new();
    let (mut rd, mut wr) = stream.into_split();
    let len = run.cfg.payload;
    let mut m = run.client(&opened);
    let mut batch = BytesMut::with_capacity(READ_CHUNK);
    loop {
        let remaining = quota.map_or(u64::MAX, |q| q - rep.sent);
        if remaining == 0 || run.stop_at.is_some_and(|s| Instant::now() >= s) {
            break;
        }
        let n = remaining
            .min(run.cfg.window as u64)
            .min(max_batch_frames(len));
        batch.clear();
        for _ in 0..n {
            let index = run.next_index.fetch_add(1, Relaxed);
            if let Err(e) = m.send_unanswered(len, &mut batch, |p| run.fill(index, p)) {
                rep.error(format!("request {index} refused: {e}"));
                rep.all_written = false;
                return rep;
            }
        }
        // Bounded: a server that stops reading fails the run after the timeout.
        let w = match tokio::time::timeout(run.cfg.timeout, wr.write_all(&batch)).await {
            Ok(w) => w,
            Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
        };
        if let Err(e) = w {
            rep.error(format!("write failed: {e}"));
            rep.all_written = false;
            return rep;
        }
        rep.sent += n;
    }
    if let Some(q) = quota {
        rep.all_written = rep.sent == q;
    }
    let mut bye = BytesMut::new();
    if run.proto.put_goodbye(&mut bye) {
        let _ = tokio::time::timeout(run.cfg.timeout, wr.write_all(&bye)).await;
    }
    let _ = wr.shutdown().await;
    let mut dec = run.decoder(&opened);
    let deadline = tokio::time::Instant::now() + run.cfg.timeout;
    loop {
        dec.buffer_mut().reserve(READ_CHUNK);
        match tokio::time::timeout_at(deadline, rd.read_buf(dec.buffer_mut())).await {
            Ok(Ok(0)) => {
                rep.last = Some(Instant::now());
                break;
            }
            Ok(Ok(_)) => {
                while let Ok(Some(f)) = dec.decode() {
                    // the server's close, and control traffic (websocket: an unsolicited pong,
                    // accepted and not answered, WS-PING-2), are no replies; anything else is one
                    // nobody asked for (spec/harness.md HAR-VERIFY-3)
                    if P::is_goodbye(&f) || matches!(m.receive(&f), Received::Ignored) {
                        continue;
                    }
                    rep.received += 1;
                    rep.error(format!(
                        "unexpected reply in receive mode ({})",
                        describe::<P>(&f)
                    ));
                }
            }
            Ok(Err(e)) => {
                rep.error(format!("read failed: {e}"));
                break;
            }
            Err(_) => {
                eprintln!("fp-load: the server did not close the connection after the requests");
                break;
            }
        }
    }
    drop(wr);
    rep
}
