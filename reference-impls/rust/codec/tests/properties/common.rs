//! What the properties share: feeding a stream split into chunks to a decoder or a server
//! session, the serve model, and the payload and split strategies.

use frameproof_codec::protocol::{Protocol, ServerSession};
use frameproof_codec::{FrameDecoder, ProtocolError};
use proptest::prelude::*;

pub(crate) type Outcome<F> = (Vec<F>, Option<ProtocolError>);

/// One standard frame's bytes (the library encodes into the caller's buffer only).
pub(crate) fn std_wire(
    flag: u8,
    sequence: u8,
    payload: &[u8],
    max: u64,
) -> Result<Vec<u8>, ProtocolError> {
    let mut b = bytes::BytesMut::new();
    frameproof_codec::standard::encode(&mut b, flag, sequence, payload, max)?;
    Ok(b.to_vec())
}

/// One length-field frame's bytes under `p`.
pub(crate) fn lf_wire(
    p: frameproof_codec::length_field::Profile,
    payload: &[u8],
    max: u64,
) -> Result<Vec<u8>, ProtocolError> {
    let mut b = bytes::BytesMut::new();
    p.encode(&mut b, payload, max)?;
    Ok(b.to_vec())
}

/// Feeds `data` split at `cuts` (sorted, deduplicated here), then ends the stream.
pub(crate) fn run<D: FrameDecoder>(mut d: D, data: &[u8], cuts: &[usize]) -> Outcome<D::Frame> {
    let ends = chunk_ends(data.len(), cuts);
    let starts = std::iter::once(0).chain(ends.clone());
    d.decode_stream(starts.zip(ends).map(|(a, b)| &data[a..b]))
}

/// Where the chunks of a stream of `len` bytes cut at `cuts` end (sorted, deduplicated, the
/// last one `len`).
pub(crate) fn chunk_ends(len: usize, cuts: &[usize]) -> Vec<usize> {
    let mut ends: Vec<usize> = cuts.iter().map(|&c| c.min(len)).collect();
    ends.push(len);
    ends.sort_unstable();
    ends.dedup();
    ends
}

/// Drops the free-text message so outcomes compare on requirement and offset only.
pub(crate) fn key(e: Option<ProtocolError>) -> Option<(&'static str, u64)> {
    e.map(|e| (e.requirement, e.offset))
}

/// What a server session did with a stream: the bytes written after each chunk (the last entry
/// after EOF), and the close.
pub(crate) type ServeOutcome = (Vec<Vec<u8>>, bool, Option<(&'static str, u64)>);

/// Feeds `data` split at `cuts` to a fresh session of `p`, then signals EOF (stopping early
/// when the session closes), as the testee's `serve` does.
pub(crate) fn serve<P: Protocol>(p: &P, data: &[u8], cuts: &[usize]) -> ServeOutcome {
    let mut s = p.session("", false).unwrap();
    let mut written = Vec::new();
    let mut prev = 0;
    for c in chunk_ends(data.len(), cuts) {
        let mut out = bytes::BytesMut::new();
        s.extend(&data[prev..c]);
        let r = s.process(&mut out);
        written.push(out.to_vec());
        if r.closed {
            return (written, true, key(r.error));
        }
        prev = c;
    }
    let mut out = bytes::BytesMut::new();
    let r = s.finish(&mut out);
    written.push(out.to_vec());
    (written, r.closed, key(r.error))
}

/// The model: decode the whole stream, reply to each frame with `reply`; the error is the
/// decoder's (at EOF included).
pub(crate) fn serve_model<P: Protocol>(
    p: &P,
    data: &[u8],
    reply: impl Fn(&P::Frame) -> Vec<u8>,
) -> (Vec<u8>, Option<(&'static str, u64)>) {
    let (frames, err) = run(p.decoder(), data, &[]);
    (frames.iter().flat_map(reply).collect(), key(err))
}

/// Checks a session against the model for one split: the same bytes in all, the same close,
/// and after each chunk exactly the replies to the frames that chunk completed.
pub(crate) fn check_serve<P: Protocol>(
    p: &P,
    data: &[u8],
    cuts: &[usize],
    reply: impl Fn(&P::Frame) -> Vec<u8> + Copy,
) -> Result<(), TestCaseError> {
    let (written, closed, err) = serve(p, data, cuts);
    let (want, want_err) = serve_model(p, data, reply);
    prop_assert!(closed, "EOF closes");
    prop_assert_eq!(err, want_err);
    prop_assert_eq!(written.concat(), want);
    // Chunk by chunk: the bytes written so far are the replies to the frames complete in the
    // prefix fed so far (a decoder fed the prefix, without EOF).
    let mut so_far: Vec<u8> = Vec::new();
    for (i, c) in chunk_ends(data.len(), cuts)
        .into_iter()
        .enumerate()
        .take(written.len())
    {
        so_far.extend(&written[i]);
        let mut d = p.decoder();
        let (frames, _) = d.feed(&data[..c]);
        let expected: Vec<u8> = frames.iter().flat_map(reply).collect();
        prop_assert_eq!(&so_far, &expected, "after chunk {} (bytes ..{})", i, c);
    }
    Ok(())
}

pub(crate) fn payload_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..64),
        2 => proptest::collection::vec(any::<u8>(), 64..1500),
        1 => (65530usize..65540).prop_map(|n| vec![0xA5; n]),
    ]
}

pub(crate) fn cuts() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0usize..200_000, 0..12)
}
