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

    /// Reads the opening handshake from the buffer; false while it is incomplete.
    fn open(&mut self, out: &mut BytesMut, s: &mut Served) -> bool {
        let buf = self.io.dec.buffer_mut();
        let (reply, used) = match handshake_reply_at(buf, &self.endpoint) {
            None => return false,
            Some(r) => r,
        };
        out.extend_from_slice(&reply.bytes);
        if reply.ok {
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
            if self.keys.is_none() {
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
        self.io.dec.buffer_mut().len() + self.parts.len()
    }

    fn footprint(&mut self) -> usize {
        self.io.dec.buffer_mut().capacity() + self.parts.capacity()
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
