"""The command lines of fp-server and fp-load (reference-impls/README.md, common rules): the
configuration refused before listening, usage errors (exit 2, one "usage error:" line and the
usage on stderr, nothing on stdout) and --help."""
import os
import subprocess

from wire import lf_codec

USAGE_ERRORS = [
    # (arguments before --listen/--connect, what stderr must mention)
    (["--protocol", "standard", "--codec", '{"protocol": "standard"}'], "exactly one of --codec"),
    ([], "exactly one of --codec"),
    (["--codec", '{"protocol": "standard"'], "not JSON"),
    (["--codec", '"standard"'], "expected a JSON object"),
    (["--codec", '{"limits": {}}'], '"protocol" is required'),
    (["--codec", '{"protocol": "mqtt"}'], 'unknown protocol "mqtt"'),
    (["--protocol", "Standard"], 'unknown protocol "Standard"'),
    (["--codec", '{"protocol": "standard", "max_payload": 5}'], 'unknown key "max_payload"'),
    (["--codec", '{"protocol": "standard", "length_field": {"size": 4}}'], 'unknown key "length_field"'),
    (["--codec", '{"protocol": "length-field", "length_field": {"offset": 1, "bits": 8}}'], 'unknown key "bits"'),
    (["--codec", '{"protocol": "length-field", "length_field": {"offset": -1}}'], "expected an unsigned integer"),
    (["--codec", '{"protocol": "standard", "limits": {"max_payload": "10"}}'], "expected an unsigned integer"),
    (["--protocol", "standard", "--lf-size", "4"], "unknown option --lf-size"),
    (["--protocol", "standard", "--max-payload", "4"], "unknown option --max-payload"),
]


def test_bad_configuration_refused(fp):
    """LF-FMT-3: an unsupported size is refused before listening (a usage error)."""
    p = subprocess.run([fp.server_path, "--codec", lf_codec(0, 3), "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "LISTENING" not in p.stdout and "LF-FMT-3" in p.stderr, \
        "rc %d stdout %r stderr %r" % (p.returncode, p.stdout, p.stderr)


def test_usage_errors_exit_2(fp):
    """reference-impls/README.md, common rules: --codec JSON or --protocol NAME, exactly one; bad JSON,
    unknown keys and the old per-protocol flags are usage errors: one "usage error:" line and the
    usage on stderr, exit status 2, nothing on stdout. --help: the usage on stdout, exit 0."""
    for prog, tail in ((fp.server_path, ["--listen", "127.0.0.1:0"]),
                       (fp.load_path, ["--connect", "127.0.0.1:9", "--requests", "1"])):
        name = os.path.basename(prog)
        for args, want in USAGE_ERRORS:
            p = subprocess.run([prog] + args + tail, capture_output=True, text=True, timeout=10)
            lines = p.stderr.splitlines()
            assert p.returncode == 2 and p.stdout == "", "%s %r: rc %d stdout %r" % (name, args, p.returncode, p.stdout)
            assert lines and lines[0].startswith("usage error:") and want in lines[0], \
                "%s %r: stderr %r (want %r)" % (name, args, p.stderr, want)
            assert any(l.startswith("usage: %s" % name) for l in lines), "%s %r: no usage in %r" % (name, args, p.stderr)
        h = subprocess.run([prog, "--help"], capture_output=True, text=True, timeout=10)
        assert (h.returncode == 0 and h.stderr == "" and h.stdout.startswith(
            "usage: %s (--codec JSON | --protocol standard|length-field|rpc|websocket)" % name)), \
            "%s --help: rc %d %r %r" % (name, h.returncode, h.stdout, h.stderr)
    for args, want in (
            (["--mode", "per-packet", "--window", "2"], "--window must be 1 in per-packet mode"),
            (["--mode", "pipelined", "--window", "256"], "--window must be at most 255 for standard"),
            (["--payload", "2147483648"], "--payload is above"),
            (["--duration", "abc"], "not a number of seconds"),
            (["--requests", "x"], "--requests: not a number")):
        p = subprocess.run([fp.load_path, "--protocol", "standard", "--connect", "127.0.0.1:9"] + args +
                           ([] if "--duration" in args or "--requests" in args else ["--requests", "1"]),
                           capture_output=True, text=True, timeout=10)
        assert p.returncode == 2 and p.stderr.startswith("usage error: ") and want in p.stderr.splitlines()[0], \
            "fp-load %r: rc %d stderr %r" % (args, p.returncode, p.stderr)
