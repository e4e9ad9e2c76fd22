//! fp-tokio-lf-echo: what a Rust user would write instead of our length-field server
//! (tools/bench baseline): `tokio_util::codec::LengthDelimitedCodec` (offset 0, 1/2/4-byte
//! little-endian length, 10 MiB max frame) in a `Framed`, echoed with `send_all` (which feeds
//! replies while frames are ready and flushes when the read side would block).
//!
//! ```text
//! fp-tokio-lf-echo --protocol length-field --listen HOST:PORT [--lf-size 1|2|4] [--sink] [--threads N]
//! ```
//! Counters on SIGTERM in the fp-server format (plus `reads`, `read_bytes` = 0: not observable
//! through `Framed`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use fp_baselines::{announce, bind, framing, ConnStats, Framing, Registry};
use fp_net::Options;
use futures::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::signal::unix::{signal, SignalKind};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

const USAGE: &str = "usage: fp-tokio-lf-echo --protocol length-field --listen HOST:PORT [--lf-size 1|2|4] [--sink] [--threads N]";

fn die(msg: &str) -> ! {
    eprintln!("fp-tokio-lf-echo: {msg}\n{USAGE}");
    std::process::exit(2);
}

fn main() {
    let o = Options::parse(
        std::env::args().skip(1),
        &[
            "protocol",
            "listen",
            "lf-offset",
            "lf-size",
            "max-payload",
            "threads",
        ],
        &["sink", "stats"],
    )
    .unwrap_or_else(|e| die(&e));
    let size = match framing(&o).unwrap_or_else(|e| die(&e)) {
        Framing::LengthField { size } => size,
        Framing::Standard => die("only --protocol length-field (LengthDelimitedCodec)"),
    };
    let listen = o.required("listen").unwrap_or_else(|e| die(&e)).to_string();
    let threads: usize = o
        .num(
            "threads",
            std::thread::available_parallelism().map_or(2, |n| n.get()),
        )
        .unwrap_or_else(|e| die(&e))
        .max(1);
    let sink = o.has("sink");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .unwrap_or_else(|e| die(&format!("runtime: {e}")));
    std::process::exit(rt.block_on(serve(listen, size, sink)));
}

async fn serve(listen: String, size: usize, sink: bool) -> i32 {
    let l = match bind(&listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("fp-tokio-lf-echo: cannot listen on {listen}: {e}");
            return 1;
        }
    };
    let (mut int, mut term) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return 1,
    };
    announce(l.local_addr().unwrap());
    let reg = Arc::new(Registry::default());
    loop {
        tokio::select! {
            r = l.accept() => if let Ok((s, _)) = r {
                let st = reg.add();
                tokio::spawn(conn(s, size, sink, st));
            },
            _ = int.recv() => break,
            _ = term.recv() => break,
        }
    }
    println!("{}", reg.json_line());
    0
}

async fn conn(s: TcpStream, size: usize, sink: bool, st: Arc<ConnStats>) {
    let _ = s.set_nodelay(true);
    let codec = LengthDelimitedCodec::builder()
        .length_field_offset(0)
        .length_field_length(size)
        .little_endian()
        .max_frame_length(10 * 1024 * 1024)
        .new_codec();
    let framed = Framed::with_capacity(s, codec, 64 * 1024);
    let (mut tx, rx) = framed.split();
    let count = |f: &bytes::BytesMut| {
        st.frames.fetch_add(1, Relaxed);
        st.bytes.fetch_add(f.len() as u64, Relaxed);
    };
    let failed = if sink {
        let mut rx = rx;
        let mut failed = false;
        while let Some(r) = rx.next().await {
            match r {
                Ok(f) => count(&f),
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        failed
    } else {
        let mut replies = rx.map(|r| {
            r.map(|f| {
                count(&f);
                f.freeze()
            })
        });
        let r = tx.send_all(&mut replies).await;
        let _ = tx.close().await;
        r.is_err()
    };
    if failed {
        st.protocol_errors.fetch_add(1, Relaxed);
    }
}
