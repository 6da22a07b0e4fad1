/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The API source's own state, shared by its three parts: kube.c (the
 * source: create, start, status, free, the one-shot list), kuberefl.c
 * (each resource's reflector: list, streaming list, watch, relist,
 * backoff) and kubehttp.c (one HTTP request: libcurl's handle, headers,
 * the answer's bytes).  What the objects mean is kubewire.h's and
 * kubepb.h's; which request comes next is kubereq.h's.  Nothing outside
 * src/sources/kube/ includes this header.
 */
#ifndef SVCNAT_SOURCES_KUBE_KUBESTATE_H
#define SVCNAT_SOURCES_KUBE_KUBESTATE_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sources/kube/kube.h"
#include "sources/kube/kubeconfig.h"
#include "sources/kube/kubepb.h"
#include "sources/kube/kubereq.h"
#include "sources/net/curlloop.h"
#include "sources/net/listcap.h"
#include "sources/net/reflector.h"
#include "util.h"

struct kube_reflector;

/* One HTTP request of a reflector: a list page, a watch or a streaming list. */
struct kube_request {
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

/* One resource's list/watch. */
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
	struct kube_request *req;
};

/* The source: the resources it follows, their connection, what it reports. */
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

/* kube.c: report ev to the source's event callback (none: nothing). */
void kube_notify(struct kube_source *s, enum kube_source_event ev, const char *fmt, ...)
	_printf_(3, 4);

/*
 * kubehttp.c: start one GET of url for rf (a watch or streaming list when
 * watch) with an overall timeout, with the kubeconfig's credentials read
 * again where their files changed; rf->req is the request from then on.
 * 0, -ENOMEM, -EIO (libcurl).
 */
int kube_request_start(struct kube_reflector *rf, bool watch, const char *url, long timeout_ms);

/* kubehttp.c: free q (NULL: nothing), taking its handle off s's multi. */
void kube_request_free(struct kube_source *s, struct kube_request *q);

/* kubehttp.c: drop rf's request, if any. */
void kube_request_cancel(struct kube_reflector *rf);

/* kubehttp.c: call kube_options.on_request for q, once. */
void kube_request_report(struct kube_request *q);

/* kubehttp.c: why q's transfer ended in cc, in words (buf, or a static text). */
const char *kube_request_error(const struct kube_request *q, CURLcode cc, char *buf, size_t len);

/*
 * kubehttp.c: q's protobuf answer rewritten in place as the API's JSON
 * (a JSON one is left as it is).  0, or -EINVAL with the reason in why,
 * -ENOMEM.
 */
int kube_request_to_json(struct kube_source *s, struct kube_request *q, char *why, size_t whylen);

/* kuberefl.c: set rf up for res of s (sid: its merge source, -1 for the
 * Node).  0 or -errno (its timer); kube_refl_done() either way. */
int kube_refl_init(struct kube_reflector *rf, struct kube_source *s, enum kube_res res, int sid);

/* kuberefl.c: cancel rf's request, free what it holds. */
void kube_refl_done(struct kube_reflector *rf);

/* kuberefl.c: the next request, a list or a watch as the reflector says.
 * 0 or -errno (then retried later, as a failure). */
int kube_refl_connect(struct kube_reflector *rf);

/* kuberefl.c: drop the request and list again (backs off when this comes
 * too soon after the last relist). */
void kube_refl_relist(struct kube_reflector *rf, const char *why);

/* kuberefl.c: whether every resource (with_node: the Node too) was listed. */
bool kube_refl_all_listed(struct kube_source *s, bool with_node);

/* kuberefl.c: rf's watch (or streaming list) was answered 200. */
void kube_refl_established(struct kube_reflector *rf, struct kube_request *q);

/* kuberefl.c: bytes of q's watch went through its decoder: report what
 * they applied (diags, the Node, the end of a streaming list). */
void kube_refl_fed(struct kube_reflector *rf, struct kube_request *q);

/* kuberefl.c: curlloop's callback: a request ended with result. */
void kube_refl_transfer_done(void *priv, CURLcode result, void *userdata);

#endif
