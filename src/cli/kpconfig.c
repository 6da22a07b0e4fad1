/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "cli/kpconfig.h"
#include "sources/file/cfgfile.h"
#include "sources/file/yamldoc.h"
#include "util.h"

#define KIND "KubeProxyConfiguration"

void kpconfig_free(struct kpconfig *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_fields; i++) {
		free(c->fields[i].path);
		free(c->fields[i].value);
	}
	free(c->fields);
	free(c->api_version);
	free(c->path);
	free(c);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(yaml_document_t *, yaml_document_delete)

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A plain (unquoted) null scalar: "", "~", "null". */
static bool is_null(const yaml_node_t *n)
{
	const char *v = scalar(n);

	return v && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*v || streq(v, "~") || streq(v, "null") || streq(v, "Null") || streq(v, "NULL"));
}

static int add_field(struct kpconfig *c, const char *path, const char *value, bool null,
		     unsigned line)
{
	struct kpfield *nv = reallocarray_z(c->fields, c->n_fields + 1, sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	c->fields = nv;
	nv[c->n_fields] = (struct kpfield){ .path = strdup(path), .value = strdup(value),
					    .null = null, .line = line };
	if (!nv[c->n_fields].path || !nv[c->n_fields].value) {
		free(nv[c->n_fields].path);
		free(nv[c->n_fields].value);
		return -ENOMEM;
	}
	c->n_fields++;
	return 0;
}

/* A scalar whose value holds a NUL byte (written "\0" in double quotes):
 * C strings would cut it there. */
static bool has_nul(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE &&
	       strlen((const char *)n->data.scalar.value) != n->data.scalar.length;
}

/* A sequence of scalars, joined by ','. */
static int join_sequence(yaml_document_t *doc, const yaml_node_t *n, const char *file,
			 const char *path, char **ret, struct diag_list *d)
{
	size_t len = 1, off = 0;
	yaml_node_item_t *it;
	char *buf;

	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		const yaml_node_t *e = yaml_document_get_node(doc, *it);
		const char *v = scalar(e);

		if (!v) {
			diag_add(d, DIAG_ERROR, file, NULL, path,
				 "line %lu: a list of values expected",
				 (unsigned long)n->start_mark.line + 1);
			return -EINVAL;
		}
		if (has_nul(e)) {
			diag_add(d, DIAG_ERROR, file, NULL, path, "line %lu: contains a NUL byte",
				 (unsigned long)e->start_mark.line + 1);
			return -EINVAL;
		}
		len += strlen(v) + 1;
	}
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	buf[0] = '\0';
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		const char *v = scalar(yaml_document_get_node(doc, *it));

		off += (size_t)sprintf(buf + off, "%s%s", off ? "," : "", v);
	}
	*ret = buf;
	return 0;
}

/* The value node under key in a mapping node, NULL when absent. */
static const yaml_node_t *map_get(yaml_document_t *doc, const yaml_node_t *map, const char *key)
{
	yaml_node_pair_t *p;

	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(doc, p->key));

		if (k && streq(k, key))
			return yaml_document_get_node(doc, p->value);
	}
	return NULL;
}

/*
 * component-base's logging.vmodule (logs/api/v1 VModuleConfiguration): a
 * list of {filePattern, verbosity}, validated as its Validate does (a
 * pattern, without '=' or ','; a verbosity of 0 to 2^32-1), joined into
 * klog's --vmodule text "PATTERN=N,...".  Other keys of an item are
 * warned about (kube-proxy's lenient decoding drops them).
 */
static int join_vmodule(yaml_document_t *doc, const yaml_node_t *n, const char *file,
			const char *path, char **ret, struct diag_list *d)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, i = 0;
	yaml_node_item_t *it;

	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++, i++) {
		const yaml_node_t *e = yaml_document_get_node(doc, *it);
		const yaml_node_t *pat, *verb;
		const char *ps, *vs;
		unsigned long long v = 0;
		char *end = NULL, *nb;
		yaml_node_pair_t *p;
		int w;

		if (!e || e->type != YAML_MAPPING_NODE) {
			diag_add(d, DIAG_ERROR, file, NULL, path,
				 "line %lu: item %zu: a mapping {filePattern, verbosity} expected",
				 e ? (unsigned long)e->start_mark.line + 1 : 0UL, i);
			return -EINVAL;
		}
		for (p = e->data.mapping.pairs.start; p < e->data.mapping.pairs.top; p++) {
			const char *k = scalar(yaml_document_get_node(doc, p->key));

			if (!k || (!streq(k, "filePattern") && !streq(k, "verbosity")))
				diag_add(d, DIAG_WARNING, file, NULL, path,
					 "line %lu: item %zu: unknown key '%s' ignored",
					 (unsigned long)e->start_mark.line + 1, i, k ? k : "?");
		}
		pat = map_get(doc, e, "filePattern");
		verb = map_get(doc, e, "verbosity");
		ps = pat && !is_null(pat) ? scalar(pat) : "";
		vs = verb && !is_null(verb) ? scalar(verb) : "0";
		if (!ps || !*ps || (pat && has_nul(pat))) {
			diag_add(d, DIAG_ERROR, file, NULL, path,
				 "line %lu: item %zu: filePattern: a file pattern is required",
				 (unsigned long)e->start_mark.line + 1, i);
			return -EINVAL;
		}
		if (strpbrk(ps, "=,")) {
			diag_add(d, DIAG_ERROR, file, NULL, path,
				 "line %lu: item %zu: filePattern '%s': must not contain an equal "
				 "sign or a comma", (unsigned long)e->start_mark.line + 1, i, ps);
			return -EINVAL;
		}
		if (vs && vs[0] >= '0' && vs[0] <= '9') {
			errno = 0;
			v = strtoull(vs, &end, 10);
		}
		if (!vs || !end || *end || errno || v > 0xffffffffULL) {
			diag_add(d, DIAG_ERROR, file, NULL, path,
				 "line %lu: item %zu: verbosity '%s': a number from 0 to 4294967295",
				 (unsigned long)e->start_mark.line + 1, i, vs ? vs : "(not a number)");
			return -EINVAL;
		}
		w = snprintf(NULL, 0, "%s%s=%llu", len ? "," : "", ps, v);
		nb = realloc(buf, len + (size_t)w + 1);
		if (!nb)
			return -ENOMEM;
		buf = nb;
		snprintf(buf + len, (size_t)w + 1, "%s%s=%llu", len ? "," : "", ps, v);
		len += (size_t)w;
	}
	if (!buf && !(buf = strdup("")))
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

/* Flatten a mapping into c->fields, keys joined by '.'. */
static int walk(yaml_document_t *doc, const yaml_node_t *map, const char *prefix,
		struct kpconfig *c, struct diag_list *d)
{
	yaml_node_pair_t *p;
	int r;

	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = yaml_document_get_node(doc, p->key);
		const yaml_node_t *v = yaml_document_get_node(doc, p->value);
		const char *key = scalar(k);
		_cleanup_free_ char *path = NULL, *joined = NULL;
		unsigned line = v ? (unsigned)v->start_mark.line + 1 : 0;

		if (!key || !v) {
			diag_add(d, DIAG_ERROR, c->path, NULL, prefix[0] ? prefix : NULL,
				 "line %u: a key that is not a string", line);
			return -EINVAL;
		}
		if (!key[0]) {
			/* A field has a name: an empty key (a bare "&anchor:") is no field. */
			diag_add(d, DIAG_ERROR, c->path, NULL, prefix[0] ? prefix : NULL,
				 "line %u: an empty key", line);
			return -EINVAL;
		}
		if (asprintf(&path, "%s%s%s", prefix, prefix[0] ? "." : "",
			     has_nul(k) ? "(a key with a NUL byte)" : key) < 0)
			return -ENOMEM;
		if (has_nul(k) || (v->type == YAML_SCALAR_NODE && has_nul(v))) {
			diag_add(d, DIAG_ERROR, c->path, NULL, path, "line %u: contains a NUL byte",
				 line);
			return -EINVAL;
		}
		if (!prefix[0] && (streq(key, "kind") || streq(key, "apiVersion")))
			continue;
		if (streq(path, "logging.vmodule") && v->type != YAML_SEQUENCE_NODE && !is_null(v)) {
			diag_add(d, DIAG_ERROR, c->path, NULL, path,
				 "line %u: a list of {filePattern, verbosity} expected", line);
			return -EINVAL;
		}
		switch (v->type) {
		case YAML_SCALAR_NODE:
			r = add_field(c, path, is_null(v) ? "" : scalar(v), is_null(v), line);
			break;
		case YAML_SEQUENCE_NODE:
			if (streq(path, "logging.vmodule"))
				r = join_vmodule(doc, v, c->path, path, &joined, d);
			else
				r = join_sequence(doc, v, c->path, path, &joined, d);
			if (r >= 0)
				r = add_field(c, path, joined, !joined[0], line);
			break;
		case YAML_MAPPING_NODE:
			if (v->data.mapping.pairs.start == v->data.mapping.pairs.top)
				r = add_field(c, path, "", true, line);
			else
				r = walk(doc, v, path, c, d);
			break;
		default:
			r = add_field(c, path, "", true, line);
			break;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* Text that starts as JSON does: '{' or '[' after white space. */
static bool json_like(const char *text, size_t len)
{
	size_t i = 0;

	while (i < len && strchr(" \t\r\n", text[i]))
		i++;
	return i < len && (text[i] == '{' || text[i] == '[');
}

int kpconfig_parse(const char *name, const char *text, size_t len, struct kpconfig **ret,
		   struct diag_list *d)
{
	_cleanup_(kpconfig_freep) struct kpconfig *c = NULL;
	_cleanup_(yaml_document_deletep) yaml_document_t *docp = NULL;
	struct yamldoc_error err;
	yaml_document_t doc;
	const yaml_node_t *root;
	const char *kind, *api;
	int r;

	/* Cheap test first: a service source never names the kind. */
	if (!memmem(text, len, KIND, strlen(KIND)))
		return 0;
	r = yamldoc_load(text, len, &doc, &err);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		/* JSON that libyaml does not take (a service List that merely
		 * mentions the kind) is for the JSON decoder to judge, which
		 * has limits of its own. */
		if (json_like(text, len))
			return 0;
		diag_add(d, DIAG_ERROR, name, NULL, NULL,
			 "line %lu, column %lu: not a valid KubeProxyConfiguration: %s", err.line,
			 err.column, err.msg);
		return -EINVAL;
	}
	docp = &doc;
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE)
		return 0;
	kind = scalar(map_get(&doc, root, "kind"));
	if (!kind || !streq(kind, KIND))
		return 0;
	api = scalar(map_get(&doc, root, "apiVersion"));
	c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(name)) || !(c->api_version = strdup(api ? api : "")))
		return -ENOMEM;
	r = walk(&doc, root, "", c, d);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 1;
}

/*
 * Whether the start of a file too large to read names the kind at its
 * top level ("kind: KubeProxyConfiguration" at a line's start, or
 * "kind": "KubeProxyConfiguration"): it is then refused as a
 * KubeProxyConfiguration too large, not judged as a service file.
 */
static bool in_set(char c, const char *set)
{
	return c && strchr(set, c);
}

static bool names_kind(const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while ((p = memmem(p, (size_t)(end - p), KIND, strlen(KIND)))) {
		const char *q = p;

		while (q > text && in_set(q[-1], " \t\"'"))
			q--;
		if (q > text && q[-1] == ':') {
			q--;
			while (q > text && in_set(q[-1], " \t\"'"))
				q--;
			if (q - text >= 4 && !memcmp(q - 4, "kind", 4) &&
			    (q - text == 4 || in_set(q[-5], "\n{,\" \t")))
				return true;
		}
		p += strlen(KIND);
	}
	return false;
}

static int too_large(const char *path, struct diag_list *d)
{
	_cleanup_close_ int fd = -1;
	char head[65536];
	struct stat st;
	ssize_t n;

	fd = cfgfile_open(path, &st);
	if (fd < 0)
		return 0;
	n = read(fd, head, sizeof(head));
	if (n <= 0 || !names_kind(head, (size_t)n))
		return 0;
	diag_add(d, DIAG_ERROR, path, NULL, NULL,
		 "larger than the limit of %u bytes of a KubeProxyConfiguration", KPCONFIG_MAX_BYTES);
	return -EINVAL;
}

int kpconfig_read(const char *path, enum file_mode_check mode, struct kpconfig **ret,
		 struct diag_list *d)
{
	_cleanup_(kpconfig_freep) struct kpconfig *c = NULL;
	_cleanup_free_ char *buf = NULL;
	struct diag_list tmp;
	struct stat st;
	size_t len;
	int r;

	if (streq(path, "-"))
		return 0;
	/* A file that cannot be opened or read is no KubeProxyConfiguration
	 * here: the file source reports it, in one format and with one exit
	 * code for every reason (and the daemon waits for it).  Nor is a
	 * FIFO or a device, which the file source refuses. */
	diag_list_init(&tmp);
	r = cfgfile_read(path, KPCONFIG_MAX_BYTES, FILE_MODE_IGNORE, NULL, &buf, &len, &st, &tmp);
	diag_list_done(&tmp);
	if (r == -ENOMEM)
		return r;
	if (r == -EFBIG)
		return too_large(path, d);
	if (r < 0)
		return 0;
	r = kpconfig_parse(path, buf, len, &c, d);
	if (r <= 0)
		return r;
	/* It decides what svcnat programs: the rule of every config file. */
	r = cfgfile_check_mode(path, &st, mode, NULL, d);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 1;
}
