"""conformance/testee-golden.json (golden bytes of the testee protocol, checked by the hand-written
C# protobuf codec) is what tools/gen_testee_golden.py generates from the current schema."""
import importlib.util

from frameproof._generated import testee_pb2 as pb

from conftest import ROOT

GOLDEN = ROOT / "conformance" / "testee-golden.json"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_testee_golden", ROOT / "tools" / "gen_testee_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_golden_file_is_current():
    gen = _generator()
    for path, which in gen.FILES:
        assert path.read_text(encoding="utf-8") == gen.render(which), \
            f"conformance/{path.name} is stale: run .venv/bin/python tools/gen_testee_golden.py"


def test_every_field_of_the_schema_is_set_somewhere():
    """Each field of every message in testee.proto is non-default in at least one golden message,
    so that a hand-written codec that misnumbers any of them fails its golden test."""
    seen = set()

    def walk(msg):
        for field, value in msg.ListFields():
            seen.add(field.full_name)
            if field.message_type is not None:
                for v in ([value] if hasattr(value, "ListFields") else value):  # one message or a repeated field
                    walk(v)

    gen = _generator()
    for name, msg in [m for _path, which in gen.FILES for m in which()]:
        walk(msg)
    missing = []
    for m in pb.DESCRIPTOR.message_types_by_name.values():
        for f in m.fields:
            if f.full_name not in seen:
                missing.append(f.full_name)
    assert not missing, f"fields never set in the golden messages: {missing}"


def test_golden_bytes_parse_back():
    gen = _generator()
    for _path, which in gen.FILES:
        for entry, (name, msg) in zip(gen.golden(which), which()):
            assert entry["name"] == name
            back = type(msg).FromString(bytes.fromhex(entry["hex"]))
            assert back == msg, name


def test_discovery_and_long_stream_messages_are_views_of_the_testee_messages():
    """A discovery or long-stream request parses as a TesteeRequest with no request set, and its
    answer as a TesteeResponse with no result set (spec/testee.md: outside the oneofs)."""
    gen = _generator()
    for name, msg in list(gen.discovery_messages()) + list(gen.long_stream_messages()):
        data = msg.SerializeToString()
        if isinstance(msg, (pb.TesteeDiscoveryRequest, pb.TesteeLongStreamRequest)):
            assert pb.TesteeRequest.FromString(data).WhichOneof("request") is None, name
        else:
            r = pb.TesteeResponse.FromString(data)
            answer = "discovery" if isinstance(msg, pb.TesteeDiscoveryResponse) else "long_stream"
            want = None if msg.HasField(answer) else "skipped" if msg.skipped else "runtime_error"
            assert r.WhichOneof("result") == want, name
