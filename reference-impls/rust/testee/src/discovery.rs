//! The testee's registry scripts (spec/testee.md, "discovery", feature `discovery`): one fresh
//! in-process registry of the fp-discovery crate per script, the ops run in order on this
//! thread, every watcher callback call recorded as an event, nested `on_first_event` ops run
//! from inside the callback, and the threads phase (`concurrent`, DISC-THREAD-1/2). With cargo
//! feature `discovery-etcd` (hello feature of the same name) a script with `etcd` set runs on
//! fp-discovery's `EtcdRegistry` instead.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Barrier, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use frameproof_discovery::{
    etcd_decode, etcd_encode, Algorithm, Code, Endpoint, Event, EventType, LocalRegistry, Registry,
    Selector, WatchId,
};

use crate::pb;
use pb::discovery_op::Op;

/// Bounds of the threads phase (spec/testee.md).
const MAX_THREADS: u32 = 16;
const MAX_ROUNDS: u32 = 10_000;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn code(r: Result<(), Code>) -> u32 {
    match r {
        Ok(()) => Code::Ok as u32,
        Err(c) => c as u32,
    }
}

fn endpoint(e: &pb::DiscoveryEndpoint) -> Endpoint {
    Endpoint::new(&e.service, &e.instance_id, &e.host, e.port, e.weight)
}

fn to_pb(e: &Endpoint) -> pb::DiscoveryEndpoint {
    pb::DiscoveryEndpoint {
        service: e.service.clone(),
        instance_id: e.instance_id.clone(),
        host: e.host.clone(),
        port: e.port,
        weight: e.weight,
    }
}

fn event_type(k: EventType) -> i32 {
    match k {
        EventType::Added => pb::discovery_event::Type::Added as i32,
        EventType::Removed => pb::discovery_event::Type::Removed as i32,
        EventType::Updated => pb::discovery_event::Type::Updated as i32,
    }
}

/// One script's state. Its locks are never held across a registry call, so a callback (which
/// runs inside one) can record events and run its nested op.
pub struct Runner {
    reg: Arc<dyn Registry>,
    /// The in-process registry, when that is what `reg` is (the threads phase needs it).
    local: Option<Arc<LocalRegistry>>,
    events: Mutex<Vec<pb::DiscoveryEvent>>,
    op_index: AtomicU32,
    /// Watcher number -> the registry's handle; numbers are given out in the order watches
    /// succeed and stay used after an unwatch.
    watches: Mutex<HashMap<u32, WatchId>>,
    /// Per watcher number: its service, the script's writes under it since the watch, and the
    /// callback calls so far (the etcd registry's events arrive on its own thread).
    progress: Mutex<HashMap<u32, Progress>>,
    selectors: Mutex<HashMap<u32, Arc<Selector>>>,
    me: OnceLock<Weak<Runner>>,
    /// etcd: how long to wait for watchers to catch up with the script's own writes (the request
    /// timeout); None in-process, where every event is delivered before the op returns.
    catch_up: Option<Duration>,
}

thread_local! {
    /// Set while this thread runs one of a runner's callbacks (the etcd registry's delivery
    /// thread): waiting there for more events would only wait out the timeout.
    static IN_CALLBACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[derive(Default)]
struct Progress {
    service: String,
    active: bool,
    writes: u64,
    seen: u64,
}

/// What a script is answered with: the response, or `skipped` with the reason.
pub enum Answer {
    Done(pb::DiscoveryResponse),
    /// (Only built without the etcd registry.)
    #[cfg_attr(feature = "discovery-etcd", allow(dead_code))]
    Skipped(String),
}

/// Runs a script on a fresh registry: in-process, or with `etcd` set the etcd-backed one.
pub fn run(req: &pb::DiscoveryRequest) -> Answer {
    let Some(etcd) = &req.etcd else {
        let local = Arc::new(LocalRegistry::new());
        let reg: Arc<dyn Registry> = local.clone();
        let (runner, results) = Runner::script(reg, Some(local.clone()), None, &req.ops);
        local.deliver();
        return Answer::Done(runner.response(results));
    };
    run_etcd(req, etcd)
}

#[cfg(not(feature = "discovery-etcd"))]
fn run_etcd(_req: &pb::DiscoveryRequest, _etcd: &pb::DiscoveryEtcd) -> Answer {
    Answer::Skipped("built without the etcd registry (cargo feature discovery-etcd)".into())
}

#[cfg(feature = "discovery-etcd")]
fn run_etcd(req: &pb::DiscoveryRequest, etcd: &pb::DiscoveryEtcd) -> Answer {
    use frameproof_discovery::etcd::{EtcdConfig, EtcdRegistry};
    let mut cfg = EtcdConfig::new(&etcd.endpoint);
    cfg.prefix = etcd.prefix.clone();
    if etcd.lease_ttl_s > 0 {
        cfg.lease_ttl = Duration::from_secs(etcd.lease_ttl_s as u64);
    }
    if etcd.request_timeout_ms > 0 {
        cfg.request_timeout = Duration::from_millis(etcd.request_timeout_ms as u64);
    }
    let timeout = cfg.request_timeout;
    let reg = match EtcdRegistry::connect(cfg) {
        Ok(r) => Arc::new(r),
        Err(c) => {
            // Every op answers the code the registry could not be created with.
            let results = req
                .ops
                .iter()
                .map(|_| pb::DiscoveryResult {
                    code: c as u32,
                    ..Default::default()
                })
                .collect();
            return Answer::Done(pb::DiscoveryResponse {
                results,
                events: Vec::new(),
            });
        }
    };
    let dynreg: Arc<dyn Registry> = reg.clone();
    let (runner, results) = Runner::script(dynreg, None, Some(timeout), &req.ops);
    // Events arrive on the registry's thread: wait (bounded) until every active watcher has been
    // told about the script's own writes under its service.
    runner.wait_caught_up(None);
    let response = runner.response(results);
    // Close: unwatch, then revoke the lease (drop), or leave everything as a crash would.
    for id in lock(&runner.watches).values() {
        let _ = runner.reg.unwatch(*id);
    }
    drop(runner);
    match Arc::try_unwrap(reg) {
        Ok(r) if etcd.abandon => r.abandon(),
        Ok(r) => drop(r),
        Err(_) => {}
    }
    Answer::Done(response)
}

impl Runner {
    fn script(
        reg: Arc<dyn Registry>,
        local: Option<Arc<LocalRegistry>>,
        catch_up: Option<Duration>,
        ops: &[pb::DiscoveryOp],
    ) -> (Arc<Runner>, Vec<pb::DiscoveryResult>) {
        let runner = Arc::new(Runner {
            reg,
            local,
            events: Mutex::new(Vec::new()),
            op_index: AtomicU32::new(0),
            watches: Mutex::new(HashMap::new()),
            progress: Mutex::new(HashMap::new()),
            selectors: Mutex::new(HashMap::new()),
            me: OnceLock::new(),
            catch_up,
        });
        let _ = runner.me.set(Arc::downgrade(&runner));
        let mut results = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            runner.op_index.store(i as u32, Ordering::SeqCst);
            results.push(runner.execute(op));
        }
        runner.op_index.store(ops.len() as u32, Ordering::SeqCst);
        (runner, results)
    }

    fn response(&self, results: Vec<pb::DiscoveryResult>) -> pb::DiscoveryResponse {
        let events = std::mem::take(&mut *lock(&self.events));
        pb::DiscoveryResponse { results, events }
    }

    /// etcd: waits, at most the request timeout, until the active watcher `only` (None: every
    /// active watcher) has been told about the script's own writes under its service. Returns at
    /// once in-process, and from inside a callback (the delivery thread would wait for itself).
    fn wait_caught_up(&self, only: Option<u32>) {
        let Some(timeout) = self.catch_up else { return };
        if IN_CALLBACK.with(|c| c.get()) {
            return;
        }
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let behind = lock(&self.progress)
                .iter()
                .any(|(n, p)| (only.is_none() || only == Some(*n)) && p.active && p.seen < p.writes);
            if !behind {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A successful write under `service`: every active watcher of it expects one more event.
    fn wrote(&self, service: &str) {
        for p in lock(&self.progress).values_mut() {
            if p.active && p.service == service {
                p.writes += 1;
            }
        }
    }

    fn callback(&self, number: u32, on_first: Option<pb::DiscoveryOp>) -> Box<dyn Fn(&Event) + Send + Sync> {
        let me = self.me.get().cloned().unwrap_or_default();
        let fired = AtomicBool::new(false);
        Box::new(move |ev: &Event| {
            let Some(runner) = me.upgrade() else { return };
            let was = IN_CALLBACK.with(|c| c.replace(true));
            struct Restore(bool);
            impl Drop for Restore {
                fn drop(&mut self) {
                    IN_CALLBACK.with(|c| c.set(self.0));
                }
            }
            let _restore = Restore(was);
            if let Some(p) = lock(&runner.progress).get_mut(&number) {
                p.seen += 1;
            }
            let at = {
                let mut events = lock(&runner.events);
                events.push(pb::DiscoveryEvent {
                    watch: number,
                    r#type: event_type(ev.kind),
                    endpoint: Some(to_pb(&ev.endpoint)),
                    op: runner.op_index.load(Ordering::SeqCst),
                    nested: None,
                });
                events.len() - 1
            };
            if let Some(op) = &on_first {
                if !fired.swap(true, Ordering::SeqCst) {
                    // DISC-WATCH-3: the nested op runs from inside the callback.
                    let nested = runner.execute(op);
                    lock(&runner.events)[at].nested = Some(nested);
                }
            }
        })
    }

    fn execute(&self, op: &pb::DiscoveryOp) -> pb::DiscoveryResult {
        let mut res = pb::DiscoveryResult::default();
        let reg: &dyn Registry = &*self.reg;
        match &op.op {
            None => res.code = Code::InvalidArgument as u32,
            Some(Op::Register(e)) => {
                res.code = code(reg.register(&endpoint(e)));
                if res.code == 0 {
                    self.wrote(&e.service);
                }
            }
            Some(Op::Deregister(e)) => {
                res.code = code(reg.deregister(&e.service, &e.instance_id));
                if res.code == 0 {
                    self.wrote(&e.service);
                }
            }
            Some(Op::Discover(service)) => match reg.discover(service) {
                Ok(list) => res.endpoints = list.iter().map(to_pb).collect(),
                Err(c) => res.code = c as u32,
            },
            Some(Op::Watch(w)) => {
                // The next number, given out only if the watch succeeds.
                let number = lock(&self.watches).len() as u32;
                let cb = self.callback(number, w.on_first_event.as_deref().cloned());
                match reg.watch(&w.service, cb) {
                    Ok(id) => {
                        lock(&self.watches).insert(number, id);
                        let mut progress = lock(&self.progress);
                        let p = progress.entry(number).or_default();
                        p.service = w.service.clone();
                        p.active = true;
                        res.watch = number;
                    }
                    Err(c) => res.code = c as u32,
                }
            }
            Some(Op::Unwatch(number)) => {
                let id = lock(&self.watches).get(number).copied();
                // etcd: the events of the script's own writes reach the watcher asynchronously
                // (DISC-ETCD-6); one still in flight would be dropped with the watcher, while the
                // model delivered it before this op: let the watcher catch up first (bounded).
                if id.is_some() {
                    self.wait_caught_up(Some(*number));
                }
                res.code = match id {
                    None => Code::NotFound as u32,
                    Some(id) => code(reg.unwatch(id)),
                };
                if let Some(p) = lock(&self.progress).get_mut(number) {
                    p.active = false;
                }
            }
            Some(Op::Select(s)) => {
                let existing = lock(&self.selectors).get(&s.selector_id).cloned();
                let sel = match existing {
                    Some(sel) => sel,
                    None => {
                        let made = s
                            .selector
                            .parse::<Algorithm>()
                            .map_err(|_| Code::InvalidArgument)
                            .and_then(|a| Selector::new(&s.service, a, Some(s.seed)));
                        match made {
                            Ok(sel) => {
                                let sel = Arc::new(sel);
                                lock(&self.selectors).insert(s.selector_id, sel.clone());
                                sel
                            }
                            Err(c) => {
                                res.code = c as u32;
                                return res;
                            }
                        }
                    }
                };
                for _ in 0..s.count {
                    match sel.select(reg) {
                        Ok(e) => res.picks.push(e.instance_id),
                        Err(c) => {
                            res.code = c as u32;
                            break;
                        }
                    }
                }
            }
            Some(Op::EtcdEncode(a)) => {
                let e = a.endpoint.as_ref().map(endpoint).unwrap_or_else(|| Endpoint::new("", "", "", 0, 0));
                match etcd_encode(&a.prefix, &e) {
                    Ok((k, v)) => {
                        res.etcd_key = k.into_bytes().into();
                        res.etcd_value = v.into();
                    }
                    Err(c) => res.code = c as u32,
                }
            }
            Some(Op::EtcdDecode(a)) => match etcd_decode(&a.prefix, &a.key, &a.value) {
                Ok(e) => res.endpoints = vec![to_pb(&e)],
                Err(c) => res.code = c as u32,
            },
            Some(Op::Concurrent(c)) => match &self.local {
                Some(local) => concurrent(local, c, &mut res),
                None => res.code = Code::InvalidArgument as u32,
            },
            // time passes (on etcd the runner acts on the store meanwhile: spec/testee.md)
            Some(Op::WaitMs(ms)) => std::thread::sleep(std::time::Duration::from_millis(u64::from(*ms))),
        }
        res
    }
}

/// The threads phase of spec/testee.md (DISC-THREAD-1/2).
fn concurrent(reg: &Arc<LocalRegistry>, a: &pb::DiscoveryConcurrent, res: &mut pb::DiscoveryResult) {
    if !(1..=MAX_THREADS).contains(&a.threads) || !(1..=MAX_ROUNDS).contains(&a.rounds) {
        res.code = Code::InvalidArgument as u32;
        return;
    }
    let svc = a.service.as_str();
    let counts = Arc::new(Mutex::new([0u32; 4])); // added, removed, updated, failures
    let c2 = counts.clone();
    let watch = reg.watch(
        svc,
        Box::new(move |ev: &Event| {
            let i = match ev.kind {
                EventType::Added => 0,
                EventType::Removed => 1,
                EventType::Updated => 2,
            };
            lock(&c2)[i] += 1;
        }),
    );
    let fail = || lock(&counts)[3] += 1;
    let barrier = Barrier::new(a.threads as usize);
    let selector: OnceLock<Result<Selector, Code>> = OnceLock::new();
    let picked: Mutex<BTreeMap<String, u32>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for t in 0..a.threads {
            let (barrier, selector, picked, fail) = (&barrier, &selector, &picked, &fail);
            let reg: &LocalRegistry = reg;
            scope.spawn(move || {
                for r in 0..a.rounds {
                    let iid = format!("c{t}-{r}");
                    if reg
                        .register(&Endpoint::new(svc, &iid, "127.0.0.1", r % 65536, 1))
                        .is_err()
                    {
                        fail();
                    }
                    match reg.discover(svc) {
                        Ok(list) if list.iter().any(|e| e.instance_id == iid) => {}
                        _ => fail(),
                    }
                    if r % 2 == 1 && reg.deregister(svc, &iid).is_err() {
                        fail();
                    }
                }
                barrier.wait();
                let sel = selector.get_or_init(|| Selector::new(svc, Algorithm::RoundRobin, Some(0)));
                let mut mine: BTreeMap<String, u32> = BTreeMap::new();
                for _ in 0..a.picks {
                    match sel.as_ref().map_err(|c| *c).and_then(|s| s.select(reg)) {
                        Ok(e) => *mine.entry(e.instance_id).or_default() += 1,
                        Err(_) => fail(),
                    }
                }
                let mut all = lock(picked);
                for (k, v) in mine {
                    *all.entry(k).or_default() += v;
                }
            });
        }
    });
    reg.deliver();
    if let Ok(id) = watch {
        let _ = reg.unwatch(id);
    } else {
        fail();
    }
    if let Ok(list) = reg.discover(svc) {
        res.endpoints = list.iter().map(to_pb).collect();
    }
    let c = *lock(&counts);
    res.concurrent = Some(pb::DiscoveryConcurrentResult {
        failures: c[3],
        added: c[0],
        removed: c[1],
        updated: c[2],
        picks: std::mem::take(&mut *lock(&picked))
            .into_iter()
            .map(|(instance_id, count)| pb::DiscoveryCount { instance_id, count })
            .collect(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(service: &str, id: &str, weight: u32) -> pb::DiscoveryEndpoint {
        pb::DiscoveryEndpoint {
            service: service.into(),
            instance_id: id.into(),
            host: "127.0.0.1".into(),
            port: 80,
            weight,
        }
    }

    fn op(o: Op) -> pb::DiscoveryOp {
        pb::DiscoveryOp { op: Some(o) }
    }

    #[test]
    fn script_with_a_nested_watch_and_selectors() {
        let nested = op(Op::Watch(Box::new(pb::DiscoveryWatch {
            service: "b".into(),
            on_first_event: None,
        })));
        let req = pb::DiscoveryRequest {
            codec: None,
            ops: vec![
                op(Op::Watch(Box::new(pb::DiscoveryWatch {
                    service: "a".into(),
                    on_first_event: Some(Box::new(nested)),
                }))),
                op(Op::Register(ep("a", "x", 1))),
                op(Op::Register(ep("b", "y", 1))),
                op(Op::Register(ep("a", "z", 1))),
                op(Op::Select(pb::DiscoverySelect {
                    selector_id: 0,
                    service: "a".into(),
                    selector: "round-robin".into(),
                    seed: 1,
                    count: 4,
                })),
                op(Op::Select(pb::DiscoverySelect {
                    selector_id: 1,
                    service: "a".into(),
                    selector: "no-such".into(),
                    seed: 1,
                    count: 1,
                })),
                op(Op::Unwatch(7)),
                op(Op::Discover("nobody".into())),
            ],
            etcd: None,
        };
        let Answer::Done(r) = run(&req) else {
            panic!("skipped")
        };
        let codes: Vec<u32> = r.results.iter().map(|x| x.code).collect();
        let nf = Code::NotFound as u32;
        assert_eq!(codes[..7], [0, 0, 0, 0, 0, Code::InvalidArgument as u32, nf]);
        assert_eq!(r.results[0].watch, 0);
        assert_eq!(r.results[4].picks.len(), 4);
        assert_eq!(r.results[4].picks[0], r.results[4].picks[2]);
        assert_ne!(r.results[4].picks[0], r.results[4].picks[1]);
        // Watcher 0 saw x (during op 1, running the nested watch = watcher 1), then z (op 3);
        // watcher 1 saw y (op 2).
        let ev: Vec<(u32, u32, String)> = r
            .events
            .iter()
            .map(|e| (e.watch, e.op, e.endpoint.as_ref().unwrap().instance_id.clone()))
            .collect();
        assert_eq!(ev, vec![(0, 1, "x".into()), (1, 2, "y".into()), (0, 3, "z".into())]);
        let nested = r.events[0].nested.as_ref().unwrap();
        assert_eq!((nested.code, nested.watch), (0, 1));
        assert!(r.events[1].nested.is_none());
    }

    #[test]
    fn threads_phase_counts() {
        let mut res = pb::DiscoveryResult::default();
        let reg = Arc::new(LocalRegistry::new());
        let a = pb::DiscoveryConcurrent {
            service: "s".into(),
            threads: 4,
            rounds: 50,
            picks: 100,
        };
        concurrent(&reg, &a, &mut res);
        let c = res.concurrent.unwrap();
        assert_eq!((res.code, c.failures, c.added, c.removed, c.updated), (0, 0, 200, 100, 0));
        assert_eq!(res.endpoints.len(), 100);
        assert_eq!(c.picks.iter().map(|p| p.count).sum::<u32>(), 400);
        assert!(c.picks.iter().all(|p| p.count == 4));
        let mut bad = pb::DiscoveryResult::default();
        concurrent(&reg, &pb::DiscoveryConcurrent { threads: 0, ..a }, &mut bad);
        assert_eq!(bad.code, Code::InvalidArgument as u32);
    }
}
