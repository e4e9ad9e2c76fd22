//! Client-side request/reply matching for one connection.
//!
//! Both matchers are clock-agnostic: every call that needs the time takes `now` as a `u64` in
//! the caller's unit, and the timeout is given in the same unit. The testee drives them with a
//! virtual millisecond clock; the load client with microseconds since its start.
//!
//! * [`SequenceMatcher`] (`standard`): a 256-slot table indexed by sequence number
//!   (`STD-SEQ-*`, `STD-MATCH-*`).
//! * [`FifoMatcher`] (`length-field`): a bounded queue; replies complete the oldest request, a
//!   timeout fails the connection (`LF-MATCH-*`).
//!
//! Each pending request carries a caller-defined tag `T` (the testee's request index, the load
//! client's global index and send time).

use std::collections::VecDeque;

/// Why a send was refused; nothing was written and no state changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError<E> {
    /// `STD-SEQ-3`: the next sequence number is held by a pending request.
    SequenceBusy(u8),
    /// `LF-MATCH-4`: the pending bound is reached.
    TooManyPending(usize),
    /// The connection has failed (decode error or `LF-MATCH-3`).
    ConnectionFailed,
    /// The write callback (the encoder) refused the frame.
    Encode(E),
    /// The protocol has no such message (e.g. a one-way message in `length-field`).
    Unsupported,
    /// `RPC-ID-2`: the next id is held by a pending request.
    IdBusy(u32),
    /// The protocol refuses this send (e.g. an rpc one-way call, a call frame that is not a
    /// REQUEST): nothing is written.
    Refused(&'static str),
}

impl<E: std::fmt::Display> std::fmt::Display for SendError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::SequenceBusy(s) => write!(f, "sequence {s} still pending (STD-SEQ-3)"),
            SendError::TooManyPending(b) => write!(f, "{b} requests pending (LF-MATCH-4)"),
            SendError::ConnectionFailed => f.write_str("connection failed"),
            SendError::Encode(e) => write!(f, "{e}"),
            SendError::Unsupported => f.write_str("not supported by the protocol"),
            SendError::IdBusy(id) => write!(f, "id {id} still pending (RPC-ID-2)"),
            SendError::Refused(why) => f.write_str(why),
        }
    }
}

/// What a received frame did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received<T> {
    /// It completed the pending request with this tag.
    Reply(T),
    /// It is a reply that matches no pending request (`STD-MATCH-2`, `LF-MATCH-2`).
    Unmatched,
    /// `standard` only: a request from the peer (bit 7 clear), which completes nothing
    /// (`STD-MATCH-5`).
    PeerRequest,
    /// The connection has failed; frames complete nothing.
    Ignored,
}

#[derive(Debug, Clone)]
struct Pending<T> {
    /// Send order, to complete timeouts oldest first.
    serial: u64,
    deadline: u64,
    tag: T,
}

/// Sequence-number matching for `standard`.
#[derive(Debug)]
pub struct SequenceMatcher<T> {
    /// The last sequence number allocated; the first request gets 1 (`STD-SEQ-1`).
    last: u8,
    slots: Vec<Option<Pending<T>>>,
    pending: usize,
    serial: u64,
    timeout: u64,
    failed: bool,
}

impl<T> SequenceMatcher<T> {
    /// A matcher whose requests time out `timeout` units after they are sent.
    pub fn new(timeout: u64) -> Self {
        SequenceMatcher {
            last: 0,
            slots: (0..256).map(|_| None).collect(),
            pending: 0,
            serial: 0,
            timeout,
            failed: false,
        }
    }

    /// The sequence number the next request or one-way message would take.
    pub fn next_sequence(&self) -> u8 {
        self.last.wrapping_add(1)
    }

    /// Sends a request: allocates the next sequence number, refusing (`STD-SEQ-3`) when it is
    /// still pending; then calls `write(seq)` (which encodes the frame) and only if that
    /// succeeds advances the counter and makes the request pending until `now + timeout`.
    pub fn send_request<E>(
        &mut self,
        now: u64,
        tag: T,
        write: impl FnOnce(u8) -> Result<(), E>,
    ) -> Result<u8, SendError<E>> {
        if self.failed {
            return Err(SendError::ConnectionFailed);
        }
        let seq = self.next_sequence();
        if self.slots[seq as usize].is_some() {
            return Err(SendError::SequenceBusy(seq));
        }
        write(seq).map_err(SendError::Encode)?;
        self.last = seq;
        self.serial += 1;
        self.slots[seq as usize] = Some(Pending {
            serial: self.serial,
            deadline: now.saturating_add(self.timeout),
            tag,
        });
        self.pending += 1;
        Ok(seq)
    }

    /// Sends a one-way message: takes the next sequence number whether or not it is pending
    /// (`STD-MATCH-4`); never pending.
    pub fn send_one_way<E>(
        &mut self,
        write: impl FnOnce(u8) -> Result<(), E>,
    ) -> Result<u8, SendError<E>> {
        if self.failed {
            return Err(SendError::ConnectionFailed);
        }
        let seq = self.next_sequence();
        write(seq).map_err(SendError::Encode)?;
        self.last = seq;
        Ok(seq)
    }

    /// Processes one received frame: `reply` when its flag has the reply bit, and its sequence
    /// number (`STD-MATCH-1`, `-2`, `-5`, `-6`).
    pub fn receive(&mut self, reply: bool, sequence: u8) -> Received<T> {
        if self.failed {
            return Received::Ignored;
        }
        if !reply {
            return Received::PeerRequest;
        }
        match self.slots[sequence as usize].take() {
            Some(p) => {
                self.pending -= 1;
                Received::Reply(p.tag)
            }
            None => Received::Unmatched,
        }
    }

    fn take_where(&mut self, pred: impl Fn(&Pending<T>) -> bool) -> Vec<T> {
        let mut out: Vec<Pending<T>> = Vec::new();
        for slot in self.slots.iter_mut() {
            if slot.as_ref().is_some_and(&pred) {
                out.extend(slot.take());
            }
        }
        self.pending -= out.len();
        out.sort_by_key(|p| p.serial);
        out.into_iter().map(|p| p.tag).collect()
    }

    /// Completes, oldest first, every pending request whose deadline is `<= now`
    /// (`STD-MATCH-3`); their sequence numbers are free again.
    pub fn expire(&mut self, now: u64) -> Vec<T> {
        if self.failed || self.pending == 0 {
            return Vec::new();
        }
        self.take_where(|p| p.deadline <= now)
    }
}

impl<T> RequestMatcher<T> for SequenceMatcher<T> {
    fn expire_pending(&mut self, now: u64) -> Expired<T> {
        Expired::only_timed_out(self.expire(now))
    }

    fn fail(&mut self) -> Vec<T> {
        self.failed = true;
        self.take_where(|_| true)
    }

    fn pending(&self) -> usize {
        self.pending
    }

    fn is_failed(&self) -> bool {
        self.failed
    }
}

/// FIFO matching for `length-field`.
#[derive(Debug)]
pub struct FifoMatcher<T> {
    queue: VecDeque<Pending<T>>,
    bound: usize,
    timeout: u64,
    failed: bool,
}

/// The outcome of an expiry ([`FifoMatcher::expire`], `ClientMatcher::expire`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired<T> {
    /// Requests that timed out, oldest first.
    pub timed_out: Vec<T>,
    /// Other pending requests failed with the connection (`LF-MATCH-3`), oldest first.
    pub failed: Vec<T>,
}

impl<T> Expired<T> {
    pub fn none() -> Self {
        Expired {
            timed_out: Vec::new(),
            failed: Vec::new(),
        }
    }

    /// Requests that timed out, and nothing failed with them.
    pub fn only_timed_out(timed_out: Vec<T>) -> Self {
        Expired {
            timed_out,
            failed: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.timed_out.is_empty() && self.failed.is_empty()
    }
}

/// What every matcher keeps for a client connection, whichever way it matches: the pending
/// requests and whether the connection has failed. `ClientMatcher`'s `expire`, `fail`,
/// `pending` and `is_failed` are these of its matcher.
pub trait RequestMatcher<T> {
    /// Completes the requests whose deadline is `<= now`, and whatever fails with them.
    fn expire_pending(&mut self, now: u64) -> Expired<T>;

    /// Fails the connection: returns every pending request, oldest first. Later sends are
    /// refused and later frames ignored.
    fn fail(&mut self) -> Vec<T>;

    fn pending(&self) -> usize;

    fn is_failed(&self) -> bool;

    /// Sends a message that is never pending: refused on a failed connection, otherwise
    /// written by `write()`.
    fn send_unpending<E>(&self, write: impl FnOnce() -> Result<(), E>) -> Result<(), SendError<E>> {
        if self.is_failed() {
            return Err(SendError::ConnectionFailed);
        }
        write().map_err(SendError::Encode)
    }
}

impl<T> FifoMatcher<T> {
    /// A matcher with the given timeout and pending bound (`LF-MATCH-4`; upstream 256).
    pub fn new(timeout: u64, bound: usize) -> Self {
        FifoMatcher {
            queue: VecDeque::with_capacity(bound.min(4096)),
            bound,
            timeout,
            failed: false,
        }
    }

    /// Sends a request: refused at the pending bound or on a failed connection; otherwise
    /// `write()` encodes it and, if that succeeds, it becomes pending until `now + timeout`.
    pub fn send_request<E>(
        &mut self,
        now: u64,
        tag: T,
        write: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), SendError<E>> {
        if self.failed {
            return Err(SendError::ConnectionFailed);
        }
        if self.queue.len() >= self.bound {
            return Err(SendError::TooManyPending(self.bound));
        }
        write().map_err(SendError::Encode)?;
        self.queue.push_back(Pending {
            serial: 0,
            deadline: now.saturating_add(self.timeout),
            tag,
        });
        Ok(())
    }

    /// Processes one received frame: it completes the oldest pending request (`LF-MATCH-1`).
    pub fn receive(&mut self) -> Received<T> {
        if self.failed {
            return Received::Ignored;
        }
        match self.queue.pop_front() {
            Some(p) => Received::Reply(p.tag),
            None => Received::Unmatched,
        }
    }

    /// Completes expired requests as timed out; if there was any, fails every other pending
    /// request and the connection (`LF-MATCH-3`).
    pub fn expire(&mut self, now: u64) -> Expired<T> {
        let mut out = Expired::none();
        if self.failed || !self.queue.iter().any(|p| p.deadline <= now) {
            return out;
        }
        for p in self.queue.drain(..) {
            if p.deadline <= now {
                out.timed_out.push(p.tag);
            } else {
                out.failed.push(p.tag);
            }
        }
        self.failed = true;
        out
    }
}

impl<T> RequestMatcher<T> for FifoMatcher<T> {
    fn expire_pending(&mut self, now: u64) -> Expired<T> {
        self.expire(now)
    }

    fn fail(&mut self) -> Vec<T> {
        self.failed = true;
        self.queue.drain(..).map(|p| p.tag).collect()
    }

    fn pending(&self) -> usize {
        self.queue.len()
    }

    fn is_failed(&self) -> bool {
        self.failed
    }
}

/// Matching by a 32-bit key the reply carries back (`rpc`: the request id, `RPC-MATCH-*`):
/// pending requests by key, and in send order for timeouts and failures. The caller allocates
/// the keys (a per-connection counter, `RPC-ID-1`) and checks [`IdMatcher::is_pending`] before
/// it uses one (`RPC-ID-2`).
#[derive(Debug)]
pub struct IdMatcher<T> {
    by_id: std::collections::HashMap<u32, Pending<T>>,
    /// (serial, id) in send order; entries whose request completed are skipped lazily.
    order: VecDeque<(u64, u32)>,
    serial: u64,
    timeout: u64,
    failed: bool,
}

impl<T> IdMatcher<T> {
    pub fn new(timeout: u64) -> Self {
        IdMatcher {
            by_id: std::collections::HashMap::new(),
            order: VecDeque::new(),
            serial: 0,
            timeout,
            failed: false,
        }
    }

    pub fn is_pending(&self, id: u32) -> bool {
        self.by_id.contains_key(&id)
    }

    /// Sends a request under `id`: refused on a failed connection or when `id` is pending;
    /// otherwise `write()` encodes it and, if that succeeds, it is pending until `now + timeout`.
    pub fn send_request<E>(
        &mut self,
        now: u64,
        id: u32,
        tag: T,
        write: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), SendError<E>> {
        if self.failed {
            return Err(SendError::ConnectionFailed);
        }
        if self.by_id.contains_key(&id) {
            return Err(SendError::IdBusy(id));
        }
        write().map_err(SendError::Encode)?;
        self.serial += 1;
        self.by_id.insert(
            id,
            Pending {
                serial: self.serial,
                deadline: now.saturating_add(self.timeout),
                tag,
            },
        );
        self.order.push_back((self.serial, id));
        Ok(())
    }

    /// Drops the completed entries at the front of the send order.
    fn trim(&mut self) {
        while let Some(&(serial, id)) = self.order.front() {
            if self.by_id.get(&id).is_some_and(|p| p.serial == serial) {
                break;
            }
            self.order.pop_front();
        }
    }

    /// A reply carrying `id`: completes the request pending under it (`RPC-MATCH-1`), else
    /// unmatched (`RPC-MATCH-2`).
    pub fn receive(&mut self, id: u32) -> Received<T> {
        if self.failed {
            return Received::Ignored;
        }
        match self.by_id.remove(&id) {
            Some(p) => {
                self.trim();
                Received::Reply(p.tag)
            }
            None => Received::Unmatched,
        }
    }

    /// Completes, oldest first, the requests whose deadline is `<= now` (`RPC-MATCH-3`); their
    /// ids are free again. Deadlines grow with the send order (one timeout, a clock that never
    /// goes back), so the expired requests are a prefix of it.
    pub fn expire(&mut self, now: u64) -> Vec<T> {
        let mut out = Vec::new();
        if self.failed {
            return out;
        }
        self.trim();
        while let Some(&(_, id)) = self.order.front() {
            if self.by_id[&id].deadline > now {
                break;
            }
            self.order.pop_front();
            out.extend(self.by_id.remove(&id).map(|p| p.tag));
            self.trim();
        }
        out
    }
}

impl<T> RequestMatcher<T> for IdMatcher<T> {
    fn expire_pending(&mut self, now: u64) -> Expired<T> {
        Expired::only_timed_out(self.expire(now))
    }

    fn fail(&mut self) -> Vec<T> {
        self.failed = true;
        let mut out = Vec::new();
        for (serial, id) in self.order.drain(..) {
            if self.by_id.get(&id).is_some_and(|p| p.serial == serial) {
                out.extend(self.by_id.remove(&id).map(|p| p.tag));
            }
        }
        out
    }

    fn pending(&self) -> usize {
        self.by_id.len()
    }

    fn is_failed(&self) -> bool {
        self.failed
    }
}

#[cfg(test)]
mod tests;
