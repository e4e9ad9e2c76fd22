//! Shared pieces of the network programs (fp-server, fp-load and the baselines of tools/bench):
//! the command line (options, `--codec`/`--protocol`, usage errors), the start-up of a server
//! (runtime, listener, signals, `LISTENING` line), the load payload pattern and a small JSON
//! writer.

use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::time::Duration;

use frameproof_codec::config::CodecConfig;
use frameproof_codec::registry::{self, Visitor};
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// Parsed `--key value` options and `--flag` switches.
#[derive(Debug, Default)]
pub struct Options {
    values: HashMap<String, String>,
    flags: Vec<String>,
}

impl Options {
    /// Parses `args` (without the program name). `with_value` lists the options that take a
    /// value, `switches` those that do not; anything else is an error.
    pub fn parse(
        args: impl IntoIterator<Item = String>,
        with_value: &[&str],
        switches: &[&str],
    ) -> Result<Options, String> {
        let mut o = Options::default();
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            let Some(name) = a.strip_prefix("--") else {
                return Err(format!("unexpected argument {a:?}"));
            };
            let (name, inline) = match name.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (name.to_string(), None),
            };
            if with_value.contains(&name.as_str()) {
                let v = match inline {
                    Some(v) => v,
                    None => it.next().ok_or_else(|| format!("--{name} needs a value"))?,
                };
                o.values.insert(name, v);
            } else if switches.contains(&name.as_str()) && inline.is_none() {
                o.flags.push(name);
            } else {
                return Err(format!("unknown option --{name}"));
            }
        }
        Ok(o)
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(|s| s.as_str())
    }

    pub fn has(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f == name)
    }

    pub fn required(&self, name: &str) -> Result<&str, String> {
        self.get(name)
            .ok_or_else(|| format!("--{name} is required"))
    }

    /// A numeric option, or `default` when absent.
    pub fn num<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{name}: {v:?} is not a valid number")),
        }
    }

    /// The codec: `--codec JSON` or `--protocol NAME` (exactly one), checked against the
    /// registry (unknown protocol, unknown key, unsupported profile: an error).
    pub fn codec(&self) -> Result<CodecConfig, String> {
        let cfg = match (self.get("codec"), self.get("protocol")) {
            (Some(_), Some(_)) => return Err("give one of --codec and --protocol, not both".into()),
            (None, None) => return Err("--codec or --protocol is required".into()),
            (Some(json), None) => CodecConfig::parse(json).map_err(|e| format!("--codec: {e}"))?,
            (None, Some(name)) => CodecConfig::named(name),
        };
        registry::check(&cfg).map_err(|e| format!("--codec {}: {e}", cfg.to_json()))?;
        Ok(cfg)
    }

    /// `--threads N` (at least 1); default: the number of online CPUs.
    pub fn threads(&self) -> Result<usize, String> {
        Ok(self.num("threads", online_cpus())?.max(1))
    }
}

/// The number of online CPUs (2 if unknown).
pub fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// The options with a value of fp-load's command line that fp-blast takes too (it follows
/// fp-load's contract for `--mode receive`).
pub const LOAD_CLIENT_OPTIONS: &[&str] = &[
    "codec",
    "protocol",
    "connect",
    "connections",
    "requests",
    "duration",
    "payload",
    "mode",
    "window",
    "timeout-ms",
    "json",
];

/// A program's command line conventions (reference-impls/README.md, "Common rules"): a usage
/// error prints `usage error: ...` and the usage to stderr and exits 2; `--help` prints the
/// usage to stdout and exits 0.
#[derive(Debug, Clone, Copy)]
pub struct Cli {
    pub program: &'static str,
    pub usage: &'static str,
}

impl Cli {
    /// Parses the process arguments; `--help` is always a switch.
    pub fn parse(&self, with_value: &[&str], switches: &[&str]) -> Options {
        let mut switches = switches.to_vec();
        switches.push("help");
        let o = self.or_die(Options::parse(
            std::env::args().skip(1),
            with_value,
            &switches,
        ));
        if o.has("help") {
            println!("{}", self.usage);
            std::process::exit(0);
        }
        o
    }

    pub fn die(&self, msg: &str) -> ! {
        eprintln!("usage error: {}: {msg}\n{}", self.program, self.usage);
        std::process::exit(2);
    }

    pub fn or_die<T>(&self, r: Result<T, String>) -> T {
        r.unwrap_or_else(|e| self.die(&e))
    }

    /// Runs `program` with the protocol `codec` names (built by the registry); its error, or
    /// a configuration the registry refuses, is a usage error.
    pub fn with_protocol<V>(&self, codec: &CodecConfig, program: V)
    where
        V: Visitor<Output = Result<(), String>>,
    {
        let r = registry::with_protocol(codec, program).map_err(|e| e.to_string());
        self.or_die(r.and_then(|r| r))
    }

    /// Runs `main` on a multi-threaded runtime of `threads` workers and exits with the status
    /// it returns (without waiting for tasks still blocked in reads or writes).
    pub fn run<F: Future<Output = i32>>(&self, threads: usize, main: F) -> ! {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
            .unwrap_or_else(|e| {
                eprintln!("{}: cannot start the runtime: {e}", self.program);
                std::process::exit(1)
            });
        let code = rt.block_on(main);
        rt.shutdown_timeout(Duration::from_millis(100));
        std::process::exit(code);
    }
}

/// A started server: its listener, and the SIGINT/SIGTERM that stop it.
pub struct Server {
    pub listener: TcpListener,
    pub signals: Signals,
}

/// SIGINT and SIGTERM.
pub struct Signals {
    sigint: Signal,
    sigterm: Signal,
}

impl Server {
    /// Binds `listen` ([`bind`]), installs the signal handlers, then prints exactly one line
    /// `LISTENING host:port` to stdout. On failure, says why on stderr and returns `Err(1)`,
    /// the exit status.
    pub async fn start(program: &str, listen: &str) -> Result<Server, i32> {
        let fail = |what: String| {
            eprintln!("{program}: {what}");
            1
        };
        let listener = bind(listen)
            .await
            .map_err(|e| fail(format!("cannot listen on {listen}: {e}")))?;
        let (sigint, sigterm) = match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(a), Ok(b)) => (a, b),
            _ => return Err(fail("cannot install signal handlers".into())),
        };
        let addr = listener.local_addr().map_err(|e| fail(e.to_string()))?;
        print_line(&format!("LISTENING {addr}"));
        Ok(Server {
            listener,
            signals: Signals { sigint, sigterm },
        })
    }
}

impl Signals {
    /// Waits for SIGINT or SIGTERM.
    pub async fn stopped(&mut self) {
        tokio::select! {
            _ = self.sigint.recv() => {}
            _ = self.sigterm.recv() => {}
        }
    }
}

/// Prints one line to stdout and flushes it.
pub fn print_line(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Fills a load payload for request `index`: bytes 0..8 hold the index (u64 LE) when the
/// payload has room, the rest a pattern derived from it.
pub fn fill_payload(index: u64, buf: &mut [u8]) {
    let seed = seed(index);
    for (i, b) in buf.iter_mut().enumerate() {
        *b = seed.wrapping_add((i as u8).wrapping_mul(13));
    }
    if buf.len() >= 8 {
        buf[..8].copy_from_slice(&index.to_le_bytes());
    }
}

/// Whether `payload` is exactly the payload of request `index` of length `len`.
pub fn payload_matches(index: u64, len: usize, payload: &[u8]) -> bool {
    if payload.len() != len {
        return false;
    }
    let seed = seed(index);
    let start = if len >= 8 {
        if payload[..8] != index.to_le_bytes() {
            return false;
        }
        8
    } else {
        0
    };
    payload[start..]
        .iter()
        .enumerate()
        .all(|(i, &b)| b == seed.wrapping_add(((i + start) as u8).wrapping_mul(13)))
}

/// Byte `j` of the payload of request `index` of length `len` ([`fill_payload`]).
fn payload_byte(index: u64, len: usize, j: usize) -> u8 {
    if len >= 8 && j < 8 {
        index.to_le_bytes()[j]
    } else {
        seed(index).wrapping_add((j as u8).wrapping_mul(13))
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The text form of a load payload (for protocols whose messages must be UTF-8): the first
/// `buf.len()` characters of the lowercase hex of the binary payload of that index and length.
pub fn fill_text_payload(index: u64, buf: &mut [u8]) {
    let len = buf.len();
    for (k, c) in buf.iter_mut().enumerate() {
        let b = payload_byte(index, len, k / 2);
        *c = HEX[if k % 2 == 0 { b >> 4 } else { b & 0x0F } as usize];
    }
}

/// Whether `payload` is exactly the text payload of request `index` of length `len`.
pub fn text_payload_matches(index: u64, len: usize, payload: &[u8]) -> bool {
    payload.len() == len
        && payload.iter().enumerate().all(|(k, &c)| {
            let b = payload_byte(index, len, k / 2);
            c == HEX[if k % 2 == 0 { b >> 4 } else { b & 0x0F } as usize]
        })
}

/// `--variant prose`: 64 of the commonest English words (reference-impls/README.md, fp-load).
const PROSE_WORDS: [&[u8]; 64] = [
    b"the", b"of", b"and", b"to", b"in", b"is", b"that", b"it",
    b"for", b"was", b"on", b"are", b"as", b"with", b"his", b"they",
    b"at", b"be", b"this", b"from", b"have", b"or", b"by", b"one",
    b"had", b"not", b"but", b"what", b"all", b"were", b"when", b"we",
    b"there", b"can", b"an", b"your", b"which", b"their", b"said", b"if",
    b"do", b"will", b"each", b"about", b"how", b"up", b"out", b"them",
    b"then", b"she", b"many", b"some", b"so", b"these", b"would", b"other",
    b"into", b"has", b"more", b"her", b"two", b"like", b"him", b"see",
];

/// The prose payload of request `index`, byte by byte: its decimal digits, then " word" after
/// " word", each word the top six bits of splitmix64 of the running state (started at `index`,
/// increased by 0x9E3779B97F4A7C15 before each draw). The same text in every implementation; the
/// checking server reads the index back from the digits.
struct Prose {
    digits: [u8; 20],
    nd: usize,
    at: usize,
    state: u64,
    word: &'static [u8],
    k: usize,
}

impl Prose {
    fn new(index: u64) -> Self {
        let mut digits = [0u8; 20];
        let mut nd = 0;
        let mut v = index;
        loop {
            digits[nd] = b'0' + (v % 10) as u8;
            nd += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        digits[..nd].reverse();
        Prose { digits, nd, at: 0, state: index, word: b"", k: 0 }
    }
}

impl Iterator for Prose {
    type Item = u8;
    fn next(&mut self) -> Option<u8> {
        if self.at < self.nd {
            self.at += 1;
            return Some(self.digits[self.at - 1]);
        }
        if self.k == self.word.len() {
            self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            self.word = PROSE_WORDS[(z >> 58) as usize];
            self.k = 0;
            return Some(b' ');
        }
        self.k += 1;
        Some(self.word[self.k - 1])
    }
}

/// The prose payload (`--variant prose`) of request `index`, `buf.len()` bytes of it.
pub fn fill_prose_payload(index: u64, buf: &mut [u8]) {
    for (c, p) in buf.iter_mut().zip(Prose::new(index)) {
        *c = p;
    }
}

/// Whether `payload` is exactly the prose payload of request `index` of length `len`.
pub fn prose_payload_matches(index: u64, len: usize, payload: &[u8]) -> bool {
    payload.len() == len && payload.iter().zip(Prose::new(index)).all(|(&a, b)| a == b)
}

fn seed(index: u64) -> u8 {
    (index.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

/// Escapes a string for a JSON string literal (quotes included).
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Formats a float for JSON (finite, fixed precision).
pub fn json_f64(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "0".into()
    }
}

/// Binds a listener with address reuse and `TCP_NODELAY` on the listening socket (Linux copies
/// it to accepted sockets; servers set it again on each accepted socket anyway).
pub async fn bind(listen: &str) -> std::io::Result<tokio::net::TcpListener> {
    let addr = tokio::net::lookup_host(listen)
        .await?
        .next()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no address"))?;
    let sock = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    sock.set_reuseaddr(true)?;
    let _ = sock.set_nodelay(true);
    sock.bind(addr)?;
    sock.listen(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_pattern_round_trips_and_detects_mixups() {
        for len in [0usize, 1, 7, 8, 9, 32, 1024] {
            for idx in [0u64, 1, 2, 255, 256, 1 << 40] {
                let mut b = vec![0u8; len];
                fill_payload(idx, &mut b);
                assert!(payload_matches(idx, len, &b));
                if len >= 8 {
                    assert!(!payload_matches(idx + 1, len, &b), "len {len} idx {idx}");
                    assert_eq!(&b[..8], &idx.to_le_bytes());
                }
                if len > 0 {
                    let mut c = b.clone();
                    c[len - 1] ^= 1;
                    assert!(!payload_matches(idx, len, &c));
                }
                assert!(!payload_matches(idx, len + 1, &b));
            }
        }
    }

    fn opts(args: &[&str]) -> Options {
        Options::parse(
            args.iter().map(|s| s.to_string()),
            &["codec", "protocol"],
            &["sink"],
        )
        .unwrap()
    }

    #[test]
    fn options() {
        let o = opts(&["--protocol", "standard", "--sink"]);
        assert!(o.has("sink"));
        assert_eq!(o.codec().unwrap(), CodecConfig::named("standard"));
        assert!(Options::parse(["--nope".to_string()], &[], &[]).is_err());
        assert!(Options::parse(["--codec".to_string()], &["codec"], &[])
            .unwrap_err()
            .contains("needs a value"));
        assert!(Options::parse(["x".to_string()], &[], &[]).is_err());
        // Removed per-protocol flags are unknown options now.
        for old in ["--lf-offset", "--lf-size", "--max-payload"] {
            let r = Options::parse(
                [old.to_string(), "1".into()],
                &["codec", "protocol", "threads"],
                &[],
            );
            assert!(r.unwrap_err().contains("unknown option"), "{old}");
        }
    }

    #[test]
    fn codec_option() {
        let json = r#"{"protocol": "length-field", "length_field": {"offset": 3, "size": -4}}"#;
        let c = opts(&["--codec", json]).codec().unwrap();
        assert_eq!(c.protocol, "length-field");
        assert_eq!(c.to_json(), json);
        // --codec=JSON form.
        let c = opts(&[&format!("--codec={json}")]).codec().unwrap();
        assert_eq!(c.to_json(), json);
        let err = |args: &[&str]| opts(args).codec().unwrap_err();
        assert!(err(&[]).contains("required"));
        assert!(err(&["--protocol", "standard", "--codec", json]).contains("not both"));
        assert!(err(&["--codec", "{\"protocol\": "]).contains("not valid JSON"));
        assert!(err(&["--codec", "[]"]).contains("object"));
        assert!(err(&["--codec", r#"{"protocol": "standard", "extra": 1}"#]).contains("\"extra\""));
        assert!(err(&[
            "--codec",
            r#"{"protocol": "length-field", "length_field": {"offset": 1, "sizes": 2}}"#
        ])
        .contains("\"sizes\""));
        assert!(err(&[
            "--codec",
            r#"{"protocol": "length-field", "length_field": {"size": 3}}"#
        ])
        .contains("LF-FMT-3"));
        assert!(err(&["--protocol", "smtp"]).contains("not implemented"));
        assert!(err(&["--codec", r#"{"limits": {"max_payload": 10}}"#])
            .contains("protocol is required"));
    }

    #[test]
    fn json_escaping() {
        assert_eq!(json_string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
        assert_eq!(json_f64(1.23456, 2), "1.23");
        assert_eq!(json_f64(f64::NAN, 2), "0");
    }

    #[test]
    fn prose_payloads_are_the_contracts() {
        // the Python reference's text (conformance/frameproof/protocols/websocket/load.py, prose)
        for (index, want) in [
            (0u64, &b"0 into what of him that have are she the"[..]),
            (12345, b"12345 for with it are there or it what when other are had th"),
            (u64::MAX, b"18446744073709551615 has more his what up so two"),
        ] {
            let mut buf = vec![0u8; want.len()];
            fill_prose_payload(index, &mut buf);
            assert_eq!(buf, want);
            assert!(prose_payload_matches(index, want.len(), want));
            assert!(!prose_payload_matches(index.wrapping_add(1), want.len(), want));
            assert!(!prose_payload_matches(index, want.len() + 1, want));
        }
    }
}
