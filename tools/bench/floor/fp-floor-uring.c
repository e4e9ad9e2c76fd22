/* fp-floor-uring: the floor of a loopback echo over io_uring (tools/bench, issue 28).
 *
 *   fp-floor-uring (--codec JSON | --protocol NAME) --listen HOST:PORT [--sink] [--stats] [--threads N]
 *
 * fp-floor-epoll's echo (same header walk, floor_common.h; same rewriters, floor_rewrite.h) with
 * io_uring doing the system calls: one multishot accept, one multishot receive per connection into a
 * ring of provided buffers (registered with the kernel once, handed back after each send), and the
 * send of each received buffer straight from it, one send in flight per connection (later buffers
 * queue behind it, so replies keep their order). rpc and websocket, whose replies are not made in
 * place, write each buffer's replies into an output buffer of its own (one per provided buffer,
 * reused), sent in its place; the provided buffer is held until that send is done, so a peer that does
 * not read still runs the ring dry and stops being read. One thread, one ring; counters on SIGTERM in
 * fp-server's format. liburing from Debian (liburing-dev 2.3: io_uring_register_buf_ring,
 * io_uring_prep_recv_multishot).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "floor_rewrite.h"

#define NBUF 1024   /* provided buffers (a power of two) */
#define BUFSZ 16384 /* each */
#define BGID 7

enum op { OP_ACCEPT = 1, OP_RECV, OP_SEND, OP_SIGNAL };

struct pend {  /* a received buffer waiting for its send */
  unsigned bid, len, off;
};

struct uconn {
  struct walk w;
  struct rw r;      /* rpc, websocket */
  int fd;
  int closing;      /* the stream is over (websocket's close answered): ends once its replies are sent */
  int sending;      /* a send is in flight */
  int receiving;    /* the multishot receive is armed (its last completion has not come) */
  int eof;          /* the peer closed or a send failed: freed once nothing is in flight */
  struct uconn *next_starved;  /* waiting for a buffer (ENOBUFS) */
  int starved;
  struct pend q[NBUF];
  unsigned qh, qn;  /* queue head and length */
};

static struct uconn *g_starved;  /* connections whose receive ran out of buffers */
static int g_given_back;

static struct io_uring ring;
static struct io_uring_buf_ring *br;
static uint8_t *bufs;
static struct outbuf g_outs[NBUF]; /* rpc, websocket: the replies to provided buffer i */
static int g_sfd;

static uint64_t tag(enum op op, struct uconn *c) { return ((uint64_t)(uintptr_t)c) | (uint64_t)op; }

static struct io_uring_sqe *sqe(void) {
  struct io_uring_sqe *s = io_uring_get_sqe(&ring);
  if (!s) {
    io_uring_submit(&ring);
    s = io_uring_get_sqe(&ring);
  }
  if (!s) floor_die("io_uring_get_sqe");
  return s;
}

static void give_back(unsigned bid) {
  io_uring_buf_ring_add(br, bufs + (size_t)bid * BUFSZ, BUFSZ, (unsigned short)bid, io_uring_buf_ring_mask(NBUF), 0);
  io_uring_buf_ring_advance(br, 1);
  g_given_back = 1;
}

static void arm_recv(struct uconn *c) {
  c->receiving = 1;
  struct io_uring_sqe *s = sqe();
  io_uring_prep_recv_multishot(s, c->fd, NULL, 0, 0);
  s->flags |= IOSQE_BUFFER_SELECT;
  s->buf_group = BGID;
  io_uring_sqe_set_data64(s, tag(OP_RECV, c));
}

static void send_head(struct uconn *c) {
  struct pend *p = &c->q[c->qh];
  struct io_uring_sqe *s = sqe();
  const uint8_t *from = FLOOR_REWRITES ? g_outs[p->bid].p : bufs + (size_t)p->bid * BUFSZ;
  io_uring_prep_send(s, c->fd, from + p->off, p->len - p->off, MSG_NOSIGNAL);
  io_uring_sqe_set_data64(s, tag(OP_SEND, c));
  c->sending = 1;
}

/* Frees a connection once nothing of it is in flight (a completion may still name it before). */
static void finish(struct uconn *c) {
  if (c->sending || c->receiving || c->starved) {
    shutdown(c->fd, SHUT_RDWR);  /* ends the armed receive: its last completion comes back here */
    return;
  }
  while (c->qn) {
    give_back(c->q[c->qh].bid);
    c->qh = (c->qh + 1) % NBUF;
    c->qn--;
  }
  close(c->fd);
  rw_free(&c->r);
  free(c);
}

static void on_recv(struct uconn *c, int res, unsigned flags) {
  if (!(flags & IORING_CQE_F_MORE)) c->receiving = 0;
  if (res <= 0) {
    if (res == -ENOBUFS && !c->eof) { /* every buffer is queued for sending: receive again once one is back */
      if (!c->receiving && !c->starved) {
        c->starved = 1;
        c->next_starved = g_starved;
        g_starved = c;
      }
      return;
    }
    c->eof = 1;
    if (!c->sending && !c->receiving) finish(c);
    return;
  }
  unsigned bid = flags >> IORING_CQE_BUFFER_SHIFT;
  uint8_t *b = bufs + (size_t)bid * BUFSZ;
  g_counters.reads++;
  g_counters.read_bytes += (uint64_t)res;
  unsigned len = (unsigned)res; /* what goes back, 0 for nothing */
  if (c->closing) {
    len = 0; /* nothing is read after the close (WS-CLOSE-4) */
  } else if (!FLOOR_REWRITES) {
    floor_walk(&c->w, b, (size_t)res);
    if (g_sink) len = 0;
  } else {
    struct outbuf *o = &g_outs[bid];
    o->len = 0;
    rw_feed(&c->r, b, (size_t)res, o); /* with --sink: websocket's handshake, pongs, close only */
    len = (unsigned)o->len;
    if (rw_closed(&c->r)) c->closing = 1;
  }
  if (!len) {
    give_back(bid);
  } else {
    c->q[(c->qh + c->qn) % NBUF] = (struct pend){bid, len, 0};
    c->qn++;
    if (!c->sending) send_head(c);
  }
  if (c->closing && !c->sending) { /* nothing left to send: end it now */
    c->eof = 1;
    finish(c);
    return;
  }
  if (!c->receiving && !c->eof) arm_recv(c);
}

static void on_send(struct uconn *c, int res) {
  c->sending = 0;
  if (res < 0) { /* the peer is gone: what is queued goes nowhere */
    c->eof = 1;
    finish(c);
    return;
  }
  struct pend *p = &c->q[c->qh];
  p->off += (unsigned)res;
  if (p->off >= p->len) {
    give_back(p->bid);
    c->qh = (c->qh + 1) % NBUF;
    c->qn--;
  }
  if (c->qn) { /* the replies queued go out even after the peer's end of stream, as the echo owes them */
    send_head(c);
    return;
  }
  if (c->closing) c->eof = 1; /* the last reply (websocket's close) is sent */
  if (c->eof) finish(c);
}

/* After a batch of completions: the starved connections receive again if buffers came back. */
static void feed_starved(void) {
  if (!g_given_back) return;
  g_given_back = 0;
  while (g_starved) {
    struct uconn *c = g_starved;
    g_starved = c->next_starved;
    c->starved = 0;
    if (c->eof) finish(c);
    else arm_recv(c);
  }
}

int main(int argc, char **argv) {
  int ls = floor_setup(argc, argv, "fp-floor-uring");
  g_sfd = floor_stop_signals();

  struct io_uring_params params = {0};
  params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN;
  int e = io_uring_queue_init_params(4096, &ring, &params);
  if (e < 0) {
    fprintf(stderr, "fp-floor-uring: io_uring_queue_init: %s\n", strerror(-e));
    return 3;
  }
  size_t ring_bytes = NBUF * sizeof(struct io_uring_buf);
  br = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  bufs = malloc((size_t)NBUF * BUFSZ);
  if (br == MAP_FAILED || !bufs) floor_die("buffers");
  io_uring_buf_ring_init(br);
  struct io_uring_buf_reg reg = {.ring_addr = (uint64_t)(uintptr_t)br, .ring_entries = NBUF, .bgid = BGID};
  if ((e = io_uring_register_buf_ring(&ring, &reg, 0)) < 0) {
    fprintf(stderr, "fp-floor-uring: io_uring_register_buf_ring: %s\n", strerror(-e));
    return 3;
  }
  for (unsigned i = 0; i < NBUF; i++)
    io_uring_buf_ring_add(br, bufs + (size_t)i * BUFSZ, BUFSZ, (unsigned short)i, io_uring_buf_ring_mask(NBUF), (int)i);
  io_uring_buf_ring_advance(br, NBUF);

  struct io_uring_sqe *s = sqe();
  io_uring_prep_multishot_accept(s, ls, NULL, NULL, SOCK_CLOEXEC);
  io_uring_sqe_set_data64(s, OP_ACCEPT);
  static uint64_t sigbuf[16];
  s = sqe();
  io_uring_prep_read(s, g_sfd, sigbuf, sizeof sigbuf, 0);
  io_uring_sqe_set_data64(s, OP_SIGNAL);

  int one = 1;
  for (;;) {
    io_uring_submit_and_wait(&ring, 1);
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      seen++;
      uint64_t d = cqe->user_data;
      enum op op = (enum op)(d & 7);
      struct uconn *c = (struct uconn *)(uintptr_t)(d & ~(uint64_t)7);
      if (op == OP_SIGNAL) {
        floor_print_counters();
        return 0;
      } else if (op == OP_ACCEPT) {
        if (cqe->res >= 0) {
          setsockopt(cqe->res, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          struct uconn *n = calloc(1, sizeof *n);
          if (!n) floor_die("calloc");
          n->fd = cqe->res;
          g_counters.connections++;
          arm_recv(n);
        }
        if (!(cqe->flags & IORING_CQE_F_MORE)) {
          s = sqe();
          io_uring_prep_multishot_accept(s, ls, NULL, NULL, SOCK_CLOEXEC);
          io_uring_sqe_set_data64(s, OP_ACCEPT);
        }
      } else if (op == OP_RECV) {
        on_recv(c, cqe->res, cqe->flags);
      } else if (op == OP_SEND) {
        on_send(c, cqe->res);
      }
    }
    io_uring_cq_advance(&ring, seen);
    feed_starved();
  }
}
