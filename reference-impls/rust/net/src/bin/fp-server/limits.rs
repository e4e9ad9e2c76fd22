//! The server-wide limits (`*-RES-*`, reference-impls/README.md "Resource limits"): the limit
//! flags, and the state they act on: what every connection holds, their sum against the memory
//! budget (RES-1, RES-2) and the connections open (RES-6).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::AbortHandle;

/// A connection holding at most this is never closed for the memory budget (RES-2).
pub const BUDGET_FLOOR: usize = 64 * 1024;

/// The server-wide limits (`*-RES-*`) with the spec's defaults.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub memory_budget: usize,
    pub idle: Duration,
    pub frame: Duration,
    pub max_output: usize,
    pub write: Duration,
    pub max_connections: usize,
}

/// The limit flags: positive integers, else a usage error.
pub const LIMIT_FLAGS: [(&str, u64); 6] = [
    ("memory-budget", 256 << 20),
    ("idle-timeout-ms", 30_000),
    ("frame-timeout-ms", 10_000),
    ("max-output-bytes", 1 << 20),
    ("write-timeout-ms", 10_000),
    ("max-connections", 4096),
];

impl Limits {
    pub fn parse(opts: &fp_net::Options) -> Result<Limits, String> {
        let mut v = [0u64; 6];
        for (i, (name, default)) in LIMIT_FLAGS.iter().enumerate() {
            v[i] = match opts.get(name) {
                None => *default,
                Some(s) => match s.parse::<u64>() {
                    Ok(n) if n > 0 && n <= (1u64 << 48) => n,
                    _ => return Err(format!("--{name}: {s:?} is not a positive integer")),
                },
            };
        }
        Ok(Limits {
            memory_budget: v[0] as usize,
            idle: Duration::from_millis(v[1]),
            frame: Duration::from_millis(v[2]),
            max_output: v[3] as usize,
            write: Duration::from_millis(v[4]),
            max_connections: v[5] as usize,
        })
    }
}

/// What one connection holds, published for the budget, and its order to close.
///
/// A budget close aborts the connection's task (dropping it closes the socket and releases its
/// buffers) instead of signalling it: a signal would have to be awaited beside every read and
/// write, which cost the per-packet echo about a quarter of its user-space instructions.
#[derive(Default)]
pub struct Holder {
    pub held: AtomicUsize,
    pub kill: AtomicBool,
    /// The connection's task, set right after its spawn.
    pub task: OnceLock<AbortHandle>,
}

impl Holder {
    /// Orders the close. `kill` and `task` are written and read in opposite orders here and
    /// in [`Holder::started`] (SeqCst), so whichever comes second sees the other and aborts.
    pub fn kill(&self) {
        self.kill.store(true, SeqCst);
        self.abort();
    }

    pub fn started(&self, task: AbortHandle) {
        let _ = self.task.set(task);
        if self.kill.load(SeqCst) {
            self.abort();
        }
    }

    fn abort(&self) {
        if let Some(t) = self.task.get() {
            t.abort();
        }
    }
}

/// The server-wide state of the limits: connections open, their holdings, and their sum.
pub struct Shared {
    pub limits: Limits,
    pub open: AtomicUsize,
    pub total: AtomicUsize,
    pub holders: Mutex<HashMap<u64, Arc<Holder>>>,
    pub next_id: AtomicU64,
    /// A connection closed (a descriptor may be free again: RES-7).
    pub closed: Notify,
    pub budget_closes: AtomicU64,
    pub timeout_closes: AtomicU64,
    pub refused: AtomicU64,
}

impl Shared {
    /// The state of a server with `limits` that has no connection yet.
    pub fn new(limits: Limits) -> Shared {
        Shared {
            limits,
            open: AtomicUsize::new(0),
            total: AtomicUsize::new(0),
            holders: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            closed: Notify::new(),
            budget_closes: AtomicU64::new(0),
            timeout_closes: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Publishes a connection's holding; over the budget, closes the largest holders above
    /// the floor until the sum fits (RES-1, RES-2).
    pub fn hold(&self, h: &Holder, now: usize) {
        if h.kill.load(Relaxed) {
            return;
        }
        let old = h.held.swap(now, Relaxed);
        let total = if now >= old {
            self.total.fetch_add(now - old, Relaxed) + (now - old)
        } else {
            self.total.fetch_sub(old - now, Relaxed) - (old - now)
        };
        if total <= self.limits.memory_budget {
            return;
        }
        let holders = self.holders.lock().unwrap_or_else(|e| e.into_inner());
        while self.total.load(Relaxed) > self.limits.memory_budget {
            let big = holders
                .values()
                .filter(|c| !c.kill.load(Relaxed))
                .max_by_key(|c| c.held.load(Relaxed));
            let Some(big) = big else { break };
            let held = big.held.load(Relaxed);
            if held <= BUDGET_FLOOR {
                break;
            }
            big.kill();
            self.total.fetch_sub(big.held.swap(0, Relaxed), Relaxed);
            self.budget_closes.fetch_add(1, Relaxed);
        }
    }

    pub fn register(self: &Arc<Self>) -> Registration {
        let id = self.next_id.fetch_add(1, Relaxed);
        let h = Arc::new(Holder::default());
        self.holders
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, h.clone());
        Registration {
            shared: self.clone(),
            id,
            holder: h,
        }
    }
}

/// A connection's place in [`Shared`]; dropping it releases the holding and the slot.
pub struct Registration {
    pub shared: Arc<Shared>,
    pub id: u64,
    pub holder: Arc<Holder>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let s = &self.shared;
        s.holders
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
        s.total.fetch_sub(self.holder.held.swap(0, Relaxed), Relaxed);
        s.open.fetch_sub(1, Relaxed);
        s.closed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(args: &[&str]) -> Result<Limits, String> {
        let names: Vec<&str> = LIMIT_FLAGS.iter().map(|(n, _)| *n).collect();
        let o = fp_net::Options::parse(args.iter().map(|s| s.to_string()), &names, &[])?;
        Limits::parse(&o)
    }

    #[test]
    fn limit_flags_defaults_and_usage_errors() {
        let d = limits(&[]).unwrap();
        assert_eq!(d.memory_budget, 256 << 20);
        assert_eq!(d.idle, Duration::from_millis(30_000));
        assert_eq!(d.frame, Duration::from_millis(10_000));
        assert_eq!(d.max_output, 1 << 20);
        assert_eq!(d.write, Duration::from_millis(10_000));
        assert_eq!(d.max_connections, 4096);
        let l = limits(&["--memory-budget", "8388608", "--idle-timeout-ms", "1000"]).unwrap();
        assert_eq!((l.memory_budget, l.idle), (8 << 20, Duration::from_secs(1)));
        for bad in ["0", "-1", "x", "1.5"] {
            assert!(limits(&["--max-connections", bad]).unwrap_err().contains("positive"), "{bad}");
        }
    }

    fn shared(budget: usize) -> Arc<Shared> {
        Arc::new(Shared::new(Limits {
            memory_budget: budget,
            ..limits(&[]).unwrap()
        }))
    }

    #[test]
    fn budget_closes_the_largest_holders_never_small_ones() {
        let s = shared(1 << 20);
        let regs: Vec<Registration> = (0..6)
            .map(|_| {
                s.open.fetch_add(1, Relaxed);
                s.register()
            })
            .collect();
        // Five small holders (at the floor) and nothing over budget yet.
        for r in &regs[..5] {
            s.hold(&r.holder, BUDGET_FLOOR);
        }
        assert_eq!(s.budget_closes.load(Relaxed), 0);
        // A large one pushes the sum over: it alone is closed.
        s.hold(&regs[5].holder, 900 << 10);
        assert!(regs[5].holder.kill.load(Relaxed));
        assert!(regs[..5].iter().all(|r| !r.holder.kill.load(Relaxed)));
        assert_eq!(s.total.load(Relaxed), 5 * BUDGET_FLOOR);
        // Over the budget with only holders at the floor: none is closed (RES-2).
        let small = shared(BUDGET_FLOOR);
        let a = small.register();
        let b = small.register();
        small.open.fetch_add(2, Relaxed);
        small.hold(&a.holder, BUDGET_FLOOR);
        small.hold(&b.holder, BUDGET_FLOOR);
        assert!(!a.holder.kill.load(Relaxed) && !b.holder.kill.load(Relaxed));
        drop(regs);
        assert_eq!(s.total.load(Relaxed), 0);
        assert_eq!(s.open.load(Relaxed), 0);
        assert!(s.holders.lock().unwrap().is_empty());
    }
}
