//! The command line of the Autobahn client contract (reference-impls/README.md, "fp-autobahn-client")
//! shared by the Rust third-party wrappers' clients (tokio-tungstenite, fastwebsockets), included with
//! `#[path = "../../common/autobahn_client_args.rs"] mod args;`:
//! `--connect HOST:PORT --agent NAME [--cases all|N]`, usage errors as the contract has them.

use std::process::exit;

pub struct Args {
    pub connect: String,
    /// the agent name as a query value
    pub agent_query: String,
    /// None: all cases
    pub cases: Option<usize>,
}

/// Parses the process's arguments; `--help` prints `usage` and exits 0, a usage error exits 2.
pub fn parse(usage: &str) -> Args {
    let fail = |msg: &str| -> ! {
        eprintln!("usage error: {msg}");
        eprintln!("{usage}");
        exit(2)
    };
    let (mut connect, mut agent, mut cases) = (None, None, None);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| fail(&format!("{a} needs a value")));
        match a.as_str() {
            "--help" | "-h" => {
                println!("{usage}");
                exit(0)
            }
            "--connect" => connect = Some(val()),
            "--agent" => agent = Some(val()),
            "--cases" => {
                let v = val();
                cases = match v.as_str() {
                    "all" => None,
                    n => Some(n.parse::<usize>().unwrap_or_else(|_| fail(&format!("--cases {n}: all or a number")))),
                }
            }
            _ => fail(&format!("unknown flag {a}")),
        }
    }
    let (Some(connect), Some(agent)) = (connect, agent) else {
        fail("--connect and --agent are required")
    };
    Args { connect, agent_query: query_escape(&agent), cases }
}

/// A query value: unreserved characters as they are, every other byte %XX.
fn query_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
