//! Opcodes, limits, close codes, the frame and its encoder (spec/websocket.md §2, §5, §8, §10, §14).

#[allow(unused_imports)]
use super::*;

pub const CONT: u8 = 0x0;
pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;
pub const CLOSE: u8 = 0x8;
pub const PING: u8 = 0x9;
pub const PONG: u8 = 0xA;
/// Default frame limit (`limits.max_payload`, WS-LIM-1): 10 MiB.
pub const DEFAULT_MAX_FRAME: u64 = 10 * 1024 * 1024;
/// Default message limit (`websocket.max_message`, WS-LIM-2): 100 MiB.
pub const DEFAULT_MAX_MESSAGE: u64 = 100 * 1024 * 1024;
/// The masking key of the micro-benchmarks (tools/bench/microbench.md): fixed, so that every
/// implementation masks the same bytes.
pub const BENCH_KEY: [u8; 4] = [0x12, 0x34, 0x56, 0x78];
/// RFC 6455 §1.3.
pub const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// The conformance echo service's subprotocol (WS-HS-4).
pub const SUBPROTOCOL: &str = "frameproof.echo";
/// The longest opening handshake request head the server reads.
pub const MAX_HEAD: usize = 8192;

pub(super) fn is_opcode(op: u32) -> bool {
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
        | WsFrag3 | WsClose1 | WsClose2 | WsdFrm2 => Some(1002),
        WsUtf81 | WsUtf82 | WsClose3 | WsdCmp3 => Some(1007),
        WsLim1 | WsLim2 | WsdLim1 => Some(1009),
        _ => None,
    }
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

/// Appends a FIN frame: masked with `key` (a client's) or unmasked (a server's).
pub fn put_frame(out: &mut BytesMut, opcode: u8, key: Option<[u8; 4]>, payload: &[u8]) {
    match key {
        None => put_server_frame(out, opcode, payload),
        Some(k) => put_masked_frame(out, opcode, k, payload.len(), |p| {
            p.copy_from_slice(payload)
        }),
    }
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
