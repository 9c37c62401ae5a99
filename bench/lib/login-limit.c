/*
 * The limit for an XMPP login's CPU (issue #33): the least two programs can spend to make
 * N loopback TCP connections carry the bytes of N XMPP logins. No XML, no SASL, no routing:
 * a client process and a server process, one epoll loop each, exchanging messages of the
 * sizes the built-in server and the load generator exchange for a PLAIN login (measured
 * with strace: stream header, features, auth, success, restart, features, bind, result,
 * roster get, roster, presence), each answered only when the last one has fully arrived,
 * as a login's round trips are.
 *
 *   login-limit PORT SESSIONS [IN_FLIGHT [RATE [SOURCE HOLD]]]
 *
 * The client keeps IN_FLIGHT logins going (default 512) until SESSIONS are done, holding
 * every connection open (as a load test does). With RATE > 0 it instead starts RATE
 * logins a second, evenly spaced, as the load generator's uniform arrivals do (IN_FLIGHT
 * is then ignored): at a paced rate most wake-ups carry one message, which costs the
 * kernel more per login than the batches of a flat-out run. Then both sides print their own CPU time
 * (getrusage, user and system) per login, and the client the logins per second:
 *   "login-limit client user U us sys S us per login, N logins in T s = R/s"
 *   "login-limit server user U us sys S us per login"
 * SESSIONS stays under the open-file limit (20,000 per process here). 127.0.0.1 only.
 *
 * SOURCE and HOLD run it as one of many pairs holding a million connections between them
 * (bench/load.sh's LIMIT_SCALE): the client connects from the loopback address SOURCE (a
 * pair's own, so that no pair's port search sees the others' connections), and after
 * printing both sides keep every connection open for HOLD seconds (0: exit at once), or
 * until the client is killed (the server follows it: PR_SET_PDEATHSIG).
 *
 * Built by bench/load.sh with `cc -O2`; no dependency beyond libc.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Bytes the client sends at each step, and the server's answer (0: none). */
static const int ASK[] = {140, 88, 140, 117, 68, 11};
static const int ANSWER[] = {362, 51, 320, 131, 114, 0};
#define STEPS 6

static char zeros[1024];

static void die(const char *what) {
    perror(what);
    exit(1);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void cpu_per_login(const char *side, long n, const char *tail) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    double user = u.ru_utime.tv_sec * 1e6 + u.ru_utime.tv_usec;
    double sys = u.ru_stime.tv_sec * 1e6 + u.ru_stime.tv_usec;
    printf("login-limit %s user %.1f us sys %.1f us per login%s\n", side, user / n, sys / n, tail);
    fflush(stdout);
}

static void send_all(int fd, int n) {
    while (n > 0) {
        ssize_t w = send(fd, zeros, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        /* Messages this small always fit an empty socket buffer. */
        if (w <= 0) die("send");
        n -= (int)w;
    }
}

/* Per connection: the step it is at and the bytes of it received so far. */
struct conn {
    unsigned char step;
    int got;
};

static void serve(int l, long sessions) {
    struct conn *c = calloc(65536, sizeof *c);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = l};
    epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
    char buf[4096];
    long done = 0;
    struct epoll_event got[256];
    while (done < sessions) {
        int n = epoll_wait(ep, got, 256, -1);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        for (int i = 0; i < n; i++) {
            int fd = got[i].data.fd;
            if (fd == l) {
                int s;
                while ((s = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    int one = 1;
                    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    c[s].step = 0;
                    c[s].got = 0;
                    struct epoll_event e = {.events = EPOLLIN, .data.fd = s};
                    epoll_ctl(ep, EPOLL_CTL_ADD, s, &e);
                }
                continue;
            }
            ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r <= 0) {
                if (r < 0 && errno == EAGAIN) continue;
                close(fd);
                continue;
            }
            c[fd].got += (int)r;
            while (c[fd].step < STEPS && c[fd].got >= ASK[c[fd].step]) {
                c[fd].got -= ASK[c[fd].step];
                if (ANSWER[c[fd].step]) send_all(fd, ANSWER[c[fd].step]);
                if (++c[fd].step == STEPS) done++;
            }
        }
    }
    cpu_per_login("server", sessions, "");
}

/* The client's source address (SOURCE), or none: the kernel's choice. */
static struct sockaddr_in source;

static int dial(struct sockaddr_in *a, int ep) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (s < 0) die("socket");
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (source.sin_family && bind(s, (struct sockaddr *)&source, sizeof source) < 0) die("bind");
    if (connect(s, (struct sockaddr *)a, sizeof *a) < 0 && errno != EINPROGRESS) die("connect");
    struct epoll_event e = {.events = EPOLLOUT, .data.fd = s};
    epoll_ctl(ep, EPOLL_CTL_ADD, s, &e);
    return s;
}

static void client(int port, long sessions, int in_flight, double rate) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct conn *c = calloc(65536, sizeof *c);
    int ep = epoll_create1(0);
    long started = 0, done = 0;
    double t0 = now_s();
    if (rate <= 0)
        for (; started < sessions && started < in_flight; started++) dial(&a, ep);
    char buf[4096];
    struct epoll_event got[256];
    while (done < sessions) {
        int wait_ms = -1;
        if (rate > 0 && started < sessions) {
            /* Paced: start every login that is due, then sleep until the next one is. */
            double t = now_s() - t0;
            for (; started < sessions && started / rate <= t; started++) dial(&a, ep);
            if (started < sessions) wait_ms = (int)((started / rate - t) * 1e3) + 1;
        }
        int n = epoll_wait(ep, got, 256, wait_ms);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        for (int i = 0; i < n; i++) {
            int fd = got[i].data.fd;
            if (got[i].events & EPOLLOUT) {
                /* Connected: the stream header, then wait for answers. */
                struct epoll_event e = {.events = EPOLLIN, .data.fd = fd};
                epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e);
                c[fd].step = 0;
                c[fd].got = 0;
                send_all(fd, ASK[0]);
                continue;
            }
            ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r < 0 && errno == EAGAIN) continue;
            if (r <= 0) die("client recv");
            c[fd].got += (int)r;
            while (c[fd].step < STEPS - 1 && c[fd].got >= ANSWER[c[fd].step]) {
                c[fd].got -= ANSWER[c[fd].step];
                c[fd].step++;
                send_all(fd, ASK[c[fd].step]);
                if (c[fd].step == STEPS - 1) {
                    /* Presence sent: logged in; held open, no longer watched. */
                    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                    done++;
                    if (rate <= 0 && started < sessions) {
                        dial(&a, ep);
                        started++;
                    }
                }
            }
        }
    }
    double t = now_s() - t0;
    char tail[128];
    snprintf(tail, sizeof tail, ", %ld logins in %.2f s = %.0f/s", sessions, t, sessions / t);
    cpu_per_login("client", sessions, tail);
}

int main(int argc, char **argv) {
    if (argc < 3 || argc == 6 || argc > 7) {
        fprintf(stderr, "usage: login-limit PORT SESSIONS [IN_FLIGHT [RATE [SOURCE HOLD]]]\n");
        return 2;
    }
    int port = atoi(argv[1]);
    long sessions = atol(argv[2]);
    int in_flight = argc >= 4 ? atoi(argv[3]) : 512;
    double rate = argc >= 5 ? atof(argv[4]) : 0;
    int hold = argc == 7 ? atoi(argv[6]) : 0;
    if (argc == 7) {
        source.sin_family = AF_INET;
        if (inet_pton(AF_INET, argv[5], &source.sin_addr) != 1 ||
            (ntohl(source.sin_addr.s_addr) >> 24) != 127 || hold < 0) {
            fprintf(stderr, "login-limit: SOURCE must be a 127.x.y.z address, HOLD >= 0\n");
            return 2;
        }
    }
    if (port <= 0 || sessions <= 0 || sessions > 60000 || in_flight <= 0 || rate < 0) {
        fprintf(stderr, "login-limit: PORT and IN_FLIGHT positive, SESSIONS 1 to 60000, RATE >= 0\n");
        return 2;
    }
    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
    if (listen(l, 4096) < 0) die("listen");
    pid_t server = fork();
    if (server < 0) die("fork");
    if (server == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        serve(l, sessions);
        /* Held until the client ends it (below), or dies. */
        if (hold) pause();
        return 0;
    }
    close(l);
    client(port, sessions, in_flight, rate);
    if (hold) {
        sleep(hold);
        kill(server, SIGTERM);
    }
    /* The server prints and exits once the last presence has arrived. */
    int status;
    waitpid(server, &status, 0);
    return hold || (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 0 : 1;
}
