meta:
  id: standard_frame
  title: NewLife StandardCodec frame (DefaultMessage / SRMP)
  license: Apache-2.0
  ks-version: '0.11'
  endian: le
  bit-endian: be
doc: |
  One frame of the `standard` protocol: a 4-byte header (flag, sequence,
  u16le payload length), extended to 8 bytes when the length field is 0xFFFF,
  then the payload. Spec: spec/standard.md. Upstream: NewLifeX/X
  NewLife.Core/Messaging/DefaultMessage.cs (ToPacket/Read/GetLength).
doc-ref: spec/standard.md
seq:
  - id: header
    type: header
  - id: payload
    size: header.len_payload
    doc: Payload bytes, delivered verbatim (STD-HDR-5).
types:
  header:
    seq:
      - id: flag
        type: flag_bits
        doc: Flag byte (STD-HDR-2..4).
      - id: sequence
        type: u1
        doc: Sequence number matching a reply to its request (STD-SEQ-*).
      - id: len16
        type: u2
        doc: Payload length; 0xFFFF announces the extended length (STD-HDR-1, STD-LEN-1).
      - id: len32
        type: u4
        if: len16 == 0xffff
        valid:
          min: 65535
          max: 0x7fffffff
        doc: Extended payload length, canonical (>= 65535, STD-LEN-3) and below 2^31 (STD-LEN-4).
    instances:
      is_extended:
        value: len16 == 0xffff
      header_len:
        value: 'len16 == 0xffff ? 8 : 4'
      len_payload:
        value: 'len16 == 0xffff ? len32 : len16'
  flag_bits:
    seq:
      - id: reply
        type: b1
        doc: 0x80, set on a reply (STD-HDR-2).
      - id: error_or_one_way
        type: b1
        doc: 0x40, error on a reply, one-way on a request (STD-HDR-3).
      - id: kind
        type: b6
        doc: Data kind 0..63 (STD-HDR-4).
