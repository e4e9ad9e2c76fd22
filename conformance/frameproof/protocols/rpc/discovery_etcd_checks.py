"""The registry's etcd checks: the etcd keys and JSON values of endpoints and how fixed etcd entries
decode (DISC-ETCD-1..3), and a registry on a private etcd (DISC-ETCD-4..7). The etcd client itself
is ``discovery_etcd``."""
from __future__ import annotations

from hypothesis import strategies as st

from ..._generated import testee_pb2 as pb
from ...checks import CheckFailure
from . import discovery_model as M
from .discovery_compare import _res_text, check_script, describe_op, result_diff
from .discovery_model import CODE_NAMES, EVENT_NAMES, Endpoint
from .discovery_pb import probe, run_script
from .discovery_scripts import A, B, DEREG, DISC, REG, SEL, WATCH, ep


# ------------------------------------------------------------------ the etcd mapping (DISC-ETCD-1..3)

ETCD_DECODE_CASES = [  # (prefix, key, value): the model says what each decodes to
    ("frameproof/services", b"/frameproof/services/svc.a/i0",
     b'{"service":"svc.a","instance_id":"i0","host":"10.0.0.1","port":7000,"weight":5}'),
    ("p", b"/p/s/i", b'{"instance_id":"i","zone":"eu-1","service":"s","host":"h","port":1,"meta":{"a":[1,2]}}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1}'),
    ("p", b"/p/s/i", b'  {"service" : "s", "instance_id" : "i", "host" : "h", "port" : 65535, "weight" : 0}\n'),
    ("a/b", b"/a/b/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1,"weight":4294967295}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1,"weight":4294967296}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":65536}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":"1"}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1.5}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":true}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","port":1}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"j","host":"h","port":1}'),
    ("p", b"/p/s/i", b'{"service":"t","instance_id":"i","host":"h","port":1}'),
    ("p", b"/p/s/i/x", b'{"service":"s","instance_id":"i","host":"h","port":1}'),
    ("p", b"/q/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1}'),
    ("p", b"p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1}'),
    ("p", b"/p/s/i", b'["s","i","h",1]'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1'),
    ("p", b"/p/s/i", b'\xff{"service":"s"}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"","port":1}'),
    ("/p", b"//p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1}'),
]

_names = st.text(st.characters(blacklist_characters="/", blacklist_categories=("Cs",)), min_size=1, max_size=12)


def etcd_mapping():
    def run(testee):
        probe(testee)
        check_script(testee, [{"etcd_decode": {"prefix": p, "key": k, "value": v}} for p, k, v in ETCD_DECODE_CASES],
                     "fixed etcd entries: ")

        from hypothesis import given

        @given(st.lists(st.tuples(st.sampled_from(["frameproof/services", "p", "a/b/c", "/p", "p/", ""]),
                                  st.builds(Endpoint, _names, _names, _names, st.integers(0, 65536),
                                            st.integers(0, 2 ** 32 - 1))), min_size=1, max_size=6))
        def prop(items):
            ops = []
            for prefix, e in items:
                ops.append({"etcd_encode": {"prefix": prefix, "endpoint": e}})
                ops.append({"etcd_decode": {"prefix": prefix, "key": M.etcd_key(prefix, e.service, e.instance_id),
                                            "value": M.etcd_value(e)}})
            check_script(testee, ops, "etcd round trip: ")
        prop()
    return run


# ------------------------------------------------------------------ on a real etcd (DISC-ETCD-4..7)

ETCD_SCRIPT = [
    WATCH(A), WATCH(B), REG(ep(A, "i1", "10.0.0.1", 7001, 5)), REG(ep(A, "i0", "10.0.0.2", 7002, 1)),
    REG(ep(B, "i0", "10.0.0.3", 7003, 1)), REG(ep(A, "i2", "10.0.0.4", 7004, 0)), DISC(A),
    REG(ep(A, "i1", "10.0.0.9", 7009, 2)), DISC(A), DEREG(A, "i0"), DEREG(A, "i0"), DEREG("svc.none", "i0"),
    DISC(A), DISC(B), DISC("svc.none"), REG(ep(A, "i0", "10.0.0.2", 7002, 1)), DISC(A),
    SEL(0, A, "round-robin", 5), SEL(1, A, "weighted-round-robin", 6), {"unwatch": 1}, REG(ep(B, "i1")),
    REG(ep(A, "i3", "10.0.0.5", 7005, 3)), REG(ep(A, "bad/id")),
]


def _per_watcher(events):
    out = {}
    for ev in events:
        out.setdefault(ev.watch, []).append((ev.type, ev.endpoint))
    return out


def check_remote(testee, ops, etcd_msg, context):
    """Results as the model says; events per watcher in the model's order (a remote registry
    delivers them on its own thread, after the operations returned: DISC-ETCD-6)."""
    exp_results, exp_events = M.run(ops)
    act_results, act_events = run_script(testee, ops, etcd=etcd_msg)
    head = f"{context}registry script of {len(ops)} ops on etcd (prefix {etcd_msg.prefix!r}):\n" + \
        "\n".join(f"    {i}: {describe_op(op)}" for i, op in enumerate(ops)) + "\n"
    for i, (op, e, a) in enumerate(zip(ops, exp_results, act_results)):
        kind = next(iter(op))
        reqs = result_diff(kind, e, a)
        if reqs:
            raise CheckFailure(f"{head}op {i} ({describe_op(op)}):\n  expected {_res_text(e, kind)}\n  actual   "
                               f"{_res_text(a, kind)}", ["DISC-ETCD-4"] + reqs)
    want, got = _per_watcher(exp_events), _per_watcher(act_events)
    for w in sorted(set(want) | set(got)):
        x, y = want.get(w, []), got.get(w, [])
        if x != y:
            j = next((k for k, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            fmt = lambda t: f"{EVENT_NAMES.get(t[0], t[0])} {t[1].short()}" if t else "no more events"  # noqa: E731
            raise CheckFailure(f"{head}watcher {w}, event {j} (of {len(x)} expected, {len(y)} delivered):\n"
                               f"  expected {fmt(x[j] if j < len(x) else None)}\n  actual   "
                               f"{fmt(y[j] if j < len(y) else None)}", ["DISC-ETCD-6"])
    return exp_results


def etcd_live():
    def run(testee):
        import time
        from . import discovery_etcd as E
        etcd = E.started_etcd()
        try:
            gw = E.Gateway(etcd.endpoint)
            ttl = 2
            msg = pb.DiscoveryEtcd(endpoint=etcd.endpoint, prefix="fp-test/one", lease_ttl_s=ttl, abandon=True)
            check_remote(testee, ETCD_SCRIPT, msg, "")
            # what the registry left in etcd: the keys and values of §8, in registration order, leased
            model = M.Model()
            model.run([op for op in ETCD_SCRIPT if "register" in op or "deregister" in op])
            want = [(M.etcd_key(msg.prefix, e.service, e.instance_id), M.etcd_value(e))
                    for s in sorted(model.services) for e in model.services[s]]
            kvs = gw.range_prefix(f"/{msg.prefix}/".encode()).get("kvs", [])
            got = sorted(((E._unb64(kv["key"]), E._unb64(kv.get("value", ""))) for kv in kvs),
                         key=lambda kv: [k for k, _v in want].index(kv[0]) if kv[0] in [k for k, _v in want] else -1)
            if got != want:
                raise CheckFailure(f"the keys under /{msg.prefix}/ after the script:\n  expected {want}\n  actual   {got}",
                                   ["DISC-ETCD-1", "DISC-ETCD-2", "DISC-ETCD-4"])
            leases = {kv.get("lease", "0") for kv in kvs}
            if "0" in leases or not leases:
                raise CheckFailure(f"the keys under /{msg.prefix}/:\n  expected every key written with a lease\n"
                                   f"  actual   leases {sorted(leases)}", ["DISC-ETCD-5"])
            for lease in leases:
                granted = int(gw.post("/v3/lease/timetolive", {"ID": lease}).get("grantedTTL", 0))
                if granted != ttl:
                    raise CheckFailure(f"lease {lease}:\n  expected a TTL of {ttl} s (lease_ttl_s)\n  actual   {granted} s",
                                       ["DISC-ETCD-5"])
            # the testee abandoned its registry (a crash): the keys go within TTL + TTL/3 (+1 s slack)
            t0 = time.monotonic()
            while gw.range_prefix(f"/{msg.prefix}/".encode()).get("kvs") and time.monotonic() - t0 < ttl * 4 / 3 + 1.5:
                time.sleep(0.1)
            left = gw.range_prefix(f"/{msg.prefix}/".encode()).get("kvs", [])
            if left:
                raise CheckFailure(f"{len(left)} keys under /{msg.prefix}/ {time.monotonic() - t0:.1f} s after the "
                                   f"registry stopped its keep-alives:\n  expected none (lease TTL {ttl} s)\n"
                                   f"  actual   {[E._unb64(kv['key']) for kv in left]}", ["DISC-ETCD-5"])
            check_remote(testee, [DISC(A), DISC(B)], pb.DiscoveryEtcd(endpoint=etcd.endpoint, prefix=msg.prefix,
                                                                      lease_ttl_s=ttl), "after the lease expired: ")
            # etcd unreachable: CONNECTION_ERROR within the request timeout, not a hang
            timeout_ms = 1000
            down = pb.DiscoveryEtcd(endpoint=f"127.0.0.1:{E.free_port()}", prefix="fp-test/two", lease_ttl_s=ttl,
                                    request_timeout_ms=timeout_ms)
            t0 = time.monotonic()
            results, _ = run_script(testee, [REG(ep(A, "i0")), DISC(A)], etcd=down)
            took = time.monotonic() - t0
            limit = 2 * timeout_ms / 1000 + 1.5
            if [r.code for r in results] != [M.CONNECTION_ERROR] * 2 or took > limit:
                raise CheckFailure(f"register and discover with no etcd at {down.endpoint}:\n  expected CONNECTION_ERROR "
                                   f"twice within {limit:g} s (request timeout {timeout_ms} ms)\n  actual   "
                                   f"{[CODE_NAMES[r.code] if r.code < 6 else r.code for r in results]} after {took:.1f} s",
                                   ["DISC-ETCD-7"])
        finally:
            etcd.cleanup()
    return run
