/*
 * bench/udp-mmsg.c: the smallest fast UDP sender and receiver, the limit
 * bench/udp-vs-iperf3 measures sonde and iperf3 against on its per-packet
 * path. Batches of 64 datagrams per sendmmsg/recvmmsg, nothing else per
 * packet: no pacing, no sequence numbers, no timestamps. `send-gso`
 * sends the same datagrams as runs of up to 64 in one buffer that the
 * kernel cuts up (UDP_SEGMENT, Linux 4.18+), as sonde's sender does.
 *
 *   udp-mmsg send|send-gso ADDR PORT PAYLOAD SECONDS   prints "sent N"
 *   udp-mmsg recv ADDR PORT PAYLOAD SECONDS   prints "received N in S s"
 *
 * The receiver counts from its first datagram to its last; it stops
 * SECONDS + 3 s after it started, or 1 s after datagrams stopped coming.
 * ADDR is numeric, IPv6 or IPv4.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#define MAXLEN 2048

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int open_socket(const char *addr, int port, int bind_it) {
    struct sockaddr_storage ss;
    socklen_t len;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        len = sizeof *s6;
    } else if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        len = sizeof *s4;
    } else {
        fprintf(stderr, "udp-mmsg: not a numeric address: %s\n", addr);
        exit(2);
    }
    int fd = socket(ss.ss_family, SOCK_DGRAM, 0);
    if (fd < 0) {
        perror("socket");
        exit(1);
    }
    int buf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, bind_it ? SO_RCVBUF : SO_SNDBUF, &buf, sizeof buf);
    if ((bind_it ? bind(fd, (struct sockaddr *)&ss, len)
                 : connect(fd, (struct sockaddr *)&ss, len)) < 0) {
        perror(bind_it ? "bind" : "connect");
        exit(1);
    }
    return fd;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: udp-mmsg send|send-gso|recv ADDR PORT PAYLOAD SECONDS\n");
        return 2;
    }
    int gso = strcmp(argv[1], "send-gso") == 0;
    int sending = gso || strcmp(argv[1], "send") == 0;
    int port = atoi(argv[3]);
    int payload = atoi(argv[4]);
    double seconds = atof(argv[5]);
    if (payload < 1 || payload > MAXLEN || seconds <= 0) {
        fprintf(stderr, "udp-mmsg: payload 1..%d bytes, seconds > 0\n", MAXLEN);
        return 2;
    }
    static char bufs[BATCH][MAXLEN];
    struct iovec iov[BATCH];
    struct mmsghdr msgs[BATCH];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = bufs[i];
        iov[i].iov_len = sending ? (size_t)payload : MAXLEN;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    int fd = open_socket(argv[2], port, !sending);
    unsigned long long n = 0;
    if (gso) {
        /* One buffer of up to 64 datagrams, at most 64 KiB in all. */
        static char run[BATCH * MAXLEN];
        int segs = 65000 / payload < BATCH ? 65000 / payload : BATCH;
        int seg = payload;
        if (setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof seg) < 0) {
            perror("UDP_SEGMENT");
            return 1;
        }
        double end = now_s() + seconds;
        while (now_s() < end) {
            ssize_t r = send(fd, run, (size_t)segs * payload, 0);
            if (r > 0)
                n += r / payload;
            else if (r < 0 && errno != ENOBUFS && errno != EAGAIN && errno != ECONNREFUSED) {
                perror("send");
                return 1;
            }
        }
        printf("sent %llu\n", n);
        return 0;
    }
    if (sending) {
        double end = now_s() + seconds;
        while (now_s() < end) {
            int r = sendmmsg(fd, msgs, BATCH, 0);
            if (r > 0)
                n += r;
            else if (r < 0 && errno != ENOBUFS && errno != EAGAIN && errno != ECONNREFUSED) {
                perror("sendmmsg");
                return 1;
            }
        }
        printf("sent %llu\n", n);
        return 0;
    }
    struct timeval tv = {0, 200000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    double start = now_s(), first = 0, last = 0;
    while (now_s() < start + seconds + 3) {
        int r = recvmmsg(fd, msgs, BATCH, 0, NULL);
        double t = now_s();
        if (r > 0) {
            if (n == 0)
                first = t;
            n += r;
            last = t;
        } else if (n > 0 && t - last > 1.0) {
            break;
        }
    }
    printf("received %llu in %.6f s\n", n, n > 0 ? last - first : 0.0);
    return 0;
}
