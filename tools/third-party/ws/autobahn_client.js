#!/usr/bin/env node
'use strict';
// fp-ws-autobahn-client: the Autobahn testsuite's client protocol (reference-impls/README.md,
// "fp-autobahn-client") on ws's WebSocket client, for `frameproof autobahn --client-cmd`:
//
//   node autobahn_client.js --connect HOST:PORT --agent NAME [--cases all|N]
//
// GET /getCaseCount (one text message: the count), then for each case GET /runCase?case=I&agent=NAME,
// echoing every text and binary message back with its opcode (ws.send(data, {binary})) until the
// connection closes, then GET /updateReports?agent=NAME. perMessageDeflate off, maxPayload 64 MiB + 1 KiB
// (the contract: no message size limit below 64 MiB). Exit 0 when every case ran.
const WebSocket = require('ws');

const USAGE = 'usage: fp-ws-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N]';
function usageError(msg) {
  process.stderr.write(`usage error: ${msg}\n${USAGE}\n`);
  process.exit(2);
}
let connect = null;
let agent = null;
let cases = 'all';
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const val = () => {
    if (i + 1 >= argv.length) usageError(`${a} needs a value`);
    return argv[++i];
  };
  if (a === '--help' || a === '-h') {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  } else if (a === '--connect') connect = val();
  else if (a === '--agent') agent = val();
  else if (a === '--cases') cases = val();
  else usageError(`unknown flag ${a}`);
}
if (!connect || !agent) usageError('--connect and --agent are required');

const OPTIONS = { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 + 1024, handshakeTimeout: 10000 };

/** Opens url; onMessage(ws, data, isBinary) per message; resolves true when the connection has closed
 * after opening, false when it could not open. */
function session(url, onMessage) {
  return new Promise((resolve) => {
    let opened = false;
    const ws = new WebSocket(url, OPTIONS);
    const timer = setTimeout(() => ws.terminate(), 300000);
    ws.on('open', () => {
      opened = true;
    });
    ws.on('message', (data, isBinary) => onMessage(ws, data, isBinary));
    ws.on('error', () => {}); // ws closes the connection itself; the verdict is Autobahn's
    ws.on('close', () => {
      clearTimeout(timer);
      resolve(opened);
    });
  });
}

async function main() {
  const base = `ws://${connect}`;
  let count = null;
  await session(`${base}/getCaseCount`, (ws, data) => {
    count = Number(data.toString());
    ws.close();
  });
  if (!Number.isInteger(count)) {
    process.stderr.write('fp-ws-autobahn-client: no case count\n');
    process.exit(1);
  }
  if (cases !== 'all') {
    const n = Number(cases);
    if (!Number.isInteger(n) || n < 0) usageError(`--cases ${cases}: all or a number`);
    count = Math.min(count, n);
  }
  const q = encodeURIComponent(agent);
  let failed = 0;
  for (let i = 1; i <= count; i++) {
    const ok = await session(`${base}/runCase?case=${i}&agent=${q}`, (ws, data, isBinary) => {
      ws.send(data, { binary: isBinary });
    });
    if (!ok) {
      process.stderr.write(`fp-ws-autobahn-client: case ${i} could not connect\n`);
      failed++;
    }
  }
  const ok = await new Promise((resolve) => {
    const ws = new WebSocket(`${base}/updateReports?agent=${q}`, OPTIONS);
    ws.on('open', () => ws.close(1000));
    ws.on('error', () => resolve(false));
    ws.on('close', () => resolve(true));
  });
  if (!ok || failed) process.exit(1);
  process.exit(0);
}
main();
