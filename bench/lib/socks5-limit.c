/*
 * The limit for a SOCKS5 proxy's cost per connection (issue #33), and the one client and
 * origin bench/socks5.sh drives every proxy with, so that each proxy's CPU per connection
 * is measured under the same load.
 *
 *   socks5-limit proxy PORT                          a minimal SOCKS5 proxy (RFC 1928)
 *   socks5-limit origin PORT                         an echo server
 *   socks5-limit client PROXY ORIGIN N CONC [SIZE]   N connections through a proxy
 *
 * proxy: one thread, one epoll loop; no authentication, CONNECT to an IPv4 loopback
 * address only (anything else is refused with reply 2, "not allowed by ruleset"); the
 * relay moves bytes with splice(2) through a pipe per direction, pipes reused from a pool,
 * so no byte is copied through user space. Nothing is parsed beyond what RFC 1928 needs.
 * It is what a proxy cannot do with less: accept, two messages in, two out, a
 * non-blocking connect, the relay, two closes.
 *
 * origin: one thread, one epoll loop, echoes every byte until the client closes.
 *
 * client: CONC connections at a time, each: connect to 127.0.0.1:PROXY, the greeting
 * (no authentication), wait for the method choice, CONNECT 127.0.0.1:ORIGIN, wait for
 * the reply, send SIZE bytes (default 64), read their echo, close; N in all, with a
 * 60 s limit. Prints "socks5-limit client N connections in S s: R per s, F failed".
 *
 * Built by bench/socks5.sh with `cc -O2`; no dependency beyond libc.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 256
#define PIPE_BYTES 65536

static void die(const char *what) {
    perror(what);
    exit(1);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static struct sockaddr_in loopback(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int listen_on(int port) {
    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    if (l < 0) die("socket");
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = loopback(port);
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
    if (listen(l, 4096) < 0) die("listen");
    return l;
}

static void watch(int ep, int op, int fd, unsigned events, void *ptr) {
    struct epoll_event ev = {.events = events, .data.ptr = ptr};
    if (epoll_ctl(ep, op, fd, &ev) < 0) die("epoll_ctl");
}

/* ------------------------------------------------------------------ proxy */

enum phase { GREETING, REQUEST, CONNECTING, RELAY };

struct conn;
/* One socket of a proxied connection: the client's (up = 0) or the origin's (up = 1). */
struct end {
    struct conn *c;
    int fd, up;
    int pipe[2];   /* bytes read from this end, waiting to be written to the other */
    size_t queued; /* bytes in that pipe */
    int eof;       /* this end sent FIN and its pipe is empty: the other end was shut */
};
struct conn {
    enum phase phase;
    int dead; /* dropped in this batch of events: freed after it */
    struct end ends[2];
    unsigned char buf[16];
    size_t have;
};

static int pool[1024][2], pooled;

static void take_pipe(int p[2]) {
    if (pooled) {
        pooled--;
        p[0] = pool[pooled][0];
        p[1] = pool[pooled][1];
    } else if (pipe2(p, O_NONBLOCK) < 0) {
        die("pipe2");
    }
}

static void give_pipe(int p[2], size_t queued) {
    if (queued == 0 && pooled < 1024) {
        pool[pooled][0] = p[0];
        pool[pooled][1] = p[1];
        pooled++;
    } else {
        close(p[0]);
        close(p[1]);
    }
}

/* Closes `c`'s sockets; the memory is freed by the caller after the batch of events, which
 * may still name the other end. */
static void drop(struct conn *c) {
    for (int i = 0; i < 2; i++) {
        struct end *e = &c->ends[i];
        if (e->fd >= 0) close(e->fd);
        if (e->pipe[0] >= 0) give_pipe(e->pipe, e->queued);
    }
    c->dead = 1;
}

/* Writes what `from` holds to the other end; 0 when the pipe is empty, 1 when the other
 * end is full (its EPOLLOUT, edge-triggered, calls again), -1 on error. */
static int flush(struct end *from) {
    struct end *to = &from->c->ends[!from->up];
    while (from->queued) {
        ssize_t n = splice(from->pipe[0], NULL, to->fd, NULL, from->queued,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            from->queued -= n;
        } else if (n < 0 && errno == EAGAIN) {
            return 1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* Moves what `e` has read, and what it can read, to the other end. A read shorter than
 * asked for means the socket is drained, as edge-triggered epoll needs, without a read
 * that fails with EAGAIN. Returns -1 on error. */
static int relay(struct end *e) {
    struct end *to = &e->c->ends[!e->up];
    for (;;) {
        int r = flush(e);
        if (r != 0) return r < 0 ? -1 : 0;
        if (e->eof) return 0;
        ssize_t n = splice(e->fd, NULL, e->pipe[1], NULL, PIPE_BYTES,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            e->queued += n;
            if (n < PIPE_BYTES) return flush(e) < 0 ? -1 : 0;
        } else if (n == 0) {
            e->eof = 1;
            shutdown(to->fd, SHUT_WR);
            return 0;
        } else {
            return errno == EAGAIN ? 0 : -1;
        }
    }
}

static void reply(struct conn *c, unsigned char code) {
    unsigned char r[10] = {5, code, 0, 1, 0, 0, 0, 0, 0, 0};
    if (write(c->ends[0].fd, r, sizeof r) != (ssize_t)sizeof r) { /* the client's problem */
    }
}

/* The handshake's bytes from the client. Returns -1 when the connection is done. */
static int handshake(int ep, struct conn *c) {
    ssize_t n = read(c->ends[0].fd, c->buf + c->have, sizeof c->buf - c->have);
    if (n <= 0) return (n < 0 && errno == EAGAIN) ? 0 : -1;
    c->have += n;
    if (c->phase == GREETING) {
        if (c->have < 2 || c->have < 2u + c->buf[1]) return 0;
        if (c->buf[0] != 5 || memchr(c->buf + 2, 0, c->buf[1]) == NULL) return -1;
        if (write(c->ends[0].fd, "\x05\x00", 2) != 2) return -1;
        size_t used = 2u + c->buf[1];
        memmove(c->buf, c->buf + used, c->have - used);
        c->have -= used;
        c->phase = REQUEST;
    }
    if (c->have < 10) return 0;
    unsigned char *q = c->buf;
    if (q[0] != 5 || q[1] != 1 || q[3] != 1 || q[4] != 127) {
        reply(c, 2);
        return -1;
    }
    struct sockaddr_in to = {.sin_family = AF_INET};
    memcpy(&to.sin_addr, q + 4, 4);
    memcpy(&to.sin_port, q + 8, 2);
    int u = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    if (u < 0) return -1;
    setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->ends[1].fd = u;
    if (connect(u, (struct sockaddr *)&to, sizeof to) < 0 && errno != EINPROGRESS) {
        reply(c, 5);
        return -1;
    }
    c->phase = CONNECTING;
    watch(ep, EPOLL_CTL_ADD, u, EPOLLIN | EPOLLOUT | EPOLLET, &c->ends[1]);
    return 0;
}

/* The origin's socket is writable (or failed): the reply, and the relay from now on. */
static int connected(struct conn *c) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c->ends[1].fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err) {
        reply(c, 5);
        return -1;
    }
    reply(c, 0);
    c->phase = RELAY;
    for (int i = 0; i < 2; i++) take_pipe(c->ends[i].pipe);
    return 0;
}

/* One event for `e`'s connection. Returns -1 when the connection is done. */
static int on_event(int ep, struct end *e, unsigned events) {
    struct conn *c = e->c;
    if (c->phase == GREETING || c->phase == REQUEST) {
        return e->up ? 0 : handshake(ep, c);
    }
    if (c->phase == CONNECTING) {
        if (!e->up || !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return 0;
        if (connected(c) < 0) return -1;
    }
    /* Every socket is edge-triggered for both directions: each event moves both. */
    if (relay(&c->ends[0]) < 0 || relay(&c->ends[1]) < 0) return -1;
    return c->ends[0].eof && c->ends[1].eof && !c->ends[0].queued && !c->ends[1].queued ? -1 : 0;
}

static void proxy(int port) {
    int l = listen_on(port), ep = epoll_create1(0);
    watch(ep, EPOLL_CTL_ADD, l, EPOLLIN, NULL);
    struct epoll_event evs[MAX_EVENTS];
    struct conn *dropped[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(ep, evs, MAX_EVENTS, -1), ndropped = 0;
        for (int i = 0; i < n; i++) {
            struct end *e = evs[i].data.ptr;
            if (e == NULL) {
                int s;
                while ((s = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    int one = 1;
                    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *c = calloc(1, sizeof *c);
                    if (c == NULL) die("calloc");
                    for (int k = 0; k < 2; k++) {
                        c->ends[k] = (struct end){.c = c, .fd = -1, .up = k, .pipe = {-1, -1}};
                    }
                    c->ends[0].fd = s;
                    watch(ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLOUT | EPOLLET, &c->ends[0]);
                }
                continue;
            }
            /* A connection dropped earlier in this batch may have an event for its other end. */
            if (e->c->dead) continue;
            if (on_event(ep, e, evs[i].events) < 0) { /* close() leaves the epoll set too */
                drop(e->c);
                dropped[ndropped++] = e->c;
            }
        }
        for (int i = 0; i < ndropped; i++) free(dropped[i]);
    }
}

/* ------------------------------------------------------------------ origin */

static void origin(int port) {
    int l = listen_on(port), ep = epoll_create1(0);
    watch(ep, EPOLL_CTL_ADD, l, EPOLLIN, NULL);
    struct epoll_event evs[MAX_EVENTS];
    char buf[65536];
    for (;;) {
        int n = epoll_wait(ep, evs, MAX_EVENTS, -1);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) {
                int s;
                while ((s = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    int one = 1;
                    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    watch(ep, EPOLL_CTL_ADD, s, EPOLLIN, (void *)(long)(s + 1));
                }
                continue;
            }
            int s = (int)(long)evs[i].data.ptr - 1;
            ssize_t r = read(s, buf, sizeof buf);
            /* Echoes are small here; a short write would only shorten the echo. */
            if (r > 0 && write(s, buf, r) == r) continue;
            if (r < 0 && errno == EAGAIN) continue;
            close(s);
        }
    }
}

/* ------------------------------------------------------------------ client */

struct slot {
    int fd, step;
    size_t got;
    unsigned char in[256];
};

static int proxy_port, origin_port, size;

/* Starts a connection in `s`. */
static int start(int ep, struct slot *s) {
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (s->fd < 0) die("socket");
    int one = 1;
    setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = loopback(proxy_port);
    if (connect(s->fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) return -1;
    s->step = 0;
    s->got = 0;
    watch(ep, EPOLL_CTL_ADD, s->fd, EPOLLOUT, s);
    return 0;
}

/* Advances `s`; 1 when its echo is complete, 0 to wait, -1 on failure. */
static int step(int ep, struct slot *s) {
    static const size_t want[] = {0, 2, 10, 0};
    if (s->step == 0) { /* connected: the greeting */
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err || write(s->fd, "\x05\x01\x00", 3) != 3) return -1;
        watch(ep, EPOLL_CTL_MOD, s->fd, EPOLLIN, s);
        s->step = 1;
        return 0;
    }
    size_t need = s->step == 3 ? (size_t)size : want[s->step];
    /* The replies are read where they are checked; the echo only counted. */
    static unsigned char sink[65536];
    unsigned char *into = s->step == 3 ? sink : s->in + s->got;
    ssize_t n = read(s->fd, into, need - s->got);
    if (n < 0 && errno == EAGAIN) return 0;
    if (n <= 0) return -1;
    s->got += n;
    if (s->got < need) return 0;
    s->got = 0;
    if (s->step == 1) {
        if (s->in[0] != 5 || s->in[1] != 0) return -1;
        unsigned char req[10] = {5, 1, 0, 1, 127, 0, 0, 1, origin_port >> 8, origin_port & 255};
        if (write(s->fd, req, sizeof req) != (ssize_t)sizeof req) return -1;
        s->step = 2;
        return 0;
    }
    if (s->step == 2) {
        if (s->in[1] != 0) return -1;
        static char data[65536];
        if (write(s->fd, data, size) != size) return -1;
        s->step = 3;
        return 0;
    }
    return 1;
}

static void client(int n, int conc) {
    int ep = epoll_create1(0), started = 0, done = 0, failed = 0;
    struct slot *slots = calloc(conc, sizeof *slots);
    if (slots == NULL || ep < 0) die("client set-up");
    double t0 = now_s();
    for (int i = 0; i < conc && started < n; i++, started++) {
        if (start(ep, &slots[i]) < 0) failed++;
    }
    struct epoll_event evs[MAX_EVENTS];
    while (done + failed < n && now_s() - t0 < 60) {
        int k = epoll_wait(ep, evs, MAX_EVENTS, 1000);
        for (int i = 0; i < k; i++) {
            struct slot *s = evs[i].data.ptr;
            int r = step(ep, s);
            if (r == 0) continue;
            close(s->fd);
            if (r > 0) done++;
            else failed++;
            if (started < n) {
                started++;
                if (start(ep, s) < 0) failed++;
            }
        }
    }
    double secs = now_s() - t0;
    printf("socks5-limit client %d connections in %.3f s: %.0f per s, %d failed\n", done, secs,
           done / secs, n - done);
    exit(done == n ? 0 : 1);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc == 3 && strcmp(argv[1], "proxy") == 0) proxy(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "origin") == 0) origin(atoi(argv[2]));
    if ((argc == 6 || argc == 7) && strcmp(argv[1], "client") == 0) {
        proxy_port = atoi(argv[2]);
        origin_port = atoi(argv[3]);
        size = argc == 7 ? atoi(argv[6]) : 64;
        int n = atoi(argv[4]), conc = atoi(argv[5]);
        if (proxy_port <= 0 || origin_port <= 0 || n <= 0 || conc <= 0 || size <= 0 ||
            size > 65536) {
            fprintf(stderr, "socks5-limit: ports, N, CONC and SIZE (1 to 65536) must be positive\n");
            return 2;
        }
        client(n, conc);
    }
    fprintf(stderr,
            "usage: socks5-limit proxy PORT | origin PORT | client PROXY ORIGIN N CONC [SIZE]\n");
    return 2;
}
