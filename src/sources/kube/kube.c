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
#include <strings.h>
#include <sys/epoll.h>

#include "sources/net/curlloop.h"
#include "sources/net/jitter.h"
#include "sources/kube/kube.h"
#include "sources/kube/kubeconfig.h"
#include "sources/kube/kubepb.h"
#include "sources/kube/kubereq.h"
#include "sources/net/listcap.h"
#include "sources/net/reflector.h"
#include "util.h"

#define CONNECT_TIMEOUT_MS 10000
#define LIST_TIMEOUT_MS 60000   /* the API server's own request timeout */
#define WATCH_MIN_TIMEOUT_S 300 /* client-go's reflector: 5 min .. 10 min */
#define WATCH_GRACE_S 60        /* past timeoutSeconds the server should have ended it */
#define WATCH_ANSWER_USEC (15 * 1000000ull) /* a watch not answered by then is given up */
#define RELIST_MIN_USEC (5 * 1000000ull)    /* relists closer than this back off */
/* client-go's "very short watch": one that ends within a second without an
 * event failed, however it ended; one that delivered events and lasted
 * longer is the progress that starts the backoff again from its base. */
#define WATCH_SHORT_USEC 1000000ull
/* Caps on one list of a resource (every page together); the items cap is
 * the one on a file's List. */
#define LIST_MAX_ITEMS DECODE_MAX_ITEMS
#define LIST_MAX_PAGES 1000                 /* 2.5 times what 200,000 items take at 500 a page */
#define LIST_MAX_BYTES (1ull << 30)
#define LIST_MAX_USEC (600 * 1000000ull)
#define ERROR_BODY_MAX (64u << 10)
#define DEFAULT_PAGE 500
#define KEEPALIVE_IDLE_S 15
#define KEEPALIVE_INTVL_S 5
#define KEEPALIVE_CNT 3
#define USER_TIMEOUT_MS 30000

/* A list applied is progress: the backoff starts again from its base. */
static const struct reflector_config refl_config = {
	.backoff_base_usec = KUBE_BACKOFF_BASE_USEC,
	.backoff_cap_usec = KUBE_BACKOFF_CAP_USEC,
	.relist_min_usec = RELIST_MIN_USEC,
	.watch_short_usec = WATCH_SHORT_USEC,
	.list_is_progress = true,
};

struct kube_reflector;

struct request {
	struct kube_reflector *rf;
	bool watch;
	bool stream;  /* a streaming list (sendInitialEvents) */
	enum kube_wire wire; /* by the answer's Content-Type, once its headers are in */
	char ctype[128];     /* the answer's Content-Type ("" if none) */
	struct kubepb_watch pbw; /* a protobuf watch stream's frames */
	CURL *easy;
	struct curl_slist *headers;
	char *body; /* list page, or the error answer */
	size_t len, cap;
	long http;
	unsigned retry_after;
	bool established;
	bool headers_done; /* the answer's header block was read whole */
	bool reported;     /* kube_options.on_request was called */
	bool announce; /* established after failures: say CONNECTED at the first event */
	unsigned timeout_s; /* the watch's timeoutSeconds */
	enum kube_watch_verdict verdict;
	uint64_t started;
	uint64_t events_before;
	char why[512];
	char errbuf[CURL_ERROR_SIZE];
};

struct kube_reflector {
	struct kube_source *src;
	enum kube_res res;
	struct kube_sink sink;
	struct reflector refl; /* list, watch, backoff (REFLECTOR_DONE: once mode, listed) */
	char *cont; /* continue token of the next page */
	char list_rv[KUBE_MAX_RV + 1];
	struct kube_relist rl;       /* the reflector's resourceVersion rules */
	struct kube_list_plan plan;  /* of the list being read */
	bool list_paged;             /* it came in pages */
	bool stream_refused;         /* the server refused this round's streaming list */
	uint64_t list_started;
	struct listcap cap;   /* the list being read */
	unsigned retry_after; /* of the failure being handled */
	struct loop_timer *retry_timer;
	struct request *req;
};

struct kube_source {
	struct loop *loop;
	struct merge *merge;
	struct kube_config cfg;
	kube_event_fn fn;
	void *userdata;
	char *label_q; /* escaped label selector */
	char *node_q;  /* escaped field selector, or NULL */
	unsigned page;
	struct curlloop curl;
	struct kube_reflector rf[KUBE_RES_COUNT];
	size_t n_rf;
	bool started;
	bool once;
	struct diag_list *once_diags;
	int once_result;
	uint64_t rnd;
	uint64_t reconnects, relists, streamed, protobuf;
	char *content_type;     /* what svcnat asks for (kubereq.h) */
	char accept[256];       /* the Accept header's value */
	bool watch_list;        /* lists are streamed where the server does */
	uint64_t first_list_started, last_list_usec;
	unsigned watch_timeout; /* timeoutSeconds of the watch being started */
	void (*on_request)(const char *method, const char *host, long code, double seconds,
			   void *userdata);
	void *request_userdata;
	char host[256];         /* the server URL's host[:port], for on_request */
	bool synced;
	char last_error[600];
};

static void notify(struct kube_source *s, enum kube_source_event ev, const char *fmt, ...)
	_printf_(3, 4);

static void notify(struct kube_source *s, enum kube_source_event ev, const char *fmt, ...)
{
	char msg[800];
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
	notify(userdata, KUBE_SRC_DIAG, "%s", line);
}

static void drain_diags(struct kube_reflector *rf)
{
	struct kube_source *s = rf->src;
	struct diag_list *dl = &rf->sink.diags;

	if (s->once_diags) {
		(void)diag_list_move(s->once_diags, dl);
		return;
	}
	diag_list_each_line(dl, diag_line, s);
	diag_list_done(dl);
	diag_list_init(dl);
}

static void node_check(struct kube_reflector *rf)
{
	if (rf->res != KUBE_RES_NODE || !rf->sink.node_changed)
		return;
	rf->sink.node_changed = false;
	if (!rf->src->once)
		notify(rf->src, KUBE_SRC_NODE, "node %s: zone '%s', %zu addresses",
		       rf->sink.have_node ? rf->sink.node.name : "(none)",
		       rf->sink.have_node ? rf->sink.node.zone : "",
		       rf->sink.have_node ? rf->sink.node.n_addrs : 0);
}

static void request_free(struct kube_source *s, struct request *q)
{
	if (!q)
		return;
	if (q->easy) {
		curl_multi_remove_handle(s->curl.multi, q->easy);
		curl_easy_cleanup(q->easy);
	}
	curl_slist_free_all(q->headers);
	kubepb_watch_done(&q->pbw);
	free(q->body);
	free(q);
}

static void cancel_request(struct kube_reflector *rf)
{
	struct request *q = rf->req;

	rf->req = NULL;
	request_free(rf->src, q);
}

static int connect_now(struct kube_reflector *rf);

static void fail(struct kube_reflector *rf, const char *fmt, ...) _printf_(2, 3);

/* A request or the watch failed: keep what we have, retry later. */
static void fail(struct kube_reflector *rf, const char *fmt, ...)
{
	struct kube_source *s = rf->src;
	uint64_t delay;
	size_t n;
	bool first;
	va_list ap;

	n = (size_t)snprintf(s->last_error, sizeof(s->last_error), "%.200s: %s: ", s->cfg.server,
			     kube_res_name(rf->res));
	if (n < sizeof(s->last_error)) {
		va_start(ap, fmt);
		vsnprintf(s->last_error + n, sizeof(s->last_error) - n, fmt, ap);
		va_end(ap);
	}
	cancel_request(rf);
	if (rf->refl.state == REFLECTOR_LISTING)
		kube_sink_list_abort(&rf->sink);
	if (s->once) {
		rf->refl.state = REFLECTOR_DONE;
		s->once_result = -EIO;
		notify(s, KUBE_SRC_FATAL, "%s", s->last_error);
		loop_quit(s->loop, 0);
		return;
	}
	delay = reflector_failed(&rf->refl, jitter_next(&s->rnd), rf->retry_after, &first);
	rf->retry_after = 0;
	notify(s, first ? KUBE_SRC_DISCONNECTED : KUBE_SRC_RETRY,
	       "%s; keeping the last state (%s at resourceVersion '%s'), retrying in %" PRIu64 " ms",
	       s->last_error, kube_res_name(rf->res), rf->sink.rv, delay / 1000);
	if (loop_timer_arm(rf->retry_timer, delay ? delay : 1) < 0)
		snprintf(s->last_error, sizeof(s->last_error), "cannot arm the retry timer");
}

static size_t append(struct request *q, const char *data, size_t n, size_t max)
{
	if (n > max || q->len > max - n)
		return 0;
	if (GROW(q->body, q->cap, q->len + n + 1) < 0)
		return 0;
	memcpy(q->body + q->len, data, n);
	q->len += n;
	q->body[q->len] = '\0';
	return n;
}

/*
 * A watch was answered 200.  That alone is no progress (a server may take
 * every watch and fail it at once): the failure count is left for
 * watch_done() to judge, and after failures CONNECTED waits for an event.
 */
static void watch_established(struct kube_reflector *rf, struct request *q)
{
	struct kube_source *s = rf->src;

	rf->refl.connected = true;
	(void)loop_timer_arm(rf->retry_timer, 0);
	if (rf->refl.attempt > 0) {
		q->announce = true;
		return;
	}
	notify(s, KUBE_SRC_CONNECTED, "watching %s from resourceVersion '%s'",
	       kube_res_name(rf->res), rf->sink.rv);
}

/* Once per request, when its status is known (client-go counts a watch
 * when its response arrives, a list when it is read). */
static void report_request(struct request *q)
{
	struct kube_source *s = q->rf->src;

	if (q->reported || !s->on_request)
		return;
	q->reported = true;
	s->on_request("GET", s->host, q->http, (double)(loop_now_usec() - q->started) / 1e6,
		      s->request_userdata);
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct request *q = userdata;
	size_t n = size * nmemb;

	if (n > 13 && !strncasecmp(data, "Content-Type:", 13)) {
		size_t b = 13, e = n;

		while (b < e && (data[b] == ' ' || data[b] == '\t'))
			b++;
		while (e > b && (data[e - 1] == '\r' || data[e - 1] == '\n' || data[e - 1] == ' '))
			e--;
		snprintf(q->ctype, sizeof(q->ctype), "%.*s", (int)(e - b), data + b);
	} else if (n > 12 && !strncasecmp(data, "Retry-After:", 12)) {
		unsigned long v = strtoul(data + 12, NULL, 10);

		q->retry_after = v > 3600 ? 3600 : (unsigned)v;
	} else if (n <= 2 && (data[0] == '\r' || data[0] == '\n')) {
		/* The end of a header block: the status of this response is known. */
		q->headers_done = true;
		curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->http);
		q->wire = kube_wire_of(q->ctype, q->rf->src->content_type);
		/* curl hands over each header block (a 100 Continue too). */
		if (q->watch && q->http >= 200)
			report_request(q);
		if (q->watch && q->http == 200 && !q->established) {
			q->established = true;
			if (q->wire == KUBE_WIRE_PROTOBUF)
				q->rf->src->protobuf++;
			watch_established(q->rf, q);
		}
	}
	return n;
}

static void stream_complete(struct kube_reflector *rf);

static size_t on_write(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct request *q = userdata;
	struct kube_reflector *rf = q->rf;
	size_t n = size * nmemb;

	if (!q->http)
		curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->http);
	if (!q->watch || q->http != 200)
		return append(q, data, n, q->http == 200 ? KUBE_MAX_PAGE : ERROR_BODY_MAX);
	switch (q->wire) {
	case KUBE_WIRE_PROTOBUF:
		q->verdict = kubepb_watch_feed(&q->pbw, &rf->sink, data, n, q->why, sizeof(q->why));
		break;
	case KUBE_WIRE_JSON:
		q->verdict = kube_sink_watch_feed(&rf->sink, data, n, q->why, sizeof(q->why));
		break;
	default:
		snprintf(q->why, sizeof(q->why),
			 "the watch was answered in Content-Type '%s', which svcnat does not read",
			 q->ctype);
		q->verdict = KUBE_WATCH_BROKEN;
		break;
	}
	drain_diags(rf);
	node_check(rf);
	if (rf->sink.stream_synced)
		stream_complete(rf);
	if (q->announce && rf->sink.events + rf->sink.bookmarks != q->events_before) {
		q->announce = false;
		notify(rf->src, KUBE_SRC_CONNECTED,
		       "watching %s from resourceVersion '%s' (after %u failed attempts)",
		       kube_res_name(rf->res), rf->sink.rv, rf->refl.attempt);
	}
	/* Anything but n aborts the transfer; it then ends in watch_done(). */
	return q->verdict == KUBE_WATCH_OK ? n : 0;
}

/*
 * Why a transfer failed, in words.  libcurl refuses a header line over
 * CURL_MAX_HTTP_HEADER with CURLE_OUT_OF_MEMORY and no message: before the
 * header block ends, that is the likelier cause, and the message says both.
 */
static const char *transfer_error(const struct request *q, CURLcode cc, char *buf, size_t len)
{
	if (cc == CURLE_OUT_OF_MEMORY && !q->headers_done) {
		snprintf(buf, len,
			 "the answer's headers could not be read: a header over libcurl's limit of "
			 "%d KiB, or out of memory",
			 CURL_MAX_HTTP_HEADER / 1024);
		return buf;
	}
	return q->errbuf[0] ? q->errbuf : curl_easy_strerror(cc);
}

static int sockopt_cb(void *userdata, curl_socket_t fd, curlsocktype purpose)
{
	int cnt = KEEPALIVE_CNT;
	unsigned ut = USER_TIMEOUT_MS;

	if (purpose == CURLSOCKTYPE_IPCXN) {
		(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
		(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
	}
	return CURL_SOCKOPT_OK;
}

static int prepare(struct kube_source *s, struct request *q, const char *url, long timeout_ms)
{
	const struct kube_config *c = &s->cfg;
	_cleanup_free_ char *auth = NULL;
	struct curl_slist *h;
	CURL *e = q->easy;
	CURLcode cc = CURLE_OK;

	_cleanup_free_ char *accept = NULL;

	if (asprintf(&accept, "Accept: %s", s->accept) < 0)
		return -ENOMEM;
	h = curl_slist_append(NULL, accept);
	if (h && !curl_slist_append(h, "User-Agent: svcnat/" PACKAGE_VERSION)) {
		curl_slist_free_all(h);
		h = NULL;
	}
	if (h && c->token) {
		if (asprintf(&auth, "Authorization: Bearer %s", c->token) < 0 ||
		    !curl_slist_append(h, auth)) {
			curl_slist_free_all(h);
			h = NULL;
		}
	}
	if (auth)
		explicit_bzero(auth, strlen(auth));
	if (!h)
		return -ENOMEM;
	q->headers = h;
#define SET(opt, val)                                       \
	do {                                                \
		if (cc == CURLE_OK)                         \
			cc = curl_easy_setopt(e, opt, val); \
	} while (0)
	SET(CURLOPT_URL, url);
	SET(CURLOPT_HTTPHEADER, h);
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
	SET(CURLOPT_WRITEFUNCTION, on_write);
	SET(CURLOPT_WRITEDATA, q);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, q);
	SET(CURLOPT_PRIVATE, q);
	SET(CURLOPT_ERRORBUFFER, q->errbuf);
	if (c->insecure) {
		SET(CURLOPT_SSL_VERIFYPEER, 0L);
		SET(CURLOPT_SSL_VERIFYHOST, 0L);
	}
#undef SET
	if (cc != CURLE_OK)
		return cc == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EIO;
	/* Files too are handed over as bytes (sources/file/pemfile.h). */
	return curlloop_set_tls(e, c->ca.data, c->ca.len, c->cert.data, c->cert.len, c->key.data,
				c->key.len);
}

static void file_kept_line(const char *line, void *userdata)
{
	notify(userdata, KUBE_SRC_DIAG, "api: %s (keeping what was read before)", line);
}

static void refresh_files(struct kube_source *s)
{
	struct diag_list d;

	diag_list_init(&d);
	if (kube_config_refresh(&s->cfg, &d) < 0)
		diag_list_each_line(&d, file_kept_line, s);
	diag_list_done(&d);
}

static int start_request(struct kube_reflector *rf, bool watch, const char *url, long timeout_ms)
{
	struct kube_source *s = rf->src;
	struct request *q;
	int r;

	refresh_files(s);
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->rf = rf;
	q->watch = watch;
	q->started = loop_now_usec();
	q->events_before = rf->sink.events + rf->sink.bookmarks;
	q->timeout_s = watch ? s->watch_timeout : 0;
	q->wire = kube_wire_of(NULL, s->content_type);
	kubepb_watch_init(&q->pbw);
	q->easy = curl_easy_init();
	if (!q->easy) {
		request_free(s, q);
		return -ENOMEM;
	}
	r = prepare(s, q, url, timeout_ms);
	if (r < 0) {
		request_free(s, q);
		return r;
	}
	if (curl_multi_add_handle(s->curl.multi, q->easy) != CURLM_OK) {
		curl_easy_cleanup(TAKE_PTR(q->easy));
		request_free(s, q);
		return -EIO;
	}
	rf->req = q;
	return 0;
}

static const char *selector(struct kube_reflector *rf, char *buf, size_t len)
{
	struct kube_source *s = rf->src;

	if (rf->res == KUBE_RES_NODE)
		snprintf(buf, len, "fieldSelector=%s", s->node_q);
	else
		snprintf(buf, len, "labelSelector=%s", s->label_q);
	return buf;
}

static int issue_page(struct kube_reflector *rf)
{
	struct kube_source *s = rf->src;
	_cleanup_free_ char *url = NULL, *cont = NULL;
	uint64_t left = listcap_remaining_usec(&rf->cap, loop_now_usec()) / 1000;
	char sel[512];

	_cleanup_free_ char *query = NULL;
	int r;

	if (rf->cont && !(cont = kube_query_escape(rf->cont)))
		return -ENOMEM;
	r = kube_list_query(&rf->plan, cont, selector(rf, sel, sizeof(sel)), &query);
	if (r < 0)
		return r;
	if (asprintf(&url, "%s%s?%s", s->cfg.server, kube_res_path(rf->res), query) < 0)
		return -ENOMEM;
	/* No page may outlast the list's own time cap. */
	return start_request(rf, false, url, left < LIST_TIMEOUT_MS ? (long)left + 1 : LIST_TIMEOUT_MS);
}

static int start_list(struct kube_reflector *rf)
{
	free(rf->cont);
	rf->cont = NULL;
	rf->list_rv[0] = '\0';
	rf->list_paged = false;
	rf->list_started = loop_now_usec();
	kube_list_plan(rf->sink.rv, &rf->rl, rf->src->page, &rf->plan);
	listcap_begin(&rf->cap, rf->list_started);
	rf->refl.state = REFLECTOR_LISTING;
	kube_sink_list_begin(&rf->sink);
	return issue_page(rf);
}

static unsigned watch_timeout(struct kube_source *s)
{
	return WATCH_MIN_TIMEOUT_S + (unsigned)(jitter_next(&s->rnd) % WATCH_MIN_TIMEOUT_S);
}

/* A streaming list: a watch whose initial events are the list. */
static int start_stream(struct kube_reflector *rf)
{
	struct kube_source *s = rf->src;
	_cleanup_free_ char *url = NULL, *query = NULL;
	unsigned timeout = watch_timeout(s);
	char sel[512];
	int r;

	r = kube_watch_query(kube_stream_rv(rf->sink.rv, &rf->rl), timeout, true,
			     selector(rf, sel, sizeof(sel)), &query);
	if (r < 0)
		return r;
	if (asprintf(&url, "%s%s?%s", s->cfg.server, kube_res_path(rf->res), query) < 0)
		return -ENOMEM;
	rf->list_started = loop_now_usec();
	rf->refl.state = REFLECTOR_LISTING;
	kube_sink_stream_begin(&rf->sink);
	s->watch_timeout = timeout;
	(void)loop_timer_arm(rf->retry_timer, WATCH_ANSWER_USEC);
	r = start_request(rf, true, url, (long)(timeout + WATCH_GRACE_S) * 1000);
	if (r >= 0)
		rf->req->stream = true;
	return r;
}

static int start_watch(struct kube_reflector *rf)
{
	struct kube_source *s = rf->src;
	_cleanup_free_ char *url = NULL, *query = NULL;
	unsigned timeout = watch_timeout(s);
	char sel[512];
	int r;

	r = kube_watch_query(rf->sink.rv, timeout, false, selector(rf, sel, sizeof(sel)), &query);
	if (r < 0)
		return r;
	if (asprintf(&url, "%s%s?%s", s->cfg.server, kube_res_path(rf->res), query) < 0)
		return -ENOMEM;
	rf->refl.state = REFLECTOR_WATCHING;
	kube_sink_watch_begin(&rf->sink);
	s->watch_timeout = timeout;
	/* A server that takes the request and never answers (the watch has no
	 * overall timeout that would catch it): the retry timer gives it up. */
	(void)loop_timer_arm(rf->retry_timer, WATCH_ANSWER_USEC);
	return start_request(rf, true, url, (long)(timeout + WATCH_GRACE_S) * 1000);
}

static int connect_now(struct kube_reflector *rf)
{
	int r;

	if (!reflector_next_is_list(&rf->refl))
		r = start_watch(rf);
	else if (rf->src->watch_list && !rf->src->once && !rf->stream_refused)
		r = start_stream(rf);
	else
		r = start_list(rf);
	if (r < 0)
		fail(rf, "cannot start a request: %s", strerror(-r));
	return r;
}

static void relist(struct kube_reflector *rf, const char *why)
{
	struct kube_source *s = rf->src;

	cancel_request(rf);
	if (rf->refl.state == REFLECTOR_LISTING)
		kube_sink_list_abort(&rf->sink);
	s->relists++;
	/* A server that expires every version at once must not get a list
	 * storm: a relist within RELIST_MIN_USEC of the last one waits out a
	 * backoff. */
	if (reflector_relist(&rf->refl, loop_now_usec())) {
		fail(rf, "%s: expired again within %llu s", why,
		     (unsigned long long)(RELIST_MIN_USEC / 1000000));
		return;
	}
	notify(s, KUBE_SRC_RELIST, "%s: %s: listing again", kube_res_name(rf->res), why);
	(void)connect_now(rf);
}

/*
 * A protobuf answer's body as the API's JSON, in place (a JSON one is left
 * as it is).  0, or -EINVAL with the reason in why, -ENOMEM.
 */
static int body_to_json(struct kube_source *s, struct request *q, char *why, size_t whylen)
{
	char *json = NULL;
	size_t len;
	int r;

	if (q->wire == KUBE_WIRE_JSON)
		return 0;
	if (q->wire == KUBE_WIRE_OTHER) {
		snprintf(why, whylen, "answered in Content-Type '%.100s', which svcnat does not read",
			 q->ctype);
		return -EINVAL;
	}
	r = kubepb_to_json(q->body ? q->body : "", q->len, &json, &len, why, whylen);
	if (r < 0)
		return r;
	free(q->body);
	q->body = json;
	q->len = len;
	q->cap = len + 1;
	q->wire = KUBE_WIRE_JSON;
	s->protobuf++;
	return 0;
}

/* A non-200 answer: what the server said, and what to do about it. */
static void http_failed(struct kube_reflector *rf, struct request *q, const char *what)
{
	struct kube_status st = { 0 };
	char msg[400] = "", pbwhy[200];

	if (q->body && body_to_json(rf->src, q, pbwhy, sizeof(pbwhy)) == 0 &&
	    kube_status_parse(q->body, q->len, &st) == 0 && st.message[0])
		snprintf(msg, sizeof(msg), ": %s", st.message);
	if (q->http == 410) {
		char why[400];

		snprintf(why, sizeof(why), "%s: HTTP 410 Gone%s", what, msg);
		relist(rf, why);
		return;
	}
	rf->retry_after = q->http == 429 || q->http == 503 ? q->retry_after : 0;
	switch (q->http) {
	case 401:
		fail(rf, "%s: HTTP 401 Unauthorized: the server refused the credentials of %s%s",
		     what, rf->src->cfg.origin, msg);
		break;
	case 403:
		fail(rf, "%s: HTTP 403 Forbidden%s", what, msg);
		break;
	case 429:
		fail(rf, "%s: HTTP 429 Too Many Requests (Retry-After %u)%s", what, q->retry_after, msg);
		break;
	case 503:
		fail(rf, "%s: HTTP 503 Service Unavailable (Retry-After %u)%s", what, q->retry_after,
		     msg);
		break;
	default:
		fail(rf, "%s: HTTP %ld%s", what, q->http, msg);
		break;
	}
}

static bool all_listed(struct kube_source *s, bool with_node)
{
	for (size_t i = 0; i < s->n_rf; i++)
		if ((with_node || s->rf[i].res != KUBE_RES_NODE) && !s->rf[i].sink.listed)
			return false;
	return true;
}

static void list_complete(struct kube_reflector *rf);

/*
 * A list page answered other than 200.  As client-go's reflector and
 * pager: an expired continue token lists again whole at the version first
 * asked; a version that is gone (410, "Too large resource version") lists
 * again at once with none, a consistent read; gone again, or anything
 * else: a failure, retried with backoff.
 */
static void list_refused(struct kube_reflector *rf, struct request *q)
{
	struct kube_status st = { 0 };
	char why[200];

	if (q->http == 410 && rf->cont) {
		rf->rl.full_list = true;
		relist(rf, "the list's continue token expired");
		return;
	}
	if (q->body && body_to_json(rf->src, q, why, sizeof(why)) == 0)
		(void)kube_status_parse(q->body, q->len, &st);
	if (kube_list_rv_gone(q->http, st.message) && rf->plan.rv[0] && !rf->rl.rv_unavailable) {
		char v[sizeof(rf->plan.rv)];
		long http = q->http;

		snprintf(v, sizeof(v), "%s", rf->plan.rv);
		rf->rl.rv_unavailable = true;
		cancel_request(rf); /* frees q */
		kube_sink_list_abort(&rf->sink);
		rf->src->relists++;
		notify(rf->src, KUBE_SRC_RELIST,
		       "%s: list at resourceVersion '%s': HTTP %ld: listing again without one",
		       kube_res_name(rf->res), v, http);
		if (start_list(rf) < 0)
			fail(rf, "list: cannot start a request");
		return;
	}
	if (q->http == 410) {
		/* Gone without a version asked for: listing again would loop. */
		fail(rf, "list: HTTP 410 Gone");
		return;
	}
	http_failed(rf, q, "list");
}

/* A page of a list is in (or the request failed). */
static void list_done(struct kube_reflector *rf, struct request *q, CURLcode cc)
{
	struct kube_list_meta meta;
	size_t wire_len = q->len;
	char why[200];
	int r;

	if (cc != CURLE_OK) {
		fail(rf, "list: %s", transfer_error(q, cc, why, sizeof(why)));
		return;
	}
	if (q->http != 200) {
		list_refused(rf, q);
		return;
	}
	r = body_to_json(rf->src, q, why, sizeof(why));
	if (r < 0) {
		fail(rf, "list: %s", r == -ENOMEM ? strerror(ENOMEM) : why);
		return;
	}
	r = kube_list_meta_parse(q->body ? q->body : "", q->len, &meta);
	if (r == -ELOOP) {
		fail(rf, "list: the answer has arrays and objects nested deeper than %d levels",
		     KUBE_MAX_DEPTH);
		return;
	}
	if (r == -ENOMEM) {
		fail(rf, "list: %s", strerror(ENOMEM));
		return;
	}
	if (r < 0) {
		fail(rf, "list: HTTP 200 with an answer that is not a JSON object with a string kind");
		return;
	}
	if (!rf->list_rv[0])
		snprintf(rf->list_rv, sizeof(rf->list_rv), "%s", meta.rv);
	r = kube_sink_list_page(&rf->sink, q->body, q->len, &meta);
	drain_diags(rf);
	if (r < 0) {
		kube_list_meta_done(&meta);
		fail(rf, "list: %s",
		     r == -EINVAL && rf->sink.list_why[0] ? rf->sink.list_why : strerror(-r));
		return;
	}
	r = listcap_page(&rf->cap, wire_len, rf->sink.pending.n_services + rf->sink.pending.n_slices,
			 loop_now_usec(), why, sizeof(why));
	if (r >= 0 && meta.cont)
		r = listcap_next_page(&rf->cap, loop_now_usec(), why, sizeof(why));
	if (r < 0) {
		kube_list_meta_done(&meta);
		fail(rf, "list: %s; giving this list up", why);
		return;
	}
	cancel_request(rf);
	free(rf->cont);
	rf->cont = TAKE_PTR(meta.cont);
	kube_list_meta_done(&meta);
	if (rf->cont)
		rf->list_paged = true;
	if (rf->cont) {
		r = issue_page(rf);
		if (r < 0)
			fail(rf, "list: %s", strerror(-r));
		return;
	}
	list_complete(rf);
}

/* A list (or a streaming list) was applied: the reflector's bookkeeping. */
static void listed(struct kube_reflector *rf, const char *how)
{
	struct kube_source *s = rf->src;

	rf->rl.rv_unavailable = false;
	rf->rl.full_list = false;
	rf->stream_refused = false;
	reflector_listed(&rf->refl);
	node_check(rf);
	if (!s->synced && all_listed(s, false)) {
		s->synced = true;
		s->last_list_usec = loop_now_usec() - s->first_list_started;
	}
	notify(s, KUBE_SRC_SYNCED, "%s %zu %s at resourceVersion '%s' in %.3f s", how,
	       rf->sink.n_items, kube_res_name(rf->res), rf->sink.rv,
	       (loop_now_usec() - rf->list_started) / 1e6);
}

/* The initial-events-end bookmark of a streaming list: its items are
 * applied; the same stream goes on as the watch. */
static void stream_complete(struct kube_reflector *rf)
{
	rf->sink.stream_synced = false;
	rf->src->streamed++;
	rf->refl.state = REFLECTOR_WATCHING;
	listed(rf, "streamed");
}

/* The last page is in: apply the list, then watch from its version. */
static void list_complete(struct kube_reflector *rf)
{
	struct kube_source *s = rf->src;
	int r;

	if (!rf->list_rv[0]) {
		fail(rf, "list: the answer has no metadata.resourceVersion");
		return;
	}
	r = kube_sink_list_commit(&rf->sink, rf->list_rv);
	drain_diags(rf);
	if (r < 0) {
		fail(rf, "applying the list: %s", strerror(-r));
		return;
	}
	if (streq(rf->plan.rv, "0") && rf->list_paged)
		rf->rl.paginated = true;
	listed(rf, "listed");
	if (s->once) {
		rf->refl.state = REFLECTOR_DONE;
		if (all_listed(s, true))
			loop_quit(s->loop, 0);
		return;
	}
	r = start_watch(rf);
	if (r < 0)
		fail(rf, "watch: %s", strerror(-r));
}

/* A streaming list the server did not stream: list instead, this round
 * (the next relist tries the stream again, as client-go's ListAndWatch). */
static void stream_fallback(struct kube_reflector *rf, const char *why)
{
	struct kube_source *s = rf->src;

	cancel_request(rf);
	kube_sink_list_abort(&rf->sink);
	rf->stream_refused = true;
	notify(s, KUBE_SRC_RETRY, "%.200s: %s: streaming list refused (%s): listing instead",
	       s->cfg.server, kube_res_name(rf->res), why);
	if (start_list(rf) < 0)
		fail(rf, "list: cannot start a request");
}

/* A streaming list ended before its initial-events-end bookmark. */
static void stream_done(struct kube_reflector *rf, struct request *q, CURLcode cc)
{
	char why[sizeof(q->why) + 64];

	snprintf(why, sizeof(why), "%s", q->why);
	if (q->verdict == KUBE_WATCH_NOSTREAM) {
		stream_fallback(rf, why);
		return;
	}
	if (q->verdict == KUBE_WATCH_EXPIRED || (q->http == 410 && q->verdict == KUBE_WATCH_OK)) {
		/* rewatchResourceVersion(): from no version next */
		rf->rl.rv_unavailable = true;
		relist(rf, q->http == 410 ? "streaming list: HTTP 410 Gone" : why);
		return;
	}
	if (q->verdict == KUBE_WATCH_BROKEN || q->verdict == KUBE_WATCH_NOMEM) {
		fail(rf, "streaming list: %s", why);
		return;
	}
	if (q->http && q->http != 200) {
		if (kube_stream_refused(q->http)) {
			snprintf(why, sizeof(why), "HTTP %ld", q->http);
			stream_fallback(rf, why);
		} else {
			http_failed(rf, q, "streaming list");
		}
		return;
	}
	if (cc != CURLE_OK) {
		fail(rf, "streaming list: %s", transfer_error(q, cc, why, sizeof(why)));
		return;
	}
	stream_fallback(rf, "the stream ended before the k8s.io/initial-events-end bookmark");
}

static void watch_done(struct kube_reflector *rf, struct request *q, CURLcode cc)
{
	enum kube_watch_verdict v = q->verdict;
	bool quiet = rf->sink.events + rf->sink.bookmarks == q->events_before;
	uint64_t lasted = loop_now_usec() - q->started;
	/* However it ended: only a watch that delivered and lasted resets the
	 * count, so a server that fails every watch meets a growing backoff. */
	bool progress = reflector_watch_ended(&rf->refl, q->established, !quiet, lasted);
	char why[sizeof(q->why) + 64];

	if (q->stream && rf->refl.state == REFLECTOR_LISTING) {
		stream_done(rf, q, cc);
		return;
	}
	snprintf(why, sizeof(why), "%s", q->why);
	if (v == KUBE_WATCH_EXPIRED || v == KUBE_WATCH_NOMEM) {
		relist(rf, why);
		return;
	}
	if (v == KUBE_WATCH_BROKEN) {
		fail(rf, "watch: %s", why);
		return;
	}
	if (q->http && q->http != 200) {
		http_failed(rf, q, "watch");
		return;
	}
	if (cc != CURLE_OK) {
		fail(rf, "watch: %s", transfer_error(q, cc, why, sizeof(why)));
		return;
	}
	/* The server ended the watch: resume at once after progress, or after
	 * a quiet watch that ran for half its timeoutSeconds at least; any
	 * other end is a failure like a dropped stream. */
	if (!progress && lasted < q->timeout_s * 1000000ull / 2) {
		fail(rf, "watch: the server ended the watch after %.1f s (timeoutSeconds %u)%s",
		     lasted / 1e6, q->timeout_s, quiet ? " without an event" : "");
		return;
	}
	cancel_request(rf);
	(void)connect_now(rf);
}

static void on_done(void *priv, CURLcode result, void *userdata)
{
	struct request *q = priv;

	if (!q || q != q->rf->req)
		return;
	if (!q->http)
		curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->http);
	report_request(q);
	if (q->watch)
		watch_done(q->rf, q, result);
	else
		list_done(q->rf, q, result);
}

static int on_retry_timer(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct kube_reflector *rf = userdata;

	if (rf->refl.state == REFLECTOR_WATCHING || (rf->req && rf->req->stream)) {
		if (rf->req && !rf->req->established)
			fail(rf, "watch: no answer within %llu s",
			     (unsigned long long)(WATCH_ANSWER_USEC / 1000000));
		return 0;
	}
	rf->src->reconnects++;
	(void)connect_now(rf);
	return 0;
}


/* host[:port] of a URL as Go's url.URL.Host has it ("https://10.96.0.1:443/x"
 * -> "10.96.0.1:443", "[::1]:6443" kept bracketed). */
static void url_host(const char *url, char *out, size_t len)
{
	const char *p = strstr(url, "://"), *e;

	p = p ? p + 3 : url;
	e = p + strcspn(p, "/?#");
	/* userinfo is not part of Host */
	for (const char *at = p; at < e; at++)
		if (*at == '@')
			p = at + 1;
	snprintf(out, len, "%.*s", (int)(e - p), p);
}

bool kube_options_wanted(const struct kube_options *o)
{
	return (o->kubeconfig && *o->kubeconfig) || (o->master && *o->master);
}

static int load_config(const struct kube_options *o, struct kube_config *c, struct diag_list *d)
{
	if (o->kubeconfig && *o->kubeconfig)
		return kube_config_load(o->kubeconfig, o->master && *o->master ? o->master : NULL,
					o->mode, c, d);
	if (o->master && *o->master)
		return kube_config_master(o->master, c, d);
	return kube_config_in_cluster(o->sa_dir, o->mode, c, d);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct kube_source *, kube_source_free);

int kube_source_new(struct loop *l, struct merge *m, const struct kube_options *o, kube_event_fn fn,
		    void *userdata, struct kube_source **ret, struct diag_list *d)
{
	_cleanup_(kube_source_freep) struct kube_source *s = NULL;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = l;
	s->merge = m;
	s->fn = fn;
	s->userdata = userdata;
	s->page = o->page_size ? o->page_size : DEFAULT_PAGE;
	s->watch_list = !o->no_watch_list;
	s->content_type = strdup(o->content_type && *o->content_type ? o->content_type
								      : KUBE_CT_DEFAULT);
	if (!s->content_type)
		return -ENOMEM;
	if (!kube_content_type_valid(s->content_type)) {
		diag_add(d, DIAG_ERROR, NULL, NULL, "--kube-api-content-type",
			 "'%.100s' is not a content type svcnat reads (%s or %s)", s->content_type,
			 KUBE_CT_PROTOBUF, KUBE_CT_JSON);
		return -EINVAL;
	}
	/* kube-proxy sends clientConnection.acceptContentTypes when given
	 * (cmd/kube-proxy/app/server.go, createClient), else the header
	 * follows the content type. */
	if (o->accept_content_types && *o->accept_content_types) {
		const char *why = NULL;

		if (!kube_accept_valid(o->accept_content_types, &why)) {
			diag_add(d, DIAG_ERROR, NULL, NULL, "clientConnection.acceptContentTypes",
				 "'%.100s' is not %s", o->accept_content_types, why);
			return -EINVAL;
		}
	}
	r = kube_accept_header(s->content_type, o->accept_content_types, s->accept,
			       sizeof(s->accept));
	if (r < 0)
		return r;
	r = load_config(o, &s->cfg, d);
	if (r < 0)
		return r;
	s->rnd = jitter_seed();
	s->label_q = kube_query_escape(KUBE_PROXY_SELECTOR);
	if (!s->label_q)
		return -ENOMEM;
	if (o->node_name && *o->node_name) {
		_cleanup_free_ char *fs = NULL;

		if (asprintf(&fs, "metadata.name=%s", o->node_name) < 0)
			return -ENOMEM;
		s->node_q = kube_query_escape(fs);
		if (!s->node_q)
			return -ENOMEM;
	}
	s->on_request = o->on_request;
	s->request_userdata = o->request_userdata;
	url_host(s->cfg.server, s->host, sizeof(s->host));
	r = curlloop_init(&s->curl, l, on_done, s);
	if (r < 0)
		return r;
	for (enum kube_res res = 0; res < KUBE_RES_COUNT; res++) {
		struct kube_reflector *rf;
		int sid = -1;

		if (res == KUBE_RES_NODE && !s->node_q)
			continue;
		if (res != KUBE_RES_NODE) {
			char name[64];

			snprintf(name, sizeof(name), "api:%s", kube_res_name(res));
			sid = merge_source_register(m, name);
			if (sid < 0)
				return sid;
		}
		rf = &s->rf[s->n_rf++];
		rf->src = s;
		rf->res = res;
		reflector_init(&rf->refl, &refl_config);
		rf->cap = (struct listcap){ .max_items = LIST_MAX_ITEMS, .max_pages = LIST_MAX_PAGES,
					    .max_bytes = LIST_MAX_BYTES, .max_usec = LIST_MAX_USEC };
		kube_sink_init(&rf->sink, res, m, sid);
		r = loop_timer_new(l, on_retry_timer, rf, &rf->retry_timer);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

int kube_source_start(struct kube_source *s)
{
	if (s->started)
		return -EALREADY;
	s->started = true;
	s->first_list_started = loop_now_usec();
	/* A failure to start is retried like a failed connection. */
	for (size_t i = 0; i < s->n_rf; i++)
		(void)connect_now(&s->rf[i]);
	return 0;
}

int kube_source_resync(struct kube_source *s)
{
	if (!s->started)
		return kube_source_start(s);
	for (size_t i = 0; i < s->n_rf; i++) {
		struct kube_reflector *rf = &s->rf[i];

		(void)loop_timer_arm(rf->retry_timer, 0);
		reflector_forget_relist(&rf->refl); /* asked for: no backoff */
		relist(rf, "resync requested");
	}
	return 0;
}

void kube_source_get_status(const struct kube_source *s, struct kube_source_status *ret)
{
	struct kube_source_status st = {
		.synced = s->synced,
		.server = s->cfg.server,
		.rv_services = s->rf[0].sink.rv,
		.rv_slices = s->rf[1].sink.rv,
		.relists = s->relists,
		.streamed = s->streamed,
		.protobuf = s->protobuf,
		.reconnects = s->reconnects,
		.last_list_usec = s->last_list_usec,
		.last_error = s->last_error,
		.connected = s->n_rf > 0,
	};

	for (size_t i = 0; i < s->n_rf; i++) {
		const struct kube_sink *k = &s->rf[i].sink;

		st.connected = st.connected && s->rf[i].refl.connected;
		st.events += k->events;
		st.bookmarks += k->bookmarks;
		st.rejected += k->rejected;
	}
	*ret = st;
}

const struct kube_node *kube_source_node(const struct kube_source *s)
{
	for (size_t i = 0; i < s->n_rf; i++)
		if (s->rf[i].res == KUBE_RES_NODE && s->rf[i].sink.have_node)
			return &s->rf[i].sink.node;
	return NULL;
}

void kube_source_free(struct kube_source *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_rf; i++) {
		struct kube_reflector *rf = &s->rf[i];

		cancel_request(rf);
		loop_timer_free(rf->retry_timer);
		kube_sink_done(&rf->sink);
		free(rf->cont);
	}
	curlloop_done(&s->curl);
	kube_config_done(&s->cfg);
	free(s->content_type);
	free(s->label_q);
	free(s->node_q);
	free(s);
}

static void once_event(struct kube_source *s, enum kube_source_event ev, const char *msg, void *userdata)
{
	struct diag_list *d = userdata;

	if (ev == KUBE_SRC_FATAL || ev == KUBE_SRC_DIAG)
		diag_add(d, ev == KUBE_SRC_FATAL ? DIAG_ERROR : DIAG_WARNING, "api", NULL, NULL,
			 "%s", msg);
}

int kube_list_once(struct merge *m, const struct kube_options *o, struct kube_node *ret_node,
		   bool *ret_have_node, struct diag_list *d)
{
	struct kube_source *s = NULL;
	struct loop *l = NULL;
	const struct kube_node *n;
	int r;

	r = loop_new(&l);
	if (r < 0)
		return r;
	r = kube_source_new(l, m, o, once_event, d, &s, d);
	if (r < 0)
		goto out;
	s->once = true;
	s->once_diags = d;
	(void)kube_source_start(s);
	r = loop_run(l);
	if (r >= 0)
		r = s->once_result;
	if (r >= 0 && !all_listed(s, true))
		r = -EIO;
	n = kube_source_node(s);
	if (ret_have_node)
		*ret_have_node = n != NULL;
	if (n && ret_node)
		*ret_node = *n;
out:
	kube_source_free(s);
	loop_free(l);
	return r;
}
