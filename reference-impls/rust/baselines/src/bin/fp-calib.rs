//! fp-calib: machine calibration printed beside benchmark results (tools/bench): memcpy
//! bandwidth (64 MiB buffers, bytes copied per second) and single-stream loopback TCP
//! bandwidth (127.0.0.1, 256 KiB writes, one reader thread). One JSON line on stdout.
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
        "{{\"memcpy_gb_per_s\": {memcpy:.2}, \"loopback_tcp_gb_per_s\": {tcp:.3}, \"loopback_tcp_gbit_per_s\": {:.2}, \"seconds_each\": {secs}}}",
        tcp * 8.0
    );
}
