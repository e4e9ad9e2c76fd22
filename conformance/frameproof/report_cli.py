"""`frameproof report INPUT... [--out DIR]`: HTML pages and SVG badges from JSON reports
(frameproof.report_html)."""
from __future__ import annotations

import argparse
import sys

from . import report

HELP = """Inputs: report files (`--json` of run, net, net --client, net --stress, autobahn, fuzz) or directories
searched for them, e.g. the --out directory of `frameproof matrix`, which keeps every cell's report in cells/.
Writes index.html, one page an implementation (suites, every requirement reached, each failure with its
message, each expected failure with its reason) and one SVG badge an implementation and protocol.

exit status:
  0  pages written
  2  usage error
  5  no report among the inputs
"""


def add_parsers(sub):
    r = sub.add_parser("report", help="HTML pages and SVG badges from JSON reports", epilog=HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("inputs", nargs="+", metavar="INPUT", help="report file or directory (searched for *.json)")
    r.add_argument("--out", default="reports/html", help="output directory (default reports/html)")
    r.set_defaults(fn=cmd_report)


def cmd_report(args) -> int:
    from .report_html import write_site
    pages, got = write_site(args.inputs, args.out)
    if got.ignored:
        print(f"report: {len(got.ignored)} JSON file(s) are not frameproof reports and were left out "
              f"(first: {got.ignored[0]})", file=sys.stderr)
    if not got.suites:
        print("report: no frameproof report among the inputs", file=sys.stderr)
        return report.EXIT_NOTHING_RAN
    for p in pages:
        flag = "✓" if not p["unexpected"] else f"✗ {p['unexpected']} unexpected"
        print(f"{args.out}/{p['file']}: {p['impl']}, {p['suites']} suite(s), {flag}; badges: "
              + ", ".join(b["file"] for b in p["badges"]))
    print(f"{args.out}/index.html: {len(pages)} implementation(s) from {len(got.suites)} report(s)")
    return report.EXIT_OK
