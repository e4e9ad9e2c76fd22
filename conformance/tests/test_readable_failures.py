"""What users see when something fails (issue: a stranger's codec showed the suite's weak spots):
a partial implementation keeps its properties, and every failure, of every suite, reads as
requirement, expected, actual, minimal input: never a traceback."""
from conftest import PY, PYTESTEE

SERVER = f"{PY} -m frameproof.pyserver --listen 127.0.0.1:0"


def statuses(doc):
    return {t["name"]: t for t in doc["tests"]}


def no_traceback(text):
    for marker in ("Traceback (most recent call last)", "ExceptionGroup", "TimeoutError:", "File \""):
        assert marker not in text, f"{marker!r} in the report:\n{text[-3000:]}"


def test_partial_testee_keeps_its_properties(frameproof):
    """A testee that skips every non-default profile: each property still runs on the examples
    it answers; a property is skipped only when every example was."""
    rc, out, doc = frameproof("run", "--testee", f"{PYTESTEE} --partial", "--protocol", "length-field")
    assert rc == 0, out[-3000:]
    t = statuses(doc)
    for prop in ("LF-STR-1/prop_chunking_independence", "LF-FMT-1/prop_encode_matches_spec",
                 "LF-FMT-5/prop_encode_decode_roundtrip", "LF-LIM-1/prop_invalid_rejected_with_class",
                 "LF-STR-4/prop_agrees_with_oracle"):
        assert t[f"length-field/{prop}"]["status"] == "passed", t[f"length-field/{prop}"]
    # decoding the default profile was asked, so some vectors pass; others are skipped one by one
    assert doc["totals"]["passed"] > 30 and doc["totals"]["skipped"] > 30


def test_several_distinct_property_failures_read_as_expected_vs_actual(frameproof):
    rc, out, doc = frameproof("run", "--testee", f"{PYTESTEE} --mutant refuse-long-misdecode", "--protocol", "standard",
                              "--select", "*prop_encode_decode_roundtrip")
    assert rc == 1
    msg = statuses(doc)["standard/STD-HDR-5/prop_encode_decode_roundtrip"]["message"]
    assert "2 distinct failures" in msg, msg
    assert msg.count("expected") >= 2 and msg.count("actual") >= 2, msg
    assert "refused with STD-LIM-2" in msg
    no_traceback(out)


def test_crash_reads_as_a_runtime_error(frameproof):
    rc, out, doc = frameproof("run", "--testee", f"{PYTESTEE} --mutant crash-on-decode", "--protocol", "standard",
                              "--select", "*/y_request_open/*")
    assert rc == 1
    msgs = [t["message"] for t in doc["tests"] if t["status"] == "failed"]
    assert msgs and all("testee crash" in m and "exit status 3" in m for m in msgs), msgs
    no_traceback(out)


def test_server_that_stops_reading_reads_as_expected_vs_actual(frameproof, monkeypatch):
    monkeypatch.setenv("FRAMEPROOF_NET_TIMEOUT", "2")
    rc, out, doc = frameproof("net", "--protocol", "standard", "--select", "*largest_allowed_frame",
                              "--server-cmd", f"{SERVER} --protocol standard --fault stops-reading", timeout=120)
    assert rc == 1, out[-2000:]
    msg = statuses(doc)["standard/STD-LIM-1/net/largest_allowed_frame"]["message"]
    assert "expected" in msg and "actual" in msg, msg
    no_traceback(out)


def test_harness_v1_testee_gets_v1_tests_only(frameproof):
    rc, out, doc = frameproof("run", "--testee", f"{PYTESTEE} --harness 1")
    assert rc == 0, out[-2000:]
    skipped = [t for t in doc["tests"] if t["status"] == "skipped"]
    assert skipped and all("harness v1" in t["message"] for t in skipped), skipped[:3]
    # of the version-1 protocols only the serve property (v2) and the long stream (v3) are skipped;
    # protocols added later are skipped whole
    v1 = [t for t in skipped if t["protocol"] in ("standard", "length-field")]
    assert {t["name"].split("/")[-1] for t in v1} == {"prop_serve_agrees_with_model", "long_stream_past_4gib"}


def test_harness_v2_testee_skips_only_the_long_stream(frameproof):
    rc, out, doc = frameproof("run", "--testee", f"{PYTESTEE} --harness 2", "--profile", "smoke")
    assert rc == 0, out[-2000:]
    skipped = [t for t in doc["tests"] if t["status"] == "skipped"]
    assert {t["name"].split("/")[-1] for t in skipped} == {"long_stream_past_4gib"}, skipped[:3]
    assert all("harness v2" in t["message"] for t in skipped), skipped[:3]


def test_properties_report_the_length_edges_they_covered(frameproof):
    """The encode property draws the 16-bit/extended-form edges (an encoder bug at exactly 65535
    bytes was once caught only by a vector) and the JSON report says which edges each property hit."""
    rc, out, doc = frameproof("run", "--testee", PYTESTEE, "--protocol", "standard", "--protocol", "length-field",
                              "--select", "*/prop_encode_matches_spec")
    assert rc == 0, out[-2000:]
    for t in doc["tests"]:
        assert {65534, 65535} <= set(t["length_edges_covered"]) or {65535, 65536} <= set(t["length_edges_covered"]), t


def test_no_skip_fails_a_testee_that_skips_what_it_must_support(frameproof):
    """`--no-skip`: the same partial testee fails, each skip read as expected vs actual with the example,
    instead of passing with skips (a Rust mutant that refused every header offset passed that way)."""
    rc, out, doc = frameproof("run", "--testee", f"{PYTESTEE} --partial", "--protocol", "length-field", "--no-skip",
                              "--select", "*prop_encode_decode_roundtrip", "--select", "*LF-FMT-1*")
    assert rc == 1, out[-3000:]
    t = statuses(doc)
    assert doc["totals"]["skipped"] == 0, doc["totals"]
    msg = t["length-field/LF-FMT-5/prop_encode_decode_roundtrip"]["message"]
    assert "expected an answer" in msg and "skipped: partial" in msg, msg
    no_traceback(out)
    # the full implementation passes with it
    rc, out, _ = frameproof("run", "--testee", PYTESTEE, "--protocol", "length-field", "--no-skip",
                            "--select", "*prop_encode_decode_roundtrip")
    assert rc == 0, out[-3000:]
