"""What a network case runs against and what it is: the server under test, the case entry."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, List, Optional

from ..oracle import Codec


class SkipCase(Exception):
    pass


READ_TIMEOUT = float(os.environ.get("FRAMEPROOF_NET_TIMEOUT", "5"))


@dataclass
class NetTarget:
    host: str
    port: int
    codec: Codec
    pid: Optional[int] = None  # server process, for RSS checks
    max_payload: int = 0  # largest payload the server accepts (0 = the spec default)
    server_cmd: Optional[str] = None  # the command that started it (--server-cmd), for cases that start their own
    cwd: Optional[str] = None  # the directory to run server_cmd in
    #: the server is a program of the contract (reference-impls/README.md; frameproof net --contract): its
    #: codec JSON is checked too (HAR-CODEC-1)
    contract: bool = False

    @property
    def limit(self):
        return min(self.max_payload or self.codec.DEFAULT_MAX, self.codec.capacity)

    @property
    def spec(self):
        return self.codec.spec


@dataclass
class NetCase:
    name: str
    requirements: List[str]
    description: str
    run: Callable  # run(target)
    #: a hostile peer (bad, abusive or abandoned input) with a healthy connection alongside and the
    #: server's RSS watched; conformance/tests/test_hostile_cases.py counts them per protocol
    hostile: bool = False
    #: run only against a server whose codec this says yes to (``when(codec)``), e.g. websocket's
    #: permessage-deflate cases under a codec with the extension on; None: always
    when: Optional[Callable] = None

    def applies(self, codec) -> bool:
        return self.when is None or bool(self.when(codec))
