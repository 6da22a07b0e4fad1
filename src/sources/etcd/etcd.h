/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * etcd v3 source: every node of a cluster follows one store of services and
 * endpoints, through etcd's JSON gateway (/v3/kv/range, /v3/watch) with
 * libcurl's multi interface on the daemon's epoll loop (no thread, no
 * blocking call on the loop).
 *
 * Key layout under the prefix P (--etcd-prefix, default "/registry"); every
 * value is JSON, decoded by the same decoders as files (sources/decode.h):
 *
 *   P/services/specs/<ns>/<name>           v1 Service
 *   P/services/endpointslices/<ns>/<name>  discovery.k8s.io/v1 EndpointSlice
 *   P/services/endpoints/<ns>/<name>       v1 Endpoints (used for a service
 *                                          only when it has no slice)
 *   P/services/specs/<id>                  the original system's layout: a
 *                                          value with "kind": "Service" is a
 *                                          v1 Service, anything else the
 *                                          original service object
 *                                          {"Name": ..., "Port": ..., ...}
 *   P/services/endpoints/<id>              the original endpoints object
 *                                          {"Name": ..., "Endpoints":
 *                                           ["ip:port", ...]}
 *
 * Other keys under P are ignored.  A value that does not decode is skipped
 * with a diagnostic (the key's previous item, if any, is removed).
 *
 * Protocol: one range read of P/services/ (paged, all pages at one revision)
 * sent as MERGE_SET; then a watch from the read's revision + 1: PUT ->
 * MERGE_ADD, DELETE -> MERGE_REMOVE.  When the watch's revision has been
 * compacted the source re-reads and SETs again.  When a connection drops or
 * a member fails, the source retries with capped exponential backoff and
 * jitter on the next endpoint, resuming the watch from the last revision it
 * applied: no event is lost or applied twice.  While etcd is unreachable the
 * merge engine keeps what the source last reported.
 *
 * The source only marks the merge engine dirty; the daemon's post hook
 * flushes it.  It never logs above debug: it reports through the event
 * callback, and its state through etcd_source_get_status().
 */
#ifndef SVCNAT_SOURCES_ETCD_H
#define SVCNAT_SOURCES_ETCD_H

#include <stdbool.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/merge.h"
#include "sources/etcd/etcdstore.h"
#include "sources/file/cfgfile.h"
#include "sys/loop.h"

/*
 * Options, as the command line gives them; strings are borrowed (copied by
 * the functions that keep them).  The TLS files are read by svcnat
 * (sources/file/pemfile.h: regular files of at most PEMFILE_MAX_SIZE
 * bytes, the config-safety rule `mode`) and handed to libcurl as bytes;
 * the source reads a file again before a new connection when it changed
 * (certificate rotation), and keeps what it read before when the new one
 * cannot be used (an ETCD_EV_DIAG says so).
 */
struct etcd_options {
	const char *endpoints; /* --etcd-endpoints "URL,URL,...": http:// or https:// */
	const char *prefix;    /* --etcd-prefix; NULL = ETCD_DEFAULT_PREFIX */
	const char *cacert;    /* --etcd-cacert: CA bundle (PEM) for the members; NULL = system CAs */
	const char *cert;      /* --etcd-cert: client certificate (PEM); NULL = none */
	const char *key;       /* --etcd-key: client private key (PEM); NULL = none */
	enum file_mode_check mode; /* for the three files */
};

/*
 * Check options, reading the TLS files; one diag per problem
 * ("--etcd-endpoints: 'x' is not an http:// or https:// URL",
 * "--etcd-cacert: ca.pem: not a regular file (a FIFO)").  0, -EINVAL,
 * -ENOMEM.
 */
int etcd_options_check(const struct etcd_options *o, struct diag_list *d);

/* Split and check --etcd-endpoints; URLs without trailing '/'.  0, -EINVAL, -ENOMEM. */
int etcd_endpoints_parse(const char *csv, char ***ret_urls, size_t *ret_n);
void etcd_endpoints_free(char **urls, size_t n);

/* The state a daemon shows in logs, /healthz detail and metrics. */
struct etcd_status {
	bool connected;          /* a watch is established on some member */
	bool synced;             /* a full read has been applied at least once */
	int64_t revision;        /* every event up to this revision is applied */
	uint64_t reconnects;     /* connection attempts after a failure */
	uint64_t full_reads;     /* full reads applied (1 + re-reads after compaction) */
	uint64_t events;         /* watch events applied */
	uint64_t rejected;       /* values that did not decode */
	uint64_t last_read_usec; /* duration of the last full read (request to SET) */
	const char *endpoint;    /* member in use, or the next to try; owned by the source */
	const char *last_error;  /* "URL: what failed", "" when nothing failed yet */
};

/* What the source tells its owner, to log. */
enum etcd_event {
	ETCD_EV_CONNECTED,    /* watch established (msg: endpoint, revision) */
	ETCD_EV_DISCONNECTED, /* the first failure after a success; retrying (msg: why) */
	ETCD_EV_RETRY,        /* another failed attempt (msg: why): log it quietly */
	ETCD_EV_SYNCED,       /* a full read was applied (msg: keys, revision, time) */
	ETCD_EV_COMPACTED,    /* the watch revision was compacted: re-reading */
	ETCD_EV_DIAG,         /* a rejected value or odd key (msg: the diag line) */
};

struct etcd_source;

typedef void (*etcd_event_fn)(struct etcd_source *s, enum etcd_event ev, const char *msg,
			      void *userdata);

/*
 * Create the source: registers merge source "etcd" (its precedence is its
 * registration order), sets up libcurl on the loop.  Nothing is sent until
 * etcd_source_start().  fn may be NULL.  Returns 0, -EINVAL (bad options),
 * -EEXIST (a source "etcd" exists), -ENOMEM, -EIO (libcurl setup).
 */
int etcd_source_new(struct loop *l, struct merge *m, const struct etcd_options *o,
		    etcd_event_fn fn, void *userdata, struct etcd_source **ret);

/* Start the first full read. 0 or -errno. */
int etcd_source_start(struct etcd_source *s);

/* Drop the watch and read everything again (SIGHUP).  0 or -errno. */
int etcd_source_resync(struct etcd_source *s);

/* Snapshot of the state; pointers in it stay valid until the next loop turn. */
void etcd_source_get_status(const struct etcd_source *s, struct etcd_status *ret);

/* Free (must run before loop_free: it unregisters its fds and timers). */
void etcd_source_free(struct etcd_source *s);

/*
 * One-shot (--once, --dry-run, --diff, --dump-state): read the whole store
 * once into m (merge source "etcd"), blocking, with a loop of its own; no
 * watch.  Each member is tried once: -EIO when all failed (an error diag
 * says why), -EINVAL (options), -ENOMEM.  Rejected values are warnings in d.
 */
int etcd_list_once(struct merge *m, const struct etcd_options *o, struct diag_list *d);

#endif
