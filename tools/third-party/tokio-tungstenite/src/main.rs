//! fp-tungstenite-server: frameproof's echo-server contract (reference-impls/README.md, "fp-server")
//! around tokio-tungstenite, a WebSocket library nobody in this project wrote. The glue parses the
//! contract's flags, accepts connections and echoes each text and binary message with its opcode;
//! framing, masking, limits, UTF-8, pings and the close handshake are the library's own. Used by
//! `frameproof net`, `frameproof autobahn` and the benchmark as a third-party peer (impl.json).

use std::process::exit;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::{Error, Message};

const USAGE: &str = "fp-tungstenite-server (--codec JSON | --protocol websocket) --listen HOST:PORT [--threads N]";
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
    /// limits.max_payload (a frame) and websocket.max_message (a message) of the profile, the
    /// spec's defaults 10 MiB and 100 MiB (spec/websocket.md)
    max_frame: usize,
    max_message: usize,
}

fn parse_codec(text: &str) -> (usize, usize) {
    let v: serde_json::Value = serde_json::from_str(text).unwrap_or_else(|e| usage(&format!("--codec: {e}")));
    if v.get("protocol").and_then(|p| p.as_str()) != Some("websocket") {
        usage("this server speaks websocket only");
    }
    if v.pointer("/websocket/permessage_deflate").and_then(|b| b.as_bool()) == Some(true) {
        // tungstenite 0.30 has no permessage-deflate: the profile cannot be served as asked
        usage("permessage-deflate: tungstenite has no compression");
    }
    let num = |path: &str, default: usize| match v.pointer(path) {
        None => default,
        Some(n) => match n.as_u64() {
            Some(0) => default,
            Some(n) => n as usize,
            None => usage(&format!("--codec: {path} is not a non-negative integer")),
        },
    };
    (num("/limits/max_payload", 10 << 20), num("/websocket/max_message", 100 << 20))
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
                let p = val();
                if p != "websocket" {
                    usage("this server speaks websocket only");
                }
                codec = Some(r#"{"protocol": "websocket"}"#.to_string());
            }
            "--threads" => {
                threads = Some(val().parse::<usize>().ok().filter(|n| *n > 0).unwrap_or_else(|| usage("--threads: a positive integer")))
            }
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    let listen = listen.unwrap_or_else(|| usage("--listen is required"));
    let (max_frame, max_message) = parse_codec(&codec.unwrap_or_else(|| usage("--codec or --protocol is required")));
    let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    Args { listen, threads, max_frame, max_message }
}

/// One connection: the opening handshake (the subprotocol `frameproof.echo` when offered, as every
/// server of this project selects it), then each text and binary message echoed with its opcode.
async fn connection(tcp: TcpStream, config: WebSocketConfig, stats: Arc<Stats>) {
    let _ = tcp.set_nodelay(true);
    let pick = |req: &Request, mut resp: Response| {
        let offered = req.headers().get_all("sec-websocket-protocol").iter().any(|v| {
            v.to_str().map(|s| s.split(',').any(|t| t.trim() == SUBPROTOCOL)).unwrap_or(false)
        });
        if offered {
            resp.headers_mut().insert("sec-websocket-protocol", HeaderValue::from_static(SUBPROTOCOL));
        }
        Ok(resp)
    };
    let mut ws = match tokio_tungstenite::accept_hdr_async_with_config(tcp, pick, Some(config)).await {
        Ok(ws) => ws,
        Err(_) => {
            stats.protocol_errors.fetch_add(1, Relaxed);
            return;
        }
    };
    stats.connections.fetch_add(1, Relaxed);
    while let Some(msg) = ws.next().await {
        match msg {
            Ok(m @ (Message::Text(_) | Message::Binary(_))) => {
                stats.frames.fetch_add(1, Relaxed);
                stats.bytes.fetch_add(m.len() as u64, Relaxed);
                if ws.send(m).await.is_err() {
                    break;
                }
            }
            Ok(_) => {} // pings are answered and closes completed by the library itself
            Err(Error::ConnectionClosed | Error::AlreadyClosed) => break,
            Err(Error::Io(_)) => break,
            // the peer's TCP close without a close frame: an abnormal closure (RFC 6455 §7.1.5, code
            // 1006), not a decoding error (HAR-SRV-1 counts only those)
            Err(Error::Protocol(ProtocolError::ResetWithoutClosingHandshake)) => break,
            Err(_) => {
                stats.protocol_errors.fetch_add(1, Relaxed);
                break;
            }
        }
    }
}

fn main() {
    let args = parse_args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads)
        .enable_all()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("fp-tungstenite-server: {e}");
            exit(1)
        });
    rt.block_on(async move {
        let listener = match TcpListener::bind(&args.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("fp-tungstenite-server: cannot listen on {}: {e}", args.listen);
                exit(1)
            }
        };
        let addr = listener.local_addr().expect("bound socket");
        println!("LISTENING {addr}");
        let config = WebSocketConfig::default()
            .max_frame_size(Some(args.max_frame))
            .max_message_size(Some(args.max_message));
        let stats = Arc::new(Stats::default());
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
        loop {
            tokio::select! {
                _ = term.recv() => break,
                _ = int.recv() => break,
                r = listener.accept() => match r {
                    Ok((tcp, _)) => { tokio::spawn(connection(tcp, config, stats.clone())); }
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
