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
	char path[256];

	snprintf(dir, sizeof(dir), "/tmp/test-kubeconfig.XXXXXX");
	assert_non_null(mkdtemp(dir));
	put("ca.crt", "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n");
	put("client.crt", "cert\n");
	put("client.key", "key\n");
	put("token", "  tok-from-file\n");
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	/* A file's open that blocks (a FIFO) must fail the test, not hang it. */
	alarm(120);
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
	r = kube_config_load(path, master, FILE_MODE_REFUSE, c, &d);
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
	/* Read here, handed to libcurl as bytes. */
	assert_string_equal(c.ca.data, "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n");
	assert_int_equal(c.ca.len, strlen(c.ca.data));
	snprintf(want, sizeof(want), "%s/client.crt", dir);
	assert_string_equal(c.cert.file, want);
	snprintf(want, sizeof(want), "%s/client.key", dir);
	assert_string_equal(c.key.file, want);
	assert_string_equal(c.cert.data, "cert\n");
	assert_string_equal(c.key.data, "key\n");
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
	ts[0].tv_sec = ts[1].tv_sec = c.token_stamp.mtim.tv_sec + 5;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	assert_int_equal(kube_config_refresh_token(&c, &d), 1);
	assert_string_equal(c.token, "rotated");
	/* Emptied: an error, the old token kept. */
	put("token", "\n");
	ts[0].tv_sec = ts[1].tv_sec = c.token_stamp.mtim.tv_sec + 5;
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
	/* Files that are not regular files: refused at once, naming the field. */
	{ CTX "clusters: [{name: c, cluster: {server: 'https://a', certificate-authority: fifo}}]\n",
	  "kc.yaml: clusters[0].cluster.certificate-authority: DIR/fifo: not a regular file (a FIFO)" },
	{ CTX "clusters: [{name: c, cluster: {server: 'https://a', certificate-authority: /dev/zero}}]\n",
	  "kc.yaml: clusters[0].cluster.certificate-authority: /dev/zero: not a regular file (a "
	  "character device)" },
	{ CTX "clusters: [{name: c, cluster: {server: 'https://a', certificate-authority: sub}}]\n",
	  "kc.yaml: clusters[0].cluster.certificate-authority: DIR/sub: not a regular file (a directory)" },
	{ CTX CL "users: [{name: u, user: {tokenFile: fifo}}]\n",
	  "kc.yaml: users[0].user.tokenFile: DIR/fifo: not a regular file (a FIFO)" },
	{ CTX CL "users: [{name: u, user: {client-certificate: fifo, client-key: client.key}}]\n",
	  "kc.yaml: users[0].user.client-certificate: DIR/fifo: not a regular file (a FIFO)" },
	{ CTX CL "users: [{name: u, user: {client-certificate: client.crt, client-key: /dev/null}}]\n",
	  "kc.yaml: users[0].user.client-key: /dev/null: not a regular file (a character device)" },
	/* YAML limits. */
	{ CTX CL "a: &a [x, x]\nb: [*a, *a]\n",
	  "kc.yaml: line 5, column 5: an alias (*a): svcnat does not expand YAML aliases" },
	{ CTX CL "---\nx: 1\n", "kc.yaml: line 5, column 1: a second YAML document: svcnat reads one "
				   "document per file" },
	{ CTX "a: \"x\\0y\"\nclusters: [{name: c, cluster: {server: \"https://a\\0b\"}}]\n",
	  "kc.yaml: clusters[0].cluster.server: contains a NUL byte" },
	/* A name given twice in a list (client-go refuses it). */
	{ CTX CL "users: [{name: u, user: {token: a}}, {name: v}, {name: u, user: {token: b}}]\n",
	  "kc.yaml: users[2].name: 'u' is the name of users[0] too: names must be unique" },
};

static void test_bad(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_cases); i++) {
		struct kube_config c;
		char msg[512];
		int r;

		char want[512];
		const char *at;

		/* DIR: the test's directory. */
		at = strstr(bad_cases[i].msg, "DIR");
		if (at)
			snprintf(want, sizeof(want), "%.*s%s%s", (int)(at - bad_cases[i].msg),
				 bad_cases[i].msg, dir, at + 3);
		else
			snprintf(want, sizeof(want), "%s", bad_cases[i].msg);
		r = load(bad_cases[i].text, NULL, &c, msg, sizeof(msg));
		if (r != -EINVAL || strncmp(msg, want, strlen(want)))
			fail_msg("case %zu: r=%d msg '%s', want '%s'", i, r, msg, want);
	}
}

static void test_missing_file(void **state)
{
	struct kube_config c;
	struct diag_list d;

	diag_list_init(&d);
	assert_int_equal(kube_config_load("/nonexistent/kc", NULL, FILE_MODE_REFUSE, &c, &d), -ENOENT);
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
	assert_int_equal(kube_config_in_cluster(dir, FILE_MODE_REFUSE, &c, &d), -ENOENT);
	assert_int_equal(d.n, 1);
	diag_list_done(&d);
	diag_list_init(&d);
	setenv("KUBERNETES_SERVICE_HOST", "2001:2::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kube_config_in_cluster(dir, FILE_MODE_REFUSE, &c, &d), 0);
	assert_string_equal(c.server, "https://[2001:2::1]:443");
	assert_string_equal(c.token, "tok-from-file");
	assert_non_null(c.ca.file);
	assert_non_null(strstr(c.ca.file, "/ca.crt"));
	kube_config_done(&c);
	setenv("KUBERNETES_SERVICE_HOST", "198.18.0.1", 1);
	assert_int_equal(kube_config_in_cluster("/nonexistent", FILE_MODE_REFUSE, &c, &d), -ENOENT);
	assert_int_equal(d.n, 1);
	diag_list_done(&d);
}


/* Load the bytes text[0..len) as kc.yaml with mode; the first diag's line
 * from "kc.yaml" on in msg (or the whole line). */
static int load_bytes(const char *text, size_t len, enum file_mode_check mode, struct kube_config *c,
		      char *msg, size_t msglen, size_t *ret_ndiags)
{
	char path[256];
	struct diag_list d;
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/kc.yaml", dir);
	f = fopen(path, "we");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
	diag_list_init(&d);
	memset(c, 0, sizeof(*c));
	r = kube_config_load(path, NULL, mode, c, &d);
	msg[0] = '\0';
	if (d.n) {
		char *line = diag_format(&d.items[0]);

		assert_non_null(line);
		snprintf(msg, msglen, "%s", strstr(line, "kc.yaml") ? strstr(line, "kc.yaml") : line);
		free(line);
	}
	*ret_ndiags = d.n;
	diag_list_done(&d);
	return r;
}

#define GOOD CTX CL "users: [{name: u, user: {token: t}}]\n"

/* A NUL byte in the file; duplicate keys: the last wins (client-go's
 * YAMLToJSON); a trailing empty document is no second document. */
static void test_nul_dups_documents(void **state)
{
	static const char nul[] = GOOD "x: a\0b\n";
	struct kube_config c;
	char msg[512];
	size_t n;

	assert_int_equal(load_bytes(nul, sizeof(nul) - 1, FILE_MODE_REFUSE, &c, msg, sizeof(msg), &n),
			 -EINVAL);
	assert_string_equal(msg, "kc.yaml: line 5, column 5: a NUL byte");
	assert_int_equal(load(CTX "clusters: [{name: c, cluster: {server: 'https://first', "
				  "server: 'https://last'}}]\n"
				  "users: [{name: u, user: {token: t}}]\ncurrent-context: x\n",
			      NULL, &c, msg, sizeof(msg)),
			 0);
	assert_string_equal(c.server, "https://last");
	kube_config_done(&c);
	assert_int_equal(load(GOOD "---\n", NULL, &c, msg, sizeof(msg)), 0);
	kube_config_done(&c);
	assert_int_equal(load("---\n" GOOD "...\n", NULL, &c, msg, sizeof(msg)), 0);
	kube_config_done(&c);
}

/*
 * YAML bombs end at once with one located error: a billion-laughs alias
 * tree, 100,000 nested '[' (libyaml's scanner is quadratic in depth),
 * 60,000 nested mappings, 300,000 nodes.  The alarm() of setup() bounds
 * the time; the sanitizers' and the test's memory stay small.
 */
static void test_bombs(void **state)
{
	struct {
		const char *what, *msg;
	} want[] = {
		{ "laughs", "kc.yaml: line 2, column 10: an alias (*a0): svcnat does not expand YAML aliases" },
		{ "brackets", "kc.yaml: line 1, column 65: nested deeper than 64 levels" },
		{ "maps", "kc.yaml: line 1, column 257: nested deeper than 64 levels" },
		{ "nodes", "kc.yaml: line 1, column " },
	};
	size_t cap = 4u << 20, len, n;
	struct kube_config c;
	char *buf = malloc(cap), msg[512];

	assert_non_null(buf);
	for (size_t w = 0; w < ARRAY_SIZE(want); w++) {
		len = 0;
		if (w == 0) {
			len += (size_t)sprintf(buf, "a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
			for (int i = 1; i < 10; i++) {
				len += (size_t)sprintf(buf + len, "a%d: &a%d [", i, i);
				for (int j = 0; j < 9; j++)
					len += (size_t)sprintf(buf + len, "%s*a%d", j ? ", " : "", i - 1);
				len += (size_t)sprintf(buf + len, "]\n");
			}
		} else if (w == 1) {
			memset(buf, '[', 100000);
			len = 100000;
		} else if (w == 2) {
			for (int i = 0; i < 60000; i++)
				len += (size_t)sprintf(buf + len, "{a: ");
		} else {
			buf[len++] = '[';
			for (int i = 0; i < 300000; i++)
				len += (size_t)sprintf(buf + len, "1,");
			buf[len++] = ']';
		}
		assert_int_equal(load_bytes(buf, len, FILE_MODE_REFUSE, &c, msg, sizeof(msg), &n),
				 -EINVAL);
		assert_int_equal(n, 1);
		if (strncmp(msg, want[w].msg, strlen(want[w].msg)))
			fail_msg("%s: '%s', want '%s'", want[w].what, msg, want[w].msg);
	}
	assert_non_null(strstr(msg, "more than 200000 YAML nodes"));
	free(buf);
}

static void chmod_in(const char *name, mode_t m)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(chmod(path, m), 0);
}

/* The config-safety rule of a services file, for the kubeconfig and every
 * file it names: one message, -EPERM (exit 2) where svcnat writes rules. */
static void test_permissions(void **state)
{
	static const char kc[] = HEAD "current-context: x\n"
				 "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
				 "clusters: [{name: c, cluster: {server: 'https://a', "
				 "certificate-authority: ca.crt}}]\n"
				 "users: [{name: u, user: {tokenFile: token}}]\n";
	struct kube_config c;
	char msg[512], want[512];
	size_t n;

	assert_int_equal(load_bytes(kc, sizeof(kc) - 1, FILE_MODE_REFUSE, &c, msg, sizeof(msg), &n), 0);
	kube_config_done(&c);
	chmod_in("kc.yaml", 0666);
	/* load_bytes() rewrites the file: fopen keeps the mode. */
	assert_int_equal(load_bytes(kc, sizeof(kc) - 1, FILE_MODE_REFUSE, &c, msg, sizeof(msg), &n),
			 -EPERM);
	assert_int_equal(n, 1);
	assert_string_equal(msg, "kc.yaml: writable by users other than its owner (mode 0666): "
				 "refusing it (chmod go-w, or --allow-insecure-config)");
	assert_int_equal(load_bytes(kc, sizeof(kc) - 1, FILE_MODE_WARN, &c, msg, sizeof(msg), &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(msg, "kc.yaml: writable by users other than its owner (mode 0666): "
				 "svcnat would refuse it when writing rules (chmod go-w, or "
				 "--allow-insecure-config)");
	kube_config_done(&c);
	assert_int_equal(load_bytes(kc, sizeof(kc) - 1, FILE_MODE_IGNORE, &c, msg, sizeof(msg), &n), 0);
	assert_int_equal(n, 0);
	kube_config_done(&c);
	chmod_in("kc.yaml", 0644);

	chmod_in("token", 0666);
	assert_int_equal(load_bytes(kc, sizeof(kc) - 1, FILE_MODE_REFUSE, &c, msg, sizeof(msg), &n),
			 -EPERM);
	snprintf(want, sizeof(want), "kc.yaml: users[0].user.tokenFile: %s/token: writable by users "
		 "other than its owner (mode 0666): refusing it (chmod go-w, or "
		 "--allow-insecure-config)", dir);
	assert_string_equal(msg, want);
	chmod_in("token", 0644);

	chmod_in("ca.crt", 0646);
	assert_int_equal(load_bytes(kc, sizeof(kc) - 1, FILE_MODE_REFUSE, &c, msg, sizeof(msg), &n),
			 -EPERM);
	snprintf(want, sizeof(want), "kc.yaml: clusters[0].cluster.certificate-authority: %s/ca.crt: "
		 "writable by users other than its owner (mode 0646): refusing it (chmod go-w, or "
		 "--allow-insecure-config)", dir);
	assert_string_equal(msg, want);
	chmod_in("ca.crt", 0644);
}

/*
 * Rotation: a CA file that changes is read again (and handed over as
 * bytes); a token or CA file swapped for a FIFO is refused without an
 * open that blocks, and what was read before is kept.
 */
static void test_refresh(void **state)
{
	static const char kc[] = HEAD "current-context: x\n"
				 "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
				 "clusters: [{name: c, cluster: {server: 'https://a', "
				 "certificate-authority: ca.crt}}]\n"
				 "users: [{name: u, user: {tokenFile: token}}]\n";
	char msg[512], want[512], path[256], fifo[256];
	struct kube_config c;
	struct diag_list d;
	size_t n;

	assert_int_equal(load_bytes(kc, sizeof(kc) - 1, FILE_MODE_REFUSE, &c, msg, sizeof(msg), &n), 0);
	diag_list_init(&d);
	assert_int_equal(kube_config_refresh(&c, &d), 0);
	put("ca.crt.new", "NEW CA\n");
	snprintf(path, sizeof(path), "%s/ca.crt.new", dir);
	snprintf(want, sizeof(want), "%s/ca.crt", dir);
	assert_int_equal(rename(path, want), 0);
	assert_int_equal(kube_config_refresh(&c, &d), 1);
	assert_string_equal(c.ca.data, "NEW CA\n");
	assert_int_equal(d.n, 0);

	/* The token file becomes a FIFO: refused at once, the token kept. */
	snprintf(fifo, sizeof(fifo), "%s/token.fifo", dir);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	snprintf(path, sizeof(path), "%s/token", dir);
	assert_int_equal(rename(fifo, path), 0);
	assert_int_equal(kube_config_refresh_token(&c, &d), -ENODEV);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.items[0].source, path);
	assert_string_equal(d.items[0].msg, "not a regular file (a FIFO)");
	assert_string_equal(c.token, "tok-from-file");
	diag_list_done(&d);

	/* The CA too: kept. */
	diag_list_init(&d);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	assert_int_equal(rename(fifo, path), 0);
	assert_int_equal(kube_config_refresh(&c, &d), -ENODEV);
	assert_int_equal(d.n, 2); /* the token and the CA */
	assert_string_equal(c.ca.data, "NEW CA\n");
	diag_list_done(&d);
	kube_config_done(&c);

	assert_int_equal(unlink(path), 0);
	put("ca.crt", "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n");
	snprintf(path, sizeof(path), "%s/token", dir);
	assert_int_equal(unlink(path), 0);
	put("token", "  tok-from-file\n");
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
		cmocka_unit_test(test_nul_dups_documents),
		cmocka_unit_test(test_bombs),
		cmocka_unit_test(test_permissions),
		cmocka_unit_test(test_refresh),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
