use super::*;

use crate::testutil::{hex, lf_wire};

fn decode_all(p: Profile, max: u64, chunks: &[&[u8]]) -> (Vec<Bytes>, Option<ProtocolError>) {
    LengthFieldDecoder::new(p, max).decode_stream(chunks.iter().copied())
}

#[test]
fn worked_examples_every_profile() {
    for (offset, size, bytes) in [
        (0, 2, "03 00 61 62 63"),
        (0, -2, "00 03 61 62 63"),
        (0, 4, "03 00 00 00 61 62 63"),
        (0, -4, "00 00 00 03 61 62 63"),
        (0, 1, "03 61 62 63"),
        (0, 0, "03 61 62 63"),
        (2, 2, "00 00 03 00 61 62 63"),
    ] {
        let p = Profile::new(offset, size).unwrap();
        let wire = hex(bytes);
        assert_eq!(lf_wire(p, b"abc", 0).unwrap(), wire, "{offset},{size}");
        let (frames, err) = decode_all(p, 0, &[&wire]);
        assert_eq!(err, None);
        assert_eq!(frames, vec![Bytes::from_static(b"abc")]);
    }
    assert_eq!(Profile::default(), Profile::new(0, 2).unwrap());
}

#[test]
fn varint_300_and_benchmark_frame() {
    let p = Profile::new(0, 0).unwrap();
    let payload = vec![1u8; 300];
    let wire = lf_wire(p, &payload, 0).unwrap();
    assert_eq!(&wire[..2], &[0xAC, 0x02]);
    assert_eq!(wire.len(), 302);
    let bm = lf_wire(Profile::default(), &[0x55; 30], 0).unwrap();
    assert_eq!(&bm[..2], &[0x1E, 0x00]);
    assert_eq!(bm.len(), 32);
}

#[test]
fn header_bytes_are_ignored() {
    let p = Profile::new(3, 2).unwrap();
    let (frames, err) = decode_all(p, 0, &[&hex("AA BB CC 02 00 68 69")]);
    assert_eq!(err, None);
    assert_eq!(frames, vec![Bytes::from_static(b"hi")]);
}

#[test]
fn unsupported_sizes_are_lf_fmt_3() {
    for s in [-1, 3, 5, 8, -8, 100, i32::MIN as i64] {
        let e = Profile::new(0, s).unwrap_err();
        assert_eq!((e.requirement, e.offset), ("LF-FMT-3", 0));
    }
}

#[test]
fn split_inside_length_field_and_varint() {
    let p = Profile::new(1, 0).unwrap();
    let payload = vec![9u8; 20000]; // 3-byte varint
    let wire = lf_wire(p, &payload, 0).unwrap();
    for a in 0..6 {
        for b in a..6 {
            let (frames, err) = decode_all(p, 0, &[&wire[..a], &wire[a..b], &wire[b..]]);
            assert_eq!(err, None);
            assert_eq!(frames.len(), 1);
            assert_eq!(frames[0].len(), 20000);
        }
    }
}

#[test]
fn varint_rules() {
    let p = Profile::new(0, 0).unwrap();
    // Longer than 5 bytes.
    let (_, e) = decode_all(p, 0, &[&hex("80 80 80 80 80 00")]);
    assert_eq!(e.unwrap().requirement, "LF-LEN-2");
    // The sixth byte is not needed to decide.
    let mut d = LengthFieldDecoder::new(p, 0);
    d.extend(&hex("80 80 80 80 80"));
    assert_eq!(d.decode().unwrap_err().requirement, "LF-LEN-2");
    // 2^31 in 5 bytes.
    let (_, e) = decode_all(p, u64::MAX, &[&hex("80 80 80 80 08")]);
    assert_eq!(e.unwrap().requirement, "LF-LEN-2");
    // 2^31 - 1 is above the default max: LIM-1, not LEN-2.
    let (_, e) = decode_all(p, 0, &[&hex("FF FF FF FF 07")]);
    assert_eq!(e.unwrap().requirement, "LF-LIM-1");
    // Non-minimal accepted (LF-LEN-4 MAY).
    let (frames, e) = decode_all(p, 0, &[&hex("80 00 83 80 00 61 62 63")]);
    assert_eq!(e, None);
    assert_eq!(frames, vec![Bytes::new(), Bytes::from_static(b"abc")]);
    // Stream ends inside a varint.
    let (frames, e) = decode_all(p, 0, &[&hex("01 7A 80 80")]);
    assert_eq!(frames.len(), 1);
    let e = e.unwrap();
    assert_eq!((e.requirement, e.offset), ("LF-STR-3", 2));
}

#[test]
fn bit_31_is_lf_len_3() {
    for (size, bytes) in [(4, "00 00 00 80"), (-4, "80 00 00 00")] {
        let p = Profile::new(0, size).unwrap();
        let (frames, e) = decode_all(p, u64::MAX, &[&hex("00 00 00 00"), &hex(bytes)]);
        // size 4/-4: "00 00 00 00" is an empty frame.
        assert_eq!(frames.len(), 1);
        let e = e.unwrap();
        assert_eq!((e.requirement, e.offset), ("LF-LEN-3", 4));
    }
}

#[test]
fn oversize_rejected_from_length_field() {
    let p = Profile::new(2, 4).unwrap();
    let mut d = LengthFieldDecoder::new(p, 0);
    d.extend(&hex("00 00 01 00 A0 00"));
    let e = d.decode().unwrap_err();
    assert_eq!((e.requirement, e.offset), ("LF-LIM-1", 0));
    assert!(d.buffer_mut().capacity() < 1 << 16);
    let (_, e) = decode_all(Profile::default(), 4, &[&hex("05 00 00")]);
    assert_eq!(e.unwrap().requirement, "LF-LIM-1");
    let (frames, e) = decode_all(Profile::default(), 4, &[&hex("04 00 01 02 03 04")]);
    assert_eq!((frames.len(), e), (1, None));
}

#[test]
fn truncation_is_lf_str_3() {
    let p = Profile::new(2, 2).unwrap();
    let good = hex("00 00 01 00 41");
    for partial in [
        hex("00"),
        hex("00 00"),
        hex("00 00 05"),
        hex("00 00 05 00 61"),
    ] {
        let mut wire = good.clone();
        wire.extend(&partial);
        let (frames, e) = decode_all(p, 0, &[&wire]);
        assert_eq!(frames.len(), 1);
        let e = e.unwrap();
        assert_eq!((e.requirement, e.offset), ("LF-STR-3", 5));
    }
}

#[test]
fn no_frame_after_error() {
    let p = Profile::new(0, 4).unwrap();
    let mut d = LengthFieldDecoder::new(p, 0);
    let (frames, e) = d.feed(&hex("01 00 00 00 41 FF FF FF FF 00 00 00 00"));
    assert_eq!(frames.len(), 1);
    let e = e.unwrap();
    assert_eq!((e.requirement, e.offset), ("LF-LEN-3", 5));
    let (frames, e2) = d.feed(&hex("00 00 00 00"));
    assert!(frames.is_empty());
    assert_eq!(e2, Some(e));
}

#[test]
fn encoder_refusals() {
    let cases = [
        (1, 256usize, 0u64, Some("LF-LEN-1")),
        (1, 255, 0, None),
        (2, 65536, 0, Some("LF-LEN-1")),
        (-2, 65536, u64::MAX, Some("LF-LEN-1")),
        (-2, 65535, 0, None),
        (2, 100, 99, Some("LF-LIM-2")),
        (1, 300, 10, Some("LF-LEN-1")),
        (4, 1 << 31, u64::MAX, Some("LF-LEN-1")),
        (0, 1 << 31, u64::MAX, Some("LF-LEN-1")),
        (4, (1 << 31) - 1, u64::MAX, None),
        (0, 10 * 1024 * 1024 + 1, 0, Some("LF-LIM-2")),
    ];
    for (size, len, max, want) in cases {
        let p = Profile::new(0, size).unwrap();
        let got = p.check_encode(len, max).err().map(|e| e.requirement);
        assert_eq!(got, want, "size {size} len {len} max {max}");
    }
    let mut b = BytesMut::new();
    assert!(Profile::new(0, 1)
        .unwrap()
        .encode(&mut b, &[0; 256], 0)
        .is_err());
    assert!(b.is_empty());
}

#[test]
fn varint_encoding_is_minimal() {
    let p = Profile::new(0, 0).unwrap();
    for (n, want) in [(0usize, 1usize), (127, 1), (128, 2), (16383, 2), (16384, 3)] {
        let wire = lf_wire(p, &vec![0; n], 0).unwrap();
        assert_eq!(wire.len() - n, want, "len {n}");
        assert_eq!(varint_len(n as u64), want);
    }
    assert_eq!(varint_len(MAX_SIGNED), 5);
}

#[test]
fn walker_counts_little_endian_profiles_only() {
    let data = hex("02 00 09 09 00 00 01 00 05");
    for cut in 0..data.len() {
        let mut w = LengthField {
            profile: Profile::default(),
            max_payload: 0,
        }
        .walker(true)
        .unwrap();
        let mut d = data.clone();
        let (a, b) = d.split_at_mut(cut);
        w.walk(a);
        w.walk(b);
        assert_eq!((w.frames(), w.payload_bytes()), (3, 3), "cut {cut}");
        assert_eq!(d, data, "an echo rewrites nothing");
    }
    for (offset, size, has) in [
        (0, 1, true),
        (0, 4, true),
        (1, 2, false),
        (0, -2, false),
        (0, 0, false),
    ] {
        let p = LengthField {
            profile: Profile::new(offset, size).unwrap(),
            max_payload: 0,
        };
        assert_eq!(p.walker(false).is_some(), has, "{offset},{size}");
    }
}
