"""Small echo servers with faults, written here for fp-load to be tested against (every reply must
be verified): they decode the requests and encode the replies with the suite's reference codecs
(wire.py), default profiles, and then corrupt, reorder, drop, duplicate or hold them."""
from __future__ import annotations

import socket
import threading
import time

from wire import encode


class Echoer:
    """The echo replies to the requests in a byte stream (the protocol's reference decoder, echo rule
    and encoder): feed(bytes) -> the reply bytes of each request it completes, in order."""

    def __init__(self, proto):
        self.proto = proto
        self.codec = proto.codec()
        self.dec = proto.reference.decoder(self.codec)

    def feed(self, data: bytes):
        replies = (self.proto.reference.echo_reply(f) for f in self.dec.feed(data))
        return [encode(self.proto, r, self.codec) for r in replies if r is not None]


class Listener:
    """A listener on 127.0.0.1 whose accept thread hands every connection to on_connection(c)."""

    def __init__(self, rcvbuf=None):
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if rcvbuf:
            self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.stop = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        self.ls.settimeout(0.1)
        while not self.stop:
            try:
                c, _ = self.ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.on_connection(c)

    def on_connection(self, c):
        raise NotImplementedError

    def close(self):
        self.stop = True
        self.ls.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FakeServer(Listener):
    """Echo server whose reply stream passes through `mangle(conn_index, reply_index, reply bytes)`,
    which returns the bytes to send instead (b"" drops it); `reorder(conn_index, reply_index)` true:
    that reply is sent after the next one. Counts requests per connection (per_conn)."""

    def __init__(self, proto, mangle=None, reorder=None):
        self.proto = proto
        self.mangle = mangle or (lambda c, i, f: f)
        self.reorder = reorder
        self.per_conn = []
        self.lock = threading.Lock()
        super().__init__()

    def on_connection(self, c):
        with self.lock:
            idx = len(self.per_conn)
            self.per_conn.append(0)
        threading.Thread(target=self.serve, args=(c, idx), daemon=True).start()

    def serve(self, c, idx):
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        echo = Echoer(self.proto)
        held = None
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                for reply in echo.feed(d):
                    with self.lock:
                        i = self.per_conn[idx]
                        self.per_conn[idx] += 1
                    out = self.mangle(idx, i, reply)
                    if self.reorder and self.reorder(idx, i):
                        held = out  # send it after the next one
                        continue
                    c.sendall(out)
                    if held is not None:
                        c.sendall(held)
                        held = None
        except OSError:
            pass
        finally:
            c.close()


def flip_byte(at_conn, at_reply, pos=-1):
    """A mangle that flips bit 0 of byte `pos` of one reply."""
    def m(c, i, f):
        if c == at_conn and i == at_reply:
            b = bytearray(f)
            b[pos] ^= 0x01
            return bytes(b)
        return f
    return m


class HoldingServer(Listener):
    """Echo server that holds replies and sends them all every `hold` seconds: records, per
    connection, the most requests it held at once (= the client's requests in flight), and makes
    every reply take about `hold` seconds."""

    def __init__(self, proto, hold):
        self.proto = proto
        self.hold = hold
        self.max_held = []
        super().__init__()

    def on_connection(self, c):
        self.max_held.append(0)
        threading.Thread(target=self.serve, args=(c, len(self.max_held) - 1), daemon=True).start()

    def serve(self, c, idx):
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        echo = Echoer(self.proto)
        held = []
        next_flush = time.time() + self.hold
        try:
            while not self.stop:
                c.settimeout(max(0.001, next_flush - time.time()))
                try:
                    d = c.recv(65536)
                    if not d:
                        break
                    held += echo.feed(d)
                except socket.timeout:
                    pass
                self.max_held[idx] = max(self.max_held[idx], len(held))
                if time.time() >= next_flush:
                    if held:
                        c.sendall(b"".join(held))
                        held = []
                    next_flush = time.time() + self.hold
        except OSError:
            pass
        finally:
            c.close()


class DeafServer(Listener):
    """Accepts connections and never reads from them nor writes to them."""

    def __init__(self):
        self.conns = []
        super().__init__(rcvbuf=4096)

    def on_connection(self, c):
        self.conns.append(c)

    def close(self):
        super().close()
        for c in self.conns:
            c.close()


class BatchWatcher:
    """A one-connection length-field echo server that answers the first request of each `batch`,
    waits 0.3 s and notes in `early_flags` whether the client wrote meanwhile (or had already written
    more than the batch), then answers the rest of the batch; 20 batches at most."""

    def __init__(self, proto, batch, early_flags):
        self.proto = proto
        self.batch = batch
        self.early_flags = early_flags
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(1)
        self.ls.settimeout(20)
        self.port = self.ls.getsockname()[1]
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        try:
            c, _ = self.ls.accept()
        except OSError:
            return
        c.settimeout(10)
        echo = Echoer(self.proto)
        batch = self.batch
        pending = []
        try:
            for _ in range(20):
                while len(pending) < batch:
                    data = c.recv(65536)
                    if not data:
                        return
                    pending += echo.feed(data)
                c.sendall(pending[0])
                c.settimeout(0.3)
                try:
                    early = c.recv(65536)
                except socket.timeout:
                    early = b""
                c.settimeout(10)
                self.early_flags.append(bool(early) or len(pending) > batch)
                c.sendall(b"".join(pending[1:batch]))
                pending = pending[batch:] + echo.feed(early)
        except OSError:
            pass
        finally:
            c.close()
            self.ls.close()
