//! Masking (WS-MASK-3) and incremental, fail-fast UTF-8 validation (WS-UTF8-*).

#[allow(unused_imports)]
use super::*;

/// WS-MASK-3: XORs `buf` with the masking key, starting at key octet `phase % 4`. 32 bytes at a
/// time with AVX2 where the CPU has it (checked at run time: the release build targets baseline
/// x86-64, whose widest vectors are SSE2's 16 bytes, and a 64 KiB payload took as long to unmask as
/// to copy), else 16 bytes at a time (the compiler vectorises the u128 XOR), then byte by byte.
pub fn mask(buf: &mut [u8], key: [u8; 4], phase: usize) {
    let k = [
        key[phase % 4],
        key[(phase + 1) % 4],
        key[(phase + 2) % 4],
        key[(phase + 3) % 4],
    ];
    #[cfg(target_arch = "x86_64")]
    if buf.len() >= 128 && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        let done = unsafe { mask_avx2(buf, k) };
        // `done` is a multiple of 32, so the key phase of the rest is unchanged
        mask_words(&mut buf[done..], k);
        return;
    }
    mask_words(buf, k);
}

/// XORs `buf` with the key `k` (already rotated to its phase) 16 bytes at a time, then the tail.
fn mask_words(buf: &mut [u8], k: [u8; 4]) {
    let word = u32::from_ne_bytes(k) as u128;
    let wide = word | word << 32 | word << 64 | word << 96;
    let mut chunks = buf.chunks_exact_mut(16);
    for c in &mut chunks {
        let v = u128::from_ne_bytes(c.try_into().unwrap()) ^ wide;
        c.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= k[i % 4];
    }
}

/// The whole 32-byte blocks of `buf` XORed with the key `k` (rotated to its phase) in AVX2
/// registers, four blocks an iteration; returns the bytes done (a multiple of 32).
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn mask_avx2(buf: &mut [u8], k: [u8; 4]) -> usize {
    use std::arch::x86_64::*;
    let kv = _mm256_set1_epi32(i32::from_ne_bytes(k));
    let n = buf.len();
    let p = buf.as_mut_ptr();
    let mut i = 0;
    // unaligned loads and stores within buf: i + 128 <= n, then i + 32 <= n
    while i + 128 <= n {
        for j in 0..4 {
            let q = p.add(i + 32 * j) as *mut __m256i;
            _mm256_storeu_si256(q, _mm256_xor_si256(_mm256_loadu_si256(q), kv));
        }
        i += 128;
    }
    while i + 32 <= n {
        let q = p.add(i) as *mut __m256i;
        _mm256_storeu_si256(q, _mm256_xor_si256(_mm256_loadu_si256(q), kv));
        i += 32;
    }
    i
}

/// Incremental UTF-8 validation (RFC 3629, WS-UTF8-1/2): fed the bytes of a message as they
/// arrive, it says as soon as they can no longer be the start of valid UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utf8 {
    /// Continuation bytes still due, and the allowed range of the next one.
    need: u8,
    lo: u8,
    hi: u8,
}

impl Default for Utf8 {
    fn default() -> Self {
        Utf8 {
            need: 0,
            lo: 0x80,
            hi: 0xBF,
        }
    }
}

impl Utf8 {
    /// No code point left unfinished.
    pub fn is_complete(&self) -> bool {
        self.need == 0
    }

    fn step(&mut self, b: u8) -> bool {
        if self.need > 0 {
            if b < self.lo || b > self.hi {
                return false;
            }
            self.need -= 1;
            self.lo = 0x80;
            self.hi = 0xBF;
            return true;
        }
        let (need, lo, hi) = match b {
            0x00..=0x7F => return true,
            0xC2..=0xDF => (1, 0x80, 0xBF),
            0xE0 => (2, 0xA0, 0xBF),
            0xE1..=0xEC | 0xEE | 0xEF => (2, 0x80, 0xBF),
            0xED => (2, 0x80, 0x9F),
            0xF0 => (3, 0x90, 0xBF),
            0xF1..=0xF3 => (3, 0x80, 0xBF),
            0xF4 => (3, 0x80, 0x8F),
            _ => return false,
        };
        *self = Utf8 { need, lo, hi };
        true
    }

    /// Feeds the next bytes; false once they cannot continue valid UTF-8.
    pub fn feed(&mut self, mut data: &[u8]) -> bool {
        while !data.is_empty() {
            if self.need > 0 {
                if !self.step(data[0]) {
                    return false;
                }
                data = &data[1..];
                continue;
            }
            // the bulk through the standard library's validator
            match std::str::from_utf8(data) {
                Ok(_) => return true,
                Err(e) if e.error_len().is_some() => return false,
                Err(e) => {
                    // a valid start of a code point at the end: carry it over
                    for &b in &data[e.valid_up_to()..] {
                        if !self.step(b) {
                            return false;
                        }
                    }
                    return true;
                }
            }
        }
        true
    }
}

/// Whether `data` is complete, valid UTF-8.
pub fn utf8_ok(data: &[u8]) -> bool {
    std::str::from_utf8(data).is_ok()
}
