//! libFuzzer target for the streaming decoders of every protocol.
//!
//! Input layout (conformance/FUZZING.md; the same in the C++ targets and written by
//! `frameproof.fuzz_corpus.corpus_entry`):
//!   byte 0: the protocol: 0 standard, 1 length-field, 2 rpc, 3 websocket; other values: ignored.
//!   byte 1: configuration. bits 5-7: the frame limit (LIMITS; rpc: its max body); the protocol's
//!           own bits: length-field bits 0-3 the profile (PROFILES); websocket bit 0 the role (0
//!           server, 1 client) and bits 1-3 the message limit (LIMITS).
//!   byte 2: chunking. 0: the stream is fed in one chunk; otherwise chunk sizes come from a small
//!           LCG seeded with this byte, each in 1..=(byte % 16) + 1.
//!   rest:   the byte stream.
//!
//! Besides crashes (panics, overflow checks, out-of-memory) the target checks invariants:
//!  1. chunked decode == whole decode (frames and error, STD-STR-1 / LF-STR-1), through `feed`
//!     and through `buffer_mut` + `decode` (the socket-reader path);
//!  2. the delivered frames re-encode to the bytes they were decoded from (encode(decode(x)) == x
//!     for canonical input; header bytes of a length-field offset are ignored, LF-FMT-4, and a
//!     non-minimal varint is allowed, LF-LEN-4), and an error is reported at the offset where the
//!     delivered frames end (STD-STR-4 / LF-STR-4);
//!  3. no delivered payload is above the configured maximum (STD-LIM-1 / LF-LIM-1), and every
//!     error names a requirement of the protocol being decoded.
//! rpc and websocket: the same three (rpc frames re-encode exactly; websocket frames re-encode
//! with their own MASK bit and key, and a close frame ends the stream: bytes after it are never
//! read, WS-CLOSE-4), plus for websocket: no message above the limit, and text messages that
//! complete are valid UTF-8 (WS-UTF8-1).
#![no_main]

use frameproof_codec::length_field::{LengthFieldDecoder, LengthSize, Profile};
use frameproof_codec::rpc::{self, RpcDecoder};
use frameproof_codec::websocket::{self, Role, WsDecoder};
use frameproof_codec::standard::{self, StandardDecoder};
use frameproof_codec::{effective_max, FrameDecoder, ProtocolError};
use libfuzzer_sys::fuzz_target;

const LIMITS: [u64; 8] = [0, 16, 64, 100, 1024, 65535, 70000, 1];
const PROFILES: [(u32, i64); 16] = [
    (0, 2), (0, -2), (0, 4), (0, -4), (0, 1), (0, 0), (2, 2), (4, -4),
    (1, 1), (3, 0), (1, -4), (5, 0), (1, 2), (2, -2), (7, 4), (0, 0),
];

fn chunks(data: &[u8], ctl: u8) -> Vec<&[u8]> {
    if ctl == 0 || data.is_empty() {
        return vec![data];
    }
    let maxc = (ctl as usize % 16) + 1;
    let mut state = ctl as u32;
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        state = state.wrapping_mul(1103515245).wrapping_add(12345);
        let n = (1 + ((state >> 16) as usize % maxc)).min(data.len() - pos);
        out.push(&data[pos..pos + n]);
        pos += n;
    }
    out
}

type Outcome<F> = (Vec<F>, Option<ProtocolError>);

fn run<D: FrameDecoder>(mut d: D, parts: &[&[u8]]) -> Outcome<D::Frame> {
    d.decode_stream(parts.iter().copied())
}

/// The socket-reader path: chunks appended straight to `buffer_mut()` (as fp-server reads into
/// it), then `decode()` until it needs more.
fn run_buffer_mut<D: FrameDecoder>(mut d: D, parts: &[&[u8]]) -> Outcome<D::Frame> {
    let mut frames = Vec::new();
    for p in parts {
        d.buffer_mut().extend_from_slice(p);
        loop {
            match d.decode() {
                Ok(Some(f)) => frames.push(f),
                Ok(None) => break,
                Err(e) => return (frames, Some(e)),
            }
        }
    }
    let e = d.finish().err();
    (frames, e)
}

fn same<F: PartialEq + std::fmt::Debug>(whole: &Outcome<F>, chunked: &Outcome<F>, n: usize) {
    assert_eq!(whole.0, chunked.0, "chunked decode ({n} chunks) delivered other frames than whole decode");
    let (a, b) = (&whole.1, &chunked.1);
    assert_eq!(
        a.as_ref().map(|e| (e.requirement, e.offset)),
        b.as_ref().map(|e| (e.requirement, e.offset)),
        "chunked decode ({n} chunks) reported another error than whole decode"
    );
}

fn check_error(err: &Option<ProtocolError>, consumed: usize, total: usize, prefix: &str) {
    match err {
        Some(e) => {
            assert!(e.requirement.starts_with(prefix), "error {} is not a {prefix} requirement", e.requirement);
            assert_eq!(e.offset, consumed as u64, "error {} at offset {} but the delivered frames end at {consumed}", e.requirement, e.offset);
        }
        None => assert_eq!(consumed, total, "no error, but the frames cover {consumed} of {total} bytes"),
    }
}

fn fuzz_standard(max: u64, data: &[u8], parts: &[&[u8]]) {
    let whole = run(StandardDecoder::new(max), &[data]);
    let chunked = run(StandardDecoder::new(max), parts);
    same(&whole, &chunked, parts.len());
    same(&whole, &run_buffer_mut(StandardDecoder::new(max), parts), parts.len());
    let mut pos = 0;
    for f in &whole.0 {
        assert!(f.payload.len() as u64 <= effective_max(max), "payload of {} bytes above the maximum {}", f.payload.len(), effective_max(max));
        let mut enc = bytes::BytesMut::new();
        standard::encode(&mut enc, f.flag, f.sequence, &f.payload, 0).expect("a decoded frame must encode");
        assert_eq!(&data[pos..pos + enc.len()], &enc[..], "frame at {pos} does not re-encode to its bytes");
        pos += enc.len();
    }
    check_error(&whole.1, pos, data.len(), "STD-");
}

fn fuzz_length_field(offset: u32, size: i64, max: u64, data: &[u8], parts: &[&[u8]]) {
    let p = Profile::new(offset, size).expect("table profiles are valid");
    let whole = run(LengthFieldDecoder::new(p, max), &[data]);
    let chunked = run(LengthFieldDecoder::new(p, max), parts);
    same(&whole, &chunked, parts.len());
    same(&whole, &run_buffer_mut(LengthFieldDecoder::new(p, max), parts), parts.len());
    let cap = p.size.capacity().min(effective_max(max));
    let mut pos = 0;
    for f in &whole.0 {
        assert!(f.len() as u64 <= cap, "payload of {} bytes above the maximum {cap}", f.len());
        let mut enc = bytes::BytesMut::new();
        p.encode(&mut enc, f, 0).expect("a decoded frame must encode");
        let o = offset as usize;
        let mut width = enc.len() - o - f.len();
        if p.size == LengthSize::Varint {
            // a non-minimal varint may be accepted (LF-LEN-4): take the width from the input
            width = data[pos + o..].iter().position(|b| b & 0x80 == 0).expect("varint end") + 1;
            assert!(width <= 5, "varint of {width} bytes accepted");
        } else {
            assert_eq!(&data[pos + o..pos + o + width], &enc[o..o + width], "length field at {} does not re-encode", pos + o);
        }
        let start = pos + o + width;
        assert_eq!(&data[start..start + f.len()], &f[..], "payload at {start} is not the input bytes");
        pos = start + f.len();
    }
    check_error(&whole.1, pos, data.len(), "LF-");
}

fn fuzz_rpc(max: u64, data: &[u8], parts: &[&[u8]]) {
    let whole = run(RpcDecoder::new(max), &[data]);
    same(&whole, &run(RpcDecoder::new(max), parts), parts.len());
    same(&whole, &run_buffer_mut(RpcDecoder::new(max), parts), parts.len());
    let mut pos = 0;
    for f in &whole.0 {
        let mut enc = bytes::BytesMut::new();
        rpc::encode(&mut enc, f, u32::MAX as u64).expect("a decoded frame must encode");
        let body = enc.len() - rpc::HEADER_LEN;
        assert!(body as u64 <= rpc::effective_max_body(max), "body of {body} bytes above the maximum");
        assert_eq!(&data[pos..pos + enc.len()], &enc[..], "frame at {pos} does not re-encode to its bytes");
        pos += enc.len();
    }
    check_error(&whole.1, pos, data.len(), "RPC-");
}

fn fuzz_websocket(role: Role, max: u64, max_message: u64, data: &[u8], parts: &[&[u8]]) {
    let dec = || WsDecoder::new(role, max, max_message);
    let whole = run(dec(), &[data]);
    same(&whole, &run(dec(), parts), parts.len());
    same(&whole, &run_buffer_mut(dec(), parts), parts.len());
    let limit = if max == 0 { websocket::DEFAULT_MAX_FRAME } else { max };
    let message_limit = if max_message == 0 { websocket::DEFAULT_MAX_MESSAGE } else { max_message };
    let mut pos = 0;
    let mut message: Vec<u8> = Vec::new();
    let mut text = false;
    for f in &whole.0 {
        let mut enc = bytes::BytesMut::new();
        websocket::encode(&mut enc, f, u64::MAX).expect("a decoded frame must encode");
        assert_eq!(&data[pos..pos + enc.len()], &enc[..], "frame at {pos} does not re-encode to its bytes");
        pos += enc.len();
        assert!(f.payload.len() as u64 <= limit, "frame payload above the maximum {limit}");
        match f.opcode as u8 {
            websocket::TEXT | websocket::BINARY => {
                text = f.opcode as u8 == websocket::TEXT;
                message = f.payload.to_vec();
            }
            websocket::CONT => message.extend_from_slice(&f.payload),
            _ => continue,
        }
        assert!(message.len() as u64 <= message_limit, "message of {} bytes above the maximum", message.len());
        if f.fin && text {
            assert!(std::str::from_utf8(&message).is_ok(), "a text message that is not UTF-8 was delivered");
        }
    }
    let closed = whole.0.last().is_some_and(|f| f.opcode as u8 == websocket::CLOSE);
    if closed {
        assert!(whole.1.is_none(), "an error after the close frame");
    } else {
        check_error(&whole.1, pos, data.len(), "WS-");
    }
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 3 {
        return;
    }
    let (proto, cfg, ctl, data) = (input[0], input[1], input[2], &input[3..]);
    let max = LIMITS[(cfg >> 5) as usize];
    let parts = chunks(data, ctl);
    match proto {
        0 => fuzz_standard(max, data, &parts),
        1 => {
            let (offset, size) = PROFILES[(cfg & 15) as usize];
            fuzz_length_field(offset, size, max, data, &parts)
        }
        2 => fuzz_rpc(max, data, &parts),
        3 => {
            let role = if cfg & 1 == 1 { Role::Client } else { Role::Server };
            fuzz_websocket(role, max, LIMITS[((cfg >> 1) & 7) as usize], data, &parts)
        }
        _ => {}
    }
});
