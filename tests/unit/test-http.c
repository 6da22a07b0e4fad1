/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The HTTP server on the loop, in-process: the loop runs in the main
 * thread, a libcurl client in a second thread GETs 127.0.0.1 on an
 * ephemeral port and then wakes the loop through a pipe.  Bounded by curl
 * timeouts and a safety timer.
 */
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
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

	return http_health_response(*healthy, 1714557600.5, 1714557610.25, NULL, resp);
}

/* Serve routes on an ephemeral port, run the client's requests. */
static void run_requests(const struct http_route *routes, size_t n_routes, void *ud,
			 struct client *c)
{
	struct loop *l;
	struct http_server *s;
	struct loop_timer *safety;
	pthread_t th;
	int p[2];

	assert_int_equal(loop_new(&l), 0);
	assert_int_equal(http_server_new(l, "127.0.0.1:0", routes, n_routes, ud, &s), 0);
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

	assert_int_equal(http_health_response(false, 1714557600.5, 1714557610.25,
					      "\"etcd\": {\"connected\": false}", &r),
			 0);
	assert_int_equal(r.status, 503);
	assert_string_equal(r.body,
			    "{\"lastUpdated\": \"2024-05-01 10:00:00.5 +0000 UTC\","
			    "\"currentTime\": \"2024-05-01 10:00:10.25 +0000 UTC\", \"nodeEligible\": true, "
			    "\"etcd\": {\"connected\": false}}");
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
	struct http_server *a, *b;
	char addr[32];

	assert_int_equal(loop_new(&l), 0);
	assert_int_equal(http_server_new(l, "127.0.0.1:0", routes, 1, NULL, &a), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", http_server_port(a));
	assert_true(http_server_new(l, addr, routes, 1, NULL, &b) < 0);
	assert_int_equal(http_server_new(l, "nonsense", routes, 1, NULL, &b), -EINVAL);
	http_server_free(a);
	loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_bind),
		cmocka_unit_test(test_go_time),
		cmocka_unit_test(test_routes_and_errors),
		cmocka_unit_test(test_healthz),
		cmocka_unit_test(test_health_extra),
		cmocka_unit_test(test_bind_in_use),
	};
	int r;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	r = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return r;
}
