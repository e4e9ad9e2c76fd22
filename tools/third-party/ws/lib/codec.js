'use strict';
// The `--codec JSON` / `--protocol NAME` option of the common program contract
// (reference-impls/README.md, "The profile syntax") for the websocket protocol, the only one these
// wrappers serve. Unknown keys are a usage error, as the contract says.

const DEFAULT_MAX_PAYLOAD = 10 * 1024 * 1024; // spec/websocket.md §10: limits.max_payload
const DEFAULT_MAX_MESSAGE = 100 * 1024 * 1024; // websocket.max_message

function checkKeys(obj, allowed, where) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw new Error(`${where} must be a JSON object`);
  }
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) throw new Error(`${where}: unknown key ${JSON.stringify(k)}`);
  }
}

/** {maxPayload, maxMessage, permessageDeflate} of a codec JSON text; throws on anything but a websocket server codec. */
function parseCodec(text) {
  let c;
  try {
    c = JSON.parse(text);
  } catch (e) {
    throw new Error(`--codec: ${e.message}`);
  }
  checkKeys(c, ['protocol', 'limits', 'websocket'], '--codec');
  if (c.protocol !== 'websocket') {
    throw new Error(`--codec: protocol ${JSON.stringify(c.protocol)} is not served by this wrapper (websocket only)`);
  }
  const out = { maxPayload: DEFAULT_MAX_PAYLOAD, maxMessage: DEFAULT_MAX_MESSAGE, permessageDeflate: false };
  if (c.limits !== undefined) {
    checkKeys(c.limits, ['max_payload'], '--codec limits');
    if (c.limits.max_payload) out.maxPayload = Number(c.limits.max_payload);
  }
  if (c.websocket !== undefined) {
    checkKeys(c.websocket, ['role', 'max_message', 'permessage_deflate'], '--codec websocket');
    if (c.websocket.role !== undefined && c.websocket.role !== 'server') {
      throw new Error(`--codec: role ${JSON.stringify(c.websocket.role)}: this is a server`);
    }
    if (c.websocket.max_message) out.maxMessage = Number(c.websocket.max_message);
    // spec/websocket-deflate.md: ws's own permessage-deflate (its defaults) when the profile asks for it
    out.permessageDeflate = c.websocket.permessage_deflate === true;
  }
  return out;
}

/** ws has one limit, `maxPayload`, on a whole message (checked from each frame header against the
 * message so far): the smaller of the spec's frame and message limits. */
function maxPayloadOption(codec) {
  return Math.min(codec.maxPayload, codec.maxMessage);
}

module.exports = { parseCodec, maxPayloadOption, DEFAULT_MAX_PAYLOAD, DEFAULT_MAX_MESSAGE };
