/* What the floor servers share (tools/bench/floor): the command line, the codec JSON (read with
 * cJSON, Debian libcjson-dev), the listening socket, the stop signals, the header walk and the
 * counters.
 *
 * Every protocol is answered as fp-raw-echo answers it (reference-impls/rust/codec/src/protocol/
 * raw_echo.rs), from the headers alone. The walk here serves the protocols whose reply is the request
 * with at most a byte changed, in place: `standard` sets bit 7 of each frame's flag byte (request
 * 0x01 -> reply 0x81); `length-field` (offset 0, a little-endian field of 1, 2 or 4 bytes) leaves the
 * bytes as they are. `rpc` and `websocket`, whose replies differ in length from their requests, are
 * rewritten into a reused output buffer instead (floor_rewrite.h). All of them only count frames:
 * they assume the well-formed request streams of the load clients and validate nothing. */
#ifndef FP_FLOOR_COMMON_H
#define FP_FLOOR_COMMON_H

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

enum floor_proto { STANDARD, LENGTH_FIELD, RPC, WEBSOCKET };
#define FLOOR_REWRITES (g_proto == RPC || g_proto == WEBSOCKET) /* replies written apart, not in place */

struct walk {  /* one connection's place in its stream */
  uint8_t hdr[8];
  unsigned have;
  uint64_t remaining;
};

static enum floor_proto g_proto;
static unsigned g_width = 2; /* length-field: the field's bytes */
static int g_sink;
/* websocket: the echo service's request target (NULL: any) and subprotocol (codec JSON
 * websocket.path, websocket.subprotocol; spec/websocket.md §13) */
static const char *g_ws_path, *g_ws_sub = "frameproof.echo";
static struct {
  uint64_t connections, frames, bytes, reads, read_bytes;
} g_counters;

static void floor_die(const char *what) {
  perror(what);
  exit(2);
}

static void floor_usage(const char *prog) {
  fprintf(stderr, "usage: %s (--codec JSON | --protocol NAME) --listen HOST:PORT [--sink] [--stats] [--threads N]\n", prog);
  exit(2);
}

/* websocket.path / websocket.subprotocol when given: a string whose every byte passes `ok`, kept;
 * another value refuses the profile (exit 2), as the Rust codec's configuration does. */
static void floor_ws_name(const cJSON *ws, const char *key, int (*ok)(const char *), const char **into, const char *prog) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(ws, key);
  if (!v || cJSON_IsNull(v)) return;
  if (!cJSON_IsString(v) || !ok(v->valuestring)) {
    fprintf(stderr, "%s: codec.websocket.%s is not a valid %s\n", prog, key, key);
    exit(2);
  }
  *into = strdup(v->valuestring);
}

static int floor_path_ok(const char *p) {  /* '/' then visible ASCII */
  if (*p != '/') return 0;
  for (; *p; p++)
    if (*p < 0x21 || *p > 0x7e) return 0;
  return 1;
}

static int floor_token_ok(const char *p) {  /* an HTTP token (RFC 9110 §5.6.2) */
  if (!*p) return 0;
  for (; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || strchr("!#$%&'*+-.^_`|~", *p)))
      return 0;
  return 1;
}

/* {"protocol": "standard"}, {"protocol": "length-field", "length_field": {"offset": 0, "size": 1|2|4}},
 * {"protocol": "rpc", ...} or {"protocol": "websocket", "websocket": {"path": P, "subprotocol": S, ...}};
 * keys the floor does not need are accepted and ignored (limits, rpc.max_body, websocket.role,
 * websocket.permessage_deflate: offers are always declined, as fp-raw-echo declines them). Any
 * other profile is refused (exit 2), as fp-raw-echo refuses it. */
static void floor_parse_codec(const char *json, const char *prog) {
  cJSON *root = cJSON_Parse(json);
  const cJSON *p = root ? cJSON_GetObjectItemCaseSensitive(root, "protocol") : NULL;
  if (!cJSON_IsString(p)) floor_usage(prog);
  if (strcmp(p->valuestring, "standard") == 0) {
    g_proto = STANDARD;
  } else if (strcmp(p->valuestring, "length-field") == 0) {
    g_proto = LENGTH_FIELD;
    const cJSON *lf = cJSON_GetObjectItemCaseSensitive(root, "length_field");
    int offset = 0, size = 2;
    if (cJSON_IsObject(lf)) {
      const cJSON *o = cJSON_GetObjectItemCaseSensitive(lf, "offset"), *s = cJSON_GetObjectItemCaseSensitive(lf, "size");
      if (cJSON_IsNumber(o)) offset = o->valueint;
      if (cJSON_IsNumber(s)) size = s->valueint;
    }
    if (offset != 0 || (size != 1 && size != 2 && size != 4)) {
      fprintf(stderr, "%s: length-field offset 0, size 1, 2 or 4 only\n", prog);
      exit(2);
    }
    g_width = (unsigned)size;
  } else if (strcmp(p->valuestring, "rpc") == 0) {
    g_proto = RPC;
  } else if (strcmp(p->valuestring, "websocket") == 0) {
    g_proto = WEBSOCKET;
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(root, "websocket");
    if (cJSON_IsObject(ws)) {
      floor_ws_name(ws, "path", floor_path_ok, &g_ws_path, prog);
      floor_ws_name(ws, "subprotocol", floor_token_ok, &g_ws_sub, prog);
    }
  } else {
    fprintf(stderr, "%s: no header walk for %s (standard, length-field, rpc, websocket)\n", prog, p->valuestring);
    exit(2);
  }
  cJSON_Delete(root);
}

/* Blocks SIGTERM and SIGINT, the stop signals, and returns a signalfd that reports them; ignores
 * SIGPIPE (a write to a closed peer fails with EPIPE instead). */
static int floor_stop_signals(void) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  signal(SIGPIPE, SIG_IGN);
  return signalfd(-1, &mask, SFD_CLOEXEC);
}

/* Reads the command line, listens (IPv4), prints "LISTENING host:port"; returns the socket. */
static int floor_setup(int argc, char **argv, const char *prog) {
  const char *listen_at = NULL, *codec = NULL;
  static char codec_buf[64];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--codec") && i + 1 < argc) {
      codec = argv[++i];
    } else if (!strcmp(argv[i], "--protocol") && i + 1 < argc) {
      snprintf(codec_buf, sizeof codec_buf, "{\"protocol\":\"%s\"}", argv[++i]);
      codec = codec_buf;
    } else if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
      listen_at = argv[++i];
    } else if (!strcmp(argv[i], "--sink")) {
      g_sink = 1;
    } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      i++; /* one thread whatever is asked: accepted for the benchmark's command line */
    } else if (strcmp(argv[i], "--stats") != 0) {
      floor_usage(prog);
    }
  }
  if (!codec || !listen_at) floor_usage(prog);
  floor_parse_codec(codec, prog);
  char host[64];
  const char *colon = strrchr(listen_at, ':');
  if (!colon || (size_t)(colon - listen_at) >= sizeof host) floor_usage(prog);
  memcpy(host, listen_at, (size_t)(colon - listen_at));
  host[colon - listen_at] = 0;
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
    fprintf(stderr, "%s: IPv4 HOST:PORT only\n", prog);
    exit(2);
  }
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (ls < 0) floor_die("socket");
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(ls, (struct sockaddr *)&addr, sizeof addr) || listen(ls, 1024)) floor_die("listen");
  socklen_t al = sizeof addr;
  getsockname(ls, (struct sockaddr *)&addr, &al);
  printf("LISTENING %s:%u\n", host, ntohs(addr.sin_port));
  fflush(stdout);
  return ls;
}

static uint32_t floor_le(const uint8_t *b, unsigned n) {
  uint32_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint32_t)b[i] << (8 * i);
  return v;
}

/* Walks the next bytes of a connection's stream by its headers alone (any split). */
static void floor_walk(struct walk *c, uint8_t *buf, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (c->remaining) {
      uint64_t take = c->remaining < n - i ? c->remaining : n - i;
      i += take;
      c->remaining -= take;
      if (!c->remaining) g_counters.frames++;
      continue;
    }
    if (c->have == 0 && g_proto == STANDARD && !g_sink) buf[i] |= 0x80;
    c->hdr[c->have++] = buf[i++];
    uint64_t len;
    if (g_proto == STANDARD) {
      if (c->have < 4) continue;
      len = floor_le(c->hdr + 2, 2);
      if (len == 0xFFFF) {
        if (c->have < 8) continue;
        len = floor_le(c->hdr + 4, 4);
      }
    } else {
      if (c->have < g_width) continue;
      len = floor_le(c->hdr, g_width);
    }
    c->have = 0;
    g_counters.bytes += len;
    c->remaining = len;
    if (!len) g_counters.frames++;
  }
}

static void floor_print_counters(void) {
  printf("{\"connections\": %llu, \"frames\": %llu, \"bytes\": %llu, \"protocol_errors\": 0, \"reads\": %llu, "
         "\"read_bytes\": %llu}\n", (unsigned long long)g_counters.connections, (unsigned long long)g_counters.frames,
         (unsigned long long)g_counters.bytes, (unsigned long long)g_counters.reads,
         (unsigned long long)g_counters.read_bytes);
  fflush(stdout);
}

#endif
