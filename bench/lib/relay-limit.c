/*
 * The limit for a chat server's relay hop (issue #33): the least a server can do to pass a
 * message from one client to another over loopback TCP. No XML, no parsing, no routing: two
 * accepted sockets, one epoll loop, every byte read from one written to the other.
 *
 *   relay-limit PORT ROUNDS SIZE
 *
 * Listens on 127.0.0.1:PORT, then starts two client threads that connect to it. Client 1
 * sends SIZE bytes, the relay passes them to client 2, which answers with SIZE bytes, which
 * the relay passes back: one round trip is two relay hops and four socket hops, like one
 * round of `wirebench run --protocol xmpp --workload pingpong`. Prints
 * "relay-limit p50 X us p99 Y us rounds N" from client 1's clock.
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

static int dial(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return s;
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

/* The relay: level-triggered epoll, one read and one write per readiness. */
static void relay(int a, int b) {
    int ep = epoll_create1(0);
    if (ep < 0) die("epoll_create1");
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.fd = a;
    epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev);
    ev.data.fd = b;
    epoll_ctl(ep, EPOLL_CTL_ADD, b, &ev);
    char buf[65536];
    long long left = 2LL * rounds * size;
    while (left > 0) {
        struct epoll_event got[2];
        int n = epoll_wait(ep, got, 2, -1);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        for (int i = 0; i < n; i++) {
            int from = got[i].data.fd, to = from == a ? b : a;
            ssize_t r = read(from, buf, sizeof buf);
            if (r <= 0) die("relay read");
            write_full(to, buf, (int)r);
            left -= r;
        }
    }
    close(ep);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: relay-limit PORT ROUNDS SIZE\n");
        return 2;
    }
    port = atoi(argv[1]);
    rounds = atoi(argv[2]);
    size = atoi(argv[3]);
    if (port <= 0 || rounds <= 0 || size <= 0) {
        fprintf(stderr, "relay-limit: PORT, ROUNDS and SIZE must be positive\n");
        return 2;
    }
    int l = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(l, (struct sockaddr *)&addr, sizeof addr) < 0) die("bind");
    if (listen(l, 4) < 0) die("listen");
    int c1 = dial(), c2 = dial();
    int s1 = accept(l, NULL, NULL), s2 = accept(l, NULL, NULL);
    if (s1 < 0 || s2 < 0) die("accept");
    setsockopt(s1, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(s2, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t t1, t2;
    pthread_create(&t2, NULL, answerer, &c2);
    pthread_create(&t1, NULL, asker, &c1);
    relay(s1, s2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    return 0;
}
