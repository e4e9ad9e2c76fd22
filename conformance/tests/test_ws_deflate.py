"""The Python reference of permessage-deflate (spec/websocket-deflate.md, issue 30): RFC 7692's worked
examples, round trips over every window and context mode, the negotiation grammar in its legal
spellings and its invalid forms, and the bomb limit, each shown to bite with a planted bug."""
import tracemalloc
import zlib

import pytest
from hypothesis import given, settings, strategies as st

from frameproof.protocols.websocket import deflate as D

HELLO = bytes.fromhex("f248cdc9c90700")  # RFC 7692 §7.2.3.1: "Hello", one frame's payload


def test_rfc_7692_examples():
    # §7.2.3.1: zlib writes the RFC's bytes, and they inflate to "Hello"
    assert D.Deflater().compress(b"Hello") == HELLO
    assert D.Inflater().inflate(HELLO) == b"Hello"
    # §7.2.3.2: the second "Hello" refers back into the first (context takeover)
    sender, receiver = D.Deflater(), D.Inflater()
    first, second = sender.compress(b"Hello"), sender.compress(b"Hello")
    assert (first, second) == (HELLO, bytes.fromhex("f200110000"))
    assert [receiver.inflate(first), receiver.inflate(second)] == [b"Hello", b"Hello"]
    # a receiver that resets its window between messages cannot read it (WSD-CTX-1): 1007, not a crash
    resetting = D.Inflater(reset=True)
    resetting.inflate(first)
    with pytest.raises(D.InflateError) as e:
        resetting.inflate(second)
    assert e.value.code == 1007
    # §7.2.3.3: a stored block
    assert D.Inflater().inflate(bytes.fromhex("000500faff48656c6c6f00")) == b"Hello"
    # §7.2.3.6: the empty message
    assert D.Deflater().compress(b"") == b"\x00" and D.Inflater().inflate(b"\x00") == b""


def test_final_block_then_a_new_stream_with_the_window():
    """WSD-CMP-5: after a BFINAL 1 block the next message is a new stream that may refer back."""
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    final = c.compress(b"Hello") + c.flush(zlib.Z_FINISH)
    assert final == bytes.fromhex("f348cdc9c90700")
    c2 = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=b"Hello")
    refers_back = (c2.compress(b"Hello, Hello") + c2.flush(zlib.Z_SYNC_FLUSH))[:-4]
    r = D.Inflater()
    assert [r.inflate(final), r.inflate(refers_back)] == [b"Hello", b"Hello, Hello"]


messages = st.lists(st.one_of(st.binary(max_size=3000), st.text(max_size=500).map(str.encode),
                              st.sampled_from([b"", b"a" * 70000, bytes(range(256)) * 40])), max_size=8)


@settings(max_examples=60, deadline=None)
@given(msgs=messages, bits=st.integers(9, 15), reset=st.booleans(), level=st.integers(0, 9))
def test_round_trip_every_window_and_context_mode(msgs, bits, reset, level):
    """WSD-CMP-1/2, WSD-CTX-1/2: what one side compresses, the other inflates, message after message."""
    tx, rx = D.Deflater(bits, reset, level), D.Inflater(bits, reset, max_message=1 << 20)
    for m in msgs:
        p = tx.compress(m)
        assert not p.endswith(D.TAIL) or p == b"\x00"
        assert rx.inflate(p) == m


@pytest.mark.parametrize("bits", [9, 15])
def test_incompressible_message_goes_uncompressed_and_resets_the_compressor(bits):
    """WSD-FRM-3: random bytes compress to more than themselves (about 5 octets a 16 KiB block): the
    payload is the message itself, to go with RSV1 clear, and the compressor is reset; the next
    compressible message is compressed again, refers to nothing earlier, and inflates at a receiver that
    kept its window (the uncompressed message entered it nowhere, WSD-CTX-3). An empty message, whose
    compressed payload is 0x00, goes uncompressed too."""
    import random
    noise = random.Random(7).randbytes(100_000)
    assert len(D.Deflater(bits).compress(noise)) > len(noise)  # what the rule avoids
    tx, rx = D.Deflater(bits), D.Inflater(bits, max_message=1 << 20)
    words = b"the same words again and again " * 20
    payload, compressed = tx.payload(words)
    assert compressed and len(payload) < len(words) and rx.inflate(payload) == words
    payload, compressed = tx.payload(noise)
    assert (payload, compressed) == (noise, False) and tx._z is None  # the state dropped: made again lazily
    after = noise[-100:] * 3 + words
    payload, compressed = tx.payload(after)
    assert compressed and len(payload) < len(after)
    assert zlib.decompressobj(-15).decompress(payload + D.TAIL) == after  # refers to nothing before it
    assert rx.inflate(payload) == after  # the receiver kept its window (the words), the payload is still valid
    assert tx.payload(b"") == (b"", False) and tx.payload(b"Hello") == (b"Hello", False)  # 0x00; 7 bytes
    assert tx.payload(b"Hello" * 3) == (D.Deflater(bits).compress(b"Hello" * 3), True)  # as from a fresh one


def _bomb(size: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(1 << 20)
    out = [c.compress(chunk) for _ in range(size >> 20)]
    return (b"".join(out) + c.flush(zlib.Z_SYNC_FLUSH))[:-4]


class _UncheckedInflater(D.Inflater):
    """A planted bug: inflates the whole message, then checks the limit."""

    def inflate(self, payload):
        m = zlib.decompressobj(-15).decompress(payload + D.TAIL)
        if len(m) > self.max_message:
            raise D.InflateError(1009, "too big")
        return m


def _bomb_check(inflater) -> int:
    """WSD-LIM-1: a 64 MiB bomb (64 KiB on the wire) against a 1 MiB limit answers 1009 holding no
    more than the limit plus one step. Returns the peak traced memory."""
    bomb = _bomb(64 << 20)
    assert len(bomb) < 100_000
    tracemalloc.start()
    try:
        with pytest.raises(D.InflateError) as e:
            inflater.inflate(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert e.value.code == 1009
    assert peak <= (1 << 20) + 4 * D.STEP, f"peak {peak} bytes while refusing a bomb with a 1 MiB limit"
    return peak


def test_bomb_refused_within_the_limit():
    _bomb_check(D.Inflater(max_message=1 << 20))


def test_bomb_check_bites_an_inflater_without_a_size_check():
    with pytest.raises(AssertionError, match="peak"):
        _bomb_check(_UncheckedInflater(max_message=1 << 20))


# ------------------------------------------------------------------ negotiation (WSD-NEG-*)

def _case(draw, s):
    return "".join(c.upper() if draw(st.booleans()) else c.lower() for c in s)


@st.composite
def spelled_offer(draw):
    """A valid offer and its agreement under the default policy, spelled any legal way (WSD-NEG-1)."""
    ows = st.sampled_from(["", " ", "\t", "  "])
    params = []
    if draw(st.booleans()):
        params.append(("server_no_context_takeover", None))
    if draw(st.booleans()):
        params.append(("client_no_context_takeover", None))
    if draw(st.booleans()):
        params.append(("server_max_window_bits", str(draw(st.integers(9, 15)))))
    cmwb = draw(st.sampled_from([None, True] + list(range(8, 16))))
    if cmwb is not None:
        params.append(("client_max_window_bits", None if cmwb is True else str(cmwb)))
    params = draw(st.permutations(params))
    out = _case(draw, D.NAME)
    for name, value in params:
        out += f"{draw(ows)};{draw(ows)}{_case(draw, name)}"
        if value is not None:
            v = f'"{value}"' if draw(st.booleans()) else value
            out += f"{draw(ows)}={draw(ows)}{v}"
    canonical = D.NAME + "".join(f"; {n}" + (f"={v}" if v is not None else "") for n, v in params)
    # other extensions before it, in the same header or in earlier ones
    before = draw(st.lists(st.sampled_from(["x-foo", "x-bar; a=1", 'x-q; v="ab"']), max_size=2))
    if before and draw(st.booleans()):
        return [", ".join(before)] + [out], canonical
    return [", ".join(before + [out])], canonical


@settings(max_examples=150, deadline=None)
@given(spelled_offer())
def test_every_spelling_of_an_offer_gets_the_same_answer(case):
    values, canonical = case
    got, want = D.accept(values), D.accept([canonical])
    assert got == want and got is not None, (values, canonical)


@pytest.mark.parametrize("offer", [
    "permessage-deflate; foo", "permessage-deflate; server_max_window_bits", "permessage-deflate; "
    "server_max_window_bits=16", "permessage-deflate; server_max_window_bits=7", "permessage-deflate; "
    "server_max_window_bits=010", "permessage-deflate; client_max_window_bits=0x9", "permessage-deflate; "
    "server_no_context_takeover=1", "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
    "permessage-deflate; client_max_window_bits; client_max_window_bits=10",
    "permessage-deflate; server_max_window_bits=8"])
def test_invalid_offer_declined(offer):
    """WSD-NEG-2 (and NEG-4 for window 8); a valid offer after it is still accepted."""
    assert D.accept([offer]) is None
    agreed, header = D.accept([offer + ", permessage-deflate"])
    assert header == "permessage-deflate"


@pytest.mark.parametrize("values", [['permessage-deflate; server_max_window_bits="1 0"'], ["permessage-deflate; ;"],
                                    ["permessage-deflate; a=", 'permessage-deflate'], ['permessage-deflate; x="10']])
def test_a_list_that_does_not_parse_declines_every_offer(values):
    """RFC 6455 §9.1: a quoted value must be a token once unquoted; a list with a syntax error is not
    read at all (the valid offer beside it too)."""
    with pytest.raises(D.NegotiationError):
        D.parse_extensions(values)
    assert D.accept(values) is None


def test_response_follows_the_offer():
    """WSD-NEG-3: windows no larger than offered; client_max_window_bits only if offered."""
    agreed, h = D.accept(["permessage-deflate; server_max_window_bits=10; client_max_window_bits"],
                         D.Policy(client_window_bits=12))
    assert h == "permessage-deflate; server_max_window_bits=10; client_max_window_bits=12"
    agreed, h = D.accept(["permessage-deflate"], D.Policy(client_window_bits=12, server_window_bits=11))
    assert h == "permessage-deflate; server_max_window_bits=11"


@pytest.mark.parametrize("offer,response,ok", [
    ("permessage-deflate", "permessage-deflate", True),
    ("permessage-deflate", "permessage-deflate; server_no_context_takeover; client_no_context_takeover", True),
    ("permessage-deflate", "permessage-deflate; server_max_window_bits=10", True),
    ("permessage-deflate", "permessage-deflate; client_max_window_bits=10", False),
    ("permessage-deflate; client_max_window_bits=10", "permessage-deflate; client_max_window_bits=11", False),
    ("permessage-deflate; client_max_window_bits", "permessage-deflate; client_max_window_bits", False),
    ("permessage-deflate; server_max_window_bits=10", "permessage-deflate; server_max_window_bits=12", False),
    ("permessage-deflate", "permessage-deflate; foo", False),
    ("permessage-deflate", "permessage-deflate, permessage-deflate", False),
    ("permessage-deflate", "x-other", False),
])
def test_client_checks_the_response(offer, response, ok):
    """WSD-NEG-5."""
    (_, params), = D.parse_extensions([offer])
    o = D.offer_params(params)
    if ok:
        assert D.check_response(o, [response]) is not None
    else:
        with pytest.raises(D.NegotiationError):
            D.check_response(o, [response])
