//! The selectors (DISC-SEL-*): round-robin, nginx's smooth weighted round-robin, random and
//! weighted random, on a small reproducible generator.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::{name_ok, Code, Endpoint, Registry};

/// The selector algorithms and their names (DISC-SEL-6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    RoundRobin,
    WeightedRoundRobin,
    Random,
    WeightedRandom,
}

impl std::str::FromStr for Algorithm {
    type Err = Code;
    fn from_str(s: &str) -> Result<Self, Code> {
        Ok(match s {
            "round-robin" => Algorithm::RoundRobin,
            "weighted-round-robin" => Algorithm::WeightedRoundRobin,
            "random" => Algorithm::Random,
            "weighted-random" => Algorithm::WeightedRandom,
            _ => return Err(Code::InvalidArgument),
        })
    }
}

/// xoshiro256** seeded through splitmix64: small, fast and reproducible (DISC-SEL-5).
#[derive(Clone, Debug)]
pub struct Rng([u64; 4]);

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng([next(), next(), next(), next()])
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let out = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// Uniform in `0..n` (`n > 0`), without modulo bias (Lemire's multiply-and-reject).
    pub fn below(&mut self, n: u64) -> u64 {
        let mut m = (self.next_u64() as u128) * (n as u128);
        if (m as u64) < n {
            let t = n.wrapping_neg() % n;
            while (m as u64) < t {
                m = (self.next_u64() as u128) * (n as u128);
            }
        }
        (m >> 64) as u64
    }
}

struct SelectorState {
    counter: u64,
    current: HashMap<String, i128>,
    rng: Rng,
}

/// One selector of one service (DISC-SEL-1..5); shareable between threads (DISC-THREAD-2).
pub struct Selector {
    service: String,
    algorithm: Algorithm,
    state: Mutex<SelectorState>,
}

impl Selector {
    /// `seed`: the random selectors' seed (None: one from the operating system, through the
    /// standard library's randomly keyed hasher, DISC-SEL-5).
    pub fn new(service: &str, algorithm: Algorithm, seed: Option<u64>) -> Result<Self, Code> {
        if !name_ok(service) {
            return Err(Code::InvalidArgument);
        }
        let seed = seed.unwrap_or_else(|| {
            use std::hash::BuildHasher;
            std::collections::hash_map::RandomState::new().hash_one(0u8)
        });
        Ok(Selector {
            service: service.into(),
            algorithm,
            state: Mutex::new(SelectorState {
                counter: 0,
                current: HashMap::new(),
                rng: Rng::new(seed),
            }),
        })
    }

    pub fn service(&self) -> &str {
        &self.service
    }

    /// One pick from the service's current list (DISC-SEL-1): `NotFound` when no instance has a
    /// weight above 0, and the selector's state does not change then.
    pub fn select(&self, registry: &dyn Registry) -> Result<Endpoint, Code> {
        let list = registry.discover(&self.service)?;
        let eligible: Vec<&Endpoint> = list.iter().filter(|e| e.weight > 0).collect();
        if eligible.is_empty() {
            return Err(Code::NotFound);
        }
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let picked = match self.algorithm {
            Algorithm::RoundRobin => {
                let i = (st.counter % eligible.len() as u64) as usize;
                st.counter = st.counter.wrapping_add(1);
                i
            }
            Algorithm::WeightedRoundRobin => smooth_weighted(&mut st.current, &eligible),
            Algorithm::Random => st.rng.below(eligible.len() as u64) as usize,
            Algorithm::WeightedRandom => {
                let total: u64 = eligible.iter().map(|e| e.weight as u64).sum();
                let mut x = st.rng.below(total);
                let mut pick = eligible.len() - 1;
                for (i, e) in eligible.iter().enumerate() {
                    if x < e.weight as u64 {
                        pick = i;
                        break;
                    }
                    x -= e.weight as u64;
                }
                pick
            }
        };
        Ok(eligible[picked].clone())
    }
}

/// nginx's smooth weighted round-robin over `eligible` (DISC-SEL-3): add each weight to its
/// current weight, pick the largest (the first among equals), subtract the total from it.
fn smooth_weighted(current: &mut HashMap<String, i128>, eligible: &[&Endpoint]) -> usize {
    current.retain(|k, _| eligible.iter().any(|e| &e.instance_id == k));
    let total: i128 = eligible.iter().map(|e| e.weight as i128).sum();
    let mut best = 0;
    let mut best_w = i128::MIN;
    for (i, e) in eligible.iter().enumerate() {
        let cw = current.entry(e.instance_id.clone()).or_insert(0);
        *cw += e.weight as i128;
        if *cw > best_w {
            best_w = *cw;
            best = i;
        }
    }
    *current
        .get_mut(&eligible[best].instance_id)
        .expect("just inserted") -= total;
    best
}
