#!/usr/bin/env node
'use strict';
// fp-ws-testee: a frameproof testee (spec/testee.md, harness version 2) around the ws package (npm).
//
// * `encode`: ws's public frame writer, `WebSocket.Sender.frame(data, {fin, rsv1, opcode, mask,
//   maskBuffer, generateMask})`, with the frame's own masking key. Sender.frame checks nothing (any
//   opcode, any length, control frames unfragmented or not): ws's checks live in Sender's message
//   methods (ping/pong: 125 bytes). Frames it cannot express are answered `skipped`: RSV2/RSV3 set, a
//   masking key that is not 4 bytes, an opcode above 15.
// * `serve`: the library's own server side, WebSocketServer.handleUpgrade (noServer, the options of
//   server.js) on an in-memory Duplex, then the echo of lib/echo.js (the same code as server.js).
// * `decode` and `match`: `skipped`. ws's Receiver (public as WebSocket.Receiver) delivers messages and
//   control frames, never frames: a fragment's FIN, RSV bits, mask bit and key are not reported.
//
// What the glue adds to `serve`, and why: the error's requirement ID is read from ws's error code and
// message (err.code, e.g. WS_ERR_INVALID_OPCODE); its offset, where the offending frame starts, is not
// something ws says: the glue finds the byte on which ws failed (it runs that session again, the failing
// chunk one byte at a time) and the start of the frame holding it, from a walk over the input's frame
// lengths that checks nothing.
const path = require('path');
const { Duplex } = require('stream');
const protobuf = require('protobufjs');
const WebSocket = require('ws');
const { serverOptions, attachEcho } = require('./lib/echo');
const { DEFAULT_MAX_PAYLOAD, DEFAULT_MAX_MESSAGE } = require('./lib/codec');

const root = protobuf.loadSync(path.join(__dirname, '..', '..', '..', 'schemas', 'testee.proto'));
const Request = root.lookupType('frameproof.testee.v1.TesteeRequest');
const Response = root.lookupType('frameproof.testee.v1.TesteeResponse');

const NO_FRAMES = "ws's Receiver delivers messages and control frames, not frames (a fragment's FIN, RSV, " +
  'mask bit and key are never reported): nothing to decode with';

const num = (v) => (v === null || v === undefined ? 0 : typeof v === 'number' ? v : Number(v.toString()));
const skipped = (why) => ({ skipped: why });

function limits(codec) {
  if (!codec || codec.protocol !== 'websocket') return null;
  return {
    maxPayload: num(codec.limits && codec.limits.maxPayload) || DEFAULT_MAX_PAYLOAD,
    maxMessage: num(codec.websocket && codec.websocket.maxMessage) || DEFAULT_MAX_MESSAGE,
  };
}

// ------------------------------------------------------------------ encode

function encode(req) {
  if (!limits(req.codec)) return skipped('this testee wraps a websocket library');
  const f = req.frame || {};
  const h = f.websocket || {};
  const key = Buffer.from(h.maskKey || []);
  if (num(h.rsv) & 3) return skipped('Sender.frame sets RSV1 only (no RSV2/RSV3)');
  if (h.masked && key.length !== 4) return skipped(`Sender.frame takes a 4-byte masking key, not ${key.length}`);
  if (num(h.opcode) > 15) return skipped('not a 4-bit opcode');
  const parts = WebSocket.Sender.frame(Buffer.from(f.payload || []), {
    fin: !!h.fin,
    rsv1: (num(h.rsv) & 4) !== 0,
    opcode: num(h.opcode),
    mask: !!h.masked,
    maskBuffer: Buffer.alloc(4),
    generateMask: (m) => key.copy(m),
    readOnly: true,
  });
  return { encode: { encoded: Buffer.concat(parts.map((p) => Buffer.from(p))) } };
}

// ------------------------------------------------------------------ serve

class MemSocket extends Duplex {
  constructor() {
    super({ allowHalfOpen: true });
    this.out = [];
    this.gone = false;
  }
  _read() {}
  _write(chunk, enc, cb) {
    this.out.push(Buffer.from(chunk));
    cb();
  }
  _final(cb) {
    this.gone = true; // ws ends the socket: the server closes the connection
    cb();
  }
  _destroy(err, cb) {
    this.gone = true;
    cb(err);
  }
  setTimeout() {
    return this;
  }
  setNoDelay() {
    return this;
  }
  take() {
    const b = Buffer.concat(this.out);
    this.out = [];
    return b;
  }
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

// Lets ws run until nothing changes any more (everything here is in memory: a few loop turns).
async function settle(sock) {
  let last = -1;
  for (let i = 0; i < 1000; i++) {
    await turn();
    const now = sock.out.reduce((n, b) => n + b.length, 0) + (sock.gone ? 1e15 : 0);
    if (now === last && i >= 2) return;
    last = now;
  }
}

async function start(codec) {
  const wss = new WebSocket.WebSocketServer({ noServer: true, ...serverOptions(codec) });
  const sock = new MemSocket();
  const session = { sock, error: null };
  const req = {
    method: 'GET',
    url: '/',
    socket: {},
    headers: {
      host: '127.0.0.1',
      upgrade: 'websocket',
      connection: 'Upgrade',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-version': '13',
    },
  };
  wss.handleUpgrade(req, sock, Buffer.alloc(0), (ws) => {
    attachEcho(ws, { frames: 0, bytes: 0, protocol_errors: 0 });
    ws.on('error', (e) => {
      session.error = e;
    });
  });
  await settle(sock);
  sock.take(); // the 101 answer: `serve` starts after the handshake
  return session;
}

async function feed(session, chunk) {
  if (chunk === null) session.sock.push(null);
  else if (chunk.length) session.sock.push(Buffer.from(chunk));
  await settle(session.sock);
  return session.sock.take();
}

// Walks the frames of data by their lengths (nothing is checked): start and opcode of the frame
// holding byte pos.
function frameAt(data, pos) {
  let at = 0;
  while (at < data.length) {
    if (data.length - at < 2) return [at, data[at] & 15];
    let n = data[at + 1] & 0x7f;
    let h = 2;
    if (n === 126) {
      if (data.length - at < 4) return [at, data[at] & 15];
      n = data.readUInt16BE(at + 2);
      h = 4;
    } else if (n === 127) {
      if (data.length - at < 10) return [at, data[at] & 15];
      n = Number(data.readBigUInt64BE(at + 2));
      h = 10;
    }
    if (data[at + 1] & 0x80) h += 4;
    const end = at + h + n;
    if (pos < end || end > data.length) return [at, data[at] & 15];
    at = end;
  }
  return [at, 0];
}

// ws's errors (lib/receiver.js, err.code and message) and the requirement each breaks.
function classify(err, opcode) {
  switch (err.code) {
    case 'WS_ERR_UNEXPECTED_RSV_1':
    case 'WS_ERR_UNEXPECTED_RSV_2_3':
      return 'WS-HDR-2';
    case 'WS_ERR_INVALID_OPCODE':
      if (err.message === 'invalid opcode 0') return 'WS-FRAG-2';
      if (err.message === 'invalid opcode 1' || err.message === 'invalid opcode 2') return 'WS-FRAG-3';
      return 'WS-HDR-3';
    case 'WS_ERR_EXPECTED_FIN':
      return 'WS-CTL-1';
    case 'WS_ERR_EXPECTED_MASK':
      return 'WS-MASK-1';
    case 'WS_ERR_UNEXPECTED_MASK':
      return 'WS-MASK-2';
    case 'WS_ERR_INVALID_CONTROL_PAYLOAD_LENGTH':
      return err.message === 'invalid payload length 1' && opcode === 8 ? 'WS-CLOSE-1' : 'WS-CTL-2';
    case 'WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH':
      return 'WS-LIM-1';
    case 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH': // one limit, on messages: a continuation took it over
      return opcode === 0 ? 'WS-LIM-2' : 'WS-LIM-1';
    case 'WS_ERR_INVALID_UTF8':
      return opcode === 8 ? 'WS-CLOSE-3' : 'WS-UTF8-1';
    case 'WS_ERR_INVALID_CLOSE_CODE':
      return 'WS-CLOSE-2';
    default:
      return `UNCLASSIFIED ${err.code || ''}`.trim();
  }
}

async function serve(req) {
  if (req.endpoint && req.endpoint !== 'echo') return skipped(`websocket has no endpoint ${JSON.stringify(req.endpoint)}`);
  const codec = limits(req.codec);
  if (!codec) return skipped('this testee wraps a websocket library');
  const chunks = (req.chunks || []).map((c) => Buffer.from(c));
  const s = await start(codec);
  const res = { written: [], closed: false };
  let failedAt = -1;
  for (let i = 0; i < chunks.length; i++) {
    res.written.push(await feed(s, chunks[i]));
    if (s.sock.gone) {
      res.closed = true;
      failedAt = i;
      break;
    }
  }
  if (!res.closed && req.halfClose) {
    res.written.push(await feed(s, null));
    res.closed = s.sock.gone;
  }
  if (!res.closed) s.sock.destroy();
  if (res.closed && s.error) {
    let pos = -1;
    if (failedAt >= 0) {
      // again, the failing chunk one byte at a time: the byte after which ws closed
      const t = await start(codec);
      for (let i = 0; i < failedAt; i++) await feed(t, chunks[i]);
      const base = chunks.slice(0, failedAt).reduce((n, c) => n + c.length, 0);
      pos = base + chunks[failedAt].length - 1;
      for (let j = 0; j < chunks[failedAt].length; j++) {
        await feed(t, chunks[failedAt].subarray(j, j + 1));
        if (t.sock.gone) {
          pos = base + j;
          break;
        }
      }
      t.sock.destroy();
    }
    const [offset, opcode] = frameAt(Buffer.concat(chunks), pos);
    res.error = { requirement: classify(s.error, opcode), offset, message: `${s.error.code}: ${s.error.message}` };
  }
  return { serve: res };
}

// ------------------------------------------------------------------ the loop

async function handle(req) {
  if (req.hello) {
    return {
      hello: {
        harnessVersion: num(req.hello.maxHarnessVersion) >= 2 ? 2 : 1,
        name: 'ws',
        version: `ws ${require('ws/package.json').version}`,
        protocols: ['websocket'],
        features: ['encode', 'serve'],
      },
    };
  }
  if (req.encode) return encode(req.encode);
  if (req.serve) return serve(req.serve);
  if (req.decode || req.match) return skipped(NO_FRAMES);
  return skipped('not offered by this testee');
}

let buf = Buffer.alloc(0);
let busy = Promise.resolve();
process.stdin.on('data', (d) => {
  buf = Buffer.concat([buf, d]);
  busy = busy.then(pump);
});
process.stdin.on('end', () => {
  busy.then(() => process.exit(0));
});

async function pump() {
  while (buf.length >= 4) {
    const n = buf.readUInt32LE(0);
    if (buf.length < 4 + n) return;
    const body = buf.subarray(4, 4 + n);
    buf = buf.subarray(4 + n);
    let resp;
    try {
      resp = await handle(Request.decode(body));
    } catch (e) {
      resp = { runtimeError: String(e && e.stack ? e.stack : e) };
    }
    const out = Response.encode(Response.create(resp)).finish();
    const hdr = Buffer.alloc(4);
    hdr.writeUInt32LE(out.length, 0);
    await new Promise((resolve) => process.stdout.write(Buffer.concat([hdr, Buffer.from(out)]), resolve));
  }
}
