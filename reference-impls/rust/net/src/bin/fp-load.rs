//! fp-load: the verifying load client, per reference-impls/README.md.
//!
//! ```text
//! fp-load (--codec JSON | --protocol NAME) --connect HOST:PORT
//!         [--connections N] (--requests N | --duration SECONDS) [--payload BYTES]
//!         [--mode per-packet|pipelined|batched|receive|stream] [--window W] [--batch N]
//!         [--timeout-ms MS] [--variant NAME] [--frames-per-stream F] [--json FILE]
//! ```
//!
//! `--variant` picks the kind of request among the protocol's own (`Protocol::VARIANTS`: rpc's
//! call modes); `--mode stream` (protocols with streams, `Protocol::streams`) runs streams one
//! after another on each connection: open, `F` data frames with at most `W` unanswered, each echo
//! verified in order, end; `--requests` then counts streams.
//!
//! Generic over the protocol: the registry builds the one `--codec` names, and every
//! connection uses that protocol's client matcher (sequence table for `standard`, FIFO for
//! `length-field`, ...) and decoder, driven by a microsecond clock since the start of the run.
//!
//! Each connection runs a writer task and a reader task over the two halves of its socket, so
//! that a large window can never deadlock on full TCP buffers. A semaphore of `window` permits
//! is the sliding window: the writer takes one permit per request, the reader gives it back when
//! the request completes. Every reply is verified against the payload regenerated from the
//! request's index.
//!
//! Every loop is bounded: the writer by the request quota or the duration, the reader by the
//! request timeout (a timed-out request fails its connection).

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use fp_net::{
    fill_payload, fill_text_payload, json_f64, json_string, online_cpus, payload_matches,
    text_payload_matches, Cli,
};
use frameproof_codec::config::CodecConfig;
use frameproof_codec::matcher::Received;
use frameproof_codec::protocol::{ClientMatcher, Protocol, StreamReply};
use frameproof_codec::registry::Visitor;
use frameproof_codec::FrameDecoder;
use hdrhistogram::Histogram;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{Notify, Semaphore};

const CLI: Cli = Cli {
    program: "fp-load",
    usage: "usage: fp-load (--codec JSON | --protocol NAME) --connect HOST:PORT \
[--connections N] (--requests N | --duration SECONDS) [--payload BYTES] \
[--mode per-packet|pipelined|batched|receive|stream] [--window W] [--batch N] \
[--timeout-ms MS] [--variant NAME] [--frames-per-stream F] [--json FILE]",
};

const READ_CHUNK: usize = 64 * 1024;
/// Target size of one write batch.
const BATCH_BYTES: usize = 256 * 1024;
/// How often the reader checks timeouts when no data arrives.
const TICK: Duration = Duration::from_millis(20);
/// Error descriptions kept in the report.
const MAX_DETAILS: usize = 10;
/// Highest latency the histogram tracks (larger values are clamped), in microseconds.
const HIST_MAX_US: u64 = 3_600_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    PerPacket,
    Pipelined,
    Batched,
    Receive,
    Stream,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::PerPacket => "per-packet",
            Mode::Pipelined => "pipelined",
            Mode::Batched => "batched",
            Mode::Receive => "receive",
            Mode::Stream => "stream",
        }
    }
}

#[derive(Debug, Clone)]
struct Config {
    codec: CodecConfig,
    addr: String,
    connections: usize,
    requests: Option<u64>,
    duration: Option<Duration>,
    payload: usize,
    mode: Mode,
    window: usize,
    timeout: Duration,
    json: Option<String>,
    /// `--variant`; resolved to the protocol's default at start-up.
    variant: Option<String>,
    frames_per_stream: u64,
    /// `--batch`; resolved to the protocol's seed batch at start-up (then also `window`).
    batch: Option<usize>,
}

fn parse_config() -> Result<Config, String> {
    let o = CLI.parse(
        &[
            "codec",
            "protocol",
            "connect",
            "connections",
            "requests",
            "duration",
            "payload",
            "mode",
            "window",
            "timeout-ms",
            "json",
            "variant",
            "frames-per-stream",
            "batch",
        ],
        &[],
    );
    let codec = o.codec()?;
    let addr = o.required("connect")?.to_string();
    let connections: usize = o.num("connections", 1)?;
    if connections == 0 {
        return Err("--connections must be at least 1".into());
    }
    let requests: Option<u64> = match o.get("requests") {
        Some(_) => Some(o.num("requests", 0)?),
        None => None,
    };
    let duration = match o.get("duration") {
        Some(_) => {
            let s: f64 = o.num("duration", 0.0)?;
            if !(s.is_finite() && s > 0.0) {
                return Err("--duration must be a positive number of seconds".into());
            }
            Some(Duration::from_secs_f64(s))
        }
        None => None,
    };
    if requests.is_some() == duration.is_some() {
        return Err("give exactly one of --requests and --duration".into());
    }
    let payload: usize = o.num("payload", 32)?;
    let mode = match o.get("mode").unwrap_or("per-packet") {
        "per-packet" => Mode::PerPacket,
        "pipelined" => Mode::Pipelined,
        "batched" => Mode::Batched,
        "receive" => Mode::Receive,
        "stream" => Mode::Stream,
        other => return Err(format!("--mode: unknown mode {other:?}")),
    };
    let window: usize = match mode {
        Mode::PerPacket | Mode::Stream => o.num("window", 1)?,
        Mode::Pipelined => o.num("window", 32)?,
        Mode::Batched => {
            if o.get("window").is_some() {
                return Err("--window does not apply in batched mode (use --batch)".into());
            }
            0 // the batch, resolved with the protocol
        }
        Mode::Receive => o.num("window", 256)?,
    };
    let frames_per_stream: u64 = o.num("frames-per-stream", 16)?;
    if mode == Mode::Stream && frames_per_stream == 0 {
        return Err("--frames-per-stream must be at least 1".into());
    }
    if mode != Mode::Stream && o.get("frames-per-stream").is_some() {
        return Err("--frames-per-stream needs --mode stream".into());
    }
    if window == 0 && mode != Mode::Batched {
        return Err("--window must be at least 1".into());
    }
    let batch = match o.get("batch") {
        Some(_) if mode != Mode::Batched => return Err("--batch needs --mode batched".into()),
        Some(_) => {
            let n: usize = o.num("batch", 0)?;
            if n == 0 {
                return Err("--batch must be at least 1".into());
            }
            Some(n)
        }
        None => None,
    };
    if mode == Mode::PerPacket && window != 1 {
        return Err("--window must be 1 in per-packet mode (or use --mode pipelined)".into());
    }
    let timeout_ms: u64 = o.num("timeout-ms", 5000)?;
    if timeout_ms == 0 {
        return Err("--timeout-ms must be at least 1".into());
    }
    Ok(Config {
        codec,
        addr,
        connections,
        requests,
        duration,
        payload,
        mode,
        window,
        timeout: Duration::from_millis(timeout_ms),
        json: o.get("json").map(|s| s.to_string()),
        variant: o.get("variant").map(|s| s.to_string()),
        frames_per_stream,
        batch,
    })
}

/// The checks that depend on the protocol; an error is a usage error.
fn check<P: Protocol>(proto: &P, cfg: &Config) -> Result<(), String> {
    if let Some(v) = &cfg.variant {
        if !P::VARIANTS.contains(&v.as_str()) {
            return Err(format!(
                "--variant: {v:?} is not a variant of {} (it has: {})",
                P::NAME,
                P::VARIANTS.join(", ")
            ));
        }
    }
    if cfg.mode == Mode::Stream && proto.streams().is_none() {
        return Err(format!(
            "--mode stream: {} has no streams (per-packet, pipelined or receive)",
            P::NAME
        ));
    }
    let (max, requirement) = proto.max_in_flight();
    if cfg.mode == Mode::Batched && cfg.batch.unwrap_or(P::SEED_BATCH) > max {
        return Err(format!(
            "--batch must be at most {max} for {} ({requirement})",
            P::NAME
        ));
    }
    if cfg.mode == Mode::Pipelined && cfg.window > max {
        return Err(format!(
            "--window must be at most {max} for {} ({requirement})",
            P::NAME
        ));
    }
    // Refuse a payload the encoder would refuse, before connecting.
    proto
        .check_request(cfg.payload)
        .map_err(|e| format!("--payload: {e}"))
}

/// State shared by all connections of a run.
struct Run<P> {
    proto: P,
    cfg: Config,
    start: Instant,
    stop_at: Option<Instant>,
    next_index: AtomicU64,
}

impl<P: Protocol> Run<P> {
    /// The matcher's clock: microseconds since the start of the run.
    fn us(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.start).as_micros() as u64
    }
    /// A client for one connection.
    fn client(&self) -> Client<P> {
        self.proto.client(self.cfg.timeout.as_micros() as u64)
    }
    /// A decoder for one connection, holding what followed the opening handshake.
    fn decoder(&self, leftover: &[u8]) -> P::Decoder {
        let mut d = self.proto.decoder();
        d.extend(leftover);
        d
    }
    /// The payload of request `index` (text protocols: its hex form).
    fn fill(&self, index: u64, p: &mut [u8]) {
        if self.proto.text_payloads() {
            fill_text_payload(index, p)
        } else {
            fill_payload(index, p)
        }
    }
    fn matches(&self, index: u64, len: usize, payload: &[u8]) -> bool {
        if self.proto.text_payloads() {
            text_payload_matches(index, len, payload)
        } else {
            payload_matches(index, len, payload)
        }
    }
}

/// The opening handshake of one connection, where the protocol has one: the bytes that followed
/// the server's answer (frames), or why it failed.
async fn open<P: Protocol>(
    proto: &P,
    host: &str,
    stream: &mut TcpStream,
    timeout: Duration,
) -> Result<BytesMut, String> {
    let mut buf = BytesMut::new();
    let Some(opening) = proto.opening(host) else {
        return Ok(buf);
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
            return Ok(buf);
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
async fn goodbye<P: Protocol, R, W>(run: &Run<P>, rd: &mut R, wr: &mut W, mut dec: P::Decoder)
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

/// What one connection (or the whole run, merged) measured.
struct Report {
    sent: u64,
    received: u64,
    verified: u64,
    verified_bytes: u64,
    errors: u64,
    details: Vec<String>,
    hist: Histogram<u64>,
    /// When the last reply arrived (receive mode: when the server closed).
    last: Option<Instant>,
    /// Every request this connection had to send was written.
    all_written: bool,
    /// Stream mode: streams opened, and completed (ended with every echo verified).
    streams_started: u64,
    streams_completed: u64,
}

impl Report {
    fn new() -> Report {
        Report {
            sent: 0,
            received: 0,
            verified: 0,
            verified_bytes: 0,
            errors: 0,
            details: Vec::new(),
            hist: Histogram::new_with_bounds(1, HIST_MAX_US, 3).expect("histogram bounds"),
            last: None,
            all_written: true,
            streams_started: 0,
            streams_completed: 0,
        }
    }

    fn error(&mut self, detail: String) {
        self.errors += 1;
        if self.details.len() < MAX_DETAILS {
            self.details.push(detail);
        }
    }

    fn merge(&mut self, o: Report) {
        self.sent += o.sent;
        self.received += o.received;
        self.verified += o.verified;
        self.verified_bytes += o.verified_bytes;
        self.errors += o.errors;
        for d in o.details {
            if self.details.len() < MAX_DETAILS {
                self.details.push(d);
            }
        }
        let _ = self.hist.add(&o.hist);
        self.last = match (self.last, o.last) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.all_written &= o.all_written;
        self.streams_started += o.streams_started;
        self.streams_completed += o.streams_completed;
    }
}

fn main() {
    let cfg = CLI.or_die(parse_config());
    let codec = cfg.codec.clone();
    CLI.with_protocol(&codec, Start(cfg));
}

/// Runs the load with the protocol the codec names.
struct Start(Config);

impl Visitor for Start {
    type Output = Result<(), String>;
    fn visit<P: Protocol>(self, proto: P) -> Result<(), String> {
        let mut cfg = self.0;
        check(&proto, &cfg)?;
        let variant = cfg
            .variant
            .get_or_insert_with(|| P::VARIANTS[0].to_string());
        let proto = proto.with_variant(variant).client_side();
        if cfg.mode == Mode::Batched {
            let n = *cfg.batch.get_or_insert(P::SEED_BATCH);
            cfg.window = n;
        }
        CLI.run(online_cpus(), run(proto, cfg))
    }
}

/// Connects with `TCP_NODELAY` set before the connection exists, so no socket of ours is ever
/// seen without it.
async fn connect(addr: std::net::SocketAddr) -> std::io::Result<TcpStream> {
    let sock = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    sock.set_nodelay(true)?;
    let s = sock.connect(addr).await?;
    s.set_nodelay(true)?;
    Ok(s)
}

async fn run<P: Protocol>(proto: P, cfg: Config) -> i32 {
    // Connect everything first; the clock starts when all connections are up.
    // A failed set-up still produces a full report (with the error), so that a harness reading
    // the JSON sees what happened.
    let fail = |msg: String| {
        eprintln!("fp-load: {msg}");
        let mut r = Report::new();
        r.error(msg);
        r.all_written = false;
        report(&cfg, &r, 0.0)
    };
    let addr = match tokio::net::lookup_host(&cfg.addr)
        .await
        .map(|mut a| a.next())
    {
        Ok(Some(a)) => a,
        Ok(None) | Err(_) => return fail(format!("cannot resolve {}", cfg.addr)),
    };
    let mut streams = Vec::with_capacity(cfg.connections);
    for i in 0..cfg.connections {
        let mut s = match tokio::time::timeout(cfg.timeout, connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return fail(format!("connection {i} to {}: {e}", cfg.addr)),
            Err(_) => return fail(format!("connection {i} to {}: timed out", cfg.addr)),
        };
        match open(&proto, &cfg.addr, &mut s, cfg.timeout).await {
            Ok(leftover) => streams.push((s, leftover)),
            Err(e) => return fail(format!("connection {i} to {}: {e}", cfg.addr)),
        }
    }
    let start = Instant::now();
    let run = Arc::new(Run {
        proto,
        stop_at: cfg.duration.map(|d| start + d),
        start,
        next_index: AtomicU64::new(0),
        cfg: cfg.clone(),
    });
    let mut handles = Vec::with_capacity(cfg.connections);
    for (i, (stream, leftover)) in streams.into_iter().enumerate() {
        // The first N % C connections send one more (README contract).
        let quota = cfg.requests.map(|n| {
            let c = cfg.connections as u64;
            n / c + u64::from((i as u64) < n % c)
        });
        let run = run.clone();
        handles.push(tokio::spawn(async move {
            match run.cfg.mode {
                Mode::Receive => receive_connection(run, stream, leftover, quota).await,
                Mode::PerPacket | Mode::Batched => {
                    batch_connection(run, stream, leftover, quota).await
                }
                Mode::Pipelined => echo_connection(run, stream, leftover, quota).await,
                Mode::Stream => stream_connection(run, stream, leftover, quota).await,
            }
        }));
    }
    let mut total = Report::new();
    for h in handles {
        match h.await {
            Ok(r) => total.merge(r),
            Err(e) => total.error(format!("connection task failed: {e}")),
        }
    }
    let end = total.last.unwrap_or_else(Instant::now);
    let duration = end.saturating_duration_since(start).as_secs_f64();
    report(&cfg, &total, duration)
}

fn report(cfg: &Config, r: &Report, duration: f64) -> i32 {
    let receive = cfg.mode == Mode::Receive;
    let (msgs, bytes) = if receive {
        (r.sent, r.sent * cfg.payload as u64)
    } else {
        (r.verified, r.verified_bytes)
    };
    let per_s = |v: u64| {
        if duration > 0.0 {
            v as f64 / duration
        } else {
            0.0
        }
    };
    let msgs_per_s = per_s(msgs);
    let streams_per_s = per_s(r.streams_completed);
    let mb_per_s = per_s(bytes) / 1e6;
    let q = |q: f64| {
        if r.hist.is_empty() {
            0
        } else {
            r.hist.value_at_quantile(q)
        }
    };
    let (p50, p90, p99, p999) = (q(0.5), q(0.9), q(0.99), q(0.999));
    let max = if r.hist.is_empty() { 0 } else { r.hist.max() };
    let variant = cfg.variant.as_deref().unwrap_or("default");
    println!(
        "fp-load (rust): {} {} {}, {} connections, window {}, payload {} B",
        cfg.codec.to_json(),
        variant,
        cfg.mode.name(),
        cfg.connections,
        cfg.window,
        cfg.payload
    );
    println!(
        "  requests sent {}, replies received {}, verified {}, errors {}",
        r.sent, r.received, r.verified, r.errors
    );
    println!("  {duration:.3} s, {msgs_per_s:.1} msg/s, {mb_per_s:.2} MB/s");
    if cfg.mode == Mode::Stream {
        println!(
            "  streams completed {} of {}, {streams_per_s:.1} streams/s",
            r.streams_completed, r.streams_started
        );
    }
    if !receive {
        println!("  latency us: p50 {p50}  p90 {p90}  p99 {p99}  p99.9 {p999}  max {max}");
    }
    for d in &r.details {
        println!("  error: {d}");
    }
    if let Some(path) = &cfg.json {
        let details: Vec<String> = r.details.iter().map(|d| json_string(d)).collect();
        let json = format!(
            "{{\"implementation\": \"rust\", \"protocol\": {}, \"codec\": {}, \"mode\": {}, \
\"variant\": {}, \"connections\": {}, \"window\": {}, \"payload\": {}, \
\"requests_sent\": {}, \"replies_received\": {}, \"replies_verified\": {}, \
\"errors\": {}, \"error_details\": [{}], \
\"duration_s\": {}, \"msgs_per_s\": {}, \"mb_per_s\": {}, \
\"streams_completed\": {}, \"streams_per_s\": {}, \
\"latency_us\": {{\"p50\": {p50}, \"p90\": {p90}, \"p99\": {p99}, \"p999\": {p999}, \"max\": {max}}}}}\n",
            json_string(&cfg.codec.protocol),
            cfg.codec.to_json(),
            json_string(cfg.mode.name()),
            json_string(variant),
            cfg.connections,
            cfg.window,
            cfg.payload,
            r.sent,
            r.received,
            r.verified,
            r.errors,
            details.join(", "),
            json_f64(duration, 6),
            json_f64(msgs_per_s, 1),
            json_f64(mb_per_s, 3),
            r.streams_completed,
            json_f64(streams_per_s, 1),
        );
        if let Err(e) = std::fs::File::create(path).and_then(|mut f| f.write_all(json.as_bytes())) {
            eprintln!("fp-load: cannot write {path}: {e}");
            return 1;
        }
    }
    let ok = if receive {
        r.errors == 0 && r.all_written
    } else {
        r.errors == 0
            && r.all_written
            && r.verified == r.sent
            && r.streams_completed == r.streams_started
    };
    if ok {
        0
    } else {
        1
    }
}

/// A pending request: its global index and when it was written.
struct Tag {
    index: u64,
    sent_at: Instant,
}

/// The client side of one connection of the run's protocol.
type Client<P> = <P as Protocol>::Client<Tag>;

/// Frames per write batch so that a batch stays around [`BATCH_BYTES`] (at least one frame):
/// a window of large payloads must not become one huge buffer.
fn max_batch_frames(payload: usize) -> u64 {
    (BATCH_BYTES / (payload + 16)).max(1) as u64
}

/// Sends request `index` (its payload generated in place) and makes it pending.
fn send_request<P: Protocol>(
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

/// Request/reply mode (per-packet = window 1, pipelined = sliding window).
async fn echo_connection<P: Protocol>(
    run: Arc<Run<P>>,
    stream: TcpStream,
    leftover: BytesMut,
    quota: Option<u64>,
) -> Report {
    let (rd, wr) = stream.into_split();
    let conn = Arc::new(Conn::<P> {
        matcher: Mutex::new(run.client()),
        window: Semaphore::new(run.cfg.window),
        sent: AtomicU64::new(0),
        writer_done: AtomicBool::new(false),
        writer_wake: Notify::new(),
        writer_error: Mutex::new(None),
    });
    let mut writer = tokio::spawn(write_requests(run.clone(), conn.clone(), wr, quota));
    let (mut rep, mut rd, dec, failed) = read_replies(&run, &conn, rd, &leftover).await;
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
    leftover: &[u8],
) -> (Report, OwnedReadHalf, P::Decoder, bool) {
    let mut rep = Report::new();
    let mut dec = run.decoder(leftover);
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

/// A frame for an error detail: its fields other than the payload, and the payload's size.
fn describe<P: Protocol>(f: &P::Frame) -> String {
    format!("{} frame {}", P::NAME, P::describe(f))
}

/// Matches and verifies one received frame; true if it completed a pending request.
fn on_frame<P: Protocol>(
    run: &Run<P>,
    m: &mut Client<P>,
    f: &P::Frame,
    now: Instant,
    rep: &mut Report,
    len: usize,
) -> bool {
    rep.received += 1;
    match m.receive(f) {
        Received::Reply(tag) => {
            let payload = P::payload(f);
            if let Err(why) = run.proto.check_reply(f) {
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

/// Per-packet mode (a batch of 1) and batched mode (`--batch N`): a batch of requests written
/// at once, then every reply read and verified before the next batch, in one task (no hand-off
/// between tasks on the latency path). A batch not answered within the timeout fails the
/// connection.
async fn batch_connection<P: Protocol>(
    run: Arc<Run<P>>,
    mut stream: TcpStream,
    leftover: BytesMut,
    quota: Option<u64>,
) -> Report {
    let mut rep = Report::new();
    let len = run.cfg.payload;
    let mut m = run.client();
    let mut dec = run.decoder(&leftover);
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

fn fail_pending<P: Protocol>(m: &mut Client<P>, rep: &mut Report, why: &str) {
    for t in m.fail() {
        rep.error(format!("request {} failed: {why}", t.index));
    }
}

/// Fails every pending request of the connection and stops its writer.
fn fail_connection<P: Protocol>(conn: &Conn<P>, rep: &mut Report, why: &str) {
    fail_pending::<P>(&mut conn.matcher.lock().unwrap(), rep, why);
    conn.window.close();
}

/// Receive mode: write requests in batches of `window` frames, expect no replies; then
/// half-close and wait (at most the timeout) for the server to close, which tells that it has
/// consumed everything.
async fn receive_connection<P: Protocol>(
    run: Arc<Run<P>>,
    stream: TcpStream,
    leftover: BytesMut,
    quota: Option<u64>,
) -> Report {
    let mut rep = Report::new();
    let (mut rd, mut wr) = stream.into_split();
    let len = run.cfg.payload;
    let mut m = run.client();
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
    let mut dec = run.decoder(&leftover);
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
                    if P::is_goodbye(&f) {
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
async fn stream_connection<P: Protocol>(
    run: Arc<Run<P>>,
    mut stream: TcpStream,
    leftover: BytesMut,
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
    let mut dec = run.decoder(&leftover);
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
