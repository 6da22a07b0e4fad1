/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SVCNAT_SOURCES_DECODE_ENDPOINTS_H
#define SVCNAT_SOURCES_DECODE_ENDPOINTS_H

#include "sources/decode/decode-json.h"
#include "sources/decode/decode.h"

/*
 * A v1 Endpoints object j into epslices (origin ORIGIN_K8S_EP), one per
 * distinct (port set, address family) of its subsets, named as
 * decode-group.h says; with no addresses at all, one empty epslice.
 * Returns 0, -EINVAL (one diag, nothing appended), -ENOMEM.
 */
int decode_endpoints(struct dctx *c, const cJSON *j, const char *key_ns,
		     const char *key_name, struct decoded *out);

#endif
