"""pytest set-up of the end-to-end tests of fp-server and fp-load (test_*.py here; test.sh runs them
with the repo's venv, 127.0.0.1 only):

    ../../.venv/bin/python -m pytest tests/ -q -p no:cacheprovider [--binaries release] [-k NAME]

Every test takes the `fp` fixture (programs.Programs: the two programs of one binary directory)
and runs once per directory: "release" (build/, built by build.sh) and "asan" (build-asan/, the
sanitizer build of test.sh) when it exists; --binaries NAME (repeatable) picks them instead.
Frames are built and read with the suite's reference codecs (wire.py); the faulty servers fp-load
must catch are in faulty_servers.py."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from programs import Programs

CPP = Path(__file__).resolve().parents[1]
BUILDS = {"release": CPP / "build", "asan": CPP / "build-asan"}
PROGRAMS = ("fp-server", "fp-load")


def pytest_addoption(parser):
    parser.addoption("--binaries", action="append", default=[], choices=sorted(BUILDS),
                     help="the binary directory to test: release (build/) or asan (build-asan/); repeatable. "
                          "Default: release, and asan when build-asan/ has fp-server")


def pytest_generate_tests(metafunc):
    if "fp" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("binaries") or [
            name for name, d in BUILDS.items() if name == "release" or (d / "fp-server").exists()]
        metafunc.parametrize("fp", list(dict.fromkeys(chosen)), indirect=True, scope="session")


@pytest.fixture(scope="session")
def fp(request) -> Programs:
    d = BUILDS[request.param]
    missing = [p for p in PROGRAMS if not os.access(d / p, os.X_OK)]
    if missing:
        pytest.fail("%s missing in %s (build.sh builds build/, test.sh build-asan/)" % (", ".join(missing), d))
    return Programs(request.param, d)
