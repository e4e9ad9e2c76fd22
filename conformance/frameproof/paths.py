"""Where the repository's spec, schemas and vectors live."""
import os
from pathlib import Path

ROOT = Path(os.environ.get("FRAMEPROOF_ROOT") or Path(__file__).resolve().parents[2])
SPEC_DIR = ROOT / "spec"
VECTOR_DIR = ROOT / "conformance" / "vectors"
IMPL_DIR = ROOT / "reference-impls"

PROTOCOLS = ("standard", "length-field")
SPEC_FILES = {"standard": SPEC_DIR / "standard.md", "length-field": SPEC_DIR / "length-field.md",
              "harness": SPEC_DIR / "harness.md"}
