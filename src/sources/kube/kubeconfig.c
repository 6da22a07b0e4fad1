/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "sources/file/yamldoc.h"
#include "sources/kube/kubeconfig.h"
#include "sources/net/base64.h"
#include "util.h"

void kube_config_done(struct kube_config *c)
{
	if (!c)
		return;
	free(c->origin);
	free(c->server);
	free(c->context);
	pemfile_done(&c->ca);
	pemfile_done(&c->cert);
	pemfile_done(&c->key);
	if (c->token)
		explicit_bzero(c->token, strlen(c->token));
	free(c->token);
	free(c->token_file);
	*c = (struct kube_config){ 0 };
}

bool kube_url_ok(const char *s)
{
	const char *host;

	if (!s)
		return false;
	if (!strncmp(s, "https://", 8))
		host = s + 8;
	else if (!strncmp(s, "http://", 7))
		host = s + 7;
	else
		return false;
	if (!*host || *host == '/' || *host == ':')
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == '?' || *p == '#')
			return false;
	return true;
}

/* The URL without trailing '/'. */
static int set_server(struct kube_config *c, const char *url)
{
	size_t n = strlen(url);

	while (n > 0 && url[n - 1] == '/')
		n--;
	free(c->server);
	c->server = strndup(url, n);
	return c->server ? 0 : -ENOMEM;
}

/* A token file's content: surrounding whitespace dropped, as client-go
 * does.  0 or -errno with one diag (who: as cfgfile_read()). */
static int read_token(const char *path, enum file_mode_check mode, const struct cfgfile_who *who,
		      char **ret, struct stat *st, struct diag_list *d)
{
	_cleanup_free_ char *buf = NULL;
	size_t len, b = 0;
	int r;

	r = cfgfile_read(path, KUBE_TOKEN_MAX_SIZE, mode, who, &buf, &len, st, d);
	if (r < 0)
		return r;
	while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
		buf[--len] = '\0';
	while (b < len && strchr(" \t\r\n", buf[b]))
		b++;
	if (b == len)
		r = cfgfile_content_error(path, who, d, "the token file is empty");
	else if (memchr(buf + b, '\n', len - b) || strlen(buf + b) != len - b)
		r = cfgfile_content_error(path, who, d, "the token file holds more than one line");
	else if (!(*ret = strdup(buf + b)))
		r = -ENOMEM;
	explicit_bzero(buf, len);
	return r;
}

int kube_config_refresh_token(struct kube_config *c, struct diag_list *d)
{
	char *tok = NULL;
	struct stat st;
	int r;

	if (!c->token_file)
		return 0;
	if (stat(c->token_file, &st) == 0 && c->token && cfgfile_stamp_eq(&c->token_stamp, &st))
		return 0;
	r = read_token(c->token_file, c->mode, NULL, &tok, &st, d);
	if (r < 0)
		return r;
	cfgfile_stamp_set(&c->token_stamp, &st);
	if (c->token && streq(c->token, tok)) {
		explicit_bzero(tok, strlen(tok));
		free(tok);
		return 0;
	}
	if (c->token)
		explicit_bzero(c->token, strlen(c->token));
	free(c->token);
	c->token = tok;
	return 1;
}

int kube_config_refresh(struct kube_config *c, struct diag_list *d)
{
	struct pemfile *pems[] = { &c->ca, &c->cert, &c->key };
	int r, first = 0, changed = 0;

	r = kube_config_refresh_token(c, d);
	if (r < 0)
		first = r;
	changed |= r > 0;
	for (size_t i = 0; i < ARRAY_SIZE(pems); i++) {
		r = pemfile_refresh(pems[i], c->mode, NULL, d);
		if (r < 0 && !first)
			first = r;
		changed |= r > 0;
	}
	return first ? first : changed;
}

/* ---- the kubeconfig's YAML ---- */

struct kc {
	const char *path;
	char *dir; /* the kubeconfig's directory, or NULL (relative to cwd) */
	enum file_mode_check mode;
	yaml_document_t doc;
	struct diag_list *d;
};

/* The kubeconfig cannot be used: a missing or unreadable file, one refused
 * as writable by others; anything else (not a regular file, too large)
 * is a wrong file. */
static int file_error(int r)
{
	return r == -ENOMEM || r == -ENOENT || r == -EACCES || r == -EPERM ? r : -EINVAL;
}

/* A file it names cannot be used: a wrong kubeconfig, unless refused as
 * writable by others. */
static int named_error(int r)
{
	return r == -ENOMEM || r == -EPERM ? r : -EINVAL;
}

static int bad(struct kc *k, const char *field, const char *fmt, ...) _printf_(3, 4);

static int bad(struct kc *k, const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (diag_add(k->d, DIAG_ERROR, k->path, NULL, field, "%s", msg) < 0)
		return -ENOMEM;
	return -EINVAL;
}

static yaml_node_t *node(struct kc *k, int id)
{
	return yaml_document_get_node(&k->doc, id);
}

/* YAML's null: ~, null, or nothing at all (plain style). */
static bool is_null(const yaml_node_t *n)
{
	const char *v;

	if (!n)
		return true;
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = (const char *)n->data.scalar.value;
	return !*v || streq(v, "~") || streq(v, "null") || streq(v, "Null") || streq(v, "NULL");
}

/*
 * The value of key in mapping m, or NULL.  A key given twice: the last one,
 * as client-go reads a kubeconfig (sigs.k8s.io/yaml's YAMLToJSON, not the
 * strict variant, keeps the last).
 */
static yaml_node_t *map_get(struct kc *k, yaml_node_t *m, const char *key)
{
	size_t klen = strlen(key);

	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.top; p-- > m->data.mapping.pairs.start;) {
		yaml_node_t *kn = node(k, p->key);

		if (kn && kn->type == YAML_SCALAR_NODE && kn->data.scalar.length == klen &&
		    !memcmp(kn->data.scalar.value, key, klen))
			return node(k, p->value);
	}
	return NULL;
}

/* A string field: *ret NULL when absent or null; -EINVAL if not a scalar. */
static int get_str(struct kc *k, yaml_node_t *m, const char *key, const char *field, const char **ret)
{
	yaml_node_t *v = map_get(k, m, key);

	*ret = NULL;
	if (is_null(v))
		return 0;
	if (v->type != YAML_SCALAR_NODE)
		return bad(k, field, "not a string");
	if (strlen((const char *)v->data.scalar.value) != v->data.scalar.length)
		return bad(k, field, "contains a NUL byte");
	*ret = (const char *)v->data.scalar.value;
	return 0;
}

/* YAML 1.1 booleans, as Go's yaml decoder takes them. */
static int get_bool(struct kc *k, yaml_node_t *m, const char *key, const char *field, bool *ret)
{
	static const char *const yes[] = { "true", "yes", "on", "y" };
	static const char *const no[] = { "false", "no", "off", "n" };
	const char *s;
	int r;

	*ret = false;
	r = get_str(k, m, key, field, &s);
	if (r < 0 || !s)
		return r;
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*ret = true;
			return 0;
		}
		if (!strcasecmp(s, no[i]))
			return 0;
	}
	return bad(k, field, "'%.64s' is not true or false", s);
}

struct named {
	const char *name;
	size_t idx;
};

static int named_cmp(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* A name given to two entries: client-go refuses the file
 * (clientcmd/api/v1/conversion.go: "duplicate name in list"). */
static int check_unique(struct kc *k, const char *list, struct named *v, size_t n)
{
	char field[64];

	qsort_safe(v, n, sizeof(*v), named_cmp);
	for (size_t i = 1; i < n; i++) {
		if (!streq(v[i - 1].name, v[i].name))
			continue;
		snprintf(field, sizeof(field), "%s[%zu].name", list, v[i].idx);
		return bad(k, field, "'%.200s' is the name of %s[%zu] too: names must be unique", v[i].name,
			   list, v[i - 1].idx);
	}
	return 0;
}

/*
 * Find the entry named name in the list `list` (clusters, users, contexts):
 * returns its inner mapping (entry.<inner>) and index, or NULL.  Every
 * entry must be a mapping with a unique name.
 */
static int find_named(struct kc *k, yaml_node_t *root, const char *list, const char *inner,
		      const char *name, yaml_node_t **ret, size_t *ret_idx)
{
	yaml_node_t *seq = map_get(k, root, list), *found = NULL;
	_cleanup_free_ struct named *names = NULL;
	size_t i = 0, n_names = 0, found_idx = 0;
	char field[64];
	int r;

	*ret = NULL;
	if (is_null(seq))
		return 0;
	if (seq->type != YAML_SEQUENCE_NODE)
		return bad(k, list, "not a list");
	names = calloc((size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start) + 1,
		       sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (yaml_node_item_t *it = seq->data.sequence.items.start;
	     it < seq->data.sequence.items.top; it++, i++) {
		yaml_node_t *e = node(k, *it);
		const char *n;

		snprintf(field, sizeof(field), "%s[%zu]", list, i);
		if (!e || e->type != YAML_MAPPING_NODE)
			return bad(k, field, "not a mapping");
		snprintf(field, sizeof(field), "%s[%zu].name", list, i);
		r = get_str(k, e, "name", field, &n);
		if (r < 0)
			return r;
		if (!n)
			continue;
		names[n_names++] = (struct named){ n, i };
		if (!found && streq(n, name)) {
			found = e;
			found_idx = i;
		}
	}
	r = check_unique(k, list, names, n_names);
	if (r < 0 || !found)
		return r;
	{
		yaml_node_t *in = map_get(k, found, inner);

		snprintf(field, sizeof(field), "%s[%zu].%s", list, found_idx, inner);
		if (is_null(in))
			return bad(k, field, "missing");
		if (in->type != YAML_MAPPING_NODE)
			return bad(k, field, "not a mapping");
		*ret = in;
		*ret_idx = found_idx;
	}
	return 0;
}

/* A file name from the kubeconfig, made relative to its directory. */
static int resolve_path(struct kc *k, const char *s, char **ret)
{
	if (s[0] == '/' || !k->dir)
		*ret = strdup(s);
	else if (asprintf(ret, "%s/%s", k->dir, s) < 0)
		*ret = NULL;
	return *ret ? 0 : -ENOMEM;
}

/*
 * One PEM field pair ("certificate-authority" and its "-data"): the data
 * wins over nothing, both at once is refused as kubectl's validation does.
 */
static int get_pem(struct kc *k, yaml_node_t *m, const char *prefix, const char *fkey,
		   const char *dkey, struct pemfile *ret)
{
	char ffield[128], dfield[128];
	const char *f, *dv;
	int r;

	snprintf(ffield, sizeof(ffield), "%s.%s", prefix, fkey);
	snprintf(dfield, sizeof(dfield), "%s.%s", prefix, dkey);
	r = get_str(k, m, fkey, ffield, &f);
	if (r >= 0)
		r = get_str(k, m, dkey, dfield, &dv);
	if (r < 0)
		return r;
	if (f && *f && dv && *dv)
		return bad(k, dfield, "%s and %s are both set: give one", dkey, fkey);
	if (dv && *dv) {
		r = base64_decode(dv, strlen(dv), &ret->data, &ret->len);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return bad(k, dfield, "not valid base64");
		if (!ret->len || memchr(ret->data, '\0', ret->len))
			return bad(k, dfield, "not PEM text");
		return 0;
	}
	if (f && *f) {
		struct cfgfile_who who = { k->path, ffield };

		r = resolve_path(k, f, &ret->file);
		if (r < 0)
			return r;
		r = pemfile_read(ret, k->mode, &who, k->d);
		if (r < 0)
			return named_error(r);
	}
	return 0;
}

static int load_cluster(struct kc *k, yaml_node_t *cl, size_t idx, const char *master,
			struct kube_config *c)
{
	char pre[64], field[96];
	const char *server;
	int r;

	snprintf(pre, sizeof(pre), "clusters[%zu].cluster", idx);
	snprintf(field, sizeof(field), "%s.server", pre);
	r = get_str(k, cl, "server", field, &server);
	if (r < 0)
		return r;
	if (master)
		server = master;
	if (!server || !*server)
		return bad(k, field, "missing (or give --master)");
	if (!kube_url_ok(server))
		return master
			? bad(k, NULL, "--master: '%.200s' is not an http:// or https:// URL", master)
			: bad(k, field, "'%.200s' is not an http:// or https:// URL", server);
	r = set_server(c, server);
	if (r < 0)
		return r;
	r = get_pem(k, cl, pre, "certificate-authority", "certificate-authority-data", &c->ca);
	if (r < 0)
		return r;
	snprintf(field, sizeof(field), "%s.insecure-skip-tls-verify", pre);
	r = get_bool(k, cl, "insecure-skip-tls-verify", field, &c->insecure);
	if (r < 0)
		return r;
	if (c->insecure && (c->ca.file || c->ca.data))
		return bad(k, field, "set together with a certificate authority: give one");
	return 0;
}

static int load_user(struct kc *k, yaml_node_t *u, size_t idx, struct kube_config *c)
{
	static const char *const unsupported[] = { "exec", "auth-provider", "username", "password", "as" };
	char pre[64], field[96];
	const char *tok, *tokfile;
	int r;

	snprintf(pre, sizeof(pre), "users[%zu].user", idx);
	for (size_t i = 0; i < ARRAY_SIZE(unsupported); i++) {
		if (!is_null(map_get(k, u, unsupported[i]))) {
			snprintf(field, sizeof(field), "%s.%s", pre, unsupported[i]);
			return bad(k, field,
				   "not supported by svcnat (use a token, tokenFile or a client certificate)");
		}
	}
	r = get_pem(k, u, pre, "client-certificate", "client-certificate-data", &c->cert);
	if (r >= 0)
		r = get_pem(k, u, pre, "client-key", "client-key-data", &c->key);
	if (r < 0)
		return r;
	if (!c->cert.file && !c->cert.data && (c->key.file || c->key.data)) {
		snprintf(field, sizeof(field), "%s.client-key", pre);
		return bad(k, field, "given without client-certificate");
	}
	if ((c->cert.file || c->cert.data) && !c->key.file && !c->key.data) {
		snprintf(field, sizeof(field), "%s.client-certificate", pre);
		return bad(k, field, "given without client-key");
	}
	snprintf(field, sizeof(field), "%s.token", pre);
	r = get_str(k, u, "token", field, &tok);
	if (r < 0)
		return r;
	snprintf(field, sizeof(field), "%s.tokenFile", pre);
	r = get_str(k, u, "tokenFile", field, &tokfile);
	if (r < 0)
		return r;
	if (tok && *tok) {
		if (strpbrk(tok, "\r\n"))
			return bad(k, pre, "token: holds a line break");
		c->token = strdup(tok);
		if (!c->token)
			return -ENOMEM;
	}
	/* client-go: a token wins; else the file's content, re-read as it rotates. */
	if (!c->token && tokfile && *tokfile) {
		struct cfgfile_who who = { k->path, field };
		struct stat st;

		r = resolve_path(k, tokfile, &c->token_file);
		if (r < 0)
			return r;
		r = read_token(c->token_file, k->mode, &who, &c->token, &st, k->d);
		if (r < 0)
			return named_error(r);
		cfgfile_stamp_set(&c->token_stamp, &st);
	}
	return 0;
}

static int load_root(struct kc *k, const char *master, struct kube_config *c)
{
	yaml_node_t *root = yaml_document_get_root_node(&k->doc);
	yaml_node_t *ctx = NULL, *cl = NULL, *u = NULL;
	const char *cur, *cname = NULL, *uname = NULL;
	size_t ci = 0, cli = 0, ui = 0;
	char field[96];
	int r;

	if (!root)
		return bad(k, NULL, "empty: no kubeconfig in it");
	if (root->type != YAML_MAPPING_NODE)
		return bad(k, NULL, "not a kubeconfig (its top level is not a mapping)");
	r = get_str(k, root, "current-context", "current-context", &cur);
	if (r < 0)
		return r;
	if (!cur || !*cur)
		return bad(k, "current-context", "missing: no context to use");
	c->context = strdup(cur);
	if (!c->context)
		return -ENOMEM;
	r = find_named(k, root, "contexts", "context", cur, &ctx, &ci);
	if (r < 0)
		return r;
	if (!ctx)
		return bad(k, "current-context", "context '%.200s' is not in contexts", cur);
	snprintf(field, sizeof(field), "contexts[%zu].context.cluster", ci);
	r = get_str(k, ctx, "cluster", field, &cname);
	if (r < 0)
		return r;
	if (!cname || !*cname)
		return bad(k, field, "missing");
	r = find_named(k, root, "clusters", "cluster", cname, &cl, &cli);
	if (r < 0)
		return r;
	if (!cl)
		return bad(k, field, "cluster '%.200s' is not in clusters", cname);
	r = load_cluster(k, cl, cli, master, c);
	if (r < 0)
		return r;
	snprintf(field, sizeof(field), "contexts[%zu].context.user", ci);
	r = get_str(k, ctx, "user", field, &uname);
	if (r < 0)
		return r;
	if (!uname || !*uname)
		return 0; /* anonymous, as kubectl allows */
	r = find_named(k, root, "users", "user", uname, &u, &ui);
	if (r < 0)
		return r;
	if (!u)
		return bad(k, field, "user '%.200s' is not in users", uname);
	return load_user(k, u, ui, c);
}

int kube_config_load(const char *path, const char *master, enum file_mode_check mode,
		     struct kube_config *ret, struct diag_list *d)
{
	struct kube_config c = { .mode = mode };
	struct kc k = { .path = path, .d = d, .mode = mode };
	_cleanup_free_ char *buf = NULL;
	struct yamldoc_error err;
	const char *slash;
	size_t len;
	int r;

	r = cfgfile_read(path, KUBECONFIG_MAX_SIZE, mode, NULL, &buf, &len, NULL, d);
	if (r < 0)
		return file_error(r);
	slash = strrchr(path, '/');
	if (slash) {
		k.dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
		if (!k.dir)
			return -ENOMEM;
	}
	r = yamldoc_load(buf, len, &k.doc, &err);
	if (r < 0) {
		char field[64];

		snprintf(field, sizeof(field), "line %lu, column %lu", err.line, err.column);
		if (r != -ENOMEM)
			r = err.syntax ? bad(&k, field, "not valid YAML (%s)", err.msg)
				       : bad(&k, field, "%s", err.msg);
		free(k.dir);
		return r;
	}
	c.origin = strdup(path);
	r = c.origin ? load_root(&k, master, &c) : -ENOMEM;
	yaml_document_delete(&k.doc);
	free(k.dir);
	if (r < 0) {
		kube_config_done(&c);
		return r;
	}
	*ret = c;
	return 0;
}

int kube_config_master(const char *master, struct kube_config *ret, struct diag_list *d)
{
	struct kube_config c = { 0 };

	if (!kube_url_ok(master)) {
		diag_add(d, DIAG_ERROR, NULL, NULL, "--master",
			 "'%.200s' is not an http:// or https:// URL", master ? master : "");
		return -EINVAL;
	}
	c.origin = strdup("--master");
	if (!c.origin || set_server(&c, master) < 0) {
		kube_config_done(&c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

int kube_config_in_cluster(const char *sa_dir, enum file_mode_check mode, struct kube_config *ret,
			   struct diag_list *d)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	struct kube_config c = { .mode = mode };
	_cleanup_free_ char *url = NULL;
	int r;

	if (!sa_dir)
		sa_dir = KUBE_SA_DIR;
	if (!host || !*host || !port || !*port) {
		diag_add(d, DIAG_ERROR, "in-cluster", NULL, NULL,
			 "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set "
			 "(give --kubeconfig or --master)");
		return -ENOENT;
	}
	/* An IPv6 address needs brackets in a URL. */
	if (asprintf(&url, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port) < 0)
		return -ENOMEM;
	if (!kube_url_ok(url) || strspn(port, "0123456789") != strlen(port)) {
		diag_add(d, DIAG_ERROR, "in-cluster", NULL, "KUBERNETES_SERVICE_HOST",
			 "'%.100s' port '%.20s' do not make a URL", host, port);
		return -EINVAL;
	}
	c.origin = strdup("in-cluster");
	r = c.origin ? set_server(&c, url) : -ENOMEM;
	if (r >= 0 && asprintf(&c.token_file, "%s/token", sa_dir) < 0) {
		c.token_file = NULL;
		r = -ENOMEM;
	}
	if (r >= 0 && asprintf(&c.ca.file, "%s/ca.crt", sa_dir) < 0) {
		c.ca.file = NULL;
		r = -ENOMEM;
	}
	if (r >= 0)
		r = kube_config_refresh_token(&c, d);
	if (r >= 0)
		r = pemfile_read(&c.ca, mode, NULL, d);
	if (r < 0) {
		r = file_error(r);
		kube_config_done(&c);
		return r;
	}
	*ret = c;
	return 0;
}
