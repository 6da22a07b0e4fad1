/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The API source's two wires side by side: bytes and decode time of the
 * same list in JSON and in protobuf (kubepb.c reads protobuf into the JSON
 * the decoders read), and of the same watch stream fed to a sink.
 *   kubepb list LIST.json LIST.pb [ITERATIONS]
 *   kubepb watch STREAM.json STREAM.pb [ITERATIONS]   (kind Service)
 * Prints one line per wire: bytes, microseconds per pass, per object (CPU
 * time of the process, so that a loaded machine's waits do not count).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/merge.h"
#include "sources/decode/decode.h"
#include "sources/kube/kubepb.h"
#include "sources/kube/kubewire.h"
#include "util.h"

static char *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0)
		exit(2);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		exit(2);
	buf[n] = '\0';
	fclose(f);
	*ret_len = (size_t)n;
	return buf;
}

/* The process's CPU seconds (one thread: the decode's own time). */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One list decode; returns the items. */
static size_t list_once(const char *buf, size_t n, bool pb)
{
	struct decoded d = { 0 };
	struct diag_list diags;
	char *json = NULL, why[256];
	size_t jn = n, items;

	if (pb && kubepb_to_json(buf, n, &json, &jn, why, sizeof(why)) < 0) {
		fprintf(stderr, "kubepb: %s\n", why);
		exit(1);
	}
	diag_list_init(&diags);
	if (decode_buffer(pb ? json : buf, jn, "api", &d, &diags) < 0)
		exit(1);
	items = d.n_services + d.n_slices;
	diag_list_done(&diags);
	decoded_done(&d);
	free(json);
	return items;
}

static size_t transcode_once(const char *buf, size_t n)
{
	char *json = NULL, why[256];
	size_t jn;

	if (kubepb_to_json(buf, n, &json, &jn, why, sizeof(why)) < 0)
		exit(1);
	free(json);
	return jn;
}

static size_t watch_once(const char *buf, size_t n, bool pb)
{
	struct merge *m = merge_new();
	struct kube_sink s;
	struct kubepb_watch w;
	char why[256];
	size_t events;

	kube_sink_init(&s, KUBE_RES_SERVICES, m, merge_source_register(m, "api:services"));
	kube_sink_list_begin(&s);
	(void)kube_sink_list_commit(&s, "1");
	kube_sink_watch_begin(&s);
	kubepb_watch_init(&w);
	if (pb)
		(void)kubepb_watch_feed(&w, &s, buf, n, why, sizeof(why));
	else
		(void)kube_sink_watch_feed(&s, buf, n, why, sizeof(why));
	events = s.events + s.bookmarks;
	kubepb_watch_done(&w);
	kube_sink_done(&s);
	merge_free(m);
	return events;
}

int main(int argc, char **argv)
{
	static const char *const wire[] = { "json", "protobuf" };
	const char *path[2];
	bool watch;
	int iters;

	if (argc < 4 || (strcmp(argv[1], "list") && strcmp(argv[1], "watch"))) {
		fprintf(stderr, "usage: kubepb list|watch FILE.json FILE.pb [ITERATIONS]\n");
		return 2;
	}
	watch = !strcmp(argv[1], "watch");
	path[0] = argv[2];
	path[1] = argv[3];
	iters = argc > 4 ? atoi(argv[4]) : 20;
	for (int pb = 0; pb < 2; pb++) {
		size_t n, objs = 0;
		char *buf = slurp(path[pb], &n);
		double t0 = now(), us;

		for (int i = 0; i < iters; i++)
			objs = watch ? watch_once(buf, n, pb) : list_once(buf, n, pb);
		us = (now() - t0) * 1e6 / iters;
		printf("%-8s %10zu bytes %8zu %s %10.0f us/pass %8.2f us/%s %7.0f bytes/%s\n",
		       wire[pb], n, objs, watch ? "events" : "items", us, us / (double)objs,
		       watch ? "event" : "item", (double)n / (double)objs, watch ? "event" : "item");
		if (pb && !watch) {
			size_t jn = 0;

			t0 = now();
			for (int i = 0; i < iters; i++)
				jn = transcode_once(buf, n);
			us = (now() - t0) * 1e6 / iters;
			printf("%-8s %10zu bytes of JSON written in %.0f us/pass (%.2f us/item)\n",
			       "  of it:", jn, us, us / (double)objs);
		}
		free(buf);
	}
	return 0;
}
