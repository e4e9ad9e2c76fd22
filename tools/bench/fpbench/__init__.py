"""frameproof benchmark runner (issue 6): see tools/bench/README.md."""
