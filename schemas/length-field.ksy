meta:
  id: length_field_frame
  title: NewLife LengthFieldCodec frame
  license: Apache-2.0
  ks-version: '0.11'
  endian: le
doc: |
  One frame of the `length-field` protocol in a given profile: `offset`
  header bytes (zeros), a length field chosen by `size`, then the payload.
  The length counts the payload only. Spec: spec/length-field.md. Upstream:
  NewLifeX/X NewLife.Core/Net/Handlers/LengthFieldCodec.cs and
  MessageCodec.cs (GetLength).
doc-ref: spec/length-field.md
params:
  - id: len_header
    type: u4
    doc: Header bytes before the length field; upstream `Offset` (LF-FMT-1, LF-FMT-4).
  - id: size
    type: s1
    doc: 1, 2, 4 little-endian; -2, -4 big-endian; 0 LEB128 varint (LF-FMT-3).
seq:
  - id: header
    size: len_header
    doc: Ignored on receive (LF-FMT-4).
  - id: len_u1
    type: u1
    if: size == 1
  - id: len_u2le
    type: u2le
    if: size == 2
  - id: len_u4le
    type: u4le
    if: size == 4
    valid:
      max: 0x7fffffff
    doc: Bit 31 must be clear (LF-LEN-3).
  - id: len_u2be
    type: u2be
    if: size == -2
  - id: len_u4be
    type: u4be
    if: size == -4
    valid:
      max: 0x7fffffff
    doc: Bit 31 must be clear (LF-LEN-3).
  - id: len_varint
    type: varint
    if: size == 0
  - id: payload
    size: len_payload
instances:
  len_payload:
    value: >-
      size == 1 ? len_u1 :
      size == 2 ? len_u2le :
      size == 4 ? len_u4le :
      size == -2 ? len_u2be :
      size == -4 ? len_u4be :
      len_varint.value
types:
  varint:
    doc: |
      Unsigned LEB128, at most 5 bytes, value below 2^31 (LF-LEN-2). Upstream:
      NewLife.Core/IO/IOHelper.cs GetEncodedInt.
    seq:
      - id: b0
        type: u1
      - id: b1
        type: u1
        if: b0 >= 0x80
      - id: b2
        type: u1
        if: b0 >= 0x80 and b1 >= 0x80
      - id: b3
        type: u1
        if: b0 >= 0x80 and b1 >= 0x80 and b2 >= 0x80
      - id: b4
        type: u1
        if: b0 >= 0x80 and b1 >= 0x80 and b2 >= 0x80 and b3 >= 0x80
        valid:
          max: 0x07
        doc: The fifth byte may carry only 3 value bits and no continuation bit.
    instances:
      num_bytes:
        value: >-
          b0 < 0x80 ? 1 : b1 < 0x80 ? 2 : b2 < 0x80 ? 3 : b3 < 0x80 ? 4 : 5
      value:
        value: >-
          (b0 & 0x7f)
          + (b0 >= 0x80 ? (b1 & 0x7f) << 7 : 0)
          + (b0 >= 0x80 and b1 >= 0x80 ? (b2 & 0x7f) << 14 : 0)
          + (b0 >= 0x80 and b1 >= 0x80 and b2 >= 0x80 ? (b3 & 0x7f) << 21 : 0)
          + (b0 >= 0x80 and b1 >= 0x80 and b2 >= 0x80 and b3 >= 0x80 ? b4 << 28 : 0)
