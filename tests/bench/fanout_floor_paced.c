// fanout_floor_paced.c - the physical fan-out floor of /work/shared/tools/fanout_floor.c, paced as the
// bench's paced rows are: GAP_MS of idleness between rounds (the writer's CPU counts only the rounds,
// getrusage around each). Same writer and reader otherwise. Build: cc -O2 -o fanout_floor_paced
// tests/bench/fanout_floor_paced.c ; run: ./fanout_floor_paced CLIENTS ROUNDS PAYLOAD_BYTES GAP_MS
// Physical floor for WebSocket fan-out on this machine: one writer thread sends one small
// pre-built WebSocket text frame to each of N loopback TCP connections per round (what an
// encode-once fan-out must do at least: one send() per recipient), a reader process drains them.
// Prints writer CPU per delivery and deliveries per second.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static double cpu(void) { struct rusage r; getrusage(RUSAGE_SELF, &r); return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6; }
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5000, rounds = argc > 2 ? atoi(argv[2]) : 200, size = argc > 3 ? atoi(argv[3]) : 100;
    int gap_ms = argc > 4 ? atoi(argv[4]) : 1000;
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bind(ls, (void *)&a, sizeof a); listen(ls, 4096);
    socklen_t al = sizeof a; getsockname(ls, (void *)&a, &al);
    int *fds = calloc(n, sizeof *fds);
    pid_t child = fork();
    if (child == 0) {  // reader: connect n sockets, drain everything
        int ep = epoll_create1(0);
        for (int i = 0; i < n; i++) {
            int s = socket(AF_INET, SOCK_STREAM, 0);
            if (connect(s, (void *)&a, sizeof a)) { perror("connect"); _exit(1); }
            fcntl(s, F_SETFL, O_NONBLOCK);
            struct epoll_event ev = { .events = EPOLLIN, .data.fd = s }; epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
        }
        long long total = 0, want = (long long)n * rounds * (size + 2);
        static char buf[65536]; struct epoll_event evs[512];
        while (total < want) {
            int k = epoll_wait(ep, evs, 512, 5000); if (k <= 0) break;
            for (int i = 0; i < k; i++) { ssize_t r; while ((r = read(evs[i].data.fd, buf, sizeof buf)) > 0) total += r; }
        }
        _exit(total == want ? 0 : 2);
    }
    for (int i = 0; i < n; i++) { fds[i] = accept(ls, NULL, NULL); setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); }
    char *frame = malloc(size + 2); frame[0] = (char)0x81; frame[1] = (char)size; memset(frame + 2, 'x', size);  // size < 126
    double t0 = now(), c_rounds = 0, t_rounds = 0;
    for (int r = 0; r < rounds; r++) {
        if (r) { struct timespec g = { gap_ms / 1000, (long)(gap_ms % 1000) * 1000000L }; nanosleep(&g, NULL); }
        double tr = now(), cr = cpu();
        for (int i = 0; i < n; i++) if (send(fds[i], frame, size + 2, 0) != size + 2) { perror("send"); return 1; }
        c_rounds += cpu() - cr; t_rounds += now() - tr;
    }
    double c0 = 0, c1 = c_rounds, t1 = t0 + t_rounds;
    int st; waitpid(child, &st, 0);
    double t2 = now();
    long long d = (long long)n * rounds;
    printf("gap_ms=%d clients=%d rounds=%d frame=%dB deliveries=%lld writer_cpu_per_delivery_us=%.2f writer_deliveries_per_s=%.0f end_to_end_per_s=%.0f reader_ok=%d\n",
           gap_ms, n, rounds, size + 2, d, (c1 - c0) / d * 1e6, d / (t1 - t0), d / (t2 - t0), WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return 0;
}
