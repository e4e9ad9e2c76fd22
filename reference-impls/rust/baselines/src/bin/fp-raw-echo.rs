//! fp-raw-echo: the ceiling for any codec echo server (tools/bench).
//!
//! ```text
//! fp-raw-echo --protocol standard|length-field --listen HOST:PORT [--lf-size 1|2|4] [--sink] [--threads N]
//! ```
//!
//! Same runtime as fp-server (tokio, one task per connection, `TCP_NODELAY`), but no codec:
//! each read goes into one fixed 64 KiB buffer and the very same bytes are written back. For
//! `standard` an echo of the request bytes is not a valid reply (flag 0x01, not 0x81), so a
//! header walker sets bit 7 of each frame's flag byte in place: one byte touched per frame, no
//! decoding, no copy, no validation. The verifying load clients therefore accept its replies, and
//! the ratio codec-server / raw-echo is the share of the ceiling a codec server reaches.
//! `--sink`: read and count, send nothing. Counters (fp-server format plus `reads` and
//! `read_bytes`, i.e. recv calls that returned data and their bytes) are printed on SIGTERM.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use fp_baselines::{announce, bind, framing, Framing, Registry, Walker};
use fp_net::Options;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::signal::unix::{signal, SignalKind};

const USAGE: &str = "usage: fp-raw-echo --protocol standard|length-field --listen HOST:PORT [--lf-size 1|2|4] [--sink] [--threads N]";

fn die(msg: &str) -> ! {
    eprintln!("fp-raw-echo: {msg}\n{USAGE}");
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
    let f = framing(&o).unwrap_or_else(|e| die(&e));
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
    let code = rt.block_on(serve(listen, f, sink));
    std::process::exit(code);
}

async fn serve(listen: String, f: Framing, sink: bool) -> i32 {
    let l = match bind(&listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("fp-raw-echo: cannot listen on {listen}: {e}");
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
                tokio::spawn(async move { let _ = conn(s, f, sink, st).await; });
            },
            _ = int.recv() => break,
            _ = term.recv() => break,
        }
    }
    println!("{}", reg.json_line());
    0
}

async fn conn(
    mut s: TcpStream,
    f: Framing,
    sink: bool,
    st: Arc<fp_baselines::ConnStats>,
) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    let mut w = Walker::new(f, !sink);
    let mut buf = vec![0u8; 64 * 1024];
    let (mut reads, mut read_bytes) = (0u64, 0u64);
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            let _ = s.shutdown().await;
            return Ok(());
        }
        reads += 1;
        read_bytes += n as u64;
        w.walk(&mut buf[..n]);
        st.reads.store(reads, Relaxed);
        st.read_bytes.store(read_bytes, Relaxed);
        st.frames.store(w.frames, Relaxed);
        st.bytes.store(w.payload_bytes, Relaxed);
        if !sink {
            s.write_all(&buf[..n]).await?;
        }
    }
}
