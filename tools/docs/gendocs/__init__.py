"""The page families of the spec docs site, one module each (tools/docs/gen_docs.py runs them)."""
