"""Helpers behind the vector declarations (``frameproof/protocols/<name>/vectors_gen.py``) and
``tools/gen_vectors.py``: every vector states its expectation by hand (frames built by the
declaration, the error class and offset the spec's "Error classification" gives), and these
helpers refuse to record a vector on which the Kaitai-based oracle disagrees."""
from __future__ import annotations

import runpy

from . import oracle, protocols
from .oracle import Error, Frame
from .vectors import compact_bytes

VECTORS = {}  # protocol -> [vector dict], filled by collect()
F = Frame


def Codec(protocol, *args):
    """The codec of ``protocol`` with positional parameters (``Codec("length-field", 0, 3, 0)``)."""
    return protocols.get(protocol).codec_type(protocol, *args)


def fj(f: Frame, protocol) -> dict:
    return protocols.get(protocol).frame_to_json(f)


def collect() -> dict:
    """Runs every registered protocol's declarations afresh; returns VECTORS."""
    VECTORS.clear()
    for p in protocols.MODULES:
        name = protocols.get_module(p).PROTOCOL.name
        VECTORS[name] = []
        runpy.run_module(f"frameproof.protocols.{p}.vectors_gen", run_name="vectors_gen")
    return VECTORS


def add_decode(protocol, vid, desc, reqs, data: bytes, frames, error=None, codec=None, splits=None,
               encode=None, outcomes=None):
    codec = codec or Codec(protocol)
    got = oracle.decode(codec, data)
    if outcomes is None:
        exp_err = Error(*error) if error else None
        if got.frames != list(frames) or got.error != exp_err:
            raise SystemExit(f"{vid}: oracle disagrees: frames {[f.short() for f in got.frames]} "
                             f"error {got.error} vs expected {[f.short() for f in frames]} {exp_err}")
    if outcomes is None and error and any(a.error for a in got.alternatives):
        # the input breaks several requirements at once and the spec accepts either class: the
        # vector lists every acceptable outcome (and names every requirement it is about)
        outcomes = [(list(frames), tuple(error))] + [(a.frames, (a.error.requirement, a.error.offset))
                                                     for a in got.alternatives if a.error]
        reqs = list(reqs) + [a.error.requirement for a in got.alternatives
                             if a.error and a.error.requirement not in reqs]
    v = {"id": vid, "description": desc, "requirements": reqs, "kind": "decode", "codec": codec.to_json(),
         "bytes": compact_bytes(data)}
    if splits:
        v["splits"] = splits
    if outcomes is not None:
        v["outcomes"] = [{"frames": [fj(f, protocol) for f in fr], **({"error": {"requirement": e[0], "offset": e[1]}} if e else {})}
                         for fr, e in outcomes]
        assert any(got.frames == list(fr) and got.error == (Error(*e) if e else None) for fr, e in outcomes), vid
    else:
        v["frames"] = [fj(f, protocol) for f in frames]
        if error:
            v["error"] = {"requirement": error[0], "offset": error[1]}
    if encode is None:
        encode = vid.startswith("y_") and not error
    if encode:
        enc = b"".join(oracle.encode(codec, f) for f in frames)
        assert enc == data, f"{vid}: not canonical, set encode=False"
        v["encode"] = True
    VECTORS[protocol].append(v)


def add_encode(protocol, vid, desc, reqs, frame: Frame, error, codec=None):
    codec = codec or Codec(protocol)
    got = oracle.encode(codec, frame)
    assert got == Error(error, 0), f"{vid}: oracle gives {got}"
    VECTORS[protocol].append({"id": vid, "description": desc, "requirements": reqs, "kind": "encode",
                              "codec": codec.to_json(), "frame": fj(frame, protocol),
                              "expect": {"error": {"requirement": error, "offset": 0}}})


def add_match(protocol, vid, desc, reqs, events, expected_kinds=None, codec=None, timeout_ms=0, check=None):
    """``expected_kinds``: the hand-written list of (kind, request) the oracle must produce."""
    codec = codec or Codec(protocol)
    res = oracle.match(codec, events, timeout_ms)
    got = [(c.kind, c.request) for c in res.completions]
    if expected_kinds is not None and got != expected_kinds:
        raise SystemExit(f"{vid}: oracle completions {got} != expected {expected_kinds}")
    if check:
        check(res)
    evj = []
    for k, a in events:
        evj.append({k: a if k == "advance_ms" else fj(a, protocol) if k == "send_frame" else compact_bytes(a)})
    v = {"id": vid, "description": desc, "requirements": reqs, "kind": "match", "codec": codec.to_json(),
         "timeout_ms": timeout_ms, "events": evj, "sent": [compact_bytes(s) for s in res.sent],
         "completions": [{"kind": c.kind, **({"request": c.request} if c.request is not None else {}),
                          **({"frame": fj(c.frame, protocol)} if c.frame else {})} for c in res.completions]}
    if res.error:
        v["error"] = {"requirement": res.error.requirement, "offset": res.error.offset}
    VECTORS[protocol].append(v)


