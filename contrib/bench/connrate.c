// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Connection-rate benchmark, both ends, bounded in count and time.
 *
 *   connrate serve PORT SECONDS
 *       accept TCP connections on PORT for at most SECONDS; answer each
 *       request byte with one byte and close.  Single thread, epoll.
 *   connrate client IP PORT COUNT SECONDS
 *       COUNT times (or until SECONDS pass): connect, send one byte, read
 *       the answer, close.  Prints one JSON line: connections/s and the
 *       p50/p99 connect latency (SYN sent to connect() done).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
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
	struct epoll_event ev, evs[64];
	double end = now() + seconds;
	int one = 1, lfd, ep;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 4096) < 0) {
		perror("connrate serve");
		return 1;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	ev.events = EPOLLIN;
	ev.data.fd = lfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	while (now() < end) {
		int n = epoll_wait(ep, evs, 64, 200), i;

		for (i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == lfd) {
				int c;

				while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					ev.events = EPOLLIN;
					ev.data.fd = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
				}
			} else {
				char b[64];
				ssize_t r = read(fd, b, sizeof(b));

				if (r > 0 && write(fd, "k", 1) < 0)
					r = -1;
				if (r != -1 || errno != EAGAIN)
					close(fd); /* closing removes it from the epoll set */
			}
		}
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One connection; returns the connect latency in seconds, or < 0. */
static double one_conn(const struct sockaddr_in *sa, int timeout_ms)
{
	struct pollfd pfd;
	double t0, t1;
	int fd, err = 0;
	socklen_t len = sizeof(err);
	char b;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	t0 = now();
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 && errno != EINPROGRESS)
		goto fail;
	pfd.fd = fd;
	pfd.events = POLLOUT;
	if (poll(&pfd, 1, timeout_ms) != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err)
		goto fail;
	t1 = now();
	if (write(fd, "q", 1) != 1)
		goto fail;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, timeout_ms) != 1 || read(fd, &b, 1) != 1)
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
	double *lat, t0, end, elapsed;
	long i, ok = 0, failed = 0;

	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1 || count <= 0) {
		fprintf(stderr, "connrate client: bad address or count\n");
		return 2;
	}
	lat = calloc((size_t)count, sizeof(*lat));
	if (!lat)
		return 1;
	t0 = now();
	end = t0 + seconds;
	for (i = 0; i < count && now() < end; i++) {
		double l = one_conn(&sa, 1000);

		if (l < 0)
			failed++;
		else
			lat[ok++] = l;
	}
	elapsed = now() - t0;
	qsort(lat, (size_t)ok, sizeof(*lat), cmp_double);
	printf("{\"ok\":%ld,\"failed\":%ld,\"seconds\":%.3f,\"conn_per_s\":%.0f,"
	       "\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
	       ok, failed, elapsed, ok / elapsed, ok ? lat[ok / 2] * 1e6 : 0.0,
	       ok ? lat[(long)(ok * 0.99)] * 1e6 : 0.0);
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
