/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the API source asks the server, as client-go's informers ask it:
 * the Accept header for the configured content type, which decoder an
 * answer's Content-Type takes, and the query of each list and watch with
 * the reflector's resourceVersion rules.  Pure: no I/O, no clock
 * (tests/unit/test-kubereq.c).
 *
 * client-go (k8s.io/client-go, tools/cache/reflector.go):
 *   - the first list asks resourceVersion=0 (relistResourceVersion: served
 *     from the watch cache), paged with limit=500;
 *   - a relist asks the last version seen, without a limit when that is
 *     not "0" (the pager's PageSize 0: the watch cache answers it whole),
 *     unless a list at "0" came back in pages (paginatedResult: no cache);
 *   - a list whose version is gone (410 Expired, or "Too large resource
 *     version") marks the version unavailable and lists again at once with
 *     no resourceVersion: a consistent read, paged; a list that succeeds
 *     clears the mark (isLastSyncResourceVersionUnavailable);
 *   - continue pages send no resourceVersion (tools/pager/pager.go); an
 *     expired continue token lists again whole at the version first asked;
 *   - a streaming list (WatchListClient, on by default since client-go
 *     1.35) is a watch with sendInitialEvents=true,
 *     resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true from
 *     rewatchResourceVersion() (the last version, "" when unavailable),
 *     complete at the BOOKMARK annotated k8s.io/initial-events-end; any
 *     error but a retriable one falls back to a list (ListAndWatch).
 */
#ifndef SVCNAT_SOURCES_KUBEREQ_H
#define SVCNAT_SOURCES_KUBEREQ_H

#include <stdbool.h>
#include <stddef.h>

#define KUBE_CT_JSON "application/json"
#define KUBE_CT_PROTOBUF "application/vnd.kubernetes.protobuf"
/* kube-proxy's clientConnection.contentType default
 * (pkg/proxy/apis/config/v1alpha1/defaults.go) */
#define KUBE_CT_DEFAULT KUBE_CT_PROTOBUF
#define KUBE_INITIAL_EVENTS_END "k8s.io/initial-events-end"

/* Whether svcnat reads content type ct ("application/json" or the
 * protobuf one, without parameters). */
bool kube_content_type_valid(const char *ct);

/*
 * The Accept header's value for a content type (NULL: KUBE_CT_DEFAULT) and
 * acceptContentTypes (NULL or "": none), as client-go's setAcceptHeader
 * (rest/request.go): acceptContentTypes when given, else the content type
 * and ", *" "/" "*".  0, or -ENAMETOOLONG (buf too small).
 */
int kube_accept_header(const char *content_type, const char *accept, char *buf, size_t len);

/* The longest acceptContentTypes svcnat sends (the Accept header's value). */
#define KUBE_ACCEPT_MAX 200

/*
 * Whether accept (a clientConnection.acceptContentTypes value: media
 * types separated by commas, each with optional parameters) can be sent
 * and answered: at most KUBE_ACCEPT_MAX bytes, no control characters, and
 * one of its types is one svcnat reads (JSON, protobuf, or a wildcard the
 * server answers with its default, JSON).  On false, *ret_why (if not
 * NULL) says what it must be instead.
 */
bool kube_accept_valid(const char *accept, const char **ret_why);

enum kube_wire {
	KUBE_WIRE_JSON,
	KUBE_WIRE_PROTOBUF,
	KUBE_WIRE_OTHER, /* neither: the answer cannot be read */
};

/*
 * The decoder of an answer by its Content-Type header value (parameters
 * such as ";stream=watch" or ";charset=utf-8" ignored); a missing or empty
 * one means the configured content type (client-go's transformResponse).
 */
enum kube_wire kube_wire_of(const char *content_type_header, const char *configured);

/* The reflector's resourceVersion state of one resource. */
struct kube_relist {
	bool rv_unavailable; /* the last version is gone: the next list is consistent */
	bool paginated;      /* a list at "0" came in pages: keep paging */
	bool full_list;      /* the next list is whole (an expired continue token) */
};

/* One list request's parameters (the first page's). */
struct kube_list_plan {
	char rv[130];   /* resourceVersion to send ("": none) */
	unsigned limit; /* 0: no limit */
};

/* The next list: last_rv the version applied ("" before any), page the
 * page size. */
void kube_list_plan(const char *last_rv, const struct kube_relist *st, unsigned page,
		    struct kube_list_plan *ret);

/*
 * The query (after '?') of a list page: the plan's limit and version for
 * the first page; for a continue page (cont: escaped token) limit and
 * continue only (versions are escaped here).  sel is "labelSelector=..." or "fieldSelector=...".  A new
 * string in *ret; 0 or -ENOMEM.
 */
int kube_list_query(const struct kube_list_plan *p, const char *cont, const char *sel,
		    char **ret);

/*
 * The query of a watch from version rv ("" sends none) with
 * timeoutSeconds; stream: a streaming list (sendInitialEvents).  0 or
 * -ENOMEM.
 */
int kube_watch_query(const char *rv, unsigned timeout_s, bool stream, const char *sel,
		     char **ret);

/* The version a streaming list starts from (rewatchResourceVersion). */
const char *kube_stream_rv(const char *last_rv, const struct kube_relist *st);

/*
 * Whether an HTTP status that ended a streaming list means "list instead"
 * (any refusal but 410, 429 and 5xx: an older server's 400/422, a 403 or
 * 404 of a proxy in front).
 */
bool kube_stream_refused(long http);

/*
 * A list was answered http with Status message msg ("" if none): whether
 * the version it asked for is gone (410, or 504 "Too large resource
 * version": isExpiredError, isTooLargeResourceVersionError).
 */
bool kube_list_rv_gone(long http, const char *msg);

#endif
