/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small HTTP servers for /healthz and /metrics, on libmicrohttpd driven by
 * the daemon's loop: MHD runs in its external epoll mode (no thread of its
 * own); its epoll fd sits in our loop and a loop timer follows
 * MHD_get_timeout().  Only GET and HEAD are served: 405 otherwise, 404 for
 * unknown paths, 500 when a handler fails.
 */
#ifndef SVCNAT_SYS_HTTP_H
#define SVCNAT_SYS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "sys/loop.h"

struct http_response {
	unsigned status;          /* default 200 */
	const char *content_type; /* static string; default text/plain */
	char *body;               /* malloc'd by the handler, freed by the server */
	size_t len;
};

/* Fill resp; 0 or -errno (the client then gets a 500). */
typedef int (*http_handler_fn)(void *userdata, struct http_response *resp);

struct http_route {
	const char *path; /* exact match, e.g. "/healthz"; "*": every path */
	http_handler_fn fn;
};

struct http_server;

/*
 * Parse a bind address as kube-proxy takes it: "IP:PORT", "[IPv6]:PORT",
 * ":PORT" or "0.0.0.0:PORT" (all IPv4 addresses).  Port 0 picks a free
 * port.  0 or -EINVAL.
 */
int http_parse_bind(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);

/*
 * Listen on bind_address and serve routes (the array must outlive the
 * server; userdata is passed to every handler).  0, -EINVAL (bad address),
 * -EADDRINUSE / -EACCES / -errno (could not listen).
 */
int http_server_new(struct loop *l, const char *bind_address, const struct http_route *routes,
		    size_t n_routes, void *userdata, struct http_server **ret);
void http_server_free(struct http_server *s);
/* The port actually bound (useful with port 0). */
unsigned http_server_port(const struct http_server *s);

/*
 * kube-proxy's /healthz body:
 *   {"lastUpdated": "<t>","currentTime": "<t>", "nodeEligible": true}
 * with times as Go prints a time.Time in UTC
 * ("2024-05-01 10:00:00.123456789 +0000 UTC").  As kube-proxy does,
 * lastUpdated is currentTime when healthy; otherwise the unix time of the
 * last successful sync (<= 0: never, Go's zero time).  extra, when not
 * NULL, is a JSON member list appended to the object (svcnat's detail, e.g.
 * "\"etcd\": {...}").  Also sets status 200 / 503 and the JSON content
 * type.  0 or -ENOMEM.
 */
int http_health_response(bool healthy, double last_updated, double now, const char *extra,
			 struct http_response *resp);

/* Go's time.Time.String() of a unix time, in UTC, into buf (>= 64 bytes). */
const char *http_go_time(double unix_time, char *buf, size_t len);

#endif
