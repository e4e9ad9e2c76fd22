"""rpc's service registry on etcd (spec/discovery.md §8), in Python: the Python testee's answer to
registry scripts with ``etcd`` set (feature ``discovery-etcd``), and the etcd helpers the suite's
live check uses (a private etcd on 127.0.0.1, reads through etcd's v3 JSON gateway).

No client library: etcd 3.4 serves its v3 API as JSON over HTTP (``/v3/kv/put``, ``/v3/kv/range``,
``/v3/kv/deleterange``, ``/v3/lease/*``, and ``/v3/watch`` as a stream of JSON lines), which
``http.client`` speaks. Keys and values travel base64-encoded."""
from __future__ import annotations

import base64
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import deque
from typing import Dict, List, Optional, Tuple

from ... import reference as R
from ..process_group import stop_group
from .discovery import _valid, _name_ok, etcd_decode, etcd_encode
from .discovery_model import ADDED, CONNECTION_ERROR, INVALID_ARGUMENT, NOT_FOUND, OK, REMOVED, UPDATED, Endpoint

DEFAULT_TTL = 10
REQUEST_TIMEOUT = 5.0  # DISC-ETCD-7: an unreachable etcd answers CONNECTION_ERROR within this


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _unb64(s: str) -> bytes:
    return base64.b64decode(s or "")


def prefix_end(key: bytes) -> bytes:
    """The range end of every key starting with ``key`` (etcd's prefix convention)."""
    k = bytearray(key)
    while k:
        if k[-1] < 0xFF:
            k[-1] += 1
            return bytes(k)
        k.pop()
    return b"\0"


class Unreachable(Exception):
    pass


class Gateway:
    """Unary calls to etcd's JSON gateway. ``endpoint`` is one "host:port" or several, comma-separated
    (the members of a cluster, as etcdctl's --endpoints): calls go to the current one, and one that
    refuses or drops the connection makes the next one current (DISC-ETCD-8)."""

    def __init__(self, endpoint: str, timeout: float = REQUEST_TIMEOUT):
        self.endpoints = []
        for e in endpoint.split(","):
            host, _, port = e.strip().rpartition(":")
            self.endpoints.append((host.strip("[]"), int(port)))
        if not self.endpoints:
            raise ValueError("no etcd endpoint")
        self.current, self.timeout = 0, timeout

    @property
    def host(self) -> str:
        return self.endpoints[self.current][0]

    @property
    def port(self) -> int:
        return self.endpoints[self.current][1]

    def failed(self, index: int) -> None:
        """The endpoint at ``index`` failed: the next one is current (unless another caller moved on)."""
        if R.MUTANT == "disc-etcd-first-endpoint-only":
            return
        if self.current == index:
            self.current = (index + 1) % len(self.endpoints)

    def post(self, path: str, body: dict) -> dict:
        deadline = time.monotonic() + self.timeout
        last, tried = None, 0
        while time.monotonic() < deadline:  # a refused connection is retried until the deadline
            i = self.current
            try:
                c = http.client.HTTPConnection(*self.endpoints[i], timeout=max(0.2, deadline - time.monotonic()))
                try:
                    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
                    r = c.getresponse()
                    data = r.read()
                finally:
                    c.close()
                d = json.loads(data or b"{}")
                if r.status != 200 and "error" in d:
                    raise Unreachable(f"{path}: {d.get('message') or d['error']}")
                return d
            except (OSError, http.client.HTTPException, ValueError) as e:
                last, tried = e, tried + 1
                self.failed(i)
                if tried % len(self.endpoints) == 0:  # every member tried once: wait before the next round
                    time.sleep(0.1)
        raise Unreachable(f"{path}: {last}")

    def range_prefix(self, key: bytes) -> dict:
        return self.post("/v3/kv/range", {"key": _b64(key), "range_end": _b64(prefix_end(key)),
                                          "sort_order": "ASCEND", "sort_target": "CREATE"})


class EtcdRegistry:
    """The registry of spec/discovery.md on etcd: keys ``/<prefix>/<service>/<instance_id>``, JSON
    values, one lease per registry kept alive every TTL/3, one etcd watch per watcher, callbacks
    on the registry's own delivery thread, in the order etcd reports the changes."""

    def __init__(self, endpoint: str, prefix: str, ttl: int = 0, timeout: float = 0):
        self.gw = Gateway(endpoint, timeout or REQUEST_TIMEOUT)
        self.endpoint, self.prefix, self.ttl = endpoint, prefix, ttl or DEFAULT_TTL
        self._lock = threading.Lock()
        self._lease = 0
        self._mine: Dict[Tuple[str, str], Endpoint] = {}  # what this registry registered (re-put after a lost lease)
        self._watchers: Dict[int, dict] = {}
        self._next_handle = 1
        self._queue = deque()
        self._cv = threading.Condition(self._lock)
        self._closed = False
        self._written: Dict[str, int] = {}  # service -> revision of this registry's last write under it
        self._keepalive = threading.Thread(target=self._keep_alive, daemon=True)
        self._keepalive_stop = threading.Event()
        self._dispatcher = threading.Thread(target=self._dispatch, daemon=True)
        self._dispatcher.start()

    # -- keys
    def _key(self, service: str, instance_id: str = "") -> bytes:
        return f"/{self.prefix}/{service}/{instance_id}".encode()

    # -- the lease (DISC-ETCD-5, DISC-ETCD-7)
    def _grant(self):
        d = self.gw.post("/v3/lease/grant", {"TTL": self.ttl})
        self._lease = int(d["ID"])
        if not self._keepalive.is_alive() and not self._keepalive_stop.is_set():
            self._keepalive.start()

    def _keep_alive(self):
        while not self._keepalive_stop.wait(self.ttl / 3):
            try:
                d = self.gw.post("/v3/lease/keepalive", {"ID": str(self._lease)})
                if int(d.get("result", {}).get("TTL", 0)) <= 0:  # expired meanwhile: a new lease, keys again
                    self._renew()
            except (Unreachable, KeyError, ValueError):
                continue  # etcd away: try again next period

    def _renew(self):
        """A new lease, and this registry's instances written again under it (DISC-ETCD-7)."""
        with self._lock:
            mine = list(self._mine.values())
        self._grant()
        if R.MUTANT == "disc-etcd-no-rewrite":
            return  # bug: the instances stay lost with the old lease
        for e in mine:
            self._put(e)

    def _put(self, e: Endpoint) -> int:
        _c, key, value = etcd_encode(self.prefix, e)
        body = {"key": _b64(key), "value": _b64(value), "lease": str(self._lease)}
        if R.MUTANT == "disc-etcd-no-lease":
            del body["lease"]
        d = self.gw.post("/v3/kv/put", body)
        return int(d["header"]["revision"])

    # -- operations
    def register(self, e: Endpoint) -> int:
        if not _valid(e):
            return INVALID_ARGUMENT
        try:
            if not self._lease:
                self._grant()
            try:
                rev = self._put(e)
            except Unreachable as x:
                if "lease not found" not in str(x):
                    raise
                self._renew()  # the lease expired while etcd was away: a new one, ours written again
                rev = self._put(e)
        except (Unreachable, KeyError, ValueError):
            return CONNECTION_ERROR
        with self._lock:
            self._mine[(e.service, e.instance_id)] = e
            self._written[e.service] = max(rev, self._written.get(e.service, 0))
        return OK

    def deregister(self, service: str, instance_id: str, given=None) -> int:
        if not (_name_ok(service) and _name_ok(instance_id)):
            return INVALID_ARGUMENT
        try:
            d = self.gw.post("/v3/kv/deleterange", {"key": _b64(self._key(service, instance_id))})
        except Unreachable:
            return CONNECTION_ERROR
        with self._lock:
            self._mine.pop((service, instance_id), None)
            if int(d.get("deleted", 0)):
                self._written[service] = max(int(d["header"]["revision"]), self._written.get(service, 0))
        return OK if int(d.get("deleted", 0)) else NOT_FOUND

    def discover(self, service: str) -> Tuple[int, List[Endpoint]]:
        if not _name_ok(service):
            return INVALID_ARGUMENT, []
        try:
            d = self.gw.range_prefix(self._key(service))
        except Unreachable:
            return CONNECTION_ERROR, []
        return OK, self._decode_all(service, d)

    def _decode_all(self, service: str, d: dict) -> List[Endpoint]:
        out = []
        for kv in d.get("kvs", []):
            code, e = etcd_decode(self.prefix, _unb64(kv["key"]), _unb64(kv.get("value", "")))
            if code == OK and e.service == service:
                out.append(e)
        return out

    def _resync(self, h, w):
        """After a compaction removed the history a watch needs: the difference between the last
        list the watcher saw and the current one, as events (DISC-ETCD-7)."""
        d = self.gw.range_prefix(self._key(w["service"]))
        now = {e.instance_id: e for e in self._decode_all(w["service"], d)}
        with self._lock:
            old = w["known"] if R.MUTANT != "disc-etcd-compact-skips" else now
            for k, e in old.items():
                if k not in now:
                    self._queue.append((h, REMOVED, e))
            for k, e in now.items():
                if k not in old:
                    self._queue.append((h, ADDED, e))
                elif old[k] != e:
                    self._queue.append((h, UPDATED, e))
            w["known"] = now
            w["next"] = int(d["header"]["revision"]) + 1
            w["seen"] = max(w["seen"], w["next"] - 1)
            self._cv.notify_all()

    def watch(self, service: str, callback) -> Tuple[int, int]:
        if not _name_ok(service):
            return INVALID_ARGUMENT, 0
        try:  # the store's revision now: the watch reports what happens after it (no replay)
            d = self.gw.range_prefix(self._key(service))
            rev = int(d["header"]["revision"])
        except (Unreachable, KeyError, ValueError):
            return CONNECTION_ERROR, 0
        known = {e.instance_id: e for e in self._decode_all(service, d)}
        with self._lock:
            h = self._next_handle
            self._next_handle += 1
            w = {"service": service, "callback": callback, "active": True, "next": rev + 1, "seen": rev,
                 "conn": None, "since": rev, "known": known}
            self._watchers[h] = w
        threading.Thread(target=self._watch_stream, args=(h, w), daemon=True).start()
        return OK, h

    def unwatch(self, handle: int) -> int:
        with self._lock:
            w = self._watchers.pop(handle, None)
            if w is None:
                return NOT_FOUND
            w["active"] = False
            conn = w["conn"]
            # once unwatch returns the callback is not called again (DISC-WATCH-5): wait for a call
            # in progress, unless this is that call (a callback unwatching itself)
            while getattr(self, "_calling", None) == handle and threading.current_thread() is not self._dispatcher:
                self._cv.wait(1.0)
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return OK

    # -- watching (DISC-ETCD-6, DISC-ETCD-7: resumes from the next revision after a lost stream)
    def _watch_stream(self, h, w):
        key = self._key(w["service"])
        while w["active"] and not self._closed:
            at = self.gw.current
            conn = http.client.HTTPConnection(*self.gw.endpoints[at], timeout=None)
            w["conn"] = conn
            try:
                conn.request("POST", "/v3/watch", json.dumps({"create_request": {
                    "key": _b64(key), "range_end": _b64(prefix_end(key)), "start_revision": str(w["next"]),
                    "prev_kv": True}}), {"Content-Type": "application/json"})
                r = conn.getresponse()
                while w["active"]:
                    line = r.readline()
                    if not line:  # the member closed the stream (it stopped): another one next time
                        self.gw.failed(at)
                        break
                    res = json.loads(line).get("result", {})
                    if int(res.get("compact_revision") or 0):  # history gone: the difference, as events
                        self._resync(h, w)
                        break
                    for ev in res.get("events", []):
                        self._on_event(h, w, ev)
            except (OSError, http.client.HTTPException, ValueError):
                self.gw.failed(at)
            finally:
                conn.close()
            if w["active"] and not self._closed:
                time.sleep(0.2)  # etcd away: reconnect and resume at w["next"]

    def _on_event(self, h, w, ev):
        kv = ev.get("kv", {})
        rev = int(kv.get("mod_revision", 0))
        w["next"] = rev + 1
        if ev.get("type") == "DELETE":
            prev = ev.get("prev_kv")
            code, e = etcd_decode(self.prefix, _unb64(kv.get("key", "")), _unb64(prev.get("value", ""))) \
                if prev else (INVALID_ARGUMENT, None)
            kind = REMOVED
        else:
            code, e = etcd_decode(self.prefix, _unb64(kv.get("key", "")), _unb64(kv.get("value", "")))
            kind = ADDED if kv.get("create_revision") == kv.get("mod_revision") or \
                R.MUTANT == "disc-etcd-updated-as-added" else UPDATED
        with self._lock:
            if code == OK:
                self._queue.append((h, kind, e))
                if kind == REMOVED:
                    w["known"].pop(e.instance_id, None)
                else:
                    w["known"][e.instance_id] = e
            w["seen"] = rev
            self._cv.notify_all()

    def _dispatch(self):
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._cv.wait()
                if self._closed and not self._queue:
                    return
                h, kind, e = self._queue.popleft()
                w = self._watchers.get(h)
                self._calling = h
            if w is not None and w["active"]:
                try:
                    w["callback"](kind, e)
                except Exception:  # a callback's exception is not the registry's
                    pass
            with self._lock:
                self._calling = None
                self._cv.notify_all()

    def deliver(self, timeout: float = REQUEST_TIMEOUT):
        """Waits (bounded) until every watcher has been told about this registry's writes under its
        service and the delivery thread is idle: the end of a script."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while time.monotonic() < deadline:
                behind = [w for w in self._watchers.values()
                          if w["active"] and self._written.get(w["service"], 0) > max(w["seen"], w["since"])]
                if not behind and not self._queue and getattr(self, "_calling", None) is None:
                    return
                self._cv.wait(0.05)

    def close(self, abandon: bool = False):
        """Stops the threads; revokes the lease (its keys go) unless ``abandon``."""
        self._keepalive_stop.set()
        for h in list(self._watchers):
            self.unwatch(h)
        with self._lock:
            self._closed = True
            self._cv.notify_all()
        if not abandon and self._lease:
            try:
                self.gw.post("/v3/lease/revoke", {"ID": str(self._lease)})
            except Unreachable:
                pass


# ------------------------------------------------------------------ a private etcd for the suite

def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LocalEtcd:
    """etcd (Debian's etcd-server) on ``host`` (127.0.0.1, or another loopback address for a cluster
    member) with a temporary data dir; ``stop`` and ``start`` again keep the data (a restart)."""

    def __init__(self, host: str = "127.0.0.1", name: str = "fp"):
        self.binary = shutil.which("etcd")
        self.dir = tempfile.mkdtemp(prefix="fp-etcd-")
        self.host, self.name = host, name
        self.client, self.peer = free_port(host), free_port(host)
        self.proc: Optional[subprocess.Popen] = None
        self.initial_cluster: Optional[str] = None  # a cluster's members ("name=peer-url,..."), else this one alone

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.client}"

    @property
    def peer_url(self) -> str:
        return f"http://{self.host}:{self.peer}"

    def launch(self):
        """Starts the process (a restart keeps the data and the cluster); ``wait_ready`` waits for it."""
        c, p = f"http://{self.host}:{self.client}", self.peer_url
        self.log = open(os.path.join(self.dir, "etcd.log"), "ab")
        self.proc = subprocess.Popen(
            [self.binary, "--name", self.name, "--data-dir", os.path.join(self.dir, "data"), "--listen-client-urls",
             c, "--advertise-client-urls", c, "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
             "--initial-cluster", self.initial_cluster or f"{self.name}={p}", "--initial-cluster-token", "fp-test"],
            stdout=self.log, stderr=self.log, start_new_session=True)

    def wait_ready(self, timeout: float = 20.0):
        deadline = time.monotonic() + timeout
        gw = Gateway(self.endpoint, timeout=1.0)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"etcd exited with status {self.proc.returncode} (log: {self.dir}/etcd.log)")
            try:
                gw.post("/v3/kv/range", {"key": _b64(b"/")})
                return
            except Unreachable:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"etcd did not answer within {timeout:g} s (log: {self.dir}/etcd.log)")

    def start(self, timeout: float = 20.0):
        self.launch()
        self.wait_ready(timeout)

    def stop(self):
        p, self.proc = self.proc, None
        if p is None:
            return
        stop_group(p, 10, 5)
        self.log.close()

    def crash(self):
        """SIGKILL: etcd is gone at once (its sockets closed by the kernel), as in a crash; ``start``
        brings it back with its data."""
        p, self.proc = self.proc, None
        if p is None:
            return
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait(10)
        self.log.close()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def _log_tails(etcd, n: int = 600) -> str:
    """The end of each member's etcd.log (read before ``cleanup`` removes its directory)."""
    out = []
    for m in getattr(etcd, "members", [etcd]):
        try:
            with open(os.path.join(m.dir, "etcd.log"), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - n))
                out.append(f"{m.name}: ...{f.read().decode('utf-8', 'replace').strip()}")
        except OSError:
            pass
    return " | ".join(out) or "(no log)"


def started(make, attempts: int = 3):
    """``make()`` (a LocalEtcd, or a cluster of them) started and answering; the caller calls
    ``cleanup``. Skipped (a test result, not an error) where etcd is not installed. A member that exits at
    once is tried again with new ports, up to ``attempts`` times: the ports are chosen free and bound by etcd a
    moment later, when another process may have taken one (seen once in CI: a cluster member exited with
    status 1, its log gone with its directory; the error now carries the logs' end)."""
    from ...testee import Skipped
    if shutil.which("etcd") is None:
        raise Skipped("etcd is not installed (Debian: apt-get install etcd-server)")
    for attempt in range(1, attempts + 1):
        etcd = make()
        try:
            etcd.start()
            return etcd
        except RuntimeError as e:
            tails = _log_tails(etcd)
            etcd.cleanup()
            if attempt == attempts or "exited" not in str(e):
                raise RuntimeError(f"{e}, attempt {attempt} of {attempts}; the log ended: {tails}") from None
        except BaseException:
            etcd.cleanup()
            raise


def started_etcd() -> LocalEtcd:
    """A private etcd for one check (see ``started``)."""
    return started(LocalEtcd)
