/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SVCNAT_SOURCES_DECODE_SERVICE_H
#define SVCNAT_SOURCES_DECODE_SERVICE_H

#include "sources/decode/decode-json.h"
#include "sources/decode/decode.h"

/*
 * A v1 Service object j into a new struct service appended to out.
 * key_ns/key_name (may be NULL) stand in for missing metadata (etcd keys).
 * Returns 0, -EINVAL (the object is invalid: one diag, nothing appended),
 * -ENOMEM.
 */
int decode_service(struct dctx *c, const cJSON *j, const char *key_ns,
		   const char *key_name, struct decoded *out);

#endif
