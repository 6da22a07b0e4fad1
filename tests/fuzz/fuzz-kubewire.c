/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness for the Kubernetes API source's wire half
 * (src/sources/kube/kubewire.c): the input is read as a JSON object to scan for
 * members, a list page, a Status, a watch event, a Node, and a watch
 * stream fed in pieces to a sink over the real merge engine and decoders.
 * Oracles: member spans lie inside the input and start where a value can;
 * every object cJSON accepts (without control characters, which cJSON
 * takes as white space) the scanner accepts too.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/merge.h"
#include "sources/kube/kubewire.h"

static void members(const char *buf, size_t size)
{
	static const char *const keys[] = { "kind", "metadata", "items", "type", "object" };
	struct kube_span sp[5];
	bool plain = true;
	cJSON *j;
	int r;

	r = kube_json_members(buf, size, keys, 5, sp);
	for (size_t i = 0; r == 0 && i < 5; i++) {
		if (!sp[i].p)
			continue;
		if (sp[i].p < buf || sp[i].p + sp[i].len > buf + size || !sp[i].len)
			abort();
		if (sp[i].p[0] == ',' || sp[i].p[0] == ':' || sp[i].p[0] == '}' || sp[i].p[0] == ']')
			abort();
	}
	for (size_t i = 0; i < size; i++)
		if ((unsigned char)buf[i] < 0x20 && buf[i] != '\t' && buf[i] != '\n' && buf[i] != '\r')
			plain = false;
	/* cJSON skips a UTF-8 byte order mark at the very start; the API
	 * server never sends one and Go's decoder refuses it, as the scanner
	 * does, so such an input is no disagreement. */
	if (size >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		plain = false;
	j = cJSON_ParseWithLengthOpts(buf, size, NULL, 0);
	if (j && cJSON_IsObject(j) && plain && r != 0) {
		/* cJSON stops at the end of the value: only a whole-input object counts. */
		const char *end = NULL;
		cJSON *k = cJSON_ParseWithLengthOpts(buf, size, &end, 0);

		while (end && end < buf + size && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
			end++;
		if (k && end == buf + size)
			fprintf(stderr, "cJSON takes the object, the scanner does not\n"), abort();
		cJSON_Delete(k);
	}
	cJSON_Delete(j);
}

static void sink(const char *buf, size_t size)
{
	struct merge *m = merge_new();
	struct kube_list_meta meta;
	struct kube_sink s;
	size_t off = 0, step = size ? (unsigned char)buf[0] % 23 + 1 : 1;
	char why[256];
	int sid;

	if (!m)
		abort();
	sid = merge_source_register(m, "api:services");
	kube_sink_init(&s, KUBE_RES_SERVICES, m, sid);
	if (kube_list_meta_parse(buf, size, &meta) == 0) {
		kube_sink_list_begin(&s);
		if (kube_sink_list_page(&s, buf, size, &meta) == 0)
			(void)kube_sink_list_commit(&s, meta.rv);
		else
			kube_sink_list_abort(&s);
		kube_list_meta_done(&meta);
	}
	kube_sink_watch_begin(&s);
	while (off < size) {
		size_t n = size - off < step ? size - off : step;

		if (kube_sink_watch_feed(&s, buf + off, n, why, sizeof(why)) != KUBE_WATCH_OK) {
			if (!why[0])
				abort();
			kube_sink_watch_begin(&s);
		}
		off += n;
	}
	(void)merge_flush(m);
	kube_sink_done(&s);
	merge_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct kube_status st;
	struct kube_event ev;
	struct kube_node node;
	char why[256];

	members(buf, size);
	(void)kube_status_parse(buf, size, &st);
	(void)kube_node_parse(buf, size, &node);
	if (kube_event_parse(buf, size, &ev, why, sizeof(why)) == 0 && ev.type != KUBE_EV_ERROR &&
	    ev.type != KUBE_EV_BOOKMARK && !ev.name[0])
		abort();
	sink(buf, size);
	return 0;
}
