//! Per-packet mode (a batch of 1) and batched mode (`--batch N`).

use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use frameproof_codec::protocol::{ClientMatcher, Protocol};
use frameproof_codec::FrameDecoder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::cli::Mode;
use crate::connection::{fail_pending, goodbye, on_frame, send_request, Opened, Run, READ_CHUNK};
use crate::report::Report;

/// Per-packet mode (a batch of 1) and batched mode (`--batch N`): a batch of requests written
/// at once, then every reply read and verified before the next batch, in one task (no hand-off
/// between tasks on the latency path). A batch not answered within the timeout fails the
/// connection.
pub async fn batch_connection<P: Protocol>(
    run: Arc<Run<P>>,
    mut stream: TcpStream,
    opened: Opened<P>,
    quota: Option<u64>,
) -> Report {
    let mut rep = Report::new();
    let len = run.cfg.payload;
    let mut m = run.client(&opened);
    let mut dec = run.decoder(&opened);
    let size = if run.cfg.mode == Mode::Batched {
        run.cfg.window as u64
    } else {
        1
    };
    let mut batch = BytesMut::with_capacity((len + 16) * size as usize);
    'requests: loop {
        let remaining = quota.map_or(u64::MAX, |q| q - rep.sent);
        if remaining == 0 || run.stop_at.is_some_and(|s| Instant::now() >= s) {
            break;
        }
        let n = remaining.min(size);
        let now = Instant::now();
        batch.clear();
        for _ in 0..n {
            if let Err(e) = send_request(&run, &mut m, now, &mut batch) {
                rep.error(e);
                break 'requests;
            }
        }
        let deadline = tokio::time::Instant::from(now) + run.cfg.timeout;
        match tokio::time::timeout_at(deadline, stream.write_all(&batch)).await {
            Ok(Ok(())) => rep.sent += n,
            Ok(Err(e)) => {
                rep.error(format!("write failed: {e}"));
                fail_pending::<P>(&mut m, &mut rep, "the write failed");
                break;
            }
            Err(_) => {
                rep.error("write timed out".into());
                fail_pending::<P>(&mut m, &mut rep, "the write timed out");
                break;
            }
        }
        // Read until every request of the batch is complete.
        while m.pending() > 0 {
            match dec.decode() {
                Ok(Some(f)) => {
                    on_frame::<P>(&run, &mut m, &f, Instant::now(), &mut rep, len);
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    rep.error(format!("reply stream rejected: {e}"));
                    fail_pending::<P>(&mut m, &mut rep, "the reply stream was rejected");
                    break 'requests;
                }
            }
            dec.buffer_mut().reserve(READ_CHUNK);
            match tokio::time::timeout_at(deadline, stream.read_buf(dec.buffer_mut())).await {
                Ok(Ok(0)) => {
                    rep.error(format!(
                        "server closed the connection with {} requests pending",
                        m.pending()
                    ));
                    fail_pending::<P>(&mut m, &mut rep, "the server closed the connection");
                    break 'requests;
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    rep.error(format!("read failed: {e}"));
                    fail_pending::<P>(&mut m, &mut rep, "the read failed");
                    break 'requests;
                }
                Err(_) => {
                    for t in m.fail() {
                        rep.error(format!(
                            "request {} timed out after {} ms",
                            t.index,
                            run.cfg.timeout.as_millis()
                        ));
                    }
                    break 'requests;
                }
            }
        }
    }
    if let Some(q) = quota {
        rep.all_written = rep.sent == q;
    }
    if !m.is_failed() && rep.errors == 0 {
        let (mut rd, mut wr) = stream.split();
        goodbye(&run, &mut rd, &mut wr, dec).await;
    }
    rep
}
