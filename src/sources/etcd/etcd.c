/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "sources/etcd/etcd.h"
#include "sources/etcd/etcdcurl.h"
#include "sources/net/base64.h"
#include "sources/net/curlloop.h"
#include "sources/net/framer.h"
#include "sources/net/jitter.h"
#include "sources/net/listcap.h"
#include "sources/net/reflector.h"
#include "sources/decode/decode.h"
#include "util.h"

#define RANGE_PAGE 1000            /* kvs per range request */
#define RANGE_TIMEOUT_MS 30000
#define CONNECT_TIMEOUT_MS 3000
/* A watch is idle for long stretches: TCP keepalive (and a user timeout for
 * unacknowledged data) is what notices a member that vanished. */
#define KEEPALIVE_IDLE_S 5
#define KEEPALIVE_INTVL_S 2
#define KEEPALIVE_CNT 3
#define USER_TIMEOUT_MS 15000
/* A watch that made progress (events or a progress notification) and
 * lasted this long starts the backoff again from its base. */
#define WATCH_SHORT_USEC 1000000ull
/* Re-reads (compaction, lost track) closer than this back off. */
#define REREAD_MIN_USEC (5 * 1000000ull)
/* Caps on one full read and on the store: 200,000 objects of each of the
 * three kinds of keys (specs, endpointslices, endpoints), a file's List
 * limit; 2.5 times the pages those take at RANGE_PAGE. */
#define READ_MAX_KEYS (3 * (size_t)DECODE_MAX_ITEMS)
#define READ_MAX_PAGES (READ_MAX_KEYS / RANGE_PAGE * 5 / 2)
#define READ_MAX_BYTES (1ull << 30)
#define READ_MAX_USEC (600 * 1000000ull)

/* ---- options, connection settings ---- */

void etcd_endpoints_free(char **urls, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(urls[i]);
	free(urls);
}

static bool url_ok(const char *u, size_t n)
{
	size_t skip;

	if (n > 7 && !strncmp(u, "http://", 7))
		skip = 7;
	else if (n > 8 && !strncmp(u, "https://", 8))
		skip = 8;
	else
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)u[i] <= ' ' || u[i] == '"' || u[i] == '\\')
			return false;
	return u[skip] != '/';
}

int etcd_endpoints_parse(const char *csv, char ***ret_urls, size_t *ret_n)
{
	char **urls = NULL;
	size_t n = 0, cap = 0;
	const char *p = csv;

	if (!csv || !*csv)
		return -EINVAL;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		while (len > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		while (len > 0 && p[len - 1] == '/')
			len--;
		if (!url_ok(p, len) || len > 1024) {
			etcd_endpoints_free(urls, n);
			return -EINVAL;
		}
		if (GROW(urls, cap, n + 1) < 0 || !(urls[n] = strndup(p, len))) {
			etcd_endpoints_free(urls, n);
			return -ENOMEM;
		}
		n++;
		if (!end)
			break;
		p = end + 1;
	}
	*ret_urls = urls;
	*ret_n = n;
	return 0;
}

/* The options' shape, without reading a file. */
static int check_shape(const struct etcd_options *o, struct diag_list *d)
{
	char **urls = NULL, *prefix = NULL;
	size_t n = 0;
	int r, bad = 0;

	r = etcd_endpoints_parse(o->endpoints, &urls, &n);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		bad = 1;
		diag_add(d, DIAG_ERROR, NULL, NULL, "--etcd-endpoints",
			 "'%s' is not a comma-separated list of http:// or https:// URLs",
			 o->endpoints ? o->endpoints : "");
	}
	etcd_endpoints_free(urls, n);
	r = etcd_prefix_normalize(o->prefix, &prefix);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		bad = 1;
		diag_add(d, DIAG_ERROR, NULL, NULL, "--etcd-prefix",
			 "'%s' must be an absolute key path such as /registry", o->prefix);
	}
	free(prefix);
	if ((o->cert && *o->cert) != (o->key && *o->key)) {
		bad = 1;
		diag_add(d, DIAG_ERROR, NULL, NULL, o->cert && *o->cert ? "--etcd-key" : "--etcd-cert",
			 "--etcd-cert and --etcd-key go together");
	}
	return bad ? -EINVAL : 0;
}

int etcd_options_check(const struct etcd_options *o, struct diag_list *d)
{
	struct etcd_conn c;
	int r;

	r = etcd_conn_init(&c, o, d);
	etcd_conn_done(&c);
	return r;
}

void etcd_conn_done(struct etcd_conn *c)
{
	etcd_endpoints_free(c->urls, c->n_urls);
	free(c->prefix);
	pemfile_done(&c->ca);
	pemfile_done(&c->cert);
	pemfile_done(&c->key);
	*c = (struct etcd_conn){ 0 };
}

/* The option each TLS file comes from, for messages. */
static const char *const tls_options[] = { "--etcd-cacert", "--etcd-cert", "--etcd-key" };

/* A TLS file that cannot be used is a wrong option (exit 2). */
static int tls_read(struct etcd_conn *c, size_t i, struct pemfile *p, const char *path,
		    struct diag_list *d)
{
	const struct cfgfile_who who = { tls_options[i], NULL };
	int r;

	if (!path || !*path)
		return 0;
	p->file = strdup(path);
	if (!p->file)
		return -ENOMEM;
	r = pemfile_read(p, c->mode, &who, d);
	return r == -ENOMEM ? r : r < 0 ? -EINVAL : 0;
}

int etcd_conn_init(struct etcd_conn *c, const struct etcd_options *o, struct diag_list *d)
{
	const char *paths[] = { o->cacert, o->cert, o->key };
	struct pemfile *pems[] = { &c->ca, &c->cert, &c->key };
	int r, bad;

	*c = (struct etcd_conn){ .mode = o->mode };
	r = check_shape(o, d);
	if (r == -ENOMEM)
		return r;
	bad = r < 0;
	/* Every file is read, so that each wrong one gets its line. */
	for (size_t i = 0; i < ARRAY_SIZE(pems); i++) {
		r = tls_read(c, i, pems[i], paths[i], d);
		if (r == -ENOMEM) {
			etcd_conn_done(c);
			return r;
		}
		bad |= r < 0;
	}
	if (!bad) {
		r = etcd_endpoints_parse(o->endpoints, &c->urls, &c->n_urls);
		if (r >= 0)
			r = etcd_prefix_normalize(o->prefix, &c->prefix);
	}
	if (bad || r < 0) {
		etcd_conn_done(c);
		return bad ? -EINVAL : r;
	}
	return 0;
}

int etcd_conn_refresh(struct etcd_conn *c, struct diag_list *d)
{
	struct pemfile *pems[] = { &c->ca, &c->cert, &c->key };
	int r, first = 0, changed = 0;

	for (size_t i = 0; i < ARRAY_SIZE(pems); i++) {
		const struct cfgfile_who who = { tls_options[i], NULL };

		r = pemfile_refresh(pems[i], c->mode, &who, d);
		if (r < 0 && !first)
			first = r;
		changed |= r > 0;
	}
	return first ? first : changed;
}

static int sockopt_cb(void *userdata, curl_socket_t fd, curlsocktype purpose)
{
	int cnt = KEEPALIVE_CNT;
	unsigned ut = USER_TIMEOUT_MS;

	/* curl 7.88 sets idle and interval but not the probe count. */
	if (purpose == CURLSOCKTYPE_IPCXN) {
		(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
		(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
	}
	return CURL_SOCKOPT_OK;
}

int etcd_curl_prepare(CURL *e, const struct etcd_conn *c, const char *url, const char *path,
		      const char *body, long timeout_ms, struct curl_slist **headers)
{
	_cleanup_free_ char *full = NULL;
	struct curl_slist *h;
	CURLcode cc = CURLE_OK;
	int r;

	if (asprintf(&full, "%s%s", url, path) < 0)
		return -ENOMEM;
	h = curl_slist_append(NULL, "Content-Type: application/json");
	/* etcd's require-leader metadata (clientv3.WithRequireLeader), through
	 * the gateway's Grpc-Metadata- headers: a member cut off from the
	 * quorum ends the watch instead of keeping it silently stale. */
	if (h && !curl_slist_append(h, "Grpc-Metadata-hasleader: true")) {
		curl_slist_free_all(h);
		h = NULL;
	}
	if (!h)
		return -ENOMEM;
#define SET(opt, val)                                                                  \
	do {                                                                           \
		if (cc == CURLE_OK)                                                    \
			cc = curl_easy_setopt(e, opt, val);                            \
	} while (0)
	SET(CURLOPT_URL, full);
	SET(CURLOPT_HTTPHEADER, h);
	SET(CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	SET(CURLOPT_COPYPOSTFIELDS, body);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SET(CURLOPT_PROXY, "");
	SET(CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
	SET(CURLOPT_TIMEOUT_MS, timeout_ms);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_TCP_KEEPIDLE, (long)KEEPALIVE_IDLE_S);
	SET(CURLOPT_TCP_KEEPINTVL, (long)KEEPALIVE_INTVL_S);
	SET(CURLOPT_SOCKOPTFUNCTION, sockopt_cb);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
#undef SET
	r = cc == CURLE_OK ? 0 : cc == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EIO;
	/* The files as bytes (sources/file/pemfile.h): libcurl opens no path. */
	if (r >= 0)
		r = curlloop_set_tls(e, c->ca.data, c->ca.len, c->cert.data, c->cert.len,
				     c->key.data, c->key.len);
	if (r < 0) {
		curl_slist_free_all(h);
		return r;
	}
	*headers = h;
	return 0;
}

/* ---- the source ---- */

enum req_kind {
	REQ_RANGE,
	REQ_WATCH,
};

enum watch_verdict {
	WATCH_OK,
	WATCH_COMPACTED, /* re-read */
	WATCH_FAILED,    /* reconnect elsewhere */
	WATCH_REREAD,    /* the store lost track (ENOMEM): re-read */
};

struct request {
	struct etcd_source *src;
	enum req_kind kind;
	CURL *easy;
	struct curl_slist *headers;
	char *body; /* range: the answer so far */
	size_t len, cap;
	struct framer framer; /* watch */
	enum watch_verdict verdict;
	uint64_t started;
	bool created;  /* the member confirmed the watch */
	bool progress; /* events or a progress notification arrived */
	bool announce; /* created after failures: say CONNECTED at the first progress */
	char why[256];
	char errbuf[CURL_ERROR_SIZE];
};

/* A full read: a list (list_is_progress false: only a watch that delivers
 * and lasts starts the backoff again). */
static const struct reflector_config refl_config = {
	.backoff_base_usec = ETCD_BACKOFF_BASE_USEC,
	.backoff_cap_usec = ETCD_BACKOFF_CAP_USEC,
	.relist_min_usec = REREAD_MIN_USEC,
	.watch_short_usec = WATCH_SHORT_USEC,
};

struct etcd_source {
	struct loop *loop;
	struct merge *merge;
	struct etcd_conn conn;
	struct etcd_store *store;
	char *range_start, *range_end; /* raw keys */
	etcd_event_fn fn;
	void *userdata;

	struct curlloop curl;
	struct loop_timer *retry_timer;
	struct request *req; /* the one transfer in flight */

	struct reflector rf;    /* read, watch, backoff */
	size_t cur;             /* index of the member in use */
	int64_t read_rev;       /* revision the pages are read at (0: first page) */
	char *read_next;        /* key the next page starts at */
	size_t read_next_len;
	uint64_t read_started;
	struct listcap cap;     /* the full read under way */
	size_t read_keys;
	uint64_t rnd;

	bool synced;
	uint64_t reconnects;
	uint64_t last_read_usec;
	char last_error[256];
};

static void notify(struct etcd_source *s, enum etcd_event ev, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void notify(struct etcd_source *s, enum etcd_event ev, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!s->fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->fn(s, ev, msg, s->userdata);
}

static void diag_line(const char *line, void *userdata)
{
	notify(userdata, ETCD_EV_DIAG, "%s", line);
}

static void drain_diags(struct etcd_source *s)
{
	struct diag_list *dl = etcd_store_diags(s->store);

	diag_list_each_line(dl, diag_line, s);
	diag_list_done(dl);
	diag_list_init(dl);
}

static void request_free(struct etcd_source *s, struct request *q)
{
	if (!q)
		return;
	if (q->easy) {
		curl_multi_remove_handle(s->curl.multi, q->easy);
		curl_easy_cleanup(q->easy);
	}
	curl_slist_free_all(q->headers);
	framer_done(&q->framer);
	free(q->body);
	free(q);
}

static void cancel_request(struct etcd_source *s)
{
	struct request *q = s->req;

	s->req = NULL;
	request_free(s, q);
}

static int connect_now(struct etcd_source *s);

static void fail(struct etcd_source *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A request or the watch failed: keep what we have, retry on the next member. */
static void fail(struct etcd_source *s, const char *fmt, ...)
{
	const char *url = s->conn.urls[s->cur];
	uint64_t delay;
	size_t n;
	bool first;
	va_list ap;

	n = (size_t)snprintf(s->last_error, sizeof(s->last_error), "%.200s: ", url);
	if (n < sizeof(s->last_error)) {
		va_start(ap, fmt);
		vsnprintf(s->last_error + n, sizeof(s->last_error) - n, fmt, ap);
		va_end(ap);
	}
	cancel_request(s);
	if (s->rf.state == REFLECTOR_LISTING)
		etcd_store_read_abort(s->store);
	delay = reflector_failed(&s->rf, jitter_next(&s->rnd), 0, &first);
	s->cur = (s->cur + 1) % s->conn.n_urls;
	notify(s, first ? ETCD_EV_DISCONNECTED : ETCD_EV_RETRY,
	       "%s; keeping the last state (revision %" PRId64 "), retrying %s in %" PRIu64
	       " ms",
	       s->last_error, etcd_store_revision(s->store), s->conn.urls[s->cur],
	       delay / 1000);
	if (loop_timer_arm(s->retry_timer, delay ? delay : 1) < 0)
		snprintf(s->last_error, sizeof(s->last_error), "cannot arm the retry timer");
}

static size_t range_write(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct request *q = userdata;
	size_t n = size * nmemb;

	if (n > ETCD_MAX_LINE || q->len > ETCD_MAX_LINE - n)
		return 0;
	if (GROW(q->body, q->cap, q->len + n + 1) < 0)
		return 0;
	memcpy(q->body + q->len, data, n);
	q->len += n;
	return n;
}

static int watch_line(const char *line, size_t len, void *userdata)
{
	struct request *q = userdata;
	struct etcd_source *s = q->src;
	struct etcd_watch_resp w;
	int r;

	r = etcd_watch_resp_parse(line, len, &w);
	if (r < 0) {
		snprintf(q->why, sizeof(q->why), "malformed watch response (%s)", strerror(-r));
		q->verdict = WATCH_FAILED;
		return -EPROTO;
	}
	r = 0;
	if (w.error) {
		snprintf(q->why, sizeof(q->why), "watch failed: %s", w.error);
		q->verdict = etcd_error_is_compacted(w.error) ? WATCH_COMPACTED : WATCH_FAILED;
		r = -EPROTO;
		goto out;
	}
	if (w.created) {
		/* Created is no progress by itself (a member may create every
		 * watch and cancel it at once): watch_done() judges the count. */
		s->rf.connected = true;
		q->created = true;
		if (s->rf.attempt == 0)
			notify(s, ETCD_EV_CONNECTED, "watching %s from revision %" PRId64,
			       s->conn.urls[s->cur], etcd_store_revision(s->store) + 1);
		else
			q->announce = true;
	}
	if (w.canceled) {
		if (w.compact_revision > 0) {
			snprintf(q->why, sizeof(q->why),
				 "revision %" PRId64 " was compacted (compact revision %" PRId64 ")",
				 etcd_store_revision(s->store) + 1, w.compact_revision);
			q->verdict = WATCH_COMPACTED;
		} else {
			snprintf(q->why, sizeof(q->why), "watch canceled: %s",
				 w.cancel_reason ? w.cancel_reason : "no reason given");
			q->verdict = WATCH_FAILED;
		}
		r = -ECANCELED;
		goto out;
	}
	if (w.n_events) {
		struct etcd_store_stats st;

		r = etcd_store_apply_events(s->store, w.events, w.n_events);
		drain_diags(s);
		if (r < 0) {
			snprintf(q->why, sizeof(q->why), "applying events: %s", strerror(-r));
			q->verdict = WATCH_REREAD;
			goto out;
		}
		etcd_store_stats(s->store, &st);
		if (st.n_keys > READ_MAX_KEYS) {
			snprintf(q->why, sizeof(q->why),
				 "watch: more than %zu keys holding objects: the limit (as for a read)",
				 READ_MAX_KEYS);
			q->verdict = WATCH_FAILED;
			r = -E2BIG;
			goto out;
		}
		q->progress = true;
	} else if (!w.created && w.revision > 0) {
		/* A progress notification: nothing is pending below it. */
		etcd_store_advance(s->store, w.revision);
		q->progress = true;
	}
	if (q->announce && q->progress) {
		q->announce = false;
		notify(s, ETCD_EV_CONNECTED, "watching %s from revision %" PRId64
		       " (after %u failed attempts)", s->conn.urls[s->cur],
		       etcd_store_revision(s->store) + 1, s->rf.attempt);
	}
out:
	etcd_watch_resp_done(&w);
	return r;
}

static size_t watch_write(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct request *q = userdata;
	size_t n = size * nmemb;
	int r;

	r = framer_feed(&q->framer, data, n, watch_line, q);
	if (r == -EFBIG || r == -ENOMEM) {
		snprintf(q->why, sizeof(q->why), "watch response: %s", strerror(-r));
		q->verdict = WATCH_FAILED;
	}
	/* Anything but n aborts the transfer; it then ends in watch_done(). */
	return r < 0 ? 0 : n;
}

/* No page of a read may outlast the read's own time cap. */
static long range_timeout_ms(const struct etcd_source *s)
{
	uint64_t left = listcap_remaining_usec(&s->cap, loop_now_usec()) / 1000;

	return left < RANGE_TIMEOUT_MS ? (long)left + 1 : RANGE_TIMEOUT_MS;
}

static int start_request(struct etcd_source *s, enum req_kind kind, const char *path,
			 const char *body)
{
	struct request *q;
	int r;

	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->src = s;
	q->kind = kind;
	q->started = loop_now_usec();
	framer_init(&q->framer, ETCD_MAX_LINE);
	q->easy = curl_easy_init();
	if (!q->easy) {
		request_free(s, q);
		return -ENOMEM;
	}
	r = etcd_curl_prepare(q->easy, &s->conn, s->conn.urls[s->cur], path, body,
			      kind == REQ_RANGE ? range_timeout_ms(s) : 0, &q->headers);
	if (r >= 0 &&
	    (curl_easy_setopt(q->easy, CURLOPT_WRITEFUNCTION,
			      kind == REQ_RANGE ? range_write : watch_write) != CURLE_OK ||
	     curl_easy_setopt(q->easy, CURLOPT_WRITEDATA, q) != CURLE_OK ||
	     curl_easy_setopt(q->easy, CURLOPT_PRIVATE, q) != CURLE_OK ||
	     curl_easy_setopt(q->easy, CURLOPT_ERRORBUFFER, q->errbuf) != CURLE_OK))
		r = -EIO;
	if (r < 0) {
		request_free(s, q);
		return r;
	}
	if (curl_multi_add_handle(s->curl.multi, q->easy) != CURLM_OK) {
		curl_easy_cleanup(TAKE_PTR(q->easy));
		request_free(s, q);
		return -EIO;
	}
	s->req = q;
	return 0;
}

static int issue_range(struct etcd_source *s)
{
	_cleanup_free_ char *k = NULL, *e = NULL, *body = NULL;
	int r;

	k = base64_encode(s->read_next, s->read_next_len);
	e = base64_encode(s->range_end, strlen(s->range_end));
	if (!k || !e)
		return -ENOMEM;
	if (s->read_rev > 0)
		r = asprintf(&body,
			     "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":\"%d\",\"revision\":\"%" PRId64
			     "\"}",
			     k, e, RANGE_PAGE, s->read_rev);
	else
		r = asprintf(&body, "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":\"%d\"}", k, e,
			     RANGE_PAGE);
	if (r < 0)
		return -ENOMEM;
	return start_request(s, REQ_RANGE, "/v3/kv/range", body);
}

static int start_read(struct etcd_source *s)
{
	free(s->read_next);
	s->read_next_len = strlen(s->range_start);
	s->read_next = strdup(s->range_start);
	if (!s->read_next)
		return -ENOMEM;
	s->read_rev = 0;
	s->read_started = loop_now_usec();
	s->read_keys = 0;
	listcap_begin(&s->cap, s->read_started);
	s->rf.state = REFLECTOR_LISTING;
	etcd_store_read_begin(s->store);
	return issue_range(s);
}

static int start_watch(struct etcd_source *s)
{
	_cleanup_free_ char *k = NULL, *e = NULL, *body = NULL;

	k = base64_encode(s->range_start, strlen(s->range_start));
	e = base64_encode(s->range_end, strlen(s->range_end));
	if (!k || !e)
		return -ENOMEM;
	if (asprintf(&body,
		     "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\",\"start_revision\":\"%" PRId64
		     "\",\"progress_notify\":true}}",
		     k, e, etcd_store_revision(s->store) + 1) < 0)
		return -ENOMEM;
	s->rf.state = REFLECTOR_WATCHING;
	return start_request(s, REQ_WATCH, "/v3/watch", body);
}

static void tls_kept_line(const char *line, void *userdata)
{
	notify(userdata, ETCD_EV_DIAG, "%s (keeping what was read before)", line);
}

/* A new connection takes the TLS files as they are now (rotation); one
 * that cannot be used keeps the bytes read before. */
static void refresh_tls(struct etcd_source *s)
{
	struct diag_list d;

	diag_list_init(&d);
	if (etcd_conn_refresh(&s->conn, &d) < 0)
		diag_list_each_line(&d, tls_kept_line, s);
	diag_list_done(&d);
}

static int connect_now(struct etcd_source *s)
{
	int r;

	refresh_tls(s);
	r = reflector_next_is_list(&s->rf) ? start_read(s) : start_watch(s);
	if (r < 0)
		fail(s, "cannot start a request: %s", strerror(-r));
	return r;
}

/*
 * Read everything again (compaction, or the store lost track).  A member
 * that compacts every watch at once must not get a read storm: a re-read
 * within REREAD_MIN_USEC of the last one waits out a growing backoff.
 */
static void reread(struct etcd_source *s, const char *why)
{
	cancel_request(s);
	if (s->rf.state == REFLECTOR_LISTING)
		etcd_store_read_abort(s->store);
	if (reflector_relist(&s->rf, loop_now_usec())) {
		fail(s, "%s: again within %llu s of the last re-read", why,
		     (unsigned long long)(REREAD_MIN_USEC / 1000000));
		return;
	}
	notify(s, ETCD_EV_COMPACTED, "%s: re-reading everything", why);
	(void)connect_now(s);
}

static void read_complete(struct etcd_source *s);

/* A page of the full read is in (or the request failed). */
static void range_done(struct etcd_source *s, struct request *q, CURLcode cc)
{
	struct etcd_range_resp rr;
	char why[200];
	long http = 0;
	int r;

	if (cc != CURLE_OK) {
		fail(s, "range: %s", q->errbuf[0] ? q->errbuf : curl_easy_strerror(cc));
		return;
	}
	curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &http);
	r = etcd_range_resp_parse(q->body ? q->body : "", q->len, &rr);
	if (r < 0) {
		fail(s, "range: HTTP %ld, unreadable answer", http);
		return;
	}
	if (rr.error) {
		if (s->read_rev > 0 && etcd_error_is_compacted(rr.error)) {
			/* Compacted between two pages: start over at a new revision. */
			char what[128];

			snprintf(what, sizeof(what), "revision %" PRId64 " compacted while reading",
				 s->read_rev);
			etcd_range_resp_done(&rr);
			reread(s, what);
			return;
		}
		fail(s, "range: %s (code %d)", rr.error, rr.error_code);
		etcd_range_resp_done(&rr);
		return;
	}
	if (s->read_rev == 0)
		s->read_rev = rr.revision;
	s->read_keys += rr.n_kvs;
	r = listcap_page(&s->cap, q->len, s->read_keys, loop_now_usec(), why, sizeof(why));
	if (r >= 0 && rr.more && rr.n_kvs > 0)
		r = listcap_next_page(&s->cap, loop_now_usec(), why, sizeof(why));
	if (r < 0) {
		etcd_range_resp_done(&rr);
		fail(s, "range: %s; giving this read up", why);
		return;
	}
	r = etcd_store_read_add(s->store, rr.kvs, rr.n_kvs);
	drain_diags(s);
	if (r < 0) {
		etcd_range_resp_done(&rr);
		fail(s, "range: %s", strerror(-r));
		return;
	}
	cancel_request(s);
	if (rr.more && rr.n_kvs > 0) {
		const struct etcd_kv *last = &rr.kvs[rr.n_kvs - 1];

		/* The next page starts right after the last key: key + "\0". */
		free(s->read_next);
		s->read_next = malloc(last->key_len + 1);
		if (!s->read_next) {
			etcd_range_resp_done(&rr);
			fail(s, "range: %s", strerror(ENOMEM));
			return;
		}
		memcpy(s->read_next, last->key, last->key_len);
		s->read_next[last->key_len] = '\0';
		s->read_next_len = last->key_len + 1;
		etcd_range_resp_done(&rr);
		r = issue_range(s);
		if (r < 0)
			fail(s, "range: %s", strerror(-r));
		return;
	}
	etcd_range_resp_done(&rr);
	read_complete(s);
}

/* The last page is in: apply the read, then watch from its revision. */
static void read_complete(struct etcd_source *s)
{
	struct etcd_store_stats st;
	int r;

	r = etcd_store_read_commit(s->store, s->read_rev);
	drain_diags(s);
	if (r < 0) {
		fail(s, "applying the full read: %s", strerror(-r));
		return;
	}
	reflector_listed(&s->rf);
	s->synced = true;
	s->last_read_usec = loop_now_usec() - s->read_started;
	etcd_store_stats(s->store, &st);
	notify(s, ETCD_EV_SYNCED, "read %zu keys at revision %" PRId64 " from %s in %.3f s",
	       st.n_keys, st.revision, s->conn.urls[s->cur], s->last_read_usec / 1e6);
	r = start_watch(s);
	if (r < 0)
		fail(s, "watch: %s", strerror(-r));
}

static void watch_done(struct etcd_source *s, struct request *q, CURLcode cc)
{
	enum watch_verdict v = q->verdict;
	char why[sizeof(q->why) + CURL_ERROR_SIZE];

	/* However it ended: only a watch that made progress and lasted resets
	 * the count, so a member that ends every watch at once backs off. */
	(void)reflector_watch_ended(&s->rf, q->created, q->progress, loop_now_usec() - q->started);
	snprintf(why, sizeof(why), "%s", q->why);
	if (v == WATCH_OK) {
		if (cc != CURLE_OK)
			snprintf(why, sizeof(why), "watch: %s",
				 q->errbuf[0] ? q->errbuf : curl_easy_strerror(cc));
		else
			snprintf(why, sizeof(why), "watch stream closed by the member");
		v = WATCH_FAILED;
	}
	if (v == WATCH_COMPACTED || v == WATCH_REREAD) {
		reread(s, why);
		return;
	}
	cancel_request(s);
	fail(s, "%s", why);
}

static void on_done(void *priv, CURLcode result, void *userdata)
{
	struct etcd_source *s = userdata;
	struct request *q = priv;

	if (!q || q != s->req)
		return;
	if (q->kind == REQ_RANGE)
		range_done(s, q, result);
	else
		watch_done(s, q, result);
}

static int on_retry_timer(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct etcd_source *s = userdata;

	s->reconnects++;
	(void)connect_now(s);
	return 0;
}


DEFINE_TRIVIAL_CLEANUP_FUNC(struct etcd_source *, etcd_source_free);

int etcd_source_new(struct loop *l, struct merge *m, const struct etcd_options *o,
		    etcd_event_fn fn, void *userdata, struct etcd_source **ret)
{
	_cleanup_(etcd_source_freep) struct etcd_source *s = NULL;
	struct diag_list d;
	int r, sid;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = l;
	s->merge = m;
	s->fn = fn;
	s->userdata = userdata;
	reflector_init(&s->rf, &refl_config);
	s->cap = (struct listcap){ .max_items = READ_MAX_KEYS, .max_pages = READ_MAX_PAGES,
				   .max_bytes = READ_MAX_BYTES, .max_usec = READ_MAX_USEC };
	diag_list_init(&d);
	r = etcd_conn_init(&s->conn, o, &d);
	diag_list_done(&d);
	if (r < 0)
		return r;
	r = etcd_layout_range(s->conn.prefix, &s->range_start, &s->range_end);
	if (r < 0)
		return r;
	s->rnd = jitter_seed();
	r = curlloop_init(&s->curl, l, on_done, s);
	if (r >= 0)
		r = loop_timer_new(l, on_retry_timer, s, &s->retry_timer);
	if (r < 0)
		return r;
	sid = merge_source_register(m, "etcd");
	if (sid < 0)
		return sid;
	r = etcd_store_new(s->conn.prefix, m, sid, &s->store);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

int etcd_source_start(struct etcd_source *s)
{
	if (s->rf.state != REFLECTOR_IDLE)
		return -EALREADY;
	/* A failure to start is retried like a failed connection. */
	(void)connect_now(s);
	return 0;
}

int etcd_source_resync(struct etcd_source *s)
{
	if (s->rf.state == REFLECTOR_IDLE)
		return etcd_source_start(s);
	cancel_request(s);
	if (s->rf.state == REFLECTOR_LISTING)
		etcd_store_read_abort(s->store);
	(void)loop_timer_arm(s->retry_timer, 0);
	s->rf.need_list = true;
	s->rf.connected = false;
	(void)connect_now(s);
	return 0;
}

void etcd_source_get_status(const struct etcd_source *s, struct etcd_status *ret)
{
	struct etcd_store_stats st;

	etcd_store_stats(s->store, &st);
	*ret = (struct etcd_status){
		.connected = s->rf.connected,
		.synced = s->synced,
		.revision = st.revision,
		.reconnects = s->reconnects,
		.full_reads = st.full_reads,
		.events = st.events,
		.rejected = st.rejected,
		.last_read_usec = s->last_read_usec,
		.endpoint = s->conn.urls[s->cur],
		.last_error = s->last_error,
	};
}

void etcd_source_free(struct etcd_source *s)
{
	if (!s)
		return;
	cancel_request(s);
	curlloop_done(&s->curl);
	loop_timer_free(s->retry_timer);
	etcd_store_free(s->store);
	etcd_conn_done(&s->conn);
	free(s->range_start);
	free(s->range_end);
	free(s->read_next);
	free(s);
}
