//! Service discovery for rpc, as spec/discovery.md fixes it: endpoints and result codes (§2, §3), a
//! registry that any number of threads share (§4, §5, §7), the four selectors (§6), the etcd key
//! and value mapping (§8) and, with the `etcd` feature, a registry on etcd ([`etcd::EtcdRegistry`]).
//!
//! The in-process [`LocalRegistry`] shards its services over reader-writer locks; an operation
//! holds one shard's lock only for its bookkeeping, queues the events it causes under that lock
//! and delivers them after releasing it, one thread at a time, in queue order (DISC-WATCH-2..4),
//! so that a callback may call the registry.
//!
//! One module a job, re-exported here: the endpoints, result codes, events and the [`Registry`]
//! trait (this file); `local`: [`LocalRegistry`]; `selector`: [`Selector`] and its [`Rng`];
//! `etcd_mapping`: the etcd keys and values ([`etcd_encode`], [`etcd_decode`]).

use std::fmt;

#[cfg(feature = "etcd")]
pub mod etcd;
mod etcd_mapping;
mod local;
mod selector;

pub use etcd_mapping::*;
pub use local::*;
pub use selector::*;

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
