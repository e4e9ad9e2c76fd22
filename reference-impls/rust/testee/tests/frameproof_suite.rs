//! frameproof itself as a test of this workspace, for mutation testing (tools/mutation.sh runs
//! cargo-mutants with `--test-package fp-testee -- --test frameproof_suite`): a mutant of the
//! codec crate is caught when frameproof's codec suite fails against the mutated fp-testee, or,
//! when `FRAMEPROOF_NET=1`, its network suite against the mutated fp-server and its client suite
//! against the mutated fp-load.
//!
//! Not part of `cargo test` (Cargo.toml: `test = false`): it needs the frameproof CLI, given as
//! `FRAMEPROOF_BIN`. `FRAMEPROOF_PROTOCOLS` (comma-separated) limits the protocols;
//! `FRAMEPROOF_PROFILE` is the Hypothesis profile (default smoke).
use std::env;
use std::path::Path;
use std::process::{exit, Command};

fn run(what: &str, cmd: &mut Command) -> bool {
    eprintln!("frameproof_suite: {what}: {cmd:?}");
    match cmd.status() {
        Ok(s) => s.success(),
        Err(e) => {
            eprintln!("frameproof_suite: cannot start {what}: {e}");
            exit(2)
        }
    }
}

fn main() {
    let Ok(bin) = env::var("FRAMEPROOF_BIN") else {
        eprintln!("frameproof_suite: set FRAMEPROOF_BIN to the frameproof CLI (tools/mutation.sh does)");
        exit(2)
    };
    let testee = env!("CARGO_BIN_EXE_fp-testee");
    let protocols: Vec<String> = env::var("FRAMEPROOF_PROTOCOLS")
        .unwrap_or_else(|_| "standard,length-field,rpc,websocket".into())
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let profile = env::var("FRAMEPROOF_PROFILE").unwrap_or_else(|_| "smoke".into());
    let mut codec = Command::new(&bin);
    // 20 s a request: a mutant that loops is still caught, and a slow answer on a busy machine (CI runs
    // this beside the C++ sanitizer tests) is not taken for one
    codec.args(["run", "--testee", testee, "--profile", &profile, "-x", "--timeout", "20"]);
    for p in &protocols {
        codec.args(["--protocol", p]);
    }
    if !run("codec suite", &mut codec) {
        exit(1)
    }
    if env::var("FRAMEPROOF_NET").as_deref() != Ok("1") {
        return;
    }
    // fp-server is built beside fp-testee when the fp-net package is tested too
    let server = Path::new(testee).with_file_name("fp-server");
    if !server.exists() {
        eprintln!("frameproof_suite: FRAMEPROOF_NET=1 needs {} (add --test-package fp-net)", server.display());
        exit(2)
    }
    // and the client side: fp-load under the checking server (`frameproof net --client`), pipelined and
    // batched, as the matrix's load-client cells run it
    let load = Path::new(testee).with_file_name("fp-load");
    for p in &protocols {
        let cmd = format!("{} --protocol {p} --listen 127.0.0.1:0", server.display());
        if !run("network suite", Command::new(&bin).args(["net", "-x", "--protocol", p, "--server-cmd", &cmd])) {
            exit(1)
        }
        for mode in ["--mode pipelined --window 16", "--mode batched --batch 16"] {
            let client = format!(
                "{} --protocol {p} --connect {{host}}:{{port}} --connections 4 --payload 32 {mode} \
                 --requests 1000 --timeout-ms 2000 --json {{json}}",
                load.display()
            );
            if !run("client suite", Command::new(&bin).args(["net", "-x", "--protocol", p, "--client", &client])) {
                exit(1)
            }
        }
    }
}
