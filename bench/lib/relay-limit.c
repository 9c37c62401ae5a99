/*
 * The limit for a chat server's relay hop (issue #33): the least a server can do to pass a
 * message from one client to another over loopback TCP. No XML, no parsing, no routing: two
 * accepted sockets, one epoll loop, every byte read from one written to the other.
 *
 *   relay-limit PORT ROUNDS SIZE [RELAYS [shared]]
 *
 * Two client threads joined through RELAYS relays in a chain (default 1), each relay a
 * thread of its own with two sockets and one epoll loop, every link a loopback TCP
 * connection (the first made through a listener on 127.0.0.1:PORT, the others on
 * ephemeral ports). Client 1 sends SIZE bytes, the chain passes them to client 2, which
 * answers with SIZE bytes, passed back: with one relay a round trip is two relay hops and
 * four socket hops, like one round of `wirebench run --protocol xmpp --workload pingpong`;
 * with three, like the same through a web gateway on each side of the server (client ->
 * gateway -> server -> gateway -> client). Prints "relay-limit p50 X us p99 Y us rounds N"
 * from client 1's clock. With `shared` (RELAYS >= 3), the first and the last relay are one
 * thread with one epoll loop, as one gateway serving both clients' sessions is.
 *
 * Built by bench/xmpp-builtin.sh with `cc -O2 -pthread`; no dependency beyond libc.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port, rounds, size;

static void die(const char *what) {
    perror(what);
    exit(1);
}

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* A connected loopback TCP pair, through a listener on `at` (0: an ephemeral port). */
static void tcp_pair(int at, int *client, int *server) {
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (l < 0) die("socket");
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(at)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
    if (listen(l, 1) < 0) die("listen");
    if (getsockname(l, (struct sockaddr *)&a, &len) < 0) die("getsockname");
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
    int s = accept(l, NULL, NULL);
    if (s < 0) die("accept");
    close(l);
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *client = c;
    *server = s;
}

static void read_full(int s, char *buf, int n) {
    while (n > 0) {
        ssize_t r = read(s, buf, n);
        if (r <= 0) die("client read");
        buf += r;
        n -= r;
    }
}

static void write_full(int s, const char *buf, int n) {
    while (n > 0) {
        ssize_t w = write(s, buf, n);
        if (w <= 0) die("client write");
        buf += w;
        n -= w;
    }
}

/* Client 2: answers every message with one of the same size. */
static void *answerer(void *arg) {
    int s = *(int *)arg;
    char *buf = malloc(size);
    for (int i = 0; i < rounds; i++) {
        read_full(s, buf, size);
        write_full(s, buf, size);
    }
    free(buf);
    return NULL;
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Client 1: times each round trip through the relay. */
static void *asker(void *arg) {
    int s = *(int *)arg;
    char *buf = calloc(1, size);
    long long *rtt = malloc(sizeof(long long) * rounds);
    for (int i = 0; i < rounds; i++) {
        long long t0 = now_ns();
        write_full(s, buf, size);
        read_full(s, buf, size);
        rtt[i] = now_ns() - t0;
    }
    qsort(rtt, rounds, sizeof *rtt, cmp);
    printf("relay-limit p50 %.1f us p99 %.1f us rounds %d\n", rtt[rounds / 2] / 1e3,
           rtt[(int)(rounds * 0.99)] / 1e3, rounds);
    free(rtt);
    free(buf);
    return NULL;
}

/* A relay thread: level-triggered epoll, one read and one write per readiness, for one
 * pair of sockets or, a gateway serving both ends of a chain, two. */
struct relay {
    int pairs, a[2], b[2];
};

static void *relay(void *arg) {
    struct relay *r = arg;
    int ep = epoll_create1(0);
    if (ep < 0) die("epoll_create1");
    for (int p = 0; p < r->pairs; p++) {
        struct epoll_event ev = {.events = EPOLLIN};
        ev.data.u64 = (unsigned)r->a[p] | (unsigned long long)(unsigned)r->b[p] << 32;
        epoll_ctl(ep, EPOLL_CTL_ADD, r->a[p], &ev);
        ev.data.u64 = (unsigned)r->b[p] | (unsigned long long)(unsigned)r->a[p] << 32;
        epoll_ctl(ep, EPOLL_CTL_ADD, r->b[p], &ev);
    }
    char buf[65536];
    long long left = 2LL * rounds * size * r->pairs;
    while (left > 0) {
        struct epoll_event got[4];
        int n = epoll_wait(ep, got, 4, -1);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        for (int i = 0; i < n; i++) {
            int from = (int)(got[i].data.u64 & 0xffffffffu), to = (int)(got[i].data.u64 >> 32);
            ssize_t got_bytes = read(from, buf, sizeof buf);
            if (got_bytes <= 0) die("relay read");
            write_full(to, buf, (int)got_bytes);
            left -= got_bytes;
        }
    }
    close(ep);
    return NULL;
}

int main(int argc, char **argv) {
    int shared = argc == 6 && strcmp(argv[5], "shared") == 0;
    if (argc != 4 && argc != 5 && !shared) {
        fprintf(stderr, "usage: relay-limit PORT ROUNDS SIZE [RELAYS [shared]]\n");
        return 2;
    }
    port = atoi(argv[1]);
    rounds = atoi(argv[2]);
    size = atoi(argv[3]);
    int relays = argc >= 5 ? atoi(argv[4]) : 1;
    if (port <= 0 || rounds <= 0 || size <= 0 || relays < 1 || relays > 8 ||
        (shared && relays < 3)) {
        fprintf(stderr, "relay-limit: PORT, ROUNDS and SIZE must be positive, RELAYS 1 to 8 "
                        "(at least 3 with shared)\n");
        return 2;
    }
    /* Links 0..RELAYS: client 1 holds link 0's client end, relay k joins link k's server
     * end to link k+1's client end, client 2 holds the last link's server end. With
     * `shared`, the first and the last relay are one thread. */
    int c[9], s[9];
    for (int k = 0; k <= relays; k++) tcp_pair(k == 0 ? port : 0, &c[k], &s[k]);
    struct relay r[8];
    pthread_t rt[8], t1, t2;
    int threads = 0;
    for (int k = 0; k < relays; k++) {
        if (shared && k == relays - 1) {
            r[0].a[1] = s[k];
            r[0].b[1] = c[k + 1];
            r[0].pairs = 2;
            continue;
        }
        r[threads] = (struct relay){.pairs = 1, .a = {s[k]}, .b = {c[k + 1]}};
        threads++;
    }
    for (int k = 0; k < threads; k++) pthread_create(&rt[k], NULL, relay, &r[k]);
    pthread_create(&t2, NULL, answerer, &s[relays]);
    pthread_create(&t1, NULL, asker, &c[0]);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    for (int k = 0; k < threads; k++) pthread_join(rt[k], NULL);
    return 0;
}
