//! What the end-to-end tests share: an fp-server child process, a run of fp-load with its JSON
//! report, and reading numbers out of the reports.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

pub(crate) struct Server {
    child: Child,
    stdout: BufReader<ChildStdout>,
    pub(crate) addr: String,
}

impl Server {
    pub(crate) fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fp-server"))
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--threads", "2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start fp-server");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let addr = line
            .strip_prefix("LISTENING ")
            .unwrap_or_else(|| panic!("first line {line:?}"))
            .trim()
            .to_string();
        Server {
            child,
            stdout,
            addr,
        }
    }

    /// SIGTERM, then the counters line.
    pub(crate) fn stop(mut self) -> String {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "fp-server exit status {status}");
        rest.lines().last().unwrap_or("").to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs fp-load; returns its exit code and JSON report.
pub(crate) fn load(addr: &str, args: &[&str]) -> (i32, String) {
    let json = std::env::temp_dir().join(format!(
        "fp-load-test-{}-{}.json",
        std::process::id(),
        args.join("_")
            .replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "")
    ));
    let status = Command::new(env!("CARGO_BIN_EXE_fp-load"))
        .args(["--connect", addr])
        .args(args)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .status()
        .expect("run fp-load");
    let report = std::fs::read_to_string(&json).expect("JSON report");
    let _ = std::fs::remove_file(&json);
    (status.code().unwrap_or(-1), report)
}

/// Runs fp-load against `srv` with `--protocol protocol`, then `args`.
pub(crate) fn load_protocol(srv: &Server, protocol: &str, args: &[&str]) -> (i32, String) {
    load(&srv.addr, &[&["--protocol", protocol], args].concat())
}

/// The number after `"key": ` in a flat JSON text.
pub(crate) fn num(json: &str, key: &str) -> f64 {
    let pat = format!("\"{key}\": ");
    let at = json
        .find(&pat)
        .unwrap_or_else(|| panic!("{key} missing in {json}"))
        + pat.len();
    let end = json[at..]
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .map_or(json.len(), |e| at + e);
    json[at..end].parse().unwrap()
}

pub(crate) const LF_BE4: &str = r#"{"protocol": "length-field", "length_field": {"size": -4}}"#;
pub(crate) const LF_1: &str = r#"{"protocol":"length-field","length_field":{"size":1}}"#;

pub(crate) fn read_all(s: &mut TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out)
        .expect("the server closes the connection");
    out
}

/// Runs a program with `args`; returns its exit code, stdout and stderr.
pub(crate) fn run_program(bin: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin).args(args).output().expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}
