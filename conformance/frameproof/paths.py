"""Where the repository's spec, schemas and vectors live."""
import os
from pathlib import Path

ROOT = Path(os.environ.get("FRAMEPROOF_ROOT") or Path(__file__).resolve().parents[2])
SPEC_DIR = ROOT / "spec"
VECTOR_DIR = ROOT / "conformance" / "vectors"
IMPL_DIR = ROOT / "reference-impls"

# Specs that belong to no protocol (the protocols' own specs come from frameproof.protocols).
HARNESS_SPEC = SPEC_DIR / "harness.md"
