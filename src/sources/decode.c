/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * JSON -> struct service / struct epslice.  The cJSON tree lives only inside
 * decode_buffer()/decode_object(); every kept string is copied.
 *
 * Validation follows the API server's rules where kube-proxy relies on them
 * (ports, protocols, IPs, names): a file is not an API server, so an object
 * it would have rejected is rejected here, with one diag, and skipped.
 * Names are checked because they end up in iptables comments and chain-name
 * hashes.  JSON null means "absent" everywhere, as in Go.  Numbers must be
 * integral (80.0 is 80; cJSON does not keep the text).
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#include "sources/decode.h"
#include "sources/jsonarena.h"
#include "util.h"

#define LABEL_SERVICE_NAME "kubernetes.io/service-name"
#define LABEL_HEADLESS "service.kubernetes.io/headless"
#define LABEL_PROXY_NAME "service.kubernetes.io/service-proxy-name"
#define DEFAULT_AFFINITY_TIMEOUT 10800
#define MAX_AFFINITY_TIMEOUT 86400

struct dctx {
	const char *source;
	struct diag_list *diags;
	const char *where;   /* "items[3]" inside a List, "" otherwise */
	char object[512];    /* diag object label */
	char path[256];      /* diag field path */
	size_t plen;
};

/* --- diagnostics --- */

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
_printf_(2, 3) static int fail(struct dctx *c, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vreport(c, DIAG_ERROR, fmt, ap);
	va_end(ap);
	return r < 0 ? r : -EINVAL;
}

_printf_(3, 4) static int report(struct dctx *c, enum diag_level level, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vreport(c, level, fmt, ap);
	va_end(ap);
	return r;
}

_printf_(2, 3) static size_t path_push(struct dctx *c, const char *fmt, ...)
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

static size_t path_key(struct dctx *c, const char *key)
{
	return path_push(c, c->plen ? ".%s" : "%s", key);
}

static size_t path_idx(struct dctx *c, size_t i)
{
	return path_push(c, "[%zu]", i);
}

static void path_pop(struct dctx *c, size_t old)
{
	c->plen = old;
	c->path[old] = '\0';
}

static void set_object(struct dctx *c, const char *kind, const char *ns, const char *name)
{
	if (ns && name)
		snprintf(c->object, sizeof(c->object), "%s%s%s/%s", kind ? kind : "",
			 kind ? " " : "", ns, name);
	else
		snprintf(c->object, sizeof(c->object), "%s%s%s", kind ? kind : "object",
			 c->where[0] ? " " : "", c->where);
}

/* Quote a string for a message: at most 64 bytes, non-printables escaped. */
static const char *quote(const char *s, char *buf, size_t len)
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

static void fmt_number(double v, char *buf, size_t len)
{
	if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%g", v);
}

/* Describe a JSON value for a message. */
static const char *describe(const cJSON *j, char *buf, size_t len)
{
	if (cJSON_IsString(j))
		return quote(j->valuestring, buf, len);
	if (cJSON_IsNumber(j)) {
		fmt_number(j->valuedouble, buf, len);
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

static int type_error(struct dctx *c, const cJSON *j, const char *expected)
{
	char buf[300];

	return fail(c, "expected %s, got %s", expected, describe(j, buf, sizeof(buf)));
}

/* --- name rules (k8s.io/apimachinery/pkg/util/validation) --- */

static bool is_lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

static bool is_alnum(char ch)
{
	return is_lower_alnum(ch) || (ch >= 'A' && ch <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most max bytes */
static bool is_dns_label(const char *s, size_t max)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > max || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	for (i = 0; i < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

static bool is_dns1123_label(const char *s)
{
	return is_dns_label(s, 63);
}

/* A port name: a DNS label, or "" for an unnamed port (EndpointSlice ports
 * print their unnamed ports as "name": "", the API's pointer to ""). */
static bool is_port_name_or_empty(const char *s)
{
	return !*s || is_dns1123_label(s);
}

static bool is_dns1035_label(const char *s)
{
	return is_dns_label(s, 63) && s[0] >= 'a' && s[0] <= 'z';
}

static bool is_dns1123_subdomain(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > 253)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (i == 0 || !is_lower_alnum(s[i - 1]) || !is_lower_alnum(s[i + 1]))
				return false;
		} else if (!is_lower_alnum(s[i]) && s[i] != '-') {
			return false;
		}
	}
	return is_lower_alnum(s[0]) && is_lower_alnum(s[n - 1]);
}

/* (([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?, at most 63 bytes */
static bool is_label_value(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0)
		return true;
	if (n > 63 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return false;
	for (i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* IANA_SVC_NAME: 1-15 of [a-z0-9-], a letter somewhere, no "--", no edge '-' */
static bool is_port_name(const char *s)
{
	size_t n = strlen(s), i;
	bool letter = false;

	if (n == 0 || n > 15 || s[0] == '-' || s[n - 1] == '-' || strstr(s, "--"))
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] >= 'a' && s[i] <= 'z')
			letter = true;
		else if (!(s[i] >= '0' && s[i] <= '9') && s[i] != '-')
			return false;
	}
	return letter;
}

/* Legacy (2014) names had no rules; keep what is safe in comments. */
static bool is_legacy_name(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > 253 || !is_alnum(s[0]))
		return false;
	for (i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* --- JSON getters: null is absent; errors name the path --- */

static const cJSON *get(const cJSON *obj, const char *key)
{
	const cJSON *j = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;

	return cJSON_IsNull(j) ? NULL : j;
}

/* Go's encoding/json: keys match case-insensitively and the last one wins. */
static const cJSON *get_ci_raw(const cJSON *obj, const char *key)
{
	const cJSON *j, *found = NULL;

	cJSON_ArrayForEach(j, obj)
		if (j->string && strcasecmp(j->string, key) == 0)
			found = j;
	return found;
}

static const cJSON *get_ci(const cJSON *obj, const char *key)
{
	const cJSON *j = get_ci_raw(obj, key);

	return cJSON_IsNull(j) ? NULL : j;
}

/* A string value j at the current path: type and DECODE_MAX_STRING. */
static int check_str(struct dctx *c, const cJSON *j, const char **ret)
{
	size_t n;

	if (!cJSON_IsString(j) || !j->valuestring)
		return type_error(c, j, "a string");
	n = strnlen(j->valuestring, DECODE_MAX_STRING + 1);
	if (n > DECODE_MAX_STRING)
		return fail(c, "string longer than %d bytes", DECODE_MAX_STRING);
	*ret = j->valuestring;
	return 0;
}

/* *ret = string or NULL when absent. */
static int get_str(struct dctx *c, const cJSON *obj, const char *key, const char **ret)
{
	const cJSON *j = get(obj, key);
	size_t l;
	int r;

	*ret = NULL;
	if (!j)
		return 0;
	l = path_key(c, key);
	r = check_str(c, j, ret);
	path_pop(c, l);
	return r;
}

static int check_object(struct dctx *c, const cJSON *j)
{
	return cJSON_IsObject(j) ? 0 : type_error(c, j, "an object");
}

static int get_object(struct dctx *c, const cJSON *obj, const char *key, const cJSON **ret)
{
	const cJSON *j = get(obj, key);
	size_t l;
	int r = 0;

	*ret = NULL;
	if (!j)
		return 0;
	l = path_key(c, key);
	r = check_object(c, j);
	path_pop(c, l);
	if (r == 0)
		*ret = j;
	return r;
}

/* Array j at the current path with at most max entries; *n = its length. */
static int check_array(struct dctx *c, const cJSON *j, size_t max, size_t *n)
{
	const cJSON *e;
	size_t k = 0;

	if (!cJSON_IsArray(j))
		return type_error(c, j, "an array");
	cJSON_ArrayForEach(e, j)
		if (++k > max)
			return fail(c, "more than %zu entries", max);
	*n = k;
	return 0;
}

/* *ret = the array or NULL when absent, *n its length. */
static int get_array(struct dctx *c, const cJSON *obj, const char *key, size_t max,
		     const cJSON **ret, size_t *n)
{
	const cJSON *j = get(obj, key);
	size_t l;
	int r;

	*ret = NULL;
	*n = 0;
	if (!j)
		return 0;
	l = path_key(c, key);
	r = check_array(c, j, max, n);
	path_pop(c, l);
	if (r == 0)
		*ret = j;
	return r;
}

/* *ret = -1 absent, 0 false, 1 true. */
static int get_bool(struct dctx *c, const cJSON *obj, const char *key, int *ret)
{
	const cJSON *j = get(obj, key);
	size_t l;
	int r;

	*ret = -1;
	if (!j)
		return 0;
	if (cJSON_IsBool(j)) {
		*ret = cJSON_IsTrue(j) ? 1 : 0;
		return 0;
	}
	l = path_key(c, key);
	r = type_error(c, j, "true or false");
	path_pop(c, l);
	return r;
}

/* An integer j in min..max at the current path; `what` names it in errors. */
static int check_uint(struct dctx *c, const cJSON *j, uint32_t min, uint32_t max,
		      const char *what, uint32_t *ret)
{
	char buf[64];
	double v;

	if (!cJSON_IsNumber(j))
		return type_error(c, j, "a number");
	v = j->valuedouble;
	if (!isfinite(v) || v != floor(v) || v < min || v > max) {
		fmt_number(v, buf, sizeof(buf));
		return fail(c, "%s is not a valid %s", buf, what);
	}
	*ret = (uint32_t)v;
	return 0;
}

/* *ret = value, or 0 when absent (0 itself is accepted only if min is 0). */
static int get_uint(struct dctx *c, const cJSON *obj, const char *key, uint32_t min,
		    uint32_t max, const char *what, uint32_t *ret)
{
	const cJSON *j = get(obj, key);
	size_t l;
	int r;

	*ret = 0;
	if (!j)
		return 0;
	l = path_key(c, key);
	r = check_uint(c, j, min, max, what, ret);
	path_pop(c, l);
	return r;
}

/* Protocol at key; absent or "" = TCP. */
static int get_proto(struct dctx *c, const cJSON *obj, const char *key, uint8_t *ret)
{
	const char *s;
	char buf[300];
	size_t l;
	int r;

	r = get_str(c, obj, key, &s);
	if (r < 0)
		return r;
	if (!s || !*s) {
		*ret = PROTO_TCP;
		return 0;
	}
	*ret = proto_from_k8s(s);
	if (*ret)
		return 0;
	l = path_key(c, key);
	r = fail(c, "%s is not a valid protocol (TCP, UDP, SCTP)", quote(s, buf, sizeof(buf)));
	path_pop(c, l);
	return r;
}

static int check_name(struct dctx *c, const char *s, bool (*ok)(const char *), const char *what)
{
	char buf[300];

	if (ok(s))
		return 0;
	return fail(c, "%s is not a valid %s", quote(s, buf, sizeof(buf)), what);
}

/* String at key, validated by ok (skipped when ok is NULL), copied; NULL if absent. */
static int dup_str(struct dctx *c, const cJSON *obj, const char *key,
		   bool (*ok)(const char *), const char *what, char **ret)
{
	const char *s;
	size_t l;
	int r;

	*ret = NULL;
	r = get_str(c, obj, key, &s);
	if (r < 0 || !s)
		return r;
	if (ok) {
		l = path_key(c, key);
		r = check_name(c, s, ok, what);
		path_pop(c, l);
		if (r < 0)
			return r;
	}
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

/* IP string j at the current path. */
static int check_ip(struct dctx *c, const cJSON *j, struct ipaddr *ret)
{
	const char *s;
	char buf[300];
	int r;

	r = check_str(c, j, &s);
	if (r < 0)
		return r;
	if (ipaddr_parse(s, ret) < 0)
		return fail(c, "%s is not a valid IP address", quote(s, buf, sizeof(buf)));
	return 0;
}

/* An array of IP strings at key into a new array. */
static int get_ip_list(struct dctx *c, const cJSON *obj, const char *key, struct ipaddr **ret,
		       size_t *ret_n)
{
	_cleanup_free_ struct ipaddr *a = NULL;
	const cJSON *arr, *e;
	size_t n, i = 0, l;
	int r;

	r = get_array(c, obj, key, DECODE_MAX_ADDRS, &arr, &n);
	if (r < 0)
		return r;
	if (n) {
		a = calloc(n, sizeof(*a));
		if (!a)
			return -ENOMEM;
	}
	l = path_key(c, key);
	cJSON_ArrayForEach(e, arr) {
		size_t l2 = path_idx(c, i);

		r = check_ip(c, e, &a[i]);
		path_pop(c, l2);
		if (r < 0)
			break;
		i++;
	}
	path_pop(c, l);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(a);
	*ret_n = n;
	return 0;
}

/* --- output --- */

static int add_service(struct decoded *out, struct service *s)
{
	if (GROW(out->services, out->cap_services, out->n_services + 1) < 0) {
		service_unref(s);
		return -ENOMEM;
	}
	out->services[out->n_services++] = s;
	return 0;
}

static int add_slice(struct decoded *out, struct epslice *e)
{
	if (GROW(out->slices, out->cap_slices, out->n_slices + 1) < 0) {
		epslice_unref(e);
		return -ENOMEM;
	}
	out->slices[out->n_slices++] = e;
	return 0;
}

void decoded_done(struct decoded *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n_services; i++)
		service_unref(d->services[i]);
	for (i = 0; i < d->n_slices; i++)
		epslice_unref(d->slices[i]);
	free(d->services);
	free(d->slices);
	*d = (struct decoded){ 0 };
}

static void service_unrefp(struct service **s)
{
	service_unref(*s);
}

static void epslice_unrefp(struct epslice **e)
{
	epslice_unref(*e);
}

static struct service *service_alloc(void)
{
	struct service *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->refcnt = 1;
	s->affinity_timeout = DEFAULT_AFFINITY_TIMEOUT;
	return s;
}

static struct epslice *epslice_alloc(enum item_origin origin)
{
	struct epslice *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->refcnt = 1;
	e->origin = origin;
	return e;
}

/* --- metadata --- */

struct meta {
	const char *ns;
	const char *name;
	const cJSON *labels; /* object or NULL */
};

/*
 * metadata.namespace / name (falling back to key_ns / key_name, then
 * "default" for the namespace), validated; sets the diag object label.
 */
static int decode_meta(struct dctx *c, const cJSON *j, const char *kind, const char *key_ns,
		       const char *key_name, bool (*name_ok)(const char *), const char *name_what,
		       struct meta *m)
{
	const cJSON *md;
	size_t l;
	int r;

	*m = (struct meta){ 0 };
	set_object(c, kind, NULL, NULL);
	r = get_object(c, j, "metadata", &md);
	if (r < 0)
		return r;
	l = path_key(c, "metadata");
	r = get_str(c, md, "namespace", &m->ns);
	if (r == 0)
		r = get_str(c, md, "name", &m->name);
	if (r == 0)
		r = get_object(c, md, "labels", &m->labels);
	if (r < 0)
		goto out;
	if (!m->ns || !*m->ns)
		m->ns = key_ns && *key_ns ? key_ns : "default";
	if (!m->name || !*m->name)
		m->name = key_name && *key_name ? key_name : NULL;
	path_key(c, "name");
	if (!m->name) {
		r = fail(c, "missing");
		goto out;
	}
	r = check_name(c, m->name, name_ok, name_what);
	if (r < 0)
		goto out;
	path_pop(c, l);
	path_key(c, "metadata.namespace");
	r = check_name(c, m->ns, is_dns1123_label, "namespace");
	if (r < 0)
		goto out;
	/* A Service is named plainly, the endpoint kinds with their kind. */
	set_object(c, streq(kind, "Service") ? NULL : kind, m->ns, m->name);
	path_pop(c, l);
	path_key(c, "metadata.name");
	if (key_name && *key_name && !streq(key_name, m->name))
		r = report(c, DIAG_WARNING, "name '%s' differs from the key's '%s'; using '%s'",
			   m->name, key_name, m->name);
out:
	path_pop(c, l);
	return r;
}

/* Label `key` as a validated label value; NULL when absent. */
static int get_label(struct dctx *c, const cJSON *labels, const char *key, const char **ret)
{
	const cJSON *j = get(labels, key);
	size_t l;
	int r;

	*ret = NULL;
	if (!j)
		return 0;
	l = path_push(c, "metadata.labels[\"%s\"]", key);
	r = check_str(c, j, ret);
	if (r == 0)
		r = check_name(c, *ret, is_label_value, "label value");
	path_pop(c, l);
	return r;
}

/* --- Service (v1) --- */

static int decode_service_port(struct dctx *c, const cJSON *j, struct service_port_spec *p)
{
	const cJSON *tp;
	uint32_t v;
	char buf[16];
	int r;

	r = check_object(c, j);
	if (r < 0)
		return r;
	r = dup_str(c, j, "name", is_port_name_or_empty, "port name", &p->name);
	if (r < 0)
		return r;
	if (!p->name) {
		p->name = strdup("");
		if (!p->name)
			return -ENOMEM;
	}
	r = get_proto(c, j, "protocol", &p->protocol);
	if (r < 0)
		return r;
	if (!get(j, "port")) {
		size_t l = path_key(c, "port");

		r = fail(c, "missing");
		path_pop(c, l);
		return r;
	}
	r = get_uint(c, j, "port", 1, 65535, "port", &v);
	if (r < 0)
		return r;
	p->port = (uint16_t)v;
	r = get_uint(c, j, "nodePort", 0, 65535, "node port", &v);
	if (r < 0)
		return r;
	p->node_port = (uint16_t)v;

	tp = get(j, "targetPort");
	if (cJSON_IsString(tp) && tp->valuestring && *tp->valuestring) {
		size_t l = path_key(c, "targetPort");

		r = check_name(c, tp->valuestring, is_port_name, "port name");
		path_pop(c, l);
		if (r < 0)
			return r;
		p->target_port = strdup(tp->valuestring);
	} else {
		if (tp && !cJSON_IsString(tp)) {
			size_t l = path_key(c, "targetPort");

			r = cJSON_IsNumber(tp) ? check_uint(c, tp, 0, 65535, "port", &v)
					       : type_error(c, tp, "a number or a string");
			path_pop(c, l);
			if (r < 0)
				return r;
		} else {
			v = 0;
		}
		/* The API server defaults an unset (or 0) targetPort to port. */
		snprintf(buf, sizeof(buf), "%u", v ? v : p->port);
		p->target_port = strdup(buf);
	}
	if (!p->target_port)
		return -ENOMEM;
	return 0;
}

static int decode_service_ports(struct dctx *c, const cJSON *spec, struct service *s)
{
	const cJSON *arr, *e;
	size_t n, i = 0, k, l;
	int r;

	r = get_array(c, spec, "ports", DECODE_MAX_PORTS, &arr, &n);
	if (r < 0 || n == 0)
		return r;
	s->ports = calloc(n, sizeof(*s->ports));
	if (!s->ports)
		return -ENOMEM;
	l = path_key(c, "ports");
	cJSON_ArrayForEach(e, arr) {
		struct service_port_spec *p = &s->ports[i];
		size_t l2 = path_idx(c, i);

		s->n_ports = i + 1;
		r = decode_service_port(c, e, p);
		for (k = 0; r == 0 && k < i; k++) {
			const struct service_port_spec *q = &s->ports[k];
			size_t l3;

			if (q->protocol == p->protocol && streq(q->name, p->name)) {
				l3 = path_key(c, "name");
				r = fail(c, "duplicate port name \"%s\" for %s (also spec.ports[%zu])",
					 p->name, proto_name(p->protocol), k);
				path_pop(c, l3);
			} else if (q->protocol == p->protocol && q->port == p->port) {
				l3 = path_key(c, "port");
				r = fail(c, "duplicate port %u/%s (also spec.ports[%zu])", p->port,
					 proto_name(p->protocol), k);
				path_pop(c, l3);
			}
		}
		path_pop(c, l2);
		if (r < 0)
			break;
		i++;
	}
	path_pop(c, l);
	return r;
}

/* clusterIP / clusterIPs: "None" = headless, "" = none; clusterIPs wins
 * but must start with clusterIP when both are set, as the API requires. */
static int decode_cluster_ips(struct dctx *c, const cJSON *spec, struct service *s)
{
	const char *cip, *str;
	const cJSON *arr, *e;
	struct ipaddr a;
	char buf[300];
	size_t n, i = 0, l;
	int r;

	r = get_str(c, spec, "clusterIP", &cip);
	if (r < 0)
		return r;
	r = get_array(c, spec, "clusterIPs", 2, &arr, &n);
	if (r < 0)
		return r;
	if (n == 0) {
		if (!cip || !*cip)
			return 0;
		if (streq(cip, "None")) {
			s->headless = true;
			return 0;
		}
		l = path_key(c, "clusterIP");
		r = ipaddr_parse(cip, &a) < 0
			    ? fail(c, "%s is not a valid IP address", quote(cip, buf, sizeof(buf)))
			    : 0;
		path_pop(c, l);
		if (r < 0)
			return r;
		s->cluster_ips = malloc(sizeof(*s->cluster_ips));
		if (!s->cluster_ips)
			return -ENOMEM;
		s->cluster_ips[0] = a;
		s->n_cluster_ips = 1;
		return 0;
	}

	s->cluster_ips = calloc(n, sizeof(*s->cluster_ips));
	if (!s->cluster_ips)
		return -ENOMEM;
	l = path_key(c, "clusterIPs");
	cJSON_ArrayForEach(e, arr) {
		size_t l2 = path_idx(c, i);

		r = check_str(c, e, &str);
		if (r == 0 && streq(str, "None")) {
			if (n != 1)
				r = fail(c, "\"None\" must be the only entry");
			else
				s->headless = true;
		} else if (r == 0) {
			r = check_ip(c, e, &s->cluster_ips[i]);
			if (r == 0 && i == 1 &&
			    s->cluster_ips[0].family == s->cluster_ips[1].family)
				r = fail(c, "a second cluster IP of the same family");
			if (r == 0)
				s->n_cluster_ips = i + 1;
		}
		if (r == 0 && i == 0 && cip && *cip &&
		    (s->headless ? !streq(cip, "None")
				 : ipaddr_parse(cip, &a) < 0 || ipaddr_cmp(&a, &s->cluster_ips[0])))
			r = fail(c, "%s does not match spec.clusterIP %s", quote(str, buf, 150),
				 quote(cip, buf + 150, 150));
		path_pop(c, l2);
		if (r < 0)
			break;
		i++;
	}
	path_pop(c, l);
	return r;
}

static int decode_policy(struct dctx *c, const cJSON *spec, const char *key, bool global_ok,
			 enum traffic_policy *ret)
{
	const char *v;
	char buf[300];
	size_t l;
	int r;

	*ret = POLICY_CLUSTER;
	r = get_str(c, spec, key, &v);
	if (r < 0 || !v || !*v || streq(v, "Cluster"))
		return r;
	if (streq(v, "Local")) {
		*ret = POLICY_LOCAL;
		return 0;
	}
	/* "Global" is the pre-1.15 name of Cluster, still accepted by kube-proxy. */
	if (global_ok && streq(v, "Global"))
		return 0;
	l = path_key(c, key);
	r = fail(c, "%s is not a valid policy (Cluster, Local)", quote(v, buf, sizeof(buf)));
	path_pop(c, l);
	return r;
}

static int decode_affinity(struct dctx *c, const cJSON *spec, struct service *s)
{
	const cJSON *cfg, *cip;
	const char *v;
	char buf[300];
	uint32_t t;
	size_t l;
	int r;

	r = get_str(c, spec, "sessionAffinity", &v);
	if (r < 0 || !v || !*v || streq(v, "None"))
		return r;
	if (!streq(v, "ClientIP")) {
		l = path_key(c, "sessionAffinity");
		r = fail(c, "%s is not a valid session affinity (None, ClientIP)",
			 quote(v, buf, sizeof(buf)));
		path_pop(c, l);
		return r;
	}
	s->affinity_client_ip = true;
	r = get_object(c, spec, "sessionAffinityConfig", &cfg);
	if (r < 0 || !cfg)
		return r;
	l = path_key(c, "sessionAffinityConfig");
	r = get_object(c, cfg, "clientIP", &cip);
	if (r == 0 && cip) {
		size_t l2 = path_key(c, "clientIP");

		r = get_uint(c, cip, "timeoutSeconds", 1, MAX_AFFINITY_TIMEOUT,
			     "timeout (1-86400 seconds)", &t);
		if (r == 0 && t)
			s->affinity_timeout = t;
		path_pop(c, l2);
	}
	path_pop(c, l);
	return r;
}

static int decode_lb_status(struct dctx *c, const cJSON *j, struct service *s)
{
	const cJSON *status, *lb, *arr, *e;
	size_t n, i = 0, l;
	int r;

	r = get_object(c, j, "status", &status);
	if (r < 0 || !status)
		return r;
	l = path_key(c, "status");
	r = get_object(c, status, "loadBalancer", &lb);
	if (r < 0 || !lb)
		goto out;
	path_key(c, "loadBalancer");
	r = get_array(c, lb, "ingress", DECODE_MAX_ADDRS, &arr, &n);
	if (r < 0 || n == 0)
		goto out;
	s->lb_ingress = calloc(n, sizeof(*s->lb_ingress));
	if (!s->lb_ingress) {
		r = -ENOMEM;
		goto out;
	}
	path_key(c, "ingress");
	cJSON_ArrayForEach(e, arr) {
		struct lb_ingress *in = &s->lb_ingress[s->n_lb_ingress];
		size_t l2 = path_idx(c, i++);
		const cJSON *ip;
		const char *mode;
		char buf[300];

		r = check_object(c, e);
		if (r == 0)
			r = get_str(c, e, "ipMode", &mode);
		if (r == 0 && mode && *mode && !streq(mode, "VIP") && !streq(mode, "Proxy")) {
			size_t l3 = path_key(c, "ipMode");

			r = fail(c, "%s is not a valid ipMode (VIP, Proxy)",
				 quote(mode, buf, sizeof(buf)));
			path_pop(c, l3);
		}
		ip = get(e, "ip");
		/* Hostname-only ingress entries program nothing in iptables mode. */
		if (r == 0 && ip) {
			size_t l3 = path_key(c, "ip");

			r = check_ip(c, ip, &in->ip);
			path_pop(c, l3);
			if (r == 0) {
				in->ipmode_proxy = mode && streq(mode, "Proxy");
				s->n_lb_ingress++;
			}
		}
		path_pop(c, l2);
		if (r < 0)
			break;
	}
out:
	path_pop(c, l);
	return r;
}

static int decode_source_ranges(struct dctx *c, const cJSON *spec, struct service *s)
{
	const cJSON *arr, *e;
	size_t n, i = 0, l;
	int r;

	r = get_array(c, spec, "loadBalancerSourceRanges", DECODE_MAX_ADDRS, &arr, &n);
	if (r < 0 || n == 0)
		return r;
	s->lb_source_ranges = calloc(n, sizeof(*s->lb_source_ranges));
	if (!s->lb_source_ranges)
		return -ENOMEM;
	l = path_key(c, "loadBalancerSourceRanges");
	cJSON_ArrayForEach(e, arr) {
		size_t l2 = path_idx(c, i);
		const char *str;
		char buf[300];

		r = check_str(c, e, &str);
		if (r == 0 && ipnet_parse(str, &s->lb_source_ranges[i]) < 0)
			r = fail(c, "%s is not a valid CIDR", quote(str, buf, sizeof(buf)));
		path_pop(c, l2);
		if (r < 0)
			break;
		s->n_lb_source_ranges = ++i;
	}
	path_pop(c, l);
	return r;
}

static int decode_service_type(struct dctx *c, const cJSON *spec, enum svc_type *ret)
{
	static const struct {
		const char *name;
		enum svc_type type;
	} types[] = {
		{ "ClusterIP", SVC_CLUSTER_IP },
		{ "NodePort", SVC_NODE_PORT },
		{ "LoadBalancer", SVC_LOAD_BALANCER },
		{ "ExternalName", SVC_EXTERNAL_NAME },
	};
	const char *v;
	char buf[300];
	size_t i, l;
	int r;

	*ret = SVC_CLUSTER_IP;
	r = get_str(c, spec, "type", &v);
	if (r < 0 || !v || !*v)
		return r;
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		if (streq(v, types[i].name)) {
			*ret = types[i].type;
			return 0;
		}
	}
	l = path_key(c, "type");
	r = fail(c, "%s is not a valid service type (ClusterIP, NodePort, LoadBalancer, "
		 "ExternalName)", quote(v, buf, sizeof(buf)));
	path_pop(c, l);
	return r;
}

static int decode_service(struct dctx *c, const cJSON *j, const char *key_ns,
			  const char *key_name, struct decoded *out)
{
	_cleanup_(service_unrefp) struct service *s = NULL;
	const char *headless, *proxy;
	const cJSON *spec;
	struct meta m;
	uint32_t v;
	size_t l, i;
	int r;

	r = decode_meta(c, j, "Service", key_ns, key_name, is_dns1035_label, "service name", &m);
	if (r < 0)
		return r;
	r = get_label(c, m.labels, LABEL_HEADLESS, &headless);
	if (r < 0)
		return r;
	r = get_label(c, m.labels, LABEL_PROXY_NAME, &proxy);
	if (r < 0)
		return r;

	s = service_alloc();
	if (!s)
		return -ENOMEM;
	s->origin = ORIGIN_K8S;
	s->ns = strdup(m.ns);
	s->name = strdup(m.name);
	if (!s->ns || !s->name)
		return -ENOMEM;
	s->headless = headless != NULL;
	if (proxy) {
		s->proxy_name = strdup(proxy);
		if (!s->proxy_name)
			return -ENOMEM;
	}

	r = get_object(c, j, "spec", &spec);
	if (r < 0)
		return r;
	l = path_key(c, "spec");
	r = decode_service_type(c, spec, &s->type);
	if (r == 0)
		r = decode_cluster_ips(c, spec, s);
	if (r == 0)
		r = decode_service_ports(c, spec, s);
	if (r == 0)
		r = get_ip_list(c, spec, "externalIPs", &s->external_ips, &s->n_external_ips);
	if (r == 0)
		r = decode_source_ranges(c, spec, s);
	if (r == 0)
		r = decode_affinity(c, spec, s);
	if (r == 0)
		r = decode_policy(c, spec, "externalTrafficPolicy", true, &s->ext_policy);
	if (r == 0)
		r = decode_policy(c, spec, "internalTrafficPolicy", false, &s->int_policy);
	if (r == 0)
		r = get_uint(c, spec, "healthCheckNodePort", 0, 65535, "node port", &v);
	if (r == 0)
		s->health_check_node_port = (uint16_t)v;
	path_pop(c, l);
	if (r < 0)
		return r;
	r = decode_lb_status(c, j, s);
	if (r < 0)
		return r;

	/* The API server refuses node ports on ClusterIP services; kube-proxy
	 * would never see one, so do not program one. */
	if (s->type == SVC_CLUSTER_IP) {
		for (i = 0; i < s->n_ports; i++) {
			if (!s->ports[i].node_port)
				continue;
			l = path_push(c, "spec.ports[%zu].nodePort", i);
			r = report(c, DIAG_WARNING, "ignored for a service of type ClusterIP");
			path_pop(c, l);
			if (r < 0)
				return r;
			s->ports[i].node_port = 0;
		}
	}
	return add_service(out, TAKE_PTR(s));
}

/* --- EndpointSlice (discovery.k8s.io/v1) --- */

static int decode_slice_port(struct dctx *c, const cJSON *j, struct epslice *e, bool *skip)
{
	struct epslice_port *p = &e->ports[e->n_ports];
	const cJSON *port;
	uint32_t v;
	size_t k;
	int r;

	*skip = false;
	r = check_object(c, j);
	if (r < 0)
		return r;
	port = get(j, "port");
	if (!port) {
		/* A nil port means "all ports": nothing kube-proxy can program. */
		*skip = true;
		return report(c, DIAG_NOTE, "no port number; ignored");
	}
	r = get_uint(c, j, "port", 1, 65535, "port", &v);
	if (r < 0)
		return r;
	r = get_proto(c, j, "protocol", &p->protocol);
	if (r < 0)
		return r;
	r = dup_str(c, j, "name", is_port_name_or_empty, "port name", &p->name);
	if (r < 0)
		return r;
	if (!p->name) {
		p->name = strdup("");
		if (!p->name)
			return -ENOMEM;
	}
	p->port = (uint16_t)v;
	e->n_ports++;
	for (k = 0; k + 1 < e->n_ports; k++) {
		if (streq(e->ports[k].name, p->name)) {
			size_t l = path_key(c, "name");

			r = fail(c, "duplicate port name \"%s\"", p->name);
			path_pop(c, l);
			return r;
		}
	}
	return 0;
}

static int decode_hints(struct dctx *c, const cJSON *j, struct epslice_endpoint *ep)
{
	const cJSON *hints, *arr, *z;
	size_t n, i = 0, l;
	int r;

	r = get_object(c, j, "hints", &hints);
	if (r < 0 || !hints)
		return r;
	ep->has_hints = true;
	l = path_key(c, "hints");
	r = get_array(c, hints, "forZones", DECODE_MAX_ADDRS, &arr, &n);
	if (r < 0 || n == 0)
		goto out;
	ep->hint_zones = calloc(n, sizeof(*ep->hint_zones));
	if (!ep->hint_zones) {
		r = -ENOMEM;
		goto out;
	}
	path_key(c, "forZones");
	cJSON_ArrayForEach(z, arr) {
		size_t l2 = path_idx(c, i++);
		char *name = NULL;

		r = check_object(c, z);
		if (r == 0)
			r = dup_str(c, z, "name", is_label_value, "zone", &name);
		if (r == 0 && name)
			ep->hint_zones[ep->n_hint_zones++] = name;
		path_pop(c, l2);
		if (r < 0)
			break;
	}
out:
	path_pop(c, l);
	return r;
}

static int decode_slice_endpoint(struct dctx *c, const cJSON *j, struct epslice *e)
{
	struct epslice_endpoint *ep = &e->endpoints[e->n_endpoints];
	const cJSON *addrs, *cond, *first;
	int ready, serving, terminating;
	char buf[64];
	size_t n, l;
	int r;

	r = check_object(c, j);
	if (r < 0)
		return r;
	r = get_array(c, j, "addresses", 100, &addrs, &n);
	if (r < 0)
		return r;
	l = path_key(c, "addresses");
	if (n == 0) {
		r = fail(c, "missing (at least one address is required)");
		path_pop(c, l);
		return r;
	}
	/* kube-proxy uses only the first address; the API makes the rest
	 * duplicates of it. */
	first = cJSON_GetArrayItem(addrs, 0);
	path_idx(c, 0);
	r = check_ip(c, first, &ep->addr);
	if (r == 0 && ep->addr.family != e->family)
		r = fail(c, "%s does not match addressType %s",
			 ipaddr_fmt(&ep->addr, buf, sizeof(buf)),
			 e->family == AF_INET ? "IPv4" : "IPv6");
	path_pop(c, l);
	if (r < 0)
		return r;
	e->n_endpoints++;

	r = get_object(c, j, "conditions", &cond);
	if (r < 0)
		return r;
	l = path_key(c, "conditions");
	r = get_bool(c, cond, "ready", &ready);
	if (r == 0)
		r = get_bool(c, cond, "serving", &serving);
	if (r == 0)
		r = get_bool(c, cond, "terminating", &terminating);
	path_pop(c, l);
	if (r < 0)
		return r;
	/* API semantics: nil ready means ready, nil serving means "as ready",
	 * nil terminating means not terminating. */
	ep->ready = ready != 0;
	ep->serving = serving < 0 ? ep->ready : serving == 1;
	ep->terminating = terminating == 1;

	r = dup_str(c, j, "nodeName", is_dns1123_subdomain, "node name", &ep->node_name);
	if (r == 0)
		r = dup_str(c, j, "zone", is_label_value, "zone", &ep->zone);
	if (r == 0)
		r = decode_hints(c, j, ep);
	return r;
}

static int decode_endpointslice(struct dctx *c, const cJSON *j, const char *key_ns,
				const char *key_name, struct decoded *out)
{
	_cleanup_(epslice_unrefp) struct epslice *e = NULL;
	const cJSON *arr, *item;
	const char *svc, *at;
	char buf[300];
	struct meta m;
	size_t n, i, l;
	int r;

	r = decode_meta(c, j, "EndpointSlice", key_ns, key_name, is_dns1123_subdomain,
			"EndpointSlice name", &m);
	if (r < 0)
		return r;
	svc = NULL;
	if (m.labels) {
		r = get_label(c, m.labels, LABEL_SERVICE_NAME, &svc);
		if (r < 0)
			return r;
	}
	if (!svc || !*svc) {
		l = path_key(c, "metadata.labels");
		r = fail(c, "no %s label: the slice belongs to no service", LABEL_SERVICE_NAME);
		path_pop(c, l);
		return r;
	}
	l = path_push(c, "metadata.labels[\"%s\"]", LABEL_SERVICE_NAME);
	r = check_name(c, svc, is_dns1035_label, "service name");
	path_pop(c, l);
	if (r < 0)
		return r;

	e = epslice_alloc(ORIGIN_K8S);
	if (!e)
		return -ENOMEM;
	r = get_str(c, j, "addressType", &at);
	if (r < 0)
		return r;
	if (at && streq(at, "IPv4")) {
		e->family = AF_INET;
	} else if (at && streq(at, "IPv6")) {
		e->family = AF_INET6;
	} else if (at && streq(at, "FQDN")) {
		return report(c, DIAG_NOTE, "addressType FQDN is not used by kube-proxy; ignored");
	} else {
		l = path_key(c, "addressType");
		r = at ? fail(c, "%s is not a valid addressType (IPv4, IPv6, FQDN)",
			      quote(at, buf, sizeof(buf)))
		       : fail(c, "missing");
		path_pop(c, l);
		return r;
	}
	e->ns = strdup(m.ns);
	e->name = strdup(m.name);
	e->service_name = strdup(svc);
	if (!e->ns || !e->name || !e->service_name)
		return -ENOMEM;

	r = get_array(c, j, "ports", DECODE_MAX_PORTS, &arr, &n);
	if (r < 0)
		return r;
	if (n) {
		e->ports = calloc(n, sizeof(*e->ports));
		if (!e->ports)
			return -ENOMEM;
	}
	l = path_key(c, "ports");
	i = 0;
	cJSON_ArrayForEach(item, arr) {
		size_t l2 = path_idx(c, i++);
		bool skip;

		r = decode_slice_port(c, item, e, &skip);
		path_pop(c, l2);
		if (r < 0)
			break;
	}
	path_pop(c, l);
	if (r < 0)
		return r;

	r = get_array(c, j, "endpoints", DECODE_MAX_ENDPOINTS, &arr, &n);
	if (r < 0)
		return r;
	if (n) {
		e->endpoints = calloc(n, sizeof(*e->endpoints));
		if (!e->endpoints)
			return -ENOMEM;
	}
	l = path_key(c, "endpoints");
	i = 0;
	cJSON_ArrayForEach(item, arr) {
		size_t l2 = path_idx(c, i++);

		r = decode_slice_endpoint(c, item, e);
		path_pop(c, l2);
		if (r < 0)
			break;
	}
	path_pop(c, l);
	if (r < 0)
		return r;
	return add_slice(out, TAKE_PTR(e));
}

/* --- Endpoints (v1) and the original format: endpoint groups --- */

/*
 * An epslice's ports apply to every endpoint in it, so endpoints whose port
 * sets differ go to different epslices.  Both a v1 Endpoints object (its
 * subsets) and an original-format endpoint list ("ip:port" strings) are
 * grouped by (port set, address family): the first group is named like the
 * service, the k-th further group "<service>#k" ('#' cannot occur in a
 * Kubernetes name, so these never collide with real slice names).
 */
struct group {
	struct epslice *e; /* ports sorted; endpoints appended */
	size_t cap_endpoints;
};

struct groups {
	struct group *g;
	size_t n, cap;
};

static void groups_done(struct groups *gs)
{
	size_t i;

	for (i = 0; i < gs->n; i++)
		epslice_unref(gs->g[i].e);
	free(gs->g);
	*gs = (struct groups){ 0 };
}

static int port_cmp(const void *a, const void *b)
{
	const struct epslice_port *x = a, *y = b;
	int r = strcmp(x->name, y->name);

	if (r)
		return r;
	if (x->protocol != y->protocol)
		return x->protocol < y->protocol ? -1 : 1;
	return x->port < y->port ? -1 : x->port > y->port;
}

static bool ports_same(const struct epslice *e, const struct epslice_port *p, size_t n)
{
	size_t i;

	if (e->n_ports != n)
		return false;
	for (i = 0; i < n; i++)
		if (port_cmp(&e->ports[i], &p[i]) != 0)
			return false;
	return true;
}

/* The group for (ports, family), created if needed.  ports must be sorted;
 * their names are copied. */
static int group_get(struct groups *gs, enum item_origin origin, const char *ns,
		     const char *svc, const struct epslice_port *ports, size_t n_ports,
		     uint8_t family, struct group **ret)
{
	struct epslice *e;
	struct group *g;
	char name[300];
	size_t i;

	for (i = 0; i < gs->n; i++) {
		if (gs->g[i].e->family == family && ports_same(gs->g[i].e, ports, n_ports)) {
			*ret = &gs->g[i];
			return 0;
		}
	}
	if (GROW(gs->g, gs->cap, gs->n + 1) < 0)
		return -ENOMEM;
	e = epslice_alloc(origin);
	if (!e)
		return -ENOMEM;
	g = &gs->g[gs->n++];
	*g = (struct group){ .e = e };
	if (gs->n == 1)
		snprintf(name, sizeof(name), "%s", svc);
	else
		snprintf(name, sizeof(name), "%s#%zu", svc, gs->n - 1);
	e->family = family;
	e->ns = strdup(ns);
	e->name = strdup(name);
	e->service_name = strdup(svc);
	if (!e->ns || !e->name || !e->service_name)
		return -ENOMEM;
	if (n_ports) {
		e->ports = calloc(n_ports, sizeof(*e->ports));
		if (!e->ports)
			return -ENOMEM;
	}
	for (i = 0; i < n_ports; i++) {
		e->ports[i] = ports[i];
		e->ports[i].name = strdup(ports[i].name);
		if (!e->ports[i].name)
			return -ENOMEM;
		e->n_ports = i + 1;
	}
	*ret = g;
	return 0;
}

/* Append an endpoint (strings are taken over by the group). */
static int group_add(struct group *g, struct epslice_endpoint *ep)
{
	struct epslice *e = g->e;

	if (GROW(e->endpoints, g->cap_endpoints, e->n_endpoints + 1) < 0)
		return -ENOMEM;
	e->endpoints[e->n_endpoints++] = *ep;
	*ep = (struct epslice_endpoint){ 0 };
	return 0;
}

/* Hand the groups to out; with none, one empty epslice (the service has an
 * endpoints object, with no endpoints). */
static int groups_emit(struct groups *gs, enum item_origin origin, const char *ns,
		       const char *svc, struct decoded *out)
{
	struct group *g;
	size_t i;
	int r;

	if (gs->n == 0) {
		r = group_get(gs, origin, ns, svc, NULL, 0, AF_INET, &g);
		if (r < 0)
			return r;
	}
	for (i = 0; i < gs->n; i++) {
		r = add_slice(out, gs->g[i].e);
		gs->g[i].e = NULL;
		if (r < 0)
			return r;
	}
	gs->n = 0;
	return 0;
}

static void ports_done(struct epslice_port *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(p[i].name);
	free(p);
}

static void endpoint_done(struct epslice_endpoint *ep)
{
	size_t i;

	free(ep->node_name);
	free(ep->zone);
	for (i = 0; i < ep->n_hint_zones; i++)
		free(ep->hint_zones[i]);
	free(ep->hint_zones);
	*ep = (struct epslice_endpoint){ 0 };
}

/* subsets[].ports[] into a new sorted array. */
static int decode_subset_ports(struct dctx *c, const cJSON *subset, struct epslice_port **ret,
			       size_t *ret_n)
{
	struct epslice_port *p = NULL;
	const cJSON *arr, *j;
	size_t n, k = 0, i, l;
	uint32_t v;
	int r;

	r = get_array(c, subset, "ports", DECODE_MAX_PORTS, &arr, &n);
	if (r < 0)
		return r;
	if (n) {
		p = calloc(n, sizeof(*p));
		if (!p)
			return -ENOMEM;
	}
	l = path_key(c, "ports");
	cJSON_ArrayForEach(j, arr) {
		size_t l2 = path_idx(c, k);
		char *name = NULL;

		r = check_object(c, j);
		if (r == 0)
			r = dup_str(c, j, "name", is_port_name_or_empty, "port name", &name);
		if (r == 0 && !name) {
			name = strdup("");
			if (!name)
				r = -ENOMEM;
		}
		if (r == 0) {
			p[k].name = name;
			k++;
			r = get_proto(c, j, "protocol", &p[k - 1].protocol);
		}
		if (r == 0 && !get(j, "port")) {
			size_t l3 = path_key(c, "port");

			r = fail(c, "missing");
			path_pop(c, l3);
		}
		if (r == 0)
			r = get_uint(c, j, "port", 1, 65535, "port", &v);
		if (r == 0)
			p[k - 1].port = (uint16_t)v;
		for (i = 0; r == 0 && i + 1 < k; i++) {
			if (streq(p[i].name, p[k - 1].name)) {
				size_t l3 = path_key(c, "name");

				r = fail(c, "duplicate port name \"%s\"", p[k - 1].name);
				path_pop(c, l3);
			}
		}
		path_pop(c, l2);
		if (r < 0)
			break;
	}
	path_pop(c, l);
	if (r < 0) {
		ports_done(p, k);
		return r;
	}
	if (k > 1)
		qsort_safe(p, k, sizeof(*p), port_cmp);
	*ret = p;
	*ret_n = k;
	return 0;
}

static int decode_subset_addrs(struct dctx *c, const cJSON *subset, const char *key,
			       bool ready, struct groups *gs, const char *ns, const char *svc,
			       const struct epslice_port *ports, size_t n_ports, size_t *total)
{
	const cJSON *arr, *j;
	size_t n, i = 0, l;
	int r;

	r = get_array(c, subset, key, DECODE_MAX_ENDPOINTS, &arr, &n);
	if (r < 0 || n == 0)
		return r;
	l = path_key(c, key);
	cJSON_ArrayForEach(j, arr) {
		struct epslice_endpoint ep = { .ready = ready, .serving = ready };
		size_t l2 = path_idx(c, i++);
		const cJSON *ip;
		struct group *g;

		r = check_object(c, j);
		if (r == 0 && ++*total > DECODE_MAX_ENDPOINTS)
			r = fail(c, "more than %d addresses in the object", DECODE_MAX_ENDPOINTS);
		if (r == 0) {
			ip = get(j, "ip");
			if (ip) {
				size_t l3 = path_key(c, "ip");

				r = check_ip(c, ip, &ep.addr);
				path_pop(c, l3);
			} else {
				size_t l3 = path_key(c, "ip");

				r = fail(c, "missing");
				path_pop(c, l3);
			}
		}
		if (r == 0)
			r = dup_str(c, j, "nodeName", is_dns1123_subdomain, "node name",
				    &ep.node_name);
		if (r == 0)
			r = group_get(gs, ORIGIN_K8S_EP, ns, svc, ports, n_ports, ep.addr.family,
				      &g);
		if (r == 0)
			r = group_add(g, &ep);
		endpoint_done(&ep);
		path_pop(c, l2);
		if (r < 0)
			break;
	}
	path_pop(c, l);
	return r;
}

static int decode_endpoints(struct dctx *c, const cJSON *j, const char *key_ns,
			    const char *key_name, struct decoded *out)
{
	_cleanup_(groups_done) struct groups gs = { 0 };
	const cJSON *arr, *subset;
	size_t n, i = 0, l, total = 0;
	struct meta m;
	int r;

	r = decode_meta(c, j, "Endpoints", key_ns, key_name, is_dns1035_label, "service name",
			&m);
	if (r < 0)
		return r;
	r = get_array(c, j, "subsets", DECODE_MAX_ENDPOINTS, &arr, &n);
	if (r < 0)
		return r;
	l = path_key(c, "subsets");
	cJSON_ArrayForEach(subset, arr) {
		size_t l2 = path_idx(c, i++);
		struct epslice_port *ports = NULL;
		size_t n_ports = 0;

		r = check_object(c, subset);
		if (r == 0)
			r = decode_subset_ports(c, subset, &ports, &n_ports);
		if (r == 0)
			r = decode_subset_addrs(c, subset, "addresses", true, &gs, m.ns, m.name,
						ports, n_ports, &total);
		if (r == 0)
			r = decode_subset_addrs(c, subset, "notReadyAddresses", false, &gs, m.ns,
						m.name, ports, n_ports, &total);
		ports_done(ports, n_ports);
		path_pop(c, l2);
		if (r < 0)
			break;
	}
	path_pop(c, l);
	if (r < 0)
		return r;
	return groups_emit(&gs, ORIGIN_K8S_EP, m.ns, m.name, out);
}

/* --- the original (2014) format --- */

/* "ip:port" or "[v6]:port". */
static int parse_hostport(const char *s, struct ipaddr *addr, uint16_t *port)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *p;
	unsigned long v = 0;
	size_t hl;

	colon = strrchr(s, ':');
	if (!colon || !colon[1])
		return -EINVAL;
	hl = (size_t)(colon - s);
	if (s[0] == '[') {
		if (hl < 3 || s[hl - 1] != ']')
			return -EINVAL;
		s++;
		hl -= 2;
	} else if (memchr(s, ':', hl)) {
		return -EINVAL;
	}
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	for (p = colon + 1; *p; p++) {
		if (*p < '0' || *p > '9' || p - colon > 5)
			return -EINVAL;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < 1 || v > 65535 || ipaddr_parse(host, addr) < 0)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

/* Endpoints: ["ip:port", ...] into groups, one per (port, family). */
static int decode_legacy_endpoints(struct dctx *c, const cJSON *j, const char *ns,
				   const char *name, uint8_t proto, struct decoded *out)
{
	_cleanup_(groups_done) struct groups gs = { 0 };
	const cJSON *arr, *e;
	size_t n = 0, i = 0, l;
	int r;

	arr = get_ci(j, "Endpoints");
	if (arr) {
		l = path_key(c, "Endpoints");
		r = check_array(c, arr, DECODE_MAX_ENDPOINTS, &n);
		path_pop(c, l);
		if (r < 0)
			return r;
	}
	l = path_key(c, "Endpoints");
	cJSON_ArrayForEach(e, arr) {
		struct epslice_endpoint ep = { .ready = true, .serving = true };
		struct epslice_port port = { .name = (char *)"", .protocol = proto };
		size_t l2 = path_idx(c, i++);
		const char *s;
		struct group *g;
		char buf[300];

		r = check_str(c, e, &s);
		if (r == 0 && parse_hostport(s, &ep.addr, &port.port) < 0)
			r = fail(c, "%s is not a valid \"ip:port\"", quote(s, buf, sizeof(buf)));
		if (r == 0)
			r = group_get(&gs, ORIGIN_LEGACY, ns, name, &port, 1, ep.addr.family, &g);
		if (r == 0)
			r = group_add(g, &ep);
		path_pop(c, l2);
		if (r < 0)
			break;
	}
	path_pop(c, l);
	if (r < 0)
		return r;
	return groups_emit(&gs, ORIGIN_LEGACY, ns, name, out);
}

/* Name (or the original api.Service's "id"), falling back to key_name. */
static int legacy_name(struct dctx *c, const cJSON *j, const char *key_name, const char **ret)
{
	const cJSON *nj = get_ci(j, "Name");
	const char *key = "Name";
	const char *s = NULL;
	size_t l;
	int r = 0;

	if (!nj && get_ci(j, "ID")) {
		nj = get_ci(j, "ID");
		key = "ID";
	}
	l = path_key(c, key);
	if (nj)
		r = check_str(c, nj, &s);
	if (r == 0 && (!s || !*s))
		s = key_name && *key_name ? key_name : NULL;
	if (r == 0 && !s)
		r = fail(c, "missing");
	if (r == 0)
		r = check_name(c, s, is_legacy_name, "name");
	path_pop(c, l);
	if (r == 0)
		*ret = s;
	return r;
}

static int decode_legacy_service(struct dctx *c, const cJSON *j, const char *key_ns,
				 const char *key_name, bool with_endpoints,
				 struct decoded *out)
{
	_cleanup_(service_unrefp) struct service *s = NULL;
	const char *ns = key_ns && *key_ns ? key_ns : "default";
	const char *name, *ps;
	const cJSON *pj, *cp;
	uint8_t proto = PROTO_TCP;
	char buf[300];
	uint32_t port;
	size_t l;
	int r;

	set_object(c, NULL, NULL, NULL);
	r = check_object(c, j);
	if (r < 0)
		return r;
	r = legacy_name(c, j, key_name, &name);
	if (r < 0)
		return r;
	set_object(c, NULL, ns, name);

	pj = get_ci(j, "Protocol");
	if (pj) {
		l = path_key(c, "Protocol");
		r = check_str(c, pj, &ps);
		if (r == 0 && (!*ps || strcasecmp(ps, "TCP") == 0))
			proto = PROTO_TCP;
		else if (r == 0 && strcasecmp(ps, "UDP") == 0)
			proto = PROTO_UDP;
		else if (r == 0)
			r = fail(c, "%s is not a valid protocol (TCP, UDP)",
				 quote(ps, buf, sizeof(buf)));
		path_pop(c, l);
		if (r < 0)
			return r;
	}
	pj = get_ci(j, "Port");
	l = path_key(c, "Port");
	r = pj ? check_uint(c, pj, 1, 65535, "port", &port) : fail(c, "missing");
	path_pop(c, l);
	if (r < 0)
		return r;

	s = service_alloc();
	if (!s)
		return -ENOMEM;
	s->origin = ORIGIN_LEGACY;
	s->type = SVC_NODE_PORT;
	s->ns = strdup(ns);
	s->name = strdup(name);
	s->ports = calloc(1, sizeof(*s->ports));
	if (!s->ns || !s->name || !s->ports)
		return -ENOMEM;
	s->n_ports = 1;
	s->ports[0].protocol = proto;
	s->ports[0].port = (uint16_t)port;
	s->ports[0].node_port = (uint16_t)port;
	s->ports[0].name = strdup("");
	/* The original api.Service named the endpoints' port "containerPort". */
	cp = get_ci(j, "ContainerPort");
	if (cJSON_IsNumber(cp) && cp->valuedouble >= 1 && cp->valuedouble <= 65535 &&
	    cp->valuedouble == floor(cp->valuedouble))
		snprintf(buf, sizeof(buf), "%.0f", cp->valuedouble);
	else if (cJSON_IsString(cp) && is_port_name(cp->valuestring))
		snprintf(buf, sizeof(buf), "%s", cp->valuestring);
	else
		buf[0] = '\0';
	s->ports[0].target_port = strdup(buf);
	if (!s->ports[0].name || !s->ports[0].target_port)
		return -ENOMEM;

	if (with_endpoints) {
		r = decode_legacy_endpoints(c, j, ns, name, proto, out);
		if (r < 0)
			return r;
	}
	return add_service(out, TAKE_PTR(s));
}

static int decode_legacy_config(struct dctx *c, const cJSON *root, struct decoded *out)
{
	const cJSON *arr, *e;
	char where[64];
	size_t n, i = 0;
	int r;

	arr = get_ci(root, "Services");
	if (!arr)
		return 0;
	c->path[0] = '\0';
	c->plen = 0;
	set_object(c, NULL, NULL, NULL);
	c->object[0] = '\0';
	path_key(c, "Services");
	r = check_array(c, arr, DECODE_MAX_ITEMS, &n);
	path_pop(c, 0);
	if (r == -EINVAL && cJSON_IsArray(arr))
		return -EFBIG;
	if (r < 0)
		return r;
	cJSON_ArrayForEach(e, arr) {
		snprintf(where, sizeof(where), "Services[%zu]", i++);
		c->where = where;
		r = decode_legacy_service(c, e, NULL, NULL, true, out);
		c->where = "";
		if (r < 0 && r != -EINVAL)
			return r;
	}
	return 0;
}

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
	r = get_str(c, j, "kind", kind);
	if (r == 0)
		r = get_str(c, j, "apiVersion", api);
	return r;
}

/* Item i of a List; item_kind is the kind of a typed list's items (NULL
 * for "List", whose items carry their own). */
static int decode_item(struct dctx *c, const cJSON *it, size_t i, const char *item_kind,
		       struct decoded *out)
{
	const char *kind = NULL, *api = NULL;
	char where[64];
	int r;

	snprintf(where, sizeof(where), "items[%zu]", i);
	c->where = where;
	set_object(c, NULL, NULL, NULL);
	r = cJSON_IsObject(it) ? 0 : type_error(c, it, "an object");
	if (r == 0)
		r = get_kind(c, it, &kind, &api);
	if (r == 0 && !kind && !item_kind) {
		r = report(c, DIAG_WARNING, "no kind; ignored");
	} else if (r == 0) {
		if (!kind) {
			kind = item_kind;
			api = NULL;
		}
		r = decode_kind(c, kind_of(kind, api), it, NULL, NULL, out);
	}
	c->where = "";
	c->path[0] = '\0';
	c->plen = 0;
	return r;
}

static int decode_list(struct dctx *c, const cJSON *root, const char *list_kind,
		       struct decoded *out)
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
	items = get(root, "items");
	if (items) {
		c->path[0] = '\0';
		c->plen = 0;
		path_key(c, "items");
		r = check_array(c, items, DECODE_MAX_ITEMS, &n);
		path_pop(c, 0);
		if (r < 0)
			return r == -EINVAL && cJSON_IsArray(items) ? -EFBIG : r;
	}
	cJSON_ArrayForEach(it, items) {
		r = decode_item(c, it, i++, item_kind, out);
		if (r < 0 && r != -EINVAL)
			return r;
	}
	return 0;
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
			*ret = root;
			return 0;
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
	off = (size_t)(buf + len - end);
	memcpy(near, end, off < 16 ? off : 16);
	near[off < 16 ? off : 16] = '\0';
	if (diag_add(diags, DIAG_ERROR, source, NULL, NULL,
		     root ? "not JSON: unexpected text after the value at line %zu, column %zu%s%s"
			  : "not JSON: syntax error at line %zu, column %zu%s%s",
		     line, col, off ? " near " : "", off ? quote(near, snippet, sizeof(snippet)) : "")
	    < 0)
		return -ENOMEM;
	return -EINVAL;
}

/*
 * Two items with one key in one source are a conflict the API cannot have;
 * keep the first (earlier in the file, or an earlier file of a directory)
 * and reject the later ones.
 */
struct keyed {
	const char *ns;
	const char *name;
	size_t idx;
};

static int keyed_cmp(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int r = strcmp(x->ns, y->ns);

	if (r == 0)
		r = strcmp(x->name, y->name);
	if (r == 0)
		r = x->idx < y->idx ? -1 : x->idx > y->idx;
	return r;
}

static const char *slice_kind(const struct epslice *e)
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

static int dedup(void **items, size_t *n, size_t from, bool services, const char *source,
		 struct diag_list *diags)
{
	_cleanup_free_ struct keyed *k = NULL;
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

			k[i] = (struct keyed){ s->ns, s->name, i };
		} else {
			const struct epslice *e = items[i];

			k[i] = (struct keyed){ e->ns, e->name, i };
		}
	}
	qsort_safe(k, *n, sizeof(*k), keyed_cmp);
	for (i = 1; i < *n; i++) {
		char obj[600];

		if (strcmp(k[i].ns, k[i - 1].ns) || strcmp(k[i].name, k[i - 1].name))
			continue;
		drop[k[i].idx] = true;
		snprintf(obj, sizeof(obj), "%s%s/%s", services ? "" : slice_kind(items[k[i].idx]),
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

static void cjson_deletep(cJSON **j)
{
	cJSON_Delete(*j);
}

static unsigned long streamed_lists;

unsigned long decode_streamed_lists(void)
{
	return streamed_lists;
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
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
		       struct decoded *out, bool *ret_done)
{
	struct diag_list *real = c->diags, tmp;
	size_t n_services = out->n_services, n_slices = out->n_slices, n = 0;
	const char *p = skip_ws(text, text + len), *end = text + len, *q, *kind = NULL, *api = NULL;
	cJSON *root = NULL, *key = NULL, *it = NULL;
	bool items_seen = false, ok = false;
	int r = 0;

	*ret_done = false;
	diag_list_init(&tmp);
	c->diags = &tmp;
	if (p == end || *p != '{' || !(root = cJSON_CreateObject()))
		goto out;
	for (p = skip_ws(p + 1, end); p < end && *p != '}';) {
		if (*p != '"' || !(key = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &q, false)))
			goto out;
		p = skip_ws(q, end);
		if (p == end || *p != ':' || !cJSON_IsString(key))
			goto out;
		p = skip_ws(p + 1, end);
		if (streq(key->valuestring, "items") && !items_seen && p < end && *p == '[') {
			items_seen = true;
			for (p = skip_ws(p + 1, end); p < end && *p != ']';) {
				struct jsonarena_mark m;

				jsonarena_mark(arena, &m);
				it = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &q, false);
				if (!cJSON_IsObject(it) ||
				    !cJSON_GetObjectItemCaseSensitive(it, "kind") ||
				    n >= DECODE_MAX_ITEMS)
					goto out;
				r = decode_item(c, it, n++, NULL, out);
				cJSON_Delete(it);
				it = NULL;
				jsonarena_rewind(arena, &m);
				if (r < 0 && r != -EINVAL) {
					ok = true; /* a hard error (ENOMEM): report it */
					goto out;
				}
				r = 0;
				p = skip_ws(q, end);
				if (p < end && *p == ',') {
					p = skip_ws(p + 1, end);
					if (p == end || *p == ']') /* [1,] is not JSON */
						goto out;
				} else if (p == end || *p != ']') {
					goto out;
				}
			}
			if (p == end)
				goto out;
			p++;
		} else {
			cJSON *value = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &q, false);

			if (!value)
				goto out;
			cJSON_AddItemToObject(root, key->valuestring, value);
			p = q;
		}
		cJSON_Delete(key);
		key = NULL;
		p = skip_ws(p, end);
		if (p < end && *p == ',') {
			p = skip_ws(p + 1, end);
			if (p == end || *p == '}') /* {"a": 1,} is not JSON */
				goto out;
		} else if (p == end || *p != '}') {
			goto out;
		}
	}
	if (p == end || skip_ws(p + 1, end) != end || !items_seen)
		goto out;
	/* The whole text is one object with items: is it a List?  (Its own
	 * errors are the whole-tree path's to report.) */
	{
		struct diag_list none;

		diag_list_init(&none);
		c->diags = &none;
		ok = get_kind(c, root, &kind, &api) == 0 && kind && streq(kind, "List");
		diag_list_done(&none);
	}
out:
	c->diags = real;
	cJSON_Delete(it);
	cJSON_Delete(key);
	cJSON_Delete(root);
	if (!ok) {
		rollback(out, n_services, n_slices);
		diag_list_done(&tmp);
		return 0;
	}
	*ret_done = true;
	streamed_lists++;
	if (diag_list_move(real, &tmp) < 0)
		r = -ENOMEM;
	diag_list_done(&tmp);
	return r;
}

int decode_buffer(const char *buf, size_t len, const char *source, struct decoded *out,
		  struct diag_list *diags)
{
	/* Left after root is deleted (cleanups run in reverse order). */
	_cleanup_(jsonarena_leave) struct jsonarena arena;
	_cleanup_(cjson_deletep) cJSON *root = NULL;
	struct dctx c = { .source = source, .diags = diags, .where = "" };
	size_t n_services = out->n_services, n_slices = out->n_slices;
	const char *kind = NULL, *api = NULL;
	char what[300];
	int r;

	jsonarena_enter(&arena, len);
	if (len <= DECODE_MAX_FILE_SIZE) {
		size_t bom = len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
		bool done;

		r = stream_list(&c, buf + bom, len - bom, &arena, out, &done);
		if (done) {
			if (r == -EFBIG || r == -EINVAL) {
				rollback(out, n_services, n_slices);
				return r;
			}
			return finish(out, n_services, n_slices, source, diags, r);
		}
	}
	r = parse(buf, len, source, diags, &root);
	if (r < 0)
		return r;
	if (!cJSON_IsObject(root)) {
		r = diag_add(diags, DIAG_ERROR, source, NULL, NULL,
			     "expected a JSON object (a Kubernetes object or List, or the original "
			     "{\"Services\": [...]}), got %s", describe(root, what, sizeof(what)));
		return r < 0 ? r : -EINVAL;
	}
	if (!get(root, "kind")) {
		/* The original format; "{}" was an empty config to its Go decoder. */
		if (!get_ci_raw(root, "Services") && root->child) {
			r = diag_add(diags, DIAG_ERROR, source, NULL, NULL,
				     "neither a Kubernetes object (no \"kind\") nor the original "
				     "format (no \"Services\")");
			return r < 0 ? r : -EINVAL;
		}
		r = decode_legacy_config(&c, root, out);
		if (r == -EINVAL || r == -EFBIG)
			return r;
		return finish(out, n_services, n_slices, source, diags, r);
	}
	r = get_kind(&c, root, &kind, &api);
	if (r < 0)
		return r;
	if (strlen(kind) >= 4 && streq(kind + strlen(kind) - 4, "List")) {
		r = decode_list(&c, root, kind, out);
		if (r == -EFBIG || r == -EINVAL) {
			rollback(out, n_services, n_slices);
			return r;
		}
	} else {
		enum kind k = kind_of(kind, api);

		if (k == KIND_OTHER)
			r = diag_add(diags, DIAG_NOTE, source, NULL, NULL,
				     "kind %s (%s) is not used; ignored",
				     quote(kind, what, sizeof(what)), api ? api : "no apiVersion");
		else
			r = decode_kind(&c, k, root, NULL, NULL, out);
		if (r == -EINVAL)
			r = 0;
	}
	return finish(out, n_services, n_slices, source, diags, r);
}

int decode_object(const char *buf, size_t len, const char *kind, const char *key_ns,
		  const char *key_name, const char *source, struct decoded *out,
		  struct diag_list *diags)
{
	_cleanup_(cjson_deletep) cJSON *root = NULL;
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
		r = diag_add(diags, DIAG_ERROR, source, NULL, NULL, "expected a JSON object, got %s",
			     describe(root, what, sizeof(what)));
		return r < 0 ? r : -EINVAL;
	}
	if (streq(kind, "legacy-service") || streq(kind, "legacy-endpoints")) {
		const char *name;

		if (key_ns && *key_ns && !is_dns1123_label(key_ns)) {
			r = diag_add(diags, DIAG_ERROR, source, NULL, NULL,
				     "%s is not a valid namespace", quote(key_ns, what, sizeof(what)));
			return r < 0 ? r : -EINVAL;
		}

		if (streq(kind, "legacy-service")) {
			r = decode_legacy_service(&c, root, key_ns, key_name, false, out);
		} else {
			set_object(&c, NULL, NULL, NULL);
			r = legacy_name(&c, root, key_name, &name);
			if (r == 0) {
				set_object(&c, NULL, key_ns && *key_ns ? key_ns : "default", name);
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
		path_key(&c, "kind");
		r = fail(&c, "%s (%s), expected %s", quote(jkind, what, sizeof(what)),
			 api ? api : "no apiVersion", kind);
	}
	if (r == 0)
		r = decode_kind(&c, k, root, key_ns, key_name, out);
	if (r == -EINVAL)
		r = 0;
	return finish(out, n_services, n_slices, source, diags, r);
}
