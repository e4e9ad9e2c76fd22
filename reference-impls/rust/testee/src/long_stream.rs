//! The long stream (spec/testee.md, "long stream", harness v3): one decoder fed a stream this
//! testee makes from the runner's recipe (`cycle` × `repeat`, then `tail`), in reads whose sizes
//! come from splitmix64, hashing each frame's payload as it comes and keeping none. Several GiB
//! pass through one decoder, so stream offsets and buffer arithmetic cross 2^32.

use frameproof_codec::protocol::Protocol;
use frameproof_codec::registry::Visitor;
use frameproof_codec::FrameDecoder;
use sha2::{Digest, Sha256};

use crate::{pb, pb_frame, perr_of};

/// The largest read a recipe may ask for.
const MAX_CHUNK: u32 = 16 << 20;

/// splitmix64 (the generator spec/testee.md gives for the reads' sizes).
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

/// The recipe's stream: `cycle` repeated, then `tail`, read as slices without holding it whole.
struct Stream<'a> {
    cycle: &'a [u8],
    tail: &'a [u8],
    body: u64,
    total: u64,
}

impl<'a> Stream<'a> {
    fn new(r: &'a pb::LongStreamRequest) -> Result<Self, String> {
        let body = (r.cycle.len() as u64)
            .checked_mul(r.repeat)
            .ok_or("cycle x repeat overflows 64 bits")?;
        let total = body
            .checked_add(r.tail.len() as u64)
            .ok_or("the stream's length overflows 64 bits")?;
        Ok(Stream {
            cycle: &r.cycle,
            tail: &r.tail,
            body,
            total,
        })
    }

    /// Appends the stream's bytes `pos .. pos + n` to `out`.
    fn copy(&self, mut pos: u64, n: u64, out: &mut Vec<u8>) {
        let end = pos + n;
        while pos < end {
            let part = if pos < self.body {
                let at = (pos % self.cycle.len() as u64) as usize;
                let take = (self.cycle.len() - at).min((end.min(self.body) - pos) as usize);
                &self.cycle[at..at + take]
            } else {
                let at = (pos - self.body) as usize;
                &self.tail[at..at + (end - pos) as usize]
            };
            out.extend_from_slice(part);
            pos += part.len() as u64;
        }
    }
}

/// The request, run with its codec's protocol by the registry.
pub struct LongStream<'a>(pub &'a pb::LongStreamRequest);

impl Visitor for LongStream<'_> {
    type Output = Result<pb::LongStreamResponse, String>;

    fn visit<P: Protocol>(self, p: P) -> Self::Output {
        let r = self.0;
        if r.cycle.is_empty() || r.max_chunk == 0 || r.max_chunk > MAX_CHUNK {
            return Err(format!(
                "a long stream needs a non-empty cycle and max_chunk 1..{MAX_CHUNK} (got {} and {})",
                r.cycle.len(),
                r.max_chunk
            ));
        }
        let stream = Stream::new(r)?;
        let mut dec = p.decoder();
        let mut rnd = SplitMix64(r.seed);
        let mut hash = Sha256::new();
        let mut chunk = Vec::with_capacity(r.max_chunk as usize);
        let mut out = pb::LongStreamResponse::default();
        let mut last = None;
        while out.fed < stream.total && out.error.is_none() {
            let n = (1 + rnd.next() % u64::from(r.max_chunk)).min(stream.total - out.fed);
            chunk.clear();
            stream.copy(out.fed, n, &mut chunk);
            out.fed += n;
            dec.extend(&chunk);
            loop {
                match dec.decode() {
                    Ok(Some(f)) => {
                        let payload = P::payload(&f);
                        hash.update(payload);
                        out.frames += 1;
                        out.payload_bytes += payload.len() as u64;
                        last = Some(f);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        out.error = Some(perr_of(&p, &e));
                        break;
                    }
                }
            }
        }
        out.digest = hash.finalize().to_vec().into();
        out.last = last.as_ref().map(pb_frame::<P>);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // splitmix64 from state 0 (Vigna's reference implementation's first outputs)
        let mut r = SplitMix64(0);
        assert_eq!(r.next(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn the_stream_is_the_cycle_repeated_then_the_tail() {
        let req = pb::LongStreamRequest {
            cycle: b"abc".to_vec().into(),
            repeat: 3,
            tail: b"XY".to_vec().into(),
            ..Default::default()
        };
        let s = Stream::new(&req).unwrap();
        let mut all = Vec::new();
        for (pos, n) in [(0, 2), (2, 4), (6, 4), (10, 1)] {
            s.copy(pos, n, &mut all);
        }
        assert_eq!(&all, b"abcabcabcXY");
        assert_eq!(s.total, 11);
    }
}
