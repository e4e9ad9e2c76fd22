"""Where the spec, schemas and vectors live: the repository when run from a checkout, or the
copy inside the package (``frameproof/_data``, made by tools/build_wheel.sh) when installed from
a wheel. ``FRAMEPROOF_ROOT`` overrides both."""
import os
from pathlib import Path

_PKG = Path(__file__).resolve().parent
_DATA = _PKG / "_data"

if os.environ.get("FRAMEPROOF_ROOT"):
    ROOT = Path(os.environ["FRAMEPROOF_ROOT"])
elif _DATA.is_dir():
    ROOT = _DATA  # an installed wheel: _data/spec, _data/schemas, _data/conformance/vectors
else:
    ROOT = _PKG.parents[1]  # the repository checkout
SPEC_DIR = ROOT / "spec"
VECTOR_DIR = ROOT / "conformance" / "vectors"
IMPL_DIR = ROOT / "reference-impls"

# Specs that belong to no protocol (the protocols' own specs come from frameproof.protocols).
HARNESS_SPEC = SPEC_DIR / "harness.md"
