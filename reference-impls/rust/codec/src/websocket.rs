//! The `websocket` protocol (`spec/websocket.md`): RFC 6455 frames and messages over one
//! connection, for both roles (a server receives masked frames and sends unmasked ones, a client
//! the reverse), and the server side of the opening handshake.
//!
//! * [`WsDecoder`]: the receiving endpoint. Frames are judged from their header (§14 step 1),
//!   then against the message state (fragmentation, limits), then by payload (UTF-8 as the bytes
//!   arrive, fail-fast across fragments; the close payload once complete). Payloads are unmasked
//!   in place in the receive buffer ([`mask`], 16 bytes at a time) and delivered as slices of it.
//! * [`encode`]: a frame exactly as given (MASK bit and key included), refusing what §14 says.
//! * [`WsSession`]: the echo service (§13): messages echoed as one frame, pings answered, the
//!   close handshake, errors closed with their close code (WS-ERR-1). The network server's
//!   session first runs the opening handshake (§12, [`handshake_reply`]).
//! * [`WsClient`]: a load client's side: masked frames with fresh random keys, echoes matched
//!   FIFO; [`client_opening`] and [`ClientOpening`] for its handshake.

use base64::Engine as _;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde_json::{Map, Value};
use sha1::{Digest, Sha1};

use crate::config::{CodecConfig, ConfigError};
use crate::matcher::{Expired, FifoMatcher, Received, SendError};
use crate::protocol::{
    ClientMatcher, FrameFields, Protocol, ReplyRewriter, Rewrite, RewriteState, Served,
    ServerSession,
};
use crate::{FrameDecoder, ProtocolError, Violation};

pub const CONT: u8 = 0x0;
pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;
pub const CLOSE: u8 = 0x8;
pub const PING: u8 = 0x9;
pub const PONG: u8 = 0xA;
/// Default frame limit (`limits.max_payload`, WS-LIM-1): 10 MiB.
pub const DEFAULT_MAX_FRAME: u64 = 10 * 1024 * 1024;
/// Default message limit (`websocket.max_message`, WS-LIM-2): 100 MiB.
/// The masking key of the micro-benchmarks (the seed's, tools/bench/microbench.md).
pub const BENCH_KEY: [u8; 4] = [0x12, 0x34, 0x56, 0x78];
pub const DEFAULT_MAX_MESSAGE: u64 = 100 * 1024 * 1024;
/// RFC 6455 §1.3.
pub const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// The conformance echo service's subprotocol (WS-HS-4).
pub const SUBPROTOCOL: &str = "frameproof.echo";
/// The longest opening handshake request head the server reads.
pub const MAX_HEAD: usize = 8192;

fn is_opcode(op: u32) -> bool {
    matches!(op, 0x0..=0x2 | 0x8..=0xA)
}

/// WS-CLOSE-2: the status codes a peer may send.
pub fn close_code_valid(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// WS-ERR-1: the close code a receiver sends for an error of this class (`None`: nothing is
/// sent, the peer is gone or the error is not the peer's).
pub fn close_code(v: Violation) -> Option<u16> {
    use Violation::*;
    match v {
        WsHdr2 | WsHdr3 | WsLen3 | WsLen4 | WsMask1 | WsMask2 | WsCtl1 | WsCtl2 | WsFrag2
        | WsFrag3 | WsClose1 | WsClose2 => Some(1002),
        WsUtf81 | WsUtf82 | WsClose3 => Some(1007),
        WsLim1 | WsLim2 => Some(1009),
        _ => None,
    }
}

/// WS-MASK-3: XORs `buf` with the masking key, starting at key octet `phase % 4`. Works 16 bytes
/// at a time (the compiler vectorises the u128 XOR), then byte by byte for the tail.
pub fn mask(buf: &mut [u8], key: [u8; 4], phase: usize) {
    let k = [
        key[phase % 4],
        key[(phase + 1) % 4],
        key[(phase + 2) % 4],
        key[(phase + 3) % 4],
    ];
    let word = u32::from_ne_bytes(k) as u128;
    let wide = word | word << 32 | word << 64 | word << 96;
    let mut chunks = buf.chunks_exact_mut(16);
    for c in &mut chunks {
        let v = u128::from_ne_bytes(c.try_into().unwrap()) ^ wide;
        c.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= k[i % 4];
    }
}

/// Incremental UTF-8 validation (RFC 3629, WS-UTF8-1/2): fed the bytes of a message as they
/// arrive, it says as soon as they can no longer be the start of valid UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utf8 {
    /// Continuation bytes still due, and the allowed range of the next one.
    need: u8,
    lo: u8,
    hi: u8,
}

impl Default for Utf8 {
    fn default() -> Self {
        Utf8 {
            need: 0,
            lo: 0x80,
            hi: 0xBF,
        }
    }
}

impl Utf8 {
    /// No code point left unfinished.
    pub fn is_complete(&self) -> bool {
        self.need == 0
    }

    fn step(&mut self, b: u8) -> bool {
        if self.need > 0 {
            if b < self.lo || b > self.hi {
                return false;
            }
            self.need -= 1;
            self.lo = 0x80;
            self.hi = 0xBF;
            return true;
        }
        let (need, lo, hi) = match b {
            0x00..=0x7F => return true,
            0xC2..=0xDF => (1, 0x80, 0xBF),
            0xE0 => (2, 0xA0, 0xBF),
            0xE1..=0xEC | 0xEE | 0xEF => (2, 0x80, 0xBF),
            0xED => (2, 0x80, 0x9F),
            0xF0 => (3, 0x90, 0xBF),
            0xF1..=0xF3 => (3, 0x80, 0xBF),
            0xF4 => (3, 0x80, 0x8F),
            _ => return false,
        };
        *self = Utf8 { need, lo, hi };
        true
    }

    /// Feeds the next bytes; false once they cannot continue valid UTF-8.
    pub fn feed(&mut self, mut data: &[u8]) -> bool {
        while !data.is_empty() {
            if self.need > 0 {
                if !self.step(data[0]) {
                    return false;
                }
                data = &data[1..];
                continue;
            }
            // the bulk through the standard library's validator
            match std::str::from_utf8(data) {
                Ok(_) => return true,
                Err(e) if e.error_len().is_some() => return false,
                Err(e) => {
                    // a valid start of a code point at the end: carry it over
                    for &b in &data[e.valid_up_to()..] {
                        if !self.step(b) {
                            return false;
                        }
                    }
                    return true;
                }
            }
        }
        true
    }
}

/// Whether `data` is complete, valid UTF-8.
pub fn utf8_ok(data: &[u8]) -> bool {
    std::str::from_utf8(data).is_ok()
}

/// One frame: the header fields and the (unmasked) payload. `rsv` and `opcode` are wider than on
/// the wire so that a frame to encode can hold a value the encoder must refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsFrame {
    pub fin: bool,
    /// RSV1..RSV3 as bits 2..0.
    pub rsv: u32,
    pub opcode: u32,
    pub masked: bool,
    /// 4 bytes when masked (an encoder refuses anything else, WS-MASK-4).
    pub mask_key: Bytes,
    pub payload: Bytes,
}

impl WsFrame {
    /// An unmasked FIN frame (a server's).
    pub fn server(opcode: u8, payload: Bytes) -> Self {
        WsFrame {
            fin: true,
            rsv: 0,
            opcode: opcode as u32,
            masked: false,
            mask_key: Bytes::new(),
            payload,
        }
    }
}

/// Writes a frame header: FIN, opcode, MASK bit and the minimal length form (WS-LEN-2).
pub fn put_header(out: &mut BytesMut, fin: bool, opcode: u8, masked: bool, len: usize) {
    out.put_u8(if fin { 0x80 } else { 0 } | (opcode & 0x0F));
    let m = if masked { 0x80 } else { 0 };
    if len <= 125 {
        out.put_u8(m | len as u8);
    } else if len <= 0xFFFF {
        out.put_u8(m | 126);
        out.put_u16(len as u16);
    } else {
        out.put_u8(m | 127);
        out.put_u64(len as u64);
    }
}

/// Appends an unmasked FIN frame (what a server sends).
pub fn put_server_frame(out: &mut BytesMut, opcode: u8, payload: &[u8]) {
    out.reserve(10 + payload.len());
    put_header(out, true, opcode, false, payload.len());
    out.put_slice(payload);
}

/// Appends a masked FIN frame of `len` payload bytes written by `fill`, masked with `key`.
pub fn put_masked_frame(
    out: &mut BytesMut,
    opcode: u8,
    key: [u8; 4],
    len: usize,
    fill: impl FnOnce(&mut [u8]),
) {
    out.reserve(14 + len);
    put_header(out, true, opcode, true, len);
    out.put_slice(&key);
    let at = out.len();
    out.put_bytes(0, len);
    fill(&mut out[at..]);
    mask(&mut out[at..], key, 0);
}

/// Encodes `f` exactly as given, or refuses it (§14: WS-HDR-2, WS-HDR-3, WS-CTL-1, WS-CTL-2,
/// WS-MASK-4, WS-LIM-3, in that order) without writing anything. `max_payload` 0 = 10 MiB.
pub fn encode(out: &mut BytesMut, f: &WsFrame, max_payload: u64) -> Result<(), ProtocolError> {
    let n = f.payload.len();
    let refuse = |v, m: &str| Err(ProtocolError::new(v, 0, m));
    if f.rsv != 0 {
        return refuse(Violation::WsHdr2, "RSV bits set without an extension");
    }
    if !is_opcode(f.opcode) {
        return refuse(Violation::WsHdr3, "reserved opcode");
    }
    let control = f.opcode >= 8;
    if control && !f.fin {
        return refuse(Violation::WsCtl1, "fragmented control frame");
    }
    if control && n > 125 {
        return refuse(Violation::WsCtl2, "control frame payload over 125 bytes");
    }
    if (f.masked && f.mask_key.len() != 4) || (!f.masked && !f.mask_key.is_empty()) {
        return refuse(
            Violation::WsMask4,
            "a masked frame needs a 4-byte key, an unmasked one none",
        );
    }
    let max = if max_payload == 0 {
        DEFAULT_MAX_FRAME
    } else {
        max_payload
    };
    if n as u64 > max {
        return Err(ProtocolError::new(
            Violation::WsLim3,
            0,
            format!("payload of {n} bytes above the maximum {max}"),
        ));
    }
    out.reserve(14 + n);
    put_header(out, f.fin, f.opcode as u8, f.masked, n);
    if f.masked {
        out.put_slice(&f.mask_key);
        let at = out.len();
        out.put_slice(&f.payload);
        let key = [f.mask_key[0], f.mask_key[1], f.mask_key[2], f.mask_key[3]];
        mask(&mut out[at..], key, 0);
    } else {
        out.put_slice(&f.payload);
    }
    Ok(())
}

/// Which end of the connection a codec is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Receives masked frames (WS-MASK-1), sends unmasked ones.
    Server,
    /// Receives unmasked frames (WS-MASK-2), sends masked ones.
    Client,
}

/// The frame at the start of the buffer whose header was judged and accepted.
#[derive(Debug, Clone, Copy)]
struct Current {
    header_len: usize,
    len: usize,
    fin: bool,
    opcode: u8,
    masked: bool,
    key: [u8; 4],
    /// Payload bytes already unmasked (and, for text, validated).
    done: usize,
    /// Text frames: the message's UTF-8 state after the bytes done.
    utf8: Option<Utf8>,
}

/// The receiving endpoint: frames and the message layer (§2-§11).
#[derive(Debug)]
pub struct WsDecoder {
    buf: BytesMut,
    /// Stream offset of `buf[0]`.
    base: u64,
    role: Role,
    max_frame: u64,
    max_message: u64,
    error: Option<ProtocolError>,
    /// A close frame was read: nothing after it is (WS-CLOSE-4).
    closed: bool,
    cur: Option<Current>,
    /// A fragmented message is in progress; its type (text?), size so far and UTF-8 state.
    in_message: bool,
    text: bool,
    size: u64,
    utf8: Utf8,
}

impl WsDecoder {
    /// `max_frame` 0 = 10 MiB, `max_message` 0 = 100 MiB.
    pub fn new(role: Role, max_frame: u64, max_message: u64) -> Self {
        WsDecoder {
            buf: BytesMut::new(),
            base: 0,
            role,
            max_frame: if max_frame == 0 {
                DEFAULT_MAX_FRAME
            } else {
                max_frame
            },
            max_message: if max_message == 0 {
                DEFAULT_MAX_MESSAGE
            } else {
                max_message
            },
            error: None,
            closed: false,
            cur: None,
            in_message: false,
            text: false,
            size: 0,
            utf8: Utf8::default(),
        }
    }

    /// A close frame ended the stream.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Stream offset of the next frame.
    pub fn position(&self) -> u64 {
        self.base
    }

    /// Bytes held for frames not yet delivered.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Drops `n` bytes at the start of the buffer that are not frames (the opening handshake
    /// before them); stream offsets keep counting from the first frame.
    pub fn skip(&mut self, n: usize) {
        self.buf.advance(n);
    }

    fn fail(&mut self, v: Violation, m: impl Into<String>) -> ProtocolError {
        let e = ProtocolError::new(v, self.base, m);
        self.error = Some(e.clone());
        e
    }

    /// Judges the header at the start of the buffer once it is complete (§14 steps 1 and 2).
    fn header(&mut self) -> Result<Option<Current>, ProtocolError> {
        let b = &self.buf[..];
        if b.len() < 2 {
            return Ok(None);
        }
        let (b0, b1) = (b[0], b[1]);
        let (fin, rsv, op) = (b0 & 0x80 != 0, (b0 >> 4) & 7, b0 & 0x0F);
        let (masked, n7) = (b1 & 0x80 != 0, b1 & 0x7F);
        let ext = match n7 {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        let hl = 2 + ext + if masked { 4 } else { 0 };
        if b.len() < hl {
            return Ok(None);
        }
        let n: u64 = match n7 {
            126 => u16::from_be_bytes([b[2], b[3]]) as u64,
            127 => u64::from_be_bytes(b[2..10].try_into().unwrap()),
            n => n as u64,
        };
        let mut key = [0u8; 4];
        if masked {
            key.copy_from_slice(&b[hl - 4..hl]);
        }
        let control = op >= 8;
        use Violation::*;
        if rsv != 0 {
            return Err(self.fail(WsHdr2, format!("RSV bits {rsv:03b} without an extension")));
        }
        if !is_opcode(op as u32) {
            return Err(self.fail(WsHdr3, format!("reserved opcode 0x{op:X}")));
        }
        if control && !fin {
            return Err(self.fail(WsCtl1, "fragmented control frame"));
        }
        match self.role {
            Role::Server if !masked => {
                return Err(self.fail(WsMask1, "unmasked frame from a client"))
            }
            Role::Client if masked => return Err(self.fail(WsMask2, "masked frame from a server")),
            _ => {}
        }
        if control && n7 > 125 {
            return Err(self.fail(WsCtl2, "control frame payload over 125 bytes"));
        }
        if (n7 == 126 && n < 126) || (n7 == 127 && n < 0x10000) {
            return Err(self.fail(WsLen3, format!("length {n} not in its minimal form")));
        }
        if n7 == 127 && n >> 63 != 0 {
            return Err(self.fail(WsLen4, "64-bit length with its most significant bit set"));
        }
        if op == CONT && !self.in_message {
            return Err(self.fail(WsFrag2, "continuation frame outside a message"));
        }
        if (op == TEXT || op == BINARY) && self.in_message {
            return Err(self.fail(WsFrag3, "new message inside a fragmented one"));
        }
        if n > self.max_frame {
            let m = format!(
                "frame payload of {n} bytes above the maximum {}",
                self.max_frame
            );
            return Err(self.fail(WsLim1, m));
        }
        if !control {
            let total = if op == CONT { self.size } else { 0 }.saturating_add(n);
            if total > self.max_message {
                let m = format!(
                    "message of {total} bytes above the maximum {}",
                    self.max_message
                );
                return Err(self.fail(WsLim2, m));
            }
        }
        let utf8 = match op {
            TEXT => Some(Utf8::default()),
            CONT if self.text => Some(self.utf8),
            _ => None,
        };
        Ok(Some(Current {
            header_len: hl,
            len: n as usize,
            fin,
            opcode: op,
            masked,
            key,
            done: 0,
            utf8,
        }))
    }

    /// Unmasks (and for text, validates) the payload bytes of the current frame that arrived.
    fn advance_payload(&mut self, c: &mut Current) -> Result<(), ProtocolError> {
        let have = (self.buf.len() - c.header_len).min(c.len);
        if have <= c.done {
            return Ok(());
        }
        let range = c.header_len + c.done..c.header_len + have;
        if c.masked {
            mask(&mut self.buf[range.clone()], c.key, c.done);
        }
        if let Some(u) = c.utf8.as_mut() {
            if !u.feed(&self.buf[range]) {
                let v = if c.fin {
                    Violation::WsUtf81
                } else {
                    Violation::WsUtf82
                };
                return Err(self.fail(v, "text is not valid UTF-8"));
            }
        }
        c.done = have;
        Ok(())
    }

    /// Calls `each(opcode, payload)` for the complete frames at the front of the buffer that
    /// are whole, valid data messages (FIN, no RSV, TEXT or BINARY outside a fragmented
    /// message, masked as a server receives them, within the limits, text valid UTF-8), with
    /// the payload unmasked where it lies; then drops them from the buffer at once and returns
    /// (frames, payload bytes). None is taken out as a frame of its own (no reference count, no
    /// allocation). Stops before any other frame (a control frame, a fragment, an unfinished or
    /// invalid one), which [`FrameDecoder::decode`] then handles; a server's decoder only.
    pub fn drain_complete(&mut self, mut each: impl FnMut(u8, &[u8])) -> (u64, u64) {
        if self.error.is_some()
            || self.closed
            || self.cur.is_some()
            || self.in_message
            || self.role != Role::Server
        {
            return (0, 0);
        }
        let limit = self.max_frame.min(self.max_message);
        let (mut pos, mut frames, mut bytes) = (0usize, 0u64, 0u64);
        loop {
            let b = &mut self.buf[pos..];
            if b.len() < 2 || (b[0] != 0x80 | TEXT && b[0] != 0x80 | BINARY) || b[1] & 0x80 == 0 {
                break;
            }
            let (hl, n) = match b[1] & 0x7F {
                126 if b.len() >= 8 => (8, u16::from_be_bytes([b[2], b[3]]) as usize),
                126 | 127 => break,
                n7 => (6, n7 as usize),
            };
            if (hl == 8 && n < 126) || n as u64 > limit || b.len() < hl + n {
                break;
            }
            let key = [b[hl - 4], b[hl - 3], b[hl - 2], b[hl - 1]];
            let text = b[0] & 0x0F == TEXT;
            let payload = &mut b[hl..hl + n];
            mask(payload, key, 0);
            if text && !utf8_ok(payload) {
                mask(payload, key, 0); // as received: decode() reports it (WS-UTF8-1)
                break;
            }
            each(b[0] & 0x0F, &b[hl..hl + n]);
            frames += 1;
            bytes += n as u64;
            pos += hl + n;
        }
        self.buf.advance(pos);
        self.base += pos as u64;
        (frames, bytes)
    }

    /// The close payload checks (WS-CLOSE-1..3), once the frame is complete.
    fn check_close(&mut self, p: &[u8]) -> Result<(), ProtocolError> {
        if p.len() == 1 {
            return Err(self.fail(Violation::WsClose1, "close payload of 1 byte"));
        }
        if p.len() >= 2 {
            let code = u16::from_be_bytes([p[0], p[1]]);
            if !close_code_valid(code) {
                return Err(self.fail(Violation::WsClose2, format!("close code {code}")));
            }
            if !utf8_ok(&p[2..]) {
                return Err(self.fail(Violation::WsClose3, "close reason is not valid UTF-8"));
            }
        }
        Ok(())
    }
}

impl FrameDecoder for WsDecoder {
    type Frame = WsFrame;

    fn extend(&mut self, data: &[u8]) {
        if self.error.is_none() && !self.closed {
            self.buf.extend_from_slice(data);
        }
    }

    fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    fn decode(&mut self) -> Result<Option<WsFrame>, ProtocolError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.closed {
            return Ok(None);
        }
        let mut c = match self.cur.take() {
            Some(c) => c,
            None => match self.header()? {
                Some(c) => c,
                None => return Ok(None),
            },
        };
        self.advance_payload(&mut c)?;
        if c.done < c.len {
            let missing = c.header_len + c.len - self.buf.len();
            self.buf.reserve(missing.min(1 << 20));
            self.cur = Some(c);
            return Ok(None);
        }
        if let Some(u) = c.utf8 {
            if c.fin && !u.is_complete() {
                return Err(self.fail(Violation::WsUtf81, "text message ends inside a code point"));
            }
        }
        if c.opcode == CLOSE {
            let p = self.buf[c.header_len..c.header_len + c.len].to_vec();
            self.check_close(&p)?;
            self.closed = true;
        }
        match c.opcode {
            TEXT | BINARY => {
                self.in_message = !c.fin;
                self.text = c.opcode == TEXT;
                self.size = c.len as u64;
            }
            CONT => {
                self.in_message = !c.fin;
                self.size += c.len as u64;
            }
            _ => {}
        }
        if let Some(u) = c.utf8 {
            self.utf8 = u;
        }
        if c.opcode <= BINARY && c.fin {
            self.in_message = false;
            self.size = 0;
            self.utf8 = Utf8::default();
        }
        // The key is a slice of the buffer, as the payload is: copy_from_slice allocated 4 bytes for
        // every masked frame (1.0 allocation per echoed frame in the server, bench 2026-11-24).
        let key = if c.masked {
            self.buf.advance(c.header_len - 4);
            self.buf.split_to(4).freeze()
        } else {
            self.buf.advance(c.header_len);
            Bytes::new()
        };
        let payload = self.buf.split_to(c.len).freeze();
        self.base += (c.header_len + c.len) as u64;
        if self.closed {
            self.buf = BytesMut::new(); // WS-CLOSE-4: what follows is never read
        }
        Ok(Some(WsFrame {
            fin: c.fin,
            rsv: 0,
            opcode: c.opcode as u32,
            masked: c.masked,
            mask_key: key,
            payload,
        }))
    }

    fn finish(&mut self) -> Result<(), ProtocolError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.closed || self.buf.is_empty() {
            return Ok(());
        }
        let n = self.buf.len();
        Err(self.fail(
            Violation::WsStr3,
            format!("stream ended inside a frame ({n} bytes of it received)"),
        ))
    }
}

/// The `websocket` protocol: role, limits, and the load client's message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebSocket {
    pub role: Role,
    /// Frame limit (`limits.max_payload`, resolved).
    pub max_frame: u64,
    /// Message limit (`websocket.max_message`, resolved).
    pub max_message: u64,
    /// The load client's messages: TEXT or BINARY (`--variant`).
    pub opcode: u8,
}

impl WebSocket {
    pub fn new(role: Role, max_frame: u64, max_message: u64) -> Self {
        let d = WsDecoder::new(role, max_frame, max_message);
        WebSocket {
            role,
            max_frame: d.max_frame,
            max_message: d.max_message,
            opcode: BINARY,
        }
    }

    /// The same protocol in the server role (what `serve` and the network server are).
    fn server(&self) -> WebSocket {
        WebSocket {
            role: Role::Server,
            ..*self
        }
    }
}

fn bytes_value(b: &[u8]) -> Value {
    Value::Array(b.iter().map(|&x| Value::from(x)).collect())
}

impl Protocol for WebSocket {
    const NAME: &'static str = "websocket";
    type Frame = WsFrame;
    type Decoder = WsDecoder;

    fn rewriter(&self, reply: bool) -> Option<Box<dyn ReplyRewriter>> {
        Some(Box::new(WsRewriter {
            state: RewriteState::default(),
            head: Vec::new(),
            opened: false,
            closed: false,
            reply,
        }))
    }
    type Session = WsSession;
    type Client<T: Send + 'static> = WsClient<T>;

    /// `{"protocol": "websocket", "limits": {"max_payload": N}, "websocket": {"role":
    /// "server" | "client", "max_message": M}}`; the role may also be the testee protocol's
    /// enum value (0 or 1 = server, 2 = client).
    fn from_config(cfg: &CodecConfig) -> Result<Self, ConfigError> {
        let mut s = cfg.section(Some("websocket"))?;
        let role = match s.value("role") {
            None => Role::Server,
            Some(Value::String(r)) if r == "server" => Role::Server,
            Some(Value::String(r)) if r == "client" => Role::Client,
            Some(v) if v.as_u64() == Some(0) || v.as_u64() == Some(1) => Role::Server,
            Some(v) if v.as_u64() == Some(2) => Role::Client,
            Some(v) => {
                return Err(ConfigError::Invalid(format!(
                    "codec.websocket.role must be \"server\" or \"client\", not {v}"
                )))
            }
        };
        let max_message = s.u64("max_message", 0)?;
        s.done()?;
        Ok(WebSocket::new(role, cfg.max_payload, max_message))
    }

    fn decoder(&self) -> WsDecoder {
        WsDecoder::new(self.role, self.max_frame, self.max_message)
    }

    fn encode(&self, f: &WsFrame, out: &mut BytesMut) -> Result<(), ProtocolError> {
        encode(out, f, self.max_frame)
    }

    /// Masked binary FIN frames with the seed's key `12 34 56 78`.
    fn bench_requests(
        &self,
        count: usize,
        len: usize,
        out: &mut BytesMut,
        fill: &mut dyn FnMut(u64, &mut [u8]),
    ) -> Result<(), String> {
        for i in 0..count as u64 {
            put_masked_frame(out, BINARY, BENCH_KEY, len, |p| fill(i, p));
        }
        Ok(())
    }

    /// The echo session's reply: an unmasked server frame of the message's opcode.
    fn bench_drain(&self, dec: &mut WsDecoder, each: &mut dyn FnMut(&[u8])) -> u64 {
        dec.drain_complete(|_, p| each(p)).0
    }

    fn bench_reply(&self, request: &WsFrame, out: &mut BytesMut) -> bool {
        put_server_frame(out, request.opcode as u8, &request.payload);
        true
    }

    /// The seed's masking benchmark and the text validation of WS-UTF8-* (tools/bench/microbench.md).
    const BENCH_EXTRA: &'static [(&'static str, usize)] =
        &[("mask", 1024), ("utf8", 67), ("utf8", 71)];

    fn bench_extra(
        &self,
        op: &str,
        payload: usize,
    ) -> Option<(Vec<u8>, crate::protocol::BenchRoutine)> {
        fn mask_once(b: &mut [u8]) -> u64 {
            mask(b, BENCH_KEY, 0);
            b.last().copied().unwrap_or(0) as u64
        }
        fn validate(b: &mut [u8]) -> u64 {
            let mut v = Utf8::default();
            (v.feed(b) && v.is_complete()) as u64
        }
        let text = |t: &str| (t.len() == payload).then(|| t.as_bytes().to_vec());
        match (op, payload) {
            ("mask", 1024) => Some((
                (0..1024).map(|i| i as u8).collect(),
                mask_once as crate::protocol::BenchRoutine,
            )),
            ("utf8", 67) => Some((
                text("Hello World! This is a test message for UTF-8 validation benchmark.")?,
                validate as crate::protocol::BenchRoutine,
            )),
            ("utf8", 71) => Some((
                text("Hello 世界! 这是一个用于 UTF-8 验证的测试消息, mixed ok.")?,
                validate as crate::protocol::BenchRoutine,
            )),
            _ => None,
        }
    }

    fn largest_unit(&self) -> u64 {
        self.max_frame.max(self.max_message)
    }

    fn session(&self, endpoint: &str, sink: bool) -> Result<WsSession, ConfigError> {
        match endpoint {
            "" | "echo" => Ok(WsSession::new(&self.server(), sink, false)),
            other => Err(ConfigError::Unsupported(format!(
                "websocket has no endpoint {other:?} (it has the default one)"
            ))),
        }
    }

    /// The network server's connections start with the opening handshake (§12).
    fn net_session(&self, sink: bool) -> Result<WsSession, ConfigError> {
        Ok(WsSession::new(&self.server(), sink, true))
    }

    fn error_detail(&self, e: &ProtocolError) -> Option<Map<String, Value>> {
        let code = close_code(e.violation)?;
        let mut d = Map::new();
        d.insert("close_code".into(), Value::from(code));
        let mut o = Map::new();
        o.insert("websocket".into(), Value::Object(d));
        Some(o)
    }

    fn client<T: Send + 'static>(&self, timeout: u64) -> WsClient<T> {
        WsClient {
            m: FifoMatcher::new(timeout, usize::MAX),
            keys: Keys::default(),
            proto: *self,
        }
    }

    fn describe(f: &WsFrame) -> FrameFields {
        let mut w = Map::new();
        w.insert("fin".into(), Value::from(f.fin));
        w.insert("rsv".into(), Value::from(f.rsv));
        w.insert("opcode".into(), Value::from(f.opcode));
        w.insert("masked".into(), Value::from(f.masked));
        w.insert("mask_key".into(), bytes_value(&f.mask_key));
        let mut header = Map::new();
        header.insert("websocket".into(), Value::Object(w));
        FrameFields {
            payload: f.payload.clone(),
            header,
        }
    }

    /// The frame of the `websocket` fields; without them, an unmasked binary FIN frame.
    fn frame(&self, fields: FrameFields) -> Result<WsFrame, String> {
        let Some(v) = fields.header.get("websocket").filter(|v| !v.is_null()) else {
            return Ok(WsFrame::server(BINARY, fields.payload));
        };
        let Value::Object(o) = v else {
            return Err("frame field websocket is not an object".into());
        };
        let flag = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
        let sub = FrameFields {
            payload: Bytes::new(),
            header: o.clone(),
        };
        let key = match o.get("mask_key") {
            None | Some(Value::Null) => Bytes::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_u64().filter(|&x| x <= 0xFF).map(|x| x as u8))
                .collect::<Option<Vec<u8>>>()
                .map(Bytes::from)
                .ok_or("websocket.mask_key is not a byte string")?,
            Some(v) => return Err(format!("websocket.mask_key = {v} is not a byte string")),
        };
        Ok(WsFrame {
            fin: flag("fin"),
            rsv: sub.uint("rsv", u32::MAX as u64)? as u32,
            opcode: sub.uint("opcode", u32::MAX as u64)? as u32,
            masked: flag("masked"),
            mask_key: key,
            payload: fields.payload,
        })
    }

    fn payload(f: &WsFrame) -> &[u8] {
        &f.payload
    }

    fn check_request(&self, len: usize) -> Result<(), ProtocolError> {
        if len as u64 > self.max_frame {
            return Err(ProtocolError::new(
                Violation::WsLim3,
                0,
                format!(
                    "payload of {len} bytes above the maximum {}",
                    self.max_frame
                ),
            ));
        }
        Ok(())
    }

    /// Echoes are matched FIFO; the bound only protects memory.
    fn max_in_flight(&self) -> (usize, &'static str) {
        (1 << 20, "WS-ECHO-1")
    }

    /// WS-ECHO-1: one FIN frame with the message's opcode.
    fn check_reply(&self, f: &WsFrame) -> Result<(), String> {
        if !f.fin || f.opcode != self.opcode as u32 || f.masked {
            return Err(format!(
                "echo is opcode 0x{:X} fin {} masked {}, expected an unmasked FIN frame of opcode 0x{:X}",
                f.opcode, f.fin, f.masked, self.opcode
            ));
        }
        Ok(())
    }

    const VARIANTS: &'static [&'static str] = &["binary", "text"];

    fn with_variant(self, variant: &str) -> Self {
        WebSocket {
            opcode: if variant == "text" { TEXT } else { BINARY },
            ..self
        }
    }

    fn client_side(self) -> Self {
        WebSocket {
            role: Role::Client,
            ..self
        }
    }

    fn text_payloads(&self) -> bool {
        self.opcode == TEXT
    }

    fn opening(&self, host: &str) -> Option<Box<dyn crate::protocol::Opening>> {
        Some(Box::new(client_opening(host)))
    }

    fn put_goodbye(&self, out: &mut BytesMut) -> bool {
        let key = Keys::default().key();
        put_masked_frame(out, CLOSE, key, 2, |p| {
            p.copy_from_slice(&1000u16.to_be_bytes())
        });
        true
    }

    fn is_goodbye(f: &WsFrame) -> bool {
        f.opcode == CLOSE as u32
    }
}

// ------------------------------------------------------------------ the server session (§13)

/// The echo service of one connection (after the opening handshake, or starting with it on the
/// network server): every message echoed as one frame as soon as it is complete, pings answered,
/// pongs not, a close answered with its code and closed; an error writes the replies before it,
/// the close frame of its class (WS-ERR-1), and closes. `sink` answers only pings and the close.
#[derive(Debug)]
pub struct WsSession {
    dec: WsDecoder,
    sink: bool,
    closed: bool,
    /// The opening handshake is still to be read.
    opening: bool,
    /// The fragments of a message being reassembled, and its opcode.
    parts: BytesMut,
    opcode: u8,
    /// The client role writes masked frames with keys from here (fp-autobahn-client).
    keys: Option<Keys>,
}

impl WsSession {
    fn new(p: &WebSocket, sink: bool, opening: bool) -> Self {
        WsSession {
            dec: p.decoder(),
            sink,
            closed: false,
            opening,
            parts: BytesMut::new(),
            opcode: BINARY,
            keys: None,
        }
    }

    /// The same echo service in the client role (fp-autobahn-client): unmasked frames in,
    /// masked frames with fresh random keys out (WS-MASK-*); `max` bounds frames and messages.
    pub fn client(max: u64) -> Self {
        let p = WebSocket::new(Role::Client, max, max);
        WsSession {
            keys: Some(Keys::default()),
            ..WsSession::new(&p, false, false)
        }
    }

    /// Appends a FIN frame of this endpoint's role.
    fn put(&mut self, out: &mut BytesMut, opcode: u8, payload: &[u8]) {
        match self.keys.as_mut() {
            None => put_server_frame(out, opcode, payload),
            Some(k) => put_masked_frame(out, opcode, k.key(), payload.len(), |p| {
                p.copy_from_slice(payload)
            }),
        }
    }

    fn close_with(&mut self, s: &mut Served, e: Option<ProtocolError>) {
        self.closed = true;
        s.closed = true;
        s.error = e;
    }

    /// Reads the opening handshake from the buffer; false while it is incomplete.
    fn open(&mut self, out: &mut BytesMut, s: &mut Served) -> bool {
        let buf = self.dec.buffer_mut();
        let (reply, used) = match handshake_reply(buf) {
            None => return false,
            Some(r) => r,
        };
        out.extend_from_slice(&reply.bytes);
        if reply.ok {
            self.dec.skip(used);
            self.opening = false;
            true
        } else {
            let v = reply.violation;
            self.close_with(s, Some(ProtocolError::new(v, 0, reply.why)));
            false
        }
    }

    fn on_frame(&mut self, f: WsFrame, out: &mut BytesMut, s: &mut Served) {
        let op = f.opcode as u8;
        match op {
            PING => self.put(out, PONG, &f.payload),
            PONG => {}
            CLOSE => {
                self.put(out, CLOSE, &f.payload[..f.payload.len().min(2)]);
                self.close_with(s, None);
            }
            _ if self.sink => {}
            _ if op != CONT && f.fin => self.put(out, op, &f.payload),
            _ => {
                if op != CONT {
                    self.opcode = op;
                    self.parts.clear();
                }
                self.parts.extend_from_slice(&f.payload);
                if f.fin {
                    let whole = self.parts.split();
                    let op = self.opcode;
                    self.put(out, op, &whole);
                }
            }
        }
    }
}

impl ServerSession for WsSession {
    fn buffer_mut(&mut self) -> &mut BytesMut {
        self.dec.buffer_mut()
    }

    fn extend(&mut self, data: &[u8]) {
        if !self.closed {
            if self.opening {
                self.dec.buffer_mut().extend_from_slice(data);
            } else {
                self.dec.extend(data);
            }
        }
    }

    fn process(&mut self, out: &mut BytesMut) -> Served {
        let mut s = Served::default();
        if self.closed {
            s.closed = true;
            return s;
        }
        if self.opening && !self.open(out, &mut s) {
            return s;
        }
        loop {
            if self.keys.is_none() {
                // Whole data messages where they lie (the same echo as on_frame's), then the next
                // frame through decode (one completing a partial frame, a control frame, an error).
                let sink = self.sink;
                let (frames, bytes) = self.dec.drain_complete(|op, payload| {
                    if !sink {
                        put_server_frame(out, op, payload)
                    }
                });
                s.frames += frames;
                s.bytes += bytes;
            }
            match self.dec.decode() {
                Ok(Some(f)) => {
                    s.frames += 1;
                    s.bytes += f.payload.len() as u64;
                    self.on_frame(f, out, &mut s);
                    if self.closed {
                        return s;
                    }
                }
                Ok(None) => return s,
                Err(e) => {
                    if let Some(code) = close_code(e.violation) {
                        self.put(out, CLOSE, &code.to_be_bytes());
                    }
                    self.close_with(&mut s, Some(e));
                    return s;
                }
            }
        }
    }

    /// WS-ECHO-3: at EOF nothing more is written; a partial frame is WS-STR-3.
    fn finish(&mut self, out: &mut BytesMut) -> Served {
        let mut s = self.process(out);
        if !s.closed {
            let e = if self.opening {
                None
            } else {
                self.dec.finish().err()
            };
            self.close_with(&mut s, e);
        }
        s
    }

    fn is_closed(&self) -> bool {
        self.closed
    }

    /// The partial frame or handshake in the buffer and the fragments of an unfinished message.
    fn held(&mut self) -> usize {
        self.dec.buffer_mut().len() + self.parts.len()
    }

    fn awaiting_opening(&self) -> bool {
        self.opening && !self.closed
    }
}

// ------------------------------------------------------------------ the opening handshake (§12)

/// `Sec-WebSocket-Accept` for a key (WS-HS-2).
pub fn accept_for(key: &str) -> String {
    let mut h = Sha1::new();
    h.update(key.as_bytes());
    h.update(GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(h.finalize())
}

/// The server's answer to a request head.
#[derive(Debug, Clone)]
pub struct HandshakeReply {
    pub bytes: Vec<u8>,
    /// 101: frames follow.
    pub ok: bool,
    /// Otherwise: the requirement the request broke, and why.
    pub violation: Violation,
    pub why: String,
}

fn status(code: u16, reason: &str, extra: &str, v: Violation, why: String) -> HandshakeReply {
    HandshakeReply {
        bytes: format!(
            "HTTP/1.1 {code} {reason}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .into_bytes(),
        ok: false,
        violation: v,
        why,
    }
}

/// The websocket [`ReplyRewriter`] (fp-raw-echo): the opening handshake answered by
/// [`handshake_reply`], then each masked client frame answered unmasked with the same FIN, RSV
/// and length (WS-ECHO-1 for unfragmented messages, which is what load clients send), a ping with
/// its pong, a close with the same close frame (then the stream is over); pongs get nothing.
/// From the headers only: no UTF-8 check, no reassembly, no validation.
#[derive(Debug)]
pub struct WsRewriter {
    state: RewriteState,
    head: Vec<u8>,
    opened: bool,
    closed: bool,
    reply: bool,
}

/// The websocket header rule of the rewriter: 2 bytes, the extended length, the masking key.
fn ws_rewrite(h: &[u8], out: &mut Vec<u8>, reply: bool, closed: &mut bool) -> Rewrite {
    let n7 = h[1] & 0x7F;
    let ext = match n7 {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let masked = h[1] & 0x80 != 0;
    let hl = 2 + ext + if masked { 4 } else { 0 };
    if h.len() < hl {
        return Rewrite::Need(hl);
    }
    let len = if ext == 0 {
        n7 as u64
    } else {
        h[2..2 + ext].iter().fold(0u64, |a, &b| a << 8 | b as u64)
    };
    let key = masked.then(|| [h[hl - 4], h[hl - 3], h[hl - 2], h[hl - 1]]);
    let op = h[0] & 0x0F;
    // pongs and the close are sent even when only counting, like the servers' --sink
    let answer = match op {
        PONG => None,
        PING => Some(PONG),
        CLOSE => {
            *closed = true;
            Some(CLOSE)
        }
        _ if reply => Some(op),
        _ => None,
    };
    if let Some(a) = answer {
        out.push((h[0] & 0xF0) | a);
        out.push(n7);
        out.extend_from_slice(&h[2..2 + ext]);
    }
    Rewrite::Done {
        payload: len,
        copy: answer.is_some(),
        key,
    }
}

impl ReplyRewriter for WsRewriter {
    fn rewrite(&mut self, input: &[u8], out: &mut Vec<u8>) {
        if self.closed() {
            return; // nothing is read after the close frame (WS-CLOSE-4)
        }
        let frames: Vec<u8>;
        let mut input = input;
        if !self.opened {
            // the request head (bounded: handshake_reply refuses one over MAX_HEAD)
            self.head.extend_from_slice(input);
            let Some((answer, used)) = handshake_reply(&self.head) else {
                return;
            };
            out.extend_from_slice(&answer.bytes);
            if !answer.ok {
                self.closed = true;
                return;
            }
            self.opened = true;
            frames = self.head.split_off(used);
            self.head = Vec::new();
            input = &frames;
        }
        let (reply, closed) = (self.reply, &mut self.closed);
        self.state
            .rewrite(input, out, 2, |h, o| ws_rewrite(h, o, reply, closed), mask);
    }
    fn frames(&self) -> u64 {
        self.state.frames
    }
    fn payload_bytes(&self) -> u64 {
        self.state.payload_bytes
    }
    fn closed(&self) -> bool {
        self.closed && self.state.between_frames()
    }
}

/// The server side of the opening handshake (WS-HS-1..5) over the bytes received so far: `None`
/// while the request head is incomplete, else the reply and the length of the head (frames
/// follow it when the reply is a 101).
pub fn handshake_reply(buf: &[u8]) -> Option<(HandshakeReply, usize)> {
    let bad = |why: String| status(400, "Bad Request", "", Violation::WsHs1, why);
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let used = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
            let r = status(
                431,
                "Request Header Fields Too Large",
                "",
                Violation::WsHs1,
                format!("request head longer than {MAX_HEAD} bytes"),
            );
            return Some((r, buf.len()));
        }
        Ok(httparse::Status::Partial) => return None,
        Err(e) => return Some((bad(format!("malformed request head: {e}")), buf.len())),
    };
    // header values joined as one list per name (a repeated header is a list, RFC 9110 §5.3)
    let values = |name: &str| -> Vec<String> {
        req.headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
            .collect()
    };
    let tokens = |name: &str| -> Vec<String> {
        values(name)
            .iter()
            .flat_map(|v| v.split(',').map(|t| t.trim().to_ascii_lowercase()))
            .filter(|t| !t.is_empty())
            .collect()
    };
    if req.method != Some("GET") || req.version != Some(1) {
        return Some((bad("not an HTTP/1.1 GET".into()), used));
    }
    if values("host").is_empty() {
        return Some((bad("no Host header".into()), used));
    }
    if !tokens("upgrade").iter().any(|t| t == "websocket") {
        return Some((bad("no Upgrade: websocket".into()), used));
    }
    if !tokens("connection").iter().any(|t| t == "upgrade") {
        return Some((bad("Connection does not contain Upgrade".into()), used));
    }
    let keys = values("sec-websocket-key");
    let key = keys.first().cloned().unwrap_or_default();
    let decoded = base64::engine::general_purpose::STANDARD.decode(key.as_bytes());
    if keys.len() != 1 || decoded.map(|k| k.len()) != Ok(16) {
        return Some((
            bad("Sec-WebSocket-Key is not the base64 of 16 bytes".into()),
            used,
        ));
    }
    let version = values("sec-websocket-version");
    if version.len() != 1 || version[0] != "13" {
        let r = status(
            426,
            "Upgrade Required",
            "Sec-WebSocket-Version: 13\r\n",
            Violation::WsHs3,
            format!("Sec-WebSocket-Version {version:?}"),
        );
        return Some((r, used));
    }
    let offered = values("sec-websocket-protocol")
        .iter()
        .any(|v| v.split(',').any(|p| p.trim() == SUBPROTOCOL));
    let extra = if offered {
        format!("Sec-WebSocket-Protocol: {SUBPROTOCOL}\r\n")
    } else {
        String::new()
    };
    let bytes = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Accept: {}\r\n{extra}\r\n",
        accept_for(&key)
    )
    .into_bytes();
    Some((
        HandshakeReply {
            bytes,
            ok: true,
            violation: Violation::WsHs1,
            why: String::new(),
        },
        used,
    ))
}

// ------------------------------------------------------------------ the client side

/// Masking keys from the operating system's CSPRNG (RFC 6455 §5.3, §10.3), fetched 1024 at a
/// time.
#[derive(Debug)]
pub struct Keys {
    buf: Box<[u8; 4096]>,
    pos: usize,
}

impl Default for Keys {
    fn default() -> Self {
        Keys {
            buf: Box::new([0; 4096]),
            pos: 4096,
        }
    }
}

impl Keys {
    pub fn key(&mut self) -> [u8; 4] {
        if self.pos + 4 > self.buf.len() {
            getrandom::fill(&mut self.buf[..]).expect("the operating system's random source");
            self.pos = 0;
        }
        let k = [
            self.buf[self.pos],
            self.buf[self.pos + 1],
            self.buf[self.pos + 2],
            self.buf[self.pos + 3],
        ];
        self.pos += 4;
        k
    }
}

/// The client's opening handshake (reference-impls/README.md, websocket): the request, then the
/// check of the server's 101 and `Sec-WebSocket-Accept`.
#[derive(Debug)]
pub struct ClientOpening {
    request: Vec<u8>,
    accept: String,
}

/// A handshake request for `host`, path `/`, with a fresh random 16-byte key.
pub fn client_opening(host: &str) -> ClientOpening {
    client_opening_to(host, "/")
}

/// A handshake request for `path` on `host` with a fresh random 16-byte key.
pub fn client_opening_to(host: &str, path: &str) -> ClientOpening {
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce).expect("the operating system's random source");
    let key = base64::engine::general_purpose::STANDARD.encode(nonce);
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .into_bytes();
    ClientOpening {
        request,
        accept: accept_for(&key),
    }
}

impl crate::protocol::Opening for ClientOpening {
    fn request(&self) -> &[u8] {
        &self.request
    }

    fn response(&self, buf: &[u8]) -> Result<Option<usize>, String> {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut resp = httparse::Response::new(&mut headers);
        let used = match resp.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
                return Err(format!("handshake response longer than {MAX_HEAD} bytes"))
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(format!("malformed handshake response: {e}")),
        };
        if resp.code != Some(101) {
            return Err(format!(
                "handshake answered {} {}",
                resp.code.unwrap_or(0),
                resp.reason.unwrap_or("")
            ));
        }
        let accept = resp
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("sec-websocket-accept"))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string());
        if accept.as_deref() != Some(self.accept.as_str()) {
            return Err(format!(
                "Sec-WebSocket-Accept {accept:?}, expected {:?}",
                self.accept
            ));
        }
        Ok(Some(used))
    }
}

/// The client side of a websocket connection for a load client: each request a masked FIN
/// message with a fresh key (WS-MASK-3/4), echoes matched FIFO (WS-ECHO-1).
#[derive(Debug)]
pub struct WsClient<T> {
    m: FifoMatcher<T>,
    keys: Keys,
    proto: WebSocket,
}

impl<T> ClientMatcher<T> for WsClient<T> {
    type Frame = WsFrame;

    fn send_request(
        &mut self,
        now: u64,
        tag: T,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        let p = self.proto;
        let key = self.keys.key();
        self.m.send_request(now, tag, || {
            p.check_request(len)?;
            put_masked_frame(out, p.opcode, key, len, fill);
            Ok(())
        })
    }

    fn send_unanswered(
        &mut self,
        len: usize,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), SendError<ProtocolError>> {
        if self.m.is_failed() {
            return Err(SendError::ConnectionFailed);
        }
        self.proto.check_request(len).map_err(SendError::Encode)?;
        let key = self.keys.key();
        put_masked_frame(out, self.proto.opcode, key, len, fill);
        Ok(())
    }

    /// Data frames complete the oldest request; control frames complete nothing.
    fn receive(&mut self, f: &WsFrame) -> Received<T> {
        if self.m.is_failed() {
            return Received::Ignored;
        }
        if f.opcode >= 8 {
            return Received::PeerRequest;
        }
        self.m.receive()
    }

    fn expire(&mut self, now: u64) -> Expired<T> {
        self.m.expire(now)
    }

    fn fail(&mut self) -> Vec<T> {
        self.m.fail()
    }

    fn pending(&self) -> usize {
        self.m.pending()
    }

    fn is_failed(&self) -> bool {
        self.m.is_failed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::hex;

    fn decode_all(role: Role, chunks: &[&[u8]]) -> (Vec<WsFrame>, Option<(&'static str, u64)>) {
        let (f, e) = WsDecoder::new(role, 0, 0).decode_stream(chunks.iter().copied());
        (f, e.map(|e| (e.requirement, e.offset)))
    }

    #[test]
    fn rfc_examples_in_any_split() {
        let masked = hex("81 85 37 fa 21 3d 7f 9f 4d 51 58");
        for cut in 0..=masked.len() {
            let (f, e) = decode_all(Role::Server, &[&masked[..cut], &masked[cut..]]);
            assert_eq!(e, None);
            assert_eq!(&f[0].payload[..], b"Hello");
            assert_eq!(&f[0].mask_key[..], &[0x37, 0xfa, 0x21, 0x3d]);
        }
        let (f, e) = decode_all(Role::Client, &[&hex("01 03 48 65 6c 80 02 6c 6f")]);
        assert_eq!(e, None);
        assert_eq!((f.len(), &f[1].payload[..]), (2, &b"lo"[..]));
        let mut out = BytesMut::new();
        encode(&mut out, &f[0], 0).unwrap();
        assert_eq!(&out[..], &hex("01 03 48 65 6c")[..]);
    }

    #[test]
    fn mask_matches_the_byte_loop_at_every_phase() {
        let key = [1, 2, 0x80, 0xFF];
        for len in [0, 1, 15, 16, 17, 33, 100] {
            for phase in 0..4 {
                let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
                let mut fast = data.clone();
                mask(&mut fast, key, phase);
                let slow: Vec<u8> = data
                    .iter()
                    .enumerate()
                    .map(|(i, b)| b ^ key[(i + phase) % 4])
                    .collect();
                assert_eq!(fast, slow, "len {len} phase {phase}");
            }
        }
    }

    #[test]
    fn utf8_fails_fast_across_fragments() {
        let mut u = Utf8::default();
        assert!(u.feed(b"\xce\xba\xe1"));
        assert!(!u.is_complete());
        assert!(u.feed(b"\xbd"));
        assert!(u.feed(b"\x83"));
        assert!(u.is_complete());
        let mut u = Utf8::default();
        assert!(u.feed(b"\xed"));
        assert!(!u.feed(b"\xa0")); // a surrogate: fails at the second byte
        assert!(!Utf8::default().feed(b"a\xf4\x90"));
        assert!(!Utf8::default().feed(b"\xc0"));
        // a non-final fragment cut after its invalid byte: WS-UTF8-2 before the frame is complete
        let (_, e) = decode_all(Role::Client, &[&hex("01 05 68 ff")]);
        assert_eq!(e, Some(("WS-UTF8-2", 0)));
        let (_, e) = decode_all(Role::Client, &[&hex("81 02 68 e1")]);
        assert_eq!(e, Some(("WS-UTF8-1", 0)));
        // the second fragment completes the code point
        let (f, e) = decode_all(Role::Client, &[&hex("01 01 e1 80 02 bd 83")]);
        assert_eq!((f.len(), e), (2, None));
    }

    #[test]
    fn header_order_and_state() {
        let cases: [(&str, Role, &str); 8] = [
            ("c1 80 00 00 00 00", Role::Server, "WS-HDR-2"),
            ("83 80 00 00 00 00", Role::Server, "WS-HDR-3"),
            ("09 80 00 00 00 00", Role::Server, "WS-CTL-1"),
            ("81 00", Role::Server, "WS-MASK-1"),
            ("81 80 00 00 00 00", Role::Client, "WS-MASK-2"),
            ("89 7e 00 7e", Role::Client, "WS-CTL-2"),
            ("82 7e 00 7d", Role::Client, "WS-LEN-3"),
            ("80 00", Role::Client, "WS-FRAG-2"),
        ];
        for (h, role, want) in cases {
            assert_eq!(decode_all(role, &[&hex(h)]).1, Some((want, 0)), "{want}");
        }
        let (_, e) = decode_all(Role::Client, &[&hex("01 00 02 00")]);
        assert_eq!(e, Some(("WS-FRAG-3", 2)));
        let (_, e) = decode_all(Role::Client, &[&hex("82 7f 80 00 00 00 00 00 00 00")]);
        assert_eq!(e, Some(("WS-LEN-4", 0)));
        let (f, e) =
            WsDecoder::new(Role::Client, 4, 6).decode_stream([&hex("02 04 61 62 63 64 00 03")[..]]);
        assert_eq!(
            (f.len(), e.map(|e| (e.requirement, e.offset))),
            (1, Some(("WS-LIM-2", 6)))
        );
        // a close frame ends the stream; a ping between fragments is delivered
        let (f, e) = decode_all(
            Role::Client,
            &[&hex("01 01 61 89 00 80 01 62 88 02 03 e8 ff")],
        );
        assert_eq!((f.len(), e), (4, None));
        let (_, e) = decode_all(Role::Client, &[&hex("88 02 03 ed")]);
        assert_eq!(e, Some(("WS-CLOSE-2", 0)));
        let (_, e) = decode_all(Role::Client, &[&hex("88 01 03")]);
        assert_eq!(e, Some(("WS-CLOSE-1", 0)));
        let (_, e) = decode_all(Role::Client, &[&hex("82 03 61")]);
        assert_eq!(e, Some(("WS-STR-3", 0)));
    }

    #[test]
    fn session_echoes_pings_and_closes() {
        let p = WebSocket::new(Role::Server, 0, 0);
        let mut s = p.session("", false).unwrap();
        let key = [1, 2, 3, 4];
        let mut wire = BytesMut::new();
        let frag = |out: &mut BytesMut, fin, op, data: &[u8]| {
            out.put_u8(if fin { 0x80 } else { 0 } | op);
            out.put_u8(0x80 | data.len() as u8);
            out.put_slice(&key);
            let at = out.len();
            out.put_slice(data);
            mask(&mut out[at..], key, 0);
        };
        frag(&mut wire, false, TEXT, b"He");
        frag(&mut wire, true, PING, b"p");
        frag(&mut wire, true, CONT, b"llo");
        frag(&mut wire, true, CLOSE, b"\x03\xe8bye");
        s.extend(&wire);
        let mut out = BytesMut::new();
        let r = s.process(&mut out);
        assert_eq!((r.closed, r.error.clone()), (true, None));
        assert_eq!(
            &out[..],
            &hex("8a 01 70 81 05 48 65 6c 6c 6f 88 02 03 e8")[..]
        );
        // an error: the close frame of its class
        let mut s = p.session("", false).unwrap();
        s.extend(&hex("81 00"));
        let mut out = BytesMut::new();
        let r = s.process(&mut out);
        assert_eq!(r.error.unwrap().requirement, "WS-MASK-1");
        assert_eq!(&out[..], &hex("88 02 03 ea")[..]);
    }

    #[test]
    /// fp-raw-echo's rewriter answers the handshake and a well-formed client stream (lengths at
    /// the 7/16/64-bit edges, a ping, a pong, the close) byte for byte as the echo session does,
    /// in any split, and closes after the close frame.
    fn rewriter_answers_like_the_session_in_any_split() {
        let p = WebSocket::new(Role::Server, 0, 0);
        let mut wire = BytesMut::new();
        wire.extend_from_slice(
            b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        );
        let key = [1, 2, 3, 4];
        for (i, len) in [0usize, 5, 125, 126, 65535, 65536, 70001]
            .iter()
            .enumerate()
        {
            let op = if i % 2 == 0 { BINARY } else { TEXT };
            put_masked_frame(&mut wire, op, key, *len, |b| b.fill(b'a' + i as u8));
        }
        put_masked_frame(&mut wire, PING, key, 3, |b| b.copy_from_slice(b"hey"));
        put_masked_frame(&mut wire, PONG, key, 1, |b| b[0] = b'x');
        put_masked_frame(&mut wire, CLOSE, key, 2, |b| {
            b.copy_from_slice(&1000u16.to_be_bytes())
        });
        let mut want = BytesMut::new();
        let mut sess = p.net_session(false).unwrap();
        sess.extend(&wire);
        let served = sess.process(&mut want);
        assert!(served.closed && served.error.is_none());
        for split in [1usize, 2, 3, 7, 100, 4096, wire.len()] {
            let mut w = p.rewriter(true).unwrap();
            let mut got = Vec::new();
            for c in wire.chunks(split) {
                assert!(!w.closed(), "split {split}");
                w.rewrite(c, &mut got);
            }
            assert!(w.closed(), "split {split}");
            assert_eq!(w.frames(), 10, "split {split}");
            assert!(
                got == want[..],
                "split {split}: {} bytes, want {}",
                got.len(),
                want.len()
            );
        }
        // counting only: the handshake, the pong and the close are still answered
        let mut w = p.rewriter(false).unwrap();
        let mut got = Vec::new();
        w.rewrite(&wire, &mut got);
        let hs = want.len() - got.len();
        assert!(
            hs > 0 && got.starts_with(b"HTTP/1.1 101") && got.ends_with(&[0x88, 2, 0x03, 0xE8])
        );
    }

    #[test]
    fn handshake() {
        assert_eq!(
            accept_for("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        let req = "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
Sec-WebSocket-Protocol: chat, frameproof.echo\r\n\r\n\x01";
        assert!(handshake_reply(&req.as_bytes()[..20]).is_none());
        let (r, used) = handshake_reply(req.as_bytes()).unwrap();
        assert!(r.ok);
        assert_eq!(used, req.len() - 1);
        let text = String::from_utf8(r.bytes).unwrap();
        assert!(text.starts_with("HTTP/1.1 101"));
        assert!(text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
        assert!(text.contains("Sec-WebSocket-Protocol: frameproof.echo\r\n"));
        let (r, _) = handshake_reply(req.replace("13", "8").as_bytes()).unwrap();
        assert!(String::from_utf8(r.bytes)
            .unwrap()
            .starts_with("HTTP/1.1 426"));
        let (r, _) = handshake_reply(req.replace("Host: x\r\n", "").as_bytes()).unwrap();
        assert!(String::from_utf8(r.bytes)
            .unwrap()
            .starts_with("HTTP/1.1 400"));
        // the client side accepts the server's answer to its own key
        use crate::protocol::Opening;
        let c = client_opening("127.0.0.1:1");
        let (r, _) = handshake_reply(c.request()).unwrap();
        assert_eq!(c.response(&r.bytes), Ok(Some(r.bytes.len())));
        assert!(c.response(b"HTTP/1.1 400 Bad Request\r\n\r\n").is_err());
    }
}
