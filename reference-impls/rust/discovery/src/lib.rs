//! Service discovery for rpc, as spec/discovery.md fixes it: endpoints and result codes (§2, §3), a
//! registry that any number of threads share (§4, §5, §7), the four selectors (§6), the etcd key
//! and value mapping (§8) and, with the `etcd` feature, a registry on etcd ([`etcd::EtcdRegistry`]).
//!
//! The in-process [`LocalRegistry`] shards its services over reader-writer locks; an operation
//! holds one shard's lock only for its bookkeeping, queues the events it causes under that lock
//! and delivers them after releasing it, one thread at a time, in queue order (DISC-WATCH-2..4),
//! so that a callback may call the registry.

use std::cell::RefCell;
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::ThreadId;

#[cfg(feature = "etcd")]
pub mod etcd;

/// The weight an endpoint gets when the application gives none (DISC-EP-1).
pub const DEFAULT_WEIGHT: u32 = 100;
/// The default etcd key prefix (DISC-ETCD-1).
pub const DEFAULT_PREFIX: &str = "frameproof/services";

/// An instance of a service (DISC-EP-1). `port` is u32 so that a value above 65535 can be
/// refused with `InvalidArgument` (DISC-EP-2) rather than wrap.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Endpoint {
    pub service: String,
    pub instance_id: String,
    pub host: String,
    pub port: u32,
    pub weight: u32,
}

impl Endpoint {
    pub fn new(service: &str, instance_id: &str, host: &str, port: u32, weight: u32) -> Self {
        Endpoint {
            service: service.into(),
            instance_id: instance_id.into(),
            host: host.into(),
            port,
            weight,
        }
    }

    /// `host:port`, as upstream's `address()`.
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// DISC-EP-2.
    pub fn is_valid(&self) -> bool {
        name_ok(&self.service)
            && name_ok(&self.instance_id)
            && !self.host.is_empty()
            && self.host.len() <= 255
            && self.port <= 65535
    }
}

/// A service name or instance id (DISC-EP-2): 1..=255 bytes of UTF-8, no `/`.
pub fn name_ok(s: &str) -> bool {
    !s.is_empty() && s.len() <= 255 && !s.contains('/')
}

/// Result codes (DISC-ERR-1); `Ok` is the `Ok(_)` of a `Result`, the others its `Err`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Code {
    Ok = 0,
    NotFound = 1,
    ConnectionError = 2,
    LockTimeout = 3,
    InternalError = 4,
    InvalidArgument = 5,
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Code::Ok => "OK",
            Code::NotFound => "NOT_FOUND",
            Code::ConnectionError => "CONNECTION_ERROR",
            Code::LockTimeout => "LOCK_TIMEOUT",
            Code::InternalError => "INTERNAL_ERROR",
            Code::InvalidArgument => "INVALID_ARGUMENT",
        };
        f.write_str(s)
    }
}

impl std::error::Error for Code {}

/// The type of a change (upstream's `ServiceEventType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    Added = 1,
    Removed = 2,
    Updated = 3,
}

/// What a watcher is told (DISC-WATCH-1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventType,
    pub endpoint: Endpoint,
}

/// A watcher's handle (DISC-WATCH-5): never reused within one registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WatchId(pub u64);

pub type Callback = Box<dyn Fn(&Event) + Send + Sync>;

/// The operations of spec/discovery.md §4-§5, for every registry (in-process or on etcd).
pub trait Registry: Send + Sync {
    fn register(&self, endpoint: &Endpoint) -> Result<(), Code>;
    fn deregister(&self, service: &str, instance_id: &str) -> Result<(), Code>;
    fn discover(&self, service: &str) -> Result<Vec<Endpoint>, Code>;
    fn watch(&self, service: &str, callback: Callback) -> Result<WatchId, Code>;
    fn unwatch(&self, id: WatchId) -> Result<(), Code>;
}

// ------------------------------------------------------------------ the in-process registry

struct Watcher {
    id: WatchId,
    callback: Callback,
    active: AtomicBool,
}

#[derive(Default)]
struct Shard {
    services: HashMap<String, Vec<Endpoint>>,
    watchers: HashMap<String, Vec<Arc<Watcher>>>,
}

struct Pending {
    event: Event,
    recipients: Vec<Arc<Watcher>>,
}

const SHARDS: usize = 16;
static NEXT_REGISTRY: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// The registries whose events this thread is delivering right now (a callback that calls its
    /// registry must not deliver recursively: DISC-WATCH-3).
    static DELIVERING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// The in-process registry: safe to share between threads (`Arc<LocalRegistry>`), DISC-THREAD-1.
pub struct LocalRegistry {
    id: usize,
    shards: Vec<RwLock<Shard>>,
    next_watch: AtomicU64,
    queue: Mutex<VecDeque<Pending>>,
    queued: AtomicUsize,
    dispatching: Mutex<()>,
    calling: Mutex<Option<(ThreadId, WatchId)>>,
    called: Condvar,
}

impl Default for LocalRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl LocalRegistry {
    pub fn new() -> Self {
        LocalRegistry {
            id: NEXT_REGISTRY.fetch_add(1, Ordering::Relaxed),
            shards: (0..SHARDS).map(|_| RwLock::new(Shard::default())).collect(),
            next_watch: AtomicU64::new(0),
            queue: Mutex::new(VecDeque::new()),
            queued: AtomicUsize::new(0),
            dispatching: Mutex::new(()),
            calling: Mutex::new(None),
            called: Condvar::new(),
        }
    }

    fn shard(&self, service: &str) -> &RwLock<Shard> {
        let mut h = DefaultHasher::new();
        service.hash(&mut h);
        &self.shards[(h.finish() as usize) % SHARDS]
    }

    /// Under the shard's write lock: queue one event for the service's current watchers.
    fn emit(&self, shard: &Shard, kind: EventType, endpoint: &Endpoint) {
        let Some(ws) = shard.watchers.get(&endpoint.service) else {
            return;
        };
        if ws.is_empty() {
            return;
        }
        let p = Pending {
            event: Event {
                kind,
                endpoint: endpoint.clone(),
            },
            recipients: ws.clone(),
        };
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(p);
        self.queued.fetch_add(1, Ordering::SeqCst);
    }

    fn delivering_here(&self) -> bool {
        DELIVERING.with(|d| d.borrow().contains(&self.id))
    }

    /// Delivers the queued events. From inside one of this registry's callbacks it returns at
    /// once: the delivering loop further up the stack goes on after the callback returns.
    pub fn deliver(&self) {
        if self.queued.load(Ordering::SeqCst) == 0 || self.delivering_here() {
            return;
        }
        loop {
            let Ok(guard) = self.dispatching.try_lock() else {
                return; // another thread delivers, and re-checks the queue before it stops
            };
            DELIVERING.with(|d| d.borrow_mut().push(self.id));
            loop {
                let next = self
                    .queue
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .pop_front();
                let Some(p) = next else { break };
                self.queued.fetch_sub(1, Ordering::SeqCst);
                for w in &p.recipients {
                    *self.calling.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some((std::thread::current().id(), w.id));
                    if w.active.load(Ordering::SeqCst) {
                        // a callback's panic is the callback's: delivery goes on
                        let _ = catch_unwind(AssertUnwindSafe(|| (w.callback)(&p.event)));
                    }
                    *self.calling.lock().unwrap_or_else(|e| e.into_inner()) = None;
                    self.called.notify_all();
                }
            }
            DELIVERING.with(|d| d.borrow_mut().retain(|&x| x != self.id));
            drop(guard);
            if self.queued.load(Ordering::SeqCst) == 0 {
                return;
            }
        }
    }
}

impl Registry for LocalRegistry {
    fn register(&self, e: &Endpoint) -> Result<(), Code> {
        if !e.is_valid() {
            return Err(Code::InvalidArgument);
        }
        {
            let mut s = self
                .shard(&e.service)
                .write()
                .unwrap_or_else(|x| x.into_inner());
            let list = s.services.entry(e.service.clone()).or_default();
            let kind = match list.iter_mut().find(|x| x.instance_id == e.instance_id) {
                Some(old) => {
                    *old = e.clone(); // replaced in place (DISC-REG-2)
                    EventType::Updated
                }
                None => {
                    list.push(e.clone());
                    EventType::Added
                }
            };
            self.emit(&s, kind, e);
        }
        self.deliver();
        Ok(())
    }

    fn deregister(&self, service: &str, instance_id: &str) -> Result<(), Code> {
        if !name_ok(service) || !name_ok(instance_id) {
            return Err(Code::InvalidArgument);
        }
        {
            let mut s = self
                .shard(service)
                .write()
                .unwrap_or_else(|x| x.into_inner());
            let list = s.services.get_mut(service).ok_or(Code::NotFound)?;
            let i = list
                .iter()
                .position(|x| x.instance_id == instance_id)
                .ok_or(Code::NotFound)?;
            let old = list.remove(i);
            if list.is_empty() {
                s.services.remove(service);
            }
            self.emit(&s, EventType::Removed, &old);
        }
        self.deliver();
        Ok(())
    }

    fn discover(&self, service: &str) -> Result<Vec<Endpoint>, Code> {
        if !name_ok(service) {
            return Err(Code::InvalidArgument);
        }
        let s = self
            .shard(service)
            .read()
            .unwrap_or_else(|x| x.into_inner());
        Ok(s.services.get(service).cloned().unwrap_or_default())
    }

    fn watch(&self, service: &str, callback: Callback) -> Result<WatchId, Code> {
        if !name_ok(service) {
            return Err(Code::InvalidArgument);
        }
        let id = WatchId(self.next_watch.fetch_add(1, Ordering::Relaxed));
        let w = Arc::new(Watcher {
            id,
            callback,
            active: AtomicBool::new(true),
        });
        let mut s = self
            .shard(service)
            .write()
            .unwrap_or_else(|x| x.into_inner());
        s.watchers.entry(service.into()).or_default().push(w);
        Ok(id)
    }

    fn unwatch(&self, id: WatchId) -> Result<(), Code> {
        let mut found = None;
        for sh in &self.shards {
            let mut s = sh.write().unwrap_or_else(|x| x.into_inner());
            let mut service = None;
            for (svc, ws) in s.watchers.iter_mut() {
                if let Some(i) = ws.iter().position(|w| w.id == id) {
                    found = Some(ws.remove(i));
                    service = Some(svc.clone());
                    break;
                }
            }
            if let Some(svc) = service {
                if s.watchers.get(&svc).is_some_and(|ws| ws.is_empty()) {
                    s.watchers.remove(&svc);
                }
                break;
            }
        }
        let w = found.ok_or(Code::NotFound)?;
        w.active.store(false, Ordering::SeqCst);
        // once unwatch returns the callback is never called again: wait for a call in progress on
        // another thread (a callback unwatching itself is that call: no wait)
        let me = std::thread::current().id();
        let mut c = self.calling.lock().unwrap_or_else(|e| e.into_inner());
        while matches!(*c, Some((t, i)) if i == id && t != me) {
            c = self.called.wait(c).unwrap_or_else(|e| e.into_inner());
        }
        Ok(())
    }
}

// ------------------------------------------------------------------ selectors (DISC-SEL-*)

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

// ------------------------------------------------------------------ the etcd mapping (DISC-ETCD-1..3)

/// DISC-ETCD-1: non-empty, no leading or trailing `/`.
pub fn prefix_ok(prefix: &str) -> bool {
    !prefix.is_empty() && !prefix.starts_with('/') && !prefix.ends_with('/')
}

/// The key of an instance: `/<prefix>/<service>/<instance_id>` (DISC-ETCD-1).
pub fn etcd_key(prefix: &str, service: &str, instance_id: &str) -> String {
    format!("/{prefix}/{service}/{instance_id}")
}

/// The key prefix of a service's instances.
pub fn etcd_service_prefix(prefix: &str, service: &str) -> String {
    format!("/{prefix}/{service}/")
}

/// The value of an instance (DISC-ETCD-2): the five members in order, no whitespace.
pub fn etcd_value(e: &Endpoint) -> Vec<u8> {
    serde_json::to_vec(e).expect("an endpoint serializes")
}

/// The key and value of an endpoint, or `InvalidArgument` (DISC-EP-2, DISC-ETCD-1).
pub fn etcd_encode(prefix: &str, e: &Endpoint) -> Result<(String, Vec<u8>), Code> {
    if !prefix_ok(prefix) || !e.is_valid() {
        return Err(Code::InvalidArgument);
    }
    Ok((etcd_key(prefix, &e.service, &e.instance_id), etcd_value(e)))
}

/// The endpoint an etcd entry holds (DISC-ETCD-3): unknown members ignored, `weight` 100 when
/// missing; `InvalidArgument` for an entry a reader skips.
pub fn etcd_decode(prefix: &str, key: &[u8], value: &[u8]) -> Result<Endpoint, Code> {
    let bad = Code::InvalidArgument;
    if !prefix_ok(prefix) {
        return Err(bad);
    }
    let key = std::str::from_utf8(key).map_err(|_| bad)?;
    let rest = key.strip_prefix(&format!("/{prefix}/")).ok_or(bad)?;
    let (service, instance_id) = rest.split_once('/').ok_or(bad)?;
    let v: serde_json::Value = serde_json::from_slice(value).map_err(|_| bad)?;
    let o = v.as_object().ok_or(bad)?;
    let text = |k: &str| {
        o.get(k)
            .and_then(|x| x.as_str())
            .map(str::to_owned)
            .ok_or(bad)
    };
    let int = |k: &str| o.get(k).and_then(|x| x.as_u64()).ok_or(bad);
    let weight = match o.get("weight") {
        None => DEFAULT_WEIGHT as u64,
        Some(_) => int("weight")?,
    };
    let port = int("port")?;
    if port > 65535 || weight > u32::MAX as u64 {
        return Err(bad);
    }
    let e = Endpoint {
        service: text("service")?,
        instance_id: text("instance_id")?,
        host: text("host")?,
        port: port as u32,
        weight: weight as u32,
    };
    if !e.is_valid() || e.service != service || e.instance_id != instance_id {
        return Err(bad);
    }
    Ok(e)
}
