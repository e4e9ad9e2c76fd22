// The harness loop of the TypeScript testee kit: speaks the frameproof testee protocol
// (spec/testee.md, harness versions 1 and 2) on stdin/stdout and hands `standard` decode/encode
// requests to the codec in codec.ts. You should not need to change this file to test your own
// codec: replace the code in codec.ts (marked "YOUR CODEC HERE") instead.
import * as fs from "fs";
import * as path from "path";
import * as protobuf from "protobufjs";

import { CodecError, Decoder, encode, Frame } from "./codec";

const NAME = "frameproof-typescript-kit"; // YOUR NAME HERE: shown in the runner's report
const VERSION = "0.1.0";

// The schema is loaded at run time with protobufjs: $FRAMEPROOF_TESTEE_PROTO, else testee.proto in
// the kit's folder (copy it there when you copy the kit), else the frameproof checkout's schemas/.
function protoPath(): string {
  const candidates = [
    process.env.FRAMEPROOF_TESTEE_PROTO,
    path.join(__dirname, "..", "testee.proto"),
    path.join(__dirname, "..", "..", "..", "..", "schemas", "testee.proto"),
  ];
  for (const p of candidates) if (p && fs.existsSync(p)) return p;
  throw new Error("testee.proto not found: set FRAMEPROOF_TESTEE_PROTO or copy it next to package.json");
}

const root = protobuf.loadSync(protoPath());
const TesteeRequest = root.lookupType("frameproof.testee.v1.TesteeRequest");
const TesteeResponse = root.lookupType("frameproof.testee.v1.TesteeResponse");

// protobufjs gives 64-bit integers as Long objects (or numbers); this kit uses plain numbers.
type Int64 = number | { toNumber(): number } | null | undefined;
function num(v: Int64): number {
  return v == null ? 0 : typeof v === "number" ? v : v.toNumber();
}

// The decoded messages are plain objects with camelCase field names (see schemas/testee.proto).
type Msg = any;

function skipped(reason: string): Msg {
  return { skipped: reason };
}

/** Why a codec configuration is not handled, or "" when it is. */
function unsupported(codec: Msg): string {
  const protocol = codec?.protocol ?? "";
  if (protocol !== "standard") return `protocol "${protocol}" is not implemented by this testee`;
  if (codec.params) return "protocol parameters are not supported for standard";
  return "";
}

function protocolError(e: CodecError): Msg {
  return { requirement: e.requirement, offset: e.offset, message: e.message };
}

function toPb(f: Frame): Msg {
  return { flag: f.flag, sequence: f.sequence, payload: f.payload };
}

/** Feeds the chunks exactly as split to a fresh decoder, then ends the stream. */
function decode(req: Msg): Msg {
  const out: Msg = { frames: [] };
  const dec = new Decoder(num(req.codec?.limits?.maxPayload));
  let error: CodecError | undefined;
  for (const chunk of req.chunks ?? []) {
    const r = dec.feed(chunk);
    out.frames.push(...r.frames.map(toPb));
    error = r.error;
    if (error) break; // the first error ends the stream (STD-STR-4)
  }
  if (!error) error = dec.finish();
  if (error) out.error = protocolError(error);
  return { decode: out };
}

function encodeRequest(req: Msg): Msg {
  const f = req.frame ?? {};
  const flag = f.flag ?? 0;
  const sequence = f.sequence ?? 0;
  if (flag > 0xff || sequence > 0xff) return skipped("flag and sequence must be bytes");
  const r = encode({ flag, sequence, payload: f.payload ?? new Uint8Array(0) }, num(req.codec?.limits?.maxPayload));
  return { encode: r instanceof CodecError ? { error: protocolError(r) } : { encoded: r } };
}

function handle(req: Msg): Msg {
  switch (req.request) {
    case "hello":
      return {
        hello: {
          harnessVersion: (req.hello.maxHarnessVersion ?? 0) >= 2 ? 2 : 1,
          name: NAME,
          version: VERSION,
          protocols: ["standard"],
          features: ["decode", "encode"],
        },
      };
    case "decode":
      return unsupported(req.decode.codec) ? skipped(unsupported(req.decode.codec)) : decode(req.decode);
    case "encode":
      return unsupported(req.encode.codec) ? skipped(unsupported(req.encode.codec)) : encodeRequest(req.encode);
    case "match":
      return skipped("match is not implemented by this testee");
    case "serve":
      return skipped("serve is not implemented by this testee");
    default:
      return skipped("unknown request");
  }
}

function writeResponse(resp: Msg): void {
  const body = TesteeResponse.encode(TesteeResponse.fromObject(resp)).finish();
  const hdr = Buffer.alloc(4);
  hdr.writeUInt32LE(body.length, 0);
  process.stdout.write(Buffer.concat([hdr, body]));
}

/** Reads u32-LE-length-prefixed TesteeRequests from stdin and answers each in order. */
async function main(): Promise<void> {
  let chunks: Buffer[] = []; // input not yet parsed
  let buffered = 0;
  for await (const data of process.stdin as AsyncIterable<Buffer>) {
    chunks.push(data);
    buffered += data.length;
    for (;;) {
      if (buffered < 4) break;
      if (chunks[0].length < 4) chunks = [Buffer.concat(chunks)];
      const n = chunks[0].readUInt32LE(0);
      if (buffered < 4 + n) break; // wait for the whole message (no copy until then)
      if (chunks.length > 1) chunks = [Buffer.concat(chunks)];
      const req = TesteeRequest.toObject(TesteeRequest.decode(chunks[0].subarray(4, 4 + n)), {
        oneofs: true, // adds the oneof's name: req.request === "decode", codec.params, ...
        longs: Number,
      });
      writeResponse(handle(req));
      chunks = [chunks[0].subarray(4 + n)];
      buffered -= 4 + n;
    }
  }
  if (buffered > 0) {
    process.stderr.write("testee: stdin ended inside a request\n");
    process.exitCode = 1;
  }
}

main().catch((e) => {
  process.stderr.write(`testee: ${e?.stack ?? e}\n`);
  process.exit(1);
});
