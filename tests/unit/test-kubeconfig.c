/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kubeconfig reader: every field, the -data variants, paths relative to
 * the kubeconfig's directory, tokenFile and its rotation, in-cluster, and
 * one located error per wrong file.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sources/kube/kubeconfig.h"
#include "util.h"

static char dir[64];

static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test-kubeconfig.XXXXXX");
	assert_non_null(mkdtemp(dir));
	put("ca.crt", "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n");
	put("client.crt", "cert\n");
	put("client.key", "key\n");
	put("token", "  tok-from-file\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Load kubeconfig text written to kc.yaml; returns r, the diag line in *msg. */
static int load(const char *text, const char *master, struct kube_config *c, char *msg, size_t msglen)
{
	char path[256];
	struct diag_list d;
	int r;

	put("kc.yaml", text);
	snprintf(path, sizeof(path), "%s/kc.yaml", dir);
	diag_list_init(&d);
	memset(c, 0, sizeof(*c));
	r = kube_config_load(path, master, c, &d);
	msg[0] = '\0';
	if (d.n) {
		char *line = diag_format(&d.items[0]);

		assert_non_null(line);
		/* Drop the temporary directory from the line. */
		snprintf(msg, msglen, "%s", strstr(line, "kc.yaml") ? strstr(line, "kc.yaml") : line);
		free(line);
	}
	if (r >= 0)
		assert_int_equal(d.n, 0);
	else
		assert_int_equal(d.n, 1);
	diag_list_done(&d);
	return r;
}

#define HEAD               \
	"apiVersion: v1\n" \
	"kind: Config\n"

static void test_files_relative(void **state)
{
	struct kube_config c;
	char msg[512], want[256];

	assert_int_equal(load(HEAD "current-context: b\n"
				   "contexts:\n"
				   "- name: a\n  context: {cluster: other, user: other}\n"
				   "- name: b\n  context:\n    cluster: c1\n    user: u1\n    namespace: x\n"
				   "clusters:\n"
				   "- name: other\n  cluster: {server: 'https://wrong:1'}\n"
				   "- name: c1\n  cluster:\n    server: https://198.18.0.1:6443/\n"
				   "    certificate-authority: ca.crt\n"
				   "    extensions: []\n"
				   "users:\n"
				   "- name: u1\n  user:\n    client-certificate: client.crt\n"
				   "    client-key: client.key\n",
			      NULL, &c, msg, sizeof(msg)),
			 0);
	assert_string_equal(c.server, "https://198.18.0.1:6443");
	assert_string_equal(c.context, "b");
	snprintf(want, sizeof(want), "%s/ca.crt", dir);
	assert_string_equal(c.ca.file, want);
	assert_null(c.ca.data);
	snprintf(want, sizeof(want), "%s/client.crt", dir);
	assert_string_equal(c.cert.file, want);
	snprintf(want, sizeof(want), "%s/client.key", dir);
	assert_string_equal(c.key.file, want);
	assert_null(c.token);
	assert_null(c.token_file);
	assert_false(c.insecure);
	kube_config_done(&c);
}

static void test_data_variants(void **state)
{
	struct kube_config c;
	char msg[512];

	/* "CA-PEM" "CERT" "KEY" in base64; JSON is YAML too. */
	assert_int_equal(load("{\"current-context\": \"x\", \"contexts\": [{\"name\": \"x\", "
			      "\"context\": {\"cluster\": \"c\", \"user\": \"u\"}}], "
			      "\"clusters\": [{\"name\": \"c\", \"cluster\": {\"server\": "
			      "\"https://k:443\", \"certificate-authority-data\": \"Q0EtUEVN\"}}], "
			      "\"users\": [{\"name\": \"u\", \"user\": {\"client-certificate-data\": "
			      "\"Q0VSVA==\", \"client-key-data\": \"S0VZ\", \"token\": \"abc\"}}]}\n",
			      NULL, &c, msg, sizeof(msg)),
			 0);
	assert_string_equal(c.server, "https://k:443");
	assert_null(c.ca.file);
	assert_int_equal(c.ca.len, 6);
	assert_memory_equal(c.ca.data, "CA-PEM", 6);
	assert_int_equal(c.cert.len, 4);
	assert_memory_equal(c.cert.data, "CERT", 4);
	assert_int_equal(c.key.len, 3);
	assert_memory_equal(c.key.data, "KEY", 3);
	assert_string_equal(c.token, "abc");
	kube_config_done(&c);
}

static void test_token_file_and_master(void **state)
{
	struct kube_config c;
	struct diag_list d;
	char msg[512], path[256];
	struct timespec ts[2];

	assert_int_equal(load(HEAD "current-context: x\n"
				   "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
				   "clusters: [{name: c, cluster: {server: 'http://a:1', "
				   "insecure-skip-tls-verify: true}}]\n"
				   "users: [{name: u, user: {tokenFile: token}}]\n",
			      "https://198.18.0.9:6443", &c, msg, sizeof(msg)),
			 0);
	assert_string_equal(c.server, "https://198.18.0.9:6443"); /* --master wins */
	assert_true(c.insecure);
	assert_string_equal(c.token, "tok-from-file");
	snprintf(path, sizeof(path), "%s/token", dir);
	assert_string_equal(c.token_file, path);

	/* Unchanged: not re-read.  Rotated: the new token. */
	diag_list_init(&d);
	assert_int_equal(kube_config_refresh_token(&c, &d), 0);
	put("token", "rotated\n");
	ts[0].tv_sec = ts[1].tv_sec = c.token_mtime + 5;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	assert_int_equal(kube_config_refresh_token(&c, &d), 1);
	assert_string_equal(c.token, "rotated");
	/* Emptied: an error, the old token kept. */
	put("token", "\n");
	ts[0].tv_sec = ts[1].tv_sec = c.token_mtime + 5;
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	assert_int_equal(kube_config_refresh_token(&c, &d), -EINVAL);
	assert_int_equal(d.n, 1);
	assert_string_equal(c.token, "rotated");
	diag_list_done(&d);
	put("token", "  tok-from-file\n");
	kube_config_done(&c);
}

/* A token wins over tokenFile (client-go); an anonymous user is allowed. */
static void test_token_precedence_anonymous(void **state)
{
	struct kube_config c;
	char msg[512];

	assert_int_equal(load(HEAD "current-context: x\n"
				   "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
				   "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
				   "users: [{name: u, user: {token: lit, tokenFile: missing}}]\n",
			      NULL, &c, msg, sizeof(msg)),
			 0);
	assert_string_equal(c.token, "lit");
	assert_null(c.token_file);
	kube_config_done(&c);
	assert_int_equal(load(HEAD "current-context: x\n"
				   "contexts: [{name: x, context: {cluster: c}}]\n"
				   "clusters: [{name: c, cluster: {server: 'https://a'}}]\n",
			      NULL, &c, msg, sizeof(msg)),
			 0);
	assert_null(c.token);
	assert_null(c.cert.file);
	kube_config_done(&c);
}

struct bad_case {
	const char *text;
	const char *msg; /* the diag line from "kc.yaml" on */
};

#define CTX "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
#define CL "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"

static const struct bad_case bad_cases[] = {
	{ "a: [", "kc.yaml: line 2, column 1: not valid YAML (did not find expected node content)" },
	{ "", "kc.yaml: empty: no kubeconfig in it" },
	{ "- a\n", "kc.yaml: not a kubeconfig (its top level is not a mapping)" },
	{ HEAD CL, "kc.yaml: current-context: missing: no context to use" },
	{ "current-context: y\ncontexts: [{name: x, context: {cluster: c}}]\n" CL,
	  "kc.yaml: current-context: context 'y' is not in contexts" },
	{ "current-context: x\ncontexts: [{name: x}]\n", "kc.yaml: contexts[0].context: missing" },
	{ "current-context: x\ncontexts: {x: 1}\n", "kc.yaml: contexts: not a list" },
	{ CTX "clusters: [{name: d, cluster: {server: 'https://a'}}]\n",
	  "kc.yaml: contexts[0].context.cluster: cluster 'c' is not in clusters" },
	{ CTX CL, "kc.yaml: contexts[0].context.user: user 'u' is not in users" },
	{ CTX "clusters: [{name: c, cluster: {}}]\n",
	  "kc.yaml: clusters[0].cluster.server: missing (or give --master)" },
	{ CTX "clusters: [{name: c, cluster: {server: 'ftp://a'}}]\n",
	  "kc.yaml: clusters[0].cluster.server: 'ftp://a' is not an http:// or https:// URL" },
	{ CTX "clusters: [{name: c, cluster: {server: [1]}}]\n",
	  "kc.yaml: clusters[0].cluster.server: not a string" },
	{ CTX "clusters: [{name: c, cluster: {server: 'https://a', certificate-authority: nope}}]\n",
	  "kc.yaml: clusters[0].cluster.certificate-authority: " },
	{ CTX "clusters: [{name: c, cluster: {server: 'https://a', certificate-authority-data: '!!'}}]\n",
	  "kc.yaml: clusters[0].cluster.certificate-authority-data: not valid base64" },
	{ CTX "clusters: [{name: c, cluster: {server: 'https://a', certificate-authority: ca.crt, "
	      "certificate-authority-data: QQ==}}]\n",
	  "kc.yaml: clusters[0].cluster.certificate-authority-data: certificate-authority-data and "
	  "certificate-authority are both set: give one" },
	{ CTX "clusters: [{name: c, cluster: {server: 'https://a', insecure-skip-tls-verify: maybe}}]\n",
	  "kc.yaml: clusters[0].cluster.insecure-skip-tls-verify: 'maybe' is not true or false" },
	{ CTX "clusters: [{name: c, cluster: {server: 'https://a', insecure-skip-tls-verify: true, "
	      "certificate-authority: ca.crt}}]\n",
	  "kc.yaml: clusters[0].cluster.insecure-skip-tls-verify: set together with a certificate "
	  "authority: give one" },
	{ CTX CL "users: [{name: u, user: {client-certificate: client.crt}}]\n",
	  "kc.yaml: users[0].user.client-certificate: given without client-key" },
	{ CTX CL "users: [{name: u, user: {client-key-data: S0VZ}}]\n",
	  "kc.yaml: users[0].user.client-key: given without client-certificate" },
	{ CTX CL "users: [{name: u, user: {exec: {command: x}}}]\n",
	  "kc.yaml: users[0].user.exec: not supported by svcnat (use a token, tokenFile or a client "
	  "certificate)" },
	{ CTX CL "users: [{name: u, user: {tokenFile: nope}}]\n", "kc.yaml: users[0].user.tokenFile: " },
	{ CTX CL "users: [{name: o}, {name: u, user: {client-certificate-data: 'Q0VSVA', client-key-data: 'AA=='}}]\n",
	  "kc.yaml: users[1].user.client-key-data: not PEM text" },
};

static void test_bad(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_cases); i++) {
		struct kube_config c;
		char msg[512];
		int r;

		r = load(bad_cases[i].text, NULL, &c, msg, sizeof(msg));
		if (r != -EINVAL || strncmp(msg, bad_cases[i].msg, strlen(bad_cases[i].msg)))
			fail_msg("case %zu: r=%d msg '%s', want '%s'", i, r, msg, bad_cases[i].msg);
	}
}

static void test_missing_file(void **state)
{
	struct kube_config c;
	struct diag_list d;

	diag_list_init(&d);
	assert_int_equal(kube_config_load("/nonexistent/kc", NULL, &c, &d), -ENOENT);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.items[0].source, "/nonexistent/kc");
	diag_list_done(&d);
}

static void test_master_and_url(void **state)
{
	struct kube_config c;
	struct diag_list d;

	diag_list_init(&d);
	assert_int_equal(kube_config_master("https://198.18.0.1:6443//", &c, &d), 0);
	assert_string_equal(c.server, "https://198.18.0.1:6443");
	assert_null(c.token);
	kube_config_done(&c);
	assert_int_equal(kube_config_master("198.18.0.1:6443", &c, &d), -EINVAL);
	assert_int_equal(d.n, 1);
	diag_list_done(&d);
	assert_true(kube_url_ok("http://h"));
	assert_true(kube_url_ok("https://[2001:2::1]:6443/prefix"));
	assert_false(kube_url_ok("https://"));
	assert_false(kube_url_ok("https://h/x?y"));
	assert_false(kube_url_ok("https://h x"));
	assert_false(kube_url_ok(NULL));
}

static void test_in_cluster(void **state)
{
	struct kube_config c;
	struct diag_list d;

	diag_list_init(&d);
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_int_equal(kube_config_in_cluster(dir, &c, &d), -ENOENT);
	assert_int_equal(d.n, 1);
	diag_list_done(&d);
	diag_list_init(&d);
	setenv("KUBERNETES_SERVICE_HOST", "2001:2::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kube_config_in_cluster(dir, &c, &d), 0);
	assert_string_equal(c.server, "https://[2001:2::1]:443");
	assert_string_equal(c.token, "tok-from-file");
	assert_non_null(c.ca.file);
	assert_non_null(strstr(c.ca.file, "/ca.crt"));
	kube_config_done(&c);
	setenv("KUBERNETES_SERVICE_HOST", "198.18.0.1", 1);
	assert_int_equal(kube_config_in_cluster("/nonexistent", &c, &d), -ENOENT);
	assert_int_equal(d.n, 1);
	diag_list_done(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_files_relative),
		cmocka_unit_test(test_data_variants),
		cmocka_unit_test(test_token_file_and_master),
		cmocka_unit_test(test_token_precedence_anonymous),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_master_and_url),
		cmocka_unit_test(test_in_cluster),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
