//! The echo service's endpoints (unary and streams, RPC-ECHO-*, RPC-STREAM-*) and the reply rewriter.

#[allow(unused_imports)]
use super::*;

/// Which echo endpoint a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Endpoint {
    /// Not chosen yet: the first frame picks (`RPC-ECHO-7`).
    Auto,
    /// §9.
    Unary,
    /// §10: waiting (`None`) or open with the id of its STREAM_INIT.
    Stream { open: Option<u32> },
}

/// The rpc [`ReplyRewriter`] (fp-raw-echo): a REQUEST becomes the RESPONSE of the echo service
/// (error code 0, its payload), STREAM_INIT its INIT_ACK, STREAM_DATA the same frame with flags 0,
/// STREAM_END its END (`RPC-ECHO-1`, `RPC-STREAM-*`), from the header and the name lengths only:
/// names are not compared, nothing is validated.
#[derive(Debug)]
pub struct RpcRewriter {
    pub(super) state: RewriteState,
    pub(super) reply: bool,
}

/// The rpc header rule of the rewriter: the 16 bytes, then for REQUEST and STREAM_INIT the
/// names (each a u16 length and its bytes, at most the body), which the reply drops.
fn rpc_rewrite(h: &[u8], out: &mut Vec<u8>, reply: bool) -> Rewrite {
    let kind = h[5];
    let body = u32::from_be_bytes([h[12], h[13], h[14], h[15]]) as usize;
    let mut hl = HEADER_LEN;
    if kind == REQUEST || kind == STREAM_INIT {
        // service, then method: [u16 length][bytes] each, clipped to the body (bounded: 128 KiB)
        for _ in 0..2 {
            let end = HEADER_LEN + body;
            if hl + 2 > end {
                hl = end;
                break;
            }
            if h.len() < hl + 2 {
                return Rewrite::Need(hl + 2);
            }
            hl = (hl + 2 + u16::from_be_bytes([h[hl], h[hl + 1]]) as usize).min(end);
        }
        if h.len() < hl {
            return Rewrite::Need(hl);
        }
    }
    let payload = (body - (hl - HEADER_LEN)) as u64;
    let id = u32::from_be_bytes([h[8], h[9], h[10], h[11]]);
    let copy = match kind {
        REQUEST => {
            if reply {
                put_header(
                    out,
                    RESPONSE,
                    (h[6] & MODE_MASK) | END_STREAM,
                    id,
                    2 + payload as usize,
                );
                out.put_u16(CODE_OK);
            }
            reply
        }
        STREAM_INIT | STREAM_END => {
            if reply {
                let k = if kind == STREAM_INIT {
                    STREAM_INIT_ACK
                } else {
                    STREAM_END
                };
                put_header(out, k, 0, id, 0);
            }
            false
        }
        STREAM_DATA => {
            if reply {
                put_header(out, STREAM_DATA, 0, id, payload as usize);
            }
            reply
        }
        _ => false,
    };
    Rewrite::Done {
        payload,
        copy,
        key: None,
    }
}

impl ReplyRewriter for RpcRewriter {
    fn rewrite(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let reply = self.reply;
        self.state.rewrite(
            input,
            out,
            HEADER_LEN,
            |h, o| rpc_rewrite(h, o, reply),
            |_, _, _| {},
        );
    }
    fn frames(&self) -> u64 {
        self.state.frames
    }
    fn payload_bytes(&self) -> u64 {
        self.state.payload_bytes
    }
}

/// The server side of one rpc connection: the unary endpoint, the stream endpoint, or (network
/// server) the one the first frame picks.
#[derive(Debug)]
pub struct RpcSession {
    io: Decoding<RpcDecoder>,
    ep: Endpoint,
    sink: bool,
}

/// Writes a control frame of the stream endpoint (flags 0, empty body).
pub(super) fn put_control(out: &mut BytesMut, kind: u8, id: u32) {
    put_header(out, kind, 0, id, 0);
}

impl RpcSession {
    pub(super) fn new(p: &Rpc, ep: Endpoint, sink: bool) -> Self {
        RpcSession {
            io: Decoding::new(p.decoder()),
            ep,
            sink,
        }
    }

    /// `RPC-ECHO-1`, `RPC-ECHO-2`, `RPC-MODE-2`: the RESPONSE to a REQUEST.
    pub(super) fn unary(f: &RpcFrame, out: &mut BytesMut) {
        Self::unary_reply(f.flags, f.id, &f.service, &f.method, &f.payload, out);
    }

    /// The unary endpoint's RESPONSE to a REQUEST's fields (RPC-ECHO-1..3, RPC-ECHO-8).
    fn unary_reply(
        flags: u8,
        id: u32,
        service: &[u8],
        method: &[u8],
        payload: &[u8],
        out: &mut BytesMut,
    ) {
        // routed by service, method and call mode (RPC-MODE-1): `echo` in every mode,
        // `unary_only` in mode 0 only (RPC-ECHO-8)
        let unary_only = method == UNARY_ONLY_METHOD && flags & MODE_MASK == 0;
        let code = if service != ECHO_SERVICE {
            CODE_SERVICE_NOT_FOUND
        } else if method == ECHO_METHOD || unary_only {
            CODE_OK
        } else {
            CODE_METHOD_NOT_FOUND
        };
        let payload: &[u8] = if code == CODE_OK { payload } else { &[] };
        let flags = (flags & MODE_MASK) | END_STREAM;
        out.reserve(HEADER_LEN + 2 + payload.len());
        put_header(out, RESPONSE, flags, id, 2 + payload.len());
        out.put_u16(code);
        out.put_slice(payload);
    }

    /// `RPC-STREAM-1..7`: the stream endpoint's answer to one frame; returns the new state.
    fn stream(open: Option<u32>, f: &RpcFrame, out: &mut BytesMut) -> Option<u32> {
        let kind = f.kind as u8;
        match open {
            None => {
                if kind == STREAM_INIT && f.service == ECHO_SERVICE && f.method == ECHO_METHOD {
                    put_control(out, STREAM_INIT_ACK, f.id);
                    Some(f.id)
                } else {
                    put_control(out, STREAM_CANCEL, f.id);
                    None
                }
            }
            Some(sid) => match kind {
                STREAM_DATA => {
                    out.reserve(HEADER_LEN + f.payload.len());
                    put_header(out, STREAM_DATA, 0, sid, f.payload.len());
                    out.put_slice(&f.payload);
                    Some(sid)
                }
                STREAM_END => {
                    put_control(out, STREAM_END, sid);
                    None
                }
                STREAM_CANCEL => None,
                _ => {
                    put_control(out, STREAM_CANCEL, sid);
                    None
                }
            },
        }
    }
}

impl ServerSession for RpcSession {
    type Decoder = RpcDecoder;

    fn process_open(&mut self, out: &mut BytesMut, s: &mut Served) {
        loop {
            if matches!(self.ep, Endpoint::Unary | Endpoint::Auto) {
                // Whole REQUEST frames where they lie (the same replies as `unary`), then the
                // next frame through decode.
                let sink = self.sink;
                let (frames, bytes) =
                    self.io
                        .dec
                        .drain_requests(|flags, id, service, method, payload| {
                            if !sink {
                                Self::unary_reply(flags, id, service, method, payload, out)
                            }
                        });
                if frames > 0 {
                    self.ep = Endpoint::Unary;
                }
                s.frames += frames;
                s.bytes += bytes;
            }
            let at = self.io.dec.position();
            let f = match self.io.dec.decode() {
                Ok(Some(f)) => f,
                Ok(None) => return,
                Err(e) => return self.io.close(s, Some(e)),
            };
            s.frames += 1;
            s.bytes += f.payload.len() as u64;
            if self.ep == Endpoint::Auto {
                self.ep = if is_stream_type(f.kind) {
                    Endpoint::Stream { open: None }
                } else {
                    Endpoint::Unary
                };
            }
            if self.sink {
                continue;
            }
            match self.ep {
                Endpoint::Unary if f.kind == REQUEST as u32 => Self::unary(&f, out),
                Endpoint::Unary | Endpoint::Auto => {
                    let e = ProtocolError::new(
                        Violation::RpcEcho4,
                        at,
                        format!("type 0x{:02X} on the unary endpoint", f.kind),
                    );
                    return self.io.close(s, Some(e));
                }
                Endpoint::Stream { open } => {
                    self.ep = Endpoint::Stream {
                        open: Self::stream(open, &f, out),
                    }
                }
            }
        }
    }

    fn io(&self) -> &Decoding<RpcDecoder> {
        &self.io
    }

    fn io_mut(&mut self) -> &mut Decoding<RpcDecoder> {
        &mut self.io
    }
}
