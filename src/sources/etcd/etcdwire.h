/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pure half of the etcd source: no sockets, no libcurl, no clock.
 *
 *  - the key layout (etcd key <-> kind, namespace, name; see etcd.h),
 *  - parsing of range and watch responses (keys and values in base64,
 *    sources/net/base64.h; the watch stream framed by sources/net/framer.h),
 *  - the reconnect backoff's bounds (sources/net/reflector.h uses them).
 * The store (what was read, per key) is etcdstore.h.
 *
 * Everything here is deterministic and unit-tested (tests/unit/test-etcd.c).
 */
#ifndef SVCNAT_SOURCES_ETCDWIRE_H
#define SVCNAT_SOURCES_ETCDWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/model.h"

#define ETCD_DEFAULT_PREFIX "/registry"
#define ETCD_MAX_SEGMENT 253           /* bytes of a namespace, name or id */
#define ETCD_MAX_KEY 4096              /* bytes of a key we accept */
#define ETCD_MAX_LINE (256u << 20)     /* bytes of one watch/range response */

/* Reconnect backoff: base * 2^attempt, capped, with jitter (sources/net/reflector.h). */
#define ETCD_BACKOFF_BASE_USEC (200 * 1000ull)
#define ETCD_BACKOFF_CAP_USEC (5 * 1000 * 1000ull)

/* What an etcd key holds, from the key alone (see etcd.h for the layout). */
enum etcd_key_kind {
	ETCD_KEY_SERVICE,          /* P/services/specs/<ns>/<name> */
	ETCD_KEY_SLICE,            /* P/services/endpointslices/<ns>/<name> */
	ETCD_KEY_ENDPOINTS,        /* P/services/endpoints/<ns>/<name> */
	ETCD_KEY_LEGACY_SPEC,      /* P/services/specs/<id>: decided by the value */
	ETCD_KEY_LEGACY_ENDPOINTS, /* P/services/endpoints/<id> */
};

struct etcd_key {
	enum etcd_key_kind kind;
	char ns[ETCD_MAX_SEGMENT + 1];   /* "" for the legacy kinds */
	char name[ETCD_MAX_SEGMENT + 1]; /* the name, or the legacy id */
};

/*
 * Normalize a prefix: NULL or "" -> "/registry"; trailing '/' removed; must
 * start with '/' and contain no NUL/newline.  Returns a new string in
 * *ret_prefix, or -EINVAL / -ENOMEM.  "/" normalizes to "" (keys "/services/...").
 */
int etcd_prefix_normalize(const char *prefix, char **ret_prefix);

/*
 * Map an etcd key (len bytes, not NUL-terminated, may contain anything)
 * under a normalized prefix.  Returns 0 and fills *ret; -ENOENT when the key
 * is outside the layout (ignored: other data may share the prefix); -EINVAL
 * when it is inside P/services/{specs,endpoints,endpointslices}/ but
 * malformed (empty or oversized segment, too many segments, NUL byte).
 */
int etcd_key_parse(const char *prefix, const char *key, size_t len, struct etcd_key *ret);

/* The key for (kind, ns, name) under a normalized prefix; a new string or NULL. */
char *etcd_key_format(const char *prefix, enum etcd_key_kind kind, const char *ns,
		      const char *name);

/* Range start and end covering every key of the layout: P/services/ and P/services0. */
int etcd_layout_range(const char *prefix, char **ret_start, char **ret_end);

/* One key-value (range kvs[] or a watch event's kv); key and value decoded. */
struct etcd_kv {
	char *key;
	size_t key_len;
	char *value;  /* "" when absent (deletes, empty values) */
	size_t value_len;
	int64_t mod_revision;
	bool is_delete; /* watch events only */
};

struct etcd_range_resp {
	int64_t revision;     /* header.revision */
	bool more;
	struct etcd_kv *kvs;
	size_t n_kvs;
	int error_code;       /* gRPC code of an {"error": ...} answer, else 0 */
	char *error;          /* its message, else NULL */
};

/*
 * Parse a /v3/kv/range answer.  An etcd error object ({"error","code"}) is
 * a successful parse with error_code/error set.  -EINVAL for anything that
 * is not a well-formed answer (bad JSON, bad base64, bad revision).
 */
int etcd_range_resp_parse(const char *buf, size_t len, struct etcd_range_resp *ret);
void etcd_range_resp_done(struct etcd_range_resp *r);

struct etcd_watch_resp {
	int64_t revision;         /* header.revision (0 if absent) */
	bool created;
	bool canceled;
	int64_t compact_revision; /* > 0: the requested revision was compacted */
	char *cancel_reason;      /* or NULL */
	struct etcd_kv *events;
	size_t n_events;
	char *error;              /* a stream-level {"error": ...} object, or NULL */
};

/* Parse one line of the watch stream ({"result": {...}} or {"error": ...}). */
int etcd_watch_resp_parse(const char *buf, size_t len, struct etcd_watch_resp *ret);
void etcd_watch_resp_done(struct etcd_watch_resp *w);

/* Whether an etcd error message says a revision was compacted. */
bool etcd_error_is_compacted(const char *msg);


#endif
