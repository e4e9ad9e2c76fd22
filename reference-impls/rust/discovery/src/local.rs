//! The in-process registry (§4, §5, §7): services sharded over reader-writer locks, events
//! queued under a shard's lock and delivered after it is released, one thread at a time, in
//! queue order (DISC-WATCH-2..4).

use std::cell::RefCell;
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::ThreadId;

use crate::{name_ok, Callback, Code, Endpoint, Event, EventType, Registry, WatchId};

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
