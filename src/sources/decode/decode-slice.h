/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SVCNAT_SOURCES_DECODE_SLICE_H
#define SVCNAT_SOURCES_DECODE_SLICE_H

#include "sources/decode/decode-json.h"
#include "sources/decode/decode.h"

/*
 * A discovery.k8s.io/v1 EndpointSlice j into a new struct epslice (origin
 * ORIGIN_K8S) appended to out; the slice names its service by the
 * kubernetes.io/service-name label.  key_ns/key_name as for
 * decode_service().  Returns 0, -EINVAL (one diag, nothing appended),
 * -ENOMEM.
 */
int decode_endpointslice(struct dctx *c, const cJSON *j, const char *key_ns,
			 const char *key_name, struct decoded *out);

#endif
