"""A small, independent, correct Python testee, and its mutants (each breaks one
requirement on purpose) that prove the suite bites. Run: python -m frameproof.pytestee [--mutant NAME]."""
