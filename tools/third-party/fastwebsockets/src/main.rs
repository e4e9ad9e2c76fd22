//! fp-fastwebsockets-server: frameproof's echo-server contract (reference-impls/README.md, "fp-server")
//! around fastwebsockets, a WebSocket library nobody in this project wrote, served over hyper 1 the way
//! the library's own examples do (examples/echo_server.rs: hyper's HTTP/1 server with upgrades,
//! `fastwebsockets::upgrade::upgrade`, a `FragmentCollector`). The glue parses the contract's flags,
//! accepts connections and echoes each text and binary message with its opcode; framing, masking, the
//! frame size limit, UTF-8, pings and the close handshake are the library's own. Used by `frameproof net`,
//! `frameproof autobahn` and the benchmark as a third-party peer (impl.json).

use std::process::exit;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use fastwebsockets::upgrade::{is_upgrade_request, upgrade, UpgradeFut};
use fastwebsockets::{FragmentCollector, OpCode, WebSocketError};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::HeaderValue;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};

const USAGE: &str = "fp-fastwebsockets-server (--codec JSON | --protocol websocket) --listen HOST:PORT [--threads N]";
const SUBPROTOCOL: &str = "frameproof.echo";

#[derive(Default)]
struct Stats {
    connections: AtomicU64,
    frames: AtomicU64,
    bytes: AtomicU64,
    protocol_errors: AtomicU64,
}

fn usage(msg: &str) -> ! {
    eprintln!("usage error: {msg}");
    eprintln!("usage: {USAGE}");
    exit(2)
}

struct Args {
    listen: String,
    threads: usize,
    /// limits.max_payload of the profile (the spec's default 10 MiB): fastwebsockets' one size limit,
    /// `set_max_message_size`, is checked against each frame's length (src/lib.rs, parse_frame_header)
    max_frame: usize,
}

fn parse_codec(text: &str) -> usize {
    let v: serde_json::Value = serde_json::from_str(text).unwrap_or_else(|e| usage(&format!("--codec: {e}")));
    if v.get("protocol").and_then(|p| p.as_str()) != Some("websocket") {
        usage("this server speaks websocket only");
    }
    if v.pointer("/websocket/permessage_deflate").and_then(|b| b.as_bool()) == Some(true) {
        // fastwebsockets 0.10 has no permessage-deflate (it refuses RSV1): the profile cannot be served as asked
        usage("permessage-deflate: fastwebsockets has no compression");
    }
    match v.pointer("/limits/max_payload") {
        None => 10 << 20,
        Some(n) => match n.as_u64() {
            Some(0) => 10 << 20,
            Some(n) => n as usize,
            None => usage("--codec: limits.max_payload is not a non-negative integer"),
        },
    }
}

fn parse_args() -> Args {
    let mut it = std::env::args().skip(1);
    let (mut listen, mut codec, mut threads) = (None, None, None);
    while let Some(a) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage(&format!("{a} needs a value")));
        match a.as_str() {
            "--help" | "-h" => {
                println!("usage: {USAGE}");
                exit(0)
            }
            "--listen" => listen = Some(val()),
            "--codec" => codec = Some(val()),
            "--protocol" => {
                if val() != "websocket" {
                    usage("this server speaks websocket only");
                }
                codec = Some(r#"{"protocol": "websocket"}"#.to_string());
            }
            "--threads" => {
                threads = Some(
                    val().parse::<usize>().ok().filter(|n| *n > 0).unwrap_or_else(|| usage("--threads: a positive integer")),
                )
            }
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    let listen = listen.unwrap_or_else(|| usage("--listen is required"));
    let max_frame = parse_codec(&codec.unwrap_or_else(|| usage("--codec or --protocol is required")));
    let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    Args { listen, threads, max_frame }
}

/// The echo loop after the upgrade: the FragmentCollector hands over whole messages (fragments
/// reassembled, text checked as UTF-8), each written back as one frame with its opcode. Pings are
/// answered and a close is echoed by the library itself (auto_pong, auto_close).
async fn echo(fut: UpgradeFut, max_frame: usize, stats: Arc<Stats>) {
    let mut ws = match fut.await {
        Ok(ws) => ws,
        Err(_) => return,
    };
    ws.set_max_message_size(max_frame);
    ws.set_auto_pong(true);
    ws.set_auto_close(true);
    let mut ws = FragmentCollector::new(ws);
    stats.connections.fetch_add(1, Relaxed);
    loop {
        match ws.read_frame().await {
            Ok(frame) => match frame.opcode {
                OpCode::Text | OpCode::Binary => {
                    stats.frames.fetch_add(1, Relaxed);
                    stats.bytes.fetch_add(frame.payload.len() as u64, Relaxed);
                    if ws.write_frame(frame).await.is_err() {
                        break;
                    }
                }
                OpCode::Close => break, // the library has sent the close reply
                _ => {}
            },
            Err(WebSocketError::ConnectionClosed | WebSocketError::UnexpectedEOF | WebSocketError::IoError(_)) => break,
            Err(_) => {
                // fastwebsockets reports the error and sends nothing (no close frame): the glue
                // adds none, so the suite sees the library's behaviour
                stats.protocol_errors.fetch_add(1, Relaxed);
                break;
            }
        }
    }
}

/// One HTTP request: an upgrade (fastwebsockets checks Sec-WebSocket-Key and -Version), with the
/// subprotocol `frameproof.echo` selected when offered, as every server of this project does. A
/// request the library refuses gets 400, as the library's own axum extractor answers
/// (src/upgrade.rs, `FromRequestParts for IncomingUpgrade`).
async fn handle(
    mut req: Request<Incoming>,
    max_frame: usize,
    stats: Arc<Stats>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let refuse = |why: String| {
        let mut r = Response::new(Full::new(Bytes::from(why)));
        *r.status_mut() = StatusCode::BAD_REQUEST;
        r
    };
    if !is_upgrade_request(&req) {
        stats.protocol_errors.fetch_add(1, Relaxed);
        return Ok(refuse("not a websocket upgrade request\n".into()));
    }
    let offered = req.headers().get_all("sec-websocket-protocol").iter().any(|v| {
        v.to_str().map(|s| s.split(',').any(|t| t.trim() == SUBPROTOCOL)).unwrap_or(false)
    });
    let (resp, fut) = match upgrade(&mut req) {
        Ok(x) => x,
        Err(e) => {
            stats.protocol_errors.fetch_add(1, Relaxed);
            return Ok(refuse(format!("{e}\n")));
        }
    };
    let (mut parts, _) = resp.into_parts();
    if offered {
        parts.headers.insert("sec-websocket-protocol", HeaderValue::from_static(SUBPROTOCOL));
    }
    tokio::spawn(echo(fut, max_frame, stats));
    Ok(Response::from_parts(parts, Full::new(Bytes::new())))
}

async fn connection(tcp: TcpStream, max_frame: usize, stats: Arc<Stats>) {
    let _ = tcp.set_nodelay(true);
    let io = hyper_util::rt::TokioIo::new(tcp);
    let service = service_fn(move |req| handle(req, max_frame, stats.clone()));
    let _ = http1::Builder::new().serve_connection(io, service).with_upgrades().await;
}

fn main() {
    let args = parse_args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads)
        .enable_all()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("fp-fastwebsockets-server: {e}");
            exit(1)
        });
    rt.block_on(async move {
        let listener = match TcpListener::bind(&args.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("fp-fastwebsockets-server: cannot listen on {}: {e}", args.listen);
                exit(1)
            }
        };
        let addr = listener.local_addr().expect("bound socket");
        println!("LISTENING {addr}");
        let stats = Arc::new(Stats::default());
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
        loop {
            tokio::select! {
                _ = term.recv() => break,
                _ = int.recv() => break,
                r = listener.accept() => match r {
                    Ok((tcp, _)) => { tokio::spawn(connection(tcp, args.max_frame, stats.clone())); }
                    // EMFILE and the like: keep serving, try again shortly (no busy loop)
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
                },
            }
        }
        println!(
            "{{\"connections\": {}, \"frames\": {}, \"bytes\": {}, \"protocol_errors\": {}}}",
            stats.connections.load(Relaxed),
            stats.frames.load(Relaxed),
            stats.bytes.load(Relaxed),
            stats.protocol_errors.load(Relaxed)
        );
        exit(0)
    });
}
