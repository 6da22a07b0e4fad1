/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/etcd/etcdwire.h"
#include "sources/net/base64.h"
#include "util.h"

/* ---- key layout ---- */

int etcd_prefix_normalize(const char *prefix, char **ret_prefix)
{
	size_t n;
	char *p;

	if (!prefix || !*prefix)
		prefix = ETCD_DEFAULT_PREFIX;
	if (prefix[0] != '/' || strpbrk(prefix, "\n\r"))
		return -EINVAL;
	n = strlen(prefix);
	if (n > ETCD_MAX_KEY / 2)
		return -EINVAL;
	while (n > 0 && prefix[n - 1] == '/')
		n--;
	p = strndup(prefix, n);
	if (!p)
		return -ENOMEM;
	*ret_prefix = p;
	return 0;
}

static const struct {
	const char *dir;
	enum etcd_key_kind two; /* kind for <ns>/<name> */
	int one;                /* kind for <id>, -1 = not allowed */
} layout_dirs[] = {
	{ "specs", ETCD_KEY_SERVICE, ETCD_KEY_LEGACY_SPEC },
	{ "endpointslices", ETCD_KEY_SLICE, -1 },
	{ "endpoints", ETCD_KEY_ENDPOINTS, ETCD_KEY_LEGACY_ENDPOINTS },
};

static int copy_segment(char *dst, const char *s, size_t n)
{
	if (n == 0 || n > ETCD_MAX_SEGMENT)
		return -EINVAL;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

int etcd_key_parse(const char *prefix, const char *key, size_t len, struct etcd_key *ret)
{
	static const char services[] = "/services/";
	size_t plen = strlen(prefix), dlen, rlen;
	const char *rest, *slash;
	struct etcd_key k = { 0 };
	int r;

	if (len < plen + sizeof(services) - 1 || memcmp(key, prefix, plen) != 0 ||
	    memcmp(key + plen, services, sizeof(services) - 1) != 0)
		return -ENOENT;
	rest = key + plen + sizeof(services) - 1;
	rlen = len - (size_t)(rest - key);
	for (size_t i = 0; i < ARRAY_SIZE(layout_dirs); i++) {
		dlen = strlen(layout_dirs[i].dir);
		if (rlen <= dlen || memcmp(rest, layout_dirs[i].dir, dlen) != 0 || rest[dlen] != '/')
			continue;
		rest += dlen + 1;
		rlen -= dlen + 1;
		if (len > ETCD_MAX_KEY || memchr(rest, '\0', rlen))
			return -EINVAL;
		slash = memchr(rest, '/', rlen);
		if (!slash) {
			if (layout_dirs[i].one < 0)
				return -EINVAL;
			k.kind = (enum etcd_key_kind)layout_dirs[i].one;
			r = copy_segment(k.name, rest, rlen);
		} else {
			size_t nslen = (size_t)(slash - rest);

			if (memchr(slash + 1, '/', rlen - nslen - 1))
				return -EINVAL;
			k.kind = layout_dirs[i].two;
			r = copy_segment(k.ns, rest, nslen);
			if (r >= 0)
				r = copy_segment(k.name, slash + 1, rlen - nslen - 1);
		}
		if (r < 0)
			return r;
		*ret = k;
		return 0;
	}
	return -ENOENT;
}

char *etcd_key_format(const char *prefix, enum etcd_key_kind kind, const char *ns,
		      const char *name)
{
	const char *dir;
	bool legacy = false;
	char *s;
	int r;

	switch (kind) {
	case ETCD_KEY_SERVICE:
		dir = "specs";
		break;
	case ETCD_KEY_SLICE:
		dir = "endpointslices";
		break;
	case ETCD_KEY_ENDPOINTS:
		dir = "endpoints";
		break;
	case ETCD_KEY_LEGACY_SPEC:
		dir = "specs";
		legacy = true;
		break;
	case ETCD_KEY_LEGACY_ENDPOINTS:
		dir = "endpoints";
		legacy = true;
		break;
	default:
		return NULL;
	}
	if (!name || !*name || strchr(name, '/') || (!legacy && (!ns || !*ns || strchr(ns, '/'))))
		return NULL;
	if (legacy)
		r = asprintf(&s, "%s/services/%s/%s", prefix, dir, name);
	else
		r = asprintf(&s, "%s/services/%s/%s/%s", prefix, dir, ns, name);
	return r < 0 ? NULL : s;
}

int etcd_layout_range(const char *prefix, char **ret_start, char **ret_end)
{
	char *a = NULL, *b = NULL;

	/* '0' is '/' + 1: [P/services/, P/services0) is exactly the subtree. */
	if (asprintf(&a, "%s/services/", prefix) < 0)
		return -ENOMEM;
	if (asprintf(&b, "%s/services0", prefix) < 0) {
		free(a);
		return -ENOMEM;
	}
	*ret_start = a;
	*ret_end = b;
	return 0;
}

/* ---- responses ---- */

/* etcd's gateway prints int64 fields as strings; accept numbers too.  Absent = 0. */
static int json_int64(const cJSON *obj, const char *name, int64_t *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	char *end;
	long long x;

	if (!v || cJSON_IsNull(v)) {
		*ret = 0;
		return 0;
	}
	if (cJSON_IsNumber(v)) {
		if (!(v->valuedouble >= 0 && v->valuedouble < 9007199254740992.0) ||
		    v->valuedouble != (double)(int64_t)v->valuedouble)
			return -EINVAL;
		*ret = (int64_t)v->valuedouble;
		return 0;
	}
	if (!cJSON_IsString(v) || !v->valuestring[0] || v->valuestring[0] == '-')
		return -EINVAL;
	errno = 0;
	x = strtoll(v->valuestring, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*ret = x;
	return 0;
}

static bool json_true(const cJSON *obj, const char *name)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, name));
}

static const char *json_str(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void kv_done(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
}

static void kvs_free(struct etcd_kv *kvs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		kv_done(&kvs[i]);
	free(kvs);
}

static int b64_field(const cJSON *obj, const char *name, bool required, char **ret,
		     size_t *ret_len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!v) {
		if (required)
			return -EINVAL;
		*ret = strdup("");
		*ret_len = 0;
		return *ret ? 0 : -ENOMEM;
	}
	if (!cJSON_IsString(v))
		return -EINVAL;
	return base64_decode(v->valuestring, strlen(v->valuestring), ret, ret_len);
}

static int kv_parse(const cJSON *kv, struct etcd_kv *ret)
{
	struct etcd_kv k = { 0 };
	int r;

	if (!cJSON_IsObject(kv))
		return -EINVAL;
	r = json_int64(kv, "mod_revision", &k.mod_revision);
	if (r < 0)
		return r;
	r = b64_field(kv, "key", true, &k.key, &k.key_len);
	if (r < 0)
		return r;
	r = b64_field(kv, "value", false, &k.value, &k.value_len);
	if (r < 0) {
		free(k.key);
		return r;
	}
	*ret = k;
	return 0;
}

/* An {"error": ...} answer: plain ({"error","message","code"}) or streamed
 * ({"error": {"grpc_code","message"}}). */
static int error_parse(const cJSON *root, int *ret_code, char **ret_msg)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
	const cJSON *c;
	const char *msg;

	if (!e)
		return 0;
	if (cJSON_IsObject(e)) {
		msg = json_str(e, "message");
		c = cJSON_GetObjectItemCaseSensitive(e, "grpc_code");
	} else {
		msg = json_str(root, "message");
		if (!msg)
			msg = json_str(root, "error");
		c = cJSON_GetObjectItemCaseSensitive(root, "code");
	}
	*ret_code = cJSON_IsNumber(c) && c->valueint > 0 ? c->valueint : 2 /* UNKNOWN */;
	*ret_msg = strdup(msg && *msg ? msg : "unknown error");
	return *ret_msg ? 1 : -ENOMEM;
}

static int kvs_parse(const cJSON *arr, struct etcd_kv **ret, size_t *ret_n)
{
	struct etcd_kv *kvs;
	size_t n = 0, i = 0;
	const cJSON *it;
	int r;

	if (!arr || cJSON_IsNull(arr)) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	if (!cJSON_IsArray(arr))
		return -EINVAL;
	cJSON_ArrayForEach(it, arr)
		n++;
	kvs = calloc(n ? n : 1, sizeof(*kvs));
	if (!kvs)
		return -ENOMEM;
	cJSON_ArrayForEach(it, arr) {
		const cJSON *kv = it;
		const char *type = NULL;

		/* Watch events wrap the kv: {"type": "DELETE", "kv": {...}}. */
		if (cJSON_GetObjectItemCaseSensitive(it, "kv")) {
			kv = cJSON_GetObjectItemCaseSensitive(it, "kv");
			type = json_str(it, "type");
			if (!type && cJSON_GetObjectItemCaseSensitive(it, "type"))
				type = "?";
		}
		r = kv_parse(kv, &kvs[i]);
		if (r >= 0 && type && !streq(type, "PUT") && !streq(type, "DELETE")) {
			kv_done(&kvs[i]);
			r = -EINVAL;
		}
		if (r < 0) {
			kvs_free(kvs, i);
			return r;
		}
		kvs[i++].is_delete = type && streq(type, "DELETE");
	}
	*ret = kvs;
	*ret_n = n;
	return 0;
}

static int json_parse(const char *buf, size_t len, cJSON **ret)
{
	cJSON *root = cJSON_ParseWithLength(buf, len);

	if (!root)
		return -EINVAL;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return -EINVAL;
	}
	*ret = root;
	return 0;
}

int etcd_range_resp_parse(const char *buf, size_t len, struct etcd_range_resp *ret)
{
	struct etcd_range_resp rr = { 0 };
	const cJSON *hdr;
	cJSON *root;
	int r;

	r = json_parse(buf, len, &root);
	if (r < 0)
		return r;
	r = error_parse(root, &rr.error_code, &rr.error);
	if (r != 0)
		goto out;
	hdr = cJSON_GetObjectItemCaseSensitive(root, "header");
	r = cJSON_IsObject(hdr) ? json_int64(hdr, "revision", &rr.revision) : -EINVAL;
	if (r >= 0 && rr.revision <= 0)
		r = -EINVAL;
	if (r < 0)
		goto out;
	rr.more = json_true(root, "more");
	r = kvs_parse(cJSON_GetObjectItemCaseSensitive(root, "kvs"), &rr.kvs, &rr.n_kvs);
out:
	cJSON_Delete(root);
	if (r < 0) {
		free(rr.error);
		return r;
	}
	*ret = rr;
	return 0;
}

void etcd_range_resp_done(struct etcd_range_resp *r)
{
	kvs_free(r->kvs, r->n_kvs);
	free(r->error);
	*r = (struct etcd_range_resp){ 0 };
}

int etcd_watch_resp_parse(const char *buf, size_t len, struct etcd_watch_resp *ret)
{
	struct etcd_watch_resp w = { 0 };
	const cJSON *res, *hdr;
	const char *reason;
	cJSON *root;
	int r, code;

	r = json_parse(buf, len, &root);
	if (r < 0)
		return r;
	r = error_parse(root, &code, &w.error);
	if (r != 0)
		goto out;
	res = cJSON_GetObjectItemCaseSensitive(root, "result");
	if (!cJSON_IsObject(res)) {
		r = -EINVAL;
		goto out;
	}
	hdr = cJSON_GetObjectItemCaseSensitive(res, "header");
	r = cJSON_IsObject(hdr) ? json_int64(hdr, "revision", &w.revision) : 0;
	if (r >= 0)
		r = json_int64(res, "compact_revision", &w.compact_revision);
	if (r < 0)
		goto out;
	w.created = json_true(res, "created");
	w.canceled = json_true(res, "canceled");
	reason = json_str(res, "cancel_reason");
	if (reason && *reason) {
		w.cancel_reason = strdup(reason);
		if (!w.cancel_reason) {
			r = -ENOMEM;
			goto out;
		}
	}
	r = kvs_parse(cJSON_GetObjectItemCaseSensitive(res, "events"), &w.events, &w.n_events);
	if (r < 0)
		free(w.cancel_reason);
out:
	cJSON_Delete(root);
	if (r < 0) {
		free(w.error);
		return r;
	}
	*ret = w;
	return 0;
}

void etcd_watch_resp_done(struct etcd_watch_resp *w)
{
	kvs_free(w->events, w->n_events);
	free(w->cancel_reason);
	free(w->error);
	*w = (struct etcd_watch_resp){ 0 };
}

bool etcd_error_is_compacted(const char *msg)
{
	return msg && strstr(msg, "required revision has been compacted");
}
