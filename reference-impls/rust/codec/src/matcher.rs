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

    pub fn pending(&self) -> usize {
        self.pending
    }

    pub fn is_failed(&self) -> bool {
        self.failed
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

    /// The earliest deadline of a pending request.
    pub fn next_deadline(&self) -> Option<u64> {
        self.slots.iter().flatten().map(|p| p.deadline).min()
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

    /// Fails the connection: returns every pending request, oldest first. Later sends are
    /// refused and later frames ignored.
    pub fn fail(&mut self) -> Vec<T> {
        self.failed = true;
        self.take_where(|_| true)
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

    pub fn is_empty(&self) -> bool {
        self.timed_out.is_empty() && self.failed.is_empty()
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

    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    pub fn is_failed(&self) -> bool {
        self.failed
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

    pub fn next_deadline(&self) -> Option<u64> {
        self.queue.iter().map(|p| p.deadline).min()
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

    /// Fails the connection: returns every pending request, oldest first.
    pub fn fail(&mut self) -> Vec<T> {
        self.failed = true;
        self.queue.drain(..).map(|p| p.tag).collect()
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

    pub fn pending(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_failed(&self) -> bool {
        self.failed
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

    /// Fails the connection: every pending request, oldest first.
    pub fn fail(&mut self) -> Vec<T> {
        self.failed = true;
        let mut out = Vec::new();
        for (serial, id) in self.order.drain(..) {
            if self.by_id.get(&id).is_some_and(|p| p.serial == serial) {
                out.extend(self.by_id.remove(&id).map(|p| p.tag));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Never = std::convert::Infallible;

    fn ok(_: u8) -> Result<(), Never> {
        Ok(())
    }

    #[test]
    fn sequence_starts_at_1_and_wraps_through_0() {
        let mut m = SequenceMatcher::new(1000);
        let mut seqs = Vec::new();
        for i in 0..300u32 {
            let s = m.send_request(0, i, ok).unwrap();
            seqs.push(s);
            assert_eq!(m.receive(true, s), Received::Reply(i));
        }
        assert_eq!(&seqs[..3], &[1, 2, 3]);
        assert_eq!(seqs[254], 255);
        assert_eq!(seqs[255], 0);
        assert_eq!(seqs[256], 1);
    }

    #[test]
    fn busy_sequence_is_refused_without_advancing() {
        let mut m = SequenceMatcher::new(1000);
        for i in 0..256u32 {
            m.send_request(0, i, ok).unwrap();
        }
        assert_eq!(m.pending(), 256);
        // Next is 1, held by request 0.
        assert_eq!(m.send_request(0, 999, ok), Err(SendError::SequenceBusy(1)));
        assert_eq!(m.next_sequence(), 1);
        // Reply to seq 1 frees it.
        assert_eq!(m.receive(true, 1), Received::Reply(0));
        assert_eq!(m.send_request(0, 1000, ok), Ok(1));
        // A one-way message takes a busy number anyway and is never pending.
        assert_eq!(m.send_one_way(ok), Ok(2));
        assert_eq!(m.pending(), 256);
        assert_eq!(m.receive(true, 2), Received::Reply(1));
    }

    #[test]
    fn encoder_refusal_does_not_advance() {
        let mut m = SequenceMatcher::new(1000);
        let r: Result<u8, SendError<&str>> = m.send_request(0, 0u32, |_| Err("too big"));
        assert_eq!(r, Err(SendError::Encode("too big")));
        assert_eq!(m.next_sequence(), 1);
        assert_eq!(m.pending(), 0);
    }

    #[test]
    fn replies_out_of_order_unmatched_and_peer_requests() {
        let mut m = SequenceMatcher::new(1000);
        for i in 0..3u32 {
            m.send_request(0, i, ok).unwrap();
        }
        assert_eq!(m.receive(false, 2), Received::PeerRequest);
        assert_eq!(m.receive(true, 3), Received::Reply(2)); // an error reply (0xC1) completes too
        assert_eq!(m.receive(true, 1), Received::Reply(0));
        assert_eq!(m.receive(true, 1), Received::Unmatched);
        assert_eq!(m.receive(true, 77), Received::Unmatched);
        assert_eq!(m.pending(), 1);
    }

    #[test]
    fn timeouts_oldest_first_and_free_the_number() {
        let mut m = SequenceMatcher::new(100);
        m.send_request(0, 'a', ok).unwrap(); // seq 1, deadline 100
        m.send_request(50, 'b', ok).unwrap(); // seq 2, deadline 150
        assert_eq!(m.next_deadline(), Some(100));
        assert!(m.expire(99).is_empty());
        assert_eq!(m.expire(100), vec!['a']);
        assert_eq!(m.receive(true, 1), Received::Unmatched);
        assert_eq!(m.expire(1000), vec!['b']);
        assert_eq!(m.pending(), 0);
        // Wrap the counter so that the oldest request has the highest sequence number.
        let mut m = SequenceMatcher::new(10);
        for i in 0..254u32 {
            let s = m.send_request(0, i, ok).unwrap();
            m.receive(true, s);
        }
        m.send_request(0, 1000, ok).unwrap(); // seq 255
        m.send_request(0, 1001, ok).unwrap(); // seq 0
        m.send_request(0, 1002, ok).unwrap(); // seq 1
        assert_eq!(m.expire(10), vec![1000, 1001, 1002]);
    }

    #[test]
    fn failed_connection_refuses_and_ignores() {
        let mut m = SequenceMatcher::new(100);
        m.send_request(0, 1u32, ok).unwrap();
        m.send_request(0, 2u32, ok).unwrap();
        assert_eq!(m.fail(), vec![1, 2]);
        assert_eq!(m.send_request(0, 3, ok), Err(SendError::ConnectionFailed));
        assert_eq!(m.receive(true, 1), Received::Ignored);
        assert!(m.is_failed());
    }

    fn fok() -> Result<(), Never> {
        Ok(())
    }

    #[test]
    fn fifo_completes_oldest_first() {
        let mut m = FifoMatcher::new(100, 256);
        for i in 0..4u32 {
            m.send_request(0, i, fok).unwrap();
        }
        for i in 0..4u32 {
            assert_eq!(m.receive(), Received::Reply(i));
        }
        assert_eq!(m.receive(), Received::Unmatched);
    }

    #[test]
    fn fifo_bound() {
        let mut m = FifoMatcher::new(100, 256);
        for i in 0..256u32 {
            m.send_request(0, i, fok).unwrap();
        }
        assert_eq!(
            m.send_request(0, 256, fok),
            Err(SendError::TooManyPending(256))
        );
        m.receive();
        assert!(m.send_request(0, 257, fok).is_ok());
    }

    #[test]
    fn fifo_timeout_fails_the_connection() {
        let mut m = FifoMatcher::new(100, 256);
        m.send_request(0, 'a', fok).unwrap();
        m.send_request(10, 'b', fok).unwrap();
        m.send_request(200, 'c', fok).unwrap();
        assert_eq!(
            m.expire(50),
            Expired {
                timed_out: vec![],
                failed: vec![]
            }
        );
        let e = m.expire(110);
        assert_eq!(e.timed_out, vec!['a', 'b']);
        assert_eq!(e.failed, vec!['c']);
        assert!(m.is_failed());
        assert_eq!(m.receive(), Received::Ignored);
        assert_eq!(
            m.send_request(300, 'd', fok),
            Err(SendError::ConnectionFailed)
        );
    }

    #[test]
    fn ids_match_in_any_order_and_expire_oldest_first() {
        let mut m = IdMatcher::new(100);
        for id in 0..4u32 {
            m.send_request(id as u64, id, id * 10, fok).unwrap();
        }
        assert_eq!(m.send_request(0, 2, 99, fok), Err(SendError::IdBusy(2)));
        assert_eq!(m.receive(2), Received::Reply(20));
        assert_eq!(m.receive(2), Received::Unmatched);
        assert_eq!(m.receive(0), Received::Reply(0));
        assert_eq!(m.pending(), 2);
        assert!(m.expire(100).is_empty());
        assert_eq!(m.expire(101), vec![10]);
        assert_eq!(m.receive(1), Received::Unmatched);
        m.send_request(200, 1, 11, fok).unwrap();
        assert_eq!(m.expire(1000), vec![30, 11]);
        assert_eq!(m.pending(), 0);
        m.send_request(0, 5, 50, fok).unwrap();
        m.send_request(0, 6, 60, fok).unwrap();
        assert_eq!(m.fail(), vec![50, 60]);
        assert_eq!(m.receive(5), Received::Ignored);
        assert_eq!(
            m.send_request(0, 7, 70, fok),
            Err(SendError::ConnectionFailed)
        );
    }
}
