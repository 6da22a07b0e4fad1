/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Documents: JSON text -> the kind decoders.  The cJSON tree lives only
 * inside decode_buffer()/decode_object(); every kept string is copied.
 * Here: parsing with located syntax errors, telling a Kubernetes object or
 * List from the original format, the item-by-item path for large Lists,
 * and the per-source duplicate check.
 *
 * Validation follows the API server's rules where kube-proxy relies on them
 * (ports, protocols, IPs, names): a file is not an API server, so an object
 * it would have rejected is rejected here, with one diag, and skipped.
 * Names are checked because they end up in iptables comments and chain-name
 * hashes.  JSON null means "absent" everywhere, as in Go.  Numbers must be
 * integral (80.0 is 80; cJSON does not keep the text).
 */
#include <stdio.h>
#include <stdlib.h>

#include "sources/decode/decode-endpoints.h"
#include "sources/decode/decode-json.h"
#include "sources/decode/decode-legacy.h"
#include "sources/decode/decode-names.h"
#include "sources/decode/decode-service.h"
#include "sources/decode/decode-slice.h"
#include "sources/decode/decode.h"
#include "sources/decode/decodecache.h"
#include "sources/decode/jsonarena.h"
#include "util.h"
/* --- documents --- */

enum kind {
	KIND_OTHER,
	KIND_SERVICE,
	KIND_ENDPOINTSLICE,
	KIND_ENDPOINTS,
};

/* Kind and group together: a Knative "Service" is not a v1 Service. */
static enum kind kind_of(const char *kind, const char *api_version)
{
	bool core = !api_version || streq(api_version, "v1");

	if (!kind)
		return KIND_OTHER;
	if (streq(kind, "Service") && core)
		return KIND_SERVICE;
	if (streq(kind, "Endpoints") && core)
		return KIND_ENDPOINTS;
	if (streq(kind, "EndpointSlice") &&
	    (!api_version || streq(api_version, "discovery.k8s.io/v1")))
		return KIND_ENDPOINTSLICE;
	return KIND_OTHER;
}

static int decode_kind(struct dctx *c, enum kind k, const cJSON *j, const char *key_ns,
		       const char *key_name, struct decoded *out)
{
	c->path[0] = '\0';
	c->plen = 0;
	switch (k) {
	case KIND_SERVICE:
		return decode_service(c, j, key_ns, key_name, out);
	case KIND_ENDPOINTSLICE:
		return decode_endpointslice(c, j, key_ns, key_name, out);
	case KIND_ENDPOINTS:
		return decode_endpoints(c, j, key_ns, key_name, out);
	default:
		return 0;
	}
}

/* Kind and apiVersion of an object (absent: NULL), type-checked. */
static int get_kind(struct dctx *c, const cJSON *j, const char **kind, const char **api)
{
	int r;

	c->path[0] = '\0';
	c->plen = 0;
	r = dec_get_str(c, j, "kind", kind);
	if (r == 0)
		r = dec_get_str(c, j, "apiVersion", api);
	return r;
}

/* The canonical name of a kind svcnat uses, NULL for the others. */
static const char *kind_name(enum kind k)
{
	switch (k) {
	case KIND_SERVICE:
		return "Service";
	case KIND_ENDPOINTSLICE:
		return "EndpointSlice";
	case KIND_ENDPOINTS:
		return "Endpoints";
	default:
		return NULL;
	}
}

static void reset_place(struct dctx *c)
{
	c->where = "";
	c->object[0] = '\0';
	c->path[0] = '\0';
	c->plen = 0;
}

typedef int (*walk_fn)(struct dctx *c, const struct decode_walk_item *it, void *userdata);

/*
 * Item i of a List; item_kind is the kind of a typed list's items (NULL
 * for "List", whose items carry their own).  Not an object, a bad kind:
 * the item's error (-EINVAL); no kind at all: a warning, skipped.
 */
static int walk_item(struct dctx *c, const cJSON *it, size_t i, const char *item_kind,
		     walk_fn fn, void *userdata)
{
	struct decode_walk_item wi = { .obj = it, .index = i, .in_list = true };
	const char *kind = NULL, *api = NULL;
	char where[64];
	int r;

	snprintf(where, sizeof(where), "items[%zu]", i);
	c->where = where;
	wi.where = where;
	dec_set_object(c, NULL, NULL, NULL);
	r = cJSON_IsObject(it) ? 0 : dec_type_error(c, it, "an object");
	if (r == 0)
		r = get_kind(c, it, &kind, &api);
	if (r == 0 && !kind && !item_kind) {
		r = dec_report(c, DIAG_WARNING, "no kind; ignored");
	} else if (r == 0) {
		if (!kind) {
			kind = item_kind;
			api = NULL;
		}
		wi.kind = kind;
		wi.api_version = api;
		wi.known = kind_name(kind_of(kind, api));
		r = fn(c, &wi, userdata);
	}
	reset_place(c);
	return r;
}

/*
 * A List is {apiVersion, kind, metadata, items} (kubectl and the API print
 * nothing else).  One without "items", or with another key ("itemz"), is
 * not a shape svcnat knows: read as an empty List it would remove every
 * service of the source, so it is refused whole.  items_elsewhere: the
 * caller holds "items" outside root.  0 or -EINVAL with a diag.
 */
static int list_shape(struct dctx *c, const cJSON *root, bool items_elsewhere)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "items" };
	const cJSON *j;
	char what[300];
	size_t i;
	int r;

	cJSON_ArrayForEach(j, root) {
		for (i = 0; i < ARRAY_SIZE(known); i++)
			if (streq(j->string, known[i]))
				break;
		if (i < ARRAY_SIZE(known))
			continue;
		r = diag_add(c->diags, DIAG_ERROR, c->source, NULL, NULL,
			     "%s is not a key of a List (apiVersion, kind, metadata, items): "
			     "refusing a document of unknown shape",
			     dec_quote(j->string, what, sizeof(what)));
		return r < 0 ? r : -EINVAL;
	}
	if (items_elsewhere || cJSON_GetObjectItemCaseSensitive(root, "items"))
		return 0;
	r = diag_add(c->diags, DIAG_ERROR, c->source, NULL, NULL,
		     "a List without \"items\": refusing it (an empty List is \"items\": [])");
	return r < 0 ? r : -EINVAL;
}

/* The items of a List (plain or typed) root, in order. */
static int walk_list(struct dctx *c, const cJSON *root, const char *list_kind, walk_fn fn,
		     void *userdata)
{
	_cleanup_free_ char *item_kind = NULL;
	const cJSON *items, *it;
	size_t n = 0, i = 0;
	int r;

	/* A typed list from the API ("ServiceList") omits kind in its items. */
	if (!streq(list_kind, "List")) {
		item_kind = strndup(list_kind, strlen(list_kind) - 4);
		if (!item_kind)
			return -ENOMEM;
	}
	r = list_shape(c, root, false);
	if (r < 0)
		return r;
	items = dec_get(root, "items");
	if (items) {
		reset_place(c);
		dec_path_key(c, "items");
		r = dec_check_array(c, items, DECODE_MAX_ITEMS, &n);
		dec_path_pop(c, 0);
		if (r < 0)
			return r == -EINVAL && cJSON_IsArray(items) ? -EFBIG : r;
	}
	cJSON_ArrayForEach(it, items) {
		r = walk_item(c, it, i++, item_kind, fn, userdata);
		if (r < 0 && r != -EINVAL)
			return r;
	}
	return 0;
}

/* The entries of an original-format root ({"Services": [...]}, or {}). */
static int walk_legacy(struct dctx *c, const cJSON *root, walk_fn fn, void *userdata)
{
	const cJSON *arr, *e;
	char where[64];
	size_t n, i = 0;
	int r;

	arr = dec_get_ci(root, "Services");
	if (!arr)
		return 0;
	reset_place(c);
	dec_path_key(c, "Services");
	r = dec_check_array(c, arr, DECODE_MAX_ITEMS, &n);
	dec_path_pop(c, 0);
	if (r == -EINVAL && cJSON_IsArray(arr))
		return -EFBIG;
	if (r < 0)
		return r;
	cJSON_ArrayForEach(e, arr) {
		struct decode_walk_item wi = { .obj = e, .where = where, .index = i,
					       .in_list = true, .legacy = true };

		snprintf(where, sizeof(where), "Services[%zu]", i++);
		c->where = where;
		dec_set_object(c, NULL, NULL, NULL);
		r = cJSON_IsObject(e) ? fn(c, &wi, userdata) : dec_type_error(c, e, "an object");
		reset_place(c);
		if (r < 0 && r != -EINVAL)
			return r;
	}
	return 0;
}

/*
 * A parsed document: a Kubernetes object, a List, or the original format.
 * Returns 0 (object errors are diags), -EINVAL (rejected whole: diag),
 * -EFBIG (too many items), -ENOMEM, or what fn returned other than -EINVAL.
 */
static int walk_tree(struct dctx *c, const cJSON *root, walk_fn fn, void *userdata)
{
	const char *kind = NULL, *api = NULL;
	char what[300];
	int r;

	if (!cJSON_IsObject(root)) {
		r = diag_add(c->diags, DIAG_ERROR, c->source, NULL, NULL,
			     "expected a JSON object (a Kubernetes object or List, or the original "
			     "{\"Services\": [...]}), got %s",
			     dec_describe(root, what, sizeof(what)));
		return r < 0 ? r : -EINVAL;
	}
	if (!dec_get(root, "kind")) {
		/* The original format; "{}" was an empty config to its Go decoder. */
		if (!dec_get_ci_raw(root, "Services") && root->child) {
			r = diag_add(c->diags, DIAG_ERROR, c->source, NULL, NULL,
				     "neither a Kubernetes object (no \"kind\") nor the original "
				     "format (no \"Services\")");
			return r < 0 ? r : -EINVAL;
		}
		return walk_legacy(c, root, fn, userdata);
	}
	r = get_kind(c, root, &kind, &api);
	if (r < 0)
		return r;
	if (strlen(kind) >= 4 && streq(kind + strlen(kind) - 4, "List"))
		return walk_list(c, root, kind, fn, userdata);
	{
		struct decode_walk_item wi = { .obj = root, .kind = kind, .api_version = api,
					       .known = kind_name(kind_of(kind, api)), .where = "" };

		r = fn(c, &wi, userdata);
		reset_place(c);
		return r == -EINVAL ? 0 : r;
	}
}

/* walk_fn of decode_buffer(): decode into the struct decoded userdata. */
static int decode_walked(struct dctx *c, const struct decode_walk_item *it, void *userdata)
{
	struct decoded *out = userdata;
	enum kind k;
	char what[300];
	int r;

	if (it->legacy)
		return decode_legacy_service(c, it->obj, NULL, NULL, true, out);
	k = kind_of(it->kind, it->api_version);
	if (k == KIND_OTHER && !it->in_list) {
		r = diag_add(c->diags, DIAG_NOTE, c->source, NULL, NULL,
			     "kind %s (%s) is not used; ignored",
			     dec_quote(it->kind, what, sizeof(what)),
			     it->api_version ? it->api_version : "no apiVersion");
		return r < 0 ? r : 0;
	}
	return decode_kind(c, k, it->obj, NULL, NULL, out);
}

static void line_col(const char *buf, size_t off, size_t *line, size_t *col)
{
	const char *nl;
	size_t i;

	*line = 1;
	nl = NULL;
	for (i = 0; i < off; i++) {
		if (buf[i] == '\n') {
			(*line)++;
			nl = buf + i;
		}
	}
	*col = nl ? (size_t)(buf + off - nl) : off + 1;
}

/* Parse a whole document; on failure one diag with the position. */
static int parse(const char *buf, size_t len, const char *source, struct diag_list *diags,
		 cJSON **ret)
{
	const char *end = NULL, *p;
	size_t line, col, off;
	char snippet[300], near[32];
	cJSON *root;

	if (len > DECODE_MAX_FILE_SIZE) {
		if (diag_add(diags, DIAG_ERROR, source, NULL, NULL,
			     "%zu bytes exceed the limit of %u bytes", len,
			     DECODE_MAX_FILE_SIZE) < 0)
			return -ENOMEM;
		return -EFBIG;
	}
	/* A UTF-8 byte order mark is not JSON, but editors write it. */
	off = len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
	root = len > off ? cJSON_ParseWithLengthOpts(buf + off, len - off, &end, false) : NULL;
	if (root) {
		for (p = end; p < buf + len && *p && strchr(" \t\r\n", *p); p++)
			;
		if (p == buf + len) {
			size_t key_off = 0;
			int r = dec_mark_nuls(root, buf + off, (size_t)(end - buf - off), &key_off);

			if (r == 0) {
				*ret = root;
				return 0;
			}
			cJSON_Delete(root);
			if (r < 0)
				return r;
			/* A key cut short would silently become another key
			 * ("it\u0000ems" -> "it"): the document is refused. */
			line_col(buf, off + key_off, &line, &col);
			return diag_add(diags, DIAG_ERROR, source, NULL, NULL,
					"a key contains a NUL character (\\u0000) at line %zu, "
					"column %zu", line, col) < 0 ? -ENOMEM : -EINVAL;
		}
		cJSON_Delete(root);
		end = p;
	}
	for (p = buf + off; p < buf + len && *p && strchr(" \t\r\n", *p); p++)
		;
	if (p == buf + len) {
		end = buf + len;
		line_col(buf, len, &line, &col);
		return diag_add(diags, DIAG_ERROR, source, NULL, NULL,
				"not JSON: no value (empty text) at line %zu, column %zu", line,
				col) < 0 ? -ENOMEM : -EINVAL;
	}
	if (!end || end < buf || end > buf + len)
		end = buf + off;
	line_col(buf, (size_t)(end - buf), &line, &col);
	if (!root && end < buf + len && (*end == '[' || *end == '{') &&
	    dec_depth_at(buf + off, (size_t)(end - buf - off)) >= CJSON_NESTING_LIMIT)
		return diag_add(diags, DIAG_ERROR, source, NULL, NULL,
				"arrays and objects nested deeper than %d levels at line %zu, "
				"column %zu", CJSON_NESTING_LIMIT, line, col) < 0 ? -ENOMEM : -EINVAL;
	off = (size_t)(buf + len - end);
	memcpy(near, end, off < 16 ? off : 16);
	near[off < 16 ? off : 16] = '\0';
	if (diag_add(diags, DIAG_ERROR, source, NULL, NULL,
		     root ? "not JSON: unexpected text after the value at line %zu, column %zu%s%s"
			  : "not JSON: syntax error at line %zu, column %zu%s%s",
		     line, col, off ? " near " : "",
		     off ? dec_quote(near, snippet, sizeof(snippet)) : "") < 0)
		return -ENOMEM;
	return -EINVAL;
}

int decode_key_cmp(const void *a, const void *b)
{
	const struct decode_key *x = a, *y = b;
	int r = strcmp(x->ns, y->ns);

	if (r == 0)
		r = strcmp(x->name, y->name);
	if (r == 0)
		r = x->idx < y->idx ? -1 : x->idx > y->idx;
	return r;
}

const char *decode_slice_kind(const struct epslice *e)
{
	switch (e->origin) {
	case ORIGIN_K8S:
		return "EndpointSlice ";
	case ORIGIN_K8S_EP:
		return "Endpoints ";
	default:
		return "";
	}
}

/*
 * Two items with one key in one source are a conflict the API cannot have;
 * keep the first (earlier in the file, or an earlier file of a directory)
 * and reject the later ones.
 */
static int dedup(void **items, size_t *n, size_t from, bool services, const char *source,
		 struct diag_list *diags)
{
	_cleanup_free_ struct decode_key *k = NULL;
	_cleanup_free_ bool *drop = NULL;
	size_t i, o;
	int r;

	if (*n - from == 0 || *n < 2)
		return 0;
	k = calloc(*n, sizeof(*k));
	drop = calloc(*n, sizeof(*drop));
	if (!k || !drop)
		return -ENOMEM;
	for (i = 0; i < *n; i++) {
		if (services) {
			const struct service *s = items[i];

			k[i] = (struct decode_key){ .ns = s->ns, .name = s->name, .idx = i };
		} else {
			const struct epslice *e = items[i];

			k[i] = (struct decode_key){ .ns = e->ns, .name = e->name, .idx = i };
		}
	}
	qsort_safe(k, *n, sizeof(*k), decode_key_cmp);
	for (i = 1; i < *n; i++) {
		char obj[600];

		if (strcmp(k[i].ns, k[i - 1].ns) || strcmp(k[i].name, k[i - 1].name))
			continue;
		drop[k[i].idx] = true;
		snprintf(obj, sizeof(obj), "%s%s/%s", services ? "" : decode_slice_kind(items[k[i].idx]),
			 k[i].ns, k[i].name);
		r = diag_add(diags, DIAG_ERROR, source, obj, NULL,
			     "defined more than once; the later definition is ignored");
		if (r < 0)
			return r;
	}
	for (i = 0, o = 0; i < *n; i++) {
		if (!drop[i]) {
			items[o++] = items[i];
		} else if (services) {
			service_unref(items[i]);
		} else {
			epslice_unref(items[i]);
		}
	}
	*n = o;
	return 0;
}

int decoded_dedup(struct decoded *d, const char *source, struct diag_list *diags)
{
	int r;

	r = dedup((void **)d->services, &d->n_services, 0, true, source, diags);
	if (r == 0)
		r = dedup((void **)d->slices, &d->n_slices, 0, false, source, diags);
	return r;
}

static void rollback(struct decoded *out, size_t n_services, size_t n_slices)
{
	while (out->n_services > n_services)
		service_unref(out->services[--out->n_services]);
	while (out->n_slices > n_slices)
		epslice_unref(out->slices[--out->n_slices]);
}

static int finish(struct decoded *out, size_t n_services, size_t n_slices, const char *source,
		  struct diag_list *diags, int r)
{
	if (r == 0)
		r = dedup((void **)out->services, &out->n_services, n_services, true, source,
			  diags);
	if (r == 0)
		r = dedup((void **)out->slices, &out->n_slices, n_slices, false, source, diags);
	if (r < 0)
		rollback(out, n_services, n_slices);
	return r;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(cJSON *, cJSON_Delete)

static unsigned long streamed_lists;
static bool streaming = true;

unsigned long decode_streamed_lists(void)
{
	return streamed_lists;
}

void decode_set_streaming(bool on)
{
	streaming = on;
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/*
 * One value at p.  cJSON skips a byte order mark at the start of what it is
 * given: inside a document that is not JSON, and the whole-tree path says
 * so, so here it is refused too (found by tests/fuzz/fuzz-decode).
 */
static cJSON *parse_at(const char *p, const char *end, const char **ret_end)
{
	if (end - p >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
		return NULL;
	return cJSON_ParseWithLengthOpts(p, (size_t)(end - p), ret_end, false);
}

/* Where stream_list() is. */
struct stream {
	struct dctx *c;
	struct jsonarena *arena;
	struct decode_cache *cache;
	struct decoded *out;
	const struct diag_list *tmp; /* the items' diags so far */
	const char *end;             /* of the text */
	size_t n;                    /* items so far */
};

/*
 * The stream_*() steps return 1 when they took their part, with *pp after
 * it; 0 when the text is not the plain case (the whole-tree path decodes
 * or rejects it); or the -errno of a hard error (ENOMEM), which is
 * reported.
 */

/* One item at *pp: taken from the cache when kept byte for byte, else
 * parsed and decoded, and its memory given back to the arena. */
static int stream_item(struct stream *st, const char **pp)
{
	size_t ns0 = st->out->n_services, ne0 = st->out->n_slices;
	size_t d0 = st->tmp->n + st->tmp->dropped, key_off;
	const char *p = *pp, *q;
	struct jsonarena_mark m;
	cJSON *it;
	int r = 0;

	if (st->n >= DECODE_MAX_ITEMS)
		return 0;
	/* An item byte for byte as kept: its objects as they were, neither
	 * parsed nor decoded. */
	if (st->cache && (q = decode_cache_skip(p, st->end)))
		r = decode_cache_take(st->cache, p, (size_t)(q - p), st->out);
	if (r < 0)
		return r;
	if (r > 0) {
		st->n++;
		*pp = skip_ws(q, st->end);
		return 1;
	}
	jsonarena_mark(st->arena, &m);
	it = parse_at(p, st->end, &q);
	if (!cJSON_IsObject(it) || !dec_get(it, "kind") ||
	    dec_mark_nuls(it, p, (size_t)(q - p), &key_off) != 0) {
		cJSON_Delete(it);
		return 0;
	}
	r = walk_item(st->c, it, st->n++, NULL, decode_walked, st->out);
	cJSON_Delete(it);
	jsonarena_rewind(st->arena, &m);
	if (r < 0 && r != -EINVAL)
		return r;
	/* Kept only when it said nothing: a reused item reports nothing.
	 * Not kept on ENOMEM, no matter. */
	if (st->cache && r == 0 && st->tmp->n + st->tmp->dropped == d0)
		(void)decode_cache_add(st->cache, p, (size_t)(q - p),
				       st->out->n_services > ns0 ? st->out->services + ns0 : NULL,
				       st->out->n_services - ns0,
				       st->out->n_slices > ne0 ? st->out->slices + ne0 : NULL,
				       st->out->n_slices - ne0);
	*pp = skip_ws(q, st->end);
	return 1;
}

/* The items array at *pp (its '['), item by item. */
static int stream_items(struct stream *st, const char **pp)
{
	const char *p = skip_ws(*pp + 1, st->end), *end = st->end;
	int r;

	while (p < end && *p != ']') {
		r = stream_item(st, &p);
		if (r <= 0)
			return r;
		if (p < end && *p == ',') {
			p = skip_ws(p + 1, end);
			if (p == end || *p == ']') /* [1,] is not JSON */
				return 0;
		} else if (p == end || *p != ']') {
			return 0;
		}
	}
	if (p == end)
		return 0;
	*pp = p + 1;
	return 1;
}

/* One member of the top-level object at *pp, and the ',' after it:
 * "items" streamed, any other parsed whole into root. */
static int stream_member(struct stream *st, cJSON *root, bool *items_seen, const char **pp)
{
	_cleanup_(cJSON_Deletep) cJSON *key = NULL;
	const char *p = *pp, *q, *end = st->end;
	size_t key_off;
	int r;

	if (*p != '"' || !(key = parse_at(p, end, &q)))
		return 0;
	if (!cJSON_IsString(key) || dec_mark_nuls(key, p, (size_t)(q - p), &key_off) != 0 ||
	    dec_has_nul(key))
		return 0; /* the whole-tree path reports it */
	p = skip_ws(q, end);
	if (p == end || *p != ':')
		return 0;
	p = skip_ws(p + 1, end);
	/* Of two "items" the last wins: the whole-tree path takes it. */
	if (streq(key->valuestring, "items") && *items_seen)
		return 0;
	if (streq(key->valuestring, "items") && p < end && *p == '[') {
		*items_seen = true;
		r = stream_items(st, &p);
		if (r <= 0)
			return r;
	} else {
		cJSON *value = parse_at(p, end, &q);

		if (!value || dec_mark_nuls(value, p, (size_t)(q - p), &key_off) != 0) {
			cJSON_Delete(value);
			return 0;
		}
		cJSON_AddItemToObject(root, key->valuestring, value);
		p = q;
	}
	p = skip_ws(p, end);
	if (p < end && *p == ',') {
		p = skip_ws(p + 1, end);
		if (p == end || *p == '}') /* {"a": 1,} is not JSON */
			return 0;
	} else if (p == end || *p != '}') {
		return 0;
	}
	*pp = p;
	return 1;
}

/* Whether root, the top level without its items, is a List.  Its own
 * errors are the whole-tree path's to report. */
static bool is_list(struct dctx *c, const cJSON *root)
{
	struct diag_list none, *real = c->diags;
	const char *kind = NULL, *api = NULL;
	bool ok;

	diag_list_init(&none);
	c->diags = &none;
	ok = get_kind(c, root, &kind, &api) == 0 && kind && streq(kind, "List") &&
		list_shape(c, root, true) == 0;
	diag_list_done(&none);
	c->diags = real;
	return ok;
}

/* The top-level object at p (its '{'), which must be the whole text. */
static int stream_object(struct stream *st, cJSON *root, const char *p)
{
	bool items_seen = false;
	int r;

	for (p = skip_ws(p + 1, st->end); p < st->end && *p != '}';) {
		r = stream_member(st, root, &items_seen, &p);
		if (r <= 0)
			return r;
	}
	if (p == st->end || skip_ws(p + 1, st->end) != st->end || !items_seen)
		return 0;
	return is_list(st->c, root) ? 1 : 0;
}

/*
 * A List decoded item by item.  kubectl's List of Services and
 * EndpointSlices is by far the largest input, and its whole cJSON tree is
 * five times its text; here cJSON parses one item at a time (each top-level
 * member is a value it parses on its own), the item is decoded and its
 * memory reused for the next.  Only the plain case is taken: an object
 * whose "kind" is "List", with an "items" array of objects that carry their
 * own kind, within DECODE_MAX_ITEMS.  For anything else, a syntax error
 * included, *ret_done is false, everything is undone, and the whole-tree
 * path decodes (or rejects) it exactly as before.
 */
static int stream_list(struct dctx *c, const char *text, size_t len, struct jsonarena *arena,
		       struct decode_cache *cache, struct decoded *out, bool *ret_done)
{
	struct diag_list *real = c->diags, tmp;
	struct stream st = {
		.c = c, .arena = arena, .cache = cache, .out = out, .tmp = &tmp, .end = text + len
	};
	size_t n_services = out->n_services, n_slices = out->n_slices;
	const char *p = skip_ws(text, st.end);
	cJSON *root = NULL;
	int r = 0;

	*ret_done = false;
	diag_list_init(&tmp);
	c->diags = &tmp;
	if (p < st.end && *p == '{')
		root = cJSON_CreateObject();
	if (root)
		r = stream_object(&st, root, p);
	c->diags = real;
	cJSON_Delete(root);
	if (r == 0) {
		rollback(out, n_services, n_slices);
		diag_list_done(&tmp);
		return 0;
	}
	*ret_done = true;
	streamed_lists++;
	if (r > 0)
		r = 0;
	if (diag_list_move(real, &tmp) < 0)
		r = -ENOMEM;
	diag_list_done(&tmp);
	return r;
}

int decode_buffer_cached(const char *buf, size_t len, const char *source,
			 struct decode_cache *cache, struct decoded *out, struct diag_list *diags)
{
	/* Left after root is deleted (cleanups run in reverse order). */
	_cleanup_(jsonarena_leave) struct jsonarena arena;
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	struct dctx c = { .source = source, .diags = diags, .where = "" };
	size_t n_services = out->n_services, n_slices = out->n_slices;
	int r;

	if (cache)
		decode_cache_begin(cache);
	jsonarena_enter(&arena, len);
	if (streaming && len <= DECODE_MAX_FILE_SIZE) {
		size_t bom = len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
		bool done;

		r = stream_list(&c, buf + bom, len - bom, &arena, cache, out, &done);
		if (done) {
			if (r == -EFBIG || r == -EINVAL)
				rollback(out, n_services, n_slices);
			else
				r = finish(out, n_services, n_slices, source, diags, r);
			if (cache && r >= 0)
				decode_cache_commit(cache);
			else if (cache)
				decode_cache_abort(cache);
			return r;
		}
	}
	/* Not a plain List: decoded whole, and nothing kept changes. */
	if (cache)
		decode_cache_abort(cache);
	r = parse(buf, len, source, diags, &root);
	if (r < 0)
		return r;
	r = walk_tree(&c, root, decode_walked, out);
	if (r == -EFBIG || r == -EINVAL) {
		rollback(out, n_services, n_slices);
		return r;
	}
	return finish(out, n_services, n_slices, source, diags, r);
}

int decode_buffer(const char *buf, size_t len, const char *source, struct decoded *out,
		  struct diag_list *diags)
{
	return decode_buffer_cached(buf, len, source, NULL, out, diags);
}

int decode_object(const char *buf, size_t len, const char *kind, const char *key_ns,
		  const char *key_name, const char *source, struct decoded *out,
		  struct diag_list *diags)
{
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	struct dctx c = { .source = source, .diags = diags, .where = "" };
	size_t n_services = out->n_services, n_slices = out->n_slices;
	const char *jkind = NULL, *api = NULL;
	enum kind k = KIND_OTHER;
	char what[300];
	int r;

	r = parse(buf, len, source, diags, &root);
	if (r < 0)
		return r;
	if (!cJSON_IsObject(root)) {
		r = diag_add(diags, DIAG_ERROR, source, NULL, NULL,
			     "expected a JSON object, got %s",
			     dec_describe(root, what, sizeof(what)));
		return r < 0 ? r : -EINVAL;
	}
	if (streq(kind, "legacy-service") || streq(kind, "legacy-endpoints")) {
		const char *name;

		if (key_ns && *key_ns && !dec_is_dns1123_label(key_ns)) {
			r = diag_add(diags, DIAG_ERROR, source, NULL, NULL,
				     "%s is not a valid namespace",
				     dec_quote(key_ns, what, sizeof(what)));
			return r < 0 ? r : -EINVAL;
		}

		if (streq(kind, "legacy-service")) {
			r = decode_legacy_service(&c, root, key_ns, key_name, false, out);
		} else {
			dec_set_object(&c, NULL, NULL, NULL);
			r = decode_legacy_name(&c, root, key_name, &name);
			if (r == 0) {
				dec_set_object(&c, NULL, key_ns && *key_ns ? key_ns : "default",
					       name);
				r = decode_legacy_endpoints(&c, root,
							    key_ns && *key_ns ? key_ns : "default",
							    name, PROTO_TCP, out);
			}
		}
		if (r == -EINVAL)
			r = 0;
		return finish(out, n_services, n_slices, source, diags, r);
	}
	if (streq(kind, "Service"))
		k = KIND_SERVICE;
	else if (streq(kind, "EndpointSlice"))
		k = KIND_ENDPOINTSLICE;
	else if (streq(kind, "Endpoints"))
		k = KIND_ENDPOINTS;
	if (k == KIND_OTHER) {
		r = diag_add(diags, DIAG_ERROR, source, NULL, NULL, "unknown kind '%s' requested",
			     kind);
		return r < 0 ? r : -EINVAL;
	}
	r = get_kind(&c, root, &jkind, &api);
	if (r == 0 && jkind && kind_of(jkind, api) != k) {
		c.plen = 0;
		dec_path_key(&c, "kind");
		r = dec_fail(&c, "%s (%s), expected %s", dec_quote(jkind, what, sizeof(what)),
			     api ? api : "no apiVersion", kind);
	}
	if (r == 0)
		r = decode_kind(&c, k, root, key_ns, key_name, out);
	if (r == -EINVAL)
		r = 0;
	return finish(out, n_services, n_slices, source, diags, r);
}

struct walk_adapter {
	decode_walk_fn fn;
	void *userdata;
};

/* The first string value under j that holds a NUL: its error at its path. */
static int find_nul(struct dctx *c, const cJSON *j)
{
	const cJSON *ch;
	size_t i = 0, l;
	int r;

	if (dec_has_nul(j))
		return dec_fail(c, "contains a NUL character (\\u0000)");
	for (ch = cJSON_IsArray(j) || cJSON_IsObject(j) ? j->child : NULL; ch; ch = ch->next) {
		l = cJSON_IsObject(j) ? dec_path_key(c, ch->string) : dec_path_idx(c, i++);
		r = find_nul(c, ch);
		dec_path_pop(c, l);
		if (r < 0)
			return r;
	}
	return 0;
}

/* For decode_walk()'s callers, who store objects whole: one holding a NUL
 * anywhere is rejected (printed again, its strings would be cut short). */
static int walk_public(struct dctx *c, const struct decode_walk_item *it, void *userdata)
{
	const struct walk_adapter *a = userdata;
	int r;

	r = find_nul(c, it->obj);
	return r < 0 ? r : a->fn(it, a->userdata);
}

int decode_walk(const char *buf, size_t len, const char *source, decode_walk_fn fn,
		void *userdata, struct diag_list *diags)
{
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	struct dctx c = { .source = source, .diags = diags, .where = "" };
	struct walk_adapter a = { fn, userdata };
	int r;

	r = parse(buf, len, source, diags, &root);
	if (r < 0)
		return r;
	return walk_tree(&c, root, walk_public, &a);
}
