/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>

#include "sources/decode/decode-item.h"
#include "sources/decode/decode-names.h"

#define DEFAULT_AFFINITY_TIMEOUT 10800

int dec_add_service(struct decoded *out, struct service *s)
{
	if (GROW(out->services, out->cap_services, out->n_services + 1) < 0) {
		service_unref(s);
		return -ENOMEM;
	}
	out->services[out->n_services++] = s;
	return 0;
}

int dec_add_slice(struct decoded *out, struct epslice *e)
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

struct service *dec_service_new(void)
{
	struct service *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->refcnt = 1;
	s->affinity_timeout = DEFAULT_AFFINITY_TIMEOUT;
	return s;
}

struct epslice *dec_epslice_new(enum item_origin origin)
{
	struct epslice *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->refcnt = 1;
	e->origin = origin;
	return e;
}

/* --- metadata --- */

/*
 * metadata.namespace / name (falling back to key_ns / key_name, then
 * "default" for the namespace), validated; sets the diag object label.
 */
int dec_get_meta(struct dctx *c, const cJSON *j, const char *kind, const char *key_ns,
		 const char *key_name, bool (*name_ok)(const char *), const char *name_what,
		 struct dec_meta *m)
{
	const cJSON *md;
	size_t l;
	int r;

	*m = (struct dec_meta){ 0 };
	dec_set_object(c, kind, NULL, NULL);
	r = dec_get_object(c, j, "metadata", &md);
	if (r < 0)
		return r;
	l = dec_path_key(c, "metadata");
	r = dec_get_str(c, md, "namespace", &m->ns);
	if (r == 0)
		r = dec_get_str(c, md, "name", &m->name);
	if (r == 0)
		r = dec_get_object(c, md, "labels", &m->labels);
	dec_path_pop(c, l);
	if (r < 0)
		return r;
	if (!m->ns || !*m->ns)
		m->ns = key_ns && *key_ns ? key_ns : "default";
	if (!m->name || !*m->name)
		m->name = key_name && *key_name ? key_name : NULL;
	if (!m->name)
		return dec_fail_at(c, "metadata.name", "missing");
	l = dec_path_key(c, "metadata.name");
	r = dec_check_name(c, m->name, name_ok, name_what);
	dec_path_pop(c, l);
	if (r < 0)
		return r;
	l = dec_path_key(c, "metadata.namespace");
	r = dec_check_name(c, m->ns, dec_is_dns1123_label, "namespace");
	dec_path_pop(c, l);
	if (r < 0)
		return r;
	/* A Service is named plainly, the endpoint kinds with their kind. */
	dec_set_object(c, streq(kind, "Service") ? NULL : kind, m->ns, m->name);
	if (!key_name || !*key_name || streq(key_name, m->name))
		return 0;
	l = dec_path_key(c, "metadata.name");
	r = dec_report(c, DIAG_WARNING, "name '%s' differs from the key's '%s'; using '%s'",
		       m->name, key_name, m->name);
	dec_path_pop(c, l);
	return r;
}

/* Label `key` as a validated label value; NULL when absent. */
int dec_get_label(struct dctx *c, const cJSON *labels, const char *key, const char **ret)
{
	const cJSON *j = dec_get(labels, key);
	size_t l;
	int r;

	*ret = NULL;
	if (!j)
		return 0;
	l = dec_path_push(c, "metadata.labels[\"%s\"]", key);
	r = dec_check_str(c, j, ret);
	if (r == 0)
		r = dec_check_name(c, *ret, dec_is_label_value, "label value");
	dec_path_pop(c, l);
	return r;
}
