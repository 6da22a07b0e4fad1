/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SVCNAT_SOURCES_DECODE_LEGACY_H
#define SVCNAT_SOURCES_DECODE_LEGACY_H

#include "sources/decode/decode-json.h"
#include "sources/decode/decode.h"

/*
 * Endpoints of j (["ip:port" or "[v6]:port", ...], may be absent) into
 * epslices of service ns/name (origin ORIGIN_LEGACY), one per (port,
 * family), ports of protocol proto.  0, -EINVAL (one diag), -ENOMEM.
 */
int decode_legacy_endpoints(struct dctx *c, const cJSON *j, const char *ns,
			    const char *name, uint8_t proto, struct decoded *out);

/* j's Name (or the original api.Service's "ID"), falling back to key_name
 * (may be NULL), checked by dec_is_legacy_name(); *ret points into j or is
 * key_name. */
int decode_legacy_name(struct dctx *c, const cJSON *j, const char *key_name, const char **ret);

/*
 * One entry {"Name", "Port", "Protocol", "ContainerPort", "Endpoints"} into
 * a NodePort-style service in namespace key_ns (or "default"), and with
 * with_endpoints its epslices too.  0, -EINVAL (one diag), -ENOMEM.
 */
int decode_legacy_service(struct dctx *c, const cJSON *j, const char *key_ns,
			  const char *key_name, bool with_endpoints,
			  struct decoded *out);

#endif
