/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The decoders' shared JSON helpers: the diag context (object label, field
 * path), value description for messages, and typed getters where JSON null
 * is "absent" and every error names the path.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sources/decode/decode-json.h"
#include "sources/decode/decode.h"
#include "util.h"

static int vreport(struct dctx *c, enum diag_level level, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (diag_add(c->diags, level, c->source, c->object[0] ? c->object : NULL,
		     c->plen ? c->path : NULL, "%s", msg) < 0)
		return -ENOMEM;
	return 0;
}

/* Record the object's one error; returns -EINVAL (object skipped) or -ENOMEM. */
int dec_fail(struct dctx *c, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vreport(c, DIAG_ERROR, fmt, ap);
	va_end(ap);
	return r < 0 ? r : -EINVAL;
}

int dec_fail_at(struct dctx *c, const char *key, const char *fmt, ...)
{
	size_t l = dec_path_key(c, key);
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vreport(c, DIAG_ERROR, fmt, ap);
	va_end(ap);
	dec_path_pop(c, l);
	return r < 0 ? r : -EINVAL;
}

int dec_report(struct dctx *c, enum diag_level level, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vreport(c, level, fmt, ap);
	va_end(ap);
	return r;
}

size_t dec_path_push(struct dctx *c, const char *fmt, ...)
{
	size_t old = c->plen;
	va_list ap;
	int n;

	if (c->plen >= sizeof(c->path) - 1)
		return old;
	va_start(ap, fmt);
	n = vsnprintf(c->path + c->plen, sizeof(c->path) - c->plen, fmt, ap);
	va_end(ap);
	if (n > 0)
		c->plen += (size_t)n;
	if (c->plen >= sizeof(c->path))
		c->plen = sizeof(c->path) - 1;
	return old;
}

/* n bytes of a at the path's end, cut where the path is full (as
 * dec_path_push() cuts): a decode pushes a key or an index for each
 * field it enters, a million at 10,000 x 10, so these two do without
 * vsnprintf(). */
static void path_append(struct dctx *c, const char *a, size_t n)
{
	size_t room = sizeof(c->path) - 1 - c->plen;

	if (n > room)
		n = room;
	memcpy(c->path + c->plen, a, n);
	c->plen += n;
	c->path[c->plen] = '\0';
}

size_t dec_path_key(struct dctx *c, const char *key)
{
	size_t old = c->plen;

	if (c->plen >= sizeof(c->path) - 1)
		return old;
	if (c->plen)
		path_append(c, ".", 1);
	path_append(c, key, strlen(key));
	return old;
}

size_t dec_path_idx(struct dctx *c, size_t i)
{
	char b[24]; /* "[" 20 digits "]" */
	size_t at = sizeof(b), old = c->plen;

	if (c->plen >= sizeof(c->path) - 1)
		return old;
	b[--at] = ']';
	do
		b[--at] = (char)('0' + i % 10);
	while ((i /= 10) != 0);
	b[--at] = '[';
	path_append(c, b + at, sizeof(b) - at);
	return old;
}

void dec_path_pop(struct dctx *c, size_t old)
{
	c->plen = old;
	c->path[old] = '\0';
}

void dec_set_object(struct dctx *c, const char *kind, const char *ns, const char *name)
{
	if (ns && name)
		snprintf(c->object, sizeof(c->object), "%s%s%s/%s", kind ? kind : "",
			 kind ? " " : "", ns, name);
	else
		snprintf(c->object, sizeof(c->object), "%s%s%s", kind ? kind : "object",
			 c->where[0] ? " " : "", c->where);
}

/* Quote a string for a message: at most 64 bytes, non-printables escaped. */
const char *dec_quote(const char *s, char *buf, size_t len)
{
	size_t o = 0, i;

	buf[o++] = '"';
	for (i = 0; s[i] && o + 8 < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (i >= 64) {
			o += (size_t)snprintf(buf + o, len - o, "...");
			break;
		}
		if (ch == '"' || ch == '\\')
			o += (size_t)snprintf(buf + o, len - o, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", ch);
		else
			buf[o++] = (char)ch;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

void dec_fmt_number(double v, char *buf, size_t len)
{
	if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%g", v);
}

/* Describe a JSON value for a message. */
const char *dec_describe(const cJSON *j, char *buf, size_t len)
{
	if (cJSON_IsString(j))
		return dec_quote(j->valuestring, buf, len);
	if (cJSON_IsNumber(j)) {
		dec_fmt_number(j->valuedouble, buf, len);
		return buf;
	}
	if (cJSON_IsTrue(j))
		return "true";
	if (cJSON_IsFalse(j))
		return "false";
	if (cJSON_IsNull(j))
		return "null";
	if (cJSON_IsArray(j))
		return "an array";
	if (cJSON_IsObject(j))
		return "an object";
	return "an invalid value";
}

int dec_type_error(struct dctx *c, const cJSON *j, const char *expected)
{
	char buf[300];

	return dec_fail(c, "expected %s, got %s", expected, dec_describe(j, buf, sizeof(buf)));
}


/* --- NUL characters, which cJSON's C strings cannot hold --- */

bool dec_has_nul(const cJSON *j)
{
	return j && (j->type & DEC_NUL_VALUE);
}

/* Whether text can hold a NUL in a string at all (a raw byte or \u0000). */
static bool may_hold_nul(const char *text, size_t len)
{
	return memchr(text, '\0', len) || memmem(text, len, "u0000", 5);
}

struct nul_string {
	size_t ordinal; /* 1-based, in text order, keys and values alike */
	bool key;
};

struct nul_marker {
	const struct nul_string *v;
	size_t n, next;
	size_t seen;    /* strings visited so far */
};

static void mark_one(struct nul_marker *m, cJSON *node, bool key)
{
	m->seen++;
	if (m->next < m->n && m->v[m->next].ordinal == m->seen) {
		node->type |= key ? DEC_NUL_KEY : DEC_NUL_VALUE;
		m->next++;
	}
}

/* The tree's strings in text order: for each member its key, then its value. */
static void mark_tree(struct nul_marker *m, cJSON *node)
{
	cJSON *ch;

	if (cJSON_IsString(node))
		mark_one(m, node, false);
	if (!cJSON_IsArray(node) && !cJSON_IsObject(node))
		return;
	for (ch = node->child; ch; ch = ch->next) {
		if (cJSON_IsObject(node))
			mark_one(m, ch, true);
		mark_tree(m, ch);
	}
}

int dec_mark_nuls(cJSON *root, const char *text, size_t len, size_t *ret_key_off)
{
	_cleanup_free_ struct nul_string *v = NULL;
	size_t n = 0, cap = 0, ordinal = 0, i = 0, start = 0, first_key = SIZE_MAX;
	struct nul_marker m = { 0 };

	if (!may_hold_nul(text, len))
		return 0;
	while (i < len) {
		bool nul = false;
		size_t k;

		if (text[i] != '"') {
			i++;
			continue;
		}
		start = i++;
		ordinal++;
		while (i < len && text[i] != '"') {
			if (text[i] == '\0') {
				nul = true;
			} else if (text[i] == '\\') {
				if (i + 5 < len && text[i + 1] == 'u' && memcmp(text + i + 2, "0000", 4) == 0)
					nul = true;
				i++;
			}
			i++;
		}
		i++;
		if (!nul)
			continue;
		if (GROW(v, cap, n + 1) < 0)
			return -ENOMEM;
		for (k = i; k < len && text[k] && strchr(" \t\r\n", text[k]); k++)
			;
		v[n] = (struct nul_string){ ordinal, k < len && text[k] == ':' };
		if (v[n].key && first_key == SIZE_MAX)
			first_key = start;
		n++;
	}
	m.v = v;
	m.n = n;
	mark_tree(&m, root);
	if (first_key == SIZE_MAX)
		return 0;
	*ret_key_off = first_key;
	return 1;
}

size_t dec_depth_at(const char *text, size_t off)
{
	size_t depth = 0, i;
	bool in_str = false;

	for (i = 0; i < off; i++) {
		if (in_str) {
			if (text[i] == '\\')
				i++;
			else if (text[i] == '"')
				in_str = false;
		} else if (text[i] == '"') {
			in_str = true;
		} else if (text[i] == '[' || text[i] == '{') {
			depth++;
		} else if ((text[i] == ']' || text[i] == '}') && depth) {
			depth--;
		}
	}
	return depth;
}

/* --- JSON getters: null is absent; errors name the path --- */

/*
 * obj's member key with key added to the path, or NULL (the path as it
 * was) when absent; *ret_l is what leave() takes back.
 */
static const cJSON *enter(struct dctx *c, const cJSON *obj, const char *key, size_t *ret_l)
{
	const cJSON *j = dec_get(obj, key);

	if (j)
		*ret_l = dec_path_key(c, key);
	return j;
}

/* The path as before enter(); returns r. */
static int leave(struct dctx *c, size_t l, int r)
{
	dec_path_pop(c, l);
	return r;
}

/* Go's encoding/json, and so the API server: of duplicate keys the last wins. */
const cJSON *dec_get(const cJSON *obj, const char *key)
{
	const cJSON *j, *found = NULL;

	if (!obj)
		return NULL;
	cJSON_ArrayForEach(j, obj)
		if (j->string && streq(j->string, key))
			found = j;
	return cJSON_IsNull(found) ? NULL : found;
}

/* Go's encoding/json: keys match case-insensitively and the last one wins. */
const cJSON *dec_get_ci_raw(const cJSON *obj, const char *key)
{
	const cJSON *j, *found = NULL;

	cJSON_ArrayForEach(j, obj)
		if (j->string && strcasecmp(j->string, key) == 0)
			found = j;
	return found;
}

const cJSON *dec_get_ci(const cJSON *obj, const char *key)
{
	const cJSON *j = dec_get_ci_raw(obj, key);

	return cJSON_IsNull(j) ? NULL : j;
}

/* A string value j at the current path: type and DECODE_MAX_STRING. */
int dec_check_str(struct dctx *c, const cJSON *j, const char **ret)
{
	size_t n;

	if (!cJSON_IsString(j) || !j->valuestring)
		return dec_type_error(c, j, "a string");
	if (dec_has_nul(j))
		return dec_fail(c, "contains a NUL character (\\u0000)");
	n = strnlen(j->valuestring, DECODE_MAX_STRING + 1);
	if (n > DECODE_MAX_STRING)
		return dec_fail(c, "string longer than %d bytes", DECODE_MAX_STRING);
	*ret = j->valuestring;
	return 0;
}

/* *ret = string or NULL when absent. */
int dec_get_str(struct dctx *c, const cJSON *obj, const char *key, const char **ret)
{
	size_t l;
	const cJSON *j = enter(c, obj, key, &l);

	*ret = NULL;
	return j ? leave(c, l, dec_check_str(c, j, ret)) : 0;
}

int dec_check_object(struct dctx *c, const cJSON *j)
{
	return cJSON_IsObject(j) ? 0 : dec_type_error(c, j, "an object");
}

int dec_get_object(struct dctx *c, const cJSON *obj, const char *key, const cJSON **ret)
{
	size_t l;
	const cJSON *j = enter(c, obj, key, &l);
	int r;

	*ret = NULL;
	if (!j)
		return 0;
	r = leave(c, l, dec_check_object(c, j));
	if (r == 0)
		*ret = j;
	return r;
}

/* Array j at the current path with at most max entries; *n = its length. */
int dec_check_array(struct dctx *c, const cJSON *j, size_t max, size_t *n)
{
	const cJSON *e;
	size_t k = 0;

	if (!cJSON_IsArray(j))
		return dec_type_error(c, j, "an array");
	cJSON_ArrayForEach(e, j)
		if (++k > max)
			return dec_fail(c, "more than %zu entries", max);
	*n = k;
	return 0;
}

/* *ret = the array or NULL when absent, *n its length. */
int dec_get_array(struct dctx *c, const cJSON *obj, const char *key, size_t max,
		  const cJSON **ret, size_t *n)
{
	size_t l;
	const cJSON *j = enter(c, obj, key, &l);
	int r;

	*ret = NULL;
	*n = 0;
	if (!j)
		return 0;
	r = leave(c, l, dec_check_array(c, j, max, n));
	if (r == 0)
		*ret = j;
	return r;
}

int dec_each(struct dctx *c, const cJSON *obj, const char *key, size_t max, void **ret_v,
	     size_t sz, dec_entry_fn fn, void *ud)
{
	const cJSON *arr, *entry;
	size_t n, i = 0, l;
	int r;

	r = dec_get_array(c, obj, key, max, &arr, &n);
	if (r < 0 || n == 0)
		return r;
	if (ret_v) {
		*ret_v = calloc(n, sz);
		if (!*ret_v)
			return -ENOMEM;
	}
	l = dec_path_key(c, key);
	cJSON_ArrayForEach(entry, arr) {
		size_t l2 = dec_path_idx(c, i);

		r = fn(c, entry, i++, ud);
		dec_path_pop(c, l2);
		if (r < 0)
			break;
	}
	dec_path_pop(c, l);
	return r;
}

/* *ret = -1 absent, 0 false, 1 true. */
int dec_get_bool(struct dctx *c, const cJSON *obj, const char *key, int *ret)
{
	size_t l;
	const cJSON *j = enter(c, obj, key, &l);

	*ret = -1;
	if (!j)
		return 0;
	if (!cJSON_IsBool(j))
		return leave(c, l, dec_type_error(c, j, "true or false"));
	*ret = cJSON_IsTrue(j) ? 1 : 0;
	return leave(c, l, 0);
}

/* An integer j in min..max at the current path; `what` names it in errors. */
int dec_check_uint(struct dctx *c, const cJSON *j, uint32_t min, uint32_t max,
		   const char *what, uint32_t *ret)
{
	char buf[64];
	double v;

	if (!cJSON_IsNumber(j))
		return dec_type_error(c, j, "a number");
	v = j->valuedouble;
	if (!isfinite(v) || v != floor(v) || v < min || v > max) {
		dec_fmt_number(v, buf, sizeof(buf));
		return dec_fail(c, "%s is not a valid %s", buf, what);
	}
	*ret = (uint32_t)v;
	return 0;
}

/* *ret = value, or 0 when absent (0 itself is accepted only if min is 0). */
int dec_get_uint(struct dctx *c, const cJSON *obj, const char *key, uint32_t min,
		 uint32_t max, const char *what, uint32_t *ret)
{
	size_t l;
	const cJSON *j = enter(c, obj, key, &l);

	*ret = 0;
	return j ? leave(c, l, dec_check_uint(c, j, min, max, what, ret)) : 0;
}

/* Protocol at key; absent or "" = TCP. */
int dec_get_proto(struct dctx *c, const cJSON *obj, const char *key, uint8_t *ret)
{
	const char *s;
	char buf[300];
	int r;

	r = dec_get_str(c, obj, key, &s);
	if (r < 0)
		return r;
	if (!s || !*s) {
		*ret = PROTO_TCP;
		return 0;
	}
	*ret = proto_from_k8s(s);
	if (*ret)
		return 0;
	return dec_fail_at(c, key, "%s is not a valid protocol (TCP, UDP, SCTP)",
			   dec_quote(s, buf, sizeof(buf)));
}

int dec_check_name(struct dctx *c, const char *s, bool (*ok)(const char *), const char *what)
{
	char buf[300];

	if (ok(s))
		return 0;
	return dec_fail(c, "%s is not a valid %s", dec_quote(s, buf, sizeof(buf)), what);
}

/* String at key, validated by ok (skipped when ok is NULL), copied; NULL if absent. */
int dec_dup_str(struct dctx *c, const cJSON *obj, const char *key,
		bool (*ok)(const char *), const char *what, char **ret)
{
	size_t l;
	const cJSON *j = enter(c, obj, key, &l);
	const char *s;
	int r;

	*ret = NULL;
	if (!j)
		return 0;
	r = dec_check_str(c, j, &s);
	if (r == 0 && ok)
		r = dec_check_name(c, s, ok, what);
	if (leave(c, l, r) < 0)
		return r;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

/* IP string j at the current path. */
int dec_check_ip(struct dctx *c, const cJSON *j, struct ipaddr *ret)
{
	const char *s;
	char buf[300];
	int r;

	r = dec_check_str(c, j, &s);
	if (r < 0)
		return r;
	if (ipaddr_parse(s, ret) < 0)
		return dec_fail(c, "%s is not a valid IP address", dec_quote(s, buf, sizeof(buf)));
	return 0;
}

/* The addresses dec_get_ip_list() reads: dec_each() allocates a. */
struct ip_list {
	struct ipaddr *a;
	size_t n;
};

static int ip_entry(struct dctx *c, const cJSON *j, size_t i, void *ud)
{
	struct ip_list *l = ud;

	l->n = i + 1;
	return dec_check_ip(c, j, &l->a[i]);
}

/* An array of IP strings at key into a new array. */
int dec_get_ip_list(struct dctx *c, const cJSON *obj, const char *key, struct ipaddr **ret,
		    size_t *ret_n)
{
	struct ip_list l = { 0 };
	int r;

	r = dec_each(c, obj, key, DECODE_MAX_ADDRS, (void **)&l.a, sizeof(*l.a), ip_entry, &l);
	if (r < 0) {
		free(l.a);
		return r;
	}
	*ret = l.a;
	*ret_n = l.n;
	return 0;
}
