'use strict';
// The echo service both wrappers run on a ws WebSocket: the network server (server.js) and the
// testee's offline serve (testee.js), so that the codec suite's serve tests and the network suite
// see the same code.
const { maxPayloadOption } = require('./codec');

// A peer that does not read its echoes: ws.send queues without bound, so the echo stops reading
// (ws.pause(), public API) while ws.bufferedAmount is at 1 MiB (the contract's --max-output-bytes
// default) and resumes once the socket has taken the output (the send callbacks), as an application
// of ws must; gorilla's blocking WriteMessage does the same by itself.
const MAX_OUTPUT = 1 << 20;

/** The WebSocketServer options of the echo service for a codec ({maxPayload, maxMessage}). */
function serverOptions(codec) {
  return {
    perMessageDeflate: codec.permessageDeflate === true,
    maxPayload: maxPayloadOption(codec),
    handleProtocols: (offered) => (offered.has('frameproof.echo') ? 'frameproof.echo' : false),
  };
}

/** Echoes every text and binary message with its opcode (ws.send(data, {binary})); pings, pongs,
 * the close handshake and protocol errors are ws's own. stats: {frames, bytes, protocol_errors}. */
function attachEcho(ws, stats) {
  const drained = () => {
    if (ws.isPaused && ws.bufferedAmount < MAX_OUTPUT) ws.resume();
  };
  ws.on('message', (data, isBinary) => {
    stats.frames++;
    stats.bytes += data.length;
    ws.send(data, { binary: isBinary }, drained);
    if (ws.bufferedAmount >= MAX_OUTPUT) ws.pause();
  });
  // ws has already sent its close frame (1002/1007/1009) and closes the socket; count it.
  ws.on('error', () => {
    stats.protocol_errors++;
  });
}

module.exports = { serverOptions, attachEcho };
