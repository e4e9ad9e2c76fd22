//! fp-raw-echo: the ceiling for any codec echo server (tools/bench).
//!
//! ```text
//! fp-raw-echo (--codec JSON | --protocol NAME) --listen HOST:PORT [--sink] [--threads N]
//! ```
//!
//! Same runtime as fp-server (tokio, one task per connection, `TCP_NODELAY`), but no codec:
//! each read goes into one fixed 64 KiB buffer and the very same bytes are written back. Where
//! an echo of the request bytes is not a valid reply (`standard`: flag 0x01, not 0x81), the
//! protocol's header walker (`Protocol::walker`) rewrites each frame in place: one byte touched
//! per frame, no decoding, no copy, no validation. The verifying load clients therefore accept
//! its replies, and the ratio codec-server / raw-echo is the share of the ceiling a codec server
//! reaches. Where a reply differs in length from its request (rpc: RESPONSE for REQUEST;
//! websocket: unmasked for masked, after the opening handshake), the protocol's rewriter
//! (`Protocol::rewriter`) writes the replies into one reused output buffer instead, from the
//! headers alone: one copy of each payload, as every codec server makes. Protocols (or profiles)
//! with neither are refused. `--sink`: read and count, send
//! nothing. Counters (fp-server format plus `reads` and `read_bytes`, i.e. recv calls that
//! returned data and their bytes) are printed on SIGTERM.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use fp_baselines::{serve_counted, ConnStats, EchoArgs};
use fp_net::Cli;
use frameproof_codec::protocol::{HeaderWalker, Protocol, ReplyRewriter};
use frameproof_codec::registry::Visitor;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CLI: Cli = Cli {
    program: "fp-raw-echo",
    usage: "usage: fp-raw-echo (--codec JSON | --protocol NAME) --listen HOST:PORT [--sink] [--threads N]",
};

fn main() {
    let args = EchoArgs::parse(&CLI);
    let codec = args.codec.clone();
    CLI.with_protocol(&codec, Start(args));
}

struct Start(EchoArgs);

impl Visitor for Start {
    type Output = Result<(), String>;
    fn visit<P: Protocol>(self, proto: P) -> Result<(), String> {
        let a = self.0;
        let sink = a.sink;
        if proto.walker(!sink).is_none() && proto.rewriter(!sink).is_none() {
            return Err(format!(
                "no header walker for {} (length-field: offset 0, size 1, 2 or 4 only)",
                a.codec.to_json()
            ));
        }
        let serve = serve_counted(CLI.program, &a.listen, move |s, st| {
            let raw = match proto.walker(!sink) {
                Some(w) => Raw::InPlace(w),
                None => Raw::Rewrite(proto.rewriter(!sink).expect("checked before listening")),
            };
            async move {
                let _ = conn(s, raw, sink, st).await;
            }
        });
        CLI.run(a.threads, serve)
    }
}

/// How the replies are made: in place (a byte per frame), or rewritten into an output buffer
/// where they differ in length from the requests (rpc, websocket).
enum Raw {
    InPlace(Box<dyn HeaderWalker>),
    Rewrite(Box<dyn ReplyRewriter>),
}

async fn conn(
    mut s: TcpStream,
    mut raw: Raw,
    sink: bool,
    st: Arc<ConnStats>,
) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut out: Vec<u8> = Vec::with_capacity(64 * 1024 + 4096);
    let (mut reads, mut read_bytes) = (0u64, 0u64);
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            let _ = s.shutdown().await;
            return Ok(());
        }
        reads += 1;
        read_bytes += n as u64;
        st.reads.store(reads, Relaxed);
        st.read_bytes.store(read_bytes, Relaxed);
        match &mut raw {
            Raw::InPlace(w) => {
                w.walk(&mut buf[..n]);
                st.frames.store(w.frames(), Relaxed);
                st.bytes.store(w.payload_bytes(), Relaxed);
                if !sink {
                    s.write_all(&buf[..n]).await?;
                }
            }
            Raw::Rewrite(r) => {
                out.clear();
                r.rewrite(&buf[..n], &mut out);
                st.frames.store(r.frames(), Relaxed);
                st.bytes.store(r.payload_bytes(), Relaxed);
                if !out.is_empty() {
                    s.write_all(&out).await?; // replies, or (sink) what is sent even then
                }
                if r.closed() {
                    let _ = s.shutdown().await;
                    return Ok(());
                }
            }
        }
    }
}
