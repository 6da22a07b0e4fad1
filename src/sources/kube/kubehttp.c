/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One HTTP request of the API source: the libcurl handle and its headers,
 * the answer's headers and body, a watch's bytes into its decoder
 * (kubewire.h for JSON, kubepb.h for protobuf).  What comes next is
 * kuberefl.c's.
 */
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sources/kube/kubestate.h"
#include "util.h"

#define CONNECT_TIMEOUT_MS 10000
#define ERROR_BODY_MAX (64u << 10)
#define KEEPALIVE_IDLE_S 15
#define KEEPALIVE_INTVL_S 5
#define KEEPALIVE_CNT 3
#define USER_TIMEOUT_MS 30000

void kube_request_free(struct kube_source *s, struct kube_request *q)
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

void kube_request_cancel(struct kube_reflector *rf)
{
	struct kube_request *q = rf->req;

	rf->req = NULL;
	kube_request_free(rf->src, q);
}

static size_t append(struct kube_request *q, const char *data, size_t n, size_t max)
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

/* Once per request, when its status is known (client-go counts a watch
 * when its response arrives, a list when it is read). */
void kube_request_report(struct kube_request *q)
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
	struct kube_request *q = userdata;
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
			kube_request_report(q);
		if (q->watch && q->http == 200 && !q->established) {
			q->established = true;
			if (q->wire == KUBE_WIRE_PROTOBUF)
				q->rf->src->protobuf++;
			kube_refl_established(q->rf, q);
		}
	}
	return n;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct kube_request *q = userdata;
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
	kube_refl_fed(rf, q);
	/* Anything but n aborts the transfer; it then ends in watch_done(). */
	return q->verdict == KUBE_WATCH_OK ? n : 0;
}

/*
 * Why a transfer failed, in words.  libcurl refuses a header line over
 * CURL_MAX_HTTP_HEADER with CURLE_OUT_OF_MEMORY and no message: before the
 * header block ends, that is the likelier cause, and the message says both.
 */
const char *kube_request_error(const struct kube_request *q, CURLcode cc, char *buf, size_t len)
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

static int prepare(struct kube_source *s, struct kube_request *q, const char *url, long timeout_ms)
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
	kube_notify(userdata, KUBE_SRC_DIAG, "api: %s (keeping what was read before)", line);
}

static void refresh_files(struct kube_source *s)
{
	struct diag_list d;

	diag_list_init(&d);
	if (kube_config_refresh(&s->cfg, &d) < 0)
		diag_list_each_line(&d, file_kept_line, s);
	diag_list_done(&d);
}

int kube_request_start(struct kube_reflector *rf, bool watch, const char *url, long timeout_ms)
{
	struct kube_source *s = rf->src;
	struct kube_request *q;
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
		kube_request_free(s, q);
		return -ENOMEM;
	}
	r = prepare(s, q, url, timeout_ms);
	if (r < 0) {
		kube_request_free(s, q);
		return r;
	}
	if (curl_multi_add_handle(s->curl.multi, q->easy) != CURLM_OK) {
		curl_easy_cleanup(TAKE_PTR(q->easy));
		kube_request_free(s, q);
		return -EIO;
	}
	rf->req = q;
	return 0;
}

/*
 * A protobuf answer's body as the API's JSON, in place (a JSON one is left
 * as it is).  0, or -EINVAL with the reason in why, -ENOMEM.
 */
int kube_request_to_json(struct kube_source *s, struct kube_request *q, char *why, size_t whylen)
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
