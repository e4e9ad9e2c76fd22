meta:
  id: websocket_frame
  title: WebSocket frame (RFC 6455 section 5.2), no extensions
  license: Apache-2.0
  ks-version: '0.11'
  endian: be
doc: |
  One frame of the `websocket` protocol (RFC 6455 section 5.2): a 2-byte
  header, the extended payload length (16 or 64 bits, big-endian), the
  masking key when MASK is set, then the payload, unmasked here with
  `process: xor` (RFC 6455 section 5.3: octet i XOR key[i mod 4]).
  The 64-bit length is unsigned and read whole (its most significant bit
  must be 0, WS-LEN-4): the oracle checks it, the minimal encoding
  (WS-LEN-3), the role's MASK bit and the limits from `header` alone,
  before the payload is read. Spec: spec/websocket.md. Upstream:
  gzj-creator/galay-http protoc/websocket/ws_frame.cc.
doc-ref: spec/websocket.md
seq:
  - id: header
    type: header
  - id: payload_masked
    size: header.len_payload
    process: xor(header.mask_key)
    if: header.masked
    doc: The payload of a masked frame, unmasked (WS-MASK-3).
  - id: payload_plain
    size: header.len_payload
    if: not header.masked
    doc: The payload of an unmasked frame.
instances:
  payload:
    value: 'header.masked ? payload_masked : payload_plain'
    doc: The unmasked payload, whichever way it was sent.
types:
  header:
    seq:
      - id: fin
        type: b1
        doc: Final fragment of a message (WS-FRAG-1); always 1 on control frames (WS-CTL-1).
      - id: rsv
        type: b3
        doc: RSV1..RSV3; 0 without extensions (WS-HDR-2).
      - id: opcode
        type: b4
        enum: opcode
        doc: WS-HDR-3; 0x3-0x7 and 0xB-0xF are reserved.
      - id: masked
        type: b1
        doc: Set on every client frame, clear on every server frame (WS-MASK-1, WS-MASK-2).
      - id: len7
        type: b7
        doc: The payload length, or 126 / 127 for the 16-bit / 64-bit forms (WS-LEN-1).
      - id: len16
        type: u2
        if: len7 == 126
        doc: 16-bit big-endian length; at least 126 (WS-LEN-3).
      - id: len64
        type: u8
        if: len7 == 127
        doc: 64-bit big-endian length, unsigned; at least 65536 (WS-LEN-3), MSB 0 (WS-LEN-4).
      - id: mask_key
        size: 4
        if: masked
        doc: The masking key (WS-MASK-3).
    instances:
      len_payload:
        value: 'len7 == 127 ? len64 : len7 == 126 ? len16 : len7'
        doc: The declared payload length (WS-LEN-1).
      is_control:
        value: 'opcode.to_i >= 8'
        doc: Close, ping, pong (and the reserved 0xB-0xF).
enums:
  opcode:
    0x0: continuation
    0x1: text
    0x2: binary
    0x8: close
    0x9: ping
    0xa: pong
