/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/etcdload.h"
#include "sources/decode/decode.h"
#include "sources/etcd/etcdcurl.h"
#include "sources/net/base64.h"
#include "sources/net/curlloop.h"
#include "util.h"

#define TXN_TIMEOUT_MS 30000

struct loader {
	const struct etcd_conn *conn;
	const char *path;
	struct diag_list *d;
	CURL *easy;
	size_t cur;        /* member in use */
	char *ops;         /* JSON of the pending request_put ops, comma-separated */
	size_t ops_len, ops_cap;
	size_t n_ops;
	int written;
};

static size_t body_write(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct { char *p; size_t len, cap; } *b = userdata;
	size_t n = size * nmemb;

	if (n > ETCD_MAX_LINE || b->len > ETCD_MAX_LINE - n)
		return 0;
	if (GROW(b->p, b->cap, b->len + n + 1) < 0)
		return 0;
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return n;
}

/* POST body to path on the members in turn until one answers. */
static int post(struct loader *ld, const char *path, const char *body, char **ret, size_t *ret_len)
{
	char errbuf[CURL_ERROR_SIZE];
	CURLcode cc = CURLE_OK;

	for (size_t tries = 0; tries < ld->conn->n_urls; tries++) {
		struct { char *p; size_t len, cap; } b = { 0 };
		const char *url = ld->conn->urls[ld->cur];
		struct curl_slist *h = NULL;
		int r;

		errbuf[0] = '\0';
		r = etcd_curl_prepare(ld->easy, ld->conn, url, path, body, TXN_TIMEOUT_MS, &h);
		if (r < 0)
			return r;
		curl_easy_setopt(ld->easy, CURLOPT_WRITEFUNCTION, body_write);
		curl_easy_setopt(ld->easy, CURLOPT_WRITEDATA, &b);
		curl_easy_setopt(ld->easy, CURLOPT_ERRORBUFFER, errbuf);
		cc = curl_easy_perform(ld->easy);
		curl_slist_free_all(h);
		if (cc == CURLE_OK) {
			*ret = b.p ? b.p : strdup("");
			*ret_len = b.len;
			return *ret ? 0 : -ENOMEM;
		}
		free(b.p);
		diag_add(ld->d, DIAG_WARNING, url, NULL, NULL, "%s, trying the next member",
			 errbuf[0] ? errbuf : curl_easy_strerror(cc));
		ld->cur = (ld->cur + 1) % ld->conn->n_urls;
	}
	diag_add(ld->d, DIAG_ERROR, NULL, NULL, "--etcd-endpoints", "no etcd member answered (%s)",
		 errbuf[0] ? errbuf : curl_easy_strerror(cc));
	return -EIO;
}

/*
 * A transaction of puts is idempotent, so one refused while the cluster
 * has no leader (an election, a member restarting) is retried on the next
 * member, a bounded number of times with a growing pause (~15 s in all).
 */
#define ETCDLOAD_TXN_TRIES 8

static int flush_txn(struct loader *ld)
{
	_cleanup_free_ char *body = NULL;
	char msg[256] = "";
	unsigned try;
	int r;

	if (!ld->n_ops)
		return 0;
	if (asprintf(&body, "{\"success\":[%.*s]}", (int)ld->ops_len, ld->ops) < 0)
		return -ENOMEM;
	for (try = 0; try < ETCDLOAD_TXN_TRIES; try++) {
		_cleanup_free_ char *ans = NULL;
		const cJSON *m;
		cJSON *root;
		size_t len;
		bool ok;

		if (try) {
			usleep(200000u << (try < 4 ? try : 3));
			ld->cur = (ld->cur + 1) % ld->conn->n_urls;
		}
		r = post(ld, "/v3/kv/txn", body, &ans, &len);
		if (r < 0)
			return r;
		root = cJSON_ParseWithLength(ans, len);
		ok = root && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "succeeded"));
		m = root ? cJSON_GetObjectItemCaseSensitive(root, "message") : NULL;
		snprintf(msg, sizeof(msg), "%s",
			 cJSON_IsString(m) ? m->valuestring : "unreadable answer");
		cJSON_Delete(root);
		if (ok)
			break;
	}
	if (try == ETCDLOAD_TXN_TRIES) {
		diag_add(ld->d, DIAG_ERROR, ld->conn->urls[ld->cur], NULL, NULL,
			 "transaction of %zu puts refused %u times, last: %s", ld->n_ops,
			 ETCDLOAD_TXN_TRIES, msg);
		return -EIO;
	}
	ld->written += (int)ld->n_ops;
	ld->n_ops = 0;
	ld->ops_len = 0;
	return 0;
}

static int queue_put(struct loader *ld, const char *key, const char *value)
{
	_cleanup_free_ char *k = base64_encode(key, strlen(key));
	_cleanup_free_ char *v = base64_encode(value, strlen(value));
	_cleanup_free_ char *op = NULL;
	size_t n;
	int r;

	if (!k || !v)
		return -ENOMEM;
	if (asprintf(&op, "%s{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}", "", k, v) < 0)
		return -ENOMEM;
	n = strlen(op);
	if (n > ETCDLOAD_MAX_TXN_BYTES) {
		diag_add(ld->d, DIAG_ERROR, ld->path, NULL, NULL,
			 "%s: value of %zu bytes is too large for etcd, skipped", key, strlen(value));
		return 0;
	}
	if (ld->n_ops >= ETCDLOAD_MAX_TXN_OPS || ld->ops_len + n + 1 > ETCDLOAD_MAX_TXN_BYTES) {
		r = flush_txn(ld);
		if (r < 0)
			return r;
	}
	if (GROW(ld->ops, ld->ops_cap, ld->ops_len + n + 2) < 0)
		return -ENOMEM;
	if (ld->n_ops)
		ld->ops[ld->ops_len++] = ',';
	memcpy(ld->ops + ld->ops_len, op, n);
	ld->ops_len += n;
	ld->n_ops++;
	return 0;
}

/* Whether the source's decoder accepts value (diags go to the user). */
static int check_value(struct loader *ld, const char *value, const char *kind, const char *ns,
		       const char *name, bool *ret_ok)
{
	struct decoded dec = { 0 };
	size_t errs = diag_count(ld->d, DIAG_ERROR);
	int r;

	r = decode_object(value, strlen(value), kind, ns, name, ld->path, &dec, ld->d);
	decoded_done(&dec);
	if (r == -ENOMEM)
		return r;
	*ret_ok = r >= 0 && diag_count(ld->d, DIAG_ERROR) == errs;
	return 0;
}

static int put_object(struct loader *ld, enum etcd_key_kind kk, const char *kind, const char *ns,
		      const char *name, const cJSON *obj)
{
	_cleanup_free_ char *value = cJSON_PrintUnformatted(obj);
	_cleanup_free_ char *key = NULL;
	bool ok;
	int r;

	if (!value)
		return -ENOMEM;
	r = check_value(ld, value, kind, ns, name, &ok);
	if (r < 0 || !ok)
		return r;
	key = etcd_key_format(ld->conn->prefix, kk, ns, name);
	if (!key) {
		diag_add(ld->d, DIAG_ERROR, ld->path, name, NULL,
			 "'%s/%s' cannot be an etcd key of the layout, skipped", ns ? ns : "", name);
		return 0;
	}
	return queue_put(ld, key, value);
}

/* obj's member key, of duplicates the last (as the decoder reads them). */
static const cJSON *member(const cJSON *obj, const char *key)
{
	const cJSON *j, *found = NULL;

	cJSON_ArrayForEach(j, obj)
		if (j->string && streq(j->string, key))
			found = j;
	return found;
}

/* A Kubernetes object: its key from kind and metadata. */
static int load_k8s(struct loader *ld, const struct decode_walk_item *it)
{
	const cJSON *meta = member(it->obj, "metadata");
	const char *where = it->where[0] ? it->where : NULL;
	const char *ns = "default", *name = NULL;
	enum etcd_key_kind kk;
	const cJSON *v;

	if (!it->known) {
		diag_add(ld->d, DIAG_NOTE, ld->path, NULL, where, "kind %s is not stored, skipped",
			 it->kind);
		return 0;
	}
	if (streq(it->known, "Service"))
		kk = ETCD_KEY_SERVICE;
	else if (streq(it->known, "EndpointSlice"))
		kk = ETCD_KEY_SLICE;
	else
		kk = ETCD_KEY_ENDPOINTS;
	v = member(meta, "namespace");
	if (cJSON_IsString(v) && *v->valuestring)
		ns = v->valuestring;
	v = member(meta, "name");
	if (cJSON_IsString(v) && *v->valuestring)
		name = v->valuestring;
	if (!name) {
		diag_add(ld->d, DIAG_ERROR, ld->path, NULL, where, "%s without metadata.name, skipped",
			 it->known);
		return 0;
	}
	return put_object(ld, kk, it->known, ns, name, it->obj);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(cJSON *, cJSON_Delete)

/* One entry of the original format: the spec key and the endpoints key. */
static int load_legacy(struct loader *ld, const cJSON *entry, const char *where)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL, *eps = NULL;
	const cJSON *name, *list;
	int r;

	name = cJSON_GetObjectItem(entry, "Name"); /* case-insensitive, as the original */
	if (!cJSON_IsString(name) || !*name->valuestring) {
		diag_add(ld->d, DIAG_ERROR, ld->path, NULL, where, "no Name, skipped");
		return 0;
	}
	spec = cJSON_Duplicate(entry, true);
	eps = cJSON_CreateObject();
	if (!spec || !eps)
		return -ENOMEM;
	list = cJSON_GetObjectItem(entry, "Endpoints");
	cJSON_DeleteItemFromObject(spec, "Endpoints");
	if (!cJSON_AddStringToObject(eps, "Name", name->valuestring))
		return -ENOMEM;
	if (list && !cJSON_AddItemToObject(eps, "Endpoints", cJSON_Duplicate(list, true)))
		return -ENOMEM;
	r = put_object(ld, ETCD_KEY_LEGACY_SPEC, "legacy-service", NULL, name->valuestring, spec);
	if (r >= 0 && list)
		r = put_object(ld, ETCD_KEY_LEGACY_ENDPOINTS, "legacy-endpoints", NULL,
			       name->valuestring, eps);
	return r;
}

static int read_all(const char *path, struct diag_list *d, char **ret, size_t *ret_len)
{
	FILE *f = streq(path, "-") ? stdin : fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int r = 0;

	if (!f) {
		r = -errno;
		diag_add(d, DIAG_ERROR, path, NULL, NULL, "%s", strerror(-r));
		return r;
	}
	for (;;) {
		size_t got;

		if (GROW(buf, cap, len + 65536 + 1) < 0) {
			r = -ENOMEM;
			break;
		}
		got = fread(buf + len, 1, 65536, f);
		len += got;
		if (len > DECODE_MAX_FILE_SIZE) {
			diag_add(d, DIAG_ERROR, path, NULL, NULL, "larger than %u bytes",
				 DECODE_MAX_FILE_SIZE);
			r = -EFBIG;
			break;
		}
		if (got < 65536) {
			if (ferror(f)) {
				r = -EIO;
				diag_add(d, DIAG_ERROR, path, NULL, NULL, "read error");
			}
			break;
		}
	}
	if (f != stdin)
		fclose(f);
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* decode_walk_fn: every object decode_buffer() would decode, in order. */
static int load_item(const struct decode_walk_item *it, void *userdata)
{
	struct loader *ld = userdata;

	if (it->legacy)
		return load_legacy(ld, it->obj, it->where);
	return load_k8s(ld, it);
}

/* What a loader owns: its curl handle and pending ops. */
static void loader_done(struct loader *ld)
{
	if (ld->easy)
		curl_easy_cleanup(ld->easy);
	free(ld->ops);
}

/* With etcd_load_file()'s connection and file read in. */
static int load_buffer(struct loader *ld, const char *buf, size_t len)
{
	int r;

	r = curlloop_global_init();
	if (r < 0)
		return r;
	ld->easy = curl_easy_init();
	if (!ld->easy)
		return -ENOMEM;
	r = decode_walk(buf, len, ld->path, load_item, ld, ld->d);
	if (r >= 0)
		r = flush_txn(ld);
	if (r >= 0)
		r = ld->written;
	return r;
}

int etcd_load_file(const struct etcd_options *o, const char *path, struct diag_list *d)
{
	_cleanup_(etcd_conn_done) struct etcd_conn conn = { 0 };
	_cleanup_(loader_done) struct loader ld = { .path = path, .d = d };
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = etcd_conn_init(&conn, o, d);
	if (r < 0)
		return r;
	ld.conn = &conn;
	r = read_all(path, d, &buf, &len);
	if (r < 0)
		return r;
	return load_buffer(&ld, buf, len);
}
