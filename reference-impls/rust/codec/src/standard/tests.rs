use super::*;

use crate::testutil::{hex, std_wire};

fn decode_all(chunks: &[&[u8]], max: u64) -> (Vec<StdFrame>, Option<ProtocolError>) {
    StandardDecoder::new(max).decode_stream(chunks.iter().copied())
}

#[test]
fn worked_examples_encode_and_decode() {
    let cases: &[(u8, u8, &[u8], &str)] = &[
        (0x01, 1, b"Open", "01 01 04 00 4F 70 65 6E"),
        (
            0x81,
            1,
            "执行成功".as_bytes(),
            "81 01 0C 00 E6 89 A7 E8 A1 8C E6 88 90 E5 8A 9F",
        ),
        (0x81, 1, b"OK", "81 01 02 00 4F 4B"),
        (0x41, 1, b"abc", "41 01 03 00 61 62 63"),
        (0xC1, 1, b"abc", "C1 01 03 00 61 62 63"),
        (0x01, 1, b"", "01 01 00 00"),
    ];
    for (flag, seq, payload, bytes) in cases {
        let wire = hex(bytes);
        assert_eq!(std_wire(*flag, *seq, payload, 0).unwrap(), wire);
        let (frames, err) = decode_all(&[&wire], 0);
        assert_eq!(err, None);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].flag, *flag);
        assert_eq!(frames[0].sequence, *seq);
        assert_eq!(&frames[0].payload[..], *payload);
    }
}

#[test]
fn flag_bits_are_reported() {
    let (frames, _) = decode_all(&[&hex("C1 01 03 00 61 62 63")], 0);
    assert!(frames[0].is_reply());
    assert_eq!(frames[0].flag, 0xC1);
    let (frames, _) = decode_all(&[&hex("3F 07 00 00")], 0);
    assert!(!frames[0].is_reply());
    assert_eq!(frames[0].flag, 0x3F);
}

#[test]
fn length_boundaries() {
    for (n, head) in [
        (65534usize, "01 01 FE FF"),
        (65535, "01 01 FF FF FF FF 00 00"),
        (70000, "01 01 FF FF 70 11 01 00"),
    ] {
        let payload: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        let wire = std_wire(0x01, 1, &payload, 0).unwrap();
        let h = hex(head);
        assert_eq!(&wire[..h.len()], &h[..], "header for {n}");
        assert_eq!(wire.len(), h.len() + n);
        let (frames, err) = decode_all(&[&wire], 0);
        assert_eq!(err, None);
        assert_eq!(&frames[0].payload[..], &payload[..]);
    }
}

#[test]
fn sticky_packet() {
    let mut wire = std_wire(0x01, 0x10, b"sticky-first-message", 0).unwrap();
    wire.extend(std_wire(0x01, 0x11, b"sticky-second-message", 0).unwrap());
    assert_eq!(wire.len(), 49);
    assert_eq!(&wire[..4], &hex("01 10 14 00")[..]);
    let (frames, err) = decode_all(&[&wire], 0);
    assert_eq!(err, None);
    assert_eq!(frames.len(), 2);
    assert_eq!(&frames[0].payload[..], b"sticky-first-message");
    assert_eq!(frames[1].sequence, 0x11);
    assert_eq!(&frames[1].payload[..], b"sticky-second-message");
}

#[test]
fn split_inside_extended_header() {
    let payload = vec![7u8; 65535];
    let wire = std_wire(0x02, 9, &payload, 0).unwrap();
    for cut in 1..9 {
        let (frames, err) = decode_all(&[&wire[..cut], &wire[cut..]], 0);
        assert_eq!(err, None, "cut {cut}");
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].payload.len(), 65535);
    }
}

#[test]
fn non_canonical_extended_is_std_len_3() {
    // A valid frame first, so the offset of the offending frame is 6.
    let mut wire = hex("01 01 02 00 41 42");
    wire.extend(hex("01 02 FF FF FE FF 00 00"));
    let (frames, err) = decode_all(&[&wire], 0);
    assert_eq!(frames.len(), 1);
    let err = err.unwrap();
    assert_eq!((err.requirement, err.offset), ("STD-LEN-3", 6));
    // Zero extended length too.
    let (_, err) = decode_all(&[&hex("01 01 FF FF 00 00 00 00")], 0);
    assert_eq!(err.unwrap().requirement, "STD-LEN-3");
}

#[test]
fn bit_31_is_std_len_4_even_above_max() {
    let (frames, err) = decode_all(&[&hex("01 01 FF FF 00 00 00 80")], 0);
    assert!(frames.is_empty());
    let err = err.unwrap();
    assert_eq!((err.requirement, err.offset), ("STD-LEN-4", 0));
}

#[test]
fn oversize_rejected_at_header_time() {
    // 10 MiB + 1 declared; only the header is sent and no end of stream: the error must
    // come from the header alone.
    let mut d = StandardDecoder::new(0);
    d.extend(&hex("01 05 FF FF 01 00 A0 00"));
    let e = d.decode().unwrap_err();
    assert_eq!((e.requirement, e.offset), ("STD-LIM-1", 0));
    assert!(
        d.buffer_mut().capacity() < 1 << 16,
        "must not reserve the promised size"
    );
    // Exactly the maximum is fine.
    let mut d = StandardDecoder::new(0);
    d.extend(&hex("01 05 FF FF 00 00 A0 00"));
    assert_eq!(d.decode(), Ok(None));
    // A configured small maximum applies to the short form too.
    let (_, err) = decode_all(&[&hex("01 01 0B 00")], 10);
    assert_eq!(err.unwrap().requirement, "STD-LIM-1");
    let (frames, err) = decode_all(&[&hex("01 01 0A 00"), &[0u8; 10]], 10);
    assert_eq!((frames.len(), err), (1, None));
}

#[test]
fn precedence_len_before_lim() {
    // Non-canonical and (with max 10) also above the maximum: LEN-3 wins.
    let (_, err) = decode_all(&[&hex("01 01 FF FF 00 01 00 00")], 10);
    assert_eq!(err.unwrap().requirement, "STD-LEN-3");
}

#[test]
fn truncation_is_std_str_3_at_frame_start() {
    let good = hex("01 01 02 00 41 42");
    for partial in [
        hex("01"),
        hex("01 01 05"),
        hex("01 01 05 00 61"),
        hex("01 01 FF FF"),
        hex("01 01 FF FF FF"),
    ] {
        let mut wire = good.clone();
        wire.extend(&partial);
        let (frames, err) = decode_all(&[&wire], 0);
        assert_eq!(frames.len(), 1);
        let err = err.unwrap();
        assert_eq!((err.requirement, err.offset), ("STD-STR-3", 6));
    }
    // Oversize declared and truncated: LIM-1 has precedence.
    let (_, err) = decode_all(&[&hex("01 01 0B 00 00")], 10);
    assert_eq!(err.unwrap().requirement, "STD-LIM-1");
}

#[test]
fn no_frame_after_error() {
    let mut wire = hex("01 01 FF FF 00 00 00 00");
    wire.extend(hex("01 01 00 00"));
    let mut d = StandardDecoder::new(0);
    let (frames, err) = d.feed(&wire);
    assert!(frames.is_empty());
    assert!(err.is_some());
    let (frames, err2) = d.feed(&hex("01 01 00 00"));
    assert!(frames.is_empty());
    assert_eq!(err2, err);
    assert_eq!(d.finish().unwrap_err(), err.unwrap());
}

#[test]
fn encoder_refusals() {
    let e = check_encode(11, 10).unwrap_err();
    assert_eq!((e.requirement, e.offset), ("STD-LIM-2", 0));
    let e = check_encode(1 << 31, u64::MAX).unwrap_err();
    assert_eq!(e.requirement, "STD-LEN-4");
    let e = check_encode(1 << 31, 0).unwrap_err();
    assert_eq!(e.requirement, "STD-LEN-4");
    assert!(check_encode((1 << 31) - 1, u64::MAX).is_ok());
    let e = check_encode(DEFAULT_MAX as usize + 1, 0).unwrap_err();
    assert_eq!(e.requirement, "STD-LIM-2");
    let mut b = BytesMut::new();
    assert!(encode(&mut b, 1, 1, &[0; 11], 10).is_err());
    assert!(b.is_empty(), "nothing written on refusal");
}

use crate::DEFAULT_MAX_PAYLOAD as DEFAULT_MAX;

#[test]
fn walker_flips_and_counts_across_splits() {
    let lens = [0usize, 5, 65535, 70000, 3];
    let wire = |flag: u8| {
        let mut b = BytesMut::new();
        for (i, len) in lens.iter().enumerate() {
            encode(&mut b, flag, i as u8 + 1, &vec![7u8; *len], 1 << 24).unwrap();
        }
        b.to_vec()
    };
    let (requests, replies) = (wire(0x01), wire(0x81));
    let p = Standard {
        max_payload: 1 << 24,
    };
    for split in [1usize, 2, 3, 5, 7, 4096] {
        let mut w = p.walker(true).unwrap();
        let mut data = requests.clone();
        for c in data.chunks_mut(split) {
            w.walk(c);
        }
        assert_eq!(w.frames(), 5);
        assert_eq!(w.payload_bytes(), 65535 + 70000 + 8);
        assert_eq!(data, replies, "split {split}");
    }
    let mut w = p.walker(false).unwrap();
    let mut data = requests.clone();
    w.walk(&mut data);
    assert_eq!((w.frames(), data), (5, requests));
}

#[test]
fn echo_session_answers_requests_only() {
    use crate::protocol::ServerSession;
    let p = Standard {
        max_payload: DEFAULT_MAX,
    };
    let mut s = p.session("", false).unwrap();
    let mut out = BytesMut::new();
    // request kind 5, one-way, reply, error reply: only the first is answered.
    s.extend(&hex("05 09 01 00 41 41 02 00 00 81 03 00 00 C1 04 00 00"));
    let served = s.process(&mut out);
    assert_eq!((served.frames, served.bytes, served.closed), (4, 1, false));
    assert_eq!(&out[..], &hex("85 09 01 00 41")[..]);
    let mut sink = p.session("", true).unwrap();
    let mut out = BytesMut::new();
    sink.extend(&hex("01 01 00 00"));
    assert_eq!(sink.finish(&mut out).frames, 1);
    assert!(out.is_empty());
    assert!(p.session("stream", false).is_err());
}
