//! The in-process registry and the selectors against spec/discovery.md, requirement by requirement.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use frameproof_discovery::*;

fn ep(service: &str, id: &str, weight: u32) -> Endpoint {
    Endpoint::new(service, id, "10.0.0.1", 7000, weight)
}

type Log = Arc<Mutex<Vec<(u64, EventType, String)>>>;

/// A callback that records (watcher, type, instance id).
fn recorder(log: &Log, who: u64) -> Callback {
    let log = log.clone();
    Box::new(move |e: &Event| {
        log.lock()
            .unwrap()
            .push((who, e.kind, e.endpoint.instance_id.clone()))
    })
}

fn ids(list: &[Endpoint]) -> Vec<&str> {
    list.iter().map(|e| e.instance_id.as_str()).collect()
}

#[test]
fn register_appends_and_replaces_in_place() {
    // DISC-REG-1, DISC-REG-2
    let r = LocalRegistry::new();
    let log: Log = Default::default();
    r.watch("a", recorder(&log, 0)).unwrap();
    for id in ["i1", "i0", "i2"] {
        r.register(&ep("a", id, 1)).unwrap();
    }
    r.register(&Endpoint::new("a", "i0", "10.0.0.2", 8000, 7))
        .unwrap();
    let l = r.discover("a").unwrap();
    assert_eq!(ids(&l), ["i1", "i0", "i2"]);
    assert_eq!(l[1], Endpoint::new("a", "i0", "10.0.0.2", 8000, 7));
    let kinds: Vec<_> = log.lock().unwrap().iter().map(|x| x.1).collect();
    assert_eq!(
        kinds,
        [
            EventType::Added,
            EventType::Added,
            EventType::Added,
            EventType::Updated
        ]
    );
}

#[test]
fn deregister_and_discover_edges() {
    // DISC-REG-3, DISC-REG-4, DISC-REG-5, DISC-REG-6
    let r = LocalRegistry::new();
    assert_eq!(r.discover("nowhere"), Ok(vec![]));
    assert_eq!(r.deregister("a", "i0"), Err(Code::NotFound));
    r.register(&Endpoint::new("a", "i0", "h", 1, 42)).unwrap();
    r.register(&ep("b", "i0", 1)).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l2 = log.clone();
    r.watch(
        "a",
        Box::new(move |e: &Event| l2.lock().unwrap().push(e.clone())),
    )
    .unwrap();
    assert_eq!(r.deregister("a", "i9"), Err(Code::NotFound));
    assert_eq!(r.deregister("a", "i0"), Ok(()));
    assert_eq!(r.deregister("a", "i0"), Err(Code::NotFound));
    assert_eq!(r.discover("a"), Ok(vec![]));
    assert_eq!(ids(&r.discover("b").unwrap()), ["i0"]);
    // REMOVED carries the endpoint as registered
    assert_eq!(
        *log.lock().unwrap(),
        vec![Event {
            kind: EventType::Removed,
            endpoint: Endpoint::new("a", "i0", "h", 1, 42)
        }]
    );
}

#[test]
fn invalid_arguments_change_nothing() {
    // DISC-EP-2
    let r = LocalRegistry::new();
    for bad in [
        ep("", "i", 1),
        ep("a", "", 1),
        ep("a/b", "i", 1),
        ep("a", "i/0", 1),
        Endpoint::new("a", "i", "", 1, 1),
        Endpoint::new("a", "i", "h", 65536, 1),
        ep(&"s".repeat(256), "i", 1),
    ] {
        assert_eq!(r.register(&bad), Err(Code::InvalidArgument), "{bad:?}");
    }
    assert!(r.register(&ep(&"s".repeat(255), "i", 1)).is_ok());
    assert_eq!(r.discover("a/b"), Err(Code::InvalidArgument));
    assert_eq!(r.discover("a"), Ok(vec![]));
}

#[test]
fn events_in_order_across_watchers_and_nested_calls_queued() {
    // DISC-WATCH-2, DISC-WATCH-3: watcher 0's callback registers n0 on its first call; its event
    // must reach both watchers after the current event has reached watcher 1.
    let r = Arc::new(LocalRegistry::new());
    let log: Log = Default::default();
    let (r2, l2) = (r.clone(), log.clone());
    let fired = Arc::new(Mutex::new(false));
    r.watch(
        "a",
        Box::new(move |e: &Event| {
            l2.lock()
                .unwrap()
                .push((0, e.kind, e.endpoint.instance_id.clone()));
            let mut f = fired.lock().unwrap();
            if !*f {
                *f = true;
                drop(f);
                r2.register(&ep("a", "n0", 1)).unwrap(); // would deadlock or recurse if called under the lock
                assert_eq!(ids(&r2.discover("a").unwrap()), ["i0", "n0"]);
            }
        }),
    )
    .unwrap();
    r.watch("a", recorder(&log, 1)).unwrap();
    r.register(&ep("a", "i0", 1)).unwrap();
    let got: Vec<_> = log
        .lock()
        .unwrap()
        .iter()
        .map(|x| (x.0, x.2.clone()))
        .collect();
    let want: Vec<(u64, String)> = [(0, "i0"), (1, "i0"), (0, "n0"), (1, "n0")]
        .iter()
        .map(|&(w, i)| (w, i.into()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn unwatch_one_handle_and_from_inside_a_callback() {
    // DISC-WATCH-5
    let r = Arc::new(LocalRegistry::new());
    let log: Log = Default::default();
    let (r2, l2) = (r.clone(), log.clone());
    let me = Arc::new(Mutex::new(None::<WatchId>));
    let me2 = me.clone();
    let id = r
        .watch(
            "a",
            Box::new(move |e: &Event| {
                l2.lock()
                    .unwrap()
                    .push((0, e.kind, e.endpoint.instance_id.clone()));
                let id = me2.lock().unwrap().take();
                if let Some(id) = id {
                    assert_eq!(r2.unwatch(id), Ok(())); // unwatches itself: must not wait for itself
                }
            }),
        )
        .unwrap();
    *me.lock().unwrap() = Some(id);
    let other = r.watch("a", recorder(&log, 1)).unwrap();
    r.register(&ep("a", "i0", 1)).unwrap();
    r.register(&ep("a", "i1", 1)).unwrap();
    assert_eq!(r.unwatch(id), Err(Code::NotFound));
    assert_eq!(r.unwatch(WatchId(999)), Err(Code::NotFound));
    assert_eq!(r.unwatch(other), Ok(()));
    r.register(&ep("a", "i2", 1)).unwrap();
    let got: Vec<_> = log
        .lock()
        .unwrap()
        .iter()
        .map(|x| (x.0, x.2.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (0, "i0".to_string()),
            (1, "i0".to_string()),
            (1, "i1".to_string())
        ]
    );
}

fn picks(r: &LocalRegistry, s: &Selector, n: usize) -> Vec<String> {
    (0..n).map(|_| s.select(r).unwrap().instance_id).collect()
}

#[test]
fn round_robin_order_weight_zero_and_list_changes() {
    // DISC-SEL-1, DISC-SEL-2
    let r = LocalRegistry::new();
    let s = Selector::new("a", Algorithm::RoundRobin, None).unwrap();
    assert_eq!(s.select(&r), Err(Code::NotFound));
    r.register(&ep("a", "a", 1)).unwrap();
    r.register(&ep("a", "b", 0)).unwrap();
    r.register(&ep("a", "c", 1)).unwrap();
    assert_eq!(picks(&r, &s, 3), ["a", "c", "a"]);
    r.register(&ep("a", "d", 1)).unwrap();
    assert_eq!(picks(&r, &s, 4), ["a", "c", "d", "a"]); // counter 3.. over [a, c, d]
}

#[test]
fn smooth_weighted_round_robin_is_nginx() {
    // DISC-SEL-3: weights 5 1 1 give a a b a c a a
    let r = LocalRegistry::new();
    for (id, w) in [("a", 5), ("b", 1), ("c", 1)] {
        r.register(&ep("a", id, w)).unwrap();
    }
    let s = Selector::new("a", Algorithm::WeightedRoundRobin, None).unwrap();
    assert_eq!(
        picks(&r, &s, 14),
        ["a", "a", "b", "a", "c", "a", "a", "a", "a", "b", "a", "c", "a", "a"]
    );
    // exact with the largest weights
    let r = LocalRegistry::new();
    r.register(&ep("a", "x", u32::MAX)).unwrap();
    r.register(&ep("a", "y", u32::MAX - 1)).unwrap();
    let s = Selector::new("a", Algorithm::WeightedRoundRobin, None).unwrap();
    assert_eq!(picks(&r, &s, 4), ["x", "y", "x", "y"]);
}

/// DISC-SEL-4 and DISC-SEL-5 with the spec's seeds and tolerance.
#[test]
fn random_selectors_are_unbiased_and_reproducible() {
    let limits = [10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32];
    for weights in [
        vec![1u32, 1],
        vec![5, 1, 1],
        vec![100, 0, 100, 100, 100],
        vec![1, 2, 3, 4, 5, 6, 7, 8],
    ] {
        let r = LocalRegistry::new();
        for (i, &w) in weights.iter().enumerate() {
            r.register(&ep("a", &format!("i{i}"), w)).unwrap();
        }
        let eligible: Vec<(String, u32)> = weights
            .iter()
            .enumerate()
            .filter(|(_, &w)| w > 0)
            .map(|(i, &w)| (format!("i{i}"), w))
            .collect();
        let n = eligible.len();
        let total_w: u32 = eligible.iter().map(|x| x.1).sum();
        for alg in [Algorithm::Random, Algorithm::WeightedRandom] {
            let mut bad = 0;
            for seed in 1..=5u64 {
                let s = Selector::new("a", alg, Some(seed)).unwrap();
                let got = picks(&r, &s, 2000 * n);
                let again = picks(&r, &Selector::new("a", alg, Some(seed)).unwrap(), 2000 * n);
                assert_eq!(got, again, "same seed, same picks");
                let mut counts: HashMap<String, usize> = HashMap::new();
                for p in got {
                    *counts.entry(p).or_default() += 1;
                }
                let x2: f64 = eligible
                    .iter()
                    .map(|(id, w)| {
                        let p = if alg == Algorithm::Random {
                            1.0 / n as f64
                        } else {
                            *w as f64 / total_w as f64
                        };
                        let e = p * (2000 * n) as f64;
                        let o = *counts.get(id).unwrap_or(&0) as f64;
                        (o - e) * (o - e) / e
                    })
                    .sum();
                assert_eq!(counts.len(), n, "only eligible instances: {counts:?}");
                if x2 >= limits[n - 2] {
                    bad += 1;
                }
            }
            assert!(
                bad <= 1,
                "{alg:?} over {weights:?}: {bad} of 5 seeds over the 0.999 quantile"
            );
        }
    }
}

#[test]
fn selector_names() {
    // DISC-SEL-6
    for (name, a) in [
        ("round-robin", Algorithm::RoundRobin),
        ("weighted-round-robin", Algorithm::WeightedRoundRobin),
        ("random", Algorithm::Random),
        ("weighted-random", Algorithm::WeightedRandom),
    ] {
        assert_eq!(name.parse::<Algorithm>(), Ok(a));
    }
    assert_eq!(
        "Round-Robin".parse::<Algorithm>(),
        Err(Code::InvalidArgument)
    );
}

#[test]
fn threads_share_one_registry_and_one_selector() {
    // DISC-THREAD-1, DISC-THREAD-2: the threads phase of spec/testee.md
    let r = Arc::new(LocalRegistry::new());
    let counts = Arc::new(Mutex::new([0usize; 4]));
    let c2 = counts.clone();
    let w = r
        .watch(
            "c",
            Box::new(move |e: &Event| c2.lock().unwrap()[e.kind as usize] += 1),
        )
        .unwrap();
    let (threads, rounds) = (8usize, 400usize);
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let r = r.clone();
            std::thread::spawn(move || {
                let mut failures = 0;
                for k in 0..rounds {
                    let id = format!("c{t}-{k}");
                    failures += r
                        .register(&Endpoint::new("c", &id, "127.0.0.1", k as u32, 1))
                        .is_err() as usize;
                    failures +=
                        !r.discover("c").unwrap().iter().any(|e| e.instance_id == id) as usize;
                    if k % 2 == 1 {
                        failures += r.deregister("c", &id).is_err() as usize;
                    }
                }
                failures
            })
        })
        .collect();
    let failures: usize = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(failures, 0);
    r.unwatch(w).unwrap();
    assert_eq!(
        *counts.lock().unwrap(),
        [0, threads * rounds, threads * rounds / 2, 0]
    );
    let list = r.discover("c").unwrap();
    assert_eq!(list.len(), threads * rounds / 2);
    for t in 0..threads {
        let mine: Vec<_> = list
            .iter()
            .filter(|e| e.instance_id.starts_with(&format!("c{t}-")))
            .map(|e| e.port)
            .collect();
        assert_eq!(
            mine,
            (0..rounds as u32).step_by(2).collect::<Vec<_>>(),
            "thread {t}'s instances in its order"
        );
    }
    let sel = Arc::new(Selector::new("c", Algorithm::RoundRobin, None).unwrap());
    let picked = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let (r, sel, picked) = (r.clone(), sel.clone(), picked.clone());
            std::thread::spawn(move || {
                for _ in 0..rounds / 2 {
                    let e = sel.select(r.as_ref()).unwrap();
                    *picked.lock().unwrap().entry(e.instance_id).or_default() += 1;
                }
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    let picked = picked.lock().unwrap();
    assert_eq!(picked.len(), list.len());
    assert!(
        picked.values().all(|&n| n == 1),
        "each instance picked once"
    );
}

#[test]
fn unwatch_waits_for_a_callback_running_on_another_thread() {
    // DISC-WATCH-5: once unwatch returned, the callback is never running or called again
    let r = Arc::new(LocalRegistry::new());
    let state = Arc::new(Mutex::new((0usize, false))); // (calls, running)
    let s2 = state.clone();
    let id = r
        .watch(
            "a",
            Box::new(move |_e: &Event| {
                s2.lock().unwrap().1 = true;
                std::thread::sleep(std::time::Duration::from_millis(50));
                let mut s = s2.lock().unwrap();
                s.0 += 1;
                s.1 = false;
            }),
        )
        .unwrap();
    let r2 = r.clone();
    let h = std::thread::spawn(move || r2.register(&ep("a", "i0", 1)).unwrap());
    while !state.lock().unwrap().1 {
        std::thread::yield_now();
    }
    r.unwatch(id).unwrap();
    assert_eq!(*state.lock().unwrap(), (1, false));
    h.join().unwrap();
    r.register(&ep("a", "i1", 1)).unwrap();
    assert_eq!(state.lock().unwrap().0, 1);
}

#[test]
fn etcd_mapping() {
    // DISC-ETCD-1..3
    let e = Endpoint::new("frameproof.Echo", "echo-1", "127.0.0.1", 7000, 100);
    let (k, v) = etcd_encode(DEFAULT_PREFIX, &e).unwrap();
    assert_eq!(k, "/frameproof/services/frameproof.Echo/echo-1");
    assert_eq!(
        String::from_utf8(v.clone()).unwrap(),
        r#"{"service":"frameproof.Echo","instance_id":"echo-1","host":"127.0.0.1","port":7000,"weight":100}"#
    );
    assert_eq!(etcd_decode(DEFAULT_PREFIX, k.as_bytes(), &v), Ok(e.clone()));
    let d = |k: &str, v: &str| etcd_decode("p", k.as_bytes(), v.as_bytes());
    assert_eq!(
        d(
            "/p/s/i",
            r#"{"instance_id":"i","x":[1],"service":"s","host":"h","port":1}"#
        ),
        Ok(Endpoint::new("s", "i", "h", 1, 100))
    );
    for bad in [
        r#"{"service":"s","instance_id":"i","host":"h","port":1.5}"#,
        r#"{"service":"s","instance_id":"i","host":"h","port":true}"#,
        r#"{"service":"s","instance_id":"i","host":"h","port":65536}"#,
        r#"{"service":"s","instance_id":"i","host":"h","port":1,"weight":4294967296}"#,
        r#"{"service":"s","instance_id":"j","host":"h","port":1}"#,
        r#"{"service":"s","instance_id":"i","port":1}"#,
        r#"["s"]"#,
        "{",
    ] {
        assert_eq!(d("/p/s/i", bad), Err(Code::InvalidArgument), "{bad}");
    }
    assert_eq!(
        d(
            "/p/s/i/x",
            r#"{"service":"s","instance_id":"i","host":"h","port":1}"#
        ),
        Err(Code::InvalidArgument)
    );
    assert_eq!(etcd_encode("/p", &e), Err(Code::InvalidArgument));
}
