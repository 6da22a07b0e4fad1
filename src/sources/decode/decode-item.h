/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Building items, shared by the decoders: new services and epslices, the
 * output list (struct decoded), and Kubernetes object metadata.
 */
#ifndef SVCNAT_SOURCES_DECODE_ITEM_H
#define SVCNAT_SOURCES_DECODE_ITEM_H

#include "sources/decode/decode-json.h"
#include "sources/decode/decode.h"

/* Append an item to out, taking its reference (dropped on -ENOMEM). */
int dec_add_service(struct decoded *out, struct service *s);
int dec_add_slice(struct decoded *out, struct epslice *e);

/* Zeroed items with one reference (a service with the API's default
 * session-affinity timeout); NULL when out of memory. */
struct service *dec_service_new(void);
struct epslice *dec_epslice_new(enum item_origin origin);

/* An object's metadata; the strings point into the tree or the key. */
struct dec_meta {
	const char *ns;
	const char *name;
	const cJSON *labels; /* object or NULL */
};

/*
 * metadata.namespace / name (falling back to key_ns / key_name, then
 * "default" for the namespace), validated: name by name_ok (name_what in
 * the error), the namespace as a DNS-1123 label.  Sets the diag object
 * label ("ns/name" for a Service, "<kind> ns/name" otherwise); warns when
 * the name differs from key_name.  0, -EINVAL, -ENOMEM.
 */
int dec_get_meta(struct dctx *c, const cJSON *j, const char *kind, const char *key_ns,
		 const char *key_name, bool (*name_ok)(const char *), const char *name_what,
		 struct dec_meta *m);

/* Label `key` of labels (may be NULL) as a validated label value; *ret
 * NULL when absent. */
int dec_get_label(struct dctx *c, const cJSON *labels, const char *key, const char **ret);

#endif
