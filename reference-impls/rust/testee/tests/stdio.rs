//! Drives the fp-testee binary over its real stdin/stdout framing.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// Serialized `TesteeRequest { hello { harness_version: 1 } }` (field 1, message; field 1 = 1).
const HELLO: &[u8] = &[0x0A, 0x02, 0x08, 0x01];

#[test]
fn answers_each_request_and_exits_0_at_eof() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fp-testee"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for _ in 0..2 {
        stdin
            .write_all(&(HELLO.len() as u32).to_le_bytes())
            .unwrap();
        stdin.write_all(HELLO).unwrap();
    }
    drop(stdin);
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    assert!(child.wait().unwrap().success());
    let mut at = 0;
    let mut answers = 0;
    while at < out.len() {
        let n = u32::from_le_bytes(out[at..at + 4].try_into().unwrap()) as usize;
        let msg = &out[at + 4..at + 4 + n];
        // TesteeResponse.hello is field 1 (tag 0x0A); the name appears verbatim.
        assert_eq!(msg[0], 0x0A);
        assert!(msg.windows(15).any(|w| w == b"frameproof-rust"));
        at += 4 + n;
        answers += 1;
    }
    assert_eq!(answers, 2);
}

#[test]
fn garbage_request_gets_runtime_error_not_a_crash() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fp-testee"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let junk = [0xFFu8, 0xFF, 0xFF];
    stdin.write_all(&(junk.len() as u32).to_le_bytes()).unwrap();
    stdin.write_all(&junk).unwrap();
    drop(stdin);
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    assert!(child.wait().unwrap().success());
    // TesteeResponse.runtime_error is field 6, length-delimited: tag 0x32.
    assert_eq!(out[4], 0x32);
}
