/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Kubernetes API source: follows a cluster's Services and EndpointSlices
 * (and this node's Node object) as kube-proxy's informers do, with
 * libcurl's multi interface on the daemon's epoll loop (no thread, no
 * blocking call on the loop).
 *
 * Where the cluster is: sources/kubeconfig.h (--kubeconfig, --master, or
 * in-cluster).  What is followed, each by its own list/watch:
 *
 *   /api/v1/services                          merge source "api:services"
 *   /apis/discovery.k8s.io/v1/endpointslices  merge source "api:endpointslices"
 *       both with kube-proxy's label selector (KUBE_PROXY_SELECTOR)
 *   /api/v1/nodes?fieldSelector=metadata.name=<node>   zone and addresses
 *
 * Protocol, per resource, as client-go's reflector (kubereq.h has the
 * rules): a streaming list (a watch with sendInitialEvents, complete at
 * the initial-events-end bookmark) or, where the server refuses it, a
 * paged list (limit, continue) from the watch cache (resourceVersion=0)
 * SETs the resource's content; a watch from that
 * resourceVersion with allowWatchBookmarks applies ADDED/MODIFIED (ADD) and
 * DELETED (REMOVE), each once; BOOKMARK advances the version.  An expired
 * version (HTTP 410, an ERROR event with code 410, an expired continue
 * token) relists, at the last version; a list whose version is gone too
 * lists again at once with no version (a consistent read).  Answers are
 * read by their Content-Type: protobuf (kubepb.h) or JSON.  A dropped stream, a 5xx or 429 (Retry-After honoured), a
 * garbage line or a refused request reconnects with capped, jittered
 * backoff, resuming the watch from the last version applied; a watch the
 * server ends normally (timeoutSeconds) resumes at once.  While the server
 * is unreachable the merge engine keeps what the source last reported.
 *
 * The source only marks the merge engine dirty; it never logs above debug:
 * it reports through the event callback and kube_source_get_status().
 */
#ifndef SVCNAT_SOURCES_KUBE_H
#define SVCNAT_SOURCES_KUBE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/merge.h"
#include "sources/file/cfgfile.h"
#include "sources/kube/kubewire.h"
#include "sys/loop.h"

struct kube_options {
	const char *kubeconfig; /* --kubeconfig FILE, or NULL */
	const char *master;     /* --master URL, or NULL */
	const char *node_name;  /* this node's Node object (--hostname); NULL: not followed */
	const char *sa_dir;     /* in-cluster service account directory; NULL = KUBE_SA_DIR */
	unsigned page_size;     /* list limit; 0 = 500 (client-go's pager) */
	/* --kube-api-content-type (NULL: KUBE_CT_DEFAULT, protobuf), as
	 * client-go's rest.Config ContentType (sources/kube/kubereq.h). */
	const char *content_type;
	/* clientConnection.acceptContentTypes: the Accept header's value as
	 * given (NULL or "": the content type's, then any), as client-go's
	 * rest.Config AcceptContentTypes; checked by kube_accept_valid(). */
	const char *accept_content_types;
	bool no_watch_list; /* --feature-gates WatchListClient=false: list, never stream */
	enum file_mode_check mode; /* the kubeconfig's and its files' (sources/file/cfgfile.h) */
	/* Called once per HTTP request to the API server, when its status is
	 * known: a watch at its response headers, anything else when done.
	 * host is the server URL's host[:port]; code 0 means no answer (a
	 * connection or TLS failure); seconds from the request's start.  NULL:
	 * not reported.  For client-go's rest_client_* metrics. */
	void (*on_request)(const char *method, const char *host, long code, double seconds,
			   void *userdata);
	void *request_userdata;
};

/* Whether the options ask for the API source at all (a kubeconfig, a
 * master, or in-cluster environment variables). */
bool kube_options_wanted(const struct kube_options *o);

struct kube_source_status {
	bool connected;          /* every watch is established */
	bool synced;             /* Services and EndpointSlices were listed at least once */
	const char *server;      /* owned by the source */
	const char *rv_services; /* resourceVersion applied ("" before the first list) */
	const char *rv_slices;
	uint64_t relists;    /* lists after the first (expiry, resync) */
	uint64_t streamed;   /* lists that came as a stream (sendInitialEvents) */
	uint64_t protobuf;   /* answers read as protobuf */
	uint64_t reconnects; /* connection attempts after a failure */
	uint64_t events;     /* watch events applied (all resources) */
	uint64_t bookmarks;
	uint64_t rejected;       /* objects that did not decode */
	uint64_t last_list_usec; /* the first list of Services and EndpointSlices: request to SET */
	const char *last_error;  /* "" when nothing failed yet */
};

enum kube_source_event {
	KUBE_SRC_CONNECTED,    /* a watch is established (msg: resource, version) */
	KUBE_SRC_DISCONNECTED, /* the first failure after a success; retrying (msg: why) */
	KUBE_SRC_RETRY,        /* another failed attempt (msg: why): log it quietly */
	KUBE_SRC_SYNCED,       /* a list was applied (msg: resource, items, version, time) */
	KUBE_SRC_RELIST,       /* the version expired: listing again */
	KUBE_SRC_DIAG,         /* an object that did not decode (msg: the diag line) */
	KUBE_SRC_NODE,         /* this node's zone or addresses changed: kube_source_node() */
	KUBE_SRC_FATAL,        /* once mode only: the list failed (msg: why) */
};

struct kube_source;

typedef void (*kube_event_fn)(struct kube_source *s, enum kube_source_event ev, const char *msg,
			      void *userdata);

/*
 * Create the source: reads the kubeconfig (or in-cluster settings: diags
 * in d), registers merge sources "api:services" and "api:endpointslices",
 * sets up libcurl on the loop.  Nothing is sent until kube_source_start().
 * Returns 0, -EINVAL / -ENOENT / -EACCES (configuration: diag), -EEXIST,
 * -ENOMEM, -EIO (libcurl).
 */
int kube_source_new(struct loop *l, struct merge *m, const struct kube_options *o, kube_event_fn fn,
		    void *userdata, struct kube_source **ret, struct diag_list *d);

/* Start the first lists.  0 or -EALREADY. */
int kube_source_start(struct kube_source *s);

/* Drop the watches and list everything again (SIGHUP).  0 or -errno. */
int kube_source_resync(struct kube_source *s);

void kube_source_get_status(const struct kube_source *s, struct kube_source_status *ret);

/* This node as its Node object says, or NULL (not followed, not seen yet, deleted). */
const struct kube_node *kube_source_node(const struct kube_source *s);

/* Free (before loop_free: it unregisters its fds and timers). */
void kube_source_free(struct kube_source *s);

/*
 * One-shot: list Services, EndpointSlices (and the Node) once into m,
 * blocking, with a loop of its own; no watch.  A failure is not retried:
 * -EIO (unreachable, refused: a diag says why), -EINVAL (configuration),
 * -ENOMEM.  Object diags go to d.  ret_node (may be NULL) gets the Node.
 */
int kube_list_once(struct merge *m, const struct kube_options *o, struct kube_node *ret_node,
		   bool *ret_have_node, struct diag_list *d);

#endif
