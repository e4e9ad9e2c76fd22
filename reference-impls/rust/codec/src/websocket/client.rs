//! The client side: masking keys, the opening request, the load client's matcher.

#[allow(unused_imports)]
use super::*;
use crate::protocol::{send_fifo, Keep, Payload, SendResult};

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
    /// The subprotocol offered, the only one the answer may name (RFC 6455 §4.1 point 6).
    offered: Option<String>,
    /// The permessage-deflate offer made ([`CLIENT_OFFER`]), if any.
    deflate: Option<Offer>,
    /// What the server's answer agreed to (set by a complete, right answer).
    agreed: std::cell::Cell<Option<Agreement>>,
}

/// A handshake request for `host`, path `/`, with a fresh random 16-byte key.
pub fn client_opening(host: &str) -> ClientOpening {
    client_opening_to(host, "/")
}

/// A handshake request for `path` on `host` with a fresh random 16-byte key.
pub fn client_opening_to(host: &str, path: &str) -> ClientOpening {
    client_opening_offering(host, path, None)
}

/// A handshake request for `path` on `host` offering `subprotocol` (`websocket.subprotocol`).
pub fn client_opening_offering(host: &str, path: &str, subprotocol: Option<&str>) -> ClientOpening {
    client_opening_with(host, path, subprotocol, false)
}

/// A handshake request for `path` on `host` offering `subprotocol` and, with `deflate`
/// (`websocket.permessage_deflate`), permessage-deflate ([`CLIENT_OFFER`]); after a right answer
/// [`ClientOpening::agreement`] says what the server accepted.
pub fn client_opening_with(
    host: &str,
    path: &str,
    subprotocol: Option<&str>,
    deflate: bool,
) -> ClientOpening {
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce).expect("the operating system's random source");
    let key = base64::engine::general_purpose::STANDARD.encode(nonce);
    let mut offer = subprotocol
        .map(|p| format!("Sec-WebSocket-Protocol: {p}\r\n"))
        .unwrap_or_default();
    let deflate = deflate.then_some(CLIENT_OFFER);
    if let Some(o) = &deflate {
        offer.push_str(&format!("Sec-WebSocket-Extensions: {}\r\n", o.header()));
    }
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{offer}\r\n"
    )
    .into_bytes();
    ClientOpening {
        request,
        accept: accept_for(&key),
        offered: subprotocol.map(str::to_string),
        deflate,
        agreed: std::cell::Cell::new(None),
    }
}

impl ClientOpening {
    /// permessage-deflate as the server's answer agreed it (None: not offered, or declined).
    pub fn agreement(&self) -> Option<Agreement> {
        self.agreed.get()
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
        let agreed = check_upgrade_headers(resp.headers, self.offered.as_deref(), self.deflate)?;
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
        self.agreed.set(agreed);
        Ok(Some(used))
    }

    fn negotiated(&self) -> Option<String> {
        self.agreement().map(|a| a.header())
    }
}

/// The checks of a 101 answer besides its accept key (WS-HS-7, RFC 6455 §4.1 points 2, 3, 5, 6):
/// `Upgrade: websocket` and an `upgrade` token in `Connection` (names and values in any case,
/// `Connection` a token list, possibly over repeated headers), no extension unless the client
/// offered permessage-deflate (then the answer's is checked, WSD-NEG-5, and is what the client
/// follows) and no subprotocol but the one it offered, if any.
fn check_upgrade_headers(
    headers: &[httparse::Header<'_>],
    offered: Option<&str>,
    deflate: Option<Offer>,
) -> Result<Option<Agreement>, String> {
    let values = |name: &'static str| {
        headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    if !values("upgrade").any(|v| v.eq_ignore_ascii_case("websocket")) {
        return Err("handshake answer without 'Upgrade: websocket'".into());
    }
    let upgrade_token = values("connection")
        .any(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("upgrade")));
    if !upgrade_token {
        return Err("handshake answer without an 'upgrade' token in Connection".into());
    }
    let agreed = match &deflate {
        Some(offer) => {
            let v: Vec<String> = values("sec-websocket-extensions").collect();
            check_response(offer, &v)
                .map_err(|e| format!("permessage-deflate response refused (WSD-NEG-5): {e}"))?
        }
        None => None,
    };
    for name in ["sec-websocket-extensions", "sec-websocket-protocol"] {
        if name == "sec-websocket-extensions" && deflate.is_some() {
            continue; // checked above
        }
        let named = values(name).find(|v| !v.is_empty());
        if name == "sec-websocket-protocol" && named.is_some() && named.as_deref() == offered {
            continue; // the one subprotocol offered, selected
        }
        if let Some(v) = named {
            return Err(format!(
                "handshake answer with {name} {v:?}, which was not asked for"
            ));
        }
    }
    Ok(agreed)
}

/// The client side of a websocket connection for a load client: each request a masked FIN
/// message with a fresh key (WS-MASK-3/4), echoes matched FIFO (WS-ECHO-1).
#[derive(Debug)]
pub struct WsClient<T> {
    pub(super) m: FifoMatcher<T>,
    pub(super) keys: Keys,
    pub(super) proto: WebSocket,
    /// permessage-deflate agreed: requests compressed, echoes inflated (the session's state).
    pub(super) deflate: Option<Box<DeflateState>>,
}

impl<T> ClientMatcher<T> for WsClient<T> {
    type Frame = WsFrame;
    type Matcher = FifoMatcher<T>;

    fn send_payload(
        &mut self,
        keep: Keep<T>,
        p: Payload<'_, impl FnOnce(&mut [u8])>,
    ) -> SendResult {
        let ws = self.proto;
        let keys = &mut self.keys;
        let deflate = &mut self.deflate;
        send_fifo(&mut self.m, keep, || {
            ws.check_request(p.len)?;
            let Payload { len, out, fill } = p;
            match deflate {
                None => put_masked_frame(out, ws.opcode, keys.key(), len, fill),
                Some(d) => d.send(out, ws.opcode, keys.key(), len, fill),
            }
            Ok(())
        })
    }

    /// A compressed echo (RSV1) inflated into one frame without RSV1; 1007/1009-class failures
    /// (WSD-CMP-3, WSD-LIM-1, WSD-CMP-4) and a fragmented compressed echo are errors.
    fn incoming(&mut self, f: &WsFrame) -> Result<Option<WsFrame>, String> {
        let Some(d) = self.deflate.as_mut() else {
            return Ok(None);
        };
        if f.rsv & 4 == 0 || f.opcode >= 8 {
            return Ok(None);
        }
        if !f.fin {
            return Err("a compressed echo in more than one frame".into());
        }
        let text = f.opcode == u32::from(TEXT);
        let r = d.frame(true, true, text, true, &f.payload, 0);
        let inflated = r.map(|_| Bytes::copy_from_slice(d.message()));
        d.release();
        let payload = inflated.map_err(|e| format!("the echo does not inflate: {e}"))?;
        Ok(Some(WsFrame {
            rsv: 0,
            payload,
            ..f.clone()
        }))
    }

    /// Data frames complete the oldest request; control frames complete nothing.
    fn receive(&mut self, f: &WsFrame) -> Received<T> {
        if self.m.is_failed() {
            return Received::Ignored;
        }
        if f.opcode == u32::from(PONG) {
            return Received::Ignored; // unsolicited: accepted, not answered (WS-PING-2)
        }
        if f.opcode >= 8 {
            return Received::PeerRequest;
        }
        self.m.receive()
    }

    fn matcher(&self) -> &FifoMatcher<T> {
        &self.m
    }

    fn matcher_mut(&mut self) -> &mut FifoMatcher<T> {
        &mut self.m
    }
}
