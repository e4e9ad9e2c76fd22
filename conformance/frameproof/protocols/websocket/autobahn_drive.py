"""Running an Autobahn driver: in fuzzingclient mode against a websocket server, or in fuzzingserver
mode with the client under test connecting to it; each run writes its reports into a directory."""
from __future__ import annotations

import json
import shlex
import socket
import subprocess
import time
from pathlib import Path
from typing import List, Optional

from ..process_group import stop_group
from .autobahn_install import StartError, ToolError


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _wait_port(host: str, port: int, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ToolError(f"the driver exited (status {proc.returncode}) before listening on {host}:{port}")
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise ToolError(f"the driver did not listen on {host}:{port} within {timeout:g} s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        stop_group(proc, 5)


def _run(cmd: List[str], log_file: Path, timeout: float, cwd: Path) -> int:
    with open(log_file, "wb") as lf:
        p = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=str(cwd), start_new_session=True)
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            _stop(p)
            raise ToolError(f"{Path(cmd[0]).name} did not finish within {timeout:g} s (log: {log_file})")


def _fmt_addr(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _driver_cmd(driver: str, exe: Path, mode: str, outdir: Path, cases: List[str], exclude: List[str],
                spec: dict, addr: str) -> List[str]:
    """The command line of ``driver`` in ``mode`` (fuzzingclient or fuzzingserver) with its reports in
    ``outdir``: wstest reads its spec file ``outdir/<mode>.json``, written here (``spec``, the mode's
    own keys, and the report directory and cases); kosoku takes the cases as -i/-x globs and ``addr``
    (the server's address, or the one to listen on)."""
    if driver == "wstest":
        spec = dict(spec, outdir=str(outdir), cases=cases)
        spec.update({"exclude-cases": exclude, "exclude-agent-cases": {}})
        sf = outdir / f"{mode}.json"
        sf.write_text(json.dumps(spec, indent=1))
        # fuzzingserver also serves a web page, on port 8080 unless told otherwise: a second run on the
        # machine then dies at start (seen when CI and the main job ran together); no web page
        return [str(exe), "-m", mode, "-s", str(sf)] + (["-u", "0"] if mode == "fuzzingserver" else [])
    cmd = [str(exe), "-m", mode, "-o", str(outdir)]
    for c in cases:
        cmd += ["-i", c]
    for c in exclude:
        cmd += ["-x", c]
    return cmd + [addr]


def drive_server(driver: str, exe: Path, host: str, port: int, agent: str, cases: List[str], exclude: List[str],
                 outdir: Path, timeout: float) -> Path:
    """Runs ``driver`` in fuzzingclient mode against ws://host:port; returns its report directory."""
    outdir.mkdir(parents=True, exist_ok=True)
    spec = {"servers": [{"agent": agent, "url": f"ws://{_fmt_addr(host, port)}"}]}
    cmd = _driver_cmd(driver, exe, "fuzzingclient", outdir, cases, exclude, spec, _fmt_addr(host, port))
    _run(cmd, outdir / f"{driver}.log", timeout, outdir)  # kosoku exits 1 on failures: the caller reads the index
    return outdir


def drive_client(driver: str, exe: Path, client_cmd: str, agent: str, cases: List[str], exclude: List[str],
                 outdir: Path, timeout: float, cwd: Optional[str]) -> (Path, int, str):
    """Runs ``driver`` in fuzzingserver mode and the client under test against it; returns the
    report directory, the client's exit status and the tail of its output."""
    outdir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    cmd = _driver_cmd(driver, exe, "fuzzingserver", outdir, cases, exclude, {"url": f"ws://127.0.0.1:{port}"},
                      f"127.0.0.1:{port}")
    lf = open(outdir / f"{driver}.log", "wb")
    srv = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=str(outdir), start_new_session=True)
    try:
        _wait_port("127.0.0.1", port, srv, 30)
        ccmd = shlex.split(client_cmd) + ["--connect", f"127.0.0.1:{port}", "--agent", agent]
        with open(outdir / "client.log", "wb") as cl:
            try:
                c = subprocess.Popen(ccmd, stdout=cl, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
            except OSError as e:
                raise StartError(f"the client could not start: {e}")
            try:
                rc = c.wait(timeout)
            except subprocess.TimeoutExpired:
                _stop(c)
                rc = None
        tail = (outdir / "client.log").read_bytes()[-2000:].decode("utf-8", "replace")
        if rc is None:
            tail += f"\n(the client did not finish within {timeout:g} s and was stopped)"
        # the reports are written on the client's /updateReports; give the driver a moment to finish writing
        deadline = time.monotonic() + 3
        while not (outdir / "index.json").exists() and time.monotonic() < deadline and srv.poll() is None:
            time.sleep(0.2)
        return outdir, rc, tail
    finally:
        _stop(srv)
        lf.close()
