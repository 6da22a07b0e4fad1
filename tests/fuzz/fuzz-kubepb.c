/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness for the API source's protobuf wire
 * (src/sources/kube/kubepb.c): the input is read as an enveloped object or
 * list, as one watch frame's WatchEvent, and as a watch stream fed in
 * pieces to a sink over the real merge engine and decoders.  Oracles: what
 * reads comes out as one JSON object (that the JSON half then takes as any
 * answer, list page or Node); a refusal or a stream that ends says why.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/merge.h"
#include "sources/kube/kubepb.h"
#include "sources/kube/kubewire.h"

static void check_json(int r, char *json, size_t n, const char *why)
{
	cJSON *j;

	if (r < 0) {
		if (json || !why[0])
			abort();
		return;
	}
	if (!json || strlen(json) != n)
		abort();
	j = cJSON_ParseWithLength(json, n);
	if (!cJSON_IsObject(j))
		abort();
	cJSON_Delete(j);
}

static void as_list(const char *json, size_t n)
{
	struct merge *m = merge_new();
	struct kube_list_meta meta;
	struct kube_node node;
	struct kube_sink s;

	if (!m)
		abort();
	kube_sink_init(&s, KUBE_RES_SLICES, m, merge_source_register(m, "api:endpointslices"));
	(void)kube_node_parse(json, n, &node);
	if (kube_list_meta_parse(json, n, &meta) == 0) {
		kube_sink_list_begin(&s);
		if (kube_sink_list_page(&s, json, n, &meta) == 0)
			(void)kube_sink_list_commit(&s, meta.rv);
		else
			kube_sink_list_abort(&s);
		kube_list_meta_done(&meta);
	}
	(void)merge_flush(m);
	kube_sink_done(&s);
	merge_free(m);
}

static void stream(const char *buf, size_t size)
{
	struct merge *m = merge_new();
	struct kubepb_watch w;
	struct kube_sink s;
	size_t off = 0, step = size ? (unsigned char)buf[size - 1] % 29 + 1 : 1;
	char why[256];

	if (!m)
		abort();
	kube_sink_init(&s, KUBE_RES_SERVICES, m, merge_source_register(m, "api:services"));
	kube_sink_watch_begin(&s);
	kubepb_watch_init(&w);
	while (off < size) {
		size_t n = size - off < step ? size - off : step;

		why[0] = '\0';
		if (kubepb_watch_feed(&w, &s, buf + off, n, why, sizeof(why)) != KUBE_WATCH_OK) {
			if (!why[0])
				abort();
			kubepb_watch_reset(&w);
			kube_sink_watch_begin(&s);
		}
		off += n;
	}
	(void)merge_flush(m);
	kubepb_watch_done(&w);
	kube_sink_done(&s);
	merge_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *json = NULL, why[256] = "";
	size_t n = 0;
	int r;

	r = kubepb_to_json(data, size, &json, &n, why, sizeof(why));
	check_json(r, json, n, why);
	if (r == 0)
		as_list(json, n);
	free(json);
	json = NULL;
	why[0] = '\0';
	r = kubepb_event_to_json(data, size, "Service", &json, &n, why, sizeof(why));
	check_json(r, json, n, why);
	free(json);
	stream((const char *)data, size);
	return 0;
}
