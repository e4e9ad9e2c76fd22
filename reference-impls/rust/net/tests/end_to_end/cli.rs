//! The command lines of fp-server and fp-load: usage errors exit 2 with the reason, `--help`
//! exits 0.

use crate::common::run_program;

/// fp-load's arguments for one request to 127.0.0.1:9 with `codec` (`--protocol NAME` or
/// `--codec JSON`), then `more`: each case is a usage error, found before connecting.
fn one_request<'a>(codec: [&'a str; 2], more: &[&'a str]) -> Vec<&'a str> {
    [
        &codec[..],
        &["--connect", "127.0.0.1:9", "--requests", "1"],
        more,
    ]
    .concat()
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let server = env!("CARGO_BIN_EXE_fp-server");
    let load = env!("CARGO_BIN_EXE_fp-load");
    let std_codec = r#"{"protocol": "standard"}"#;
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            server,
            vec!["--listen", "127.0.0.1:0"],
            "--codec or --protocol is required",
        ),
        (
            server,
            vec![
                "--protocol",
                "standard",
                "--codec",
                std_codec,
                "--listen",
                "127.0.0.1:0",
            ],
            "not both",
        ),
        (
            server,
            vec!["--codec", "{\"protocol\"", "--listen", "127.0.0.1:0"],
            "not valid JSON",
        ),
        (
            server,
            vec![
                "--codec",
                r#"{"protocol": "standard", "sise": 1}"#,
                "--listen",
                "127.0.0.1:0",
            ],
            "\"sise\"",
        ),
        (
            server,
            vec![
                "--codec",
                r#"{"protocol": "length-field", "length_field": {"size": 3}}"#,
                "--listen",
                "127.0.0.1:0",
            ],
            "LF-FMT-3",
        ),
        (
            server,
            vec!["--protocol", "smtp", "--listen", "127.0.0.1:0"],
            "not implemented",
        ),
        (
            server,
            vec![
                "--protocol",
                "length-field",
                "--lf-size",
                "4",
                "--listen",
                "127.0.0.1:0",
            ],
            "unknown option --lf-size",
        ),
        (
            server,
            vec![
                "--protocol",
                "standard",
                "--max-payload",
                "9",
                "--listen",
                "127.0.0.1:0",
            ],
            "unknown option --max-payload",
        ),
        (
            server,
            vec!["--protocol", "standard"],
            "--listen is required",
        ),
        (
            load,
            one_request(["--protocol", "standard"], &["--lf-offset", "2"]),
            "unknown option --lf-offset",
        ),
        (
            load,
            one_request(["--protocol", "standard"], &["--window", "2"]),
            "per-packet",
        ),
        (
            load,
            one_request(
                ["--protocol", "standard"],
                &["--mode", "pipelined", "--window", "256"],
            ),
            "STD-SEQ-3",
        ),
        (
            load,
            one_request(
                ["--protocol", "length-field"],
                &["--mode", "pipelined", "--window", "257"],
            ),
            "LF-MATCH-4",
        ),
        (
            load,
            one_request(
                [
                    "--codec",
                    r#"{"protocol": "length-field", "length_field": {"size": 1}}"#,
                ],
                &["--payload", "256"],
            ),
            "LF-LEN-1",
        ),
        (
            load,
            one_request(
                [
                    "--codec",
                    r#"{"protocol": "standard", "limits": {"max_payload": 10}}"#,
                ],
                &[],
            ),
            "STD-LIM-2",
        ),
        (
            load,
            vec!["--connect", "127.0.0.1:9", "--requests", "1"],
            "--codec or --protocol is required",
        ),
    ];
    for (bin, args, want) in cases {
        let (rc, stdout, stderr) = run_program(bin, &args);
        assert_eq!(rc, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: stdout {stdout:?}");
        assert!(stderr.starts_with("usage error: "), "{args:?}: {stderr}");
        assert!(
            stderr.lines().next().unwrap().contains(want),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("usage: "), "{args:?}: {stderr}");
    }
    for bin in [server, load] {
        let (rc, stdout, _) = run_program(bin, &["--help"]);
        assert_eq!(rc, 0);
        assert!(stdout.starts_with("usage: ") && stdout.contains("--codec JSON | --protocol NAME"));
    }
}
