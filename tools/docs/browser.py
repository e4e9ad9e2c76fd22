"""A tiny headless-Chromium driver over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: NUL-separated JSON on file descriptors 3 and 4), so the docs
test needs no websocket library, Node or Playwright: navigate, evaluate JavaScript,
take screenshots.

    with Browser() as b:
        b.goto("http://127.0.0.1:8000/standard/#STD-LIM-1")
        b.eval("document.getElementById('STD-LIM-1') !== null")
        b.screenshot("shot.png")
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


def find_chromium():
    # Debian's /usr/bin/chromium is a shell launcher that loses the pipe descriptors: use the binary
    for path in ("/usr/lib/chromium/chromium", "/usr/lib/chromium-browser/chromium-browser"):
        if os.access(path, os.X_OK):
            return path
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class Browser:
    def __init__(self, width=1200, height=800, timeout=30.0, binary=None):
        self.binary = binary or find_chromium()
        if not self.binary:
            raise RuntimeError("chromium not found")
        self.width, self.height, self.timeout = width, height, timeout
        self._id = 0
        self._buf = b""
        self._events = []

    # -- process and transport
    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="fp-chromium-")
        to_child_r, self._w = os.pipe()      # we write commands -> child's fd 3
        self._r, from_child_w = os.pipe()    # child's fd 4 -> we read
        # move the child's ends above 4 so that the shell's redirections cannot clobber them
        hi = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child_r, from_child_w)]
        os.close(to_child_r)
        os.close(from_child_w)
        to_child_r, from_child_w = hi
        args = [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-dev-shm-usage",
                "--hide-scrollbars", f"--user-data-dir={self.profile}", f"--window-size={self.width},{self.height}",
                "--remote-debugging-pipe", "about:blank"]

        # the DevTools pipe must be file descriptors 3 (commands) and 4 (answers) in chromium
        shell = f'exec "$0" "$@" 3<&{to_child_r} 4>&{from_child_w} {to_child_r}<&- {from_child_w}>&-'
        self.proc = subprocess.Popen(["bash", "-c", shell] + args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     pass_fds=(to_child_r, from_child_w))
        os.close(to_child_r)
        os.close(from_child_w)
        tid = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": self.height,
                                                         "deviceScaleFactor": 1, "mobile": False}, session=True)
        return self

    def __exit__(self, *exc):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=False, timeout=None):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self._events.append(m)

    def wait_event(self, method, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for i, m in enumerate(self._events):
                if m["method"] == method:
                    return self._events.pop(i)
            self._events.append(self._read_message(deadline))

    # -- page helpers
    def goto(self, url, settle=0.3):
        """Loads `url` and waits for its load event (then `settle` seconds for scripts)."""
        self._events = [e for e in self._events if e["method"] != "Page.loadEventFired"]
        res = self.call("Page.navigate", {"url": url}, session=True)
        if res.get("errorText"):
            raise RuntimeError(f"{url}: {res['errorText']}")
        if "#" not in url or res.get("loaderId"):
            self.wait_event("Page.loadEventFired")
        time.sleep(settle)

    def eval(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True}, session=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"JavaScript error: {r['exceptionDetails'].get('text')} in {expression!r}")
        return r["result"].get("value")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path
