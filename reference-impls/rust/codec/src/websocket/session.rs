//! The echo service's server session (§13).

#[allow(unused_imports)]
use super::*;

// ------------------------------------------------------------------ the server session (§13)

/// The echo service of one connection (after the opening handshake, or starting with it on the
/// network server): every message echoed as one frame as soon as it is complete, pings answered,
/// pongs not, a close answered with its code and closed; an error writes the replies before it,
/// the close frame of its class (WS-ERR-1), and closes. `sink` answers only pings and the close.
#[derive(Debug)]
pub struct WsSession {
    io: Decoding<WsDecoder>,
    sink: bool,
    /// The opening handshake is still to be read.
    opening: bool,
    /// The fragments of a message being reassembled, and its opcode.
    parts: BytesMut,
    opcode: u8,
    /// The client role writes masked frames with keys from here (fp-autobahn-client).
    keys: Option<Keys>,
    /// The echo service's path and subprotocol (the opening handshake).
    endpoint: Endpoint,
    /// permessage-deflate, when the opening handshake agreed it.
    deflate: Option<Box<DeflateState>>,
}

/// permessage-deflate on one connection (spec/websocket-deflate.md): the inflater of the
/// peer's messages and the compressor of the echoes (their zlib state created at the first
/// compressed message, WSD-LIM-2), and the message being reassembled.
#[derive(Debug)]
pub struct DeflateState {
    inflater: Inflater,
    /// None: the agreed window is one zlib cannot compress with (8 bits, WSD-NEG-4), so the
    /// echoes go uncompressed (WSD-FRM-1 allows it).
    deflater: Option<Deflater>,
    /// The message in progress is compressed (RSV1 on its first frame).
    compressed: bool,
    /// Its bytes: inflated as its frames arrive, or as received; its UTF-8 state once inflated.
    msg: Vec<u8>,
    utf8: Utf8,
    /// An echo's compressed payload.
    scratch: Vec<u8>,
}

/// Buffers above this capacity are given back after each message.
const KEEP: usize = 128 * 1024;

impl DeflateState {
    /// `role`'s side of agreement `a`: the peer's messages inflated with their limit, ours
    /// compressed with our window and context (RFC 7692 §7.1: `server_*` is the server's sending
    /// side, `client_*` the client's).
    pub fn new(a: &Agreement, max_message: u64, role: Role) -> Self {
        let server = (a.server_max_window_bits, a.server_no_context_takeover);
        let client = (a.client_max_window_bits, a.client_no_context_takeover);
        let ((in_bits, in_reset), (out_bits, out_reset)) = match role {
            Role::Server => (client, server),
            Role::Client => (server, client),
        };
        let out_bits = out_bits.unwrap_or(15);
        DeflateState {
            inflater: Inflater::new(in_bits.unwrap_or(15), in_reset, max_message),
            deflater: (out_bits >= 9).then(|| Deflater::new(out_bits, out_reset)),
            compressed: false,
            msg: Vec::new(),
            utf8: Utf8::default(),
            scratch: Vec::new(),
        }
    }

    /// One data frame of a message (`first`: TEXT or BINARY, its RSV1 in `rsv1`): Ok(true) once
    /// the message is complete in `msg`; an error is the connection's (WSD-CMP-3/4, WSD-LIM-1).
    pub fn frame(
        &mut self,
        first: bool,
        rsv1: bool,
        text: bool,
        fin: bool,
        payload: &[u8],
        at: u64,
    ) -> Result<bool, ProtocolError> {
        if first {
            self.msg.clear();
            self.compressed = rsv1;
            self.utf8 = Utf8::default();
            if rsv1 {
                self.inflater.begin(&self.msg);
            }
        }
        if !self.compressed {
            self.msg.extend_from_slice(payload); // checked by the decoder (UTF-8, size)
            return Ok(fin);
        }
        let from = self.msg.len();
        let r = self.inflater.feed(payload, &mut self.msg);
        let r = r.and_then(|()| match fin {
            true => self.inflater.finish(&mut self.msg),
            false => Ok(()),
        });
        if let Err(e) = r {
            self.release();
            let v = match e.code {
                1009 => Violation::WsdLim1,
                _ => Violation::WsdCmp3,
            };
            return Err(ProtocolError::new(v, at, e.reason));
        }
        if text && (!self.utf8.feed(&self.msg[from..]) || (fin && !self.utf8.is_complete())) {
            self.release();
            let v = if fin {
                Violation::WsUtf81
            } else {
                Violation::WsUtf82
            };
            return Err(ProtocolError::new(
                v,
                at,
                "inflated text is not valid UTF-8",
            ));
        }
        Ok(fin)
    }

    /// Appends the echo of the complete message as one frame, masked with `key` (the client
    /// role) or not: compressed with RSV1 set (WSD-FRM-1), or as it is where there is no
    /// compressor or where the compressed payload would be longer than the message (the
    /// compressor then reset, [`Deflater::payload`], WSD-FRM-3).
    pub fn echo(&mut self, out: &mut BytesMut, opcode: u8, key: Option<[u8; 4]>) {
        let at = out.len();
        self.scratch.clear();
        let compressed = match self.deflater.as_mut() {
            Some(d) => d.payload(&self.msg, &mut self.scratch),
            None => false,
        };
        let payload = if compressed { &self.scratch } else { &self.msg };
        put_frame(out, opcode, key, payload);
        if compressed {
            out[at] |= 0x40; // RSV1 (WSD-FRM-1)
        }
    }

    /// Sends a message of `len` bytes written by `fill` as one masked frame (the load client),
    /// compressed as [`Self::echo`] does.
    pub fn send(
        &mut self,
        out: &mut BytesMut,
        opcode: u8,
        key: [u8; 4],
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) {
        self.msg.clear();
        self.msg.resize(len, 0);
        fill(&mut self.msg);
        self.echo(out, opcode, Some(key));
        self.release();
    }

    /// The complete message (after [`Self::frame`] returned true).
    pub fn message(&self) -> &[u8] {
        &self.msg
    }

    /// The message is done: its buffers emptied (given back when large).
    pub fn release(&mut self) {
        self.msg.clear();
        if self.msg.capacity() > KEEP {
            self.msg = Vec::new();
        }
        self.scratch.clear();
        if self.scratch.capacity() > KEEP {
            self.scratch = Vec::new();
        }
    }

    /// Bytes of an unfinished message.
    pub fn held(&self) -> usize {
        self.msg.len()
    }

    /// The buffers' capacity.
    pub fn footprint(&self) -> usize {
        self.msg.capacity() + self.scratch.capacity()
    }

    /// The zlib state (WSD-LIM-2).
    pub fn cost(&self) -> usize {
        self.inflater.cost() + self.deflater.as_ref().map_or(0, Deflater::cost)
    }
}

impl WsSession {
    pub(super) fn new(p: &WebSocket, sink: bool, opening: bool) -> Self {
        WsSession {
            io: Decoding::new(p.decoder()),
            sink,
            opening,
            parts: BytesMut::new(),
            opcode: BINARY,
            keys: None,
            endpoint: p.endpoint,
            deflate: None,
        }
    }

    /// The same echo service in the client role (fp-autobahn-client): unmasked frames in,
    /// masked frames with fresh random keys out (WS-MASK-*); `max` bounds frames and messages.
    pub fn client(max: u64) -> Self {
        Self::client_with(max, None)
    }

    /// [`WsSession::client`] on a connection whose opening agreed permessage-deflate `deflate`
    /// ([`ClientOpening::agreement`]): the server's messages inflated, the echoes compressed
    /// with the client's window and context.
    pub fn client_with(max: u64, deflate: Option<Agreement>) -> Self {
        let p = WebSocket::new(Role::Client, max, max);
        let mut s = WsSession {
            keys: Some(Keys::default()),
            ..WsSession::new(&p, false, false)
        };
        if let Some(a) = &deflate {
            s.io.dec.set_deflate(true);
            let max = s.io.dec.max_message;
            s.deflate = Some(Box::new(DeflateState::new(a, max, Role::Client)));
        }
        s
    }

    /// Appends a FIN frame of this endpoint's role.
    fn put(&mut self, out: &mut BytesMut, opcode: u8, payload: &[u8]) {
        let key = self.keys.as_mut().map(Keys::key);
        put_frame(out, opcode, key, payload);
    }

    /// Reads the opening handshake from the buffer; false while it is incomplete.
    fn open(&mut self, out: &mut BytesMut, s: &mut Served) -> bool {
        let buf = self.io.dec.buffer_mut();
        let (reply, used) = match handshake_reply_at(buf, &self.endpoint) {
            None => return false,
            Some(r) => r,
        };
        out.extend_from_slice(&reply.bytes);
        if reply.ok {
            if let Some(a) = &reply.deflate {
                self.io.dec.set_deflate(true);
                let max = self.io.dec.max_message;
                self.deflate = Some(Box::new(DeflateState::new(a, max, Role::Server)));
            }
            self.io.dec.skip(used);
            self.opening = false;
            true
        } else {
            let v = reply.violation;
            self.io.close(s, Some(ProtocolError::new(v, 0, reply.why)));
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
                self.io.close(s, None);
            }
            _ if self.deflate.is_some() => self.on_data_deflate(f, out, s),
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

impl WsSession {
    /// A data frame with permessage-deflate agreed: reassembled (inflated where compressed), the
    /// complete message echoed compressed; an inflating error closes with its code.
    fn on_data_deflate(&mut self, f: WsFrame, out: &mut BytesMut, s: &mut Served) {
        let op = f.opcode as u8;
        if op != CONT {
            self.opcode = op;
        }
        let at = self.io.dec.position();
        let Some(d) = self.deflate.as_mut() else {
            return;
        };
        let text = self.opcode == TEXT;
        match d.frame(op != CONT, f.rsv & 4 != 0, text, f.fin, &f.payload, at) {
            Ok(true) => {
                if !self.sink {
                    d.echo(out, self.opcode, self.keys.as_mut().map(Keys::key));
                }
                d.release();
            }
            Ok(false) => {}
            Err(e) => {
                if let Some(code) = close_code(e.violation) {
                    self.put(out, CLOSE, &code.to_be_bytes());
                }
                self.io.close(s, Some(e));
            }
        }
    }
}

impl ServerSession for WsSession {
    type Decoder = WsDecoder;

    /// The handshake's bytes go to the buffer as they are; the frames' through the decoder.
    fn extend(&mut self, data: &[u8]) {
        if self.opening && !self.io.closed {
            self.io.dec.buffer_mut().extend_from_slice(data);
        } else {
            self.io.extend(data);
        }
    }

    fn process_open(&mut self, out: &mut BytesMut, s: &mut Served) {
        if self.opening && !self.open(out, s) {
            return;
        }
        loop {
            if self.keys.is_none() && self.deflate.is_none() {
                // Whole data messages where they lie (the same echo as on_frame's), then the next
                // frame through decode (one completing a partial frame, a control frame, an error).
                let sink = self.sink;
                let (frames, bytes) = self.io.dec.drain_complete(|op, payload| {
                    if !sink {
                        put_server_frame(out, op, payload)
                    }
                });
                s.frames += frames;
                s.bytes += bytes;
            }
            match self.io.dec.decode() {
                Ok(Some(f)) => {
                    s.frames += 1;
                    s.bytes += f.payload.len() as u64;
                    self.on_frame(f, out, s);
                    if self.io.closed {
                        return;
                    }
                }
                Ok(None) => return,
                Err(e) => {
                    if let Some(code) = close_code(e.violation) {
                        self.put(out, CLOSE, &code.to_be_bytes());
                    }
                    return self.io.close(s, Some(e));
                }
            }
        }
    }

    /// WS-ECHO-3: at EOF nothing more is written; a partial frame is WS-STR-3 (an unfinished
    /// handshake closes without an error).
    fn finish(&mut self, out: &mut BytesMut) -> Served {
        let mut s = self.process(out);
        if !s.closed {
            let e = if self.opening {
                None
            } else {
                self.io.dec.finish().err()
            };
            self.io.close(&mut s, e);
        }
        s
    }

    /// The partial frame or handshake in the buffer and the fragments of an unfinished message.
    fn held(&mut self) -> usize {
        let d = self.deflate.as_ref().map_or(0, |d| d.held());
        self.io.dec.buffer_mut().len() + self.parts.len() + d
    }

    fn footprint(&mut self) -> usize {
        let d = self.deflate.as_ref().map_or(0, |d| d.footprint());
        self.io.dec.buffer_mut().capacity() + self.parts.capacity() + d
    }

    fn state_cost(&mut self) -> usize {
        self.deflate.as_ref().map_or(0, |d| d.cost())
    }

    fn awaiting_opening(&self) -> bool {
        self.opening && !self.io.closed
    }

    fn io(&self) -> &Decoding<WsDecoder> {
        &self.io
    }

    fn io_mut(&mut self) -> &mut Decoding<WsDecoder> {
        &mut self.io
    }
}
