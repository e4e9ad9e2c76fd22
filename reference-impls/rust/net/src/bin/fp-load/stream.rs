//! Stream mode, for protocols with streams (`Protocol::streams`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use frameproof_codec::protocol::{Protocol, StreamReply};
use frameproof_codec::FrameDecoder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::connection::{describe, Opened, Run, Tag, READ_CHUNK};
use crate::report::Report;

/// Reads the next frame, waiting at most until `deadline`.
async fn next_frame<P: Protocol>(
    stream: &mut TcpStream,
    dec: &mut P::Decoder,
    deadline: tokio::time::Instant,
) -> Result<P::Frame, String> {
    loop {
        match dec.decode() {
            Ok(Some(f)) => return Ok(f),
            Ok(None) => {}
            Err(e) => return Err(format!("reply stream rejected: {e}")),
        }
        dec.buffer_mut().reserve(READ_CHUNK);
        match tokio::time::timeout_at(deadline, stream.read_buf(dec.buffer_mut())).await {
            Ok(Ok(0)) => return Err("the server closed the connection".into()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("read failed: {e}")),
            Err(_) => return Err("timed out waiting for the server".into()),
        }
    }
}

/// Writes `buf`, waiting at most until `deadline`.
async fn write_by(
    stream: &mut TcpStream,
    buf: &[u8],
    deadline: tokio::time::Instant,
) -> Result<(), String> {
    match tokio::time::timeout_at(deadline, stream.write_all(buf)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("write failed: {e}")),
        Err(_) => Err("write timed out".into()),
    }
}

/// Stream mode: streams one after another on this connection (reference-impls/README.md, rpc):
/// open (next id) and wait for the acknowledgement, `--frames-per-stream` data frames with at
/// most `--window` unanswered, each echo verified (same stream, payload equal, in order), then
/// end and wait for the end. Every wait is bounded by the timeout; an error ends the connection.
pub async fn stream_connection<P: Protocol>(
    run: Arc<Run<P>>,
    mut stream: TcpStream,
    opened: Opened<P>,
    quota: Option<u64>,
) -> Report {
    let mut rep = Report::new();
    let ops = run
        .proto
        .streams()
        .expect("--mode stream checked at start-up");
    let len = run.cfg.payload;
    let frames = run.cfg.frames_per_stream;
    let window = run.cfg.window;
    let timeout = run.cfg.timeout;
    let mut dec = run.decoder(&opened);
    let mut out = BytesMut::with_capacity(READ_CHUNK);
    let mut inflight: std::collections::VecDeque<Tag> = std::collections::VecDeque::new();
    let mut next_id: u32 = 0;
    let deadline = || tokio::time::Instant::now() + timeout;
    let r: Result<(), String> = async {
        loop {
            if quota.is_some_and(|q| rep.streams_started >= q)
                || run.stop_at.is_some_and(|s| Instant::now() >= s)
            {
                return Ok(());
            }
            let id = next_id;
            next_id = next_id.wrapping_add(1);
            rep.streams_started += 1;
            out.clear();
            ops.put_open(id, &mut out);
            write_by(&mut stream, &out, deadline()).await?;
            let f = next_frame::<P>(&mut stream, &mut dec, deadline()).await?;
            if ops.classify(&f) != StreamReply::Opened(id) {
                return Err(format!(
                    "stream {id}: expected its opening acknowledged, got {}",
                    describe::<P>(&f)
                ));
            }
            let (mut sent, mut echoed) = (0u64, 0u64);
            let mut intact = true;
            while echoed < frames {
                out.clear();
                let now = Instant::now();
                let mut k = 0;
                while sent < frames && inflight.len() < window {
                    let index = run.next_index.fetch_add(1, Relaxed);
                    ops.put_data(id, len, &mut out, &mut |p| run.fill(index, p));
                    inflight.push_back(Tag {
                        index,
                        sent_at: now,
                    });
                    sent += 1;
                    k += 1;
                }
                if k > 0 {
                    write_by(&mut stream, &out, deadline()).await?;
                    rep.sent += k;
                }
                let f = next_frame::<P>(&mut stream, &mut dec, deadline()).await?;
                let now = Instant::now();
                match ops.classify(&f) {
                    StreamReply::Data(sid, payload) if sid == id => {
                        rep.received += 1;
                        let tag = inflight.pop_front().ok_or_else(|| {
                            format!("stream {id}: a data frame beyond those sent")
                        })?;
                        echoed += 1;
                        // A wrong echo is counted and the stream goes on (it will not count as
                        // completed); only a missing or foreign frame ends the connection.
                        if !run.matches(tag.index, len, payload) {
                            intact = false;
                            rep.error(format!(
                                "stream {id}: echo of data frame {} differs ({} bytes received, {len} sent)",
                                tag.index,
                                payload.len()
                            ));
                            continue;
                        }
                        rep.verified += 1;
                        rep.verified_bytes += payload.len() as u64;
                        let us = now.saturating_duration_since(tag.sent_at).as_micros() as u64;
                        rep.hist.saturating_record(us);
                        rep.last = Some(now);
                    }
                    _ => {
                        return Err(format!(
                            "stream {id}: expected the echo of a data frame, got {}",
                            describe::<P>(&f)
                        ))
                    }
                }
            }
            out.clear();
            ops.put_end(id, &mut out);
            write_by(&mut stream, &out, deadline()).await?;
            let f = next_frame::<P>(&mut stream, &mut dec, deadline()).await?;
            if ops.classify(&f) != StreamReply::Ended(id) {
                return Err(format!(
                    "stream {id}: expected its end answered, got {}",
                    describe::<P>(&f)
                ));
            }
            if intact {
                rep.streams_completed += 1;
            }
            rep.last = Some(Instant::now());
        }
    }
    .await;
    if let Err(e) = r {
        // the frames still in flight stay unanswered: requests_sent - replies_received
        rep.error(format!("{e} ({} data frames unanswered)", inflight.len()));
    }
    if let Some(q) = quota {
        rep.all_written &= rep.streams_started == q;
    }
    rep
}
