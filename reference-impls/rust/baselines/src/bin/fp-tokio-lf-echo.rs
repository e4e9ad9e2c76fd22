//! fp-tokio-lf-echo: what a Rust user would write instead of our length-field server
//! (tools/bench baseline): `tokio_util::codec::LengthDelimitedCodec` (offset 0, 1/2/4-byte
//! little-endian length, 10 MiB max frame) in a `Framed`, echoed with `send_all` (which feeds
//! replies while frames are ready and flushes when the read side would block).
//!
//! ```text
//! fp-tokio-lf-echo (--codec JSON | --protocol length-field) --listen HOST:PORT [--sink] [--threads N]
//! ```
//! Only `length-field` profiles at offset 0 with a 1, 2 or 4-byte little-endian length
//! (what `LengthDelimitedCodec` is configured for here). Counters on SIGTERM in the fp-server
//! format (plus `reads`, `read_bytes` = 0: not observable through `Framed`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use fp_baselines::{serve_counted, ConnStats, EchoArgs};
use fp_net::Cli;
use frameproof_codec::effective_max;
use frameproof_codec::length_field::{LengthField, LengthSize};
use frameproof_codec::protocol::Protocol;
use futures::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

const CLI: Cli = Cli {
    program: "fp-tokio-lf-echo",
    usage: "usage: fp-tokio-lf-echo (--codec JSON | --protocol length-field) --listen HOST:PORT [--sink] [--threads N]",
};

fn main() {
    let a = EchoArgs::parse(&CLI);
    if a.codec.protocol != LengthField::NAME {
        CLI.die("only length-field (LengthDelimitedCodec)");
    }
    let lf = CLI.or_die(LengthField::from_config(&a.codec).map_err(|e| e.to_string()));
    let size = match (lf.profile.offset, lf.profile.size) {
        (0, LengthSize::U8) => 1,
        (0, LengthSize::U16Le) => 2,
        (0, LengthSize::U32Le) => 4,
        _ => CLI.die("length-field at offset 0 with size 1, 2 or 4 only"),
    };
    let (sink, max) = (a.sink, effective_max(lf.max_payload) as usize);
    CLI.run(
        a.threads,
        serve_counted(CLI.program, &a.listen, move |s, st| {
            conn(s, size, max, sink, st)
        }),
    );
}

async fn conn(s: TcpStream, size: usize, max: usize, sink: bool, st: Arc<ConnStats>) {
    let _ = s.set_nodelay(true);
    let codec = LengthDelimitedCodec::builder()
        .length_field_offset(0)
        .length_field_length(size)
        .little_endian()
        .max_frame_length(max)
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
