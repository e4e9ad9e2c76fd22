//! fp-autobahn-client: the Autobahn testsuite's client protocol against its `fuzzingserver`
//! (reference-impls/README.md, websocket).
//!
//! ```text
//! fp-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N] [--timeout-ms MS]
//!                    [--codec JSON]
//! ```
//!
//! `GET /getCaseCount` (one text message: the count), then for each case
//! `GET /runCase?case=I&agent=NAME`, echoing every text and binary message back (same opcode, same
//! payload) until the server closes, then `GET /updateReports?agent=NAME`. Every connection is
//! the websocket echo session of the codec in the client role (`WsSession::client`: masked frames
//! out, unmasked in, the same message layer, UTF-8 checks and close handling as the server), with
//! frames and messages up to 64 MiB. Exits 0 when every case ran; the verdicts are Autobahn's.
//! `--codec` (a `websocket` codec, reference-impls/README.md) with `websocket.permessage_deflate`
//! true offers permessage-deflate on every connection ([`CLIENT_OFFER`]), refuses an invalid
//! response (WSD-NEG-5: the connection dropped, nothing sent, exit 1), and then inflates what the
//! server sends and compresses the echoes as agreed (spec/websocket-deflate.md); its limits do
//! not lower the 64 MiB.
//! Every wait is bounded by `--timeout-ms` (default 60000) without a byte received.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::BytesMut;
use fp_net::Cli;
use frameproof_codec::protocol::{open_blocking, Protocol, ServerSession};
use frameproof_codec::websocket::{
    client_opening_with, Agreement, Role, WebSocket, WsDecoder, WsSession, TEXT,
};
use frameproof_codec::FrameDecoder;

const CLI: Cli = Cli {
    program: "fp-autobahn-client",
    usage: "usage: fp-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N] \
[--timeout-ms MS] [--codec JSON]",
};

/// Frames and messages up to this size (Autobahn's largest are 16 MiB).
const MAX_MESSAGE: u64 = 64 * 1024 * 1024;
const READ_CHUNK: usize = 64 * 1024;

struct Config {
    addr: String,
    agent: String,
    /// `None`: every case.
    case: Option<u32>,
    timeout: Duration,
    /// `websocket.permessage_deflate` of `--codec`: offer the extension.
    deflate: bool,
}

fn parse() -> Result<Config, String> {
    let o = CLI.parse(&["connect", "agent", "cases", "timeout-ms", "codec"], &[]);
    let deflate = match o.get("codec") {
        None => false,
        Some(_) => {
            let cfg = o.codec()?;
            if cfg.protocol != WebSocket::NAME {
                return Err(format!(
                    "--codec: protocol {:?}, not websocket",
                    cfg.protocol
                ));
            }
            let ws = WebSocket::from_config(&cfg).map_err(|e| format!("--codec: {e}"))?;
            ws.endpoint.permessage_deflate
        }
    };
    let addr = o.required("connect")?.to_string();
    let agent = o.required("agent")?.to_string();
    if agent.is_empty()
        || !agent
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        return Err("--agent must be letters, digits, '-', '_' or '.'".into());
    }
    let case = match o.get("cases").unwrap_or("all") {
        "all" => None,
        n => Some(
            n.parse::<u32>()
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| format!("--cases: {n:?} is neither all nor a case number"))?,
        ),
    };
    let ms: u64 = o.num("timeout-ms", 60_000)?;
    if ms == 0 {
        return Err("--timeout-ms must be at least 1".into());
    }
    Ok(Config {
        addr,
        agent,
        case,
        timeout: Duration::from_millis(ms),
        deflate,
    })
}

/// Connects and runs the opening handshake for `path`; returns the stream, what followed the
/// server's answer, and the permessage-deflate agreement (when offered and accepted).
/// permessage-deflate is offered with `deflate` (the cases' connections, not the count's).
fn open(
    cfg: &Config,
    path: &str,
    deflate: bool,
) -> Result<(TcpStream, Vec<u8>, Option<Agreement>), String> {
    let mut s = TcpStream::connect(&cfg.addr).map_err(|e| format!("connect {}: {e}", cfg.addr))?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(cfg.timeout))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(cfg.timeout))
        .map_err(|e| e.to_string())?;
    let opening = client_opening_with(&cfg.addr, path, None, deflate);
    let rest = open_blocking(&opening, &mut s).map_err(|e| format!("{path}: {e}"))?;
    Ok((s, rest, opening.agreement()))
}

/// Reads until the server closes (or the timeout passes): the end of a closed session.
fn drain(s: &mut TcpStream) {
    let mut chunk = [0u8; 4096];
    while let Ok(k) = s.read(&mut chunk) {
        if k == 0 {
            break;
        }
    }
}

/// `/getCaseCount`: the one text message the server sends is the count.
fn case_count(cfg: &Config) -> Result<u32, String> {
    let (mut s, rest, _) = open(cfg, "/getCaseCount", false)?;
    let mut dec = WsDecoder::new(Role::Client, MAX_MESSAGE, MAX_MESSAGE);
    dec.extend(&rest);
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        while let Some(f) = dec.decode().map_err(|e| format!("/getCaseCount: {e}"))? {
            if f.opcode == TEXT as u32 && f.fin {
                let text = String::from_utf8_lossy(&f.payload).trim().to_string();
                drop(s); // the server closes this connection anyway
                return text
                    .parse()
                    .map_err(|_| format!("/getCaseCount answered {text:?}"));
            }
        }
        match s.read(&mut chunk) {
            Ok(0) => return Err("/getCaseCount: closed without a count".into()),
            Ok(k) => dec.extend(&chunk[..k]),
            Err(e) => return Err(format!("/getCaseCount: {e}")),
        }
    }
}

/// One connection of the echo session in the client role, until the server closes it.
fn echo(cfg: &Config, path: &str) -> Result<(), String> {
    let (mut s, rest, agreed) = open(cfg, path, cfg.deflate)?;
    let mut session = WsSession::client_with(MAX_MESSAGE, agreed);
    let mut out = BytesMut::new();
    session.extend(&rest);
    loop {
        let served = session.process(&mut out);
        if !out.is_empty() {
            // a peer that stopped reading is its problem: the case's verdict says so
            if s.write_all(&out).is_err() {
                return Ok(());
            }
            out.clear();
        }
        if served.closed {
            if let Some(e) = served.error {
                eprintln!("fp-autobahn-client: {path}: failed the connection: {e}");
            }
            drain(&mut s);
            return Ok(());
        }
        let buf = session.buffer_mut();
        buf.reserve(READ_CHUNK);
        let at = buf.len();
        buf.resize(at + READ_CHUNK, 0);
        match s.read(&mut buf[at..]) {
            Ok(0) => {
                buf.truncate(at);
                session.finish(&mut out);
                return Ok(());
            }
            Ok(k) => buf.truncate(at + k),
            Err(e) => {
                buf.truncate(at);
                return Err(format!("{path}: {e}"));
            }
        }
    }
}

fn main() {
    let cfg = CLI.or_die(parse());
    let run = || -> Result<u32, String> {
        let count = case_count(&cfg)?;
        let cases: Vec<u32> = match cfg.case {
            Some(n) if n > count => return Err(format!("case {n} of {count}")),
            Some(n) => vec![n],
            None => (1..=count).collect(),
        };
        for &i in &cases {
            echo(&cfg, &format!("/runCase?case={i}&agent={}", cfg.agent))?;
        }
        echo(&cfg, &format!("/updateReports?agent={}", cfg.agent))?;
        Ok(cases.len() as u32)
    };
    match run() {
        Ok(n) => println!("fp-autobahn-client: ran {n} cases as agent {}", cfg.agent),
        Err(e) => {
            eprintln!("fp-autobahn-client: {e}");
            std::process::exit(1);
        }
    }
}
