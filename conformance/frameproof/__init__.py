"""frameproof: conformance suite for the frameproof wire protocols."""
__version__ = "0.1.0"
