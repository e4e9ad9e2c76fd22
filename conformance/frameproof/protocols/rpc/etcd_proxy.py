"""A TCP relay the runner puts between a testee's registry and etcd, so that it can cut the
registry off while etcd runs on (spec/discovery.md DISC-ETCD-7: a watch stream lost while etcd's
history moves on and is compacted). 127.0.0.1 only; a thread per direction per connection, which is
plenty for one registry's few connections."""
from __future__ import annotations

import socket
import threading
import time
from typing import List


class CuttableProxy:
    """Listens on 127.0.0.1:<free port> and relays every connection to ``upstream`` ("host:port").
    ``cut()`` closes every relayed connection and, until ``restore()``, closes new ones at once (the
    registry sees its connections dropped and etcd unreachable)."""

    def __init__(self, upstream: str):
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.lock = threading.Lock()
        self.open: List[socket.socket] = []
        self.cutting = False
        self.closed = False
        self.accepted = 0
        self.accepted_at: List[float] = []  # time.monotonic() of each accept
        self.pairs = {}  # id -> pipes still running (2, 1): the connections relayed now
        threading.Thread(target=self._accept, daemon=True, name="fp-etcd-proxy").start()

    def _accept(self):
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return  # closed
            with self.lock:
                self.accepted += 1
                self.accepted_at.append(time.monotonic())
                if self.cutting or self.closed:
                    c.close()
                    continue
            try:
                u = socket.create_connection(self.upstream, timeout=2)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.open += [c, u]
                self.pairs[id(c)] = 2
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b, id(c)), daemon=True).start()

    def live(self) -> int:
        """Connections relayed now."""
        with self.lock:
            return len(self.pairs)

    def _pipe(self, src: socket.socket, dst: socket.socket, pair: int):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):  # one side gone: the connection is gone
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self.lock:
            left = self.pairs.get(pair, 1) - 1
            if left:
                self.pairs[pair] = left
            else:
                self.pairs.pop(pair, None)
                for x in (src, dst):
                    if x in self.open:
                        self.open.remove(x)
                    x.close()

    def cut(self):
        with self.lock:
            self.cutting = True
            conns, self.open = self.open, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def restore(self):
        with self.lock:
            self.cutting = False

    def close(self):
        with self.lock:
            self.closed = True
        self.cut()
        try:  # a close alone leaves the port listening while the accept thread sits in accept()
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
