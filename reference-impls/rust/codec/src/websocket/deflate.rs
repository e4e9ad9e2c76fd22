//! permessage-deflate (RFC 7692) as spec/websocket-deflate.md states it: the
//! `Sec-WebSocket-Extensions` grammar (WSD-NEG-1), the offer's parameters (WSD-NEG-2), the
//! server's choice and response (WSD-NEG-3/4), the client's offer and its check of the response
//! (WSD-NEG-5), and one direction's compressor and inflater
//! (WSD-CMP-*, WSD-CTX-*, WSD-LIM-1). Mirrors the Python reference
//! (`conformance/frameproof/protocols/websocket/deflate.py`); zlib-rs (through flate2) does the
//! DEFLATE work. Opt-in: only with the codec key `websocket.permessage_deflate`.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// The extension's token.
pub const DEFLATE_NAME: &str = "permessage-deflate";
/// The end of an empty stored block: removed by the sender, added back by the receiver.
pub const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];
/// Inflated bytes per step: the most a receiver holds past its limit (WSD-LIM-1).
pub const STEP: usize = 64 * 1024;

fn tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// One extension element: its name and its parameters (name, value), names as spelt.
pub type Extension = (String, Vec<(String, Option<String>)>);

/// Every `Sec-WebSocket-Extensions` value of a request (several headers are one list, in
/// order) -> its elements (RFC 6455 §9.1, RFC 7230 §3.2.6, §7). A quoted value is unquoted and
/// must then be a token. Err on bad syntax.
pub fn parse_extensions<S: AsRef<str>>(values: &[S]) -> Result<Vec<Extension>, String> {
    let mut out = Vec::new();
    for v in values {
        let s = v.as_ref().as_bytes();
        let ows = |mut i: usize| {
            while i < s.len() && (s[i] == b' ' || s[i] == b'\t') {
                i += 1;
            }
            i
        };
        let token = |i: usize| -> Result<(String, usize), String> {
            let mut j = i;
            while j < s.len() && tchar(s[j]) {
                j += 1;
            }
            if j == i {
                return Err(format!("a token expected at {i} in {:?}", v.as_ref()));
            }
            Ok((String::from_utf8_lossy(&s[i..j]).into_owned(), j))
        };
        let mut i = ows(0);
        while i < s.len() {
            if s[i] == b',' {
                i = ows(i + 1); // empty list elements are allowed (RFC 7230 §7)
                continue;
            }
            let (name, j) = token(i)?;
            let mut params = Vec::new();
            i = ows(j);
            while i < s.len() && s[i] == b';' {
                let (pname, j) = token(ows(i + 1))?;
                i = ows(j);
                let mut value = None;
                if i < s.len() && s[i] == b'=' {
                    i = ows(i + 1);
                    if i < s.len() && s[i] == b'"' {
                        let (q, j) = quoted(s, i)?;
                        if q.is_empty() || !q.iter().all(|&b| tchar(b)) {
                            return Err(format!("the quoted value {q:?} is not a token"));
                        }
                        value = Some(String::from_utf8_lossy(&q).into_owned());
                        i = j;
                    } else {
                        let (t, j) = token(i)?;
                        value = Some(t);
                        i = j;
                    }
                    i = ows(i);
                }
                params.push((pname, value));
            }
            out.push((name, params));
            if i < s.len() {
                if s[i] != b',' {
                    return Err(format!("',' or ';' expected at {i} in {:?}", v.as_ref()));
                }
                i = ows(i + 1);
            }
        }
    }
    Ok(out)
}

/// A quoted-string starting at `s[i] == '"'` (a backslash escapes one octet) -> its content
/// and the index after the closing quote.
fn quoted(s: &[u8], mut i: usize) -> Result<(Vec<u8>, usize), String> {
    let mut out = Vec::new();
    i += 1;
    while i < s.len() {
        match s[i] {
            b'"' => return Ok((out, i + 1)),
            b'\\' if i + 1 < s.len() => {
                out.push(s[i + 1]);
                i += 2;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Err("an unterminated quoted string".into())
}

/// `client_max_window_bits` in an offer: absent, without a value, or 8..15.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientBits {
    #[default]
    Absent,
    NoValue,
    Bits(u8),
}

/// One offer's parameters, validated (WSD-NEG-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offer {
    pub server_no_context_takeover: bool,
    pub client_no_context_takeover: bool,
    pub server_max_window_bits: Option<u8>,
    pub client_max_window_bits: ClientBits,
}

/// What the two ends agreed (the server's response).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agreement {
    pub server_no_context_takeover: bool,
    pub client_no_context_takeover: bool,
    /// Stated in the response when `Some`; the server's compressor uses it, else 15.
    pub server_max_window_bits: Option<u8>,
    /// Stated in the response when `Some` (only if offered); the client's window, else 15.
    pub client_max_window_bits: Option<u8>,
}

impl Agreement {
    /// The response's `Sec-WebSocket-Extensions` value (WSD-NEG-3).
    pub fn header(&self) -> String {
        Offer {
            server_no_context_takeover: self.server_no_context_takeover,
            client_no_context_takeover: self.client_no_context_takeover,
            server_max_window_bits: self.server_max_window_bits,
            client_max_window_bits: self
                .client_max_window_bits
                .map_or(ClientBits::Absent, ClientBits::Bits),
        }
        .header()
    }
}

/// 8..15 written without a leading zero (WSD-NEG-2).
fn bits(value: Option<&str>) -> Option<u8> {
    let v = value?;
    if v.is_empty() || v.starts_with('0') || !v.bytes().all(|b| b.is_ascii_digit()) || v.len() > 2 {
        return None;
    }
    let n: u8 = v.parse().ok()?;
    (8..=15).contains(&n).then_some(n)
}

/// An offer's parameters, or None: the offer is declined (an unknown parameter, an invalid
/// value, a parameter given twice; WSD-NEG-2).
pub fn offer_params(params: &[(String, Option<String>)]) -> Option<Offer> {
    let mut seen: Vec<String> = Vec::new();
    let mut o = Offer::default();
    for (raw, value) in params {
        let name = raw.to_ascii_lowercase();
        if seen.contains(&name) {
            return None;
        }
        let value = value.as_deref();
        match name.as_str() {
            "server_no_context_takeover" if value.is_none() => o.server_no_context_takeover = true,
            "client_no_context_takeover" if value.is_none() => o.client_no_context_takeover = true,
            "server_max_window_bits" => o.server_max_window_bits = Some(bits(value)?),
            "client_max_window_bits" if value.is_none() => {
                o.client_max_window_bits = ClientBits::NoValue
            }
            "client_max_window_bits" => o.client_max_window_bits = ClientBits::Bits(bits(value)?),
            _ => return None,
        }
        seen.push(name);
    }
    Some(o)
}

/// The server's answer to a request's extension headers: the first offer it supports
/// (WSD-NEG-2), or None (declined: no header). Its compressor uses 15 bits unless the client
/// asks for fewer, and never 8 (zlib compresses with 9 at least, WSD-NEG-4).
pub fn accept<S: AsRef<str>>(values: &[S]) -> Option<Agreement> {
    let offers = parse_extensions(values).ok()?;
    for (name, params) in offers {
        if !name.eq_ignore_ascii_case(DEFLATE_NAME) {
            continue;
        }
        let Some(p) = offer_params(&params) else {
            continue;
        };
        let server_bits = p.server_max_window_bits.unwrap_or(15);
        if server_bits < 9 {
            continue; // zlib cannot compress with 8 bits (WSD-NEG-4)
        }
        let client_bits = match p.client_max_window_bits {
            ClientBits::Absent => None, // not offered: the response must not name it (WSD-NEG-3)
            ClientBits::NoValue => Some(15),
            ClientBits::Bits(b) => Some(b),
        };
        return Some(Agreement {
            server_no_context_takeover: p.server_no_context_takeover,
            client_no_context_takeover: p.client_no_context_takeover,
            server_max_window_bits: p.server_max_window_bits,
            client_max_window_bits: client_bits,
        });
    }
    None
}

/// What a client offers (reference-impls/README.md, websocket): `client_max_window_bits` (it
/// follows any window the server asks for), no hint: a server that wants the client to reset its
/// compressor says `client_no_context_takeover` in its response, which the client follows
/// (WSD-NEG-5), and otherwise the client keeps its context (WSD-CTX-1).
pub const CLIENT_OFFER: Offer = Offer {
    server_no_context_takeover: false,
    client_no_context_takeover: false,
    server_max_window_bits: None,
    client_max_window_bits: ClientBits::NoValue,
};

impl Offer {
    /// The offer's `Sec-WebSocket-Extensions` value.
    pub fn header(&self) -> String {
        let mut h = String::from(DEFLATE_NAME);
        if self.server_no_context_takeover {
            h.push_str("; server_no_context_takeover");
        }
        if self.client_no_context_takeover {
            h.push_str("; client_no_context_takeover");
        }
        if let Some(b) = self.server_max_window_bits {
            h.push_str(&format!("; server_max_window_bits={b}"));
        }
        match self.client_max_window_bits {
            ClientBits::Absent => {}
            ClientBits::NoValue => h.push_str("; client_max_window_bits"),
            ClientBits::Bits(b) => h.push_str(&format!("; client_max_window_bits={b}")),
        }
        h
    }
}

/// A client's reading of the server's `Sec-WebSocket-Extensions` values after offering `offer`
/// (WSD-NEG-5): `Ok(None)` when the server declined (no element), the agreement it must follow
/// (with the offer's `client_no_context_takeover` hint kept, if it had one: RFC 7692 §7.1.1.2), or
/// `Err`: fail the connection (an
/// element other than one permessage-deflate, an unknown, repeated or invalid parameter,
/// `client_max_window_bits` not offered or without a value, a window larger than offered).
pub fn check_response<S: AsRef<str>>(
    offer: &Offer,
    values: &[S],
) -> Result<Option<Agreement>, String> {
    let elements = parse_extensions(values)?;
    let (name, params) = match elements.as_slice() {
        [] => return Ok(None),
        [one] => one,
        _ => {
            return Err(format!(
                "{} extension elements in the response",
                elements.len()
            ))
        }
    };
    if !name.eq_ignore_ascii_case(DEFLATE_NAME) {
        return Err(format!("the response names {name:?}, not offered"));
    }
    let p = offer_params(params).ok_or_else(|| {
        "a response parameter is unknown, repeated or has an invalid value".to_string()
    })?;
    let client_bits = match (p.client_max_window_bits, offer.client_max_window_bits) {
        (ClientBits::Absent, _) => None,
        (ClientBits::NoValue, _) => {
            return Err("client_max_window_bits without a value in the response".into())
        }
        (ClientBits::Bits(_), ClientBits::Absent) => {
            return Err("client_max_window_bits in the response, not in the offer".into())
        }
        (ClientBits::Bits(b), ClientBits::Bits(o)) if b > o => {
            return Err(format!(
                "client_max_window_bits={b}, larger than the {o} offered"
            ))
        }
        (ClientBits::Bits(b), _) => Some(b),
    };
    if let (Some(b), Some(o)) = (p.server_max_window_bits, offer.server_max_window_bits) {
        if b > o {
            return Err(format!(
                "server_max_window_bits={b}, larger than the {o} offered"
            ));
        }
    }
    Ok(Some(Agreement {
        server_no_context_takeover: p.server_no_context_takeover,
        client_no_context_takeover: p.client_no_context_takeover
            || offer.client_no_context_takeover,
        server_max_window_bits: p.server_max_window_bits,
        client_max_window_bits: client_bits,
    }))
}

/// zlib's state for a compressor with memLevel 8 at `bits` (WSD-LIM-2's estimate).
fn deflater_cost(bits: u8) -> usize {
    (2usize << bits) * 4 + 8 * 1024
}
/// zlib's state for an inflater with a 15-bit window (WSD-LIM-2's estimate).
const INFLATER_COST: usize = (1 << 15) + 12 * 1024;

/// One sender's compressor (WSD-CMP-1): `bits` 9..15; `reset` after every message when the
/// agreement says no context takeover for this sender. Created at the first message.
pub struct Deflater {
    bits: u8,
    reset: bool,
    level: u32,
    z: Option<Compress>,
}

impl std::fmt::Debug for Deflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Deflater(bits {}, reset {}, live {})",
            self.bits,
            self.reset,
            self.z.is_some()
        )
    }
}

impl Deflater {
    pub fn new(bits: u8, reset: bool) -> Self {
        Deflater {
            bits: bits.clamp(9, 15),
            reset,
            level: 6,
            z: None,
        }
    }

    /// Appends the payload of one compressed message to `out`: sync-flushed, its last four
    /// octets removed; an empty message is the single octet 0x00.
    pub fn compress(&mut self, message: &[u8], out: &mut Vec<u8>) {
        let (level, bits) = (self.level, self.bits);
        let z = self.z.get_or_insert_with(|| {
            Compress::new_with_window_bits(Compression::new(level), false, bits)
        });
        let start = out.len();
        let mut input = message;
        loop {
            out.reserve(input.len() / 2 + 64);
            let before = z.total_in();
            let r = z.compress_vec(input, out, FlushCompress::Sync);
            input = &input[(z.total_in() - before) as usize..];
            // Done when the input is used up and zlib had room to spare (the flush is complete).
            if r.is_err() || (input.is_empty() && out.len() < out.capacity()) {
                break;
            }
        }
        if self.reset {
            self.z = None;
        }
        if out[start..].ends_with(&TAIL) {
            out.truncate(out.len() - 4);
        }
        if out.len() == start {
            out.push(0);
        }
    }

    /// A sender's payload for one message (WSD-FRM-3): true when the compressed payload
    /// ([`Self::compress`]) was appended to `out`; false where it would be longer than the message
    /// (incompressible data, an empty message): `out` is left as it was, the message goes
    /// uncompressed (RSV1 clear), and the compressor is reset (its state dropped, made again at the
    /// next message, WSD-LIM-3): the message entered its window but no receiver's (WSD-CTX-3), so the
    /// next compressed message refers to nothing earlier.
    pub fn payload(&mut self, message: &[u8], out: &mut Vec<u8>) -> bool {
        let start = out.len();
        self.compress(message, out);
        if out.len() - start <= message.len() {
            return true;
        }
        out.truncate(start);
        self.z = None;
        false
    }

    /// Memory of the compressor's state (WSD-LIM-2): 0 until the first message.
    pub fn cost(&self) -> usize {
        self.z.as_ref().map_or(0, |_| deflater_cost(self.bits))
    }
}

/// Why a compressed message is refused: its close code (WSD-CMP-3: 1007, WSD-LIM-1: 1009).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InflateError {
    pub code: u16,
    pub reason: String,
}

/// One receiver's decompressor, fed a message's frames as they arrive. `reset`: the sender
/// keeps no context (the window starts empty for every message); `max_message`: the limit on
/// the inflated size (WSD-LIM-1); `bits`: the sender's window (how much history a new stream
/// after a final block may refer to, WSD-CMP-5).
pub struct Inflater {
    bits: u8,
    reset: bool,
    max_message: u64,
    z: Option<Decompress>,
    /// The last 2^bits inflated bytes (with context takeover): the window of a new stream
    /// after a final block.
    history: Vec<u8>,
    /// Inflated bytes of the current message.
    total: u64,
    /// The current message's stream ended (BFINAL): the rest of its payload is ignored.
    ended: bool,
    /// Where the current message's output starts in the caller's buffer.
    start: usize,
    /// Output produced in all (for tests: what a bomb made the inflater write).
    pub produced: u64,
}

impl std::fmt::Debug for Inflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Inflater(bits {}, reset {}, live {})",
            self.bits,
            self.reset,
            self.z.is_some()
        )
    }
}

impl Inflater {
    pub fn new(bits: u8, reset: bool, max_message: u64) -> Self {
        Inflater {
            bits,
            reset,
            max_message,
            z: None,
            history: Vec::new(),
            total: 0,
            ended: false,
            start: 0,
            produced: 0,
        }
    }

    /// Starts a compressed message whose bytes go to `out` from its current length on.
    pub fn begin(&mut self, out: &[u8]) {
        self.total = 0;
        self.ended = false;
        self.start = out.len();
        if self.z.is_none() || self.reset {
            // 15 bits on our side whatever the sender's: a larger window reads a smaller one's data
            let mut z = Decompress::new_with_window_bits(false, 15);
            if !self.reset && !self.history.is_empty() {
                let _ = z.set_dictionary(&self.history);
            }
            self.z = Some(z);
        }
    }

    /// Inflates one frame's payload of the message onto `out`, in steps of at most [`STEP`]
    /// bytes: 1009 as soon as the message passes `max_message` (the rest is not inflated),
    /// 1007 for data that does not inflate.
    pub fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), InflateError> {
        if self.ended {
            return Ok(()); // after a final block (WSD-CMP-5)
        }
        let Some(z) = self.z.as_mut() else {
            return Ok(());
        };
        loop {
            // one byte past the limit is enough to know
            let room = (self.max_message - self.total)
                .saturating_add(1)
                .min(STEP as u64) as usize;
            let at = out.len();
            out.resize(at + room, 0);
            let (in0, out0) = (z.total_in(), z.total_out());
            let r = z.decompress(input, &mut out[at..], FlushDecompress::None);
            let used = (z.total_in() - in0) as usize;
            let made = (z.total_out() - out0) as usize;
            out.truncate(at + made);
            input = &input[used..];
            self.total += made as u64;
            self.produced += made as u64;
            let status = match r {
                Ok(s) => s,
                Err(e) => {
                    self.z = None;
                    return Err(InflateError {
                        code: 1007,
                        reason: format!(
                            "the payload does not inflate: {}",
                            e.message().unwrap_or("invalid deflate data")
                        ),
                    });
                }
            };
            if self.total > self.max_message {
                self.z = None;
                return Err(InflateError {
                    code: 1009,
                    reason: format!(
                        "the message inflates past max_message ({} bytes)",
                        self.max_message
                    ),
                });
            }
            if status == Status::StreamEnd {
                // a final block: what follows is ignored, the next message is a new stream
                self.ended = true;
                self.z = None;
                return Ok(());
            }
            if (input.is_empty() && made < room) || (used == 0 && made == 0) {
                return Ok(());
            }
        }
    }

    /// Ends the message (the payload's missing `00 00 ff ff`); with context takeover, its last
    /// bytes join the window a new stream would start with.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), InflateError> {
        self.feed(&TAIL, out)?;
        if !self.reset {
            let window = 1usize << self.bits;
            let msg = &out[self.start.min(out.len())..];
            if msg.len() >= window {
                self.history.clear();
                self.history.extend_from_slice(&msg[msg.len() - window..]);
            } else {
                let drop = (self.history.len() + msg.len()).saturating_sub(window);
                self.history.drain(..drop);
                self.history.extend_from_slice(msg);
            }
        } else {
            self.z = None; // created again at the next compressed message (WSD-LIM-2)
        }
        Ok(())
    }

    /// Memory of the inflater's state and window history (WSD-LIM-2): 0 until the first
    /// compressed message.
    pub fn cost(&self) -> usize {
        self.z.as_ref().map_or(0, |_| INFLATER_COST) + self.history.capacity()
    }
}
