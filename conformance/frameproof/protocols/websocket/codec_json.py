"""HAR-CODEC-1 for websocket: a server started from the command under test with its codec JSON spelled
each way the spec allows serves, and with each value the spec refuses exits with a usage error
(spec/websocket.md §13, the codec JSON's ``websocket`` object: ``role``, ``max_message``, ``path``,
``subprotocol``, ``permessage_deflate``). The command's ``--codec`` (or ``--protocol``) is swapped
(process_cases.command_with_codec), so a stranger's server that follows the contract is checked as well."""
from __future__ import annotations

import dataclasses
import json
import shlex

from ...checks import CheckFailure
from ...loadside import payload_for
from ...netsuite.conn import request, roundtrip
from ...netsuite.process_cases import command_with_codec, own_server_cmd, refused_cmd
from ...netsuite.target import NetTarget, SkipCase
from ...oracle import Codec

REQ = "HAR-CODEC-1"

#: values of the ``websocket`` object the spec allows that the suite's own codec JSON never spells out:
#: each optional key at its default, given (a reader that knew only the keys it is usually given, or
#: compared the role's spelling wrongly, refuses or misreads them)
ACCEPTED = [
    ({"role": "server"}, "the role, given at its default"),
    ({"permessage_deflate": None}, "permessage_deflate given as the codec has it (false when off)"),
    ({"role": "server", "permessage_deflate": None, "max_message": None}, "every optional key given"),
]

#: values a server may refuse or take for its own: the client's role given to a server. Started, it serves as the
#: server it is (masked frames in, unmasked echoes out); it must not become the codec's client
SERVER_EITHER = [({"role": "client"}, "the client's role, given to a server")]

#: values the spec refuses, each with what is wrong: the role's other strings and types, paths that are
#: no origin-form request target, subprotocols that are no token (RFC 6455 §4.1 item 10), a flag that is
#: not a boolean, a message limit that is not a positive integer
REFUSED = [
    ({"role": "bogus"}, "a role that is neither \"server\" nor \"client\""),
    ({"role": "Server"}, "the role in another case (JSON strings are compared exactly)"),
    ({"role": ""}, "an empty role"),
    ({"role": 7}, "a role that is a number the testee protocol's enum does not have"),
    ({"role": True}, "a role that is a boolean"),
    ({"path": "ws"}, "a path without its leading '/'"),
    ({"path": ""}, "an empty path"),
    ({"path": "/a b"}, "a path with a space"),
    ({"path": "/caf\u00e9"}, "a path with a character outside visible ASCII"),
    ({"path": 5}, "a path that is a number"),
    ({"subprotocol": ""}, "an empty subprotocol"),
    ({"subprotocol": "echo v1"}, "a subprotocol with a space"),
    ({"subprotocol": "a,b"}, "two subprotocols (a comma)"),
    ({"subprotocol": "\u00e9cho"}, "a subprotocol with a character outside US-ASCII"),
    ({"permessage_deflate": "yes"}, "permessage_deflate as a string"),
    ({"permessage_deflate": 1}, "permessage_deflate as a number"),
    ({"max_message": -1}, "a negative message limit"),
    ({"max_message": "big"}, "a message limit that is a string"),
]


def _with(t: NetTarget, change: dict) -> dict:
    """The target's codec JSON with ``change`` in its ``websocket`` object (None: the value the codec has)."""
    d = t.codec.to_json()
    ws = dict(d.get("websocket") or {})
    for k, v in change.items():
        if v is None:
            v = {"permessage_deflate": bool(getattr(t.codec, "permessage_deflate", False)),
                 "max_message": t.codec.max_message or None}[k]
            if v is None:
                continue
        ws[k] = v
    return dict(d, websocket=ws)


def c_codec_json(t: NetTarget):
    """Each accepted spelling: a server started with it answers one request; each refused value: the
    server started with it exits with a usage error before it listens."""
    if not t.server_cmd:
        raise SkipCase("needs the server's command (frameproof net --server-cmd), not a running server")
    if not t.contract:
        raise SkipCase("the server is not said to be a program of the contract (frameproof net --contract): a "
                       "library's own server reads the codec JSON keys it can express (tools/third-party)")
    for change, what in ACCEPTED:
        j = _with(t, change)
        cmd = command_with_codec(t.server_cmd, j)
        srv, own = own_server_cmd(t, cmd, REQ, f"a server given the codec JSON {json.dumps(j)} ({what})", Codec.from_json(j))
        try:
            roundtrip(own, [request(own, 1, payload_for(7, 64))], f"a server given the codec JSON {j} ({what}): ")
        finally:
            srv.stop()
    for change, what in SERVER_EITHER:
        j = _with(t, change)
        cmd = command_with_codec(t.server_cmd, j)
        from ...servers import start_server
        try:
            srv = start_server(cmd, cwd=t.cwd)
        except RuntimeError:
            refused_cmd(shlex.split(cmd), t.cwd, f"a server given the codec JSON {json.dumps(j)} ({what}), which did not "
                        f"listen", [REQ])  # it did not start: it must have said so as a usage error
            continue
        try:
            own = dataclasses.replace(t, host=srv.host, port=srv.port, pid=srv.proc.pid)
            roundtrip(own, [request(own, 1, payload_for(8, 64))], f"a server given the codec JSON {json.dumps(j)} "
                      f"({what}; it listened, so it must serve as the server it is): ")
        finally:
            srv.stop()
    for change, what in REFUSED:
        j = _with(t, change)
        try:
            refused_cmd(shlex.split(command_with_codec(t.server_cmd, j)), t.cwd,
                        f"a server given the codec JSON {json.dumps(j)} ({what})", [REQ])
        except CheckFailure as e:
            raise CheckFailure(f"{e}\n  minimal input: --codec {shlex.quote(json.dumps(j))}", [REQ])


# ---- the load client's side (frameproof net --client)

def c_client_codec_json(t):
    """The load client under test with its codec JSON's role given as ``"client"`` (its own, at the value
    it sets itself) runs, every reply verified; with each value REFUSED names (the role's ``"bogus"`` ...):
    a usage error before it connects."""
    from ...clientsuite import ClientTarget, run_client
    base = dict(t.codec.to_json())
    ws = {k: v for k, v in (base.get("websocket") or {}).items() if k != "role"}

    def spelled(change):
        return dict(base, websocket=dict(ws, **change))
    j = spelled({"role": "client"})
    r = run_client(ClientTarget(command_with_codec(t.command, j), t.codec, t.sink, t.cwd))
    rep = r.report or {}
    # receive mode (a sink): nothing is answered, every request must reach the server
    done = r.stats.frames if t.sink else rep.get("replies_verified")
    if r.rc != 0 or not rep.get("requests_sent") or done != rep.get("requests_sent"):
        raise CheckFailure(f"the client given the codec JSON {json.dumps(j)} (the role, given as its own):\n"
                           f"  expected it to run: exit status 0, every request "
                           f"{'received' if t.sink else 'answered and verified'}\n"
                           f"  actual   status {r.rc}, report {json.dumps({k: rep.get(k) for k in ('requests_sent', 'replies_verified', 'errors')})}, "
                           f"output {r.output.strip()[-300:]!r}", [REQ])
    for change, what in REFUSED:
        j = spelled(change)
        r = run_client(ClientTarget(command_with_codec(t.command, j), t.codec, t.sink, t.cwd))
        usage = any(line.startswith("usage error:") for line in r.output.splitlines())
        if r.rc != 2 or not usage or r.stats.connections:
            raise CheckFailure(f"the client given the codec JSON {json.dumps(j)} ({what}):\n"
                               f"  expected exit status 2, a line starting 'usage error:', no connection\n"
                               f"  actual   status {r.rc}, {r.stats.connections} connection(s), output "
                               f"{r.output.strip()[-300:]!r}\n  minimal input: --codec {shlex.quote(json.dumps(j))}",
                               [REQ])


def client_cases():
    from ...clientsuite import ClientCase
    return [ClientCase("codec_json_read", [REQ], "The load client given its role in the codec JSON runs; given "
                       "a role, path, subprotocol, flag or limit the spec refuses: a usage error before it connects",
                       c_client_codec_json)]
