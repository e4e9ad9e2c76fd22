/* malloc_count.so: LD_PRELOAD allocation counter for server processes under load (tools/bench).
 *
 * Counts every malloc/calloc/realloc/memalign family call of the process (Rust's System
 * allocator and C++'s default operator new both end in malloc), forwarding to glibc's
 * __libc_* functions, so no dlsym bootstrapping is needed. On SIGUSR2 it appends one line
 * "allocs bytes" to the file named by $FPB_MALLOC_OUT (async-signal-safe: write(2) only), so the
 * runner can take a snapshot before and after a measured run and divide by the frames served.
 *
 * Build: gcc -O2 -shared -fPIC -o malloc_count.so malloc_count.c
 * Not meaningful for managed runtimes (Mono's GC heap does not use malloc per object).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static unsigned long long n_allocs, n_bytes;

#define COUNT(sz) do { __atomic_fetch_add(&n_allocs, 1, __ATOMIC_RELAXED); \
                       __atomic_fetch_add(&n_bytes, (unsigned long long)(sz), __ATOMIC_RELAXED); } while (0)

void *malloc(size_t n) { COUNT(n); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { COUNT(a * b); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { COUNT(n); return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t al, size_t n) { COUNT(n); return __libc_memalign(al, n); }
void *aligned_alloc(size_t al, size_t n) { COUNT(n); return __libc_memalign(al, n); }
int posix_memalign(void **out, size_t al, size_t n) {
    COUNT(n);
    void *p = __libc_memalign(al, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}

static char path[512];

static int fmt_u64(char *dst, unsigned long long v) {
    char tmp[24];
    int n = 0, i;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    for (i = 0; i < n; i++) dst[i] = tmp[n - 1 - i];
    return n;
}

static void snapshot(int sig) {
    (void)sig;
    char line[64];
    int n = 0;
    if (!path[0]) return;
    n += fmt_u64(line + n, __atomic_load_n(&n_allocs, __ATOMIC_RELAXED));
    line[n++] = ' ';
    n += fmt_u64(line + n, __atomic_load_n(&n_bytes, __ATOMIC_RELAXED));
    line[n++] = '\n';
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, line, (size_t)n);
        (void)w;
        close(fd);
    }
}

__attribute__((constructor)) static void init(void) {
    const char *p = getenv("FPB_MALLOC_OUT");
    if (!p || strlen(p) >= sizeof path) return;
    memcpy(path, p, strlen(p) + 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = snapshot;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
}
