/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small HTTP servers for /healthz and /metrics, on libmicrohttpd driven by
 * the daemon's loop: MHD runs in its external epoll mode (no thread of its
 * own); its epoll fd sits in our loop and a loop timer follows
 * MHD_get_timeout().  Only GET and HEAD are served: 405 otherwise, 404 for
 * unknown paths, 500 when a handler fails.
 *
 * These ports face the network, so every server belongs to a pool that
 * bounds what clients can hold (sys/httplimit.h): connections in all, per
 * kind of server (the metrics server can never take the health servers'
 * share) and per client; a connection over a limit is closed as soon as it
 * is accepted.  Each request has a total deadline, from its connection's
 * accept (or the end of the previous request on that connection) to the
 * end of its response: MHD's own timeout is one of inactivity, which a
 * client sending a byte now and then extends for ever, so the pool shuts
 * down the socket of a request past its deadline whatever it sends.
 */
#ifndef SVCNAT_SYS_HTTP_H
#define SVCNAT_SYS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "sys/httplimit.h"
#include "sys/loop.h"

struct http_response {
	unsigned status;          /* default 200 */
	const char *content_type; /* static string; default text/plain */
	char *body;               /* malloc'd by the handler, freed by the server */
	size_t len;
	const char *header;       /* static name of one more header, or NULL */
	char header_value[32];    /* its value */
};

/* Fill resp; 0 or -errno (the client then gets a 500). */
typedef int (*http_handler_fn)(void *userdata, struct http_response *resp);

struct http_route {
	const char *path; /* exact match, e.g. "/healthz"; "*": every path */
	http_handler_fn fn;
};

struct http_server;

/* What a pool allows (http_limits_default() fills the daemon's). */
struct http_limits {
	unsigned max_conns;   /* every server of the pool together */
	unsigned other_conns; /* of which servers other than health ones (metrics) */
	unsigned per_client;  /* per client (IPv4 address, IPv6 /64) and kind */
	unsigned deadline_ms; /* per request, total */
	size_t conn_memory;   /* MHD's memory per connection (headers, buffers) */
};

/* Per-request deadline, per-client share and per-connection memory. */
#define HTTP_DEADLINE_MS 5000
#define HTTP_PER_CLIENT 32
#define HTTP_CONN_MEMORY (16 * 1024)
#define HTTP_MAX_CONNS 8192

/*
 * The limits for a process that may hold nofile descriptors: a quarter of
 * them for connections, at most HTTP_MAX_CONNS (at least 16), a quarter of
 * those for servers other than the health ones.
 */
void http_limits_default(unsigned long nofile, struct http_limits *ret);

/*
 * Raise RLIMIT_NOFILE's soft limit to its hard limit (at most 65536: a
 * flood's connections must fit beside everything else the daemon opens;
 * nothing in svcnat uses select()).  Returns the soft limit in force.
 */
unsigned long http_raise_nofile(void);

struct http_pool;

/* A pool on loop l with lim (copied).  0, -EINVAL or -ENOMEM. */
int http_pool_new(struct loop *l, const struct http_limits *lim, struct http_pool **ret);
/* Free a pool after every server of it. */
void http_pool_free(struct http_pool *p);

struct http_pool_stats {
	unsigned open;                   /* connections now */
	unsigned long long rejected;     /* closed at accept: over a limit */
	unsigned long long deadline;     /* shut down at their request's deadline */
};
void http_pool_stats(const struct http_pool *p, struct http_pool_stats *ret);

/*
 * Parse a bind address as kube-proxy takes it: "IP:PORT", "[IPv6]:PORT",
 * ":PORT" or "0.0.0.0:PORT" (all IPv4 addresses).  Port 0 picks a free
 * port.  0 or -EINVAL.
 */
int http_parse_bind(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);

/*
 * Listen on bind_address and serve routes (the array must outlive the
 * server; userdata is passed to every handler), within pool's limits for
 * servers of kind (the pool must outlive the server).  0, -EINVAL (bad
 * address), -EADDRINUSE / -EACCES / -errno (could not listen).
 */
int http_server_new(struct http_pool *pool, enum http_kind kind, const char *bind_address,
		    const struct http_route *routes, size_t n_routes, void *userdata,
		    struct http_server **ret);
void http_server_free(struct http_server *s);
/* The port actually bound (useful with port 0). */
unsigned http_server_port(const struct http_server *s);

/*
 * Serve fd, a connected stream socket (ownership passes, even on failure),
 * as a connection accepted from addr, within the pool's limits: tests and
 * the fuzzer feed requests through a socketpair this way.  0, or -EBUSY
 * when the limits turned it away (fd closed).
 */
int http_server_adopt(struct http_server *s, int fd, const struct sockaddr *addr, socklen_t len);
/* Do the server's pending work now, as its loop callbacks would. */
void http_server_dispatch(struct http_server *s);

/*
 * kube-proxy's /healthz body:
 *   {"lastUpdated": "<t>","currentTime": "<t>", "nodeEligible": true}
 * with times as Go prints a time.Time in UTC
 * ("2024-05-01 10:00:00.123456789 +0000 UTC") and nodeEligible as given
 * (false: the Node is being deleted).  Status 200 when healthy and
 * node_eligible, else 503; as kube-proxy does, lastUpdated is currentTime
 * when 200, otherwise the unix time of the last successful sync (<= 0:
 * never, Go's zero time).  extra, when not NULL, is a JSON member list
 * appended to the object (svcnat's detail, e.g. "\"etcd\": {...}").  Also
 * sets the JSON content type.  0 or -ENOMEM.
 */
int http_health_response(bool healthy, bool node_eligible, double last_updated, double now,
			 const char *extra, struct http_response *resp);

/* Go's time.Time.String() of a unix time, in UTC, into buf (>= 64 bytes). */
const char *http_go_time(double unix_time, char *buf, size_t len);

#endif
