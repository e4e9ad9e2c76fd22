//! The long stream (spec/testee.md, "long stream", harness v3) through one `LengthDelimitedCodec`:
//! the runner's recipe (`cycle` x `repeat`, then `tail`) is made here, fed in reads whose sizes
//! come from splitmix64, each frame's payload hashed as it comes and none kept. Several GiB pass
//! through tokio-util's decoder, so its buffer arithmetic and this glue's offsets cross 2^32.
//!
//! Glue only, as main.rs: the decoding is tokio-util's `Decoder::decode`, called as `decode`
//! calls it after each chunk. No `decode_eof` at the end: the spec says a partial frame left when
//! the stream ends is not an error here.

use bytes::BytesMut;
use prost::Message;
use sha2::{Digest, Sha256};
use tokio_util::codec::Decoder;

use crate::pb;
use crate::{builder, classify, error, profile};

/// The largest read a recipe may ask for (schemas/testee.proto: `max_chunk` 1 .. 16 MiB).
const MAX_CHUNK: u32 = 16 << 20;

/// The answer to a `TesteeLongStreamRequest` (field 7 alone), or `None` for any other request.
pub fn answer(msg: &[u8]) -> Option<Vec<u8>> {
    let Ok(pb::TesteeLongStreamRequest {
        long_stream: Some(r),
    }) = pb::TesteeLongStreamRequest::decode(msg)
    else {
        return None;
    };
    let mut out = pb::TesteeLongStreamResponse::default();
    match profile(r.codec.as_ref()) {
        Err(why) => out.skipped = why,
        Ok(p) => match std::panic::catch_unwind(|| run(&p, &r)) {
            Ok(Ok(resp)) => out.long_stream = Some(resp),
            Ok(Err(why)) => out.runtime_error = why,
            Err(_) => out.runtime_error = "panic in glue or tokio-util during the long stream".into(),
        },
    }
    Some(out.encode_to_vec())
}

/// splitmix64, the generator spec/testee.md gives for the reads' sizes.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Appends the stream's bytes `pos .. pos + n` to `buf` (the cycle repeated up to `body`, then
/// the tail), without ever holding the stream whole.
fn copy(cycle: &[u8], tail: &[u8], body: u64, mut pos: u64, n: u64, buf: &mut BytesMut) {
    let end = pos + n;
    while pos < end {
        let part = if pos < body {
            let at = (pos % cycle.len() as u64) as usize;
            let take = (cycle.len() - at).min((end.min(body) - pos) as usize);
            &cycle[at..at + take]
        } else {
            let at = (pos - body) as usize;
            &tail[at..at + (end - pos) as usize]
        };
        buf.extend_from_slice(part);
        pos += part.len() as u64;
    }
}

fn run(p: &crate::Profile, r: &pb::LongStreamRequest) -> Result<pb::LongStreamResponse, String> {
    if r.cycle.is_empty() || r.max_chunk == 0 || r.max_chunk > MAX_CHUNK {
        return Err(format!(
            "a long stream needs a non-empty cycle and max_chunk 1..{MAX_CHUNK} (got {} and {})",
            r.cycle.len(),
            r.max_chunk
        ));
    }
    let body = (r.cycle.len() as u64)
        .checked_mul(r.repeat)
        .ok_or("cycle x repeat overflows 64 bits")?;
    let total = body
        .checked_add(r.tail.len() as u64)
        .ok_or("the stream's length overflows 64 bits")?;
    let mut codec = builder(p).new_codec();
    let mut buf = BytesMut::new();
    let mut rnd = SplitMix64(r.seed);
    let mut hash = Sha256::new();
    let mut out = pb::LongStreamResponse::default();
    let mut last = None;
    // Stream offset where the frame being decoded starts: everything before the bytes left in
    // the buffer once a frame is delivered (main.rs's decode counts it the same way).
    let mut frame_start = 0u64;
    while out.fed < total && out.error.is_none() {
        let n = (1 + rnd.next() % u64::from(r.max_chunk)).min(total - out.fed);
        copy(&r.cycle, &r.tail, body, out.fed, n, &mut buf);
        out.fed += n;
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(f)) => {
                    hash.update(&f);
                    out.frames += 1;
                    out.payload_bytes += f.len() as u64;
                    frame_start = out.fed - buf.len() as u64;
                    last = Some(f);
                }
                Ok(None) => break,
                Err(e) => {
                    out.error = Some(error(classify(&e, false), frame_start, &e));
                    break;
                }
            }
        }
    }
    out.digest = hash.finalize().to_vec();
    out.last = last.map(|f| pb::Frame {
        payload: f.to_vec(),
        ..Default::default()
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // Vigna's splitmix64 from state 0: its first outputs.
        let mut r = SplitMix64(0);
        assert_eq!(r.next(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn the_stream_is_the_cycle_repeated_then_the_tail() {
        let mut buf = BytesMut::new();
        for (pos, n) in [(0, 2), (2, 4), (6, 4), (10, 1)] {
            copy(b"abc", b"XY", 9, pos, n, &mut buf);
        }
        assert_eq!(&buf[..], b"abcabcabcXY");
    }
}
