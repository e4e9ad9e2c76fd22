//! Shared pieces of the benchmark baselines (tools/bench): per-connection counters printed on
//! SIGTERM in the fp-server JSON format (plus `reads` / `read_bytes`), listening with
//! `TCP_NODELAY`, and [`Walker`], a header walker that finds frame boundaries without decoding
//! (no buffering, no copies) so the raw echo can count frames and turn `standard` requests into
//! replies in place.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// Counters of one connection (single writer, so plain stores are enough).
#[derive(Default)]
pub struct ConnStats {
    pub frames: AtomicU64,
    pub bytes: AtomicU64,
    pub reads: AtomicU64,
    pub read_bytes: AtomicU64,
    pub protocol_errors: AtomicU64,
}

/// Every connection's counters, summed when the server stops.
#[derive(Default)]
pub struct Registry {
    conns: Mutex<Vec<Arc<ConnStats>>>,
}

impl Registry {
    pub fn add(&self) -> Arc<ConnStats> {
        let s = Arc::new(ConnStats::default());
        self.conns.lock().unwrap().push(s.clone());
        s
    }

    /// The fp-server counters line, with `reads` (recv calls that returned data) and
    /// `read_bytes` (wire bytes those returned).
    pub fn json_line(&self) -> String {
        let c = self.conns.lock().unwrap();
        let sum =
            |f: fn(&ConnStats) -> &AtomicU64| c.iter().map(|s| f(s).load(Relaxed)).sum::<u64>();
        format!(
            "{{\"connections\": {}, \"frames\": {}, \"bytes\": {}, \"protocol_errors\": {}, \"reads\": {}, \"read_bytes\": {}}}",
            c.len(),
            sum(|s| &s.frames),
            sum(|s| &s.bytes),
            sum(|s| &s.protocol_errors),
            sum(|s| &s.reads),
            sum(|s| &s.read_bytes)
        )
    }
}

/// Prints `LISTENING addr` and flushes.
pub fn announce(addr: std::net::SocketAddr) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "LISTENING {addr}");
    let _ = out.flush();
}

/// Binds with address reuse and `TCP_NODELAY` on the listening socket (shared with fp-server).
pub use fp_net::bind;

/// Frame layout the walker understands: `standard` (4-byte header, extended form when the
/// length is 0xFFFF) or `length-field` at offset 0 with a 1, 2 or 4-byte little-endian length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Standard,
    LengthField { size: usize },
}

/// Walks a byte stream frame by frame by reading only the headers. With `flip`, sets bit 7 of
/// each `standard` flag byte in place (request 0x01 becomes the reply 0x81), which is all an
/// echo of a well-formed request stream needs. It does not validate anything: it is the
/// ceiling, not a server.
#[derive(Debug)]
pub struct Walker {
    framing: Framing,
    flip: bool,
    hdr: [u8; 8],
    have: usize,
    need: usize,
    remaining: u64,
    pub frames: u64,
    pub payload_bytes: u64,
}

impl Walker {
    pub fn new(framing: Framing, flip: bool) -> Self {
        Walker {
            framing,
            flip: flip && framing == Framing::Standard,
            hdr: [0; 8],
            have: 0,
            need: Self::base(framing),
            remaining: 0,
            frames: 0,
            payload_bytes: 0,
        }
    }

    fn base(f: Framing) -> usize {
        match f {
            Framing::Standard => 4,
            Framing::LengthField { size } => size,
        }
    }

    pub fn walk(&mut self, buf: &mut [u8]) {
        let n = buf.len();
        let mut i = 0;
        while i < n {
            if self.remaining > 0 {
                let take = self.remaining.min((n - i) as u64);
                i += take as usize;
                self.remaining -= take;
                if self.remaining == 0 {
                    self.frames += 1;
                }
                continue;
            }
            if self.have == 0 && self.flip {
                buf[i] |= 0x80;
            }
            self.hdr[self.have] = buf[i];
            self.have += 1;
            i += 1;
            if self.have < self.need {
                continue;
            }
            let len = match self.framing {
                Framing::Standard => {
                    let l = u16::from_le_bytes([self.hdr[2], self.hdr[3]]);
                    if l == 0xFFFF && self.need == 4 {
                        self.need = 8;
                        continue;
                    }
                    if self.need == 8 {
                        u32::from_le_bytes([self.hdr[4], self.hdr[5], self.hdr[6], self.hdr[7]])
                            as u64
                    } else {
                        l as u64
                    }
                }
                Framing::LengthField { size } => {
                    let mut b = [0u8; 8];
                    b[..size].copy_from_slice(&self.hdr[..size]);
                    u64::from_le_bytes(b)
                }
            };
            self.have = 0;
            self.need = Self::base(self.framing);
            self.payload_bytes += len;
            self.remaining = len;
            if len == 0 {
                self.frames += 1;
            }
        }
    }
}

/// Parses `--protocol` / `--lf-offset` / `--lf-size` into the framings the walker supports.
pub fn framing(o: &fp_net::Options) -> Result<Framing, String> {
    match o.required("protocol")? {
        "standard" => Ok(Framing::Standard),
        "length-field" => {
            let off: u32 = o.num("lf-offset", 0)?;
            let size: i64 = o.num("lf-size", 2)?;
            if off != 0 || !matches!(size, 1 | 2 | 4) {
                return Err(
                    "baselines support length-field at offset 0 with size 1, 2 or 4 only".into(),
                );
            }
            Ok(Framing::LengthField {
                size: size as usize,
            })
        }
        p => Err(format!("--protocol: unknown protocol {p:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use frameproof_codec::standard;

    #[test]
    fn walker_flips_and_counts_across_splits() {
        let mut wire = BytesMut::new();
        for (i, len) in [0usize, 5, 65535, 70000, 3].iter().enumerate() {
            standard::encode(&mut wire, 0x01, i as u8 + 1, &vec![7u8; *len], 1 << 24).unwrap();
        }
        let mut expect = wire.to_vec();
        let mut ok = BytesMut::new();
        for (i, len) in [0usize, 5, 65535, 70000, 3].iter().enumerate() {
            standard::encode(&mut ok, 0x81, i as u8 + 1, &vec![7u8; *len], 1 << 24).unwrap();
        }
        for split in [1usize, 2, 3, 5, 7, 4096] {
            let mut w = Walker::new(Framing::Standard, true);
            let mut data = wire.to_vec();
            for c in data.chunks_mut(split) {
                w.walk(c);
            }
            assert_eq!(w.frames, 5);
            assert_eq!(w.payload_bytes, 65535 + 70000 + 8);
            assert_eq!(data, ok.to_vec());
        }
        let mut w = Walker::new(Framing::Standard, false);
        w.walk(&mut expect);
        assert_eq!(expect, wire.to_vec());
    }

    #[test]
    fn walker_length_field() {
        let mut data = vec![2u8, 0, 9, 9, 0, 0, 1, 0, 5];
        let mut w = Walker::new(Framing::LengthField { size: 2 }, true);
        w.walk(&mut data);
        assert_eq!((w.frames, w.payload_bytes), (3, 3));
        assert_eq!(data, vec![2u8, 0, 9, 9, 0, 0, 1, 0, 5]);
    }
}
