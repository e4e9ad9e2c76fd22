//! What every load mode shares: the run's state, the opening handshake and the goodbye of a
//! connection, sending a request and verifying the frame that answers it.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use fp_net::{
    fill_payload, fill_prose_payload, fill_text_payload, payload_matches, prose_payload_matches, text_payload_matches,
};
use frameproof_codec::matcher::Received;
use frameproof_codec::protocol::{ClientMatcher, PayloadForm, Protocol};
use frameproof_codec::FrameDecoder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::cli::Config;
use crate::report::Report;

/// How much room a read makes in the receive buffer.
pub const READ_CHUNK: usize = 64 * 1024;
/// Target size of one write batch.
const BATCH_BYTES: usize = 256 * 1024;

/// State shared by all connections of a run.
pub struct Run<P> {
    pub proto: P,
    pub cfg: Config,
    /// When every connection was up: the clock's zero.
    pub start: Instant,
    /// `--duration`: when to stop sending.
    pub stop_at: Option<Instant>,
    /// The index of the next request, over all connections.
    pub next_index: AtomicU64,
}

impl<P: Protocol> Run<P> {
    /// The matcher's clock: microseconds since the start of the run.
    pub fn us(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.start).as_micros() as u64
    }
    /// A client for one connection.
    pub fn client(&self, c: &Opened<P>) -> Client<P> {
        c.proto.client(self.cfg.timeout.as_micros() as u64)
    }
    /// A decoder for one connection, holding what followed the opening handshake.
    pub fn decoder(&self, c: &Opened<P>) -> P::Decoder {
        let mut d = c.proto.decoder();
        d.extend(&c.leftover);
        d
    }
    /// The payload of request `index` (`--variant`: binary, hex text or prose).
    pub fn fill(&self, index: u64, p: &mut [u8]) {
        match self.proto.payload_form() {
            PayloadForm::Binary => fill_payload(index, p),
            PayloadForm::Hex => fill_text_payload(index, p),
            PayloadForm::Prose => fill_prose_payload(index, p),
        }
    }
    /// Whether `payload` is request `index`'s payload of `len` bytes.
    pub fn matches(&self, index: u64, len: usize, payload: &[u8]) -> bool {
        match self.proto.payload_form() {
            PayloadForm::Binary => payload_matches(index, len, payload),
            PayloadForm::Hex => text_payload_matches(index, len, payload),
            PayloadForm::Prose => prose_payload_matches(index, len, payload),
        }
    }
}

/// One connection after its opening handshake: the bytes that followed the server's answer
/// (frames), and the protocol as the handshake left it ([`Protocol::opened`]: websocket with
/// permessage-deflate agreed or not).
pub struct Opened<P> {
    pub leftover: BytesMut,
    pub proto: P,
}

/// The opening handshake of one connection, where the protocol has one, or why it failed.
pub async fn open<P: Protocol>(
    proto: &P,
    host: &str,
    stream: &mut TcpStream,
    timeout: Duration,
) -> Result<Opened<P>, String> {
    let mut buf = BytesMut::new();
    let Some(opening) = proto.opening(host) else {
        return Ok(Opened {
            leftover: buf,
            proto: proto.clone(),
        });
    };
    let deadline = tokio::time::Instant::now() + timeout;
    match tokio::time::timeout_at(deadline, stream.write_all(opening.request())).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("writing the opening handshake: {e}")),
        Err(_) => return Err("writing the opening handshake timed out".into()),
    }
    loop {
        if let Some(n) = opening.response(&buf)? {
            let _ = buf.split_to(n);
            return Ok(Opened {
                leftover: buf,
                proto: proto.opened(&*opening),
            });
        }
        buf.reserve(4096);
        match tokio::time::timeout_at(deadline, stream.read_buf(&mut buf)).await {
            Ok(Ok(0)) => return Err("the server closed during the opening handshake".into()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("reading the opening handshake: {e}")),
            Err(_) => return Err("no answer to the opening handshake".into()),
        }
    }
}

/// What a client says before closing (websocket: close 1000), then waits at most the timeout
/// for the server's answer (its close, or the end of the connection).
pub async fn goodbye<P: Protocol, R, W>(run: &Run<P>, rd: &mut R, wr: &mut W, mut dec: P::Decoder)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut bye = BytesMut::new();
    if !run.proto.put_goodbye(&mut bye) {
        return;
    }
    let deadline = tokio::time::Instant::now() + run.cfg.timeout;
    if !matches!(
        tokio::time::timeout_at(deadline, wr.write_all(&bye)).await,
        Ok(Ok(()))
    ) {
        return;
    }
    loop {
        while let Ok(Some(f)) = dec.decode() {
            if P::is_goodbye(&f) {
                return;
            }
        }
        dec.buffer_mut().reserve(READ_CHUNK);
        match tokio::time::timeout_at(deadline, rd.read_buf(dec.buffer_mut())).await {
            Ok(Ok(n)) if n > 0 => {}
            Ok(_) => return,
            Err(_) => {
                eprintln!("fp-load: the server did not answer the closing frame in time");
                return;
            }
        }
    }
}

/// A pending request: its global index and when it was written.
pub struct Tag {
    pub index: u64,
    pub sent_at: Instant,
}

/// The client side of one connection of the run's protocol.
pub type Client<P> = <P as Protocol>::Client<Tag>;

/// Frames per write batch so that a batch stays around [`BATCH_BYTES`] (at least one frame):
/// a window of large payloads must not become one huge buffer.
pub fn max_batch_frames(payload: usize) -> u64 {
    (BATCH_BYTES / (payload + 16)).max(1) as u64
}

/// Sends request `index` (its payload generated in place) and makes it pending.
pub fn send_request<P: Protocol>(
    run: &Run<P>,
    m: &mut Client<P>,
    now: Instant,
    batch: &mut BytesMut,
) -> Result<(), String> {
    let index = run.next_index.fetch_add(1, Relaxed);
    let tag = Tag {
        index,
        sent_at: now,
    };
    m.send_request(run.us(now), tag, run.cfg.payload, batch, |p| {
        run.fill(index, p)
    })
    .map_err(|e| format!("request {index} refused: {e}"))
}

/// A frame for an error detail: its fields other than the payload, and the payload's size.
pub fn describe<P: Protocol>(f: &P::Frame) -> String {
    format!("{} frame {}", P::NAME, P::describe(f))
}

/// Matches and verifies one received frame; true if it completed a pending request. A frame
/// that completes nothing is an error, unless the protocol says otherwise
/// ([`Protocol::STRAYS_ARE_ERRORS`]: rpc's `RPC-MATCH-2`, `RPC-MATCH-4`), and then it is not
/// counted as received either.
pub fn on_frame<P: Protocol>(
    run: &Run<P>,
    m: &mut Client<P>,
    f: &P::Frame,
    now: Instant,
    rep: &mut Report,
    len: usize,
) -> bool {
    // what the opening negotiated undone first (websocket: a compressed echo inflated)
    let (inflated, why) = match m.incoming(f) {
        Ok(g) => (g, None),
        Err(e) => (None, Some(e)),
    };
    let f = inflated.as_ref().unwrap_or(f);
    let got = m.receive(f);
    if !P::STRAYS_ARE_ERRORS && matches!(got, Received::Unmatched | Received::PeerRequest) {
        return false;
    }
    rep.received += 1;
    match got {
        Received::Reply(tag) => {
            let payload = P::payload(f);
            if let Some(why) = why {
                rep.error(format!("request {}: {why}", tag.index));
            } else if let Err(why) = run.proto.check_reply(f) {
                rep.error(format!("request {}: {why}", tag.index));
            } else if !run.matches(tag.index, len, payload) {
                rep.error(format!(
                    "request {}: reply payload differs ({} bytes received, {len} sent)",
                    tag.index,
                    payload.len()
                ));
            } else {
                rep.verified += 1;
                rep.verified_bytes += payload.len() as u64;
                let us = now.saturating_duration_since(tag.sent_at).as_micros() as u64;
                rep.hist.saturating_record(us);
                rep.last = Some(now);
            }
            true
        }
        Received::Unmatched => {
            rep.error(format!("unmatched reply ({})", describe::<P>(f)));
            false
        }
        Received::PeerRequest => {
            rep.error(format!("the server sent a request ({})", describe::<P>(f)));
            false
        }
        Received::Ignored => false,
    }
}

/// Fails every pending request of the connection, each an error of the report.
pub fn fail_pending<P: Protocol>(m: &mut Client<P>, rep: &mut Report, why: &str) {
    for t in m.fail() {
        rep.error(format!("request {} failed: {why}", t.index));
    }
}
