// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Connection-rate benchmark, both ends, bounded in count and time.
 *
 *   connrate serve PORT SECONDS
 *       accept TCP connections on PORT for at most SECONDS; answer each
 *       request with one byte, then wait for the client to close.
 *       Single thread, epoll.
 *   connrate client IP PORT COUNT SECONDS
 *       COUNT times (or until SECONDS pass): connect, send one byte, read
 *       the answer, close.  Prints one JSON line: connections/s and the
 *       p50/p99 connect latency (connect() called to connect() done).
 *
 * Neither end leaves a socket in TIME_WAIT: the client closes first and with
 * SO_LINGER 0 (an RST), the server closes when it sees that.  With a normal
 * close one side or the other keeps a TIME_WAIT socket per connection;
 * after some 10,000 connections the client's connect() then spends its time
 * searching the ephemeral port range, and a SYN that reuses the 4-tuple of a
 * server-side TIME_WAIT socket with an older timestamp is answered with an
 * ACK instead of a SYN-ACK and has to be retried after a second.  That, not
 * the network path, capped an earlier version at about 4,000 connections/s.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int serve(int port, double seconds)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct epoll_event ev, evs[256];
	double end = now() + seconds;
	int one = 1, defer = 1, lfd, ep;
	long served = 0;

	if (port <= 0 || port > 65535 || seconds <= 0) {
		fprintf(stderr, "connrate serve: bad port or seconds\n");
		return 2;
	}
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 4096) < 0) {
		perror("connrate serve");
		return 1;
	}
	/* Wake the server only once the request has arrived: saves one epoll
	 * round per connection. */
	(void)setsockopt(lfd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof(defer));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) {
		perror("connrate serve: epoll");
		return 1;
	}
	ev.events = EPOLLIN;
	ev.data.fd = lfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0) {
		perror("connrate serve: epoll_ctl");
		return 1;
	}
	while (now() < end) {
		int n = epoll_wait(ep, evs, 256, 200), i;

		for (i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			char b[64];
			ssize_t r;

			if (fd == lfd) {
				int c;

				while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					ev.events = EPOLLIN | EPOLLRDHUP;
					ev.data.fd = c;
					if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev) < 0)
						close(c);
				}
				continue;
			}
			r = read(fd, b, sizeof(b));
			if (r > 0) {
				served++;
				if (write(fd, "k", 1) == 1)
					continue; /* wait for the client's close */
			} else if (r < 0 && errno == EAGAIN) {
				continue;
			}
			close(fd); /* EOF, reset or error; leaves the epoll set */
		}
	}
	fprintf(stderr, "connrate serve: answered %ld requests\n", served);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One connection; returns the connect latency in seconds, or < 0. */
static double one_conn(const struct sockaddr_in *sa, const struct timeval *tmo)
{
	static const struct linger rst = { .l_onoff = 1, .l_linger = 0 };
	double t0, t1;
	int fd;
	char b;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* Blocking with timeouts: SO_SNDTIMEO bounds connect() too. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, tmo, sizeof(*tmo)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, tmo, sizeof(*tmo)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst)) < 0)
		goto fail;
	t0 = now();
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0)
		goto fail;
	t1 = now();
	if (write(fd, "q", 1) != 1 || read(fd, &b, 1) != 1)
		goto fail;
	close(fd);
	return t1 - t0;
fail:
	close(fd);
	return -1;
}

static int client(const char *ip, int port, long count, double seconds)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	const struct timeval tmo = { .tv_sec = 1 };
	double *lat, t0, end, elapsed;
	long i, ok = 0, failed = 0;
	int first_err = 0;

	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1 || port <= 0 || port > 65535 ||
	    count <= 0 || count > 100000000 || seconds <= 0) {
		fprintf(stderr, "connrate client: bad address, port, count or seconds\n");
		return 2;
	}
	lat = calloc((size_t)count, sizeof(*lat));
	if (!lat)
		return 1;
	t0 = now();
	end = t0 + seconds;
	for (i = 0; i < count && now() < end; i++) {
		double l = one_conn(&sa, &tmo);

		if (l < 0) {
			if (!first_err)
				first_err = errno;
			failed++;
		} else {
			lat[ok++] = l;
		}
	}
	elapsed = now() - t0;
	qsort(lat, (size_t)ok, sizeof(*lat), cmp_double);
	printf("{\"ok\":%ld,\"failed\":%ld,\"seconds\":%.3f,\"conn_per_s\":%.0f,"
	       "\"p50_us\":%.1f,\"p99_us\":%.1f,\"first_error\":\"%s\"}\n",
	       ok, failed, elapsed, ok / elapsed, ok ? lat[ok / 2] * 1e6 : 0.0,
	       ok ? lat[(long)((double)ok * 0.99)] * 1e6 : 0.0, first_err ? strerror(first_err) : "");
	free(lat);
	return failed && !ok ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]), atof(argv[3]));
	if (argc == 6 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), atol(argv[4]), atof(argv[5]));
	fprintf(stderr, "usage: connrate serve PORT SECONDS\n"
			"       connrate client IP PORT COUNT SECONDS\n");
	return 2;
}
