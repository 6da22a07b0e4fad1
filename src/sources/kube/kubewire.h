/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pure half of the Kubernetes API source: no sockets, no libcurl, no
 * clock.  What the API server's list/watch protocol looks like on the wire
 * and how it becomes merge updates:
 *
 *  - a list page: {"kind": "ServiceList", "metadata": {"resourceVersion":
 *    "123", "continue": "..."}, "items": [...]}; the items of every page
 *    (one resourceVersion) become one MERGE_SET of the resource's merge
 *    source;
 *  - a watch stream: newline-delimited events {"type": "ADDED" | "MODIFIED"
 *    | "DELETED" | "BOOKMARK" | "ERROR", "object": {...}}, split anywhere
 *    by the transport: ADDED/MODIFIED -> MERGE_ADD, DELETED -> MERGE_REMOVE,
 *    each advancing the resourceVersion; BOOKMARK only advances it; an
 *    ERROR event carries a Status (code 410: the version expired, relist);
 *  - a Status object (the body of a failed request);
 *  - this node's Node object: its topology zone label and addresses.
 *
 * Objects are decoded by sources/decode.h; a diagnostic about an object is
 * named "api:<Kind>/<ns>/<name>".  An object that does not decode is
 * skipped (a watch event then removes the key's previous item).
 */
#ifndef SVCNAT_SOURCES_KUBEWIRE_H
#define SVCNAT_SOURCES_KUBEWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/merge.h"
#include "core/model.h"
#include "sources/decode/decode.h"
#include "sources/net/framer.h"

#define KUBE_MAX_EVENT (64u << 20) /* bytes of one watch event line */
#define KUBE_MAX_PAGE (256u << 20) /* bytes of one list page */
#define KUBE_MAX_RV 128            /* bytes of a resourceVersion we keep */
#define KUBE_MAX_DEPTH 1000        /* nesting of arrays and objects (cJSON's limit) */
#define KUBE_MAX_NODE_ADDRS 16
#define KUBE_MAX_NAME 253          /* bytes of a namespace or name (a DNS subdomain) */
/* Watch backoff: 200 ms doubling to 5 s (sources/net/backoff.h). */
#define KUBE_BACKOFF_BASE_USEC (200 * 1000ull)
#define KUBE_BACKOFF_CAP_USEC (5 * 1000 * 1000ull)

/* The resources the source follows. */
enum kube_res {
	KUBE_RES_SERVICES,
	KUBE_RES_SLICES,
	KUBE_RES_NODE,
	KUBE_RES_COUNT,
};

const char *kube_res_kind(enum kube_res r); /* "Service", "EndpointSlice", "Node" */
const char *kube_res_path(enum kube_res r); /* "/api/v1/services", ... */
const char *kube_res_name(enum kube_res r); /* "services", "endpointslices", "nodes" */

/*
 * kube-proxy's label selector for Services and EndpointSlices: objects of
 * another proxy (service.kubernetes.io/service-proxy-name) and headless
 * ones (service.kubernetes.io/headless) are not sent at all.
 */
#define KUBE_PROXY_SELECTOR \
	"!service.kubernetes.io/headless,!service.kubernetes.io/service-proxy-name"

/* A value's place in a buffer. */
struct kube_span {
	const char *p; /* NULL: absent */
	size_t len;
};

/*
 * Find top-level members of the JSON object in buf: for each keys[i], the
 * span of its value (raw JSON text) in ret[i], or {NULL, 0}.  Values are
 * skipped, not parsed (strings with escapes, nesting): the scan takes every
 * object cJSON takes (and some it does not, which the parse of a span then
 * refuses); a key written with escapes does not match.  0, -ELOOP (arrays
 * and objects nested deeper than KUBE_MAX_DEPTH) or -EINVAL (not one
 * object).
 */
int kube_json_members(const char *buf, size_t len, const char *const *keys, size_t n,
		      struct kube_span *ret);

/* What a list page says besides its items. */
struct kube_list_meta {
	char kind[64];            /* "ServiceList", or "Status" for an error */
	char rv[KUBE_MAX_RV + 1]; /* metadata.resourceVersion */
	char *cont;               /* metadata.continue, or NULL (last page) */
	struct kube_span items;   /* the items array */
};

/* Parse a page's kind and metadata (items are not looked at).  0, -EINVAL,
 * -ELOOP (nested deeper than KUBE_MAX_DEPTH), -ENOMEM. */
int kube_list_meta_parse(const char *buf, size_t len, struct kube_list_meta *ret);
void kube_list_meta_done(struct kube_list_meta *m);

/* A Status object: code, reason, message.  0 or -EINVAL (not a Status). */
struct kube_status {
	int code;
	char reason[64];
	char message[256];
};
int kube_status_parse(const char *buf, size_t len, struct kube_status *ret);

enum kube_ev_type {
	KUBE_EV_ADDED,
	KUBE_EV_MODIFIED,
	KUBE_EV_DELETED,
	KUBE_EV_BOOKMARK,
	KUBE_EV_ERROR,
};

/* One watch event; object points into the line it was parsed from. */
struct kube_event {
	enum kube_ev_type type;
	struct kube_span object;
	char ns[KUBE_MAX_NAME + 1];
	char name[KUBE_MAX_NAME + 1];
	char rv[KUBE_MAX_RV + 1];
	struct kube_status status; /* ERROR */
	bool initial_end; /* BOOKMARK annotated k8s.io/initial-events-end: "true" */
};

/*
 * Parse one line of a watch stream.  -EINVAL with a reason in why (a
 * garbage line, an unknown type, an object without name or
 * resourceVersion): the stream cannot be trusted past it.
 */
int kube_event_parse(const char *line, size_t len, struct kube_event *ret, char *why, size_t whylen);

/* This node, from its Node object. */
struct kube_node {
	char name[KUBE_MAX_NAME + 1];
	char zone[KUBE_MAX_NAME + 1];          /* topology.kubernetes.io/zone, "" if none */
	struct ipaddr addrs[KUBE_MAX_NODE_ADDRS]; /* InternalIP, then ExternalIP (kube-proxy's order) */
	size_t n_addrs;
	struct ipnet pod_cidrs[2]; /* spec.podCIDRs (or spec.podCIDR): --detect-local-mode=NodeCIDR */
	size_t n_pod_cidrs;
	/* false when metadata.deletionTimestamp is set or spec.taints has
	 * the key ToBeDeletedByClusterAutoscaler: kube-proxy's /healthz then
	 * answers 503, "nodeEligible": false (proxy_health.go SyncNode) */
	bool eligible;
};

/* Parse a Node object's JSON.  0 or -EINVAL. */
int kube_node_parse(const char *buf, size_t len, struct kube_node *ret);

/*
 * One followed resource's state: what list/watch turns into merge updates
 * and the resourceVersion bookkeeping.  The merge source is the caller's
 * (one per resource, so a relist of one SETs only its own items).  For
 * KUBE_RES_NODE there is no merge source (source_id < 0): the node's state
 * is kept here and `node_changed` is set when it changes.
 */
struct kube_sink {
	enum kube_res res;
	struct merge *merge;
	int source_id;
	char rv[KUBE_MAX_RV + 1];  /* every event up to here is applied; "" before a list */
	struct diag_list diags;    /* object diagnostics, drained by the caller */
	struct decoded pending;    /* the list being read */
	struct framer framer; /* the watch stream */
	bool listing;
	bool listed;           /* a list was applied at least once */
	/* A streaming list (kube_sink_stream_begin): ADDED events go to
	 * pending until the initial-events-end bookmark commits them as a
	 * list; stream_synced then says so once (the caller clears it). */
	bool streaming, stream_synced;
	struct kube_node node; /* KUBE_RES_NODE: this node (n_addrs 0 and name "" if none) */
	bool have_node, node_changed;
	/* counters */
	uint64_t lists;  /* lists applied */
	uint64_t events; /* ADDED/MODIFIED/DELETED applied */
	uint64_t bookmarks;
	uint64_t rejected; /* objects that did not decode */
	size_t n_items;    /* items the last list applied */
	size_t max_items;  /* a watch event taking the resource past this is refused */
	char list_why[160]; /* why kube_sink_list_page() refused a page ("items: ...") */
};

void kube_sink_init(struct kube_sink *s, enum kube_res res, struct merge *m, int source_id);
void kube_sink_done(struct kube_sink *s);

/* A list, in pages: begin, each page, commit (MERGE_SET, rv = the list's). */
void kube_sink_list_begin(struct kube_sink *s);
/* 0, -EINVAL (a page that is not a list of this resource: the field and
 * why in s->list_why), -ENOMEM. */
int kube_sink_list_page(struct kube_sink *s, const char *buf, size_t len,
			const struct kube_list_meta *meta);
int kube_sink_list_commit(struct kube_sink *s, const char *rv);
void kube_sink_list_abort(struct kube_sink *s);

/* How a watch stream ended or must end. */
enum kube_watch_verdict {
	KUBE_WATCH_OK,      /* keep reading */
	KUBE_WATCH_EXPIRED, /* 410 Gone: relist */
	KUBE_WATCH_BROKEN,  /* a garbage line or an ERROR event: reconnect from rv */
	KUBE_WATCH_NOMEM,   /* relist */
	KUBE_WATCH_NOSTREAM, /* a streaming list the server did not stream: list instead */
};

/* Start a new watch stream (drops a partial line of the last one). */
void kube_sink_watch_begin(struct kube_sink *s);

/*
 * Start a streaming list (a watch with sendInitialEvents): as a list
 * begins, and the watch stream too.  Its ADDED events are the list's items;
 * the BOOKMARK with initial_end commits them (MERGE_SET at its version) and
 * sets stream_synced; the watch goes on as any.  Any other event before it
 * (the server did not stream the initial state): KUBE_WATCH_NOSTREAM.
 * kube_sink_list_abort() ends it.
 */
void kube_sink_stream_begin(struct kube_sink *s);

/*
 * Feed watch bytes as they arrive; every complete event is applied.  Returns
 * KUBE_WATCH_OK or why the stream must end (reason in why); events before
 * the bad one are applied, nothing after it.
 */
enum kube_watch_verdict kube_sink_watch_feed(struct kube_sink *s, const char *data, size_t n,
					     char *why, size_t whylen);

/* Apply one parsed event (ADDED/MODIFIED/DELETED/BOOKMARK).  0, -ENOMEM, or
 * -E2BIG: the resource would hold more than max_items (the event is not
 * applied: what its key held before is gone; the stream must end). */
int kube_sink_apply(struct kube_sink *s, const struct kube_event *ev);


/* Percent-encode s for a query value into a new string, or NULL. */
char *kube_query_escape(const char *s);

#endif
