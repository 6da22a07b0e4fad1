/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness for the JSON decoders (src/sources/decode*.c).
 *
 * Each input is decoded as a file (decode_buffer) twice, item by item where
 * the document allows it and as a whole tree: the two must agree exactly
 * (return code, every item's key, every diagnostic).  It is also walked as
 * etcd-load walks it (decode_walk) and decoded as one etcd value
 * (decode_object) of a kind picked from the input's length, which covers
 * the original (2014) format's objects too.  ASan/UBSan/LSan report the
 * rest; any mismatch aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/decode/decode.h"
#include "sources/decode/decodecache.h"

static char *diag_text(const struct diag_list *d)
{
	char *t = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&t, &n);

	if (!f)
		abort();
	diag_list_print(d, f);
	fclose(f);
	return t;
}

struct result {
	int r;
	struct decoded d;
	struct diag_list diags;
	char *text;
};

static void run(const char *buf, size_t len, bool streaming, struct result *res)
{
	memset(res, 0, sizeof(*res));
	diag_list_init(&res->diags);
	decode_set_streaming(streaming);
	res->r = decode_buffer(buf, len, "fuzz.json", &res->d, &res->diags);
	decode_set_streaming(true);
	res->text = diag_text(&res->diags);
}

/* Decoded with a cache of items kept from earlier decodes. */
static void run_cached(const char *buf, size_t len, struct decode_cache *cache,
		       struct result *res)
{
	memset(res, 0, sizeof(*res));
	diag_list_init(&res->diags);
	res->r = decode_buffer_cached(buf, len, "fuzz.json", cache, &res->d, &res->diags);
	res->text = diag_text(&res->diags);
}

/* Not only the same names: the same objects. */
static void same_objects(const struct result *a, const struct result *b)
{
	for (size_t i = 0; i < a->d.n_services; i++)
		if (!service_equal(a->d.services[i], b->d.services[i]))
			abort();
	for (size_t i = 0; i < a->d.n_slices; i++)
		if (!epslice_equal(a->d.slices[i], b->d.slices[i]))
			abort();
}

static void result_done(struct result *res)
{
	decoded_done(&res->d);
	diag_list_done(&res->diags);
	free(res->text);
}

static void same(const struct result *a, const struct result *b)
{
	size_t i;

	if (a->r != b->r || a->d.n_services != b->d.n_services ||
	    a->d.n_slices != b->d.n_slices || strcmp(a->text, b->text) != 0) {
		fprintf(stderr, "streamed and whole-tree decodes differ:\n r %d / %d\n"
				" services %zu / %zu, slices %zu / %zu\n--- streamed\n%s--- tree\n%s",
			a->r, b->r, a->d.n_services, b->d.n_services, a->d.n_slices,
			b->d.n_slices, a->text, b->text);
		abort();
	}
	for (i = 0; i < a->d.n_services; i++)
		if (strcmp(a->d.services[i]->ns, b->d.services[i]->ns) ||
		    strcmp(a->d.services[i]->name, b->d.services[i]->name))
			abort();
	for (i = 0; i < a->d.n_slices; i++)
		if (strcmp(a->d.slices[i]->ns, b->d.slices[i]->ns) ||
		    strcmp(a->d.slices[i]->name, b->d.slices[i]->name))
			abort();
}

static int count_item(const struct decode_walk_item *it, void *userdata)
{
	size_t *n = userdata;

	if (!it->obj || !it->where || (!it->legacy && !it->kind))
		abort();
	++*n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const kinds[] = { "Service", "EndpointSlice", "Endpoints",
					     "legacy-service", "legacy-endpoints" };
	const char *buf = (const char *)data;
	struct result streamed, tree;
	struct decoded d = { 0 };
	struct diag_list diags;
	size_t walked = 0;

	run(buf, size, true, &streamed);
	run(buf, size, false, &tree);
	same(&streamed, &tree);
	result_done(&tree);

	/* Items kept from a variant of the input (one byte flipped), then
	 * from the input itself: the decode is the uncached one. */
	{
		struct decode_cache *cache = NULL;
		struct result c;
		char *alt = malloc(size ? size : 1);

		if (!alt || decode_cache_new(&cache) < 0)
			abort();
		memcpy(alt, buf, size);
		if (size)
			alt[size / 2] ^= 0x20;
		run_cached(alt, size, cache, &c);
		result_done(&c);
		for (int k = 0; k < 2; k++) {
			run_cached(buf, size, cache, &c);
			same(&streamed, &c);
			same_objects(&streamed, &c);
			result_done(&c);
		}
		decode_cache_free(cache);
		free(alt);
	}
	result_done(&streamed);

	diag_list_init(&diags);
	(void)decode_walk(buf, size, "fuzz.json", count_item, &walked, &diags);
	diag_list_done(&diags);

	diag_list_init(&diags);
	(void)decode_object(buf, size, kinds[size % 5], size % 3 ? "default" : NULL, "web",
			    "etcd:fuzz", &d, &diags);
	decoded_done(&d);
	diag_list_done(&diags);
	return 0;
}
