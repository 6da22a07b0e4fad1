/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/decode/decode.h"
#include "sources/kube/kubewire.h"
#include "util.h"

static const struct {
	const char *kind, *path, *name;
} resources[KUBE_RES_COUNT] = {
	[KUBE_RES_SERVICES] = { "Service", "/api/v1/services", "services" },
	[KUBE_RES_SLICES] = { "EndpointSlice", "/apis/discovery.k8s.io/v1/endpointslices",
			      "endpointslices" },
	[KUBE_RES_NODE] = { "Node", "/api/v1/nodes", "nodes" },
};

const char *kube_res_kind(enum kube_res r)
{
	return resources[r].kind;
}

const char *kube_res_path(enum kube_res r)
{
	return resources[r].path;
}

const char *kube_res_name(enum kube_res r)
{
	return resources[r].name;
}

/* ---- JSON scanning: find members without parsing the rest ---- */

static const char *skip_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* p at '"': past the closing quote, or NULL. */
static const char *skip_string(const char *p, const char *e)
{
	for (p++; p < e; p++) {
		if (*p == '\\') {
			p++;
			continue;
		}
		/* Control characters are let through, as cJSON lets them: the
		 * parse of a span that matters decides. */
		if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* A member's value nests at most this deep: with the object around it,
 * cJSON's limit for the whole text.  What cJSON takes, this takes, and what
 * it refuses for depth this refuses for depth too (said as such: -ELOOP). */
#define MAX_DEPTH (KUBE_MAX_DEPTH - 1)

static const char *skip_value(const char *p, const char *e, bool *ret_deep)
{
	char stack[MAX_DEPTH];
	size_t depth = 0;

	if (p >= e)
		return NULL;
	if (*p == '"')
		return skip_string(p, e);
	if (*p != '{' && *p != '[') {
		/* A number, true, false or null: what follows must end it. */
		const char *s = p;

		if (!strchr("-0123456789tfn", *p) || !*p)
			return NULL;
		while (p < e && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
				 (*p >= 'A' && *p <= 'Z') || *p == '+' || *p == '-' || *p == '.'))
			p++;
		return p > s ? p : NULL;
	}
	while (p < e) {
		switch (*p) {
		case '"':
			p = skip_string(p, e);
			if (!p)
				return NULL;
			continue;
		case '{':
		case '[':
			if (depth == MAX_DEPTH) {
				*ret_deep = true;
				return NULL;
			}
			stack[depth++] = *p == '{' ? '}' : ']';
			break;
		case '}':
		case ']':
			if (!depth || stack[depth - 1] != *p)
				return NULL;
			if (--depth == 0)
				return p + 1;
			break;
		default:
			break;
		}
		p++;
	}
	return NULL;
}

int kube_json_members(const char *buf, size_t len, const char *const *keys, size_t n,
		      struct kube_span *ret)
{
	const char *p = buf, *e = buf + len;
	bool deep = false;

	for (size_t i = 0; i < n; i++)
		ret[i] = (struct kube_span){ NULL, 0 };
	p = skip_ws(p, e);
	if (p >= e || *p != '{')
		return -EINVAL;
	p = skip_ws(p + 1, e);
	if (p < e && *p == '}') {
		p++;
		goto tail;
	}
	for (;;) {
		const char *k, *ke, *v, *ve;

		if (p >= e || *p != '"')
			return -EINVAL;
		k = p + 1;
		ke = skip_string(p, e);
		if (!ke)
			return -EINVAL;
		p = skip_ws(ke, e);
		if (p >= e || *p != ':')
			return -EINVAL;
		v = skip_ws(p + 1, e);
		ve = skip_value(v, e, &deep);
		if (!ve)
			return deep ? -ELOOP : -EINVAL;
		for (size_t i = 0; i < n; i++)
			if (!ret[i].p && (size_t)(ke - 1 - k) == strlen(keys[i]) &&
			    !memcmp(k, keys[i], (size_t)(ke - 1 - k)))
				ret[i] = (struct kube_span){ v, (size_t)(ve - v) };
		p = skip_ws(ve, e);
		if (p < e && *p == ',') {
			p = skip_ws(p + 1, e);
			continue;
		}
		if (p < e && *p == '}') {
			p++;
			break;
		}
		return -EINVAL;
	}
tail:
	return skip_ws(p, e) == e ? 0 : -EINVAL;
}

static cJSON *parse_span(const struct kube_span *s)
{
	return s->p ? cJSON_ParseWithLength(s->p, s->len) : NULL;
}

/* A JSON string member of obj copied into buf; false if absent or too long. */
static bool copy_str(const cJSON *obj, const char *key, char *buf, size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsString(v) || strlen(v->valuestring) >= len)
		return false;
	memcpy(buf, v->valuestring, strlen(v->valuestring) + 1);
	return true;
}

int kube_list_meta_parse(const char *buf, size_t len, struct kube_list_meta *ret)
{
	static const char *const keys[] = { "kind", "metadata", "items" };
	struct kube_span sp[3];
	struct kube_list_meta m = { 0 };
	cJSON *kind, *meta;
	const cJSON *c;
	int r;

	r = kube_json_members(buf, len, keys, 3, sp);
	if (r < 0)
		return r;
	kind = parse_span(&sp[0]);
	if (!cJSON_IsString(kind) || strlen(kind->valuestring) >= sizeof(m.kind)) {
		cJSON_Delete(kind);
		return -EINVAL;
	}
	strcpy(m.kind, kind->valuestring);
	cJSON_Delete(kind);
	meta = parse_span(&sp[1]);
	if (!cJSON_IsObject(meta)) {
		cJSON_Delete(meta);
		/* A Status has metadata too; anything else without it is not a list. */
		return streq(m.kind, "Status") ? (*ret = m, 0) : -EINVAL;
	}
	if (!copy_str(meta, "resourceVersion", m.rv, sizeof(m.rv)))
		m.rv[0] = '\0';
	c = cJSON_GetObjectItemCaseSensitive(meta, "continue");
	if (cJSON_IsString(c) && *c->valuestring) {
		m.cont = strdup(c->valuestring);
		if (!m.cont) {
			cJSON_Delete(meta);
			return -ENOMEM;
		}
	}
	cJSON_Delete(meta);
	m.items = sp[2];
	*ret = m;
	return 0;
}

void kube_list_meta_done(struct kube_list_meta *m)
{
	free(m->cont);
	m->cont = NULL;
}

static int status_from(const cJSON *j, struct kube_status *ret)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "code");
	struct kube_status st = { 0 };

	if (!cJSON_IsObject(j))
		return -EINVAL;
	if (cJSON_IsNumber(code) && code->valuedouble >= 0 && code->valuedouble < 1000)
		st.code = (int)code->valuedouble;
	if (!copy_str(j, "reason", st.reason, sizeof(st.reason)))
		st.reason[0] = '\0';
	if (!copy_str(j, "message", st.message, sizeof(st.message))) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");

		if (cJSON_IsString(m))
			snprintf(st.message, sizeof(st.message), "%.*s...",
				 (int)sizeof(st.message) - 4, m->valuestring);
	}
	*ret = st;
	return 0;
}

int kube_status_parse(const char *buf, size_t len, struct kube_status *ret)
{
	cJSON *j = cJSON_ParseWithLength(buf, len);
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
	int r = -EINVAL;

	if (cJSON_IsString(kind) && streq(kind->valuestring, "Status"))
		r = status_from(j, ret);
	cJSON_Delete(j);
	return r;
}

int kube_event_parse(const char *line, size_t len, struct kube_event *ret, char *why, size_t whylen)
{
	static const char *const keys[] = { "type", "object" };
	static const char *const okeys[] = { "metadata" };
	static const char *const types[] = {
		[KUBE_EV_ADDED] = "ADDED",     [KUBE_EV_MODIFIED] = "MODIFIED",
		[KUBE_EV_DELETED] = "DELETED", [KUBE_EV_BOOKMARK] = "BOOKMARK",
		[KUBE_EV_ERROR] = "ERROR",
	};
	struct kube_event ev = { 0 };
	struct kube_span sp[2], msp;
	cJSON *type = NULL, *meta = NULL;
	int r = -EINVAL;
	size_t t;

	r = kube_json_members(line, len, keys, 2, sp);
	if (r == -ELOOP) {
		snprintf(why, whylen,
			 "a watch event with arrays and objects nested deeper than %d levels",
			 KUBE_MAX_DEPTH);
		return -EINVAL;
	}
	if (r < 0) {
		char shown[64];
		size_t n = len < sizeof(shown) - 1 ? len : sizeof(shown) - 1;

		for (size_t i = 0; i < n; i++)
			shown[i] = (unsigned char)line[i] < 0x20 ? ' ' : line[i];
		shown[n] = '\0';
		snprintf(why, whylen, "a watch event that is not a JSON object: '%s'", shown);
		return -EINVAL;
	}
	r = -EINVAL;
	type = parse_span(&sp[0]);
	if (!cJSON_IsString(type)) {
		snprintf(why, whylen, "a watch event without a type");
		goto out;
	}
	for (t = 0; t < ARRAY_SIZE(types); t++)
		if (streq(type->valuestring, types[t]))
			break;
	if (t == ARRAY_SIZE(types)) {
		snprintf(why, whylen, "a watch event of unknown type '%.40s'", type->valuestring);
		goto out;
	}
	ev.type = (enum kube_ev_type)t;
	if (!sp[1].p || sp[1].p[0] != '{') {
		snprintf(why, whylen, "a %s watch event without an object", types[t]);
		goto out;
	}
	ev.object = sp[1];
	if (ev.type == KUBE_EV_ERROR) {
		cJSON *st = parse_span(&sp[1]);

		r = status_from(st, &ev.status);
		cJSON_Delete(st);
		if (r < 0)
			snprintf(why, whylen, "an ERROR watch event without a Status");
		goto done;
	}
	if (kube_json_members(sp[1].p, sp[1].len, okeys, 1, &msp) < 0 ||
	    !cJSON_IsObject(meta = parse_span(&msp))) {
		snprintf(why, whylen, "a %s watch event whose object has no metadata", types[t]);
		goto out;
	}
	if (!copy_str(meta, "resourceVersion", ev.rv, sizeof(ev.rv)) || !ev.rv[0]) {
		snprintf(why, whylen, "a %s watch event without a resourceVersion", types[t]);
		goto out;
	}
	if (ev.type != KUBE_EV_BOOKMARK) {
		if (!copy_str(meta, "name", ev.name, sizeof(ev.name)) || !ev.name[0]) {
			snprintf(why, whylen, "a %s watch event whose object has no valid name",
				 types[t]);
			goto out;
		}
		if (!copy_str(meta, "namespace", ev.ns, sizeof(ev.ns)))
			ev.ns[0] = '\0';
	} else {
		const cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
		const cJSON *end = cJSON_GetObjectItemCaseSensitive(ann, "k8s.io/initial-events-end");

		ev.initial_end = cJSON_IsString(end) && streq(end->valuestring, "true");
	}
	r = 0;
done:
	if (r == 0)
		*ret = ev;
out:
	cJSON_Delete(type);
	cJSON_Delete(meta);
	return r;
}

/* kube-proxy's SyncNode: a Node being deleted, or tainted by the cluster
 * autoscaler before it deletes it, should get no more load-balancer traffic. */
static bool node_eligible(const cJSON *meta, const cJSON *spec)
{
	const cJSON *del = cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp");
	const cJSON *taints = cJSON_GetObjectItemCaseSensitive(spec, "taints");
	const cJSON *t;

	if (cJSON_IsString(del) && del->valuestring[0])
		return false;
	if (!cJSON_IsArray(taints))
		return true;
	cJSON_ArrayForEach(t, taints) {
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(t, "key");

		if (cJSON_IsString(k) && streq(k->valuestring, "ToBeDeletedByClusterAutoscaler"))
			return false;
	}
	return true;
}

static int node_from(const cJSON *j, struct kube_node *ret)
{
	static const char *const order[] = { "InternalIP", "ExternalIP" };
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(j, "metadata");
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
	const cJSON *addrs = cJSON_GetObjectItemCaseSensitive(st, "addresses");
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(j, "spec");
	const cJSON *cidrs = cJSON_GetObjectItemCaseSensitive(spec, "podCIDRs");
	const cJSON *c;
	struct kube_node n = { 0 };

	if (!cJSON_IsObject(j) || !copy_str(meta, "name", n.name, sizeof(n.name)))
		return -EINVAL;
	if (!copy_str(labels, "topology.kubernetes.io/zone", n.zone, sizeof(n.zone)))
		n.zone[0] = '\0';
	if (!cJSON_IsArray(addrs))
		addrs = NULL;
	for (size_t o = 0; o < ARRAY_SIZE(order); o++) {
		const cJSON *a;

		cJSON_ArrayForEach(a, addrs) {
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(a, "type");
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "address");
			struct ipaddr ip;

			if (!cJSON_IsString(t) || !streq(t->valuestring, order[o]) ||
			    !cJSON_IsString(v) || ipaddr_parse(v->valuestring, &ip) < 0)
				continue;
			if (n.n_addrs < KUBE_MAX_NODE_ADDRS)
				n.addrs[n.n_addrs++] = ip;
		}
	}
	/* spec.podCIDRs (dual-stack: one per family); older API servers set
	 * only spec.podCIDR. */
	if (!cJSON_IsArray(cidrs))
		cidrs = NULL;
	cJSON_ArrayForEach(c, cidrs) {
		if (cJSON_IsString(c) && n.n_pod_cidrs < ARRAY_SIZE(n.pod_cidrs) &&
		    ipnet_parse(c->valuestring, &n.pod_cidrs[n.n_pod_cidrs]) >= 0)
			n.n_pod_cidrs++;
	}
	c = cJSON_GetObjectItemCaseSensitive(spec, "podCIDR");
	if (!n.n_pod_cidrs && cJSON_IsString(c) && ipnet_parse(c->valuestring, &n.pod_cidrs[0]) >= 0)
		n.n_pod_cidrs = 1;
	n.eligible = node_eligible(meta, spec);
	*ret = n;
	return 0;
}

int kube_node_parse(const char *buf, size_t len, struct kube_node *ret)
{
	cJSON *j = cJSON_ParseWithLength(buf, len);
	int r = node_from(j, ret);

	cJSON_Delete(j);
	return r;
}

/* ---- the sink ---- */

void kube_sink_init(struct kube_sink *s, enum kube_res res, struct merge *m, int source_id)
{
	*s = (struct kube_sink){ .res = res, .merge = m, .source_id = source_id,
				 .max_items = DECODE_MAX_ITEMS };
	diag_list_init(&s->diags);
	framer_init(&s->framer, KUBE_MAX_EVENT);
}

void kube_sink_done(struct kube_sink *s)
{
	decoded_done(&s->pending);
	diag_list_done(&s->diags);
	framer_done(&s->framer);
}

/*
 * Decoder diags name the object "ns/name" (or "EndpointSlice ns/name");
 * the source's own lines name it "api:<Kind>/<ns>/<name>".
 */
static int adopt_diags(struct kube_sink *s, struct diag_list *tmp)
{
	const char *kind = kube_res_kind(s->res);
	int r = 0;

	for (size_t i = 0; i < tmp->n && r >= 0; i++) {
		const struct diag *d = &tmp->items[i];
		const char *obj = d->object;
		char src[600];

		if (obj && !strncmp(obj, kind, strlen(kind)) && obj[strlen(kind)] == ' ')
			obj += strlen(kind) + 1;
		if (obj)
			snprintf(src, sizeof(src), "api:%s/%s", kind, obj);
		else
			snprintf(src, sizeof(src), "api:%s", kind);
		if (d->level == DIAG_ERROR && obj)
			s->rejected++;
		r = diag_add(&s->diags, d->level, src, NULL, d->field, "%s", d->msg);
	}
	diag_list_done(tmp);
	diag_list_init(tmp);
	return r;
}

void kube_sink_list_begin(struct kube_sink *s)
{
	decoded_done(&s->pending);
	s->pending = (struct decoded){ 0 };
	s->listing = true;
	if (s->res == KUBE_RES_NODE)
		s->have_node = false;
}

static int node_list_page(struct kube_sink *s, const struct kube_list_meta *meta)
{
	cJSON *items = parse_span(&meta->items);
	const cJSON *it;
	int r = 0;

	if (meta->items.p && !cJSON_IsArray(items)) {
		cJSON_Delete(items);
		return -EINVAL;
	}
	cJSON_ArrayForEach(it, items) {
		struct kube_node n;

		if (node_from(it, &n) == 0 && !s->have_node) {
			s->node = n;
			s->have_node = true;
		}
	}
	cJSON_Delete(items);
	return r;
}

/* What a JSON value starting with c is, for a message. */
static const char *json_type_name(char c)
{
	switch (c) {
	case '{':
		return "a JSON object";
	case '"':
		return "a JSON string";
	case 't':
	case 'f':
		return "a JSON boolean";
	default:
		return "a JSON number";
	}
}

/* Move every item of from to the end of to.  0 or -ENOMEM (nothing moved). */
static int decoded_append(struct decoded *to, struct decoded *from)
{
	if (GROW(to->services, to->cap_services, to->n_services + from->n_services) < 0 ||
	    GROW(to->slices, to->cap_slices, to->n_slices + from->n_slices) < 0)
		return -ENOMEM;
	if (from->n_services)
		memcpy(to->services + to->n_services, from->services,
		       from->n_services * sizeof(*from->services));
	if (from->n_slices)
		memcpy(to->slices + to->n_slices, from->slices, from->n_slices * sizeof(*from->slices));
	to->n_services += from->n_services;
	to->n_slices += from->n_slices;
	from->n_services = from->n_slices = 0;
	return 0;
}

int kube_sink_list_page(struct kube_sink *s, const char *buf, size_t len,
			const struct kube_list_meta *meta)
{
	_cleanup_(decoded_done) struct decoded page = { 0 };
	char want[32];
	struct diag_list tmp;
	int r;

	snprintf(want, sizeof(want), "%sList", kube_res_kind(s->res));
	s->list_why[0] = '\0';
	if (!streq(meta->kind, want)) {
		snprintf(s->list_why, sizeof(s->list_why), "kind: the answer is a '%.60s', not a %s",
			 meta->kind, want);
		return -EINVAL;
	}
	if (meta->items.p && meta->items.p[0] != '[' && strncmp(meta->items.p, "null", 4)) {
		snprintf(s->list_why, sizeof(s->list_why), "items: %s, not an array",
			 json_type_name(meta->items.p[0]));
		return -EINVAL;
	}
	if (s->res == KUBE_RES_NODE)
		return node_list_page(s, meta);
	diag_list_init(&tmp);
	r = decode_buffer(buf, len, "api", &page, &tmp);
	if (adopt_diags(s, &tmp) < 0 && r >= 0)
		r = -ENOMEM;
	/* Duplicates across pages are dropped once, at the commit: one sort of
	 * every page each time would make a long list quadratic. */
	if (r >= 0)
		r = decoded_append(&s->pending, &page);
	return r;
}

static int node_publish(struct kube_sink *s, const struct kube_node *n, bool have)
{
	if (have != s->have_node || (have && memcmp(n, &s->node, sizeof(*n))))
		s->node_changed = true;
	s->have_node = have;
	if (have)
		s->node = *n;
	return 0;
}

int kube_sink_list_commit(struct kube_sink *s, const char *rv)
{
	int r = 0;

	if (s->res != KUBE_RES_NODE) {
		struct diag_list tmp;

		diag_list_init(&tmp);
		r = decoded_dedup(&s->pending, "api", &tmp);
		if (adopt_diags(s, &tmp) < 0 && r >= 0)
			r = -ENOMEM;
		if (r >= 0)
			r = merge_update(s->merge, s->source_id, MERGE_SET, s->pending.services,
					 s->pending.n_services, s->pending.slices,
					 s->pending.n_slices);
		s->n_items = s->pending.n_services + s->pending.n_slices;
	} else {
		/* A list always says the node's state anew. */
		s->node_changed = true;
	}
	decoded_done(&s->pending);
	s->pending = (struct decoded){ 0 };
	s->listing = false;
	if (r < 0)
		return r;
	snprintf(s->rv, sizeof(s->rv), "%s", rv);
	s->listed = true;
	s->lists++;
	return 0;
}

void kube_sink_list_abort(struct kube_sink *s)
{
	decoded_done(&s->pending);
	s->pending = (struct decoded){ 0 };
	s->listing = false;
	s->streaming = false;
}

void kube_sink_stream_begin(struct kube_sink *s)
{
	kube_sink_list_begin(s);
	kube_sink_watch_begin(s);
	s->streaming = true;
	s->stream_synced = false;
}

/* An ADDED event of a streaming list: one more item of the list. */
static int stream_add(struct kube_sink *s, const struct kube_event *ev)
{
	_cleanup_(decoded_done) struct decoded dec = { 0 };
	struct diag_list tmp;
	size_t errs;
	int r;

	if (s->res == KUBE_RES_NODE) {
		struct kube_node n;

		if (kube_node_parse(ev->object.p, ev->object.len, &n) == 0 && !s->have_node) {
			s->node = n;
			s->have_node = true;
		}
		return 0;
	}
	diag_list_init(&tmp);
	r = decode_object(ev->object.p, ev->object.len, kube_res_kind(s->res), NULL, NULL, "api",
			  &dec, &tmp);
	errs = diag_count(&tmp, DIAG_ERROR);
	if (adopt_diags(s, &tmp) < 0 || r == -ENOMEM)
		return -ENOMEM;
	if (r < 0 || errs > 0)
		/* rejected, as a list's bad item: not part of the list */
		return 0;
	if (s->pending.n_services + s->pending.n_slices + dec.n_services + dec.n_slices >
	    s->max_items)
		return -E2BIG;
	return decoded_append(&s->pending, &dec);
}

/* One event of a streaming list before its end: 0, -EPROTONOSUPPORT (not
 * a stream of the initial state), -E2BIG, -ENOMEM. */
static int stream_apply(struct kube_sink *s, const struct kube_event *ev)
{
	int r;

	/* the list's items, not events applied */
	if (ev->type == KUBE_EV_ADDED)
		return stream_add(s, ev);
	if (ev->type != KUBE_EV_BOOKMARK || !ev->initial_end)
		return -EPROTONOSUPPORT;
	s->bookmarks++;
	s->streaming = false;
	r = kube_sink_list_commit(s, ev->rv);
	if (r >= 0)
		s->stream_synced = true;
	return r;
}

/* An item that names a key only, for MERGE_REMOVE. */
static int remove_key(struct kube_sink *s, const char *ns, const char *name)
{
	struct service *sv = NULL;
	struct epslice *e = NULL;
	int r;

	if (s->res == KUBE_RES_SERVICES) {
		sv = calloc(1, sizeof(*sv));
		if (!sv)
			return -ENOMEM;
		sv->refcnt = 1;
		sv->ns = strdup(ns);
		sv->name = strdup(name);
		r = sv->ns && sv->name
			? merge_update(s->merge, s->source_id, MERGE_REMOVE, &sv, 1, NULL, 0)
			: -ENOMEM;
		service_unref(sv);
		return r;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->refcnt = 1;
	e->ns = strdup(ns);
	e->name = strdup(name);
	r = e->ns && e->name ? merge_update(s->merge, s->source_id, MERGE_REMOVE, NULL, 0, &e, 1)
			     : -ENOMEM;
	epslice_unref(e);
	return r;
}

static int apply_object(struct kube_sink *s, const struct kube_event *ev)
{
	struct decoded dec = { 0 };
	struct diag_list tmp;
	size_t errs;
	int r;

	diag_list_init(&tmp);
	r = decode_object(ev->object.p, ev->object.len, kube_res_kind(s->res), NULL, NULL, "api",
			  &dec, &tmp);
	errs = diag_count(&tmp, DIAG_ERROR);
	if (adopt_diags(s, &tmp) < 0 && r >= 0)
		r = -ENOMEM;
	if (r == -ENOMEM) {
		decoded_done(&dec);
		return r;
	}
	if (r < 0 || errs || dec.n_services + dec.n_slices == 0) {
		decoded_done(&dec);
		/* Rejected: what the key held before is gone too. */
		return remove_key(s, ev->ns[0] ? ev->ns : "default", ev->name);
	}
	r = merge_update(s->merge, s->source_id, MERGE_ADD, dec.services, dec.n_services,
			 dec.slices, dec.n_slices);
	decoded_done(&dec);
	if (r >= 0 && merge_source_items(s->merge, s->source_id) > s->max_items) {
		/* One item past the cap: this one goes again, and the stream ends. */
		r = remove_key(s, ev->ns[0] ? ev->ns : "default", ev->name);
		return r < 0 ? r : -E2BIG;
	}
	return r;
}

int kube_sink_apply(struct kube_sink *s, const struct kube_event *ev)
{
	int r = 0;

	if (s->streaming && ev->type != KUBE_EV_ERROR)
		return stream_apply(s, ev);
	switch (ev->type) {
	case KUBE_EV_ADDED:
	case KUBE_EV_MODIFIED:
		if (s->res == KUBE_RES_NODE) {
			struct kube_node n;

			if (kube_node_parse(ev->object.p, ev->object.len, &n) == 0)
				r = node_publish(s, &n, true);
		} else {
			r = apply_object(s, ev);
		}
		s->events++;
		break;
	case KUBE_EV_DELETED:
		if (s->res == KUBE_RES_NODE)
			r = node_publish(s, NULL, false);
		else
			r = remove_key(s, ev->ns[0] ? ev->ns : "default", ev->name);
		s->events++;
		break;
	case KUBE_EV_BOOKMARK:
		s->bookmarks++;
		break;
	case KUBE_EV_ERROR:
		return -EINVAL;
	}
	if (r < 0)
		return r;
	memcpy(s->rv, ev->rv, sizeof(s->rv));
	return 0;
}

void kube_sink_watch_begin(struct kube_sink *s)
{
	framer_reset(&s->framer);
}

struct feed_ctx {
	struct kube_sink *s;
	enum kube_watch_verdict verdict;
	char *why;
	size_t whylen;
};

static int watch_line(const char *line, size_t len, void *userdata)
{
	struct feed_ctx *f = userdata;
	struct kube_event ev;
	int r;

	r = kube_event_parse(line, len, &ev, f->why, f->whylen);
	if (r < 0) {
		f->verdict = KUBE_WATCH_BROKEN;
		return r;
	}
	if (ev.type == KUBE_EV_ERROR) {
		snprintf(f->why, f->whylen, "watch ERROR %d %s: %s", ev.status.code,
			 ev.status.reason[0] ? ev.status.reason : "-", ev.status.message);
		f->verdict = ev.status.code == 410 ? KUBE_WATCH_EXPIRED : KUBE_WATCH_BROKEN;
		return -EPROTO;
	}
	r = kube_sink_apply(f->s, &ev);
	if (r == -EPROTONOSUPPORT) {
		snprintf(f->why, f->whylen,
			 "a %s event before the k8s.io/initial-events-end bookmark: the server "
			 "did not stream the initial state (sendInitialEvents)",
			 ev.type == KUBE_EV_BOOKMARK ? "BOOKMARK" : ev.type == KUBE_EV_DELETED ? "DELETED" : "MODIFIED");
		f->verdict = KUBE_WATCH_NOSTREAM;
		return r;
	}
	if (r == -E2BIG) {
		snprintf(f->why, f->whylen,
			 "a watch event for %s/%s: more than %zu %s, the limit (as for a list)",
			 ev.ns, ev.name, f->s->max_items, kube_res_name(f->s->res));
		f->verdict = KUBE_WATCH_BROKEN;
		return r;
	}
	if (r < 0) {
		snprintf(f->why, f->whylen, "applying a watch event: %s", strerror(-r));
		f->verdict = KUBE_WATCH_NOMEM;
		return r;
	}
	return 0;
}

enum kube_watch_verdict kube_sink_watch_feed(struct kube_sink *s, const char *data, size_t n,
					     char *why, size_t whylen)
{
	struct feed_ctx f = { .s = s, .verdict = KUBE_WATCH_OK, .why = why, .whylen = whylen };
	int r;

	r = framer_feed(&s->framer, data, n, watch_line, &f);
	if (r == -EFBIG) {
		snprintf(why, whylen, "a watch event longer than %u bytes", KUBE_MAX_EVENT);
		return KUBE_WATCH_BROKEN;
	}
	if (r == -ENOMEM && f.verdict == KUBE_WATCH_OK) {
		snprintf(why, whylen, "out of memory reading the watch");
		return KUBE_WATCH_NOMEM;
	}
	return f.verdict;
}

char *kube_query_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return out;
}
