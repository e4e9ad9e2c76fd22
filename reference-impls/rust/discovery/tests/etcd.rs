//! The etcd-backed registry against a real etcd (Debian's etcd-server), started here on 127.0.0.1
//! with a temporary data dir and killed at the end: the registry's semantics, lease expiry after a
//! crash, an unreachable etcd, and recovery after etcd restarts (spec/discovery.md §8).
#![cfg(feature = "etcd")]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use frameproof_discovery::etcd::{EtcdConfig, EtcdRegistry};
use frameproof_discovery::*;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// etcd on 127.0.0.1 with a temporary data dir; `stop` and `start` keep the data (a restart).
struct LocalEtcd {
    dir: PathBuf,
    client: u16,
    peer: u16,
    child: Option<Child>,
}

impl LocalEtcd {
    fn new() -> Self {
        let dir =
            std::env::temp_dir().join(format!("fp-etcd-{}-{}", std::process::id(), free_port()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut e = LocalEtcd {
            dir,
            client: free_port(),
            peer: free_port(),
            child: None,
        };
        e.start();
        e
    }

    fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.client)
    }

    fn start(&mut self) {
        let (c, p) = (
            format!("http://127.0.0.1:{}", self.client),
            format!("http://127.0.0.1:{}", self.peer),
        );
        let log = std::fs::File::create(self.dir.join("etcd.log")).unwrap();
        let child = Command::new("etcd")
            .args(["--name", "fp", "--data-dir"])
            .arg(self.dir.join("data"))
            .args([
                "--listen-client-urls",
                &c,
                "--advertise-client-urls",
                &c,
                "--listen-peer-urls",
                &p,
                "--initial-advertise-peer-urls",
                &p,
                "--initial-cluster",
                &format!("fp={p}"),
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd is not installed: apt-get install etcd-server (Debian)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.client)).is_ok() {
                if let Ok(r) = EtcdRegistry::connect(config(&self.endpoint(), "probe", 2)) {
                    if r.discover("probe").is_ok() {
                        return;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "etcd did not start within 20 s (log: {})",
            self.dir.join("etcd.log").display()
        );
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill(); // our own child, by its handle
            let _ = c.wait();
        }
    }
}

impl Drop for LocalEtcd {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn config(endpoint: &str, prefix: &str, ttl: u64) -> EtcdConfig {
    EtcdConfig {
        endpoints: vec![endpoint.into()],
        prefix: prefix.into(),
        lease_ttl: Duration::from_secs(ttl),
        request_timeout: Duration::from_secs(2),
    }
}

type Log = Arc<Mutex<Vec<(EventType, String, u32)>>>;

fn recorder(log: &Log) -> Callback {
    let log = log.clone();
    Box::new(move |e: &Event| {
        log.lock()
            .unwrap()
            .push((e.kind, e.endpoint.instance_id.clone(), e.endpoint.port))
    })
}

/// Polls `f` until it is true or `limit` passed; the time it took, or None.
fn within(limit: Duration, mut f: impl FnMut() -> bool) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn ep(id: &str, port: u32, weight: u32) -> Endpoint {
    Endpoint::new("svc.a", id, "10.0.0.1", port, weight)
}

#[test]
fn registry_semantics_on_etcd() {
    let etcd = LocalEtcd::new();
    let r = EtcdRegistry::connect(config(&etcd.endpoint(), "fp-test/sem", 10)).unwrap();
    let other = EtcdRegistry::connect(config(&etcd.endpoint(), "fp-test/sem", 10)).unwrap(); // another process
    let log: Log = Default::default();
    let w = other.watch("svc.a", recorder(&log)).unwrap();
    assert_eq!(r.discover("svc.a"), Ok(vec![]));
    r.register(&ep("i1", 1, 5)).unwrap();
    r.register(&ep("i0", 2, 1)).unwrap();
    r.register(&ep("i2", 3, 0)).unwrap();
    r.register(&ep("i1", 9, 2)).unwrap(); // replaced in place (DISC-REG-2, DISC-ETCD-4)
    let list = other.discover("svc.a").unwrap();
    assert_eq!(
        list.iter()
            .map(|e| (e.instance_id.as_str(), e.port))
            .collect::<Vec<_>>(),
        [("i1", 9), ("i0", 2), ("i2", 3)]
    );
    assert_eq!(r.deregister("svc.a", "i0"), Ok(()));
    assert_eq!(r.deregister("svc.a", "i0"), Err(Code::NotFound));
    assert_eq!(r.deregister("svc.none", "i0"), Err(Code::NotFound));
    assert_eq!(r.register(&ep("bad/id", 1, 1)), Err(Code::InvalidArgument));
    let want = vec![
        (EventType::Added, "i1".to_string(), 1),
        (EventType::Added, "i0".into(), 2),
        (EventType::Added, "i2".into(), 3),
        (EventType::Updated, "i1".into(), 9),
        (EventType::Removed, "i0".into(), 2),
    ];
    within(Duration::from_secs(5), || {
        log.lock().unwrap().len() >= want.len()
    })
    .expect("events within 5 s");
    assert_eq!(*log.lock().unwrap(), want); // DISC-ETCD-6, in revision order
                                            // selectors over the etcd registry's lists
    let s = Selector::new("svc.a", Algorithm::WeightedRoundRobin, None).unwrap();
    r.register(&ep("i3", 4, 1)).unwrap();
    let picks: Vec<String> = (0..3).map(|_| s.select(&r).unwrap().instance_id).collect();
    assert_eq!(picks, ["i1", "i3", "i1"]); // weights i1 2, i3 1 (i2 drained)
    assert_eq!(other.unwatch(w), Ok(()));
    assert_eq!(other.unwatch(w), Err(Code::NotFound));
    // the key and value of §8
    drop(r); // revokes its lease: its keys go
    within(Duration::from_secs(3), || {
        other.discover("svc.a").unwrap().is_empty()
    })
    .expect("keys gone after the revoke");
}

#[test]
fn a_crashed_instance_disappears_within_the_lease() {
    let etcd = LocalEtcd::new();
    let ttl = 2;
    let a = EtcdRegistry::connect(config(&etcd.endpoint(), "fp-test/crash", ttl)).unwrap();
    let b = EtcdRegistry::connect(config(&etcd.endpoint(), "fp-test/crash", 10)).unwrap();
    let log: Log = Default::default();
    b.watch("svc.a", recorder(&log)).unwrap();
    a.register(&ep("i0", 1, 1)).unwrap();
    // keep-alives hold it past the TTL
    std::thread::sleep(Duration::from_secs(ttl + 1));
    assert_eq!(
        b.discover("svc.a").unwrap().len(),
        1,
        "kept alive past its TTL"
    );
    a.abandon(); // a crash: no revoke, no more keep-alives
    let limit = Duration::from_secs_f64(ttl as f64 * 4.0 / 3.0 + 1.5);
    let took = within(limit, || b.discover("svc.a").unwrap().is_empty())
        .unwrap_or_else(|| panic!("still registered {limit:?} after the crash"));
    eprintln!("gone {took:?} after the crash (lease TTL {ttl} s)");
    within(Duration::from_secs(3), || {
        log.lock()
            .unwrap()
            .iter()
            .any(|x| x.0 == EventType::Removed)
    })
    .expect("watchers told REMOVED");
}

#[test]
fn unreachable_etcd_is_a_bounded_connection_error() {
    let port = free_port(); // nothing listens there
    let t0 = Instant::now();
    match EtcdRegistry::connect(config(&format!("127.0.0.1:{port}"), "fp-test/none", 2)) {
        Err(c) => assert_eq!(c, Code::ConnectionError),
        Ok(r) => assert_eq!(r.register(&ep("i0", 1, 1)), Err(Code::ConnectionError)),
    }
    assert!(
        t0.elapsed() < Duration::from_secs(6),
        "took {:?}",
        t0.elapsed()
    );
}

#[test]
fn the_registry_recovers_after_etcd_restarts() {
    let mut etcd = LocalEtcd::new();
    let a = EtcdRegistry::connect(config(&etcd.endpoint(), "fp-test/restart", 2)).unwrap();
    let log: Log = Default::default();
    a.watch("svc.a", recorder(&log)).unwrap();
    a.register(&ep("i0", 1, 1)).unwrap();
    within(Duration::from_secs(5), || log.lock().unwrap().len() == 1).expect("ADDED i0");
    etcd.stop();
    let t0 = Instant::now();
    assert_eq!(a.register(&ep("i1", 2, 1)), Err(Code::ConnectionError));
    assert_eq!(a.discover("svc.a"), Err(Code::ConnectionError));
    assert!(
        t0.elapsed() < Duration::from_secs(6),
        "bounded: {:?}",
        t0.elapsed()
    );
    std::thread::sleep(Duration::from_secs(3)); // longer than the lease TTL
    etcd.start();
    // operations succeed again, the instance is there (its lease survived or was renewed and the
    // instance written again), and the watch resumed: it sees a new registration once
    within(Duration::from_secs(10), || {
        a.register(&ep("i2", 3, 1)).is_ok()
    })
    .expect("register works again");
    within(Duration::from_secs(10), || {
        a.discover("svc.a")
            .map(|l| {
                l.iter().any(|e| e.instance_id == "i0") && l.iter().any(|e| e.instance_id == "i2")
            })
            .unwrap_or(false)
    })
    .expect("i0 and i2 registered after the restart");
    within(Duration::from_secs(10), || {
        log.lock().unwrap().iter().any(|x| x.1 == "i2")
    })
    .expect("the watch resumed");
    let log = log.lock().unwrap();
    // no event delivered twice (a lease that expired during the outage may add a REMOVED and an
    // ADDED, the instance written again under a new lease, but never the same event twice in a row)
    assert!(
        log.windows(2).all(|w| w[0] != w[1]),
        "an event twice: {log:?}"
    );
}

#[test]
fn a_watch_whose_history_was_compacted_gets_the_difference() {
    // DISC-ETCD-7: a watcher that resumes at a revision etcd compacted away is told the difference
    // between the last list it saw and the current one, then goes on with later changes
    let etcd = LocalEtcd::new();
    let r = EtcdRegistry::connect(config(&etcd.endpoint(), "fp-test/compact", 10)).unwrap();
    r.register(&ep("i0", 1, 1)).unwrap();
    r.register(&ep("i1", 1, 1)).unwrap();
    let seen = r.discover("svc.a").unwrap(); // what the watcher last saw: i0, i1
    r.deregister("svc.a", "i0").unwrap();
    r.register(&ep("i1", 2, 1)).unwrap();
    r.register(&ep("i2", 1, 1)).unwrap();
    // compact everything up to now: the history after `seen` is gone
    let compact = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", &etcd.endpoint(), "compaction", "--physical"])
        .arg(format!("{}", current_revision(&etcd)))
        .output()
        .expect("etcdctl (Debian: etcd-client)");
    assert!(
        compact.status.success(),
        "{}",
        String::from_utf8_lossy(&compact.stderr)
    );
    let log: Log = Default::default();
    r.watch_from("svc.a", recorder(&log), 2, seen).unwrap();
    within(Duration::from_secs(5), || log.lock().unwrap().len() >= 3)
        .expect("the difference as events");
    let mut got = log.lock().unwrap().clone();
    got.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        got,
        [
            (EventType::Removed, "i0".to_string(), 1),
            (EventType::Updated, "i1".into(), 2),
            (EventType::Added, "i2".into(), 1)
        ]
    );
    r.register(&ep("i3", 1, 1)).unwrap();
    within(Duration::from_secs(5), || log.lock().unwrap().len() == 4).expect("then later changes");
    assert_eq!(
        log.lock().unwrap()[3],
        (EventType::Added, "i3".to_string(), 1)
    );
}

fn current_revision(etcd: &LocalEtcd) -> i64 {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            &etcd.endpoint(),
            "endpoint",
            "status",
            "-w",
            "json",
        ])
        .output()
        .expect("etcdctl (Debian: etcd-client)");
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("etcdctl endpoint status json");
    v[0]["Status"]["header"]["revision"]
        .as_i64()
        .expect("revision")
}
