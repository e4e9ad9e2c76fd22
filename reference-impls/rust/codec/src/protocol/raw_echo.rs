//! The raw echo baseline (fp-raw-echo, tools/bench): the ceiling a codec server is measured
//! against, reading only headers.

#[allow(unused_imports)]
use super::*;

/// Walks a byte stream frame by frame by reading only the headers: no buffering, no copies,
/// no validation. It counts frames and payload bytes and, with `reply`, turns each request into
/// its echo reply in place where the protocol allows that (`standard`: set bit 7 of the flag).
/// It is the ceiling any codec server is measured against (fp-raw-echo), not a server.
pub trait HeaderWalker: Send {
    /// The next bytes of the stream, in any split.
    fn walk(&mut self, buf: &mut [u8]);
    /// Complete frames so far, and the payload bytes they declared.
    fn frames(&self) -> u64;
    fn payload_bytes(&self) -> u64;
}

/// The state every [`HeaderWalker`] keeps: the header bytes seen so far and the payload bytes
/// left of the current frame. A protocol supplies the header length and its decoding.
#[derive(Debug, Default)]
pub struct WalkState {
    hdr: [u8; 8],
    have: usize,
    remaining: u64,
    pub frames: u64,
    pub payload_bytes: u64,
}

/// What a protocol's header parser says about the header bytes seen so far.
pub enum HeaderStep {
    /// This many header bytes are needed in all.
    Need(usize),
    /// The header is complete and declares this payload length.
    Payload(u64),
}

impl WalkState {
    /// Walks `buf`. `header(bytes)` classifies the header bytes seen so far (at least
    /// `first` of them, at most 8); `on_first(byte)` may rewrite the first byte of each frame.
    pub fn walk(
        &mut self,
        buf: &mut [u8],
        first: usize,
        header: impl Fn(&[u8]) -> HeaderStep,
        on_first: impl Fn(&mut u8),
    ) {
        let n = buf.len();
        let mut need = first;
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
            if self.have == 0 {
                on_first(&mut buf[i]);
            }
            self.hdr[self.have] = buf[i];
            self.have += 1;
            i += 1;
            if self.have < need.max(first) {
                continue;
            }
            match header(&self.hdr[..self.have]) {
                HeaderStep::Need(k) => need = k,
                HeaderStep::Payload(len) => {
                    self.have = 0;
                    need = first;
                    self.payload_bytes += len;
                    self.remaining = len;
                    if len == 0 {
                        self.frames += 1;
                    }
                }
            }
        }
    }
}

/// The ceiling for protocols whose replies are not their requests with a byte changed (rpc: a
/// RESPONSE with an error code for a REQUEST with names; websocket: unmasked frames for masked
/// ones, after the opening handshake). Like a [`HeaderWalker`] it reads only headers and never
/// validates; the replies go to a reused output buffer, so each payload is copied once, as it is
/// in every codec server, and nothing is allocated per frame. It assumes the well-formed request
/// stream of the load clients; it is fp-raw-echo's, not a server.
pub trait ReplyRewriter: Send {
    /// The next bytes of the stream, in any split: the replies to what completes are appended to
    /// `out` (with `reply` false only what a server sends even when it only counts: websocket's
    /// handshake answer, pongs and its close).
    fn rewrite(&mut self, input: &[u8], out: &mut Vec<u8>);
    /// Frames whose payload has been seen in full, and the payload bytes they declared.
    fn frames(&self) -> u64;
    fn payload_bytes(&self) -> u64;
    /// The peer's stream is over for this protocol (websocket: its close frame was answered, or
    /// the opening handshake refused): the echo stops reading and closes.
    fn closed(&self) -> bool {
        false
    }
}

/// What a protocol's header rule says about the header bytes a [`RewriteState`] has so far.
pub enum Rewrite {
    /// This many header bytes are needed in all (more than there are).
    Need(usize),
    /// The header is complete and its reply header appended. `payload` bytes follow: copied to
    /// the reply when `copy` (XOR-unmasked with `key`, starting at key octet 0, when given),
    /// skipped otherwise.
    Done {
        payload: u64,
        copy: bool,
        key: Option<[u8; 4]>,
    },
}

/// The state every [`ReplyRewriter`] keeps: a header split across reads (held until complete;
/// a protocol bounds its header length), and the payload left of the current frame.
#[derive(Debug, Default)]
pub struct RewriteState {
    stash: Vec<u8>,
    need: usize,
    left: u64,
    copy: bool,
    key: Option<[u8; 4]>,
    phase: usize,
    pub frames: u64,
    pub payload_bytes: u64,
}

impl RewriteState {
    /// Between frames: no payload left, no header begun.
    pub fn between_frames(&self) -> bool {
        self.left == 0 && self.stash.is_empty()
    }

    /// Rewrites `input` into `out`. `first`: the header bytes any header has; `header(bytes, out)`
    /// judges the header bytes so far and, once complete, appends the reply header; `unmask` is
    /// the protocol's XOR (key, phase).
    pub fn rewrite(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        first: usize,
        mut header: impl FnMut(&[u8], &mut Vec<u8>) -> Rewrite,
        unmask: impl Fn(&mut [u8], [u8; 4], usize),
    ) {
        let n = input.len();
        let mut i = 0;
        while i < n {
            if self.left > 0 {
                let take = self.left.min((n - i) as u64) as usize;
                if self.copy {
                    let at = out.len();
                    out.extend_from_slice(&input[i..i + take]);
                    if let Some(k) = self.key {
                        unmask(&mut out[at..], k, self.phase);
                    }
                }
                self.phase += take;
                i += take;
                self.left -= take as u64;
                if self.left == 0 {
                    self.frames += 1;
                }
                continue;
            }
            let need = self.need.max(first);
            // The usual case: the whole header is in this read, judged where it lies.
            let step = if self.stash.is_empty() {
                let avail = &input[i..];
                if avail.len() < need {
                    self.stash.extend_from_slice(avail);
                    i = n;
                    continue;
                }
                let r = header(&avail[..need], out);
                if let Rewrite::Done { .. } = r {
                    i += need;
                }
                r
            } else {
                let take = (need - self.stash.len()).min(n - i);
                self.stash.extend_from_slice(&input[i..i + take]);
                i += take;
                if self.stash.len() < need {
                    continue;
                }
                let r = header(&self.stash, out);
                if let Rewrite::Done { .. } = r {
                    self.stash.clear();
                }
                r
            };
            match step {
                Rewrite::Need(k) => self.need = k.max(need + 1), // judged again with more bytes
                Rewrite::Done { payload, copy, key } => {
                    self.need = 0;
                    self.payload_bytes += payload;
                    self.left = payload;
                    self.copy = copy;
                    self.key = key;
                    self.phase = 0;
                    if payload == 0 {
                        self.frames += 1;
                    }
                }
            }
        }
    }
}
