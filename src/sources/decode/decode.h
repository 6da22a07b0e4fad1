/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Decoding of configuration JSON (cJSON stays inside sources/):
 *  - Kubernetes objects as `kubectl get services,endpointslices -A -o json`
 *    (and `services,endpoints`) print them: a List or a single object of
 *    kind Service (v1), EndpointSlice (discovery.k8s.io/v1), Endpoints (v1).
 *    Unknown kinds and fields are ignored.
 *  - The original (2014) kube-proxy config format:
 *    {"Services": [{"Name": "nodejs", "Port": 10000,
 *                   "Endpoints": ["10.240.180.168:8000", ...]}]}
 *    with field names matched case-insensitively.  Each entry becomes a
 *    NodePort-style service (namespace "default", type NodePort,
 *    node_port = Port, no cluster IP, protocol TCP unless "Protocol" says
 *    UDP) and an epslice (origin ORIGIN_LEGACY) with the listed endpoints,
 *    all ready.
 *  - The original etcd endpoint object {"Name": ..., "Endpoints": [...]}.
 *
 * An invalid object is skipped with one DIAG_ERROR naming the source (file),
 * the object (ns/name) and the field path with the bad value; the rest is
 * decoded.  A string holding a NUL (cJSON would cut it short) is such an
 * error for its object.  Text that is not JSON (or not an object/List)
 * fails as a whole: -EINVAL with a diag giving line:column; so does a key
 * holding a NUL, nesting deeper than CJSON_NESTING_LIMIT (said as such),
 * and a List svcnat does not know the shape of: without "items", or with a
 * key but apiVersion, kind, metadata and items (a misspelled "itemz" would
 * otherwise read as an empty List).  Of duplicate keys in an object the
 * last wins, as in Go's encoding/json and so the API server.
 *
 * Details of the mapping:
 *  - JSON null is "absent" everywhere; numbers must be integral.  Names,
 *    ports, protocols, IPs and CIDRs are checked by the API server's rules
 *    (names end up in rule comments).  A Service is named "ns/name" in
 *    diags, the other kinds "EndpointSlice ns/name" / "Endpoints ns/name".
 *  - A v1 Endpoints object and an original-format endpoint list become one
 *    epslice per distinct (port set, address family): the first is named
 *    like the service, the k-th further one "<service>#k".  With no
 *    endpoints at all, one empty epslice is still produced.
 *  - Typed lists ("ServiceList", ...) whose items omit kind are accepted.
 *  - Two items with one key (ns/name) in *out: the later is dropped with a
 *    DIAG_ERROR.  A List over DECODE_MAX_ITEMS fails as a whole (-EFBIG).
 *  - "legacy-service" yields the service only (its endpoints live under
 *    their own key); "legacy-endpoints" yields epslices with TCP ports.
 *  - On any failure *out is left as it was.
 */
#ifndef SVCNAT_SOURCES_DECODE_H
#define SVCNAT_SOURCES_DECODE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/diag.h"
#include "core/model.h"

/* Hostile-input limits. */
#define DECODE_MAX_FILE_SIZE (256u << 20)   /* bytes of one file */
#define DECODE_MAX_ITEMS 200000             /* objects in one List */
#define DECODE_MAX_STRING 4096              /* bytes of one string field we keep */
#define DECODE_MAX_PORTS 1024               /* ports per service / slice */
#define DECODE_MAX_ENDPOINTS 10000          /* endpoints per slice / subset */
#define DECODE_MAX_ADDRS 64                 /* IPs per list (clusterIPs, externalIPs, ...) */

struct decoded {
	struct service **services;
	size_t n_services;
	size_t cap_services;
	struct epslice **slices;
	size_t n_slices;
	size_t cap_slices;
};

void decoded_done(struct decoded *d); /* unrefs every item */

/*
 * Drop every item whose key (ns/name, per kind) an earlier item of d has,
 * with a DIAG_ERROR each, as decode_buffer() does within one call: for
 * items gathered from several calls (the pages of a list), in one sort
 * instead of one per call.  0 or -ENOMEM (d unchanged then).
 */
int decoded_dedup(struct decoded *d, const char *source, struct diag_list *diags);

/*
 * Decode a buffer (need not be NUL-terminated).  `source` names it in
 * diagnostics.  Items are appended to *out.  Returns 0 (possibly with
 * object errors in diags), -EINVAL (whole text rejected), -EFBIG, -ENOMEM.
 */
int decode_buffer(const char *buf, size_t len, const char *source, struct decoded *out,
		  struct diag_list *diags);

/*
 * decode_buffer() with the items of the file's last decode kept in cache
 * (sources/decodecache.h; NULL: none): a kubectl List's items that are
 * byte for byte as kept are neither parsed nor decoded again, and come out
 * as the same objects.  The same result otherwise; the cache holds this
 * decode's items after a success and is unchanged after a failure.
 */
struct decode_cache;
int decode_buffer_cached(const char *buf, size_t len, const char *source,
			 struct decode_cache *cache, struct decoded *out, struct diag_list *diags);

/*
 * How many Lists decode_buffer() has decoded item by item so far (kubectl's
 * plain "List" of objects that carry their kind is parsed one item at a
 * time; other documents as a whole tree, with the same result).  For tests.
 */
unsigned long decode_streamed_lists(void);

/* An item's key in the duplicate checks (one source's, and across files). */
struct decode_key {
	const char *ns;
	const char *name;
	const char *what; /* "", "EndpointSlice ", "Endpoints " as the decoder names them */
	size_t idx;       /* the item's place: the first of equal keys sorts first */
};

/* qsort() order of struct decode_key: namespace, name, then idx. */
int decode_key_cmp(const void *a, const void *b);

/* How messages name a slice's kind: "EndpointSlice ", "Endpoints " or "". */
const char *decode_slice_kind(const struct epslice *e);

/* For tests and the fuzzer: with false, every document takes the
 * whole-tree path (the item-by-item path must give the same result). */
void decode_set_streaming(bool on);

/*
 * Decode one object of a known kind from an etcd value ("Service",
 * "EndpointSlice", or the original layout's "legacy-service" /
 * "legacy-endpoints"); key_ns/key_name come from the etcd key and fill in
 * what the value lacks.  Same return values.
 */
int decode_object(const char *buf, size_t len, const char *kind, const char *key_ns,
		  const char *key_name, const char *source, struct decoded *out,
		  struct diag_list *diags);

/*
 * Walking a document's objects without decoding them (svcnat etcd-load
 * stores each object of a file under its own key).  The document is taken
 * as decode_buffer() takes it (the same shapes, limits and whole-document
 * errors) and fn sees every object decode_buffer() would decode:
 *  - a lone Kubernetes object of any kind (where "", in_list false);
 *  - each item of a List or typed List ("ServiceList": kind "Service")
 *    that is an object with a kind (where "items[i]"); an item that is not
 *    an object is an error, one without a kind a warning, both skipped;
 *  - each object entry of the original {"Services": [...]} (legacy, where
 *    "Services[i]", kind NULL).
 * The tree (obj and the strings) lives until decode_walk() returns.
 */
struct cJSON;

struct decode_walk_item {
	const struct cJSON *obj;
	const char *kind;        /* the object's kind (a typed List's item kind) */
	const char *api_version; /* NULL when absent */
	const char *known;       /* "Service", "EndpointSlice", "Endpoints" when kind and
				  * apiVersion are one svcnat decodes, else NULL */
	const char *where;       /* "items[3]", "Services[3]" or "" */
	size_t index;
	bool in_list;
	bool legacy;             /* an entry of the original format */
};

/* Returns 0 (go on), -EINVAL (this object is rejected: go on), other -errno (stop). */
typedef int (*decode_walk_fn)(const struct decode_walk_item *it, void *userdata);

/*
 * Returns 0 (object-level problems are in diags), -EINVAL (not JSON, or not
 * a document svcnat knows: diag with line:column or the reason), -EFBIG
 * (over DECODE_MAX_FILE_SIZE or DECODE_MAX_ITEMS: diag; fn is not called),
 * -ENOMEM, or the first error fn returned other than -EINVAL.
 */
int decode_walk(const char *buf, size_t len, const char *source, decode_walk_fn fn,
		void *userdata, struct diag_list *diags);

#endif
