/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Kubernetes' protobuf wire, read into the API's JSON (kubepb.h).  One walk
 * over protobuf-c's descriptors writes every field of k8s.proto under its
 * JSON name; the two types whose JSON is not their message (IntOrString,
 * Time) are written as the API writes them.  The wire is that of
 * k8s.io/apimachinery pkg/runtime/serializer/protobuf (protobuf.go: the
 * "k8s\0" prefix and runtime.Unknown) and its LengthDelimitedFramer.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sources/kube/kubepb.h"
#include "sources/kube/proto/k8s.pb-c.h"
#include "util.h"

static const uint8_t magic[4] = { 'k', '8', 's', 0 };

bool kubepb_is(const void *buf, size_t len)
{
	return len >= sizeof(magic) && !memcmp(buf, magic, sizeof(magic));
}

bool kubepb_content_type(const char *ct)
{
	size_t n = strlen(KUBEPB_CONTENT_TYPE);

	if (!ct)
		return false;
	while (*ct == ' ')
		ct++;
	return !strncasecmp(ct, KUBEPB_CONTENT_TYPE, n) &&
	       (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static const struct {
	const char *kind;
	const ProtobufCMessageDescriptor *desc;
} kinds[] = {
	{ "Service", &svcnat__k8s__service__descriptor },
	{ "ServiceList", &svcnat__k8s__service_list__descriptor },
	{ "EndpointSlice", &svcnat__k8s__endpoint_slice__descriptor },
	{ "EndpointSliceList", &svcnat__k8s__endpoint_slice_list__descriptor },
	{ "Node", &svcnat__k8s__node__descriptor },
	{ "NodeList", &svcnat__k8s__node_list__descriptor },
	{ "Status", &svcnat__k8s__status__descriptor },
};

static const ProtobufCMessageDescriptor *kind_desc(const char *kind)
{
	for (size_t i = 0; kind && i < ARRAY_SIZE(kinds); i++)
		if (streq(kinds[i].kind, kind))
			return kinds[i].desc;
	return NULL;
}

static cJSON *msg_json(const ProtobufCMessage *m);

/* intstr.IntOrString: Type 0 is intVal, 1 strVal (intstr.go MarshalJSON). */
static cJSON *intstr_json(const Svcnat__K8s__IntOrString *v)
{
	if (v->has_type && v->type == 1)
		return cJSON_CreateString(v->strval ? v->strval : "");
	return cJSON_CreateNumber(v->has_intval ? v->intval : 0);
}

/* meta/v1 Time as RFC 3339 (time.go MarshalJSON, whole seconds). */
static cJSON *time_json(const Svcnat__K8s__Time *t)
{
	char buf[64];
	struct tm tm;
	time_t s = (time_t)t->seconds;

	if (t->seconds >= -62135596800LL && t->seconds <= 253402300799LL && gmtime_r(&s, &tm))
		strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	else
		snprintf(buf, sizeof(buf), "%" PRId64, t->seconds);
	return cJSON_CreateString(buf);
}

static bool is_map_entry(const ProtobufCMessageDescriptor *d)
{
	return d->n_fields == 2 && streq(d->fields[0].name, "key") &&
	       streq(d->fields[1].name, "value");
}

/* One value of field f at p (a member, or an element of a repeated one). */
static cJSON *value_json(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
		return cJSON_CreateNumber(*(const int32_t *)p);
	case PROTOBUF_C_TYPE_INT64:
		return cJSON_CreateNumber((double)*(const int64_t *)p);
	case PROTOBUF_C_TYPE_BOOL:
		return cJSON_CreateBool(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_STRING:
		return cJSON_CreateString(*(char *const *)p);
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *m = *(ProtobufCMessage *const *)p;

		if (f->descriptor == &svcnat__k8s__int_or_string__descriptor)
			return intstr_json((const Svcnat__K8s__IntOrString *)m);
		if (f->descriptor == &svcnat__k8s__time__descriptor)
			return time_json((const Svcnat__K8s__Time *)m);
		return msg_json(m);
	}
	default:
		/* bytes: the envelopes' raw, read by the callers */
		return NULL;
	}
}

static size_t elem_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
		return sizeof(int32_t);
	case PROTOBUF_C_TYPE_INT64:
		return sizeof(int64_t);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	default:
		return sizeof(void *);
	}
}

/* map<string, string> as a JSON object; a repeated key keeps its last
 * value, as Go's decoder does. */
static int map_add(cJSON *obj, const ProtobufCMessage *e)
{
	const char *k = *(char *const *)((const char *)e + e->descriptor->fields[0].offset);
	const char *v = *(char *const *)((const char *)e + e->descriptor->fields[1].offset);
	cJSON *s = cJSON_CreateString(v ? v : "");

	if (!s)
		return -ENOMEM;
	cJSON_DeleteItemFromObjectCaseSensitive(obj, k ? k : "");
	if (!cJSON_AddItemToObject(obj, k ? k : "", s)) {
		cJSON_Delete(s);
		return -ENOMEM;
	}
	return 0;
}

static int field_add(cJSON *obj, const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	const char *member = (const char *)m + f->offset;
	cJSON *v = NULL;

	if (f->type == PROTOBUF_C_TYPE_BYTES)
		return 0;
	if (f->label == PROTOBUF_C_LABEL_REPEATED) {
		size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
		const char *arr = *(char *const *)member;
		bool map = f->type == PROTOBUF_C_TYPE_MESSAGE && is_map_entry(f->descriptor);

		if (n == 0 && !streq(f->name, "items"))
			return 0;
		v = map ? cJSON_CreateObject() : cJSON_CreateArray();
		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			const void *p = arr + i * elem_size(f);
			cJSON *e;

			if (map) {
				if (map_add(v, *(ProtobufCMessage *const *)p) < 0)
					goto nomem;
				continue;
			}
			e = value_json(f, p);
			if (!e || !cJSON_AddItemToArray(v, e)) {
				cJSON_Delete(e);
				goto nomem;
			}
		}
	} else {
		if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE) {
			if (!*(void *const *)member)
				return 0;
		} else if (!*(const protobuf_c_boolean *)((const char *)m + f->quantifier_offset)) {
			return 0;
		}
		v = value_json(f, member);
		if (!v)
			return -ENOMEM;
	}
	if (cJSON_AddItemToObject(obj, f->name, v))
		return 0;
nomem:
	cJSON_Delete(v);
	return -ENOMEM;
}

static int msg_fields(cJSON *obj, const ProtobufCMessage *m)
{
	for (unsigned i = 0; i < m->descriptor->n_fields; i++)
		if (field_add(obj, m, &m->descriptor->fields[i]) < 0)
			return -ENOMEM;
	return 0;
}

static cJSON *msg_json(const ProtobufCMessage *m)
{
	cJSON *obj = cJSON_CreateObject();

	if (obj && msg_fields(obj, m) < 0) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(cJSON *, cJSON_Delete);

static void unknown_freep(Svcnat__K8s__Unknown **u)
{
	if (*u)
		svcnat__k8s__unknown__free_unpacked(*u, NULL);
}

static void message_freep(ProtobufCMessage **m)
{
	if (*m)
		protobuf_c_message_free_unpacked(*m, NULL);
}

static bool wire_varint(const uint8_t **p, const uint8_t *e, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64 && *p < e; shift += 7) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

/*
 * Whether a string field of message d in buf holds a NUL byte, at any
 * depth.  protobuf-c gives strings as C strings, so "10.0.0.1\0junk" would
 * read as "10.0.0.1", where the JSON decoder refuses the object; such an
 * answer is refused whole instead.  A malformed buffer is left to
 * protobuf-c's unpack to refuse (false).
 */
static bool wire_has_nul(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len,
			 unsigned depth)
{
	const uint8_t *e;
	uint64_t key, n;

	if (!p) /* an envelope without raw bytes: an empty message */
		return false;
	e = p + len;
	while (p < e) {
		const ProtobufCFieldDescriptor *f;

		if (!wire_varint(&p, e, &key))
			return false;
		switch (key & 7) {
		case 0:
			if (!wire_varint(&p, e, &n))
				return false;
			continue;
		case 1:
		case 5:
			n = (key & 7) == 1 ? 8 : 4;
			if (n > (uint64_t)(e - p))
				return false;
			p += n;
			continue;
		case 2:
			break;
		default:
			return false;
		}
		if (!wire_varint(&p, e, &n) || n > (uint64_t)(e - p))
			return false;
		f = key >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3))
					   : NULL;
		if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p, 0, n))
			return true;
		if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && depth < 16 &&
		    wire_has_nul(f->descriptor, p, n, depth + 1))
			return true;
		p += n;
	}
	return false;
}

/* Whether wire type wt can carry field f (packed repeated scalars come as
 * length-delimited). */
static bool wire_type_fits(const ProtobufCFieldDescriptor *f, unsigned wt)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_BYTES:
	case PROTOBUF_C_TYPE_MESSAGE:
		return wt == 2;
	default:
		return wt == 0 || (wt == 2 && f->label == PROTOBUF_C_LABEL_REPEATED);
	}
}

#define WHERE_MAX_FIELDS 64

/*
 * Where message d's wire in p fails to read, as the API's field path
 * ("spec.ports[1].port") in buf: protobuf-c's unpack says only that it
 * failed.  True when the fault was found (buf may be "" at the top: the
 * first key); false when the walk sees nothing wrong.
 */
static bool wire_where(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len,
		       unsigned depth, char *buf, size_t blen)
{
	unsigned seen[WHERE_MAX_FIELDS] = { 0 };
	const char *last = NULL;
	const uint8_t *e = p + len;
	uint64_t key, n;

	buf[0] = '\0';
	while (p && p < e) {
		const ProtobufCFieldDescriptor *f;
		unsigned wt, idx = 0;

		if (!wire_varint(&p, e, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX) {
			snprintf(buf, blen, "%s%s", last ? "after " : "", last ? last : "");
			return true;
		}
		wt = (unsigned)(key & 7);
		f = protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3));
		if (f) {
			size_t fi = (size_t)(f - d->fields);

			last = f->name;
			if (fi < WHERE_MAX_FIELDS)
				idx = seen[fi]++;
			if (!wire_type_fits(f, wt)) {
				snprintf(buf, blen, "%s", f->name);
				return true;
			}
		}
		switch (wt) {
		case 0:
			if (!wire_varint(&p, e, &n))
				goto bad;
			continue;
		case 1:
		case 5:
			n = wt == 1 ? 8 : 4;
			if (n > (uint64_t)(e - p))
				goto bad;
			p += n;
			continue;
		case 2:
			if (!wire_varint(&p, e, &n) || n > (uint64_t)(e - p))
				goto bad;
			break;
		default:
			goto bad;
		}
		if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && depth < 16) {
			char sub[160];

			if (wire_where(f->descriptor, p, (size_t)n, depth + 1, sub, sizeof(sub))) {
				if (f->label == PROTOBUF_C_LABEL_REPEATED && !is_map_entry(f->descriptor))
					snprintf(buf, blen, "%s[%u]%s%s", f->name, idx,
						 sub[0] ? "." : "", sub);
				else
					snprintf(buf, blen, "%s%s%s", f->name, sub[0] ? "." : "", sub);
				return true;
			}
		}
		p += n;
	}
	return false;
bad:
	snprintf(buf, blen, "%s", last ? last : "");
	return true;
}

/* why for a message of type what that protobuf-c did not unpack. */
static void undecodable(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len,
			const char *what, char *why, size_t whylen)
{
	char where[200];

	if (wire_where(d, p, len, 0, where, sizeof(where)) && where[0])
		snprintf(why, whylen, "a protobuf %s that does not decode at %s", what, where);
	else
		snprintf(why, whylen, "a protobuf %s that does not decode", what);
}

/* The JSON object of message raw of type kind; typed: with kind and
 * apiVersion members, as the API writes an object. */
static int object_json(const uint8_t *raw, size_t len, const char *kind, const char *api_version,
		       cJSON **ret, char *why, size_t whylen)
{
	const ProtobufCMessageDescriptor *d = kind_desc(kind);
	_cleanup_(message_freep) ProtobufCMessage *m = NULL;
	_cleanup_(cJSON_Deletep) cJSON *o = NULL;

	if (!d) {
		snprintf(why, whylen, "a protobuf object of kind '%.60s', which svcnat does not read",
			 kind ? kind : "");
		return -EINVAL;
	}
	if (wire_has_nul(d, raw, len, 0)) {
		snprintf(why, whylen, "a protobuf %s with a NUL byte in a string", kind);
		return -EINVAL;
	}
	m = protobuf_c_message_unpack(d, NULL, len, raw);
	if (!m) {
		undecodable(d, raw, len, kind, why, whylen);
		return -EINVAL;
	}
	/* kind and apiVersion first, where the API writes them */
	o = cJSON_CreateObject();
	if (!o || !cJSON_AddStringToObject(o, "kind", kind) ||
	    (api_version && !cJSON_AddStringToObject(o, "apiVersion", api_version)) ||
	    msg_fields(o, m) < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(o);
	return 0;
}

/* The object of an enveloped message (magic + runtime.Unknown). */
static int envelope_json(const uint8_t *buf, size_t len, cJSON **ret, char *why, size_t whylen)
{
	_cleanup_(unknown_freep) Svcnat__K8s__Unknown *u = NULL;
	const char *kind, *av;

	if (!kubepb_is(buf, len)) {
		snprintf(why, whylen, "a protobuf answer without the k8s magic");
		return -EINVAL;
	}
	u = svcnat__k8s__unknown__unpack(NULL, len - sizeof(magic), buf + sizeof(magic));
	if (!u) {
		snprintf(why, whylen, "a protobuf answer whose envelope does not decode");
		return -EINVAL;
	}
	if (u->contentencoding && u->contentencoding[0]) {
		snprintf(why, whylen, "a protobuf answer in content encoding '%.40s'",
			 u->contentencoding);
		return -EINVAL;
	}
	kind = u->typemeta ? u->typemeta->kind : NULL;
	av = u->typemeta ? u->typemeta->apiversion : NULL;
	return object_json(u->has_raw ? u->raw.data : NULL, u->has_raw ? u->raw.len : 0, kind, av,
			   ret, why, whylen);
}

static int print_json(const cJSON *j, char **ret_json, size_t *ret_len)
{
	char *s = cJSON_PrintUnformatted(j);

	if (!s)
		return -ENOMEM;
	*ret_json = s;
	*ret_len = strlen(s);
	return 0;
}

int kubepb_to_json(const void *buf, size_t len, char **ret_json, size_t *ret_len, char *why,
		   size_t whylen)
{
	_cleanup_(cJSON_Deletep) cJSON *o = NULL;
	int r;

	r = envelope_json(buf, len, &o, why, whylen);
	if (r < 0)
		return r;
	return print_json(o, ret_json, ret_len);
}

static void watch_event_freep(Svcnat__K8s__WatchEvent **e)
{
	if (*e)
		svcnat__k8s__watch_event__free_unpacked(*e, NULL);
}

int kubepb_event_to_json(const void *buf, size_t len, const char *kind, char **ret_json,
			 size_t *ret_len, char *why, size_t whylen)
{
	_cleanup_(watch_event_freep) Svcnat__K8s__WatchEvent *ev = NULL;
	_cleanup_(cJSON_Deletep) cJSON *line = NULL;
	cJSON *obj = NULL;
	int r;

	ev = svcnat__k8s__watch_event__unpack(NULL, len, buf);
	if (!ev) {
		undecodable(&svcnat__k8s__watch_event__descriptor, buf, len, "watch event", why,
			    whylen);
		return -EINVAL;
	}
	line = cJSON_CreateObject();
	if (!line || (ev->type && !cJSON_AddStringToObject(line, "type", ev->type)))
		return -ENOMEM;
	if (ev->object && ev->object->has_raw) {
		const ProtobufCBinaryData *raw = &ev->object->raw;

		if (kubepb_is(raw->data, raw->len))
			r = envelope_json(raw->data, raw->len, &obj, why, whylen);
		else
			r = object_json(raw->data, raw->len,
					ev->type && streq(ev->type, "ERROR") ? "Status" : kind, NULL,
					&obj, why, whylen);
		if (r < 0)
			return r;
		if (!cJSON_AddItemToObject(line, "object", obj)) {
			cJSON_Delete(obj);
			return -ENOMEM;
		}
	}
	return print_json(line, ret_json, ret_len);
}

void kubepb_watch_init(struct kubepb_watch *w)
{
	*w = (struct kubepb_watch){ 0 };
}

void kubepb_watch_done(struct kubepb_watch *w)
{
	free(w->buf);
	kubepb_watch_init(w);
}

void kubepb_watch_reset(struct kubepb_watch *w)
{
	w->len = 0;
}

static size_t frame_len(const struct kubepb_watch *w)
{
	return (size_t)w->buf[0] << 24 | (size_t)w->buf[1] << 16 | (size_t)w->buf[2] << 8 |
	       w->buf[3];
}

static int reserve(struct kubepb_watch *w, size_t n)
{
	uint8_t *p;

	if (n <= w->cap)
		return 0;
	if (n < 2 * w->cap)
		n = 2 * w->cap;
	p = realloc(w->buf, n);
	if (!p)
		return -ENOMEM;
	w->buf = p;
	w->cap = n;
	return 0;
}

static enum kube_watch_verdict frame_apply(struct kubepb_watch *w, struct kube_sink *s,
					   char *why, size_t whylen)
{
	_cleanup_free_ char *line = NULL;
	size_t n;
	int r;

	r = kubepb_event_to_json(w->buf + 4, w->len - 4, kube_res_kind(s->res), &line, &n, why,
				 whylen);
	if (r == -ENOMEM) {
		snprintf(why, whylen, "out of memory reading the watch");
		return KUBE_WATCH_NOMEM;
	}
	if (r < 0)
		return KUBE_WATCH_BROKEN;
	/* the JSON stream's framer sees one whole line */
	line[n] = '\n';
	return kube_sink_watch_feed(s, line, n + 1, why, whylen);
}

enum kube_watch_verdict kubepb_watch_feed(struct kubepb_watch *w, struct kube_sink *s,
					  const char *data, size_t n, char *why, size_t whylen)
{
	while (n > 0) {
		size_t want = w->len < 4 ? 4 : 4 + frame_len(w);
		size_t take = want - w->len < n ? want - w->len : n;
		enum kube_watch_verdict v;

		/* grow with the bytes that came, not with what the length claims */
		if (reserve(w, w->len + take) < 0) {
			snprintf(why, whylen, "out of memory reading the watch");
			return KUBE_WATCH_NOMEM;
		}
		memcpy(w->buf + w->len, data, take);
		w->len += take;
		data += take;
		n -= take;
		if (w->len == 4 && frame_len(w) > KUBE_MAX_EVENT) {
			snprintf(why, whylen, "a watch event longer than %u bytes", KUBE_MAX_EVENT);
			return KUBE_WATCH_BROKEN;
		}
		if (w->len < 4 || w->len < 4 + frame_len(w))
			continue;
		v = frame_apply(w, s, why, whylen);
		w->len = 0;
		if (v != KUBE_WATCH_OK)
			return v;
	}
	return KUBE_WATCH_OK;
}
