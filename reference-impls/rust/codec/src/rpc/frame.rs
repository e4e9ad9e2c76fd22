//! Types, flags, codes and the frame with its encoder (spec/rpc.md §2, §3, §9).

#[allow(unused_imports)]
use super::*;

/// The 16-byte header (`RPC-HDR-1`).
pub const HEADER_LEN: usize = 16;
/// `RPC-HDR-2`.
pub const MAGIC: [u8; 4] = *b"GRPC";
/// `RPC-HDR-3`.
pub const VERSION: u8 = 1;
/// Message types (`RPC-HDR-4`).
pub const REQUEST: u8 = 0x01;
pub const RESPONSE: u8 = 0x02;
pub const HEARTBEAT: u8 = 0x03;
pub const ERROR: u8 = 0x04;
pub const STREAM_INIT: u8 = 0x10;
pub const STREAM_INIT_ACK: u8 = 0x11;
pub const STREAM_DATA: u8 = 0x12;
pub const STREAM_END: u8 = 0x13;
pub const STREAM_CANCEL: u8 = 0x14;
/// END_STREAM in the flags byte; the call mode is bits 0-1 (`RPC-HDR-5`).
pub const END_STREAM: u8 = 0x04;
pub const MODE_MASK: u8 = 0x03;
/// Default maximum body: 16 MiB (`RPC-LIM-1`).
pub const DEFAULT_MAX_BODY: u64 = 16 * 1024 * 1024;
/// The conformance echo service (§9, §10).
pub const ECHO_SERVICE: &[u8] = b"frameproof.Echo";
pub const ECHO_METHOD: &[u8] = b"echo";
/// The echo service's method registered for the UNARY call mode (0) only (`RPC-ECHO-8`).
pub const UNARY_ONLY_METHOD: &[u8] = b"unary_only";
/// Error codes the echo endpoint answers with (`RPC-ERR-1`, `RPC-ECHO-2`).
pub const CODE_OK: u16 = 0;
pub const CODE_SERVICE_NOT_FOUND: u16 = 2;
pub const CODE_METHOD_NOT_FOUND: u16 = 3;
/// Bytes a REQUEST to the echo service puts before its payload.
pub const ECHO_NAMES_LEN: usize = 2 + ECHO_SERVICE.len() + 2 + ECHO_METHOD.len();

/// Whether `t` is a type of `RPC-HDR-4`.
pub fn is_known_type(t: u32) -> bool {
    matches!(t, 0x01..=0x04 | 0x10..=0x14)
}

/// STREAM_INIT_ACK, STREAM_END, STREAM_CANCEL: empty body (`RPC-BODY-5`).
pub fn is_control(t: u32) -> bool {
    matches!(t, 0x11 | 0x13 | 0x14)
}

/// REQUEST and STREAM_INIT carry service and method (`RPC-BODY-1`, `RPC-BODY-3`).
pub fn has_names(t: u32) -> bool {
    t == REQUEST as u32 || t == STREAM_INIT as u32
}

/// The stream endpoint's types (`RPC-ECHO-7`).
pub fn is_stream_type(t: u32) -> bool {
    (0x10..=0x14).contains(&t)
}

/// One rpc frame: the header, the typed body fields, and the payload (the bytes after them).
/// `version`, `kind` and `error_code` are wider than on the wire so that a frame to encode can
/// hold a value the encoder must refuse (`RPC-HDR-3`, `RPC-HDR-4`, `RPC-BODY-2`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcFrame {
    pub version: u32,
    /// The message type (header byte 5).
    pub kind: u32,
    pub flags: u8,
    pub reserved: u8,
    pub id: u32,
    /// REQUEST and STREAM_INIT.
    pub service: Bytes,
    pub method: Bytes,
    /// RESPONSE.
    pub error_code: u32,
    pub payload: Bytes,
}

impl RpcFrame {
    /// A frame of type `kind` with version 1, the id, flags, and nothing else.
    pub fn new(kind: u8, flags: u8, id: u32) -> Self {
        RpcFrame {
            version: VERSION as u32,
            kind: kind as u32,
            flags,
            reserved: 0,
            id,
            service: Bytes::new(),
            method: Bytes::new(),
            error_code: 0,
            payload: Bytes::new(),
        }
    }

    /// The plain echo call (a testee `send(p)`, and a frame without rpc fields): a REQUEST to
    /// `frameproof.Echo` / `echo`, UNARY with END_STREAM (`RPC-ID-1`).
    pub fn echo_call(id: u32, payload: Bytes) -> Self {
        RpcFrame {
            service: Bytes::from_static(ECHO_SERVICE),
            method: Bytes::from_static(ECHO_METHOD),
            payload,
            ..RpcFrame::new(REQUEST, END_STREAM, id)
        }
    }

    /// Bytes the typed body fields take before the payload.
    fn body_head_len(&self) -> usize {
        if has_names(self.kind) {
            4 + self.service.len() + self.method.len()
        } else if self.kind == RESPONSE as u32 {
            2
        } else {
            0
        }
    }
}

pub(super) fn refuse(v: Violation, why: String) -> ProtocolError {
    ProtocolError::new(v, 0, why)
}

/// Checks a frame against the encoder's rules (§11 "An encoder that refuses a frame") with the
/// maximum body `max_body` (0 = the default); returns the body length.
pub fn check_encode(f: &RpcFrame, max_body: u64) -> Result<usize, ProtocolError> {
    if f.version != VERSION as u32 {
        return Err(refuse(
            Violation::RpcHdr3,
            format!("version {} (only 1 is written)", f.version),
        ));
    }
    if !is_known_type(f.kind) {
        return Err(refuse(Violation::RpcHdr4, format!("type 0x{:02X}", f.kind)));
    }
    if is_control(f.kind) && !f.payload.is_empty() {
        return Err(refuse(
            Violation::RpcBody5,
            format!("type 0x{:02X} carries no body", f.kind),
        ));
    }
    if has_names(f.kind) && (f.service.len() > 0xFFFF || f.method.len() > 0xFFFF) {
        return Err(refuse(
            Violation::RpcBody6,
            "a service or method name longer than 65535 bytes".into(),
        ));
    }
    if f.kind == RESPONSE as u32 && f.error_code > 0xFFFF {
        return Err(refuse(
            Violation::RpcBody2,
            format!("error code {} above 65535", f.error_code),
        ));
    }
    let n = f.body_head_len() as u64 + f.payload.len() as u64;
    let max = effective_max_body(max_body).min(u32::MAX as u64);
    if n > max {
        return Err(refuse(
            Violation::RpcLim2,
            format!("body of {n} bytes above the maximum {max}"),
        ));
    }
    Ok(n as usize)
}

/// Writes a 16-byte header (no checks).
pub fn put_header(out: &mut impl BufMut, kind: u8, flags: u8, id: u32, body: usize) {
    // One append per header, not one per field.
    let [i0, i1, i2, i3] = id.to_be_bytes();
    let [n0, n1, n2, n3] = (body as u32).to_be_bytes();
    let [m0, m1, m2, m3] = MAGIC;
    out.put_slice(&[
        m0, m1, m2, m3, VERSION, kind, flags, 0, i0, i1, i2, i3, n0, n1, n2, n3,
    ]);
}

/// Appends the encoded frame to `out`, or refuses it without writing anything.
pub fn encode(out: &mut BytesMut, f: &RpcFrame, max_body: u64) -> Result<(), ProtocolError> {
    let n = check_encode(f, max_body)?;
    out.reserve(HEADER_LEN + n);
    out.put_slice(&MAGIC);
    out.put_slice(&[VERSION, f.kind as u8, f.flags, f.reserved]);
    out.put_u32(f.id);
    out.put_u32(n as u32);
    if has_names(f.kind) {
        out.put_u16(f.service.len() as u16);
        out.put_slice(&f.service);
        out.put_u16(f.method.len() as u16);
        out.put_slice(&f.method);
    } else if f.kind == RESPONSE as u32 {
        out.put_u16(f.error_code as u16);
    }
    out.put_slice(&f.payload);
    Ok(())
}
