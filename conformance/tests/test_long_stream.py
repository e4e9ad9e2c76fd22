"""The long stream (spec/testee.md, harness v3): the recipe's reads, the expected answer, and proof
that the test past 4 GiB catches a decoder whose stream offset is kept in 32 bits."""
import itertools
import re

import pytest

from frameproof import long_stream as L
from frameproof import oracle
from frameproof.protocols import get, names

from conftest import PYTESTEE


def test_splitmix64_is_the_reference_generator():
    # the first outputs of splitmix64 from state 0 (Vigna's reference implementation); the Rust,
    # C++ and C# testees check the same three numbers
    assert list(itertools.islice(L.splitmix64(0), 3)) == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


@pytest.mark.parametrize("max_chunk", [1, 2, 5, 11, 64])
def test_reads_are_the_cycle_repeated_then_the_tail(max_chunk):
    cycle, tail = b"abcdefg", b"XYZ"
    got = list(L.reads(cycle, 5, tail, seed=7, max_chunk=max_chunk))
    assert b"".join(got) == cycle * 5 + tail
    assert all(1 <= len(r) <= max_chunk for r in got)
    # the sizes are splitmix64's: the same seed, the same reads
    assert [len(r) for r in got] == [len(r) for r in L.reads(cycle, 5, tail, seed=7, max_chunk=max_chunk)]


@pytest.mark.parametrize("protocol", names())
def test_expected_answer_agrees_with_the_oracle_on_a_short_stream(protocol):
    spec = get(protocol)
    codec = L.codec_for(spec)
    r = L.recipe(spec, codec, 1)  # one cycle
    r.repeat = 3
    exp = L.expected(codec, r)
    whole = oracle.decode(codec, r.cycle * 3 + r.tail)
    assert exp.frames == len(whole.frames) == 3 * L.CYCLE_FRAMES
    assert exp.payload_bytes == sum(len(f.payload) for f in whole.frames)
    assert exp.last == whole.frames[-1]
    # the tail is one frame over the limit: refused at its first byte, which is past every cycle
    assert exp.error == whole.error and exp.error.offset == 3 * len(r.cycle), exp.error


def test_past_4gib_catches_an_offset_kept_in_32_bits(frameproof):
    # 4.1 GiB through the Python reference decoder: about 7 s here, each
    args = ("run", "--protocol", "standard", "--select", "*long_stream_past_4gib", "--long-stream", "4.1G")
    rc, out, doc = frameproof(*args, "--testee", PYTESTEE)
    assert rc == 0 and doc["totals"]["passed"] == 1, out[-2000:]
    rc, out, doc = frameproof(*args, "--testee", f"{PYTESTEE} --mutant offset-wraps-at-4gib")
    assert rc == 1, out[-2000:]
    assert doc["requirements"]["STD-LIM-1"]["failed"], doc["requirements"]
    # the message gives the recipe (the minimal input that reproduces it) and expected vs actual
    assert "splitmix64, seed 0x" in out, out[-2000:]
    m = re.search(r"error: expected STD-LIM-1 @ (\d+), actual STD-LIM-1 @ (\d+)", out)
    assert m, out[-2000:]
    assert int(m.group(1)) > 2 ** 32 and int(m.group(2)) == int(m.group(1)) % 2 ** 32
