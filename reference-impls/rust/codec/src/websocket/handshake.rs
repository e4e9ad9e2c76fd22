//! The opening handshake (§12), the server side and the reply rewriter.

#[allow(unused_imports)]
use super::*;

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
    /// permessage-deflate as agreed in the 101 (only where the endpoint enables it).
    pub deflate: Option<Agreement>,
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
        deflate: None,
    }
}

/// The websocket [`ReplyRewriter`] (fp-raw-echo): the opening handshake answered by
/// [`handshake_reply`], then each masked client frame answered unmasked with the same FIN, RSV
/// and length (WS-ECHO-1 for unfragmented messages, which is what load clients send), a ping with
/// its pong, a close with the same close frame (then the stream is over); pongs get nothing.
/// From the headers only: no UTF-8 check, no reassembly, no validation.
#[derive(Debug)]
pub struct WsRewriter {
    pub(super) state: RewriteState,
    pub(super) head: Vec<u8>,
    pub(super) opened: bool,
    pub(super) closed: bool,
    pub(super) reply: bool,
    pub(super) endpoint: Endpoint,
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
            // header-only rewriting cannot compress: permessage-deflate is always declined here
            let ep = Endpoint {
                permessage_deflate: false,
                ..self.endpoint
            };
            let Some((answer, used)) = handshake_reply_at(&self.head, &ep) else {
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

/// The echo service a server offers (codec JSON `websocket.path`, `websocket.subprotocol`;
/// spec/websocket.md §13): `path` `None` serves any request target, else only that one (another
/// gets 404, RFC 6455 §4.2.2); `subprotocol` `None` is `frameproof.echo`, selected when offered;
/// `permessage_deflate` (`websocket.permessage_deflate`, default false): the first acceptable
/// permessage-deflate offer is accepted (spec/websocket-deflate.md), else every offer is declined.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Endpoint {
    pub path: Option<&'static str>,
    pub subprotocol: Option<&'static str>,
    pub permessage_deflate: bool,
}

impl Endpoint {
    /// The subprotocol the echo service speaks (WS-HS-4).
    pub fn echo_subprotocol(&self) -> &'static str {
        self.subprotocol.unwrap_or(SUBPROTOCOL)
    }
}

/// [`handshake_reply_at`] for the default echo service (any path, `frameproof.echo`).
pub fn handshake_reply(buf: &[u8]) -> Option<(HandshakeReply, usize)> {
    handshake_reply_at(buf, &Endpoint::default())
}

/// The server side of the opening handshake (WS-HS-1..5) over the bytes received so far: `None`
/// while the request head is incomplete, else the reply and the length of the head (frames
/// follow it when the reply is a 101).
pub fn handshake_reply_at(buf: &[u8], ep: &Endpoint) -> Option<(HandshakeReply, usize)> {
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
    if let Some(path) = ep.path {
        if req.path != Some(path) {
            let why = format!(
                "no echo service at {:?} (it is at {path:?})",
                req.path.unwrap_or("")
            );
            return Some((status(404, "Not Found", "", Violation::WsHs1, why), used));
        }
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
    let sub = ep.echo_subprotocol();
    let offered = values("sec-websocket-protocol")
        .iter()
        .any(|v| v.split(',').any(|p| p.trim() == sub));
    let mut extra = if offered {
        format!("Sec-WebSocket-Protocol: {sub}\r\n")
    } else {
        String::new()
    };
    let deflate = if ep.permessage_deflate {
        accept(&values("sec-websocket-extensions"))
    } else {
        None // WS-HS-5: every offer declined
    };
    if let Some(a) = &deflate {
        extra.push_str(&format!("Sec-WebSocket-Extensions: {}\r\n", a.header()));
    }
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
            deflate,
        },
        used,
    ))
}
