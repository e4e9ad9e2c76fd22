//! The matchers' unit tests.
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
