/* fp-floor-epoll: the floor of a loopback echo on this kernel (tools/bench, issue 28).
 *
 *   fp-floor-epoll (--codec JSON | --protocol NAME) --listen HOST:PORT [--sink] [--stats] [--threads N]
 *
 * One thread, level-triggered epoll, TCP_NODELAY, one recv() and one send() per wake-up into one
 * reused 64 KiB buffer, and no codec beyond the header walk fp-raw-echo does
 * (reference-impls/rust/codec/src/protocol/raw_echo.rs): `standard` sets bit 7 of each frame's flag
 * byte in place (request 0x01 -> reply 0x81), `length-field` (offset 0, a little-endian field of 1, 2
 * or 4 bytes) echoes the bytes as they are. It assumes the well-formed request streams of the load
 * clients and validates nothing: it is the cheapest a message can be, not a server. A send() the
 * socket does not take whole is kept per connection and the connection is not read until it is gone.
 * Counters in fp-server's format (plus reads, read_bytes) go to stdout on SIGTERM. --stats and
 * --threads are accepted for the benchmark's command line and ignored (one thread).
 * The codec JSON is read with cJSON (Debian libcjson-dev).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

enum proto { STANDARD, LENGTH_FIELD };

struct conn {
  int fd;
  uint8_t hdr[8];
  unsigned have;
  uint64_t remaining;
  uint8_t *pending;  /* what send() did not take, and how much of it is left */
  size_t pending_len, pending_off;
};

static enum proto g_proto;
static unsigned g_width = 2; /* length-field: the field's bytes */
static int g_sink;
static uint64_t g_conns, g_frames, g_bytes, g_reads, g_read_bytes;

static void die(const char *what) {
  perror(what);
  exit(2);
}

static void usage(void) {
  fprintf(stderr, "usage: fp-floor-epoll (--codec JSON | --protocol NAME) --listen HOST:PORT [--sink]\n");
  exit(2);
}

/* The codec JSON: {"protocol": "standard"} or {"protocol": "length-field", "length_field": {"offset": 0,
 * "size": 1|2|4}}; any other profile is refused (exit 2), as fp-raw-echo refuses it. */
static void parse_codec(const char *json) {
  cJSON *root = cJSON_Parse(json);
  if (!root) usage();
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "protocol");
  if (!cJSON_IsString(p)) usage();
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
      fprintf(stderr, "fp-floor-epoll: length-field offset 0, size 1, 2 or 4 only\n");
      exit(2);
    }
    g_width = (unsigned)size;
  } else {
    fprintf(stderr, "fp-floor-epoll: no header walk for %s (standard, length-field)\n", p->valuestring);
    exit(2);
  }
  cJSON_Delete(root);
}

static uint32_t le(const uint8_t *b, unsigned n) {
  uint32_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint32_t)b[i] << (8 * i);
  return v;
}

/* Walks the next bytes of a connection's stream by its headers alone (any split), rewriting the
 * first byte of each standard frame. */
static void walk(struct conn *c, uint8_t *buf, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (c->remaining) {
      uint64_t take = c->remaining < n - i ? c->remaining : n - i;
      i += take;
      c->remaining -= take;
      if (!c->remaining) g_frames++;
      continue;
    }
    if (c->have == 0 && g_proto == STANDARD && !g_sink) buf[i] |= 0x80;
    c->hdr[c->have++] = buf[i++];
    uint64_t len;
    if (g_proto == STANDARD) {
      if (c->have < 4) continue;
      len = le(c->hdr + 2, 2);
      if (len == 0xFFFF) {
        if (c->have < 8) continue;
        len = le(c->hdr + 4, 4);
      }
    } else {
      if (c->have < g_width) continue;
      len = le(c->hdr, g_width);
    }
    c->have = 0;
    g_bytes += len;
    c->remaining = len;
    if (!len) g_frames++;
  }
}

static void close_conn(int ep, struct conn *c) {
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  free(c->pending);
  free(c);
}

/* Sends what is pending; 1 when all of it went, 0 when the socket is full, -1 on an error. */
static int flush_pending(struct conn *c) {
  while (c->pending_off < c->pending_len) {
    ssize_t w = send(c->fd, c->pending + c->pending_off, c->pending_len - c->pending_off, MSG_NOSIGNAL);
    if (w > 0) {
      c->pending_off += (size_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return 0;
    } else {
      return -1;
    }
  }
  c->pending_len = c->pending_off = 0;
  return 1;
}

static void want(int ep, struct conn *c, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = c};
  epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void on_readable(int ep, struct conn *c, uint8_t *buf, size_t cap) {
  ssize_t n = recv(c->fd, buf, cap, 0);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    close_conn(ep, c);
    return;
  }
  if (n < 0) return;
  g_reads++;
  g_read_bytes += (uint64_t)n;
  walk(c, buf, (size_t)n);
  if (g_sink) return;
  ssize_t w = send(c->fd, buf, (size_t)n, MSG_NOSIGNAL);
  if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    close_conn(ep, c);
    return;
  }
  size_t sent = w > 0 ? (size_t)w : 0;
  if (sent < (size_t)n) { /* keep the rest; read no more until it is sent */
    c->pending = realloc(c->pending, (size_t)n - sent);
    if (!c->pending) die("realloc");
    memcpy(c->pending, buf + sent, (size_t)n - sent);
    c->pending_len = (size_t)n - sent;
    c->pending_off = 0;
    want(ep, c, EPOLLOUT);
  }
}

int main(int argc, char **argv) {
  const char *listen_at = NULL, *codec = NULL;
  static char codec_buf[64];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--codec") && i + 1 < argc) codec = argv[++i];
    else if (!strcmp(argv[i], "--protocol") && i + 1 < argc) {
      snprintf(codec_buf, sizeof codec_buf, "{\"protocol\":\"%s\"}", argv[++i]);
      codec = codec_buf;
    } else if (!strcmp(argv[i], "--listen") && i + 1 < argc) listen_at = argv[++i];
    else if (!strcmp(argv[i], "--sink")) g_sink = 1;
    else if (!strcmp(argv[i], "--stats")) continue;
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) i++;
    else usage();
  }
  if (!codec || !listen_at) usage();
  parse_codec(codec);
  char host[64];
  const char *colon = strrchr(listen_at, ':');
  if (!colon || (size_t)(colon - listen_at) >= sizeof host) usage();
  memcpy(host, listen_at, (size_t)(colon - listen_at));
  host[colon - listen_at] = 0;
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
    fprintf(stderr, "fp-floor-epoll: IPv4 HOST:PORT only\n");
    return 2;
  }
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ls < 0 || bind(ls, (struct sockaddr *)&addr, sizeof addr) || listen(ls, 1024)) die("listen");
  socklen_t al = sizeof addr;
  getsockname(ls, (struct sockaddr *)&addr, &al);
  printf("LISTENING %s:%u\n", host, ntohs(addr.sin_port));
  fflush(stdout);

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  signal(SIGPIPE, SIG_IGN);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (sfd < 0 || ep < 0) die("epoll");
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ls};
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  ev.data.ptr = &sfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);

  static uint8_t buf[64 * 1024];
  struct epoll_event evs[256];
  for (;;) {
    int k = epoll_wait(ep, evs, 256, -1);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) die("epoll_wait");
    for (int i = 0; i < k; i++) {
      void *tag = evs[i].data.ptr;
      if (tag == &sfd) {
        printf("{\"connections\": %llu, \"frames\": %llu, \"bytes\": %llu, \"protocol_errors\": 0, "
               "\"reads\": %llu, \"read_bytes\": %llu}\n", (unsigned long long)g_conns, (unsigned long long)g_frames,
               (unsigned long long)g_bytes, (unsigned long long)g_reads, (unsigned long long)g_read_bytes);
        fflush(stdout);
        return 0;
      }
      if (tag == &ls) {
        int fd;
        while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          struct conn *c = calloc(1, sizeof *c);
          if (!c) die("calloc");
          c->fd = fd;
          struct epoll_event cev = {.events = EPOLLIN, .data.ptr = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
          g_conns++;
        }
        continue;
      }
      struct conn *c = tag;
      if (c->pending_len) {
        int r = flush_pending(c);
        if (r < 0) close_conn(ep, c);
        else if (r > 0) want(ep, c, EPOLLIN);
        continue;
      }
      on_readable(ep, c, buf, sizeof buf);
    }
  }
}
