import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
PYTESTEE = f"{PY} -m frameproof.pytestee"


def run_frameproof(args, tmp_path, timeout=600):
    """Runs the CLI as a user would; returns (exit code, stdout, JSON report or None)."""
    report = tmp_path / f"report-{abs(hash(tuple(args)))}.json"
    cmd = [PY, "-m", "frameproof.cli"] + args + (["--json", str(report)] if args and args[0] in ("run", "net") else [])
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    doc = json.loads(report.read_text()) if report.exists() else None
    if doc is not None:  # every report the suite's own tests produce follows its published schema
        from frameproof.report import schema_problems
        assert schema_problems(doc) == [], f"{' '.join(args[:1])} report off its schema: {schema_problems(doc)[:5]}"
    return p.returncode, p.stdout + p.stderr, doc


@pytest.fixture
def frameproof(tmp_path):
    def _run(*args, timeout=600):
        return run_frameproof(list(args), tmp_path, timeout)
    return _run
