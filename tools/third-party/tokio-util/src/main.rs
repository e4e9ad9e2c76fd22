//! fp-tokio-util-testee: the frameproof testee protocol (spec/testee.md, harness version 3:
//! decode, encode and the long stream) around tokio-util's `LengthDelimitedCodec`, a codec
//! nobody in this project wrote.
//!
//! Every message on stdin/stdout is `u32 LE length | protobuf` (schemas/testee.proto). Logs go
//! to stderr only; the process exits 0 at EOF on stdin.
//!
//! This file is glue only: it maps a length-field `Codec` onto a `LengthDelimitedCodec`
//! builder, feeds the chunks to tokio-util's `Decoder`/`Encoder`, and names tokio-util's
//! `io::Error`s with the spec's requirement IDs. It never decides anything about the wire
//! format itself; what tokio-util cannot be configured for is answered `skipped`.

use std::io::{self, BufReader, BufWriter, Read, Write};

use bytes::{Bytes, BytesMut};
use prost::Message;
use tokio_util::codec::length_delimited::Builder;
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec, LengthDelimitedCodecError};

#[allow(clippy::all, dead_code)] // generated code: not every message is used here
mod pb {
    include!(concat!(env!("OUT_DIR"), "/frameproof.testee.v1.rs"));
}

mod long_stream;

use pb::testee_request::Request;
use pb::testee_response::Result as Resp;

/// LF-LIM-1's default maximum payload (spec/length-field.md): 10 MiB.
const DEFAULT_MAX_PAYLOAD: u64 = 10 * 1024 * 1024;
/// Largest request accepted from the runner (a sanity bound, far above any test).
const MAX_MESSAGE: usize = 1 << 30;
const PROTOCOL: &str = "length-field";

fn main() {
    let mut input = BufReader::with_capacity(1 << 16, io::stdin().lock());
    let mut output = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    loop {
        let mut len = [0u8; 4];
        match read_full(&mut input, &mut len) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => die(&format!("reading stdin: {e}")),
        }
        let n = u32::from_le_bytes(len) as usize;
        if n > MAX_MESSAGE {
            die(&format!("message of {n} bytes is too large"));
        }
        let mut msg = vec![0u8; n];
        if !matches!(read_full(&mut input, &mut msg), Ok(true)) {
            die("stdin ended inside a message");
        }
        if let Some(answer) = long_stream::answer(&msg) {
            write_message(&mut output, &answer);
            continue;
        }
        let result = match pb::TesteeRequest::decode(&msg[..]) {
            Ok(req) => std::panic::catch_unwind(|| handle(req)).unwrap_or_else(|p| {
                let what = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into());
                Resp::RuntimeError(format!("panic in glue or tokio-util: {what}"))
            }),
            Err(e) => Resp::RuntimeError(format!("cannot parse TesteeRequest: {e}")),
        };
        let out = pb::TesteeResponse {
            result: Some(result),
        }
        .encode_to_vec();
        write_message(&mut output, &out);
    }
}

/// Writes one answer with its u32 LE length prefix and flushes.
fn write_message(output: &mut impl Write, out: &[u8]) {
    let ok = output
        .write_all(&(out.len() as u32).to_le_bytes())
        .and_then(|_| output.write_all(out))
        .and_then(|_| output.flush());
    if let Err(e) = ok {
        die(&format!("writing stdout: {e}"));
    }
}

fn die(msg: &str) -> ! {
    eprintln!("fp-tokio-util-testee: {msg}");
    std::process::exit(1);
}

/// Fills `buf`; `Ok(false)` on a clean EOF before the first byte.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn handle(req: pb::TesteeRequest) -> Resp {
    match req.request {
        // Harness v3 for the long stream (v3's feature `long-stream`); the features listed are
        // all it offers, so the runner reports every other v2/v3 test (serve, discovery, other
        // protocols) skipped.
        Some(Request::Hello(_)) => Resp::Hello(pb::HelloResponse {
            harness_version: 3,
            name: "tokio-util".into(),
            version: format!("LengthDelimitedCodec (tokio-util 0.7.x), glue {}", env!("CARGO_PKG_VERSION")),
            protocols: vec![PROTOCOL.into()],
            features: vec!["decode".into(), "encode".into(), "long-stream".into()],
        }),
        Some(Request::Decode(d)) => match profile(d.codec.as_ref()) {
            Ok(p) => Resp::Decode(decode(&p, &d.chunks)),
            Err(why) => Resp::Skipped(why),
        },
        Some(Request::Encode(e)) => match profile(e.codec.as_ref()) {
            Ok(p) if p.offset != 0 => Resp::Skipped(format!(
                "offset {}: LengthDelimitedCodec's encoder writes no header bytes before the length field",
                p.offset
            )),
            Ok(p) => Resp::Encode(encode(&p, e.frame.map(|f| f.payload).unwrap_or_default())),
            Err(why) => Resp::Skipped(why),
        },
        Some(Request::Match(_)) => Resp::Skipped(
            "match: LengthDelimitedCodec is a framing codec; it has no client request/reply matching".into(),
        ),
        Some(Request::Serve(_)) => {
            Resp::Skipped("serve: LengthDelimitedCodec is a codec; this glue has no server session".into())
        }
        None => Resp::RuntimeError("empty TesteeRequest".into()),
    }
}

/// A length-field profile LengthDelimitedCodec can be configured for.
pub(crate) struct Profile {
    offset: usize,
    /// Length field bytes: 1, 2 or 4.
    len: usize,
    big_endian: bool,
    /// Configured maximum payload (before tokio-util clips it to the field's capacity).
    max: u64,
}

/// Maps the request's `Codec` onto a profile, or says why tokio-util cannot express it.
pub(crate) fn profile(codec: Option<&pb::Codec>) -> Result<Profile, String> {
    let codec = codec.ok_or("no codec")?;
    if codec.protocol != PROTOCOL {
        return Err(format!(
            "protocol {:?}: this testee wraps LengthDelimitedCodec (length-field only)",
            codec.protocol
        ));
    }
    let (offset, size) = match &codec.params {
        None => (0, 2),
        Some(pb::codec::Params::LengthField(lf)) => (lf.offset, lf.size),
        Some(_) => return Err("parameters of another protocol".into()),
    };
    let (len, big_endian) = match size {
        1 => (1, false),
        2 => (2, false),
        4 => (4, false),
        -2 => (2, true),
        -4 => (4, true),
        0 => return Err("size 0 (LEB128 varint length): LengthDelimitedCodec has fixed-width length fields only".into()),
        s => {
            return Err(format!(
                "size {s} is not a length-field profile; refusing it (LF-FMT-3) is a configuration check \
                 LengthDelimitedCodec does not have (its builder takes any field width of 1 to 8 bytes)"
            ))
        }
    };
    let max = codec
        .limits
        .as_ref()
        .map(|l| l.max_payload)
        .filter(|&m| m != 0)
        .unwrap_or(DEFAULT_MAX_PAYLOAD);
    Ok(Profile {
        offset: offset as usize,
        len,
        big_endian,
        max,
    })
}

pub(crate) fn builder(p: &Profile) -> Builder {
    let mut b = LengthDelimitedCodec::builder();
    b.length_field_offset(p.offset)
        .length_field_length(p.len)
        .length_adjustment(0)
        // Skip the header bytes and the length field: only the payload is delivered (LF-FMT-4).
        .num_skip(p.offset + p.len)
        .max_frame_length(usize::try_from(p.max).unwrap_or(usize::MAX));
    if p.big_endian {
        b.big_endian();
    } else {
        b.little_endian();
    }
    b
}

fn is_frame_too_big(e: &io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.is::<LengthDelimitedCodecError>())
}

pub(crate) fn error(requirement: &str, offset: u64, e: &io::Error) -> pb::ProtocolError {
    pb::ProtocolError {
        requirement: requirement.into(),
        offset,
        message: format!("tokio-util: {e} ({:?})", e.kind()),
        detail: None,
    }
}

/// Names a decoder error. tokio-util's decoder reports an error before it consumes anything
/// of the offending frame, so the error's offset is where that frame starts.
pub(crate) fn classify(e: &io::Error, eof: bool) -> &'static str {
    if is_frame_too_big(e) {
        "LF-LIM-1" // length field above max_frame_length (clipped to the field's capacity)
    } else if eof {
        "LF-STR-3" // decode_eof: "bytes remaining on stream"
    } else {
        "LF-FMT-1" // any other decoder error (none expected with length_adjustment 0)
    }
}

/// Feeds each chunk to one `LengthDelimitedCodec`, calling `decode` until it returns `None`
/// after every chunk, then `decode_eof` once the chunks are done.
fn decode(p: &Profile, chunks: &[Vec<u8>]) -> pb::DecodeResponse {
    let mut codec = builder(p).new_codec();
    let mut buf = BytesMut::new();
    let mut fed = 0usize; // bytes appended to `buf` so far
    let mut frame_start = 0usize; // stream offset where the frame being decoded starts
    let mut frames = Vec::new();
    let mut chunks = chunks.iter();
    loop {
        let chunk = chunks.next();
        let eof = chunk.is_none();
        if let Some(c) = chunk {
            buf.extend_from_slice(c);
            fed += c.len();
        }
        loop {
            let r = if eof {
                codec.decode_eof(&mut buf)
            } else {
                codec.decode(&mut buf)
            };
            match r {
                Ok(Some(f)) => {
                    frames.push(pb::Frame {
                        payload: f.to_vec(),
                        ..Default::default()
                    });
                    // Everything before what is left in the buffer has been consumed.
                    frame_start = fed - buf.len();
                }
                Ok(None) if eof => {
                    return pb::DecodeResponse {
                        frames,
                        error: None,
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let error = Some(error(classify(&e, eof), frame_start as u64, &e));
                    return pb::DecodeResponse { frames, error };
                }
            }
        }
    }
}

/// Encodes one payload with `LengthDelimitedCodec`'s `Encoder<Bytes>`.
fn encode(p: &Profile, payload: Vec<u8>) -> pb::EncodeResponse {
    use pb::encode_response::Result as R;
    let mut codec = builder(p).new_codec();
    let n = payload.len() as u64;
    let mut dst = BytesMut::new();
    match codec.encode(Bytes::from(payload), &mut dst) {
        Ok(()) => pb::EncodeResponse {
            result: Some(R::Encoded(dst.to_vec())),
        },
        Err(e) => {
            // tokio-util refuses with one error for both reasons: max_frame_length is clipped
            // to what the field can represent. Name the reason the spec puts first (§7a).
            let capacity = (1u64 << (8 * p.len)) - 1;
            let requirement = if !is_frame_too_big(&e) {
                "LF-FMT-1"
            } else if n > capacity {
                "LF-LEN-1"
            } else {
                "LF-LIM-2"
            };
            pb::EncodeResponse {
                result: Some(R::Error(error(requirement, 0, &e))),
            }
        }
    }
}
