/* The floors' reply rewriters for rpc and websocket (tools/bench/floor, issue 28): what fp-raw-echo's
 * ReplyRewriter implementations do (reference-impls/rust/codec/src/protocol/raw_echo.rs,
 * RewriteState; rpc/session.rs, rpc_rewrite; websocket/handshake.rs, ws_rewrite and WsRewriter), in C.
 *
 * Their replies differ in length from the requests, so they are not made in place: each read's replies
 * are appended to an output buffer the caller reuses, from the headers alone, copying each payload
 * once (as every codec server does). A header split across reads is held per connection until it is
 * complete (bounded by the protocol: rpc 16 bytes and two u16-sized names, websocket 14 bytes).
 *  - rpc (spec/rpc.md §2, §9, §10): a REQUEST becomes the echo service's RESPONSE (the request's mode
 *    bits, END_STREAM, error code 0, its payload), STREAM_INIT its INIT_ACK, STREAM_DATA the same
 *    frame with flags 0, STREAM_END its END; the two names of REQUEST and STREAM_INIT are skipped,
 *    not compared. Other kinds get nothing.
 *  - websocket (RFC 6455): the opening handshake is answered (101 with Sec-WebSocket-Accept, the
 *    echo subprotocol selected when offered, permessage-deflate always declined; a head over 8 KiB
 *    is refused), then each masked frame is answered unmasked with the same FIN, RSV, opcode and
 *    length, a ping with its pong, a close with the same close (then the connection ends); pongs get
 *    nothing. The request head is parsed with http-parser (Debian libhttp-parser-dev), SHA-1 and
 *    base64 come from OpenSSL's libcrypto (Debian libssl-dev).
 * With --sink only what a server sends even when it only counts goes out: websocket's handshake
 * answer, pongs and its close. Nothing is validated: the input is the load clients' well-formed
 * request stream. */
#ifndef FP_FLOOR_REWRITE_H
#define FP_FLOOR_REWRITE_H

#include <http_parser.h>
#include <openssl/evp.h>
#include <strings.h>

#include "floor_common.h"

/* An output buffer, reused: grown (rarely) when a read's replies need more, never shrunk. */
struct outbuf {
  uint8_t *p;
  size_t len, cap;
};

static uint8_t *out_grow(struct outbuf *o, size_t n) {
  if (o->len + n > o->cap) {
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + n) cap *= 2;
    o->p = realloc(o->p, cap);
    if (!o->p) floor_die("realloc");
    o->cap = cap;
  }
  uint8_t *at = o->p + o->len;
  o->len += n;
  return at;
}

static void out_put(struct outbuf *o, const void *b, size_t n) { memcpy(out_grow(o, n), b, n); }

/* One connection's rewriter: the header bytes held across reads and the payload left of the frame. */
struct rw {
  uint8_t *stash;
  size_t stash_len, stash_cap, need;
  uint64_t left, phase;
  int copy, masked;
  uint8_t key[4];
  uint8_t *head; /* websocket: the request head so far (MAX_HEAD bytes at most) */
  size_t head_len;
  int opened, closed;
};

/* What a complete header says: payload bytes follow, copied to the reply or skipped. */
struct rw_done {
  uint64_t payload;
  int copy, masked;
  uint8_t key[4];
};

static void rw_free(struct rw *c) {
  free(c->stash);
  free(c->head);
}

static uint32_t be_n(const uint8_t *b, unsigned n) {
  uint32_t v = 0;
  for (unsigned i = 0; i < n; i++) v = v << 8 | b[i];
  return v;
}

/* ------------------------------------------------------------------------------------------- rpc */

enum { RPC_HEADER = 16, RPC_REQUEST = 0x01, RPC_RESPONSE = 0x02, RPC_STREAM_INIT = 0x10, RPC_INIT_ACK = 0x11,
       RPC_STREAM_DATA = 0x12, RPC_STREAM_END = 0x13, RPC_END_STREAM = 0x04, RPC_MODE_MASK = 0x03 };

static void rpc_put_header(struct outbuf *o, uint8_t kind, uint8_t flags, uint32_t id, uint32_t body) {
  uint8_t *h = out_grow(o, RPC_HEADER);
  memcpy(h, "GRPC", 4);
  h[4] = 1; /* version */
  h[5] = kind;
  h[6] = flags;
  h[7] = 0;
  for (int i = 0; i < 4; i++) {
    h[8 + i] = (uint8_t)(id >> (24 - 8 * i));
    h[12 + i] = (uint8_t)(body >> (24 - 8 * i));
  }
}

/* The header bytes so far (`have`): 0 and the reply header appended once complete, else the number of
 * header bytes needed (16, then for REQUEST and STREAM_INIT each name's u16 length and bytes, clipped
 * to the body). */
static size_t rpc_header(const uint8_t *h, size_t have, struct outbuf *o, struct rw_done *d) {
  uint8_t kind = h[5];
  uint64_t body = be_n(h + 12, 4), end = RPC_HEADER + body, hl = RPC_HEADER;
  if (kind == RPC_REQUEST || kind == RPC_STREAM_INIT) {
    for (int k = 0; k < 2; k++) {
      if (hl + 2 > end) {
        hl = end;
        break;
      }
      if (have < hl + 2) return (size_t)hl + 2;
      uint64_t e = hl + 2 + be_n(h + hl, 2);
      hl = e < end ? e : end;
    }
    if (have < hl) return (size_t)hl;
  }
  uint64_t payload = body - (hl - RPC_HEADER);
  uint32_t id = be_n(h + 8, 4);
  int reply = !g_sink;
  d->payload = payload;
  d->masked = 0;
  d->copy = 0;
  if (kind == RPC_REQUEST) {
    if (reply) {
      rpc_put_header(o, RPC_RESPONSE, (uint8_t)((h[6] & RPC_MODE_MASK) | RPC_END_STREAM), id, (uint32_t)(2 + payload));
      out_put(o, "\0\0", 2); /* error code 0 */
    }
    d->copy = reply;
  } else if (kind == RPC_STREAM_INIT || kind == RPC_STREAM_END) {
    if (reply) rpc_put_header(o, kind == RPC_STREAM_INIT ? RPC_INIT_ACK : RPC_STREAM_END, 0, id, 0);
  } else if (kind == RPC_STREAM_DATA) {
    if (reply) rpc_put_header(o, RPC_STREAM_DATA, 0, id, (uint32_t)payload);
    d->copy = reply;
  }
  return 0;
}

/* ------------------------------------------------------------------------------------- websocket */

enum { WS_CLOSE = 0x8, WS_PING = 0x9, WS_PONG = 0xA, WS_MAX_HEAD = 8192 };

/* XOR with the masking key from key octet `phase` on (RFC 6455 §5.3), eight bytes at a time. */
static void ws_unmask(uint8_t *b, size_t n, const uint8_t key[4], uint64_t phase) {
  uint8_t k8[8];
  for (unsigned j = 0; j < 8; j++) k8[j] = key[(phase + j) & 3];
  uint64_t kw;
  memcpy(&kw, k8, 8);
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    uint64_t v;
    memcpy(&v, b + j, 8);
    v ^= kw;
    memcpy(b + j, &v, 8);
  }
  for (; j < n; j++) b[j] ^= key[(phase + j) & 3];
}

/* Like rpc_header: 2 bytes, the extended length, the masking key. */
static size_t ws_header(struct rw *c, const uint8_t *h, size_t have, struct outbuf *o, struct rw_done *d) {
  unsigned n7 = h[1] & 0x7F, ext = n7 == 126 ? 2 : n7 == 127 ? 8 : 0;
  int masked = (h[1] & 0x80) != 0;
  size_t hl = 2 + ext + (masked ? 4 : 0);
  if (have < hl) return hl;
  uint64_t len = n7;
  if (ext) {
    len = 0;
    for (unsigned i = 0; i < ext; i++) len = len << 8 | h[2 + i];
  }
  unsigned op = h[0] & 0x0F;
  int answer = -1; /* pongs and the close go out even with --sink, as the servers send them */
  if (op == WS_PING) {
    answer = WS_PONG;
  } else if (op == WS_CLOSE) {
    c->closed = 1;
    answer = WS_CLOSE;
  } else if (op != WS_PONG && !g_sink) {
    answer = (int)op;
  }
  if (answer >= 0) {
    uint8_t *r = out_grow(o, 2 + ext);
    r[0] = (uint8_t)((h[0] & 0xF0) | answer);
    r[1] = (uint8_t)n7;
    memcpy(r + 2, h + 2, ext);
  }
  d->payload = len;
  d->copy = answer >= 0;
  d->masked = masked;
  if (masked) memcpy(d->key, h + hl - 4, 4);
  return 0;
}

/* What the request head says, gathered by http-parser's callbacks (each header one piece: the head
 * is parsed whole). */
struct ws_head {
  const char *field, *key, *target;
  size_t field_len, key_len, target_len;
  int host, upgrade, connection, keys, versions, version13, offered;
};

static void ws_trim(const char **at, size_t *n) {
  while (*n && (**at == ' ' || **at == '\t')) (*at)++, (*n)--;
  while (*n && ((*at)[*n - 1] == ' ' || (*at)[*n - 1] == '\t')) (*n)--;
}

/* Whether the comma-separated list `v` holds `token` (trimmed; case-insensitively when `fold`). */
static int ws_has_token(const char *v, size_t n, const char *token, int fold) {
  size_t tl = strlen(token);
  while (n) {
    const char *comma = memchr(v, ',', n);
    size_t part = comma ? (size_t)(comma - v) : n;
    const char *t = v;
    size_t tn = part;
    ws_trim(&t, &tn);
    if (tn == tl && (fold ? strncasecmp(t, token, tl) == 0 : memcmp(t, token, tl) == 0)) return 1;
    if (!comma) break;
    v += part + 1;
    n -= part + 1;
  }
  return 0;
}

static int ws_on_url(http_parser *p, const char *at, size_t n) {
  struct ws_head *w = p->data;
  w->target = at;
  w->target_len = n;
  return 0;
}

static int ws_on_field(http_parser *p, const char *at, size_t n) {
  struct ws_head *w = p->data;
  w->field = at;
  w->field_len = n;
  return 0;
}

static int ws_field_is(const struct ws_head *w, const char *name) {
  return w->field_len == strlen(name) && strncasecmp(w->field, name, w->field_len) == 0;
}

static int ws_on_value(http_parser *p, const char *at, size_t n) {
  struct ws_head *w = p->data;
  ws_trim(&at, &n);
  if (ws_field_is(w, "host")) {
    w->host = 1;
  } else if (ws_field_is(w, "upgrade")) {
    w->upgrade |= ws_has_token(at, n, "websocket", 1);
  } else if (ws_field_is(w, "connection")) {
    w->connection |= ws_has_token(at, n, "upgrade", 1);
  } else if (ws_field_is(w, "sec-websocket-key")) {
    w->keys++;
    w->key = at;
    w->key_len = n;
  } else if (ws_field_is(w, "sec-websocket-version")) {
    w->versions++;
    w->version13 = n == 2 && memcmp(at, "13", 2) == 0;
  } else if (ws_field_is(w, "sec-websocket-protocol")) {
    w->offered |= ws_has_token(at, n, g_ws_sub, 0);
  }
  return 0;
}

static void ws_status(struct outbuf *o, const char *status, const char *extra) {
  char b[256];
  int n = snprintf(b, sizeof b, "HTTP/1.1 %s\r\n%sContent-Length: 0\r\nConnection: close\r\n\r\n", status, extra);
  out_put(o, b, (size_t)n);
}

/* The answer to a complete request head (WS-HS-1..5, as handshake_reply_at gives it): 1 for a 101. */
static int ws_handshake(const uint8_t *head, size_t n, struct outbuf *o) {
  static const http_parser_settings settings = {.on_url = ws_on_url, .on_header_field = ws_on_field,
                                                .on_header_value = ws_on_value};
  struct ws_head w = {0};
  http_parser p;
  http_parser_init(&p, HTTP_REQUEST);
  p.data = &w;
  http_parser_execute(&p, &settings, (const char *)head, n);
  if (HTTP_PARSER_ERRNO(&p) != HPE_OK || p.method != HTTP_GET || p.http_major != 1 || p.http_minor != 1 ||
      !w.host || !w.upgrade || !w.connection) {
    ws_status(o, "400 Bad Request", "");
    return 0;
  }
  uint8_t raw[20];
  if (w.keys != 1 || w.key_len != 24 || w.key[22] != '=' || w.key[23] != '=' || w.key[21] == '=' ||
      EVP_DecodeBlock(raw, (const unsigned char *)w.key, 24) != 18) { /* the base64 of 16 bytes */
    ws_status(o, "400 Bad Request", "");
    return 0;
  }
  if (g_ws_path && (w.target_len != strlen(g_ws_path) || memcmp(w.target, g_ws_path, w.target_len) != 0)) {
    ws_status(o, "404 Not Found", "");
    return 0;
  }
  if (w.versions != 1 || !w.version13) {
    ws_status(o, "426 Upgrade Required", "Sec-WebSocket-Version: 13\r\n");
    return 0;
  }
  static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"; /* RFC 6455 §1.3 */
  char cat[24 + sizeof guid];
  memcpy(cat, w.key, 24);
  memcpy(cat + 24, guid, sizeof guid - 1);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned mdn = 0;
  char accept[32];
  if (!EVP_Digest(cat, 24 + sizeof guid - 1, md, &mdn, EVP_sha1(), NULL)) floor_die("EVP_Digest");
  EVP_EncodeBlock((unsigned char *)accept, md, (int)mdn);
  static const char ok[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Accept: ";
  out_put(o, ok, sizeof ok - 1);
  out_put(o, accept, strlen(accept));
  out_put(o, "\r\n", 2);
  if (w.offered) {
    out_put(o, "Sec-WebSocket-Protocol: ", 24);
    out_put(o, g_ws_sub, strlen(g_ws_sub));
    out_put(o, "\r\n", 2);
  }
  out_put(o, "\r\n", 2);
  return 1;
}

/* ------------------------------------------------------------------------------------ the frames */

static void rw_stash(struct rw *c, const uint8_t *b, size_t n) {
  if (c->stash_len + n > c->stash_cap) { /* once per connection in practice: headers are bounded */
    size_t cap = c->stash_cap ? c->stash_cap : 64;
    while (cap < c->stash_len + n) cap *= 2;
    c->stash = realloc(c->stash, cap);
    if (!c->stash) floor_die("realloc");
    c->stash_cap = cap;
  }
  memcpy(c->stash + c->stash_len, b, n);
  c->stash_len += n;
}

/* RewriteState::rewrite: the frames of `in`, in any split, their replies appended to `o`. */
static void rw_frames(struct rw *c, const uint8_t *in, size_t n, struct outbuf *o) {
  const size_t first = g_proto == RPC ? RPC_HEADER : 2;
  size_t i = 0;
  while (i < n) {
    if (c->left) {
      size_t take = c->left < n - i ? (size_t)c->left : n - i;
      if (c->copy) {
        uint8_t *dst = out_grow(o, take);
        memcpy(dst, in + i, take);
        if (c->masked) ws_unmask(dst, take, c->key, c->phase);
      }
      c->phase += take;
      i += take;
      c->left -= take;
      if (!c->left) g_counters.frames++;
      continue;
    }
    size_t need = c->need > first ? c->need : first;
    const uint8_t *h;
    int stashed = c->stash_len != 0;
    if (!stashed) { /* the usual case: the whole header is in this read, judged where it lies */
      if (n - i < need) {
        rw_stash(c, in + i, n - i);
        i = n;
        continue;
      }
      h = in + i;
    } else {
      size_t take = need - c->stash_len < n - i ? need - c->stash_len : n - i;
      rw_stash(c, in + i, take);
      i += take;
      if (c->stash_len < need) continue;
      h = c->stash;
    }
    struct rw_done d = {0};
    size_t k = g_proto == RPC ? rpc_header(h, need, o, &d) : ws_header(c, h, need, o, &d);
    if (k) { /* judged again with more bytes */
      c->need = k > need ? k : need + 1;
      continue;
    }
    if (stashed) c->stash_len = 0;
    else i += need;
    c->need = 0;
    g_counters.bytes += d.payload;
    c->left = d.payload;
    c->copy = d.copy;
    c->masked = d.masked;
    memcpy(c->key, d.key, 4);
    c->phase = 0;
    if (!d.payload) g_counters.frames++;
  }
}

/* The connection's stream is over (websocket: its close answered, or the handshake refused). */
static int rw_closed(const struct rw *c) { return c->closed && c->left == 0 && c->stash_len == 0; }

/* The next bytes of a connection's stream (any split): its replies appended to `o`. */
static void rw_feed(struct rw *c, const uint8_t *in, size_t n, struct outbuf *o) {
  if (g_proto == WEBSOCKET && !c->opened) {
    if (rw_closed(c)) return; /* nothing is read after the close (WS-CLOSE-4) */
    if (!c->head && !(c->head = malloc(WS_MAX_HEAD))) floor_die("malloc");
    size_t old = c->head_len, take = n < WS_MAX_HEAD - old ? n : WS_MAX_HEAD - old;
    memcpy(c->head + old, in, take);
    c->head_len += take;
    const uint8_t *end = NULL;
    for (size_t j = old > 3 ? old - 3 : 0; j + 4 <= c->head_len && !end; j++)
      if (memcmp(c->head + j, "\r\n\r\n", 4) == 0) end = c->head + j + 4;
    if (!end) {
      if (take < n) { /* more than 8 KiB and no end of the head */
        ws_status(o, "431 Request Header Fields Too Large", "");
        c->closed = 1;
      }
      return;
    }
    size_t used = (size_t)(end - c->head);
    int ok = ws_handshake(c->head, used, o);
    free(c->head);
    c->head = NULL;
    if (!ok) {
      c->closed = 1;
      return;
    }
    c->opened = 1;
    in += used - old; /* the frames after the head: all in this read (the head ended in it) */
    n -= used - old;
  } else if (rw_closed(c)) {
    return;
  }
  rw_frames(c, in, n, o);
}

#endif
