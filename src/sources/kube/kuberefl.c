/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One resource's reflector, as client-go's tools/cache/reflector.go
 * ListAndWatch: a streaming list or a paged list, then a watch from its
 * version; relists on expiry, retries with backoff on failure.  The
 * requests are kubehttp.c's, the rules for the next one kubereq.h's, the
 * objects kubewire.h's.
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/kube/kubestate.h"
#include "sources/net/jitter.h"
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

/* A list applied is progress: the backoff starts again from its base. */
static const struct reflector_config refl_config = {
	.backoff_base_usec = KUBE_BACKOFF_BASE_USEC,
	.backoff_cap_usec = KUBE_BACKOFF_CAP_USEC,
	.relist_min_usec = RELIST_MIN_USEC,
	.watch_short_usec = WATCH_SHORT_USEC,
	.list_is_progress = true,
};

static void diag_line(const char *line, void *userdata)
{
	kube_notify(userdata, KUBE_SRC_DIAG, "%s", line);
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
		kube_notify(rf->src, KUBE_SRC_NODE, "node %s: zone '%s', %zu addresses",
		       rf->sink.have_node ? rf->sink.node.name : "(none)",
		       rf->sink.have_node ? rf->sink.node.zone : "",
		       rf->sink.have_node ? rf->sink.node.n_addrs : 0);
}

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
	kube_request_cancel(rf);
	if (rf->refl.state == REFLECTOR_LISTING)
		kube_sink_list_abort(&rf->sink);
	if (s->once) {
		rf->refl.state = REFLECTOR_DONE;
		s->once_result = -EIO;
		kube_notify(s, KUBE_SRC_FATAL, "%s", s->last_error);
		loop_quit(s->loop, 0);
		return;
	}
	delay = reflector_failed(&rf->refl, jitter_next(&s->rnd), rf->retry_after, &first);
	rf->retry_after = 0;
	kube_notify(s, first ? KUBE_SRC_DISCONNECTED : KUBE_SRC_RETRY,
	       "%s; keeping the last state (%s at resourceVersion '%s'), retrying in %" PRIu64 " ms",
	       s->last_error, kube_res_name(rf->res), rf->sink.rv, delay / 1000);
	if (loop_timer_arm(rf->retry_timer, delay ? delay : 1) < 0)
		snprintf(s->last_error, sizeof(s->last_error), "cannot arm the retry timer");
}

/*
 * A watch was answered 200.  That alone is no progress (a server may take
 * every watch and fail it at once): the failure count is left for
 * watch_done() to judge, and after failures CONNECTED waits for an event.
 */
void kube_refl_established(struct kube_reflector *rf, struct kube_request *q)
{
	struct kube_source *s = rf->src;

	rf->refl.connected = true;
	(void)loop_timer_arm(rf->retry_timer, 0);
	if (rf->refl.attempt > 0) {
		q->announce = true;
		return;
	}
	kube_notify(s, KUBE_SRC_CONNECTED, "watching %s from resourceVersion '%s'",
	       kube_res_name(rf->res), rf->sink.rv);
}

static void stream_complete(struct kube_reflector *rf);


void kube_refl_fed(struct kube_reflector *rf, struct kube_request *q)
{
	drain_diags(rf);
	node_check(rf);
	if (rf->sink.stream_synced)
		stream_complete(rf);
	if (q->announce && rf->sink.events + rf->sink.bookmarks != q->events_before) {
		q->announce = false;
		kube_notify(rf->src, KUBE_SRC_CONNECTED,
			    "watching %s from resourceVersion '%s' (after %u failed attempts)",
			    kube_res_name(rf->res), rf->sink.rv, rf->refl.attempt);
	}
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
	return kube_request_start(rf, false, url, left < LIST_TIMEOUT_MS ? (long)left + 1 : LIST_TIMEOUT_MS);
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
	r = kube_request_start(rf, true, url, (long)(timeout + WATCH_GRACE_S) * 1000);
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
	return kube_request_start(rf, true, url, (long)(timeout + WATCH_GRACE_S) * 1000);
}

int kube_refl_connect(struct kube_reflector *rf)
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

void kube_refl_relist(struct kube_reflector *rf, const char *why)
{
	struct kube_source *s = rf->src;

	kube_request_cancel(rf);
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
	kube_notify(s, KUBE_SRC_RELIST, "%s: %s: listing again", kube_res_name(rf->res), why);
	(void)kube_refl_connect(rf);
}

/* A non-200 answer: what the server said, and what to do about it. */
static void http_failed(struct kube_reflector *rf, struct kube_request *q, const char *what)
{
	struct kube_status st = { 0 };
	char msg[400] = "", pbwhy[200];

	if (q->body && kube_request_to_json(rf->src, q, pbwhy, sizeof(pbwhy)) == 0 &&
	    kube_status_parse(q->body, q->len, &st) == 0 && st.message[0])
		snprintf(msg, sizeof(msg), ": %s", st.message);
	if (q->http == 410) {
		char why[400];

		snprintf(why, sizeof(why), "%s: HTTP 410 Gone%s", what, msg);
		kube_refl_relist(rf, why);
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

bool kube_refl_all_listed(struct kube_source *s, bool with_node)
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
static void list_refused(struct kube_reflector *rf, struct kube_request *q)
{
	struct kube_status st = { 0 };
	char why[200];

	if (q->http == 410 && rf->cont) {
		rf->rl.full_list = true;
		kube_refl_relist(rf, "the list's continue token expired");
		return;
	}
	if (q->body && kube_request_to_json(rf->src, q, why, sizeof(why)) == 0)
		(void)kube_status_parse(q->body, q->len, &st);
	if (kube_list_rv_gone(q->http, st.message) && rf->plan.rv[0] && !rf->rl.rv_unavailable) {
		char v[sizeof(rf->plan.rv)];
		long http = q->http;

		snprintf(v, sizeof(v), "%s", rf->plan.rv);
		rf->rl.rv_unavailable = true;
		kube_request_cancel(rf); /* frees q */
		kube_sink_list_abort(&rf->sink);
		rf->src->relists++;
		kube_notify(rf->src, KUBE_SRC_RELIST,
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
static void list_done(struct kube_reflector *rf, struct kube_request *q, CURLcode cc)
{
	struct kube_list_meta meta;
	size_t wire_len = q->len;
	char why[200];
	int r;

	if (cc != CURLE_OK) {
		fail(rf, "list: %s", kube_request_error(q, cc, why, sizeof(why)));
		return;
	}
	if (q->http != 200) {
		list_refused(rf, q);
		return;
	}
	r = kube_request_to_json(rf->src, q, why, sizeof(why));
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
	kube_request_cancel(rf);
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
	if (!s->synced && kube_refl_all_listed(s, false)) {
		s->synced = true;
		s->last_list_usec = loop_now_usec() - s->first_list_started;
	}
	kube_notify(s, KUBE_SRC_SYNCED, "%s %zu %s at resourceVersion '%s' in %.3f s", how,
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
		if (kube_refl_all_listed(s, true))
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

	kube_request_cancel(rf);
	kube_sink_list_abort(&rf->sink);
	rf->stream_refused = true;
	kube_notify(s, KUBE_SRC_RETRY, "%.200s: %s: streaming list refused (%s): listing instead",
	       s->cfg.server, kube_res_name(rf->res), why);
	if (start_list(rf) < 0)
		fail(rf, "list: cannot start a request");
}

/* A streaming list ended before its initial-events-end bookmark. */
static void stream_done(struct kube_reflector *rf, struct kube_request *q, CURLcode cc)
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
		kube_refl_relist(rf, q->http == 410 ? "streaming list: HTTP 410 Gone" : why);
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
		fail(rf, "streaming list: %s", kube_request_error(q, cc, why, sizeof(why)));
		return;
	}
	stream_fallback(rf, "the stream ended before the k8s.io/initial-events-end bookmark");
}

static void watch_done(struct kube_reflector *rf, struct kube_request *q, CURLcode cc)
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
		kube_refl_relist(rf, why);
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
		fail(rf, "watch: %s", kube_request_error(q, cc, why, sizeof(why)));
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
	kube_request_cancel(rf);
	(void)kube_refl_connect(rf);
}

void kube_refl_transfer_done(void *priv, CURLcode result, void *userdata)
{
	struct kube_request *q = priv;

	if (!q || q != q->rf->req)
		return;
	if (!q->http)
		curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->http);
	kube_request_report(q);
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
	(void)kube_refl_connect(rf);
	return 0;
}

int kube_refl_init(struct kube_reflector *rf, struct kube_source *s, enum kube_res res, int sid)
{
	rf->src = s;
	rf->res = res;
	reflector_init(&rf->refl, &refl_config);
	rf->cap = (struct listcap){ .max_items = LIST_MAX_ITEMS, .max_pages = LIST_MAX_PAGES,
				    .max_bytes = LIST_MAX_BYTES, .max_usec = LIST_MAX_USEC };
	kube_sink_init(&rf->sink, res, s->merge, sid);
	return loop_timer_new(s->loop, on_retry_timer, rf, &rf->retry_timer);
}

void kube_refl_done(struct kube_reflector *rf)
{
	kube_request_cancel(rf);
	loop_timer_free(rf->retry_timer);
	kube_sink_done(&rf->sink);
	free(rf->cont);
}
