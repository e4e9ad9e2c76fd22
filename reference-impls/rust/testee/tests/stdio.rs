//! Drives the fp-testee binary over its real stdin/stdout framing.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// Serialized `TesteeRequest { hello { harness_version: 1 } }` (field 1, message; field 1 = 1).
const HELLO_V1: &[u8] = &[0x0A, 0x02, 0x08, 0x01];
/// The same with `max_harness_version: 2` (field 2 = 2), as a v2 runner sends it.
const HELLO_V2: &[u8] = &[0x0A, 0x04, 0x08, 0x01, 0x10, 0x02];

/// Starts fp-testee, writes each request with its length prefix, closes stdin, and returns the
/// responses (without their prefixes) after checking that it exited with status 0.
fn exchange(requests: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fp-testee"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for r in requests {
        stdin.write_all(&(r.len() as u32).to_le_bytes()).unwrap();
        stdin.write_all(r).unwrap();
    }
    drop(stdin);
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    assert!(child.wait().unwrap().success());
    let mut responses = Vec::new();
    let mut at = 0;
    while at < out.len() {
        let n = u32::from_le_bytes(out[at..at + 4].try_into().unwrap()) as usize;
        responses.push(out[at + 4..at + 4 + n].to_vec());
        at += 4 + n;
    }
    responses
}

fn contains(msg: &[u8], what: &[u8]) -> bool {
    msg.windows(what.len()).any(|w| w == what)
}

#[test]
fn answers_each_request_and_exits_0_at_eof() {
    let answers = exchange(&[HELLO_V1, HELLO_V1]);
    assert_eq!(answers.len(), 2);
    for msg in answers {
        // TesteeResponse.hello is field 1 (tag 0x0A); HelloResponse.harness_version = 1 first;
        // the name appears verbatim; no "serve" for a v1 runner.
        assert_eq!(msg[0], 0x0A);
        assert_eq!(&msg[2..4], &[0x08, 0x01]);
        assert!(contains(&msg, b"frameproof-rust"));
        assert!(!contains(&msg, b"serve"));
    }
}

#[test]
fn a_v2_runner_gets_version_2_and_serve() {
    let answers = exchange(&[HELLO_V2]);
    assert_eq!(&answers[0][2..4], &[0x08, 0x02]);
    assert!(contains(&answers[0], b"serve"));
}

#[test]
fn garbage_request_gets_runtime_error_not_a_crash() {
    let answers = exchange(&[&[0xFF, 0xFF, 0xFF]]);
    // TesteeResponse.runtime_error is field 6, length-delimited: tag 0x32.
    assert_eq!(answers[0][0], 0x32);
}
