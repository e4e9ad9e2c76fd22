"""The Commands adapter: ``frameproof`` subcommands a protocol adds to the command line."""
from __future__ import annotations


class Commands:
    def commands(self) -> list:
        """Extra ``frameproof`` subcommands this protocol provides (e.g. websocket's ``autobahn``):
        callables ``add(subparsers)``, each adding one argparse subcommand whose ``fn(args)``
        returns the exit status. Default: none."""
        return []
