"""The vector pages: every vector with its expectation and hex dumps annotated by field (positions
from the .ksy compiled with Kaitai's --debug position tracking)."""
from __future__ import annotations

import html
import importlib.util
import json
from pathlib import Path

import yaml
from frameproof import catalog, oracle, vectors as V
from frameproof import protocols as registry
from .common import PROTOCOLS, ROOT, VERDICTS, esc_cell, link_ids, req_link, write


# ---------------------------------------------------------------- vectors and annotated hex dumps


def load_debug_parsers(compiled: Path):
    """The schemas compiled with Kaitai's --debug (position tracking, explicit _read)."""
    mods = {}
    for k in sorted((ROOT / "schemas").glob("*.ksy")):
        mid = yaml.safe_load(k.read_text())["meta"]["id"]
        spec_ = importlib.util.spec_from_file_location(f"fp_docs_dbg_{mid}", compiled / "python" / f"{mid}.py")
        mod = importlib.util.module_from_spec(spec_)
        spec_.loader.exec_module(mod)
        mods[mid] = mod
    return mods




class Annotator:
    def __init__(self, parsers):
        import kaitaistruct
        self.ks = kaitaistruct
        self.parsers = parsers

    def _small_int_struct(self, obj) -> bool:
        vals = [getattr(obj, n, None) for n in obj.SEQ_FIELDS]
        return all(v is None or isinstance(v, (int, bool)) for v in vals)

    def _summary(self, obj) -> str:
        if hasattr(type(obj), "value"):
            try:
                return f"{obj.value}"
            except Exception:  # pragma: no cover - partial struct
                pass
        parts = [f"{n}={int(getattr(obj, n))}" for n in obj.SEQ_FIELDS if getattr(obj, n, None) is not None]
        return ", ".join(parts)

    def _walk(self, obj, prefix=""):
        out = []
        for name in obj.SEQ_FIELDS:
            if name not in obj._debug:
                continue  # conditional field not present
            d = obj._debug[name]
            val = getattr(obj, name, None)
            if isinstance(val, self.ks.KaitaiStruct) and not self._small_int_struct(val):
                out += self._walk(val, prefix)
                if "end" not in d:
                    break
                continue
            if "end" not in d:
                break
            if isinstance(val, self.ks.KaitaiStruct):
                text = self._summary(val)
            elif isinstance(val, bool):
                text = str(int(val))
            elif isinstance(val, int):
                text = f"{val}" + (f" (0x{val:X})" if val > 9 else "")
            elif isinstance(val, (bytes, bytearray)):
                text = f"{len(val)} bytes" + (f": {bytes_preview(val)}" if val else "")
            else:
                text = str(val)
            if d["end"] > d["start"]:
                out.append([d["start"], d["end"], name, text])
        return out

    def _parse(self, codec, data, pos):
        io = self.ks.KaitaiStream(self.ks.BytesIO(data))
        io.seek(pos)
        module, cls, params = codec.spec.kaitai_frame(codec)
        obj = getattr(self.parsers[module], cls)(*params, io)
        err = None
        try:
            obj._read()
        except (EOFError, self.ks.KaitaiStructError, ValueError) as e:
            err = e
        return obj, err, io.pos()

    def segments(self, codec, data: bytes):
        """[start, end, frame index, field, value] covering the stream, from the oracle's
        decision (frames, error) and the debug parser's field positions."""
        res = oracle.decode(codec, data)
        segs = []
        pos = 0
        for i, fr in enumerate(res.frames):
            obj, err, end = self._parse(codec, data, pos)
            # the debug parse must agree with the oracle (its payload, where the frame has one at the top)
            if err or (hasattr(obj, "payload") and bytes(obj.payload) != fr.payload):
                raise SystemExit(f"annotation disagrees with the oracle at offset {pos}: {err}")
            for s, e, name, text in self._walk(obj):
                segs.append([s, e, i, name, text])
            pos = end
        if res.error:
            if res.error.offset != pos:
                raise SystemExit(f"oracle error offset {res.error.offset} != annotation position {pos}")
            if not codec.spec.invalid_config(codec):
                obj, _err, _end = self._parse(codec, data, pos)
                for s, e, name, text in self._walk(obj):
                    if name != "payload" and e <= len(data):
                        segs.append([s, e, len(res.frames), name, text])
                        pos = e
            # the rest of the stream from the end of the last field read (possibly nothing)
            segs.append([pos, len(data), len(res.frames), "rejected",
                         f"frame at offset {res.error.offset}: {res.error.requirement}"])
        elif pos < len(data):  # the protocol ends the stream before its bytes do (e.g. a WebSocket close)
            segs.append([pos, len(data), len(res.frames), "not read",
                         "after the frame that ends the stream: the decoder reads no further"])
        return res, segs


FIELD_CLASSES = {}


def bytes_preview(b: bytes, n: int = 12) -> str:
    """Short rendering of a byte string: quoted text when it is printable ASCII, else hex."""
    if all(32 <= c < 127 for c in b[:40]) and len(b) <= 40:
        return '"' + b.decode("ascii") + '"'
    return b[:n].hex(" ") + (" …" if len(b) > n else "")


def field_class(name: str) -> str:
    if name == "rejected":
        return "fp-x"
    if name not in FIELD_CLASSES:
        FIELD_CLASSES[name] = f"fp-f{len(FIELD_CLASSES) % 8}"
    return FIELD_CLASSES[name]


def hexdump_html(data: bytes, segs, max_rows=24) -> str:
    owner = {}
    for k, (s, e, *_rest) in enumerate(segs):
        for b in range(s, min(e, len(data))):
            owner[b] = k
    nrows = (len(data) + 15) // 16
    boundaries = set()
    for s, e, *_ in segs:
        boundaries.add(s // 16)
        boundaries.add(max(e - 1, s) // 16)
    keep = []
    for r in range(nrows):
        if r < 4 or r in boundaries or r - 1 in boundaries or r == nrows - 1:
            keep.append(r)
    out = ['<div class="fp-hex" data-search-exclude><pre>']
    last = -1
    shown = 0
    for r in keep:
        if shown >= max_rows:
            out.append(f'<span class="fp-gap">… {len(data) - r * 16} more bytes</span>')
            break
        if r != last + 1:
            out.append(f'<span class="fp-gap">⋮ {(r - last - 1) * 16} bytes</span>')
        # one span per run of bytes of the same field in this row
        cells = []
        asc = []
        count = 0
        b = r * 16
        row_end = min(r * 16 + 16, len(data))
        while b < row_end:
            k = owner.get(b)
            e = b
            while e < row_end and owner.get(e) == k:
                e += 1
            hx = " ".join(f"{x:02x}" for x in data[b:e])
            ch = html.escape("".join(chr(x) if 32 <= x < 127 else "." for x in data[b:e]))
            if k is None:
                cells.append(hx)
                asc.append(ch)
            else:
                s, _e, fi, name, text = segs[k]
                title = html.escape(f"frame {fi + 1} · {name} = {text}", quote=True)
                cls = field_class(name) + (" fp-alt" if fi % 2 else "")
                cells.append(f'<span class="{cls}" title="{title}">{hx}</span>')
                asc.append(f'<span class="{cls}">{ch}</span>')
            count += e - b
            b = e
        pad = "   " * (16 - count)
        out.append(f'<span class="fp-off">{r * 16:08x}</span>  {" ".join(cells)}{pad}  {"".join(asc)}')
        last = r
        shown += 1
    out.append("</pre></div>")
    return "\n".join(out)


def field_table(segs, max_rows=24) -> list:
    lines = ["| offset | bytes | frame | field | value |", "|---:|---:|---:|---|---|"]
    for s, e, fi, name, text in segs[:max_rows]:
        cls = field_class(name)
        val = esc_cell(text)
        if name == "rejected":
            val = (f"the decoder must reject the frame: {link_ids(val, '../')}"
                   + (f" ({e - s} more bytes not decoded)" if e > s else ""))
        lines.append(f"| {s} | {e - s} | {fi + 1} | <span class=\"{cls}\">{name}</span> | {val} |")
    if len(segs) > max_rows:
        frames = len({fi for _s, _e, fi, *_ in segs})
        lines.append(f"| | | | … | {len(segs) - max_rows} more fields ({frames} frames in all) |")
    return lines + [""]


def frame_text(f: oracle.Frame, protocol: str) -> str:
    p = f.payload
    shown = p[:16].hex(" ") + (" …" if len(p) > 16 else "")
    head = registry.get(protocol).describe_header(f)
    return (f"{head}, " if head else "") + f"payload {len(p)} bytes `{shown}`"


def expected_lines(frames, error, protocol, prefix) -> list:
    """'no frames' / 'N frames:' + list, then the error sentence."""
    if frames:
        head = f"{len(frames)} frame{'s' if len(frames) != 1 else ''}"
    else:
        head = "no frames"
    if error:
        head += f", then the error {req_link(error.requirement, prefix)} at offset {error.offset}"
    out = [head + (":" if frames else "."), ""]
    for i, f in enumerate(frames[:8]):
        out.append(f"{i + 1}. {frame_text(f, protocol)}")
    if len(frames) > 8:
        out.append(f"9. … {len(frames) - 8} more")
    if frames:
        out.append("")
    return out


def codec_text(c: oracle.Codec) -> str:
    parts = []
    if c.max_payload:
        parts.append(f"max_payload {c.max_payload}")
    for k, v in c.params_json().items():
        parts.append(f"{k} {json.dumps(v)}")
    return ", ".join(parts) or "defaults"


def annotated(ann, codec, data, title) -> list:
    note = ""
    if codec.spec.kaitai_frame(codec) is None:
        segs, note = [], "(no field annotation for this protocol yet)"
    elif codec.spec.invalid_config(codec):
        err = oracle.decode(codec, data).error
        segs = [[0, len(data), 0, "rejected", f"{err.requirement} (invalid configuration)"]] if data else []
    else:
        try:
            _res, segs = ann.segments(codec, data)
        except SystemExit as e:
            raise SystemExit(f"{title}: {e}") from e
    out = [f"**{title}** ({len(data)} bytes){' ' + note if note else ''}:", ""]
    if not data:
        return out + ["(empty)", ""]
    out += [hexdump_html(data, segs), ""]
    if segs:
        out += field_table(segs)
    return out


def gen_vectors(out: Path, ann, rmap) -> list:
    d = out / "vectors"
    d.mkdir(parents=True, exist_ok=True)
    tests_by_vector = {}
    for t in catalog.tests():
        if t.get("vector"):
            tests_by_vector.setdefault(t["vector"], []).append(t["name"])
    index = ["# Test vectors", "",
             "The codec suite's inputs, one JSON file per vector in `conformance/vectors/<protocol>/`, "
             "named after JSONTestSuite: `y_` must be accepted, `n_` must be rejected, `i_` leaves a "
             "documented choice. Each vector is run whole and at many splits (`whole`, `chunked-1`, …). "
             "The pages show every vector with its bytes as a hex dump annotated by field: frames and "
             "errors are what the suite's oracle (`frameproof.oracle`) decides, field positions come "
             "from the Kaitai parser generated from the same schema. Hover a byte to see its field.", "",
             "| protocol | vectors | decode | encode | match |", "|---|---:|---:|---:|---:|"]
    pages = []
    for proto in PROTOCOLS:
        vecs = V.load(proto)
        kinds = {k: sum(1 for v in vecs if v.kind == k) for k in ("decode", "encode", "match")}
        index.append(f"| [{proto}]({proto}.md) | {len(vecs)} | {kinds['decode']} | {kinds['encode']} | {kinds['match']} |")
        lines = [f"# {proto} test vectors", "",
                 f"{len(vecs)} vectors from `conformance/vectors/{proto}/` "
                 f"(spec: [{proto}](../{proto}.md), schema: [{proto}.ksy](../schemas/{proto}.md)). "
                 "Hover a byte in a hex dump for its frame and field; every other frame is underlined.", "",
                 "| vector | kind | verdict | requirements | description |", "|---|---|---|---|---|"]
        for v in vecs:
            lines.append(f"| [`{v.id}`](#{v.id}) | {v.kind} | {v.verdict} | "
                         f"{', '.join(req_link(r, '../') for r in v.requirements)} | {esc_cell(v.description)} |")
        lines.append("")
        for v in vecs:
            lines += vector_section(v, ann, tests_by_vector.get(f"{proto}/{v.id}", []))
        write(d / f"{proto}.md", "\n".join(lines) + "\n")
        pages.append(proto)
    write(d / "index.md", "\n".join(index) + "\n")
    return pages


def vector_section(v, ann, test_names) -> list:
    proto = v.protocol
    out = [f"## {v.id} {{#{v.id}}}", "",
           f"**{v.kind}** · {VERDICTS.get(v.verdict, v.verdict)} · requirements "
           f"{', '.join(req_link(r, '../') for r in v.requirements)} · codec: {codec_text(v.codec)}", "",
           link_ids(v.description, "../") or "", ""]
    if test_names:
        base = test_names[0].rsplit("/", 1)[0]
        variants = [n.rsplit("/", 1)[1] for n in test_names]
        out += [f"Tests: `{base}/` {{{', '.join(variants)}}}", ""]
    if v.kind == "decode":
        data = v.data
        if v.splits:
            out += [f"Split into reads at offsets {v.splits}.", ""]
        out += annotated(ann, v.codec, data, f"Input stream of {v.protocol}/{v.id}")
        outcomes = v.outcomes()
        if len(outcomes) == 1:
            exp = expected_lines(outcomes[0].frames, outcomes[0].error, proto, "../")
            out += ["**Expected:** " + exp[0]] + exp[1:]
        else:
            out += ["**Expected:** any one of these outcomes conforms:", ""]
            for k, o in enumerate(outcomes):
                out += [f"*Outcome {k + 1}*", ""] + expected_lines(o.frames, o.error, proto, "../")
        if v.check_encode:
            out += ["Encoding the expected frames must give exactly the input bytes.", ""]
    elif v.kind == "encode":
        out += [f"**Frame to encode:** {frame_text(v.frame, proto)}", ""]
        exp = v.expect
        if isinstance(exp, oracle.Error):
            out += [f"**Expected:** the encoder refuses with {req_link(exp.requirement, '../')}.", ""]
        else:
            out += annotated(ann, v.codec, exp, "Expected bytes")
    elif v.kind == "match":
        out += [f"Timeout: {v.raw.get('timeout_ms') or oracle.DEFAULT_TIMEOUT_MS} ms (virtual clock).", "",
                "| # | event | bytes |", "|---:|---|---|"]
        received = b""
        for k, (ev, arg) in enumerate(v.events()):
            if ev == "advance_ms":
                out.append(f"| {k} | advance {arg} ms | |")
            elif not isinstance(arg, (bytes, bytearray)):  # a typed frame (send_frame)
                out.append(f"| {k} | {ev} | {esc_cell(frame_text(arg, v.protocol))} |")
            else:
                shown = arg[:24].hex(" ") + (" …" if len(arg) > 24 else "")
                out.append(f"| {k} | {ev} ({len(arg)} bytes) | `{shown}` |")
                if ev == "receive":
                    received += arg
        out.append("")
        exp = v.expected_match()
        sent = b"".join(exp.sent)
        if sent:
            out += annotated(ann, v.codec, sent, "Expected bytes sent (all send events, concatenated)")
        if received:
            out += annotated(ann, v.codec, received, "Bytes received (all receive events, concatenated)")
        out += ["**Expected completions:**", "", "| # | completion | request | frame |", "|---:|---|---:|---|"]
        for k, c in enumerate(exp.completions):
            out.append(f"| {k} | {c.kind} | {'' if c.request is None else c.request} | "
                       f"{esc_cell(frame_text(c.frame, proto)) if c.frame else ''} |")
        out.append("")
        if exp.error:
            out += [f"and the connection fails with {req_link(exp.error.requirement, '../')} at offset "
                    f"{exp.error.offset}.", ""]
    raw = json.dumps(v.raw, indent=1)
    if len(raw) > 4000:
        raw = raw[:4000] + "\n… (truncated)"
    out += [f'??? abstract "Source: conformance/vectors/{proto}/{v.id}.json"', "", "    ```json"]
    out += ["    " + line for line in raw.splitlines()] + ["    ```", ""]
    return out
