/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness for the health server's request path (src/sys/http.c
 * on libmicrohttpd, with its pool's admission and per-connection
 * accounting): the input's first byte picks the client's address (IPv4 or
 * IPv6, from 198.18.0.0/15 and 2001:2::/48) and whether the rest is written
 * at once or in small pieces; the rest
 * is the bytes a client sends, through a socketpair handed to the server
 * as an accepted connection, the server run between writes.  Routes as
 * the daemon's health server: /healthz, /livez, and /metrics.
 * Oracles: whatever the server writes back begins with an HTTP/1.x status
 * line, and once the client hangs up every connection is gone from the
 * pool's counts (no admission slot leaks, whatever was sent).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sys/http.h"
#include "sys/log.h"
#include "sys/loop.h"

static int h_health(void *ud, struct http_response *resp)
{
	return http_health_response(true, true, 1714557600.5, 1714557610.25, NULL, resp);
}

static int h_metrics(void *ud, struct http_response *resp)
{
	resp->body = strdup("# TYPE svcnat_fuzz gauge\nsvcnat_fuzz 1\n");
	if (!resp->body)
		return -ENOMEM;
	resp->len = strlen(resp->body);
	resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
	return 0;
}

static const struct http_route routes[] = {
	{ "/healthz", h_health },
	{ "/livez", h_health },
	{ "/metrics", h_metrics },
};

static struct loop *loop;
static struct http_pool *pool;
static struct http_server *srv;

static void setup(void)
{
	struct http_limits lim;

	log_init("fuzz-http", LOG_LEVEL_ERR);
	http_limits_default(1024, &lim);
	if (loop_new(&loop) < 0 || http_pool_new(loop, &lim, &pool) < 0 ||
	    http_server_new(pool, HTTP_HEALTH, "127.0.0.1:0", routes, 3, NULL, &srv) < 0)
		abort();
}

/* The server's answer so far, appended to out (at most cap bytes kept). */
static size_t drain(int fd, char *out, size_t len, size_t cap, int *eof)
{
	for (;;) {
		char buf[4096];
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			*eof = 1;
			return len;
		}
		if (n < 0)
			return len;
		for (ssize_t i = 0; i < n && len < cap; i++)
			out[len++] = buf[i];
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_storage ss = { 0 };
	struct http_pool_stats st;
	char out[256];
	size_t off = 1, got = 0, step;
	int sv[2], eof = 0, r;
	socklen_t sl;

	if (!srv)
		setup();
	if (size < 1)
		return 0;
	/* the client: one of four IPv4 and four IPv6 addresses */
	if (data[0] & 4) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		inet_pton(AF_INET6, "2001:2:1::100", &a->sin6_addr);
		a->sin6_addr.s6_addr[7] = data[0] & 3;
		a->sin6_port = htons(40000);
		sl = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(0xc6120164u + (data[0] & 3)); /* 198.18.1.100 + */
		a->sin_port = htons(40000);
		sl = sizeof(*a);
	}
	/* high bit: writes of 1 to 16 bytes; else all at once */
	step = data[0] & 0x80 ? (size_t)((data[0] >> 3) & 15) + 1 : size;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	r = http_server_adopt(srv, sv[0], (struct sockaddr *)&ss, sl);
	if (r < 0) {
		close(sv[1]);
		return 0;
	}
	while (off < size && !eof) {
		size_t n = size - off < step ? size - off : step;
		ssize_t w = send(sv[1], data + off, n, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0)
			off += (size_t)w;
		http_server_dispatch(srv);
		got = drain(sv[1], out, got, sizeof(out), &eof);
		if (w <= 0 && !eof) {
			/* the server reads no more (a full buffer, an answer
			 * it is still writing): let it go on, then give up */
			http_server_dispatch(srv);
			got = drain(sv[1], out, got, sizeof(out), &eof);
			break;
		}
	}
	shutdown(sv[1], SHUT_WR);
	for (int i = 0; i < 64 && !eof; i++) {
		http_server_dispatch(srv);
		got = drain(sv[1], out, got, sizeof(out), &eof);
	}
	close(sv[1]);
	/* The server sees the hang-up and closes its end. */
	for (int i = 0; i < 64; i++) {
		http_server_dispatch(srv);
		http_pool_stats(pool, &st);
		if (!st.open)
			break;
	}
	if (got >= 9 && memcmp(out, "HTTP/1.", 7) != 0) {
		fprintf(stderr, "answer without a status line: %.*s\n", (int)got, out);
		abort();
	}
	http_pool_stats(pool, &st);
	if (st.open) {
		fprintf(stderr, "%u connections still counted after the client left\n", st.open);
		abort();
	}
	return 0;
}
