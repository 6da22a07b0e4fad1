/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The HTTP server on the loop, in-process: the loop runs in the main
 * thread, a libcurl client in a second thread GETs 127.0.0.1 on an
 * ephemeral port and then wakes the loop through a pipe.  Bounded by curl
 * timeouts and a safety timer.  The pool's limits with raw sockets from
 * 127.0.0.x (all of 127/8 is on lo): the per-request deadline (a trickling
 * client, an idle one, keep-alive requests each with their own), the
 * per-client share and the share of the servers other than health ones.
 */
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "sys/http.h"
#include "sys/loop.h"
#include "util.h"

struct reply {
	long status;
	char body[512];
	size_t len;
	char ctype[64];
};

struct client {
	unsigned port;
	const char *paths[8];
	const char *methods[8];
	struct reply replies[8];
	size_t n;
	int wake_fd;
};

static size_t on_body(char *data, size_t sz, size_t n, void *ud)
{
	struct reply *r = ud;
	size_t take = sz * n;

	if (take > sizeof(r->body) - 1 - r->len)
		take = sizeof(r->body) - 1 - r->len;
	memcpy(r->body + r->len, data, take);
	r->len += take;
	r->body[r->len] = '\0';
	return sz * n;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	size_t i;

	for (i = 0; i < c->n; i++) {
		CURL *h = curl_easy_init();
		char url[128];
		char *ct = NULL;

		snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", c->port, c->paths[i]);
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &c->replies[i]);
		if (c->methods[i] && streq(c->methods[i], "HEAD"))
			curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
		else if (c->methods[i])
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->methods[i]);
		if (curl_easy_perform(h) == CURLE_OK) {
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->replies[i].status);
			curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
			if (ct)
				snprintf(c->replies[i].ctype, sizeof(c->replies[i].ctype), "%s", ct);
		}
		curl_easy_cleanup(h);
	}
	(void)!write(c->wake_fd, "x", 1);
	return NULL;
}

static int on_wake(struct loop *l, int fd, uint32_t ev, void *ud)
{
	loop_quit(l, 0);
	return 0;
}

static int on_safety(struct loop *l, struct loop_timer *t, void *ud)
{
	loop_quit(l, -ETIMEDOUT);
	return 0;
}

static int calls;

static int h_hello(void *ud, struct http_response *resp)
{
	calls++;
	resp->body = strdup("hello\n");
	resp->len = 6;
	return 0;
}

static int h_fail(void *ud, struct http_response *resp)
{
	return -EIO;
}

static int h_health(void *ud, struct http_response *resp)
{
	const bool *healthy = ud;

	return http_health_response(*healthy, true, 1714557600.5, 1714557610.25, NULL, resp);
}

/* Serve routes on an ephemeral port, run the client's requests. */
static void run_requests(const struct http_route *routes, size_t n_routes, void *ud,
			 struct client *c)
{
	struct loop *l;
	struct http_limits lim;
	struct http_pool *pool;
	struct http_server *s;
	struct loop_timer *safety;
	pthread_t th;
	int p[2];

	assert_int_equal(loop_new(&l), 0);
	http_limits_default(1024, &lim);
	assert_int_equal(http_pool_new(l, &lim, &pool), 0);
	assert_int_equal(http_server_new(pool, HTTP_HEALTH, "127.0.0.1:0", routes, n_routes, ud, &s),
			 0);
	c->port = http_server_port(s);
	assert_true(c->port > 0);
	assert_int_equal(pipe(p), 0);
	c->wake_fd = p[1];
	assert_int_equal(loop_add_io(l, p[0], EPOLLIN, on_wake, NULL), 0);
	assert_int_equal(loop_timer_new(l, on_safety, NULL, &safety), 0);
	assert_int_equal(loop_timer_arm(safety, 20 * 1000000ULL), 0);
	assert_int_equal(pthread_create(&th, NULL, client_main, c), 0);
	assert_int_equal(loop_run(l), 0);
	pthread_join(th, NULL);
	loop_timer_free(safety);
	http_server_free(s);
	http_pool_free(pool);
	loop_free(l);
	close(p[0]);
	close(p[1]);
}

static void test_routes_and_errors(void **state)
{
	static const struct http_route routes[] = {
		{ "/hello", h_hello },
		{ "/fail", h_fail },
	};
	struct client c = {
		.paths = { "/hello", "/nope", "/fail", "/hello", "/hello" },
		.methods = { NULL, NULL, NULL, "POST", "HEAD" },
		.n = 5,
	};

	calls = 0;
	run_requests(routes, ARRAY_SIZE(routes), NULL, &c);
	assert_int_equal(c.replies[0].status, 200);
	assert_string_equal(c.replies[0].body, "hello\n");
	assert_string_equal(c.replies[0].ctype, "text/plain; charset=utf-8");
	assert_int_equal(c.replies[1].status, 404);
	assert_int_equal(c.replies[2].status, 500);
	assert_int_equal(c.replies[3].status, 405);
	assert_int_equal(c.replies[4].status, 200);
	assert_int_equal(calls, 2); /* GET and HEAD */
}

static void test_healthz(void **state)
{
	static const struct http_route routes[] = { { "/healthz", h_health } };
	bool healthy = true;
	struct client c = { .paths = { "/healthz" }, .n = 1 };

	run_requests(routes, 1, &healthy, &c);
	assert_int_equal(c.replies[0].status, 200);
	assert_string_equal(c.replies[0].ctype, "application/json");
	/* Healthy: lastUpdated is the current time, as kube-proxy says. */
	assert_string_equal(c.replies[0].body,
			    "{\"lastUpdated\": \"2024-05-01 10:00:10.25 +0000 UTC\","
			    "\"currentTime\": \"2024-05-01 10:00:10.25 +0000 UTC\", \"nodeEligible\": true}");

	healthy = false;
	memset(c.replies, 0, sizeof(c.replies));
	run_requests(routes, 1, &healthy, &c);
	assert_int_equal(c.replies[0].status, 503);
	assert_string_equal(c.replies[0].body,
			    "{\"lastUpdated\": \"2024-05-01 10:00:00.5 +0000 UTC\","
			    "\"currentTime\": \"2024-05-01 10:00:10.25 +0000 UTC\", \"nodeEligible\": true}");
}

/* svcnat's detail (the etcd source's state) rides along in the object. */
static void test_health_extra(void **state)
{
	struct http_response r = { 0 };

	assert_int_equal(http_health_response(false, true, 1714557600.5, 1714557610.25,
					      "\"etcd\": {\"connected\": false}", &r),
			 0);
	assert_int_equal(r.status, 503);
	assert_string_equal(r.body,
			    "{\"lastUpdated\": \"2024-05-01 10:00:00.5 +0000 UTC\","
			    "\"currentTime\": \"2024-05-01 10:00:10.25 +0000 UTC\", \"nodeEligible\": true, "
			    "\"etcd\": {\"connected\": false}}");
	free(r.body);
}

/* A Node being deleted: 503 and nodeEligible false although the syncs are
 * fine, lastUpdated the last sync's (kube-proxy's healthzHandler). */
static void test_health_not_eligible(void **state)
{
	struct http_response r = { 0 };

	assert_int_equal(http_health_response(true, false, 1714557600.5, 1714557610.25, NULL, &r), 0);
	assert_int_equal(r.status, 503);
	assert_string_equal(r.content_type, "application/json");
	assert_string_equal(r.body,
			    "{\"lastUpdated\": \"2024-05-01 10:00:00.5 +0000 UTC\","
			    "\"currentTime\": \"2024-05-01 10:00:10.25 +0000 UTC\", \"nodeEligible\": false}");
	free(r.body);
	r = (struct http_response){ 0 };
	assert_int_equal(http_health_response(false, false, 1714557600.5, 1714557610.25, NULL, &r), 0);
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "\"nodeEligible\": false}"));
	free(r.body);
}

static void test_go_time(void **state)
{
	char buf[64];

	assert_string_equal(http_go_time(0, buf, sizeof(buf)), "0001-01-01 00:00:00 +0000 UTC");
	assert_string_equal(http_go_time(1714557600, buf, sizeof(buf)), "2024-05-01 10:00:00 +0000 UTC");
	assert_string_equal(http_go_time(1714557600.125, buf, sizeof(buf)),
			    "2024-05-01 10:00:00.125 +0000 UTC");
	assert_string_equal(http_go_time(-5, buf, sizeof(buf)), "0001-01-01 00:00:00 +0000 UTC");
}

static void test_parse_bind(void **state)
{
	static const struct {
		const char *in;
		int r;
		int family;
		unsigned port;
	} cases[] = {
		{ "127.0.0.1:10256", 0, AF_INET, 10256 },
		{ "0.0.0.0:10249", 0, AF_INET, 10249 },
		{ ":8080", 0, AF_INET, 8080 },
		{ "127.0.0.1:0", 0, AF_INET, 0 },
		{ "[::1]:10256", 0, AF_INET6, 10256 },
		{ "[::]:1", 0, AF_INET6, 1 },
		{ "127.0.0.1", -EINVAL, 0, 0 },
		{ "127.0.0.1:", -EINVAL, 0, 0 },
		{ "127.0.0.1:65536", -EINVAL, 0, 0 },
		{ "127.0.0.1:-1", -EINVAL, 0, 0 },
		{ "127.0.0.1:80x", -EINVAL, 0, 0 },
		{ "::1:80", -EINVAL, 0, 0 },
		{ "[::1]80", -EINVAL, 0, 0 },
		{ "localhost:80", -EINVAL, 0, 0 },
		{ "300.1.1.1:80", -EINVAL, 0, 0 },
		{ "", -EINVAL, 0, 0 },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sockaddr_storage ss;
		socklen_t sl;
		int r = http_parse_bind(cases[i].in, &ss, &sl);

		if (r != cases[i].r)
			fail_msg("'%s': got %d", cases[i].in, r);
		if (r < 0)
			continue;
		assert_int_equal(ss.ss_family, cases[i].family);
		if (ss.ss_family == AF_INET)
			assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), cases[i].port);
		else
			assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), cases[i].port);
	}
}

static void test_bind_in_use(void **state)
{
	static const struct http_route routes[] = { { "/hello", h_hello } };
	struct loop *l;
	struct http_limits lim;
	struct http_pool *pool;
	struct http_server *a, *b;
	char addr[32];

	assert_int_equal(loop_new(&l), 0);
	http_limits_default(1024, &lim);
	assert_int_equal(http_pool_new(l, &lim, &pool), 0);
	assert_int_equal(http_server_new(pool, HTTP_HEALTH, "127.0.0.1:0", routes, 1, NULL, &a), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", http_server_port(a));
	assert_true(http_server_new(pool, HTTP_HEALTH, addr, routes, 1, NULL, &b) < 0);
	assert_int_equal(http_server_new(pool, HTTP_HEALTH, "nonsense", routes, 1, NULL, &b),
			 -EINVAL);
	http_server_free(a);
	http_pool_free(pool);
	loop_free(l);
}

/* A pool with a health server and another one, run while a client thread
 * does its part (it must write wake_fd at its end). */
struct rig {
	struct loop *l;
	struct http_pool *pool;
	struct http_server *health, *other;
	unsigned hport, oport;
	int wake[2];
};

static void rig_up(struct rig *r, const struct http_limits *lim)
{
	static const struct http_route routes[] = { { "/hello", h_hello } };

	assert_int_equal(loop_new(&r->l), 0);
	assert_int_equal(http_pool_new(r->l, lim, &r->pool), 0);
	assert_int_equal(http_server_new(r->pool, HTTP_HEALTH, "127.0.0.1:0", routes, 1, NULL,
					 &r->health), 0);
	/* on 0.0.0.0: reachable from every 127.0.0.x source */
	assert_int_equal(http_server_new(r->pool, HTTP_OTHER, "0.0.0.0:0", routes, 1, NULL,
					 &r->other), 0);
	r->hport = http_server_port(r->health);
	r->oport = http_server_port(r->other);
	assert_int_equal(pipe(r->wake), 0);
	assert_int_equal(loop_add_io(r->l, r->wake[0], EPOLLIN, on_wake, NULL), 0);
}

static void rig_run(struct rig *r, void *(*fn)(void *), void *arg)
{
	struct loop_timer *safety;
	pthread_t th;

	assert_int_equal(loop_timer_new(r->l, on_safety, NULL, &safety), 0);
	assert_int_equal(loop_timer_arm(safety, 30 * 1000000ULL), 0);
	assert_int_equal(pthread_create(&th, NULL, fn, arg), 0);
	assert_int_equal(loop_run(r->l), 0);
	pthread_join(th, NULL);
	loop_timer_free(safety);
}

static void rig_down(struct rig *r)
{
	struct http_pool_stats st;

	http_server_free(r->health);
	http_server_free(r->other);
	/* every connection's count went with its server */
	http_pool_stats(r->pool, &st);
	assert_int_equal(st.open, 0);
	http_pool_free(r->pool);
	loop_free(r->l);
	close(r->wake[0]);
	close(r->wake[1]);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A TCP connection from 127.0.0.<src> to 127.0.0.1:port; -1 on failure. */
static int tcp_open(int src, unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(0x7f000000u | (unsigned)src);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/* Seconds until the server closed fd (what it sends is read and dropped),
 * or -1 if it is still open after max seconds. */
static double closed_within(int fd, double max)
{
	double t0 = now_s();

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double left = max - (now_s() - t0);
		char buf[512];
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) == 0)
			return -1;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return now_s() - t0;
	}
}

/* GET /hello on fd (keep-alive); the status, or -1. */
static int get_hello(int fd)
{
	static const char req[] = "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
	char buf[1024];
	size_t got = 0;
	double t0 = now_s();

	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1))
		return -1;
	/* the whole answer: its headers and "hello\n" */
	while (got < sizeof(buf) - 1 && now_s() - t0 < 5) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		char *end;

		if (poll(&p, 1, 5000) <= 0)
			return -1;
		n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			return -1;
		got += (size_t)n;
		buf[got] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end && strlen(end + 4) >= 6)
			return atoi(buf + 9);
	}
	return -1;
}

struct deadline_run {
	unsigned port;
	int wake_fd;
	double trickle, idle, after_keepalive;
	int keepalive[4];
	int fresh;
};

static void *deadline_client(void *arg)
{
	static const char req[] = "GET /hello HTTP/1.1\r\nHost: t\r\nX-Slow: ";
	struct deadline_run *d = arg;
	double t0;
	int fd;

	/* A byte every 50 ms: each would reset an inactivity timeout. */
	d->trickle = -1;
	fd = tcp_open(1, d->port);
	t0 = now_s();
	for (size_t i = 0; fd >= 0 && now_s() - t0 < 5; i++) {
		char c = i < sizeof(req) - 1 ? req[i] : 'a';

		if (send(fd, &c, 1, MSG_NOSIGNAL) != 1 || closed_within(fd, 0.05) >= 0) {
			d->trickle = now_s() - t0;
			break;
		}
	}
	if (fd >= 0)
		close(fd);
	fd = tcp_open(1, d->port);
	d->idle = fd >= 0 ? closed_within(fd, 5) : -2;
	if (fd >= 0)
		close(fd);
	/* Four requests 250 ms apart on one connection (1 s in all, over
	 * twice the deadline): each request has its own deadline. */
	fd = tcp_open(1, d->port);
	for (int i = 0; i < 4; i++) {
		d->keepalive[i] = fd >= 0 ? get_hello(fd) : -1;
		if (i < 3)
			usleep(250000);
	}
	d->after_keepalive = fd >= 0 ? closed_within(fd, 5) : -2;
	if (fd >= 0)
		close(fd);
	fd = tcp_open(2, d->port);
	d->fresh = fd >= 0 ? get_hello(fd) : -1;
	if (fd >= 0)
		close(fd);
	(void)!write(d->wake_fd, "x", 1);
	return NULL;
}

static void test_deadline(void **state)
{
	struct http_limits lim;
	struct http_pool_stats st;
	struct rig r = { 0 };
	struct deadline_run d = { 0 };

	http_limits_default(1024, &lim);
	lim.deadline_ms = 400;
	rig_up(&r, &lim);
	d.port = r.oport;
	d.wake_fd = r.wake[1];
	rig_run(&r, deadline_client, &d);
	/* closed at the deadline, not never */
	assert_true(d.trickle >= 0.3 && d.trickle < 3);
	assert_true(d.idle >= 0.3 && d.idle < 3);
	for (int i = 0; i < 4; i++)
		assert_int_equal(d.keepalive[i], 200);
	assert_true(d.after_keepalive >= 0.3 && d.after_keepalive < 3);
	assert_int_equal(d.fresh, 200);
	http_pool_stats(r.pool, &st);
	assert_true(st.deadline >= 3);
	assert_int_equal(st.rejected, 0);
	rig_down(&r);
}

struct share_run {
	unsigned hport, oport;
	int wake_fd;
	double a1, a2, a3, b1, o1, o2, o3;
	int b1_get, a_other_get, c_health_get, a_again;
};

static void *share_client(void *arg)
{
	struct share_run s = *(struct share_run *)arg, *out = arg;
	int a1, a2, a3, b1, o1, o2, o3, a4, x;

	/* 127.0.0.1's share on the health server: 2 */
	a1 = tcp_open(1, s.hport);
	a2 = tcp_open(1, s.hport);
	usleep(200000);
	a3 = tcp_open(1, s.hport);
	s.a3 = closed_within(a3, 3);
	s.a1 = closed_within(a1, 0.3);
	s.a2 = closed_within(a2, 0.3);
	/* another client has its own */
	b1 = tcp_open(2, s.hport);
	s.b1 = closed_within(b1, 0.3);
	s.b1_get = get_hello(b1);
	/* and 127.0.0.1 its own on the other kind of server */
	x = tcp_open(1, s.oport);
	s.a_other_get = get_hello(x);
	close(x);
	usleep(100000);
	/* The other kind's share of the pool: 2, whoever asks. */
	o1 = tcp_open(3, s.oport);
	o2 = tcp_open(4, s.oport);
	usleep(200000);
	o3 = tcp_open(5, s.oport);
	s.o3 = closed_within(o3, 3);
	s.o1 = closed_within(o1, 0.3);
	s.o2 = closed_within(o2, 0.3);
	/* ... which leaves the health server its room */
	x = tcp_open(5, s.hport);
	s.c_health_get = get_hello(x);
	close(x);
	/* one of 127.0.0.1's closes: it may open another */
	close(a1);
	usleep(200000);
	a4 = tcp_open(1, s.hport);
	s.a_again = get_hello(a4);
	for (int *fd = (int[]){ a2, a3, b1, o1, o2, o3, a4, -1 }; *fd != -1; fd++)
		close(*fd);
	*out = s;
	(void)!write(s.wake_fd, "x", 1);
	return NULL;
}

static void test_shares(void **state)
{
	struct http_limits lim;
	struct http_pool_stats st;
	struct rig r = { 0 };
	struct share_run s = { 0 };

	http_limits_default(1024, &lim);
	lim.per_client = 2;
	lim.max_conns = 8;
	lim.other_conns = 2;
	rig_up(&r, &lim);
	s.hport = r.hport;
	s.oport = r.oport;
	s.wake_fd = r.wake[1];
	rig_run(&r, share_client, &s);
	assert_true(s.a3 >= 0); /* closed at accept */
	assert_true(s.a1 < 0 && s.a2 < 0);
	assert_true(s.b1 < 0);
	assert_int_equal(s.b1_get, 200);
	assert_int_equal(s.a_other_get, 200);
	assert_true(s.o3 >= 0);
	assert_true(s.o1 < 0 && s.o2 < 0);
	assert_int_equal(s.c_health_get, 200);
	assert_int_equal(s.a_again, 200);
	http_pool_stats(r.pool, &st);
	assert_int_equal(st.rejected, 2);
	assert_int_equal(st.deadline, 0);
	rig_down(&r);
}

struct header_run {
	unsigned port;
	int wake_fd;
	int small, big;
};

/* GET /hello with a header of n bytes on a new connection; the status. */
static int get_with_header(unsigned port, size_t n)
{
	char *req = malloc(n + 128);
	char buf[256];
	ssize_t got;
	size_t len;
	int fd = tcp_open(1, port), st = -1;

	if (!req || fd < 0)
		goto out;
	len = (size_t)sprintf(req, "GET /hello HTTP/1.1\r\nHost: t\r\nX-Big: ");
	memset(req + len, 'a', n);
	len += n;
	len += (size_t)sprintf(req + len, "\r\n\r\n");
	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		goto out;
	got = recv(fd, buf, sizeof(buf) - 1, 0);
	if (got > 12) {
		buf[got] = '\0';
		st = atoi(buf + 9);
	}
out:
	free(req);
	if (fd >= 0)
		close(fd);
	return st;
}

static void *header_client(void *arg)
{
	struct header_run *h = arg;

	h->small = get_with_header(h->port, 6000);
	h->big = get_with_header(h->port, 20000);
	(void)!write(h->wake_fd, "x", 1);
	return NULL;
}

/* A connection's memory bounds its request: 6 KB of header is served,
 * 20 KB gets 431 (the pool's 16 KiB per connection). */
static void test_header_size(void **state)
{
	struct http_limits lim;
	struct rig r = { 0 };
	struct header_run h = { 0 };

	http_limits_default(1024, &lim);
	rig_up(&r, &lim);
	h.port = r.hport;
	h.wake_fd = r.wake[1];
	rig_run(&r, header_client, &h);
	assert_int_equal(h.small, 200);
	assert_int_equal(h.big, 431);
	rig_down(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_bind),
		cmocka_unit_test(test_health_not_eligible),
		cmocka_unit_test(test_go_time),
		cmocka_unit_test(test_routes_and_errors),
		cmocka_unit_test(test_healthz),
		cmocka_unit_test(test_health_extra),
		cmocka_unit_test(test_bind_in_use),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_shares),
		cmocka_unit_test(test_header_size),
	};
	int r;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	r = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return r;
}
