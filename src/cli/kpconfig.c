/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "cli/kpconfig.h"
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

static void yaml_document_deletep(yaml_document_t **d)
{
	if (*d)
		yaml_document_delete(*d);
}

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

/* A sequence of scalars, joined by ','. */
static int join_sequence(yaml_document_t *doc, const yaml_node_t *n, const char *file,
			 const char *path, char **ret, struct diag_list *d)
{
	size_t len = 1, off = 0;
	yaml_node_item_t *it;
	char *buf;

	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		const char *v = scalar(yaml_document_get_node(doc, *it));

		if (!v) {
			diag_add(d, DIAG_ERROR, file, NULL, path,
				 "line %lu: a list of values expected",
				 (unsigned long)n->start_mark.line + 1);
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
		if (asprintf(&path, "%s%s%s", prefix, prefix[0] ? "." : "", key) < 0)
			return -ENOMEM;
		if (!prefix[0] && (streq(key, "kind") || streq(key, "apiVersion")))
			continue;
		switch (v->type) {
		case YAML_SCALAR_NODE:
			r = add_field(c, path, is_null(v) ? "" : scalar(v), is_null(v), line);
			break;
		case YAML_SEQUENCE_NODE:
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

static const yaml_node_t *top_value(yaml_document_t *doc, const yaml_node_t *map, const char *key)
{
	yaml_node_pair_t *p;

	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(doc, p->key));

		if (k && streq(k, key))
			return yaml_document_get_node(doc, p->value);
	}
	return NULL;
}

int kpconfig_parse(const char *name, const char *text, size_t len, struct kpconfig **ret,
		   struct diag_list *d)
{
	_cleanup_(kpconfig_freep) struct kpconfig *c = NULL;
	_cleanup_(yaml_document_deletep) yaml_document_t *docp = NULL;
	yaml_document_t doc;
	yaml_parser_t parser;
	const yaml_node_t *root;
	const char *kind, *api;
	int r, ok;

	/* Cheap test first: a service source never names the kind. */
	if (!memmem(text, len, KIND, strlen(KIND)))
		return 0;
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	ok = yaml_parser_load(&parser, &doc);
	if (!ok) {
		unsigned long line = (unsigned long)parser.problem_mark.line + 1;
		unsigned long col = (unsigned long)parser.problem_mark.column + 1;
		char problem[160];
		size_t i = 0;

		snprintf(problem, sizeof(problem), "%s",
			 parser.problem ? parser.problem : "not valid YAML");
		yaml_parser_delete(&parser);
		while (i < len && strchr(" \t\r\n", text[i]))
			i++;
		/* JSON that libyaml does not take (a service List that merely
		 * mentions the kind) is for the JSON decoder to judge. */
		if (i < len && (text[i] == '{' || text[i] == '['))
			return 0;
		diag_add(d, DIAG_ERROR, name, NULL, NULL,
			 "line %lu, column %lu: not a valid KubeProxyConfiguration: %s", line, col,
			 problem);
		return -EINVAL;
	}
	yaml_parser_delete(&parser);
	docp = &doc;
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE)
		return 0;
	kind = scalar(top_value(&doc, root, "kind"));
	if (!kind || !streq(kind, KIND))
		return 0;
	api = scalar(top_value(&doc, root, "apiVersion"));
	c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(name)) || !(c->api_version = strdup(api ? api : "")))
		return -ENOMEM;
	r = walk(&doc, root, "", c, d);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 1;
}

int kpconfig_read(const char *path, struct kpconfig **ret, struct diag_list *d)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t off = 0;
	ssize_t n;

	if (streq(path, "-"))
		return 0;
	/* A file that cannot be opened or read is no KubeProxyConfiguration
	 * here: the file source reports it, in one format and with one exit
	 * code for every reason (and the daemon waits for it). */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0)
		return 0;
	if (!S_ISREG(st.st_mode) || st.st_size > KPCONFIG_MAX_BYTES)
		return 0;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	while (off < (size_t)st.st_size &&
	       (n = read(fd, buf + off, (size_t)st.st_size - off)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return 0;
		}
		off += (size_t)n;
	}
	buf[off] = '\0';
	return kpconfig_parse(path, buf, off, ret, d);
}
