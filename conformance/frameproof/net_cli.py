"""`frameproof net` (network conformance) is added by the network suite."""


def add_parsers(sub):
    pass
