//! fp-tungstenite-autobahn-client: the Autobahn testsuite's client protocol (reference-impls/README.md,
//! "fp-autobahn-client") on tokio-tungstenite's `connect_async_with_config`, for
//! `frameproof autobahn --client-cmd`:
//!
//! ```text
//! fp-tungstenite-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N]
//! ```
//!
//! `GET /getCaseCount` (one text message: the count), then for each case
//! `GET /runCase?case=I&agent=NAME`, echoing every text and binary message back as it came (the same
//! `Message`, so the same opcode) until the connection ends, then `GET /updateReports?agent=NAME`.
//! No compression (tungstenite 0.30 has none), message and frame limits 64 MiB + 1 KiB (the contract:
//! no message size limit below 64 MiB). Masking, UTF-8, pings and the close handshake are tungstenite's
//! own. Exit 0 when every case ran (the verdicts are Autobahn's, read by `frameproof autobahn`).

use std::process::exit;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

#[path = "../../common/autobahn_client_args.rs"]
mod args;

const USAGE: &str = "usage: fp-tungstenite-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N]";
const LIMIT: usize = (64 << 20) + 1024;

fn config() -> WebSocketConfig {
    WebSocketConfig::default().max_frame_size(Some(LIMIT)).max_message_size(Some(LIMIT))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args::Args { connect, agent_query: q, cases } = args::parse(USAGE);
    let base = format!("ws://{connect}");

    let count = match tokio_tungstenite::connect_async_with_config(format!("{base}/getCaseCount"), Some(config()), false).await {
        Ok((mut ws, _)) => match timeout(Duration::from_secs(30), ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => t.as_str().trim().parse::<usize>().unwrap_or_else(|e| {
                eprintln!("fp-tungstenite-autobahn-client: case count {:?}: {e}", t.as_str());
                exit(1)
            }),
            other => {
                eprintln!("fp-tungstenite-autobahn-client: getCaseCount: no count ({other:?})");
                exit(1)
            }
        },
        Err(e) => {
            eprintln!("fp-tungstenite-autobahn-client: getCaseCount: {e}");
            exit(1)
        }
    };
    let count = cases.map_or(count, |n| n.min(count));
    for i in 1..=count {
        let url = format!("{base}/runCase?case={i}&agent={q}");
        let mut ws = match tokio_tungstenite::connect_async_with_config(url, Some(config()), false).await {
            Ok((ws, _)) => ws,
            Err(e) => {
                eprintln!("fp-tungstenite-autobahn-client: case {i}: {e}");
                continue;
            }
        };
        // bounded: a case that stalls ends after 120 s without a message
        while let Ok(Some(Ok(m))) = timeout(Duration::from_secs(120), ws.next()).await {
            if (m.is_text() || m.is_binary()) && ws.send(m).await.is_err() {
                break;
            }
        }
    }
    match tokio_tungstenite::connect_async_with_config(format!("{base}/updateReports?agent={q}"), Some(config()), false).await {
        Ok((mut ws, _)) => {
            let _ = ws.close(None).await;
            while let Ok(Some(Ok(_))) = timeout(Duration::from_secs(10), ws.next()).await {}
        }
        Err(e) => {
            eprintln!("fp-tungstenite-autobahn-client: updateReports: {e}");
            exit(1)
        }
    }
}
