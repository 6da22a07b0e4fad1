/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The etcd source's pure half: key layout, response parsing, the store (full
 * read -> SET, watch events -> ADD/REMOVE with revision bookkeeping) against
 * the real merge engine and decoders.  Base64 and the stream framer it uses
 * are test-net.c's, the backoff test-reflector.c's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/merge.h"
#include "sources/etcd/etcd.h"
#include "sources/etcd/etcdcurl.h"
#include "sources/etcd/etcdstore.h"
#include "sources/etcd/etcdwire.h"
#include "sources/net/base64.h"
#include "sources/net/framer.h"
#include "util.h"

/* ---- key layout ---- */

struct key_case {
	const char *prefix;
	const char *key;
	int ret;
	enum etcd_key_kind kind;
	const char *ns;
	const char *name;
};

static const struct key_case key_cases[] = {
	{ "/registry", "/registry/services/specs/default/web", 0, ETCD_KEY_SERVICE, "default", "web" },
	{ "/registry", "/registry/services/endpointslices/ns1/web-x7k2p", 0, ETCD_KEY_SLICE, "ns1",
	  "web-x7k2p" },
	{ "/registry", "/registry/services/endpoints/ns1/web", 0, ETCD_KEY_ENDPOINTS, "ns1", "web" },
	{ "/registry", "/registry/services/specs/nodejs", 0, ETCD_KEY_LEGACY_SPEC, "", "nodejs" },
	{ "/registry", "/registry/services/endpoints/nodejs", 0, ETCD_KEY_LEGACY_ENDPOINTS, "",
	  "nodejs" },
	{ "/registry", "/registry/services/endpointslices/web", -EINVAL, 0, NULL, NULL },
	{ "/registry", "/registry/services/specs/a/b/c", -EINVAL, 0, NULL, NULL },
	{ "/registry", "/registry/services/specs//web", -EINVAL, 0, NULL, NULL },
	{ "/registry", "/registry/services/specs/default/", -EINVAL, 0, NULL, NULL },
	{ "/registry", "/registry/services/specs/", -EINVAL, 0, NULL, NULL },
	{ "/registry", "/registry/services/specs", -ENOENT, 0, NULL, NULL },
	{ "/registry", "/registry/services/specsx/a/b", -ENOENT, 0, NULL, NULL },
	{ "/registry", "/registry/services/other/a/b", -ENOENT, 0, NULL, NULL },
	{ "/registry", "/registry/pods/default/web", -ENOENT, 0, NULL, NULL },
	{ "/registry", "/registryx/services/specs/default/web", -ENOENT, 0, NULL, NULL },
	{ "/registry", "/other/services/specs/default/web", -ENOENT, 0, NULL, NULL },
	{ "/registry", "/registry", -ENOENT, 0, NULL, NULL },
	{ "/registry", "", -ENOENT, 0, NULL, NULL },
	{ "", "/services/specs/default/web", 0, ETCD_KEY_SERVICE, "default", "web" },
	{ "/my/cluster", "/my/cluster/services/endpoints/x", 0, ETCD_KEY_LEGACY_ENDPOINTS, "", "x" },
	{ "/my/cluster", "/registry/services/endpoints/x", -ENOENT, 0, NULL, NULL },
};

static void test_key_parse_table(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(key_cases); i++) {
		const struct key_case *c = &key_cases[i];
		struct etcd_key k;
		int r;

		r = etcd_key_parse(c->prefix, c->key, strlen(c->key), &k);
		if (r != c->ret)
			fail_msg("case %zu '%s': got %d, want %d", i, c->key, r, c->ret);
		if (r < 0)
			continue;
		assert_int_equal(k.kind, c->kind);
		assert_string_equal(k.ns, c->ns);
		assert_string_equal(k.name, c->name);
	}
}

static void test_key_parse_hostile(void **state)
{
	static const char with_nul[] = "/registry/services/specs/de\0fault/web";
	char seg[300], key[400];
	struct etcd_key k;

	assert_int_equal(etcd_key_parse("/registry", with_nul, sizeof(with_nul) - 1, &k), -EINVAL);
	/* The length is the key's, not strlen: a shorter len cuts the key. */
	assert_int_equal(etcd_key_parse("/registry", "/registry/services/specs/default/web", 25, &k),
			 -EINVAL);
	assert_int_equal(etcd_key_parse("/registry", "/registry/services/specs/default/web", 26, &k), 0);
	assert_int_equal(k.kind, ETCD_KEY_LEGACY_SPEC);
	assert_string_equal(k.name, "d");
	memset(seg, 'a', sizeof(seg));
	seg[ETCD_MAX_SEGMENT] = '\0';
	snprintf(key, sizeof(key), "/registry/services/specs/ns/%s", seg);
	assert_int_equal(etcd_key_parse("/registry", key, strlen(key), &k), 0);
	assert_int_equal(strlen(k.name), ETCD_MAX_SEGMENT);
	seg[ETCD_MAX_SEGMENT] = 'a';
	seg[ETCD_MAX_SEGMENT + 1] = '\0';
	snprintf(key, sizeof(key), "/registry/services/specs/ns/%s", seg);
	assert_int_equal(etcd_key_parse("/registry", key, strlen(key), &k), -EINVAL);
	snprintf(key, sizeof(key), "/registry/services/specs/%s", seg);
	assert_int_equal(etcd_key_parse("/registry", key, strlen(key), &k), -EINVAL);
}

static void test_key_format_roundtrip(void **state)
{
	static const struct {
		enum etcd_key_kind kind;
		const char *ns, *name, *want;
	} cases[] = {
		{ ETCD_KEY_SERVICE, "default", "web", "/registry/services/specs/default/web" },
		{ ETCD_KEY_SLICE, "kube-system", "dns-1", "/registry/services/endpointslices/kube-system/dns-1" },
		{ ETCD_KEY_ENDPOINTS, "a", "b", "/registry/services/endpoints/a/b" },
		{ ETCD_KEY_LEGACY_SPEC, NULL, "nodejs", "/registry/services/specs/nodejs" },
		{ ETCD_KEY_LEGACY_ENDPOINTS, NULL, "nodejs", "/registry/services/endpoints/nodejs" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *s = etcd_key_format("/registry", cases[i].kind, cases[i].ns, cases[i].name);
		struct etcd_key k;

		assert_non_null(s);
		assert_string_equal(s, cases[i].want);
		assert_int_equal(etcd_key_parse("/registry", s, strlen(s), &k), 0);
		assert_int_equal(k.kind, cases[i].kind);
		assert_string_equal(k.name, cases[i].name);
		assert_string_equal(k.ns, cases[i].ns ? cases[i].ns : "");
		free(s);
	}
	assert_null(etcd_key_format("/registry", ETCD_KEY_SERVICE, NULL, "web"));
	assert_null(etcd_key_format("/registry", ETCD_KEY_SERVICE, "a/b", "web"));
	assert_null(etcd_key_format("/registry", ETCD_KEY_LEGACY_SPEC, NULL, "a/b"));
	assert_null(etcd_key_format("/registry", ETCD_KEY_LEGACY_SPEC, NULL, ""));
}

static void test_prefix_and_range(void **state)
{
	static const struct {
		const char *in, *out;
		int ret;
	} cases[] = {
		{ NULL, "/registry", 0 },     { "", "/registry", 0 },   { "/registry/", "/registry", 0 },
		{ "/a/b//", "/a/b", 0 },      { "/", "", 0 },           { "registry", NULL, -EINVAL },
		{ "/a\nb", NULL, -EINVAL },
	};
	char *p, *a, *b;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_int_equal(etcd_prefix_normalize(cases[i].in, &p), cases[i].ret);
		if (cases[i].ret == 0) {
			assert_string_equal(p, cases[i].out);
			free(p);
		}
	}
	assert_int_equal(etcd_layout_range("/registry", &a, &b), 0);
	assert_string_equal(a, "/registry/services/");
	assert_string_equal(b, "/registry/services0");
	/* Every layout key sorts inside [a, b), a sibling outside. */
	assert_true(strcmp("/registry/services/specs/x/y", a) >= 0);
	assert_true(strcmp("/registry/services/specs/x/y", b) < 0);
	assert_true(strcmp("/registry/servicesX", b) > 0);
	free(a);
	free(b);
}

/* ---- responses (texts as etcd 3.4.23's gateway prints them) ---- */

#define HDR "\"header\":{\"cluster_id\":\"15875391935852295136\",\"member_id\":\"7383792418829112008\",\"revision\":\"%s\",\"raft_term\":\"2\"}"

static void test_range_parse(void **state)
{
	static const char ok[] =
		"{\"header\":{\"cluster_id\":\"1\",\"member_id\":\"2\",\"revision\":\"7\",\"raft_term\":\"2\"},"
		"\"kvs\":[{\"key\":\"L3JlZ2lzdHJ5L3NlcnZpY2VzL3NwZWNzL2RlZmF1bHQvd2Vi\",\"create_revision\":\"2\","
		"\"mod_revision\":\"2\",\"version\":\"1\",\"value\":\"eyJraW5kIjoiU2VydmljZSJ9\"},"
		"{\"key\":\"L3JlZ2lzdHJ5L3NlcnZpY2VzL3NwZWNzL25zL3Mx\",\"create_revision\":\"5\","
		"\"mod_revision\":\"5\",\"version\":\"1\"}],\"more\":true,\"count\":\"4\"}";
	static const char empty[] = "{\"header\":{\"revision\":\"2\"}}";
	static const char compacted[] =
		"{\"error\":\"etcdserver: mvcc: required revision has been compacted\",\"message\":"
		"\"etcdserver: mvcc: required revision has been compacted\",\"code\":11}";
	static const char *const bad[] = {
		"", "[]", "{", "{\"kvs\":[]}", "{\"header\":{\"revision\":\"x\"}}",
		"{\"header\":{\"revision\":\"-3\"}}",
		"{\"header\":{\"revision\":\"3\"},\"kvs\":[{\"key\":\"!!\"}]}",
		"{\"header\":{\"revision\":\"3\"},\"kvs\":[{\"value\":\"Zg==\"}]}",
		"{\"header\":{\"revision\":\"3\"},\"kvs\":{}}",
	};
	struct etcd_range_resp r;

	assert_int_equal(etcd_range_resp_parse(ok, strlen(ok), &r), 0);
	assert_int_equal(r.revision, 7);
	assert_true(r.more);
	assert_int_equal(r.n_kvs, 2);
	assert_string_equal(r.kvs[0].key, "/registry/services/specs/default/web");
	assert_string_equal(r.kvs[0].value, "{\"kind\":\"Service\"}");
	assert_int_equal(r.kvs[0].mod_revision, 2);
	assert_false(r.kvs[0].is_delete);
	assert_string_equal(r.kvs[1].key, "/registry/services/specs/ns/s1");
	assert_string_equal(r.kvs[1].value, ""); /* absent value: empty */
	assert_int_equal(r.kvs[1].value_len, 0);
	assert_null(r.error);
	etcd_range_resp_done(&r);

	assert_int_equal(etcd_range_resp_parse(empty, strlen(empty), &r), 0);
	assert_int_equal(r.n_kvs, 0);
	assert_false(r.more);
	etcd_range_resp_done(&r);

	assert_int_equal(etcd_range_resp_parse(compacted, strlen(compacted), &r), 0);
	assert_int_equal(r.error_code, 11);
	assert_true(etcd_error_is_compacted(r.error));
	etcd_range_resp_done(&r);

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (etcd_range_resp_parse(bad[i], strlen(bad[i]), &r) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
}

static void test_watch_parse(void **state)
{
	char created[300], put[600], del[400], cancel[300];
	static const char stream_err[] =
		"{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"transport is closing\","
		"\"http_status\":\"Service Unavailable\"}}";
	static const char *const bad[] = {
		"not json", "{}", "{\"result\":[]}",
		"{\"result\":{\"events\":[{\"type\":\"EXPIRE\",\"kv\":{\"key\":\"Zg==\"}}]}}",
		"{\"result\":{\"events\":[{\"kv\":{\"key\":\"Zg=\"}}]}}",
		"{\"result\":{\"compact_revision\":\"abc\"}}",
	};
	struct etcd_watch_resp w;

	snprintf(created, sizeof(created), "{\"result\":{" HDR ",\"created\":true}}", "2");
	snprintf(put, sizeof(put),
		 "{\"result\":{" HDR ",\"events\":[{\"kv\":{\"key\":\"L3JlZ2lzdHJ5L3gx\",\"create_revision\":\"8\","
		 "\"mod_revision\":\"8\",\"version\":\"1\",\"value\":\"MQ==\"}},{\"kv\":{\"key\":\"L3JlZ2lzdHJ5L3gy\","
		 "\"create_revision\":\"8\",\"mod_revision\":\"8\",\"version\":\"1\",\"value\":\"Mg==\"}}]}}",
		 "8");
	snprintf(del, sizeof(del),
		 "{\"result\":{" HDR ",\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":"
		 "\"L3JlZ2lzdHJ5L3NlcnZpY2VzL3NwZWNzL2RlZmF1bHQvYQ==\",\"mod_revision\":\"4\"}}]}}",
		 "4");
	snprintf(cancel, sizeof(cancel),
		 "{\"result\":{\"header\":{\"cluster_id\":\"1\",\"member_id\":\"2\",\"raft_term\":\"2\"},"
		 "\"canceled\":true,\"compact_revision\":\"4\"}}");

	assert_int_equal(etcd_watch_resp_parse(created, strlen(created), &w), 0);
	assert_true(w.created);
	assert_false(w.canceled);
	assert_int_equal(w.revision, 2);
	assert_int_equal(w.n_events, 0);
	etcd_watch_resp_done(&w);

	assert_int_equal(etcd_watch_resp_parse(put, strlen(put), &w), 0);
	assert_int_equal(w.n_events, 2);
	assert_false(w.events[0].is_delete);
	assert_string_equal(w.events[0].key, "/registry/x1");
	assert_string_equal(w.events[1].value, "2");
	assert_int_equal(w.events[1].mod_revision, 8);
	etcd_watch_resp_done(&w);

	assert_int_equal(etcd_watch_resp_parse(del, strlen(del), &w), 0);
	assert_int_equal(w.n_events, 1);
	assert_true(w.events[0].is_delete);
	assert_string_equal(w.events[0].key, "/registry/services/specs/default/a");
	assert_int_equal(w.events[0].value_len, 0);
	etcd_watch_resp_done(&w);

	assert_int_equal(etcd_watch_resp_parse(cancel, strlen(cancel), &w), 0);
	assert_true(w.canceled);
	assert_int_equal(w.compact_revision, 4);
	assert_int_equal(w.revision, 0);
	etcd_watch_resp_done(&w);

	assert_int_equal(etcd_watch_resp_parse(stream_err, strlen(stream_err), &w), 0);
	assert_non_null(w.error);
	assert_string_equal(w.error, "transport is closing");
	etcd_watch_resp_done(&w);

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (etcd_watch_resp_parse(bad[i], strlen(bad[i]), &w) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
}

/* ---- options ---- */

static void test_endpoints_and_options(void **state)
{
	static const char *const bad[] = { "", "127.0.0.1:2379", "http://", "ftp://a",
					   "http://a,,http://b", "http://a b", "http:///x" };
	struct etcd_options o = { 0 };
	struct diag_list d;
	char **u;
	size_t n;

	assert_int_equal(etcd_endpoints_parse(" http://198.18.250.1:2379/, https://m2:2379 ", &u, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(u[0], "http://198.18.250.1:2379");
	assert_string_equal(u[1], "https://m2:2379");
	etcd_endpoints_free(u, n);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (etcd_endpoints_parse(bad[i], &u, &n) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);

	diag_list_init(&d);
	o.endpoints = "http://a:2379";
	assert_int_equal(etcd_options_check(&o, &d), 0);
	assert_int_equal(d.n, 0);
	o.cert = "/nonexistent/c.pem";
	o.prefix = "registry";
	assert_int_equal(etcd_options_check(&o, &d), -EINVAL);
	assert_int_equal(d.n, 3);
	assert_string_equal(d.items[0].field, "--etcd-prefix");
	assert_string_equal(d.items[1].field, "--etcd-key");
	assert_string_equal(d.items[2].source, "--etcd-cert");
	o.endpoints = "localhost:2379";
	o.prefix = NULL;
	o.cert = NULL;
	assert_int_equal(etcd_options_check(&o, &d), -EINVAL);
	assert_string_equal(d.items[3].field, "--etcd-endpoints");
	diag_list_done(&d);
}

/* ---- the TLS files: read by svcnat, safely, and again when they change ---- */

struct tls_fx {
	char dir[64];
	char ca[96], cert[96], key[96];
};

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void tls_fx_init(struct tls_fx *x)
{
	snprintf(x->dir, sizeof(x->dir), "/tmp/test-etcd-tls.XXXXXX");
	assert_non_null(mkdtemp(x->dir));
	snprintf(x->ca, sizeof(x->ca), "%s/ca.pem", x->dir);
	snprintf(x->cert, sizeof(x->cert), "%s/c.pem", x->dir);
	snprintf(x->key, sizeof(x->key), "%s/k.pem", x->dir);
	put(x->ca, "CA1\n");
	put(x->cert, "CERT1\n");
	put(x->key, "KEY1\n");
}

static void tls_fx_done(struct tls_fx *x)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", x->dir);
	assert_int_equal(system(cmd), 0);
}

/* One wrong file as one option: refused at once (no open of a FIFO, no
 * read of a huge file) with one line naming the option and the file. */
static void expect_refused(const struct tls_fx *x, const char *which, const char *path,
			   const char *why)
{
	struct etcd_options o = { .endpoints = "https://198.18.250.1:2379",
				  .mode = FILE_MODE_REFUSE };
	struct etcd_conn c;
	struct diag_list d;

	/* The other files good (cert and key go together). */
	o.cacert = streq(which, "--etcd-cacert") ? path : x->ca;
	o.cert = streq(which, "--etcd-cert") ? path : x->cert;
	o.key = streq(which, "--etcd-key") ? path : x->key;
	diag_list_init(&d);
	assert_int_equal(etcd_conn_init(&c, &o, &d), -EINVAL);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.items[0].level, DIAG_ERROR);
	assert_string_equal(d.items[0].source, which);
	if (!strstr(d.items[0].msg, path) || !strstr(d.items[0].msg, why))
		fail_msg("%s %s: '%s' lacks '%s'", which, path, d.items[0].msg, why);
	diag_list_done(&d);
}

static void test_tls_files_refused(void **state)
{
	static const char *const opts[] = { "--etcd-cacert", "--etcd-cert", "--etcd-key" };
	struct tls_fx x;
	char fifo[96], dir[96], big[96], ww[96], empty[96];
	FILE *f;

	tls_fx_init(&x);
	snprintf(fifo, sizeof(fifo), "%s/fifo", x.dir);
	snprintf(dir, sizeof(dir), "%s/dir", x.dir);
	snprintf(big, sizeof(big), "%s/big", x.dir);
	snprintf(ww, sizeof(ww), "%s/ww", x.dir);
	snprintf(empty, sizeof(empty), "%s/empty", x.dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(mkdir(dir, 0700), 0);
	f = fopen(big, "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), PEMFILE_MAX_SIZE + 1), 0);
	fclose(f);
	put(ww, "x\n");
	assert_int_equal(chmod(ww, 0666), 0);
	put(empty, "");
	for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
		expect_refused(&x, opts[i], fifo, "not a regular file (a FIFO)");
		expect_refused(&x, opts[i], dir, "not a regular file (a directory)");
		expect_refused(&x, opts[i], "/dev/zero", "a character device");
		expect_refused(&x, opts[i], big, "larger than the limit");
		expect_refused(&x, opts[i], ww, "writable by users other than its owner");
		expect_refused(&x, opts[i], empty, "empty");
		expect_refused(&x, opts[i], "/nonexistent/x.pem", "No such file");
	}
	tls_fx_done(&x);
}

static void test_tls_files_rotate(void **state)
{
	struct tls_fx x;
	struct etcd_options o = { .endpoints = "https://198.18.250.1:2379",
				  .mode = FILE_MODE_REFUSE };
	struct etcd_conn c;
	struct diag_list d;
	char next[128];

	tls_fx_init(&x);
	o.cacert = x.ca;
	o.cert = x.cert;
	o.key = x.key;
	diag_list_init(&d);
	assert_int_equal(etcd_conn_init(&c, &o, &d), 0);
	assert_int_equal(d.n, 0);
	assert_string_equal(c.ca.data, "CA1\n");
	assert_string_equal(c.cert.data, "CERT1\n");
	assert_string_equal(c.key.data, "KEY1\n");
	assert_int_equal(etcd_conn_refresh(&c, &d), 0);

	/* A rotated pair (renamed into place, as kubelet and cert-manager do). */
	snprintf(next, sizeof(next), "%s/next", x.dir);
	put(next, "CERT2\n");
	assert_int_equal(rename(next, x.cert), 0);
	put(next, "KEY2-LONGER\n");
	assert_int_equal(rename(next, x.key), 0);
	assert_int_equal(etcd_conn_refresh(&c, &d), 1);
	assert_int_equal(d.n, 0);
	assert_string_equal(c.cert.data, "CERT2\n");
	assert_string_equal(c.key.data, "KEY2-LONGER\n");
	assert_string_equal(c.ca.data, "CA1\n");
	assert_int_equal(etcd_conn_refresh(&c, &d), 0);

	/* Swapped for a FIFO: no open, the bytes read before stay, one line. */
	assert_int_equal(unlink(x.key), 0);
	assert_int_equal(mkfifo(x.key, 0600), 0);
	assert_int_equal(etcd_conn_refresh(&c, &d), -ENODEV);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.items[0].source, "--etcd-key");
	assert_non_null(strstr(d.items[0].msg, "a FIFO"));
	assert_string_equal(c.key.data, "KEY2-LONGER\n");
	/* and made writable by others: refused, kept */
	assert_int_equal(unlink(x.key), 0);
	put(x.key, "KEY3\n");
	assert_int_equal(chmod(x.key, 0666), 0);
	assert_int_equal(etcd_conn_refresh(&c, &d), -EPERM);
	assert_string_equal(c.key.data, "KEY2-LONGER\n");
	assert_int_equal(chmod(x.key, 0600), 0);
	assert_int_equal(etcd_conn_refresh(&c, &d), 1);
	assert_string_equal(c.key.data, "KEY3\n");
	diag_list_done(&d);
	etcd_conn_done(&c);
	tls_fx_done(&x);
}

/* ---- the store against the real merge engine and decoders ---- */

#define SVC(ns, name, ip, port)                                                                 \
	"{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"" name               \
	"\",\"namespace\":\"" ns "\"},\"spec\":{\"type\":\"ClusterIP\",\"clusterIP\":\"" ip        \
	"\",\"ports\":[{\"port\":" #port ",\"protocol\":\"TCP\",\"targetPort\":8080}]}}"
#define SLICE(ns, name, svc, ip)                                                                \
	"{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"" \
	name "\",\"namespace\":\"" ns "\",\"labels\":{\"kubernetes.io/service-name\":\"" svc        \
	"\"}},\"addressType\":\"IPv4\",\"endpoints\":[{\"addresses\":[\"" ip                        \
	"\"],\"conditions\":{\"ready\":true}}],\"ports\":[{\"port\":8080,\"protocol\":\"TCP\"}]}"

struct fx {
	struct merge *m;
	struct etcd_store *s;
	int sid;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->m = merge_new();
	assert_non_null(f->m);
	f->sid = merge_source_register(f->m, "etcd");
	assert_true(f->sid >= 0);
	assert_int_equal(etcd_store_new("/registry", f->m, f->sid, &f->s), 0);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	etcd_store_free(f->s);
	merge_free(f->m);
	free(f);
	return 0;
}

static struct etcd_kv kv(const char *key, const char *value, int64_t rev)
{
	return (struct etcd_kv){ .key = (char *)key, .key_len = strlen(key),
				 .value = (char *)(value ? value : ""),
				 .value_len = value ? strlen(value) : 0,
				 .mod_revision = rev, .is_delete = !value };
}

/* The merged state, one "S ns/name port" / "E ns/name addr" word per item. */
static void dump(struct merge *m, char *buf, size_t len)
{
	struct merge_snapshot *snap = merge_snapshot_get(m);
	size_t o = 0;
	char ip[64];

	assert_non_null(snap);
	buf[0] = '\0';
	for (size_t i = 0; i < snap->n_services; i++) {
		const struct service *s = snap->services[i];

		o += (size_t)snprintf(buf + o, len - o, "S %s/%s %u;", s->ns, s->name,
				      s->n_ports ? s->ports[0].port : 0);
	}
	for (size_t i = 0; i < snap->n_slices; i++) {
		const struct epslice *e = snap->slices[i];

		o += (size_t)snprintf(buf + o, len - o, "E %s/%s %s;", e->ns, e->name,
				      e->n_endpoints ? ipaddr_fmt(&e->endpoints[0].addr, ip, sizeof(ip)) : "-");
	}
	assert_true(o < len);
	merge_snapshot_unref(snap);
}

static bool diags_mention(struct etcd_store *s, const char *needle)
{
	struct diag_list *d = etcd_store_diags(s);

	for (size_t i = 0; i < d->n; i++) {
		char *line = diag_format(&d->items[i]);
		bool hit = line && strstr(line, needle);

		free(line);
		if (hit)
			return true;
	}
	return false;
}

static void read_all(struct fx *f, const struct etcd_kv *kvs, size_t n, int64_t rev)
{
	etcd_store_read_begin(f->s);
	/* In two pages, as the source reads them. */
	assert_int_equal(etcd_store_read_add(f->s, kvs, n / 2), 0);
	assert_int_equal(etcd_store_read_add(f->s, kvs + n / 2, n - n / 2), 0);
	assert_int_equal(etcd_store_read_commit(f->s, rev), 0);
}

static void test_store_full_read(void **state)
{
	struct fx *f = *state;
	struct etcd_kv kvs[] = {
		kv("/registry/services/specs/default/web", SVC("default", "web", "198.19.0.10", 80), 3),
		kv("/registry/services/endpointslices/default/web-1",
		   SLICE("default", "web-1", "web", "198.18.65.1"), 4),
		kv("/registry/services/specs/nodejs", "{\"Name\":\"nodejs\",\"Port\":10000}", 5),
		kv("/registry/services/endpoints/nodejs",
		   "{\"Name\":\"nodejs\",\"Endpoints\":[\"198.18.65.2:8000\"]}", 6),
		kv("/registry/services/specs/legacyk8s", SVC("other", "legacyk8s", "198.19.0.11", 81), 7),
		kv("/registry/services/specs/default/bad",
		   SVC("default", "bad", "198.19.0.12", 70000), 8),
		kv("/registry/services/specs/default/notjson", "{oops", 9),
		kv("/registry/pods/default/p", "whatever", 10),
		kv("/registry/services/specs/a/b/c", "{}", 11),
	};
	struct etcd_store_stats st;
	char buf[1024];

	/* An empty store is a valid first read. */
	etcd_store_read_begin(f->s);
	assert_int_equal(etcd_store_read_commit(f->s, 3), 0);
	assert_int_equal(etcd_store_revision(f->s), 3);
	dump(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "");

	read_all(f, kvs, ARRAY_SIZE(kvs), 42);
	dump(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "S default/nodejs 10000;S default/web 80;S other/legacyk8s 81;"
				 "E default/nodejs 198.18.65.2;E default/web-1 198.18.65.1;");
	etcd_store_stats(f->s, &st);
	assert_int_equal(st.revision, 42);
	assert_int_equal(st.n_keys, 5);
	assert_int_equal(st.rejected, 2);
	assert_int_equal(st.full_reads, 2);
	assert_true(diags_mention(f->s, "etcd:/registry/services/specs/default/bad"));
	assert_true(diags_mention(f->s, "70000"));
	assert_true(diags_mention(f->s, "etcd:/registry/services/specs/default/notjson"));
	assert_true(diags_mention(f->s, "etcd:/registry/services/specs/a/b/c"));
	assert_false(diags_mention(f->s, "pods"));

	/* A re-read (after compaction) replaces everything: SET semantics. */
	read_all(f, kvs + 1, 1, 50);
	dump(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "E default/web-1 198.18.65.1;");
	assert_int_equal(etcd_store_revision(f->s), 50);

	/* An aborted read changes nothing. */
	etcd_store_read_begin(f->s);
	assert_int_equal(etcd_store_read_add(f->s, kvs, 1), 0);
	etcd_store_read_abort(f->s);
	dump(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "E default/web-1 198.18.65.1;");
	assert_int_equal(etcd_store_revision(f->s), 50);
}

static void test_store_watch_events(void **state)
{
	struct fx *f = *state;
	struct etcd_kv init[] = {
		kv("/registry/services/specs/default/web", SVC("default", "web", "198.19.0.10", 80), 3),
	};
	struct etcd_kv b1[] = {
		/* one transaction: two events at revision 11 */
		kv("/registry/services/specs/default/api", SVC("default", "api", "198.19.0.20", 443), 11),
		kv("/registry/services/endpointslices/default/api-1",
		   SLICE("default", "api-1", "api", "198.18.66.1"), 11),
	};
	struct etcd_kv b2[] = {
		kv("/registry/services/specs/default/web", SVC("default", "web", "198.19.0.10", 8080), 12),
		kv("/registry/services/endpointslices/default/api-1", NULL, 13),
	};
	struct etcd_kv replay[] = {
		/* already applied: must not bring api-1 back or undo web's change */
		kv("/registry/services/endpointslices/default/api-1",
		   SLICE("default", "api-1", "api", "198.18.66.1"), 11),
		kv("/registry/services/specs/default/web", SVC("default", "web", "198.19.0.10", 80), 3),
		kv("/registry/services/specs/default/api", NULL, 14),
	};
	struct etcd_kv bad[] = {
		kv("/registry/services/specs/default/web", "{\"kind\":\"Service\",\"spec\":[]}", 20),
		kv("/registry/services/specs/default/ghost", NULL, 21), /* never existed */
	};
	struct etcd_store_stats st;
	char buf[1024];

	read_all(f, init, ARRAY_SIZE(init), 10);
	assert_int_equal(merge_flush(f->m), 1);

	assert_int_equal(etcd_store_apply_events(f->s, b1, ARRAY_SIZE(b1)), 0);
	dump(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "S default/api 443;S default/web 80;E default/api-1 198.18.66.1;");
	assert_int_equal(etcd_store_revision(f->s), 11);

	assert_int_equal(etcd_store_apply_events(f->s, b2, ARRAY_SIZE(b2)), 0);
	dump(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "S default/api 443;S default/web 8080;");
	assert_int_equal(etcd_store_revision(f->s), 13);

	assert_int_equal(etcd_store_apply_events(f->s, replay, ARRAY_SIZE(replay)), 0);
	dump(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "S default/web 8080;");
	etcd_store_stats(f->s, &st);
	assert_int_equal(st.duplicates, 2);
	assert_int_equal(st.events, 5);
	assert_int_equal(st.revision, 14);

	/* A value that no longer decodes removes the key's item (diag says so). */
	assert_int_equal(etcd_store_apply_events(f->s, bad, ARRAY_SIZE(bad)), 0);
	dump(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "");
	assert_true(diags_mention(f->s, "etcd:/registry/services/specs/default/web"));
	assert_int_equal(etcd_store_revision(f->s), 21);

	/* Progress notifications move the revision forward, never back. */
	etcd_store_advance(f->s, 30);
	assert_int_equal(etcd_store_revision(f->s), 30);
	etcd_store_advance(f->s, 25);
	assert_int_equal(etcd_store_revision(f->s), 30);
}

static void test_store_same_item_two_keys(void **state)
{
	struct fx *f = *state;
	/* The legacy id "web" and the namespaced key both define default/web. */
	struct etcd_kv init[] = {
		kv("/registry/services/specs/default/web", SVC("default", "web", "198.19.0.10", 80), 5),
		kv("/registry/services/specs/web", "{\"Name\":\"web\",\"Port\":9000}", 4),
	};
	struct etcd_kv ev1[] = {
		kv("/registry/services/specs/web", "{\"Name\":\"web\",\"Port\":9001}", 6),
	};
	struct etcd_kv ev2[] = {
		kv("/registry/services/specs/web", NULL, 7),
	};
	struct etcd_kv ev3[] = {
		kv("/registry/services/specs/web", "{\"Name\":\"web\",\"Port\":9002}", 8),
		kv("/registry/services/specs/default/web", NULL, 9),
	};
	char buf[1024];

	read_all(f, init, ARRAY_SIZE(init), 5);
	dump(f->m, buf, sizeof(buf)); /* the later write (rev 5) wins */
	assert_string_equal(buf, "S default/web 80;");
	assert_true(diags_mention(f->s, "written last wins"));

	assert_int_equal(etcd_store_apply_events(f->s, ev1, 1), 0);
	dump(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "S default/web 9001;");
	assert_int_equal(etcd_store_apply_events(f->s, ev2, 1), 0);
	dump(f->m, buf, sizeof(buf)); /* the other key's item comes back */
	assert_string_equal(buf, "S default/web 80;");
	assert_int_equal(etcd_store_apply_events(f->s, ev3, 2), 0);
	dump(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "S default/web 9002;");

	/* The same store read fresh agrees with the watch's outcome. */
	{
		struct etcd_kv now[] = {
			kv("/registry/services/specs/web", "{\"Name\":\"web\",\"Port\":9002}", 8),
		};

		read_all(f, now, 1, 9);
		dump(f->m, buf, sizeof(buf));
		assert_string_equal(buf, "S default/web 9002;");
	}
}

/* A captured watch stream, through framer + parser + store, split anywhere. */
struct pipe_ctx {
	struct etcd_store *s;
	int created, canceled;
};

static int pipe_line(const char *line, size_t len, void *userdata)
{
	struct pipe_ctx *p = userdata;
	struct etcd_watch_resp w;

	assert_int_equal(etcd_watch_resp_parse(line, len, &w), 0);
	p->created += w.created;
	p->canceled += w.canceled;
	assert_int_equal(etcd_store_apply_events(p->s, w.events, w.n_events), 0);
	etcd_watch_resp_done(&w);
	return 0;
}

static char *b64(const char *s)
{
	char *e = base64_encode(s, strlen(s));

	assert_non_null(e);
	return e;
}

static void test_stream_split_anywhere(void **state)
{
	const char *k1 = "/registry/services/specs/default/web";
	const char *k2 = "/registry/services/endpointslices/default/web-1";
	char *ek1 = b64(k1), *ek2 = b64(k2), *v1 = b64(SVC("default", "web", "198.19.0.10", 80));
	char *v2 = b64(SLICE("default", "web-1", "web", "198.18.65.1"));
	char *v3 = b64(SLICE("default", "web-1", "web", "198.18.65.9"));
	char *stream = NULL, want[512] = "", buf[512];
	size_t step_max;

	assert_true(asprintf(&stream,
			     "{\"result\":{\"header\":{\"revision\":\"1\"},\"created\":true}}\n"
			     "{\"result\":{\"header\":{\"revision\":\"2\"},\"events\":[{\"kv\":{\"key\":\"%s\",\"mod_revision\":\"2\",\"value\":\"%s\"}},"
			     "{\"kv\":{\"key\":\"%s\",\"mod_revision\":\"2\",\"value\":\"%s\"}}]}}\n"
			     "{\"result\":{\"header\":{\"revision\":\"3\"},\"events\":[{\"kv\":{\"key\":\"%s\",\"mod_revision\":\"3\",\"value\":\"%s\"}}]}}\n"
			     "{\"result\":{\"header\":{\"revision\":\"4\"},\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":\"%s\",\"mod_revision\":\"4\"}}]}}\n",
			     ek1, v1, ek2, v2, ek2, v3, ek1) > 0);
	step_max = strlen(stream);
	/* Chunk sizes 1..64 and the whole stream; the outcome never changes. */
	for (size_t step = 1; step <= step_max; step = step < 64 ? step + 1 : step_max) {
		struct merge *m = merge_new();
		struct framer fr;
		struct pipe_ctx p = { 0 };
		int sid = merge_source_register(m, "etcd");

		assert_int_equal(etcd_store_new("/registry", m, sid, &p.s), 0);
		framer_init(&fr, 0);
		for (size_t o = 0; o < step_max; o += step)
			assert_int_equal(framer_feed(&fr, stream + o,
							  step < step_max - o ? step : step_max - o,
							  pipe_line, &p),
					 0);
		assert_int_equal(p.created, 1);
		assert_int_equal(etcd_store_revision(p.s), 4);
		dump(m, buf, sizeof(buf));
		if (!want[0])
			snprintf(want, sizeof(want), "%s", buf);
		assert_string_equal(buf, want);
		framer_done(&fr);
		etcd_store_free(p.s);
		merge_free(m);
		if (step == step_max)
			break;
	}
	assert_string_equal(want, "E default/web-1 198.18.65.9;");
	free(stream);
	free(ek1);
	free(ek2);
	free(v1);
	free(v2);
	free(v3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_parse_table),
		cmocka_unit_test(test_key_parse_hostile),
		cmocka_unit_test(test_key_format_roundtrip),
		cmocka_unit_test(test_prefix_and_range),
		cmocka_unit_test(test_range_parse),
		cmocka_unit_test(test_watch_parse),
		cmocka_unit_test(test_endpoints_and_options),
		cmocka_unit_test(test_tls_files_refused),
		cmocka_unit_test(test_tls_files_rotate),
		cmocka_unit_test_setup_teardown(test_store_full_read, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_store_watch_events, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_store_same_item_two_keys, fx_setup, fx_teardown),
		cmocka_unit_test(test_stream_split_anywhere),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
