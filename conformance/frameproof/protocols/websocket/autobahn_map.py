"""Which WS-* requirements (spec/websocket.md) and, for 12.* and 13.*, WSD-* requirements
(spec/websocket-deflate.md) each Autobahn testsuite case checks: one table,
from Autobahn's case groups (categories 1-7, 9, 10, 12, 13 of autobahntestsuite 25.10.1) to
requirement IDs. The first row whose glob matches a case ID wins, so specific rows come first.

The IDs name the *receiving* endpoint's requirement as the server under test sees it; when
Autobahn tests a client (``fuzzingserver``) the roles swap, and ``requirements(case, "client")``
turns the server's masking rule into the client's (WS-MASK-1 -> WS-MASK-2).
conformance/tests/test_autobahn.py checks that every ID here exists in the spec and that every
case of the default selection has a row.
"""
from __future__ import annotations

import fnmatch
from typing import List, Tuple

#: (case glob, requirement IDs, what the group checks)
TABLE: List[Tuple[str, Tuple[str, ...], str]] = [
    # 1: framing, every length form
    ("1.1.8", ("WS-LEN-1", "WS-LEN-2", "WS-MASK-3", "WS-UTF8-1", "WS-ECHO-1", "WS-STR-1"),
     "text message of 65536 bytes written in chops of 997 bytes"),
    ("1.1.*", ("WS-LEN-1", "WS-LEN-2", "WS-MASK-1", "WS-MASK-3", "WS-UTF8-1", "WS-ECHO-1"),
     "text messages of 0, 125, 126, 127, 128, 65535, 65536 bytes (7-, 16- and 64-bit lengths)"),
    ("1.2.8", ("WS-LEN-1", "WS-LEN-2", "WS-MASK-3", "WS-ECHO-1", "WS-STR-1"),
     "binary message of 65536 bytes written in chops of 997 bytes"),
    ("1.2.*", ("WS-LEN-1", "WS-LEN-2", "WS-MASK-1", "WS-MASK-3", "WS-ECHO-1"),
     "binary messages of every length form"),
    # 2: ping / pong
    ("2.5", ("WS-CTL-2", "WS-ERR-1"), "ping with a 126-byte payload: fail the connection (1002)"),
    ("2.6", ("WS-PING-1", "WS-STR-1"), "ping of 125 bytes written byte by byte"),
    ("2.11", ("WS-PING-1", "WS-STR-1"), "10 pings written byte by byte"),
    ("2.7", ("WS-PING-2",), "unsolicited pong without payload: not answered"),
    ("2.8", ("WS-PING-2",), "unsolicited pong with payload: not answered"),
    ("2.9", ("WS-PING-1", "WS-PING-2"), "unsolicited pong, then a ping: only the ping answered"),
    ("2.*", ("WS-PING-1", "WS-CTL-2"), "ping answered by a pong with the same payload (0-125 bytes)"),
    # 3: reserved bits
    ("3.*", ("WS-HDR-2", "WS-ERR-1", "WS-STR-4"), "RSV bits set without an extension: fail the connection (1002)"),
    # 4: reserved opcodes
    ("4.*", ("WS-HDR-3", "WS-ERR-1", "WS-STR-4"), "reserved data and control opcodes: fail the connection (1002)"),
    # 5: fragmentation
    ("5.1", ("WS-CTL-1", "WS-ERR-1"), "ping fragmented into 2 frames: fail the connection"),
    ("5.2", ("WS-CTL-1", "WS-ERR-1"), "pong fragmented into 2 frames: fail the connection"),
    ("5.3", ("WS-FRAG-1", "WS-ECHO-1"), "text message in 2 fragments"),
    ("5.4", ("WS-FRAG-1", "WS-ECHO-1", "WS-STR-1"), "text message in 2 fragments, written frame by frame"),
    ("5.5", ("WS-FRAG-1", "WS-ECHO-1", "WS-STR-1"), "text message in 2 fragments, written byte by byte"),
    ("5.6", ("WS-CTL-3", "WS-PING-1", "WS-FRAG-1"), "ping between the fragments of a text message"),
    ("5.7", ("WS-CTL-3", "WS-PING-1", "WS-FRAG-1", "WS-STR-1"), "ping between fragments, frame by frame"),
    ("5.8", ("WS-CTL-3", "WS-PING-1", "WS-FRAG-1", "WS-STR-1"), "ping between fragments, byte by byte"),
    ("5.9", ("WS-FRAG-2", "WS-ERR-1"), "continuation (FIN) with no message in progress"),
    ("5.10", ("WS-FRAG-2", "WS-ERR-1", "WS-STR-1"), "continuation (FIN) with no message, frame by frame"),
    ("5.11", ("WS-FRAG-2", "WS-ERR-1", "WS-STR-1"), "continuation (FIN) with no message, byte by byte"),
    ("5.12", ("WS-FRAG-2", "WS-ERR-1"), "continuation (no FIN) with no message in progress"),
    ("5.13", ("WS-FRAG-2", "WS-ERR-1", "WS-STR-1"), "continuation (no FIN) with no message, frame by frame"),
    ("5.14", ("WS-FRAG-2", "WS-ERR-1", "WS-STR-1"), "continuation (no FIN) with no message, byte by byte"),
    ("5.15", ("WS-FRAG-1", "WS-FRAG-2", "WS-ERR-1"), "a complete fragmented message, then an orphan continuation"),
    ("5.16", ("WS-FRAG-2", "WS-ERR-1"), "orphan continuation (no FIN) before a fragmented message"),
    ("5.17", ("WS-FRAG-2", "WS-ERR-1"), "orphan continuation (FIN) before a fragmented message"),
    ("5.18", ("WS-FRAG-3", "WS-ERR-1"), "two text frames of one message (second not a continuation)"),
    ("5.19", ("WS-CTL-3", "WS-PING-1", "WS-FRAG-1"), "pings between the 5 fragments of a text message, with pauses"),
    ("5.20", ("WS-CTL-3", "WS-PING-1", "WS-FRAG-1", "WS-STR-1"), "as 5.19, every frame written on its own"),
    # 6: UTF-8
    ("6.1.*", ("WS-FRAG-1", "WS-UTF8-1", "WS-ECHO-1"), "empty text messages and empty fragments"),
    ("6.2.*", ("WS-UTF8-1", "WS-UTF8-2", "WS-FRAG-1"), "valid UTF-8 split inside code points across fragments"),
    ("6.3.*", ("WS-UTF8-1", "WS-UTF8-2", "WS-ERR-1"), "invalid UTF-8 (a surrogate), whole and in 1-byte fragments"),
    ("6.4.*", ("WS-UTF8-2", "WS-ERR-1"), "fail fast: the error is reported before the rest of the message arrives"),
    ("6.*", ("WS-UTF8-1", "WS-ERR-1"), "valid and invalid UTF-8 in one frame (Markus Kuhn's test file): 1007 on invalid"),
    # 7: close handling
    ("7.1.1", ("WS-ECHO-1", "WS-CLOSE-5"), "a message, then a close: echo, then the close handshake"),
    ("7.1.2", ("WS-CLOSE-4", "WS-CLOSE-5"), "two close frames: the second is not read"),
    ("7.1.3", ("WS-CLOSE-4", "WS-CLOSE-5"), "a ping after the close: not answered"),
    ("7.1.4", ("WS-CLOSE-4", "WS-CLOSE-5"), "a text message after the close: not echoed"),
    ("7.1.5", ("WS-CLOSE-4", "WS-CLOSE-5"), "first fragment, close, last fragment: no message"),
    ("7.1.6", ("WS-CLOSE-4", "WS-CLOSE-5"), "256 KiB message, close, ping (informational)"),
    ("7.3.2", ("WS-CLOSE-1", "WS-ERR-1"), "close payload of 1 byte: fail the connection (1002)"),
    ("7.3.6", ("WS-CTL-2", "WS-ERR-1"), "close payload of 126 bytes: fail the connection (1002)"),
    ("7.3.*", ("WS-CLOSE-5",), "close payloads of 0, 2 and up to 125 bytes: the close handshake"),
    ("7.5.1", ("WS-CLOSE-3", "WS-ERR-1"), "close reason that is not UTF-8: fail the connection (1007)"),
    ("7.7.*", ("WS-CLOSE-2", "WS-CLOSE-5"), "valid close codes: echoed in the close handshake"),
    ("7.9.*", ("WS-CLOSE-2", "WS-ERR-1"), "invalid close codes (0, 999, 1004-1006, 1016, 1100, 2000, 2999): 1002"),
    ("7.13.*", ("WS-CLOSE-2",), "close codes 5000 and 65535 (informational)"),
    # 9: limits and performance
    ("9.1.*", ("WS-LEN-1", "WS-LIM-1", "WS-UTF8-1", "WS-ECHO-1"), "text messages of 64 KiB to 16 MiB in one frame"),
    ("9.2.*", ("WS-LEN-1", "WS-LIM-1", "WS-ECHO-1"), "binary messages of 64 KiB to 16 MiB in one frame"),
    ("9.3.*", ("WS-FRAG-1", "WS-LIM-2", "WS-UTF8-2", "WS-ECHO-1"), "4 MiB text message in fragments of 64 B to 4 MiB"),
    ("9.4.*", ("WS-FRAG-1", "WS-LIM-2", "WS-ECHO-1"), "4 MiB binary message in fragments of 64 B to 4 MiB"),
    ("9.5.*", ("WS-STR-1", "WS-UTF8-1", "WS-ECHO-1"), "1 MiB text message written in chops of 64 B to 2 KiB"),
    ("9.6.*", ("WS-STR-1", "WS-ECHO-1"), "1 MiB binary message written in chops of 64 B to 2 KiB"),
    ("9.7.*", ("WS-STR-2", "WS-ECHO-1"), "1000 text messages of 0 B to 4 KiB, round trips"),
    ("9.8.*", ("WS-STR-2", "WS-ECHO-1"), "1000 binary messages of 0 B to 4 KiB, round trips"),
    # 10: miscellaneous
    ("10.1.1", ("WS-FRAG-1", "WS-ECHO-1"), "64 KiB text message auto-fragmented in frames of 1300 bytes"),
    # 12, 13: permessage-deflate, run only against a peer that implements it (impl.json
    # "websocket_extensions"), in a cell of its own with --require-implemented: they check
    # spec/websocket-deflate.md (WSD-*). A server that declines the extension never runs them (WS-HS-5)
    ("12.*", ("WSD-NEG-1", "WSD-NEG-3", "WSD-FRM-1", "WSD-CMP-1", "WSD-CMP-2", "WSD-CMP-4", "WSD-CTX-1"),
     "permessage-deflate, the default offer: messages of five payload classes (JSON, a bitmap, German text, "
     "HTML, PDF) and many sizes, echoed compressed with context takeover"),
    ("13.*", ("WSD-NEG-1", "WSD-NEG-3", "WSD-NEG-4", "WSD-FRM-1", "WSD-CMP-1", "WSD-CMP-2", "WSD-CTX-1",
              "WSD-CTX-2"),
     "permessage-deflate parameter sets: no context takeover on either side, window bits 8 to 15, "
     "several offers of which the first acceptable one wins"),
]

#: the categories `frameproof autobahn` runs by default (issue 14: 1-7, 9, 10)
DEFAULT_CASES = ("1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "9.*", "10.*")
#: the long cases --quick leaves out
LONG_CASES = ("9.*",)
#: a few cases of every category of DEFAULT_CASES, short ones (CI's small matrix, frameproof.matrix.SCALES):
#: framing, pings, reserved bits, opcodes, fragmentation, UTF-8, close, a limit case, auto-fragmentation
SAMPLE_CASES = ("1.1.1", "1.2.8", "2.1", "2.10", "3.2", "4.1.3", "4.2.4", "5.1", "5.19", "6.1.1", "6.4.1", "6.20.3",
                "7.1.1", "7.5.1", "7.9.1", "9.1.1", "9.2.1", "10.1.1")
#: permessage-deflate, for a peer that implements it: every case in the main job; CI (small) one short
#: case of each group (about half a second each): 12.1-12.5, the payload classes (text and binary, of
#: several compressibilities), and 13.1-13.7, the parameter sets (context takeover or not, window bits
#: 8 and 15, several offers)
DEFLATE_CASES = ("12.*", "13.*")
DEFLATE_SAMPLE_CASES = ("12.1.1", "12.2.2", "12.3.3", "12.4.1", "12.5.2", "13.1.1", "13.2.2", "13.3.3", "13.4.1",
                        "13.5.2", "13.6.3", "13.7.1")


def known_cases() -> List[str]:
    """The case IDs wstest 25.10.1 has in DEFAULT_CASES' categories (autobahn_cases.txt, recorded from
    a real run of all of them)."""
    from pathlib import Path
    text = (Path(__file__).with_name("autobahn_cases.txt")).read_text(encoding="utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


#: Autobahn's categories outside DEFAULT_CASES (permessage-deflate): their IDs are not recorded here
OTHER_CATEGORIES = ("12", "13")


def selects_nothing(cases: List[str], exclude: List[str]) -> bool:
    """True when the case globs select no case: no ID of known_cases is left after `exclude`, and no
    glob could name a case of OTHER_CATEGORIES (whose IDs are not recorded, so not judged here)."""
    known = known_cases()
    if any(fnmatch.fnmatchcase(c, p) and not any(fnmatch.fnmatchcase(c, e) for e in exclude)
           for c in known for p in cases):
        return False
    return not any(fnmatch.fnmatchcase(cat, p.split(".")[0]) for p in cases for cat in OTHER_CATEGORIES)


def row(case: str):
    """The table row for ``case`` (an Autobahn case ID such as "6.4.2"), or None."""
    for pat, ids, what in TABLE:
        if fnmatch.fnmatchcase(case, pat):
            return pat, ids, what
    return None


def requirements(case: str, side: str = "server") -> List[str]:
    """The WS-*/WSD-* IDs case ``case`` checks on the endpoint under test (``side``: server or client)."""
    r = row(case)
    if r is None:
        return []
    ids = list(r[1])
    if side == "client":  # the client's rules: unmasked frames refused; the server's response checked
        swap = {"WS-MASK-1": "WS-MASK-2", "WSD-NEG-1": "WSD-NEG-5", "WSD-NEG-3": "WSD-NEG-5", "WSD-NEG-4": "WSD-NEG-5"}
        ids = list(dict.fromkeys(swap.get(i, i) for i in ids))
    return ids
