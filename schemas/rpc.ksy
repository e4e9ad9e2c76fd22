meta:
  id: rpc_frame
  title: galay-rpc frame (16-byte header, typed body)
  license: Apache-2.0
  ks-version: '0.11'
  endian: be
doc: |
  One frame of the `rpc` protocol: a 16-byte big-endian header (magic
  "GRPC", version, type, flags, reserved, id, body length), then a body
  whose layout depends on the type. The configured maximum body (RPC-LIM-1)
  is applied by the oracle from the header alone, before the body is read.
  Spec: spec/rpc.md. Upstream: gzj-creator/galay-rpc protoc/rpc_base.h,
  protoc/rpc_message.h, kernel/rpc_stream.h.
doc-ref: spec/rpc.md
seq:
  - id: header
    type: header
  - id: body
    size: header.len_body
    type:
      switch-on: header.type
      cases:
        0x01: named_body
        0x10: named_body
        0x02: response_body
    doc: |
      REQUEST and STREAM_INIT: names then payload (RPC-BODY-1, RPC-BODY-3);
      RESPONSE: error code then payload (RPC-BODY-2); every other type: the
      raw payload (RPC-BODY-4), empty for the control frames (RPC-BODY-5).
types:
  header:
    seq:
      - id: magic
        contents: 'GRPC'
        doc: 47 52 50 43 (RPC-HDR-2).
      - id: version
        type: u1
        valid: 1
        doc: Always 1 (RPC-HDR-3).
      - id: type
        type: u1
        valid:
          any-of: [0x01, 0x02, 0x03, 0x04, 0x10, 0x11, 0x12, 0x13, 0x14]
        doc: Message type (RPC-HDR-4).
      - id: flags
        type: u1
        doc: Call mode in bits 0-1, END_STREAM 0x04; delivered verbatim (RPC-HDR-5).
      - id: reserved
        type: u1
        doc: Written 0, delivered verbatim (RPC-HDR-6).
      - id: id
        type: u4
        doc: Request id or stream id (RPC-HDR-7).
      - id: len_body
        type: u4
        valid:
          expr: '_ == 0 or (type != 0x11 and type != 0x13 and type != 0x14)'
        doc: Bytes after the header (RPC-HDR-1); 0 for STREAM_INIT_ACK/END/CANCEL (RPC-BODY-5).
    instances:
      mode:
        value: flags & 3
      end_stream:
        value: (flags & 4) != 0
  named_body:
    seq:
      - id: len_service
        type: u2
      - id: service
        size: len_service
      - id: len_method
        type: u2
      - id: method
        size: len_method
      - id: payload
        size-eos: true
  response_body:
    seq:
      - id: error_code
        type: u2
        doc: RpcErrorCode (RPC-ERR-1).
      - id: payload
        size-eos: true
