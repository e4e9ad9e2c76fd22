//! The command line: the flags, their defaults and the checks made before connecting.

use std::time::Duration;

use fp_net::{Cli, LOAD_CLIENT_OPTIONS};
use frameproof_codec::config::CodecConfig;
use frameproof_codec::protocol::Protocol;

pub const CLI: Cli = Cli {
    program: "fp-load",
    usage: "usage: fp-load (--codec JSON | --protocol NAME) --connect HOST:PORT \
[--connections N] (--requests N | --duration SECONDS) [--payload BYTES] \
[--mode per-packet|pipelined|batched|receive|stream] [--window W] [--batch N] \
[--timeout-ms MS] [--variant NAME] [--frames-per-stream F] [--json FILE]",
};

/// `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    PerPacket,
    Pipelined,
    Batched,
    Receive,
    Stream,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::PerPacket => "per-packet",
            Mode::Pipelined => "pipelined",
            Mode::Batched => "batched",
            Mode::Receive => "receive",
            Mode::Stream => "stream",
        }
    }
}

/// The command line, checked.
#[derive(Debug, Clone)]
pub struct Config {
    pub codec: CodecConfig,
    pub addr: String,
    pub connections: usize,
    pub requests: Option<u64>,
    pub duration: Option<Duration>,
    pub payload: usize,
    pub mode: Mode,
    pub window: usize,
    pub timeout: Duration,
    pub json: Option<String>,
    /// `--variant`; resolved to the protocol's default at start-up.
    pub variant: Option<String>,
    pub frames_per_stream: u64,
    /// `--batch`; resolved to the protocol's default batch ([`Protocol::DEFAULT_BATCH`]) at
    /// start-up (then also `window`).
    pub batch: Option<usize>,
}

/// Parses and checks the flags that do not depend on the protocol; an error is a usage error.
pub fn parse_config() -> Result<Config, String> {
    let with_value = [
        LOAD_CLIENT_OPTIONS,
        &["variant", "frames-per-stream", "batch"],
    ]
    .concat();
    let o = CLI.parse(&with_value, &[]);
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
pub fn check<P: Protocol>(proto: &P, cfg: &Config) -> Result<(), String> {
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
    if cfg.mode == Mode::Batched && cfg.batch.unwrap_or(P::DEFAULT_BATCH) > max {
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
