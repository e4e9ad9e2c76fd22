//! The decoder: the 16-byte header judged when complete, the body fields when the body is.

#[allow(unused_imports)]
use super::*;

/// Streaming decoder (`RPC-STR-*`): the header is judged once its 16 bytes are there (§11:
/// magic, version, type, a control frame's body, the limit), the body fields once the whole body
/// is; the payload and names are slices of the receive buffer (no copy).
#[derive(Debug)]
pub struct RpcDecoder {
    buf: BytesMut,
    /// Stream offset of `buf[0]`.
    base: u64,
    max: u64,
    error: Option<ProtocolError>,
}

impl RpcDecoder {
    /// A decoder with the given maximum body (0 = the 16 MiB default).
    pub fn new(max_body: u64) -> Self {
        RpcDecoder {
            buf: BytesMut::new(),
            base: 0,
            max: effective_max_body(max_body),
            error: None,
        }
    }

    /// Stream offset of the first byte not yet delivered (the next frame's start).
    pub fn position(&self) -> u64 {
        self.base
    }

    fn fail(&mut self, v: Violation, message: String) -> ProtocolError {
        let e = ProtocolError::new(v, self.base, message);
        self.error = Some(e.clone());
        e
    }

    /// Judges the complete header at the start of the buffer; returns the body length.
    fn header(&mut self) -> Result<usize, ProtocolError> {
        let b = &self.buf[..HEADER_LEN];
        let (version, kind) = (b[4], b[5] as u32);
        let n = u32::from_be_bytes([b[12], b[13], b[14], b[15]]) as u64;
        if b[..4] != MAGIC {
            let m = format!("magic {:02X?}", &b[..4]);
            return Err(self.fail(Violation::RpcHdr2, m));
        }
        if version != VERSION {
            return Err(self.fail(Violation::RpcHdr3, format!("version {version}")));
        }
        if !is_known_type(kind) {
            return Err(self.fail(Violation::RpcHdr4, format!("type 0x{kind:02X}")));
        }
        if is_control(kind) && n != 0 {
            return Err(self.fail(
                Violation::RpcBody5,
                format!("type 0x{kind:02X} with a body of {n} bytes"),
            ));
        }
        if n > self.max {
            let m = format!("body of {n} bytes above the maximum {}", self.max);
            return Err(self.fail(Violation::RpcLim1, m));
        }
        Ok(n as usize)
    }
}

impl RpcDecoder {
    /// Calls `each(flags, id, service, method, payload)` for the complete, valid REQUEST frames at
    /// the front of the buffer, borrowed where they lie, then drops them from the buffer at once;
    /// returns (frames, payload bytes). Stops before any other frame (another type, an unfinished
    /// or invalid one: left for [`FrameDecoder::decode`], which classifies it) and after a failed
    /// stream. The unary endpoint's in-place path.
    pub fn drain_requests(
        &mut self,
        mut each: impl FnMut(u8, u32, &[u8], &[u8], &[u8]),
    ) -> (u64, u64) {
        if self.error.is_some() {
            return (0, 0);
        }
        let b = &self.buf[..];
        let (mut pos, mut frames, mut bytes) = (0usize, 0u64, 0u64);
        while let Some(h) = b.get(pos..pos + HEADER_LEN) {
            let n = u32::from_be_bytes([h[12], h[13], h[14], h[15]]) as u64;
            if h[..4] != MAGIC || h[4] != VERSION || h[5] != REQUEST || n > self.max {
                break;
            }
            let Some(body) = b.get(pos + HEADER_LEN..pos + HEADER_LEN + n as usize) else {
                break;
            };
            if check_names(body).is_err() {
                break;
            }
            let sl = u16::from_be_bytes([body[0], body[1]]) as usize;
            let ml = u16::from_be_bytes([body[2 + sl], body[3 + sl]]) as usize;
            let payload = &body[4 + sl + ml..];
            let id = u32::from_be_bytes([h[8], h[9], h[10], h[11]]);
            each(
                h[6],
                id,
                &body[2..2 + sl],
                &body[4 + sl..4 + sl + ml],
                payload,
            );
            frames += 1;
            bytes += payload.len() as u64;
            pos += HEADER_LEN + n as usize;
        }
        self.buf.advance(pos);
        self.base += pos as u64;
        (frames, bytes)
    }
}

/// Resolves "0 means the default" for the maximum body.
pub fn effective_max_body(max_body: u64) -> u64 {
    if max_body == 0 {
        DEFAULT_MAX_BODY
    } else {
        max_body
    }
}

/// Splits a REQUEST / STREAM_INIT body that passed [`check_names`] into service, method and
/// payload, as slices of the body.
fn names(body: &Bytes) -> (Bytes, Bytes, Bytes) {
    let sl = u16::from_be_bytes([body[0], body[1]]) as usize;
    let ml = u16::from_be_bytes([body[2 + sl], body[3 + sl]]) as usize;
    (
        body.slice(2..2 + sl),
        body.slice(4 + sl..4 + sl + ml),
        body.slice(4 + sl + ml..),
    )
}

impl FrameDecoder for RpcDecoder {
    type Frame = RpcFrame;

    fn extend(&mut self, data: &[u8]) {
        if self.error.is_none() {
            self.buf.extend_from_slice(data);
        }
    }

    fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    fn decode(&mut self) -> Result<Option<RpcFrame>, ProtocolError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let n = self.header()?;
        if self.buf.len() < HEADER_LEN + n {
            // Room for the rest of this frame only, at most 1 MiB at a time (RPC-LIM-3).
            let missing = HEADER_LEN + n - self.buf.len();
            self.buf.reserve(missing.min(1 << 20));
            return Ok(None);
        }
        let h = &self.buf[..HEADER_LEN];
        let mut f = RpcFrame {
            version: h[4] as u32,
            kind: h[5] as u32,
            flags: h[6],
            reserved: h[7],
            id: u32::from_be_bytes([h[8], h[9], h[10], h[11]]),
            service: Bytes::new(),
            method: Bytes::new(),
            error_code: 0,
            payload: Bytes::new(),
        };
        let body = self.buf[HEADER_LEN..HEADER_LEN + n].as_ref();
        if has_names(f.kind) {
            // judged before anything is consumed: the error is at the frame's start
            let v = if f.kind == REQUEST as u32 {
                Violation::RpcBody1
            } else {
                Violation::RpcBody3
            };
            if let Err(why) = check_names(body) {
                return Err(self.fail(v, why.into()));
            }
        } else if f.kind == RESPONSE as u32 && n < 2 {
            return Err(self.fail(
                Violation::RpcBody2,
                format!("RESPONSE body of {n} bytes, shorter than its error code"),
            ));
        }
        self.buf.advance(HEADER_LEN);
        let body = self.buf.split_to(n).freeze();
        self.base += (HEADER_LEN + n) as u64;
        if has_names(f.kind) {
            let (s, m, p) = names(&body);
            f.service = s;
            f.method = m;
            f.payload = p;
        } else if f.kind == RESPONSE as u32 {
            f.error_code = u16::from_be_bytes([body[0], body[1]]) as u32;
            f.payload = body.slice(2..);
        } else {
            f.payload = body;
        }
        Ok(Some(f))
    }

    fn finish(&mut self) -> Result<(), ProtocolError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if !self.buf.is_empty() {
            let n = self.buf.len();
            return Err(self.fail(
                Violation::RpcStr3,
                format!("stream ended inside a frame ({n} bytes of it received)"),
            ));
        }
        Ok(())
    }
}

/// `RPC-BODY-1`: the name fields of a REQUEST / STREAM_INIT body fit in it.
fn check_names(body: &[u8]) -> Result<(), &'static str> {
    let n = body.len();
    if n < 2 {
        return Err("no service length");
    }
    let sl = u16::from_be_bytes([body[0], body[1]]) as usize;
    if 2 + sl + 2 > n {
        return Err("service name beyond the body");
    }
    let ml = u16::from_be_bytes([body[2 + sl], body[3 + sl]]) as usize;
    if 4 + sl + ml > n {
        return Err("method name beyond the body");
    }
    Ok(())
}
