//! criterion benchmarks of encode and decode for both protocols at 32 B, 1 KiB and 64 KiB
//! payloads. Throughput is reported in payload bytes, so criterion prints GB/s.
//! Run with `cargo bench -p frameproof-codec` (never part of the tests).

use bytes::BytesMut;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use frameproof_codec::length_field::{LengthFieldDecoder, Profile};
use frameproof_codec::standard::{self, StandardDecoder};
use frameproof_codec::FrameDecoder;

const SIZES: [usize; 3] = [32, 1024, 64 * 1024];
/// Frames per iteration, so that one iteration is a realistic batch (one socket read).
const BATCH: usize = 64;

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 + 7) as u8).collect()
}

/// The default profile (u16 LE) where it fits, else u32 LE (64 KiB does not fit 16 bits).
fn lf_profile(n: usize) -> Profile {
    if n <= 0xFFFF {
        Profile::default()
    } else {
        Profile::new(0, 4).unwrap()
    }
}

fn bench_encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("encode");
    for &n in &SIZES {
        let p = payload(n);
        g.throughput(Throughput::Bytes((n * BATCH) as u64));
        let mut buf = BytesMut::with_capacity((n + 8) * BATCH);
        g.bench_with_input(BenchmarkId::new("standard", n), &p, |b, p| {
            b.iter(|| {
                buf.clear();
                for i in 0..BATCH {
                    standard::encode(&mut buf, 0x01, i as u8, black_box(p), 0).unwrap();
                }
                black_box(buf.len())
            })
        });
        let prof = lf_profile(n);
        let mut buf = BytesMut::with_capacity((n + 8) * BATCH);
        g.bench_with_input(BenchmarkId::new("length-field", n), &p, |b, p| {
            b.iter(|| {
                buf.clear();
                for _ in 0..BATCH {
                    prof.encode(&mut buf, black_box(p), 0).unwrap();
                }
                black_box(buf.len())
            })
        });
    }
    g.finish();
}

fn bench_decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    for &n in &SIZES {
        let p = payload(n);
        g.throughput(Throughput::Bytes((n * BATCH) as u64));
        let mut wire = BytesMut::new();
        for i in 0..BATCH {
            standard::encode(&mut wire, 0x01, i as u8, &p, 0).unwrap();
        }
        g.bench_with_input(BenchmarkId::new("standard", n), &wire, |b, wire| {
            b.iter(|| {
                let mut d = StandardDecoder::new(0);
                d.extend(black_box(wire));
                let mut total = 0;
                while let Some(f) = d.decode().unwrap() {
                    total += f.payload.len();
                }
                assert_eq!(total, n * BATCH);
                total
            })
        });
        let prof = lf_profile(n);
        let mut wire = BytesMut::new();
        for _ in 0..BATCH {
            prof.encode(&mut wire, &p, 0).unwrap();
        }
        let lf_total = n * BATCH;
        g.bench_with_input(BenchmarkId::new("length-field", n), &wire, |b, wire| {
            b.iter(|| {
                let mut d = LengthFieldDecoder::new(prof, 0);
                d.extend(black_box(wire));
                let mut total = 0;
                while let Some(f) = d.decode().unwrap() {
                    total += f.len();
                }
                assert_eq!(total, lf_total);
                total
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_encode, bench_decode);
criterion_main!(benches);
