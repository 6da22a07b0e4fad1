/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>

#include "sys/http.h"
#include "sys/log.h"
#include "util.h"

/* One open connection of a pool's servers. */
struct http_conn {
	struct http_conn *prev, *next; /* the pool's list, by request start */
	struct http_server *srv;
	struct httplimit_key key;
	bool keyed;                    /* counted in the pool's table */
	bool listed;                   /* in the list: not yet shut down */
	int fd;
	uint64_t start_usec;           /* of its current request */
};

struct http_pool {
	struct loop *loop;
	struct http_limits lim;
	struct httplimit *table;
	struct loop_timer *timer;      /* the oldest request's deadline */
	/* Open connections not yet shut down, oldest request first: every
	 * request has the same deadline, so the head's comes first. */
	struct http_conn *head, *tail;
	unsigned open;
	unsigned long long rejected, expired;
};

struct http_server {
	struct loop *loop;
	struct http_pool *pool;
	enum http_kind kind;
	struct MHD_Daemon *mhd;
	int epfd;
	struct loop_timer *timer;
	const struct http_route *routes;
	size_t n_routes;
	void *userdata;
	unsigned port;
};

void http_limits_default(unsigned long nofile, struct http_limits *ret)
{
	unsigned long n = nofile / 4;

	if (n > HTTP_MAX_CONNS)
		n = HTTP_MAX_CONNS;
	if (n < 16)
		n = 16;
	*ret = (struct http_limits){
		.max_conns = (unsigned)n,
		.other_conns = (unsigned)n / 4,
		.per_client = HTTP_PER_CLIENT,
		.deadline_ms = HTTP_DEADLINE_MS,
		.conn_memory = HTTP_CONN_MEMORY,
	};
}

unsigned long http_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	if (rl.rlim_cur < rl.rlim_max && rl.rlim_cur < 65536) {
		struct rlimit want = rl;

		want.rlim_cur = rl.rlim_max < 65536 ? rl.rlim_max : 65536;
		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			rl = want;
	}
	return rl.rlim_cur == RLIM_INFINITY ? 65536 : (unsigned long)rl.rlim_cur;
}

static void conn_unlist(struct http_pool *p, struct http_conn *c)
{
	if (!c->listed)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		p->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		p->tail = c->prev;
	c->prev = c->next = NULL;
	c->listed = false;
}

static void conn_list(struct http_pool *p, struct http_conn *c)
{
	c->prev = p->tail;
	c->next = NULL;
	if (p->tail)
		p->tail->next = c;
	else
		p->head = c;
	p->tail = c;
	c->listed = true;
}

static int pool_rearm(struct http_pool *p)
{
	if (!p->head)
		return loop_timer_arm(p->timer, 0);
	return loop_timer_arm_at(p->timer, p->head->start_usec + p->lim.deadline_ms * 1000ULL);
}

/* Shut down every connection whose request is past its deadline.  MHD sees
 * the socket end at once (its epoll set wakes our loop) and closes it. */
static int on_deadline(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct http_pool *p = userdata;
	uint64_t now = loop_now_usec(), d = p->lim.deadline_ms * 1000ULL;

	while (p->head && p->head->start_usec + d <= now) {
		struct http_conn *c = p->head;

		conn_unlist(p, c);
		if (c->fd >= 0)
			(void)shutdown(c->fd, SHUT_RDWR);
		p->expired++;
	}
	return pool_rearm(p);
}

int http_pool_new(struct loop *l, const struct http_limits *lim, struct http_pool **ret)
{
	struct httplimit_conf conf = {
		.max_total = lim->max_conns,
		.max_kind = { [HTTP_HEALTH] = lim->max_conns, [HTTP_OTHER] = lim->other_conns },
		.per_client = lim->per_client,
	};
	struct http_pool *p;
	uint64_t seed = 0;
	int r;

	if (!lim->max_conns || !lim->per_client || !lim->deadline_ms)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->loop = l;
	p->lim = *lim;
	if (!p->lim.conn_memory)
		p->lim.conn_memory = HTTP_CONN_MEMORY;
	/* The hash's key: a weak seed (the clock) if getrandom() fails. */
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = loop_now_usec() * 0x9e3779b97f4a7c15ULL;
	r = httplimit_new(&conf, seed, &p->table);
	if (r >= 0)
		r = loop_timer_new(l, on_deadline, p, &p->timer);
	if (r < 0) {
		http_pool_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

void http_pool_free(struct http_pool *p)
{
	if (!p)
		return;
	loop_timer_free(p->timer);
	httplimit_free(p->table);
	free(p);
}

void http_pool_stats(const struct http_pool *p, struct http_pool_stats *ret)
{
	*ret = (struct http_pool_stats){
		.open = p->open,
		.rejected = p->rejected,
		.deadline = p->expired,
	};
}

/* MHD's accept policy: within the pool's limits? */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct http_server *s = cls;
	struct http_pool *p = s->pool;
	struct httplimit_key key;
	int r;

	if (httplimit_key(addr, addrlen, s->kind, &key) < 0)
		r = p->open >= p->lim.max_conns ? -ENOSPC : 0;
	else
		r = httplimit_check(p->table, &key);
	if (r == 0)
		return MHD_YES;
	p->rejected++;
	log_debug("http: port %u: closing a connection at accept: %s", s->port,
		  r == -EDQUOT ? "the client's connections are at their limit"
			       : "the servers' connections are at their limit");
	return MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *s = cls;
	struct http_pool *p = s->pool;
	struct http_conn *c = *socket_context;
	bool was_head;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ai, *fi;

		c = calloc(1, sizeof(*c));
		if (!c) {
			/* Not tracked, so no deadline: close it now. */
			fi = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
			if (fi)
				(void)shutdown(fi->connect_fd, SHUT_RDWR);
			return;
		}
		c->srv = s;
		fi = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		c->fd = fi ? fi->connect_fd : -1;
		ai = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		if (ai && ai->client_addr &&
		    httplimit_key(ai->client_addr,
				  ai->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
									 : sizeof(struct sockaddr_in),
				  s->kind, &c->key) == 0)
			c->keyed = httplimit_add(p->table, &c->key) == 0;
		c->start_usec = loop_now_usec();
		conn_list(p, c);
		p->open++;
		*socket_context = c;
		if (p->head == c)
			(void)pool_rearm(p);
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_CLOSED || !c)
		return;
	was_head = p->head == c;

	conn_unlist(p, c);
	if (c->keyed)
		httplimit_del(p->table, &c->key);
	p->open--;
	free(c);
	*socket_context = NULL;
	if (was_head)
		(void)pool_rearm(p);
}

/* A request ended: the connection's next request gets its own deadline. */
static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct http_pool *p = s->pool;
	const union MHD_ConnectionInfo *ci;
	struct http_conn *c;
	bool was_head;

	if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		return;
	ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	c = ci ? ci->socket_context : NULL;
	if (!c || !c->listed)
		return;
	was_head = p->head == c;

	conn_unlist(p, c);
	c->start_usec = loop_now_usec();
	conn_list(p, c);
	if (was_head)
		(void)pool_rearm(p);
}

int http_parse_bind(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len)
{
	struct sockaddr_storage ss = { 0 };
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *port_s;
	unsigned long port;
	char *end;
	size_t hlen;

	if (!s)
		return -EINVAL;
	if (*s == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb[1] != ':')
			return -EINVAL;
		hlen = (size_t)(rb - s - 1);
		if (hlen == 0 || hlen >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hlen);
		host[hlen] = '\0';
		port_s = rb + 2;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return -EINVAL;
		hlen = (size_t)(colon - s);
		if (hlen >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, hlen);
		host[hlen] = '\0';
		port_s = colon + 1;
	}
	if (*port_s < '0' || *port_s > '9')
		return -EINVAL;
	errno = 0;
	port = strtoul(port_s, &end, 10);
	if (errno || *end || port > 65535)
		return -EINVAL;
	if (*s == '[') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;

		if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
			return -EINVAL;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*ret_len = sizeof(*a6);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;

		if (hlen == 0)
			a4->sin_addr.s_addr = htonl(INADDR_ANY);
		else if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
			return -EINVAL;
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*ret_len = sizeof(*a4);
	}
	*ret = ss;
	return 0;
}

static enum MHD_Result queue_simple(struct MHD_Connection *c, unsigned status, const char *text)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct http_server *s = cls;
	struct http_response resp = { .status = 200 };
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t i;

	/* MHD calls once for the headers and again for any body: answer
	 * on the second call so a request body is consumed first. */
	if (!*con_cls) {
		*con_cls = s;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (!streq(method, MHD_HTTP_METHOD_GET) && !streq(method, MHD_HTTP_METHOD_HEAD))
		return queue_simple(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	for (i = 0; i < s->n_routes; i++)
		if (streq(s->routes[i].path, "*") || streq(url, s->routes[i].path))
			break;
	if (i == s->n_routes)
		return queue_simple(c, MHD_HTTP_NOT_FOUND, "not found\n");
	if (s->routes[i].fn(s->userdata, &resp) < 0) {
		free(resp.body);
		return queue_simple(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error\n");
	}
	r = MHD_create_response_from_buffer(resp.len, resp.body ? resp.body : (void *)"",
					    resp.body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(resp.body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				resp.content_type ? resp.content_type : "text/plain; charset=utf-8");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (resp.header)
		MHD_add_response_header(r, resp.header, resp.header_value);
	ret = MHD_queue_response(c, resp.status ? resp.status : 200, r);
	MHD_destroy_response(r);
	return ret;
}

static int rearm(struct http_server *s)
{
	MHD_UNSIGNED_LONG_LONG ms = 0;

	if (MHD_get_timeout(s->mhd, &ms) != MHD_YES)
		return loop_timer_arm(s->timer, 0);
	/* 0 means "run again now": a timerfd needs a non-zero value. */
	return loop_timer_arm(s->timer, ms ? (uint64_t)ms * 1000ULL : 1);
}

static int on_epoll(struct loop *l, int fd, uint32_t events, void *userdata)
{
	struct http_server *s = userdata;

	if (MHD_run(s->mhd) != MHD_YES)
		log_debug("http: MHD_run failed, continuing");
	return rearm(s);
}

static int on_timer(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct http_server *s = userdata;

	(void)MHD_run(s->mhd);
	return rearm(s);
}

/*
 * libmicrohttpd's own messages (a refused connection, a client's bad
 * request) can come once per connection: they are details below -v 4's,
 * at 6, where klog-based components log HTTP traffic.
 */
#define LOG_V_MHD 6

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	(void)cls;
	if (!log_enabled(LOG_LEVEL_INFO, LOG_V_MHD))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = '\0';
	log_v(LOG_V_MHD, "http: libmicrohttpd: %s", msg);
}

int http_server_new(struct http_pool *pool, enum http_kind kind, const char *bind_address,
		    const struct http_route *routes, size_t n_routes, void *userdata,
		    struct http_server **ret)
{
	struct loop *l = pool->loop;
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	struct http_server *s;
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	socklen_t sl;
	int r;

	r = http_parse_bind(bind_address, &ss, &sl);
	if (r < 0)
		return r;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = l;
	s->pool = pool;
	s->kind = kind < HTTP_KIND_MAX ? kind : HTTP_OTHER;
	s->routes = routes;
	s->n_routes = n_routes;
	s->userdata = userdata;
	s->epfd = -1;
	errno = 0;
	/* MHD's own limits are the pool's at most (the pool decides at
	 * accept); its inactivity timeout is the deadline, rounded up. */
	s->mhd = MHD_start_daemon(flags, 0, on_accept, s, on_request, s,
				  /* first, or MHD says so on its own stderr */
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_LIMIT, pool->lim.max_conns,
				  MHD_OPTION_CONNECTION_TIMEOUT,
				  (unsigned)((pool->lim.deadline_ms + 999) / 1000),
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool->lim.conn_memory,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				  MHD_OPTION_END);
	if (!s->mhd) {
		r = errno ? -errno : -EADDRNOTAVAIL;
		free(s);
		return r;
	}
	info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info || info->epoll_fd < 0) {
		r = -EOPNOTSUPP;
		goto fail;
	}
	s->epfd = info->epoll_fd;
	info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : 0;
	r = loop_timer_new(l, on_timer, s, &s->timer);
	if (r < 0)
		goto fail;
	r = loop_add_io(l, s->epfd, EPOLLIN, on_epoll, s);
	if (r < 0)
		goto fail;
	r = rearm(s);
	if (r < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	http_server_free(s);
	return r;
}

void http_server_free(struct http_server *s)
{
	if (!s)
		return;
	if (s->epfd >= 0)
		loop_del_io(s->loop, s->epfd);
	loop_timer_free(s->timer);
	if (s->mhd)
		MHD_stop_daemon(s->mhd);
	free(s);
}

unsigned http_server_port(const struct http_server *s)
{
	return s->port;
}

int http_server_adopt(struct http_server *s, int fd, const struct sockaddr *addr, socklen_t len)
{
	/* MHD closes fd when it refuses it. */
	if (MHD_add_connection(s->mhd, fd, addr, len) != MHD_YES)
		return -EBUSY;
	return 0;
}

void http_server_dispatch(struct http_server *s)
{
	(void)MHD_run(s->mhd);
	(void)rearm(s);
}

const char *http_go_time(double unix_time, char *buf, size_t len)
{
	struct tm tm;
	time_t sec;
	long nsec;
	char frac[32] = "";

	if (unix_time <= 0) {
		snprintf(buf, len, "0001-01-01 00:00:00 +0000 UTC");
		return buf;
	}
	sec = (time_t)floor(unix_time);
	nsec = lround((unix_time - (double)sec) * 1e9);
	if (nsec >= 1000000000L) {
		sec++;
		nsec -= 1000000000L;
	}
	gmtime_r(&sec, &tm);
	if (nsec) {
		int n;

		/* Go's ".999999999": trailing zeros dropped. */
		snprintf(frac, sizeof(frac), ".%09ld", nsec);
		n = (int)strlen(frac);
		while (frac[n - 1] == '0')
			frac[--n] = '\0';
	}
	snprintf(buf, len, "%04d-%02d-%02d %02d:%02d:%02d%s +0000 UTC", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
	return buf;
}

int http_health_response(bool healthy, bool node_eligible, double last_updated, double now,
			 const char *extra, struct http_response *resp)
{
	char lu[64], cur[64];
	char *body = NULL;
	int n;

	healthy = healthy && node_eligible;
	http_go_time(now, cur, sizeof(cur));
	http_go_time(healthy ? now : last_updated, lu, sizeof(lu));
	n = asprintf(&body, "{\"lastUpdated\": \"%s\",\"currentTime\": \"%s\", \"nodeEligible\": %s%s%s}",
		     lu, cur, node_eligible ? "true" : "false", extra ? ", " : "", extra ? extra : "");
	if (n < 0)
		return -ENOMEM;
	resp->status = healthy ? 200 : 503;
	resp->content_type = "application/json";
	resp->body = body;
	resp->len = (size_t)n;
	return 0;
}
