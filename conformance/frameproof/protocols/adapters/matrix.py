"""The MatrixSuites adapter: a protocol's own rows in the main job (``frameproof matrix``)."""
from __future__ import annotations

from typing import List, Tuple


class MatrixSuites:
    def matrix_suites(self, impl: dict, cmd, profile: str, scale: str = "full") -> List[Tuple[str, str, List[str]]]:
        """Suites of this protocol the matrix runs beside the codec, network and load-client ones:
        (group "codec" | "net" | "client", row label, frameproof CLI arguments without --json). ``impl``
        is the implementation's impl.json (with "dir"), ``cmd(key)`` the shell command of its program
        ``key`` (or None when it has none), ``profile`` the Hypothesis profile ("smoke" in CI), ``scale``
        "full" (the main job) or "small" (CI: every path at small bounds). Default none."""
        return []
