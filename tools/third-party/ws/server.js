#!/usr/bin/env node
'use strict';
// fp-ws-server: a websocket echo server on the `ws` package (npm), following the echo-server contract
// of reference-impls/README.md (websocket section) as far as the library allows:
//
//   node server.js (--protocol websocket | --codec JSON) --listen HOST:PORT
//
// The handshake is ws's WebSocketServer (subprotocol "frameproof.echo" selected when offered through
// handleProtocols, perMessageDeflate off); every text and binary message is echoed with its opcode
// (lib/echo.js: ws.send(data, {binary})); pings, pongs, the close handshake and protocol errors are ws's own.
// Nothing is checked here that ws does not check: the wrapper shows the library's behaviour.
// SIGTERM/SIGINT: stop accepting, close every connection, print
// {"connections","frames","bytes","protocol_errors"}, exit 0.
const { WebSocketServer } = require('ws');
const { parseCodec } = require('./lib/codec');
const { serverOptions, attachEcho } = require('./lib/echo');

const USAGE = 'usage: fp-ws-server (--protocol websocket | --codec JSON) --listen HOST:PORT';

function usageError(msg) {
  process.stderr.write(`usage error: ${msg}\n${USAGE}\n`);
  process.exit(2);
}

let listen = null;
let codecText = null;
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
  } else if (a === '--listen') {
    listen = val();
  } else if (a === '--protocol' || a === '--codec') {
    if (codecText !== null) usageError('give --protocol or --codec, not both');
    codecText = a === '--protocol' ? JSON.stringify({ protocol: val() }) : val();
  } else {
    usageError(`unknown or unsupported flag ${a}`);
  }
}
if (listen === null || codecText === null) usageError('--listen and --protocol/--codec are required');
let codec;
try {
  codec = parseCodec(codecText);
} catch (e) {
  usageError(e.message);
}
const colon = listen.lastIndexOf(':');
if (colon < 0) usageError(`--listen ${listen}: expected HOST:PORT`);
const host = listen.slice(0, colon).replace(/^\[|\]$/g, '');
const port = Number(listen.slice(colon + 1));
if (!Number.isInteger(port) || port < 0 || port > 65535) usageError(`--listen ${listen}: bad port`);

const stats = { connections: 0, frames: 0, bytes: 0, protocol_errors: 0 };
const wss = new WebSocketServer({ host, port, ...serverOptions(codec) });

wss.on('connection', (ws) => {
  stats.connections++;
  attachEcho(ws, stats);
});

wss.on('listening', () => {
  const a = wss.address();
  const h = a.family === 'IPv6' || a.family === 6 ? `[${a.address}]` : a.address;
  process.stdout.write(`LISTENING ${h}:${a.port}\n`);
});
wss.on('error', (e) => {
  process.stderr.write(`fp-ws-server: ${e.message}\n`);
  process.exit(1);
});

let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  for (const ws of wss.clients) ws.terminate();
  wss.close();
  process.stdout.write(JSON.stringify(stats) + '\n', () => process.exit(0));
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
