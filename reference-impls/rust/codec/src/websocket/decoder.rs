//! The receiving endpoint: frames judged from their header, then the message state, then the payload.

#[allow(unused_imports)]
use super::*;

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
    /// RSV1: the first frame of a compressed message (permessage-deflate).
    rsv1: bool,
}

/// The receiving endpoint: frames and the message layer (§2-§11).
#[derive(Debug)]
pub struct WsDecoder {
    buf: BytesMut,
    /// Stream offset of `buf[0]`.
    base: u64,
    role: Role,
    pub(super) max_frame: u64,
    pub(super) max_message: u64,
    error: Option<ProtocolError>,
    /// A close frame was read: nothing after it is (WS-CLOSE-4).
    closed: bool,
    cur: Option<Current>,
    /// A fragmented message is in progress; its type (text?), size so far and UTF-8 state.
    in_message: bool,
    text: bool,
    size: u64,
    utf8: Utf8,
    /// permessage-deflate was agreed: RSV1 may mark a message's first frame (WSD-FRM-1).
    deflate: bool,
    /// The message in progress is compressed: its UTF-8 and size are checked once inflated.
    compressed: bool,
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
            deflate: false,
            compressed: false,
        }
    }

    /// permessage-deflate was agreed (spec/websocket-deflate.md): RSV1 is read on the first
    /// frame of a data message, and is a protocol error anywhere else (WSD-FRM-2).
    pub fn set_deflate(&mut self, on: bool) {
        self.deflate = on;
    }

    /// Stream offset of the next frame.
    pub fn position(&self) -> u64 {
        self.base
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
        let rsv1 = self.deflate && rsv == 4;
        if rsv1 && op != TEXT && op != BINARY {
            let m = format!("RSV1 on a frame of opcode 0x{op:X} (only a message's first frame)");
            return Err(self.fail(WsdFrm2, m));
        }
        if rsv != 0 && !rsv1 {
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
        // a compressed message's size is checked once inflated (WSD-LIM-1)
        let compressed = rsv1 || (op == CONT && self.compressed);
        if !control && !compressed {
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
            _ if compressed => None, // checked once inflated (WSD-CMP-4)
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
            rsv1,
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
                self.compressed = c.rsv1;
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
            rsv: if c.rsv1 { 4 } else { 0 },
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
