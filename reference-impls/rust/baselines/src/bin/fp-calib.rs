//! fp-calib: machine calibration printed beside benchmark results (tools/bench): memcpy
//! bandwidth (64 MiB buffers, bytes copied per second: memory, out of every cache), memcpy
//! bandwidth by copy size (`memcpy_by_size_gb_per_s`: the same buffer of 32 B, 64 B, .. 64 MiB
//! copied again and again, so the small ones run in the caches, as a codec benchmark's reused
//! buffers do; the median of three rounds) and single-stream loopback TCP bandwidth (127.0.0.1, 256 KiB writes, one reader thread).
//! One JSON line on stdout.
//!
//! ```text
//! fp-calib [--seconds S]   (default 0.5 per measurement)
//! ```

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

fn main() {
    let o =
        fp_net::Options::parse(std::env::args().skip(1), &["seconds"], &[]).unwrap_or_else(|e| {
            eprintln!("fp-calib: {e}");
            std::process::exit(2)
        });
    let secs: f64 = o
        .num::<f64>("seconds", 0.5)
        .unwrap_or(0.5)
        .clamp(0.05, 10.0);
    let budget = Duration::from_secs_f64(secs);

    // memcpy
    let n = 64 << 20;
    let src = vec![1u8; n];
    let mut dst = vec![0u8; n];
    dst.copy_from_slice(&src); // fault the pages in
    let t = Instant::now();
    let mut copied = 0u64;
    while t.elapsed() < budget {
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
        copied += n as u64;
    }
    let memcpy = copied as f64 / t.elapsed().as_secs_f64() / 1e9;

    // memcpy by size: the physical limit of a case whose working set is that size. Three rounds
    // over the sizes, the median of each (single figures at small sizes moved by 2-3x between runs)
    let sizes: Vec<usize> = (5..=26).map(|k| 1usize << k).collect(); // 32 B, 64 B, ... 64 MiB
    let each = budget.div_f64(8.0).max(Duration::from_millis(10));
    let mut figures: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    let mut d = vec![0u8; *sizes.last().unwrap()];
    for _round in 0..3 {
        for (i, &size) in sizes.iter().enumerate() {
            let s = &src[..size];
            let d = &mut d[..size];
            d.copy_from_slice(s);
            let reps = (16 << 20) / size + 1; // time checked every ~16 MiB copied
            let t = Instant::now();
            let mut copied = 0u64;
            while t.elapsed() < each {
                for _ in 0..reps {
                    d.copy_from_slice(std::hint::black_box(s));
                    std::hint::black_box(&mut *d);
                }
                copied += (reps * size) as u64;
            }
            figures[i].push(copied as f64 / t.elapsed().as_secs_f64() / 1e9);
        }
    }
    let by_size: Vec<String> = sizes
        .iter()
        .zip(figures.iter_mut())
        .map(|(size, f)| {
            f.sort_by(|a, b| a.total_cmp(b));
            format!("\"{size}\": {:.2}", f[f.len() / 2])
        })
        .collect();
    drop(d);

    // loopback TCP, one stream
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let addr = l.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = vec![0u8; 256 * 1024];
        let mut got = 0u64;
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return got,
                Ok(k) => got += k as u64,
            }
        }
    });
    let mut s = TcpStream::connect(addr).expect("connect");
    let chunk = vec![7u8; 256 * 1024];
    let t = Instant::now();
    while t.elapsed() < budget {
        if s.write_all(&chunk).is_err() {
            break;
        }
    }
    drop(s);
    let got = reader.join().unwrap_or(0);
    let tcp = got as f64 / t.elapsed().as_secs_f64() / 1e9;
    println!(
        "{{\"memcpy_gb_per_s\": {memcpy:.2}, \"memcpy_by_size_gb_per_s\": {{{}}}, \"loopback_tcp_gb_per_s\": {tcp:.3}, \"loopback_tcp_gbit_per_s\": {:.2}, \"seconds_each\": {secs}}}",
        by_size.join(", "),
        tcp * 8.0
    );
}
