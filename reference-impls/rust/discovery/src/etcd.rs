//! The registry on etcd (spec/discovery.md §8), on the `etcd-client` crate: keys
//! `/<prefix>/<service>/<instance_id>` holding the endpoint's JSON (DISC-ETCD-1..3), discover as one
//! range read sorted by create revision (DISC-ETCD-4), one lease per registry kept alive every third
//! of its TTL (DISC-ETCD-5), one etcd watch per watcher with previous values (DISC-ETCD-6), and
//! recovery after etcd comes back (DISC-ETCD-7).
//!
//! The API is the synchronous [`Registry`] trait: the registry owns a small tokio runtime and
//! blocks on it per operation, each bounded by the request timeout. Callbacks run on the
//! registry's own delivery thread, one at a time, in the order etcd reports the changes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use etcd_client::{
    Client, ConnectOptions, DeleteOptions, EventType as EtcdEventType, GetOptions, PutOptions,
    SortOrder, SortTarget, WatchOptions,
};

use crate::{
    etcd_decode, etcd_encode, etcd_key, etcd_service_prefix, name_ok, prefix_ok, Callback, Code,
    Endpoint, Event, EventType, Registry, WatchId, DEFAULT_PREFIX,
};

/// How an [`EtcdRegistry`] reaches etcd.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// `127.0.0.1:2379` style endpoints.
    pub endpoints: Vec<String>,
    /// DISC-ETCD-1 (default `frameproof/services`).
    pub prefix: String,
    /// DISC-ETCD-5 (default 10 s; etcd raises TTLs below its minimum, about 2 s by default).
    pub lease_ttl: Duration,
    /// DISC-ETCD-7: an operation waits at most this long for etcd (default 5 s).
    pub request_timeout: Duration,
}

impl EtcdConfig {
    /// `endpoint`: one `host:port`, or a cluster's members comma-separated (DISC-ETCD-8); the
    /// client balances over them and leaves a member that stops answering.
    pub fn new(endpoint: &str) -> Self {
        EtcdConfig {
            endpoints: endpoint
                .split(',')
                .map(|e| e.trim().to_string())
                .filter(|e| !e.is_empty())
                .collect(),
            prefix: DEFAULT_PREFIX.into(),
            lease_ttl: Duration::from_secs(10),
            request_timeout: Duration::from_secs(5),
        }
    }
}

struct WatcherState {
    active: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
    callback: Arc<Callback>,
}

/// What the background tasks share with the registry (never the runtime itself).
/// The pause before an etcd call is made again (DISC-ETCD-8).
const RETRY: Duration = Duration::from_millis(100);

/// Failures another member may not have: the connection, or etcd saying it cannot serve now.
fn retryable(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::TransportError(_) => true,
        etcd_client::Error::GRpcStatus(s) => s.code() as i32 == 14, // UNAVAILABLE
        _ => false,
    }
}

struct Shared {
    client: Client,
    cfg: EtcdConfig,
    lease: tokio::sync::Mutex<i64>,
    mine: Mutex<HashMap<(String, String), Endpoint>>,
    stopped: AtomicBool,
}

impl Shared {
    /// One etcd call, made again (on a fresh choice of member) while it fails at the transport level
    /// or etcd answers `Unavailable`, until the request timeout (DISC-ETCD-7/8): with several
    /// endpoints, the client's balancer may still pick a member that just died.
    async fn call<T, F, Fut>(&self, mut f: F) -> Result<T, Option<etcd_client::Error>>
    where
        F: FnMut(Client) -> Fut,
        Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = tokio::time::Instant::now() + self.cfg.request_timeout;
        loop {
            match tokio::time::timeout_at(deadline, f(self.client.clone())).await {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) if retryable(&e) && tokio::time::Instant::now() + RETRY < deadline => {
                    tokio::time::sleep(RETRY).await
                }
                Ok(Err(e)) => return Err(Some(e)),
                Err(_) => return Err(None), // the request timeout
            }
        }
    }

    async fn timed<T, F, Fut>(&self, f: F) -> Result<T, Code>
    where
        F: FnMut(Client) -> Fut,
        Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
    {
        self.call(f).await.map_err(|_| Code::ConnectionError)
    }

    /// The registry's lease, granted on first use (or again after it expired).
    async fn lease(&self, renew: bool) -> Result<i64, Code> {
        let mut l = self.lease.lock().await;
        if *l == 0 || renew {
            let ttl = self.cfg.lease_ttl.as_secs().max(1) as i64;
            *l = self
                .timed(|mut c| async move { c.lease_grant(ttl, None).await })
                .await?
                .id();
        }
        Ok(*l)
    }

    async fn put(&self, e: &Endpoint) -> Result<(), Code> {
        let (key, value) = etcd_encode(&self.cfg.prefix, e)?;
        for renew in [false, true] {
            let lease = self.lease(renew).await?;
            let r = self
                .call(|mut c| {
                    let (k, v) = (key.clone(), value.clone());
                    async move { c.put(k, v, Some(PutOptions::new().with_lease(lease))).await }
                })
                .await;
            match r {
                Ok(_) => return Ok(()),
                Err(Some(etcd_client::Error::GRpcStatus(s)))
                    if s.message().contains("lease not found") =>
                {
                    continue
                }
                _ => return Err(Code::ConnectionError),
            }
        }
        Err(Code::ConnectionError)
    }

    /// DISC-ETCD-5/7: a keep-alive every TTL/3; a lease etcd no longer knows is replaced and this
    /// registry's instances are written again under the new one.
    async fn keep_alive(self: Arc<Self>) {
        let period = (self.cfg.lease_ttl / 3).max(Duration::from_millis(200));
        while !self.stopped.load(Ordering::SeqCst) {
            tokio::time::sleep(period).await;
            let lease = *self.lease.lock().await;
            if lease == 0 || self.stopped.load(Ordering::SeqCst) {
                continue;
            }
            let mut c = self.client.clone();
            match tokio::time::timeout(self.cfg.request_timeout, c.lease_keep_alive(lease)).await {
                Ok(Ok(_)) => {}
                Ok(Err(etcd_client::Error::LeaseKeepAliveError(_))) => {
                    let mine: Vec<Endpoint> = self
                        .mine
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .values()
                        .cloned()
                        .collect();
                    if self.lease(true).await.is_ok() {
                        for e in &mine {
                            let _ = self.put(e).await;
                        }
                    }
                }
                _ => {} // etcd away: try again next period
            }
        }
    }

    async fn list(&self, service: &str) -> Result<(i64, Vec<Endpoint>), Code> {
        let key = etcd_service_prefix(&self.cfg.prefix, service);
        let r = self
            .timed(|mut c| {
                let key = key.clone();
                async move {
                    let opts = GetOptions::new()
                        .with_prefix()
                        .with_sort(SortTarget::Create, SortOrder::Ascend);
                    c.get(key, Some(opts)).await
                }
            })
            .await?;
        let rev = r.header().map(|h| h.revision()).unwrap_or(0);
        let list = r
            .kvs()
            .iter()
            .filter_map(|kv| etcd_decode(&self.cfg.prefix, kv.key(), kv.value()).ok())
            .filter(|e| e.service == service)
            .collect();
        Ok((rev, list))
    }
}

/// The etcd-backed registry. Dropping it revokes its lease (its instances go); [`abandon`]
/// stops it as a crash would (they go when the lease expires).
///
/// [`abandon`]: EtcdRegistry::abandon
pub struct EtcdRegistry {
    rt: Option<tokio::runtime::Runtime>,
    shared: Arc<Shared>,
    watchers: Mutex<HashMap<WatchId, WatcherState>>,
    next_watch: AtomicU64,
    events: Mutex<Option<mpsc::Sender<(WatchId, Event)>>>,
    delivery: Arc<Delivery>,
    keepalive: Option<tokio::task::JoinHandle<()>>,
}

/// A watcher as the delivery thread sees it: still active, and its callback.
type Subscriber = (Arc<AtomicBool>, Arc<Callback>);

#[derive(Default)]
struct Delivery {
    callbacks: Mutex<HashMap<WatchId, Subscriber>>,
    calling: Mutex<Option<(ThreadId, WatchId)>>,
    called: Condvar,
}

impl EtcdRegistry {
    pub fn connect(cfg: EtcdConfig) -> Result<Self, Code> {
        if !prefix_ok(&cfg.prefix) {
            return Err(Code::InvalidArgument);
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("fp-discovery-etcd")
            .build()
            .map_err(|_| Code::InternalError)?;
        let opts = ConnectOptions::new()
            .with_timeout(cfg.request_timeout)
            .with_connect_timeout(cfg.request_timeout);
        let client = rt
            .block_on(async {
                tokio::time::timeout(
                    cfg.request_timeout,
                    Client::connect(cfg.endpoints.clone(), Some(opts)),
                )
                .await
            })
            .map_err(|_| Code::ConnectionError)?
            .map_err(|_| Code::ConnectionError)?;
        let shared = Arc::new(Shared {
            client,
            cfg,
            lease: tokio::sync::Mutex::new(0),
            mine: Mutex::new(HashMap::new()),
            stopped: AtomicBool::new(false),
        });
        let keepalive = Some(rt.spawn(shared.clone().keep_alive()));
        let delivery = Arc::new(Delivery::default());
        let (tx, rx) = mpsc::channel::<(WatchId, Event)>();
        let d = delivery.clone();
        std::thread::Builder::new()
            .name("fp-discovery-events".into())
            .spawn(move || {
                for (id, ev) in rx {
                    let entry = d
                        .callbacks
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get(&id)
                        .cloned();
                    let Some((active, cb)) = entry else { continue };
                    *d.calling.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some((std::thread::current().id(), id));
                    if active.load(Ordering::SeqCst) {
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb(&ev)));
                    }
                    *d.calling.lock().unwrap_or_else(|e| e.into_inner()) = None;
                    d.called.notify_all();
                }
            })
            .map_err(|_| Code::InternalError)?;
        Ok(EtcdRegistry {
            rt: Some(rt),
            shared,
            watchers: Mutex::new(HashMap::new()),
            next_watch: AtomicU64::new(0),
            events: Mutex::new(Some(tx)),
            delivery,
            keepalive,
        })
    }

    fn block<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.rt.as_ref().expect("runtime").block_on(f)
    }

    /// Stops the keep-alives and the watches without revoking the lease: what a crash leaves.
    pub fn abandon(mut self) {
        self.stop(false);
    }

    fn stop(&mut self, revoke: bool) {
        if self.shared.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(k) = self.keepalive.take() {
            k.abort();
        }
        for (_, w) in self
            .watchers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
        {
            w.active.store(false, Ordering::SeqCst);
            w.task.abort();
        }
        self.events.lock().unwrap_or_else(|e| e.into_inner()).take(); // ends the delivery thread
        if revoke {
            let shared = self.shared.clone();
            self.block(async move {
                let lease = *shared.lease.lock().await;
                if lease != 0 {
                    let mut c = shared.client.clone();
                    let _ = tokio::time::timeout(shared.cfg.request_timeout, c.lease_revoke(lease))
                        .await;
                }
            });
        }
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl EtcdRegistry {
    /// Watches `service` from etcd revision `start`, the watcher having last seen `known` (what
    /// [`Registry::watch`] does with the current revision and list; a start revision that etcd
    /// compacted away makes the watcher receive the difference from `known` to the current list,
    /// DISC-ETCD-7).
    pub fn watch_from(
        &self,
        service: &str,
        callback: Callback,
        start: i64,
        known: Vec<Endpoint>,
    ) -> Result<WatchId, Code> {
        if !name_ok(service) {
            return Err(Code::InvalidArgument);
        }
        let tx = self
            .events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or(Code::InternalError)?;
        let id = WatchId(self.next_watch.fetch_add(1, Ordering::Relaxed));
        let active = Arc::new(AtomicBool::new(true));
        let callback = Arc::new(callback);
        self.delivery
            .callbacks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, (active.clone(), callback.clone()));
        let known = known
            .into_iter()
            .map(|e| (e.instance_id.clone(), e))
            .collect();
        let task = self.rt.as_ref().expect("runtime").spawn(watch_loop(
            self.shared.clone(),
            id,
            service.to_string(),
            start,
            known,
            tx,
            active.clone(),
        ));
        self.watchers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                id,
                WatcherState {
                    active,
                    task,
                    callback,
                },
            );
        Ok(id)
    }
}

impl Drop for EtcdRegistry {
    fn drop(&mut self) {
        self.stop(true);
    }
}

/// One watcher's etcd watch: from `next` on, resumed after a lost stream at the revision after the
/// last one delivered; after a compaction, the difference from the last list seen (DISC-ETCD-7).
async fn watch_loop(
    shared: Arc<Shared>,
    id: WatchId,
    service: String,
    mut next: i64,
    mut known: HashMap<String, Endpoint>,
    tx: mpsc::Sender<(WatchId, Event)>,
    active: Arc<AtomicBool>,
) {
    let key = etcd_service_prefix(&shared.cfg.prefix, &service);
    let send = |kind, endpoint: Endpoint| tx.send((id, Event { kind, endpoint })).is_ok();
    while active.load(Ordering::SeqCst) {
        let mut c = shared.client.clone();
        let opts = WatchOptions::new()
            .with_prefix()
            .with_prev_key()
            .with_start_revision(next);
        let mut stream = match c.watch(key.clone(), Some(opts)).await {
            Ok(s) => s,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        loop {
            let resp = match stream.message().await {
                Ok(Some(r)) => r,
                _ => break, // etcd away: reconnect and resume at `next`
            };
            if resp.compact_revision() > 0 {
                if let Ok((rev, list)) = shared.list(&service).await {
                    let now: HashMap<String, Endpoint> = list
                        .into_iter()
                        .map(|e| (e.instance_id.clone(), e))
                        .collect();
                    for (k, e) in &known {
                        if !now.contains_key(k) && !send(EventType::Removed, e.clone()) {
                            return;
                        }
                    }
                    for (k, e) in &now {
                        let kind = match known.get(k) {
                            None => Some(EventType::Added),
                            Some(old) if old != e => Some(EventType::Updated),
                            _ => None,
                        };
                        if let Some(kind) = kind {
                            if !send(kind, e.clone()) {
                                return;
                            }
                        }
                    }
                    known = now;
                    next = rev + 1;
                }
                break;
            }
            if resp.canceled() {
                break;
            }
            for ev in resp.events() {
                let Some(kv) = ev.kv() else { continue };
                next = kv.mod_revision() + 1;
                let decoded = match ev.event_type() {
                    EtcdEventType::Put => etcd_decode(&shared.cfg.prefix, kv.key(), kv.value())
                        .ok()
                        .map(|e| {
                            let kind = if kv.create_revision() == kv.mod_revision() {
                                EventType::Added
                            } else {
                                EventType::Updated
                            };
                            known.insert(e.instance_id.clone(), e.clone());
                            (kind, e)
                        }),
                    EtcdEventType::Delete => ev
                        .prev_kv()
                        .and_then(|p| etcd_decode(&shared.cfg.prefix, p.key(), p.value()).ok())
                        .map(|e| {
                            known.remove(&e.instance_id);
                            (EventType::Removed, e)
                        }),
                };
                if let Some((kind, e)) = decoded {
                    if e.service == service && !send(kind, e) {
                        return;
                    }
                }
            }
        }
        if active.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Registry for EtcdRegistry {
    fn register(&self, e: &Endpoint) -> Result<(), Code> {
        if !e.is_valid() {
            return Err(Code::InvalidArgument);
        }
        let shared = self.shared.clone();
        self.block(async { shared.put(e).await })?;
        self.shared
            .mine
            .lock()
            .unwrap_or_else(|x| x.into_inner())
            .insert((e.service.clone(), e.instance_id.clone()), e.clone());
        Ok(())
    }

    fn deregister(&self, service: &str, instance_id: &str) -> Result<(), Code> {
        if !name_ok(service) || !name_ok(instance_id) {
            return Err(Code::InvalidArgument);
        }
        self.shared
            .mine
            .lock()
            .unwrap_or_else(|x| x.into_inner())
            .remove(&(service.to_string(), instance_id.to_string()));
        let key = etcd_key(&self.shared.cfg.prefix, service, instance_id);
        let shared = self.shared.clone();
        let r = self.block(async move {
            shared
                .timed(|mut c| {
                    let key = key.clone();
                    async move { c.delete(key, None::<DeleteOptions>).await }
                })
                .await
        })?;
        if r.deleted() > 0 {
            Ok(())
        } else {
            Err(Code::NotFound)
        }
    }

    fn discover(&self, service: &str) -> Result<Vec<Endpoint>, Code> {
        if !name_ok(service) {
            return Err(Code::InvalidArgument);
        }
        let shared = self.shared.clone();
        Ok(self.block(async move { shared.list(service).await })?.1)
    }

    fn watch(&self, service: &str, callback: Callback) -> Result<WatchId, Code> {
        if !name_ok(service) {
            return Err(Code::InvalidArgument);
        }
        let shared = self.shared.clone();
        // the store's revision now: the watch reports what happens after it (no replay)
        let (rev, list) = self.block(async { shared.list(service).await })?;
        self.watch_from(service, callback, rev + 1, list)
    }

    fn unwatch(&self, id: WatchId) -> Result<(), Code> {
        let w = self
            .watchers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id)
            .ok_or(Code::NotFound)?;
        w.active.store(false, Ordering::SeqCst);
        w.task.abort();
        drop(w.callback);
        self.delivery
            .callbacks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        let me = std::thread::current().id();
        let d = &self.delivery;
        let mut c = d.calling.lock().unwrap_or_else(|e| e.into_inner());
        while matches!(*c, Some((t, i)) if i == id && t != me) {
            c = d.called.wait(c).unwrap_or_else(|e| e.into_inner());
        }
        Ok(())
    }
}
