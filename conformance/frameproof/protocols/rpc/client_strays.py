"""rpc's own cases of `frameproof net --client` (spec/rpc.md §8, the client side): the checking server
writes stray frames before every 13th reply of a unary call, and the load client must take them as the
spec says, on a connection it keeps using.

* unmatched RESPONSEs (RPC-MATCH-2): one whose id is the reply's with bit 31 flipped (an id no request
  of the run has), and one repeating the id of the request answered just before on that connection (a
  completed id: ids are a per-connection counter, RPC-ID-1, and the server answers in order, so the
  client has read that reply already). Each completes nothing and is not a connection error;
* frames of other types (RPC-MATCH-4): a REQUEST, a STREAM_DATA and a STREAM_END carrying the id of the
  request the reply is about to complete (pending), the first two with a payload that differs from the
  request's. Each completes nothing and is not a reply.

What the JSON report must show (spec/harness.md, HAR-COUNT-1; reference-impls/README.md, "rpc: what
changes"): the stray frames are neither replies nor errors. `replies_received` and `replies_verified`
equal the real replies the server wrote, `requests_sent` the requests it received, `errors` is 0, the
client opens no more connections than it reports and exits 0. RPC-MATCH-2's report to the application
is the client library's (checked on the codec side, prop_matching_agrees_with_model); the load client,
as the application, neither counts it as a reply nor as an error.

And a wrong answer (HAR-VERIFY-1): a RESPONSE with the pending call's id, flags and payload but a non-zero
error code completes the call (RPC-MATCH-5) and fails the echo's verification (RPC-ECHO-1: code 0); the
real reply after it completes nothing (case error_code_replies_fail).

Stream mode (§10) has no pending requests: the cases are skipped there, and in receive mode."""
from __future__ import annotations

from dataclasses import replace

from ...checks import CheckFailure
from . import frames as K

EVERY = 13  # stray frames before every 13th reply of the run


def _other_payload(p: bytes) -> bytes:
    return bytes([p[0] ^ 0xFF]) + p[1:] if p else b"stray"


def unmatched_responses(reply):
    """RESPONSEs whose id no request has pending, written before ``reply`` (RPC-MATCH-2)."""
    h = reply.header
    out = [replace(reply, header=replace(h, id=h.id ^ 0x80000000))]
    if h.id:
        out.append(replace(reply, header=replace(h, id=h.id - 1)))
    return out


def non_responses(reply):
    """Frames of other types than RESPONSE carrying the pending id of ``reply`` (RPC-MATCH-4)."""
    h, other = reply.header, _other_payload(reply.payload)
    return [K.request(h.id, other, flags=h.flags), K.stream(K.DATA, h.id, other), K.stream(K.END, h.id)]


def _run(t, kind, fn, requirement):
    from ...clientsuite import _cache, _need_report, clean, run_client
    from ...netsuite import SkipCase
    if t.sink:
        raise SkipCase("receive mode has no replies")
    if ((clean(t).report or {}).get("mode") or "") == "stream":
        raise SkipCase("stream mode has no pending requests: stray frames are written on unary calls only")
    r = _cache(t, kind, lambda: run_client(t, strays=(EVERY, fn)))
    rep = _need_report(r)
    s = r.stats
    if s.strays == 0:
        raise CheckFailure(f"the run was too short for the server to write stray frames (send at least {EVERY} "
                           f"requests)")
    bad = []
    if s.protocol_errors or s.client_errors:
        bad.append(f"the client's requests broke the rules after the stray frames: {s.error_details[:1] or 'a malformed stream'}")
    if rep.get("requests_sent") != s.frames:
        bad.append(f"requests_sent: client says {rep.get('requests_sent')}, server received {s.frames}")
    for key in ("replies_received", "replies_verified"):
        if rep.get(key) != s.replies:
            bad.append(f"{key}: client says {rep.get(key)}, server wrote {s.replies} real replies "
                       f"(and {s.strays} stray frames, which are no replies)")
    if rep.get("errors") != 0:
        bad.append(f"errors: client reports {rep.get('errors')}: {(rep.get('error_details') or [])[:3]}")
    if isinstance(rep.get("connections"), int) and s.connections > rep["connections"]:
        bad.append(f"the client opened {s.connections} connections for {rep['connections']}: it reconnected")
    if r.rc != 0:
        bad.append(f"exit status {r.rc}")
    if bad:
        raise CheckFailure(f"{kind}: {s.strays} stray frames before every {EVERY}th reply; the client:\n  "
                           + "\n  ".join(bad) + "\n--- client output ---\n" + r.output[-1500:], [requirement])


def error_responses(reply):
    """A RESPONSE completing ``reply``'s call (its id, flags and payload) with a non-zero error code (3 or 2,
    by the id's parity): RPC-ECHO-1 makes the echo's code 0, so the client must count it as a failed reply."""
    h = reply.header
    return [replace(reply, header=replace(h, error_code=3 if h.id & 1 else 2))]


def c_unmatched(t):
    _run(t, "unmatched RESPONSEs", unmatched_responses, "RPC-MATCH-2")


def c_non_response(t):
    _run(t, "frames other than RESPONSE", non_responses, "RPC-MATCH-4")


def c_error_code(t):
    from ...clientsuite import wrong_replies
    wrong_replies(t, "RESPONSEs with an error code", error_responses, ["HAR-VERIFY-1", "RPC-MATCH-5", "RPC-ECHO-1"],
                  EVERY)


def client_cases():
    from ...clientsuite import ClientCase
    return [
        ClientCase("unmatched_responses_ignored", ["RPC-MATCH-2"], "RESPONSEs with an id no request has pending "
                   "(bit 31 flipped; the id just completed) before every 13th reply: the client completes nothing "
                   "with them, counts them neither as replies nor as errors, keeps the connection and exits 0",
                   c_unmatched),
        ClientCase("non_responses_ignored", ["RPC-MATCH-4"], "A REQUEST, a STREAM_DATA and a STREAM_END with the "
                   "pending request's id before every 13th reply: none completes the request or counts as a "
                   "reply; the real reply does, the connection stays open and the client exits 0", c_non_response),
        ClientCase("error_code_replies_fail", ["HAR-VERIFY-1", "RPC-MATCH-5", "RPC-ECHO-1"], "Before every 13th "
                   "reply a RESPONSE with the call's id, flags and payload but error code 2 or 3: it completes the "
                   "call (RPC-MATCH-5) and fails verification (one error each, non-zero exit); the real reply after "
                   "it completes nothing", c_error_code),
    ]
