/* fp-floor-epoll: the floor of a loopback echo on this kernel (tools/bench, issue 28).
 *
 *   fp-floor-epoll (--codec JSON | --protocol NAME) --listen HOST:PORT [--sink] [--stats] [--threads N]
 *
 * One thread, level-triggered epoll, TCP_NODELAY, one recv() and one send() per wake-up into one
 * reused 64 KiB buffer, and no codec beyond what fp-raw-echo does from the headers
 * (reference-impls/rust/codec/src/protocol/raw_echo.rs): `standard` sets bit 7 of each frame's flag
 * byte in place (request 0x01 -> reply 0x81), `length-field` (offset 0, a little-endian field of 1, 2
 * or 4 bytes) echoes the bytes as they are; `rpc` and `websocket` write their replies into a second
 * reused buffer (floor_rewrite.h). It assumes the well-formed request streams of the load clients and
 * validates nothing: it is the cheapest a message can be, not a server. A send() the socket does not
 * take whole is kept per connection and the connection is not read until it is gone. Counters in
 * fp-server's format (plus reads, read_bytes) go to stdout on SIGTERM. The command line, codec JSON,
 * stop signals, walk and counters: floor_common.h; the rewriters: floor_rewrite.h.
 */
#define _GNU_SOURCE
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

#include "floor_rewrite.h"

struct conn {
  struct walk w;
  struct rw r;       /* rpc, websocket */
  int fd;
  int closing;       /* the stream is over: closed once the pending replies are sent */
  uint8_t *pending;  /* what send() did not take, and how much of it is left */
  size_t pending_len, pending_off;
};

static void close_conn(int ep, struct conn *c) {
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  free(c->pending);
  rw_free(&c->r);
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

/* Sends a read's replies; what the socket does not take is kept and the connection waits for
 * EPOLLOUT. 0 when the connection was closed. */
static int reply(int ep, struct conn *c, const uint8_t *b, size_t n) {
  ssize_t w = send(c->fd, b, n, MSG_NOSIGNAL);
  if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    close_conn(ep, c);
    return 0;
  }
  size_t sent = w > 0 ? (size_t)w : 0;
  if (sent < n) { /* keep the rest; read no more until it is sent */
    c->pending = realloc(c->pending, n - sent);
    if (!c->pending) floor_die("realloc");
    memcpy(c->pending, b + sent, n - sent);
    c->pending_len = n - sent;
    c->pending_off = 0;
    want(ep, c, EPOLLOUT);
  }
  return 1;
}

static void on_readable(int ep, struct conn *c, uint8_t *buf, size_t cap, struct outbuf *out) {
  ssize_t n = recv(c->fd, buf, cap, 0);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    close_conn(ep, c);
    return;
  }
  if (n < 0) return;
  g_counters.reads++;
  g_counters.read_bytes += (uint64_t)n;
  if (!FLOOR_REWRITES) {
    floor_walk(&c->w, buf, (size_t)n);
    if (!g_sink) reply(ep, c, buf, (size_t)n);
    return;
  }
  out->len = 0;
  rw_feed(&c->r, buf, (size_t)n, out);
  if (out->len && !reply(ep, c, out->p, out->len)) return; /* with --sink: websocket's handshake, pongs, close */
  if (rw_closed(&c->r)) {
    if (c->pending_len) c->closing = 1;
    else close_conn(ep, c);
  }
}

int main(int argc, char **argv) {
  int ls = floor_setup(argc, argv, "fp-floor-epoll");
  int one = 1;
  int sfd = floor_stop_signals();
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (sfd < 0 || ep < 0) floor_die("epoll");
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ls};
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  ev.data.ptr = &sfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);

  static uint8_t buf[64 * 1024];
  static struct outbuf out; /* rpc, websocket: a read's replies */
  struct epoll_event evs[256];
  for (;;) {
    int k = epoll_wait(ep, evs, 256, -1);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) floor_die("epoll_wait");
    for (int i = 0; i < k; i++) {
      void *tag = evs[i].data.ptr;
      if (tag == &sfd) {
        floor_print_counters();
        return 0;
      }
      if (tag == &ls) {
        int fd;
        while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          struct conn *c = calloc(1, sizeof *c);
          if (!c) floor_die("calloc");
          c->fd = fd;
          struct epoll_event cev = {.events = EPOLLIN, .data.ptr = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
          g_counters.connections++;
        }
        continue;
      }
      struct conn *c = tag;
      if (c->pending_len) {
        int r = flush_pending(c);
        if (r < 0 || (r > 0 && c->closing)) close_conn(ep, c);
        else if (r > 0) want(ep, c, EPOLLIN);
        continue;
      }
      on_readable(ep, c, buf, sizeof buf, &out);
    }
  }
}
