"""The argument parser of the contract's programs (the Python reference server and load client):
a usage error prints one line starting ``usage error:``, then the usage, to stderr, and exits with
status 2 (reference-impls/README.md, "Usage errors"; spec/harness.md HAR-SRV-2)."""
from __future__ import annotations

import argparse
import sys


class ContractParser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write(f"usage error: {self.prog}: {message}\n")
        self.print_usage(sys.stderr)
        sys.exit(2)
