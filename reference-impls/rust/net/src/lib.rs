//! Shared pieces of `fp-server` and `fp-load`: option parsing, protocol selection, the load
//! payload pattern and a small JSON writer.

use std::collections::HashMap;

use frameproof_codec::length_field::Profile;

/// Which protocol a program speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Standard,
    LengthField(Profile),
}

impl Protocol {
    pub fn name(&self) -> &'static str {
        match self {
            Protocol::Standard => "standard",
            Protocol::LengthField(_) => "length-field",
        }
    }
}

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

    /// `--protocol` with `--lf-offset` / `--lf-size` (defaults 0 and 2).
    pub fn protocol(&self) -> Result<Protocol, String> {
        match self.required("protocol")? {
            "standard" => Ok(Protocol::Standard),
            "length-field" => {
                let offset: u32 = self.num("lf-offset", 0)?;
                let size: i64 = self.num("lf-size", 2)?;
                Profile::new(offset, size)
                    .map(Protocol::LengthField)
                    .map_err(|e| format!("--lf-size: {e}"))
            }
            other => Err(format!("--protocol: unknown protocol {other:?}")),
        }
    }
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

    #[test]
    fn options() {
        let args = [
            "--protocol",
            "length-field",
            "--lf-size=-4",
            "--sink",
            "--lf-offset",
            "3",
        ];
        let o = Options::parse(
            args.iter().map(|s| s.to_string()),
            &["protocol", "lf-size", "lf-offset"],
            &["sink"],
        )
        .unwrap();
        assert!(o.has("sink"));
        assert_eq!(
            o.protocol().unwrap(),
            Protocol::LengthField(Profile::new(3, -4).unwrap())
        );
        let bad = Options::parse(["--nope".to_string()], &[], &[]);
        assert!(bad.is_err());
        let o = Options::parse(
            [
                "--protocol".to_string(),
                "length-field".into(),
                "--lf-size".into(),
                "3".into(),
            ],
            &["protocol", "lf-size"],
            &[],
        )
        .unwrap();
        assert!(o.protocol().unwrap_err().contains("LF-FMT-3"));
    }

    #[test]
    fn json_escaping() {
        assert_eq!(json_string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
        assert_eq!(json_f64(1.23456, 2), "1.23");
        assert_eq!(json_f64(f64::NAN, 2), "0");
    }
}

