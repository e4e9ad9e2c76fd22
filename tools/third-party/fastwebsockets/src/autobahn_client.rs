//! fp-fastwebsockets-autobahn-client: the Autobahn testsuite's client protocol (reference-impls/README.md,
//! "fp-autobahn-client") on fastwebsockets' client side (`handshake::client` over a hyper 1 HTTP/1
//! upgrade, then a `FragmentCollector`), for `frameproof autobahn --client-cmd`:
//!
//! ```text
//! fp-fastwebsockets-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N]
//! ```
//!
//! `GET /getCaseCount` (one text message: the count), then for each case
//! `GET /runCase?case=I&agent=NAME`, echoing every whole text and binary message back as one frame with
//! its opcode until the connection ends, then `GET /updateReports?agent=NAME`. No compression (the
//! library has none), message limit 64 MiB + 1 KiB (the contract: no message size limit below 64 MiB).
//! Masking, UTF-8, pings (auto_pong) and the close handshake (auto_close) are the library's own, as in
//! fp-fastwebsockets-server. Exit 0 when every case ran (the verdicts are Autobahn's).

use std::future::Future;
use std::process::exit;
use std::time::Duration;

use fastwebsockets::{handshake, FragmentCollector, OpCode, WebSocket};
use http_body_util::Empty;
use hyper::body::Bytes;
use hyper::header::{CONNECTION, UPGRADE};
use hyper::upgrade::Upgraded;
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::time::timeout;

#[path = "../../common/autobahn_client_args.rs"]
mod args;

const USAGE: &str = "usage: fp-fastwebsockets-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N]";
const LIMIT: usize = (64 << 20) + 1024;

/// hyper runs the upgrade's connection task on tokio.
struct Spawn;

impl<F> hyper::rt::Executor<F> for Spawn
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        tokio::spawn(fut);
    }
}

type Ws = FragmentCollector<TokioIo<Upgraded>>;

async fn open(connect: &str, path: &str) -> Result<Ws, String> {
    let tcp = TcpStream::connect(connect).await.map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    let req = Request::builder()
        .method("GET")
        .uri(format!("http://{connect}{path}"))
        .header("Host", connect)
        .header(UPGRADE, "websocket")
        .header(CONNECTION, "upgrade")
        .header("Sec-WebSocket-Key", handshake::generate_key())
        .header("Sec-WebSocket-Version", "13")
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let (ws, _): (WebSocket<TokioIo<Upgraded>>, _) =
        handshake::client(&Spawn, req, tcp).await.map_err(|e| e.to_string())?;
    let mut ws = ws;
    ws.set_max_message_size(LIMIT);
    ws.set_auto_pong(true);
    ws.set_auto_close(true);
    Ok(FragmentCollector::new(ws))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args::Args { connect, agent_query: q, cases } = args::parse(USAGE);

    let mut ws = open(&connect, "/getCaseCount").await.unwrap_or_else(|e| {
        eprintln!("fp-fastwebsockets-autobahn-client: getCaseCount: {e}");
        exit(1)
    });
    let count = match timeout(Duration::from_secs(30), ws.read_frame()).await {
        Ok(Ok(f)) if f.opcode == OpCode::Text => {
            let text = String::from_utf8_lossy(&f.payload).trim().to_string();
            text.parse::<usize>().unwrap_or_else(|e| {
                eprintln!("fp-fastwebsockets-autobahn-client: case count {text:?}: {e}");
                exit(1)
            })
        }
        _ => {
            eprintln!("fp-fastwebsockets-autobahn-client: getCaseCount: no count");
            exit(1)
        }
    };
    drop(ws);
    let count = cases.map_or(count, |n| n.min(count));
    for i in 1..=count {
        let mut ws = match open(&connect, &format!("/runCase?case={i}&agent={q}")).await {
            Ok(ws) => ws,
            Err(e) => {
                eprintln!("fp-fastwebsockets-autobahn-client: case {i}: {e}");
                continue;
            }
        };
        // bounded: a case that stalls ends after 120 s without a message
        while let Ok(Ok(frame)) = timeout(Duration::from_secs(120), ws.read_frame()).await {
            match frame.opcode {
                OpCode::Text | OpCode::Binary => {
                    if ws.write_frame(frame).await.is_err() {
                        break;
                    }
                }
                OpCode::Close => break, // the library has answered it (auto_close)
                _ => {}
            }
        }
    }
    match open(&connect, &format!("/updateReports?agent={q}")).await {
        Ok(mut ws) => {
            let _ = ws.write_frame(fastwebsockets::Frame::close(1000, b"")).await;
            while let Ok(Ok(f)) = timeout(Duration::from_secs(10), ws.read_frame()).await {
                if f.opcode == OpCode::Close {
                    break;
                }
            }
        }
        Err(e) => {
            eprintln!("fp-fastwebsockets-autobahn-client: updateReports: {e}");
            exit(1)
        }
    }
}
