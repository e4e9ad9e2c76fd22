"""Checks the skipped tests of a run (tools/test.sh) against the allow-list (.ci/allowed-skips).

The allow-list has one entry a line: a glob matched against "<step>: <test>", then " # " and the
reason the test cannot run here (an entry without a reason is refused). A skip that no entry names
counts as a failure. Prints every skip with its verdict on stderr and "ALLOWED UNLISTED" on stdout.
Usage: python tools/check_skips.py ALLOW_LIST SKIPS_FILE
"""
import fnmatch
import sys


def read_allow_list(path):
    entries = []
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        glob, sep, reason = line.partition(" # ")
        if not sep or not reason.strip():
            raise SystemExit(f"{path}:{n}: an entry names its reason after ' # ': {line!r}")
        entries.append((glob.strip(), reason.strip()))
    return entries


def main(allow_path, skips_path):
    entries = read_allow_list(allow_path)
    allowed = unlisted = 0
    for line in open(skips_path, encoding="utf-8"):
        if not line.strip():
            continue
        test, _, why = line.rstrip("\n").partition("\t")
        hit = next((e for e in entries if fnmatch.fnmatchcase(test, e[0])), None)
        if hit:
            allowed += 1
            print(f"  allowed skip: {test} ({hit[1]})", file=sys.stderr)
        else:
            unlisted += 1
            print(f"  UNLISTED SKIP (counts as failed): {test}: {why}", file=sys.stderr)
    print(allowed, unlisted)


if __name__ == "__main__":
    main(*sys.argv[1:3])
