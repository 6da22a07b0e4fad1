/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plansync: the user-space cost of one change as the daemon plans it.
 *
 *   plansync BEFORE.json AFTER.json [REPS]
 *
 * Reads both files (contrib/bench/gen.py's, e.g. --change endpoint), plans
 * BEFORE once into a plan store (the daemon's first sync), then REPS times
 * (default 5) switches to the other file and times, for that one change:
 * merge (flush and diff), resolve (delta_resolve), the IPv4 plan as it
 * was built before the store (plan_build(), names kept: bench_full) and
 * the stores' updates (bench_update: IPv4, then the IPv6 plan the daemon
 * makes too where it writes ip6tables).  Medians in seconds on stdout; under
 * callgrind, --toggle-collect=bench_full or =bench_update counts the
 * instructions of one of the two.  IPv4, the daemon's settings of
 * contrib/bench/run.py (node 198.18.0.1, node-a, cluster CIDR
 * 198.18.64.0/18).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/chainname.h"
#include "core/delta.h"
#include "core/merge.h"
#include "core/plan.h"
#include "core/planstore.h"
#include "core/resolve.h"
#include "sources/file/file.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), dcmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Kept out of line for callgrind's --toggle-collect. */
int bench_full(const struct desired *d, const struct plan_settings *s);
int bench_update(struct plan_store *st, const struct desired *d, const struct plan_settings *s,
		 const struct merge_changes *ch, struct plan_store_info *info);

__attribute__((noinline)) int bench_full(const struct desired *d, const struct plan_settings *s)
{
	struct ruleset *rs = NULL;
	int r = plan_build(d, s, &rs, NULL, NULL);

	ruleset_free(rs);
	return r;
}

__attribute__((noinline)) int bench_update(struct plan_store *st, const struct desired *d,
					   const struct plan_settings *s,
					   const struct merge_changes *ch, struct plan_store_info *info)
{
	struct plan_stats stats;

	return plan_store_update(st, d, s, ch, false, &stats, info, NULL);
}

static int load(struct merge *m, int src, const char *path)
{
	struct decoded dec = { 0 };
	struct diag_list dl;
	int r;

	diag_list_init(&dl);
	r = file_source_read(path, &dec, &dl);
	diag_list_done(&dl);
	if (r < 0) {
		fprintf(stderr, "%s: cannot read (%d)\n", path, r);
		return r;
	}
	r = merge_update(m, src, MERGE_SET, dec.services, dec.n_services, dec.slices,
			 dec.n_slices);
	decoded_done(&dec);
	return r < 0 ? r : merge_flush(m);
}

int main(int argc, char **argv)
{
	struct resolve_opts ro = { .hostname = "node-a", .family = 0 };
	struct plan_settings ps;
	struct ipaddr node;
	struct ipnet cidr;
	struct merge *m = merge_new();
	struct plan_store *st = plan_store_new(), *st6 = plan_store_new();
	struct chain_hasher *h = chain_hasher_new_memo();
	struct merge_snapshot *prev;
	struct desired cur = { 0 };
	int reps = argc > 3 ? atoi(argv[3]) : 5, src;
	double *t_merge, *t_resolve, *t_full, *t_update, *t_update6;
	struct plan_settings ps6;
	size_t planned = 0, changed = 0;

	if (argc < 3 || reps < 1) {
		fprintf(stderr, "usage: plansync BEFORE.json AFTER.json [REPS]\n");
		return 2;
	}
	t_merge = calloc((size_t)reps, sizeof(double));
	t_resolve = calloc((size_t)reps, sizeof(double));
	t_full = calloc((size_t)reps, sizeof(double));
	t_update = calloc((size_t)reps, sizeof(double));
	t_update6 = calloc((size_t)reps, sizeof(double));
	if (!m || !st || !st6 || !h || !t_merge || !t_resolve || !t_full || !t_update || !t_update6)
		return 1;
	ipaddr_parse("198.18.0.1", &node);
	ipnet_parse("198.18.64.0/18", &cidr);
	plan_settings_init(&ps);
	ps.hostname = "node-a";
	ps.node_ips = &node;
	ps.n_node_ips = 1;
	ps.local_addrs = &node;
	ps.n_local_addrs = 1;
	ps.cluster_cidrs = &cidr;
	ps.n_cluster_cidrs = 1;
	ps.hasher = h;
	/* The IPv6 plan the daemon makes too where ip6tables is written. */
	ps6 = ps;
	ps6.family = AF_INET6;
	ps6.dual_stack = ps.dual_stack = true;
	ps6.hasher = NULL;
	src = merge_source_register(m, "bench");
	if (src < 0 || load(m, src, argv[1]) < 0)
		return 1;
	prev = merge_snapshot_get(m);
	if (!prev || resolve_build(prev, &ro, &cur, NULL) < 0 ||
	    plan_store_update(st, &cur, &ps, NULL, false, NULL, NULL, NULL) < 0 ||
	    plan_store_update(st6, &cur, &ps6, NULL, false, NULL, NULL, NULL) < 0)
		return 1;
	for (int i = 0; i < reps; i++) {
		struct merge_changes ch = { 0 };
		struct plan_store_info info, info6;
		struct merge_snapshot *snap;
		struct desired next = { 0 };
		double t0, t1;

		if (load(m, src, argv[i % 2 ? 1 : 2]) < 0)
			return 1;
		t0 = now();
		snap = merge_snapshot_get(m);
		if (!snap || merge_snapshot_diff(prev, snap, &ch) < 0)
			return 1;
		t1 = now();
		t_merge[i] = t1 - t0;
		if (delta_resolve(&cur, snap, &ch, &ro, &next, NULL, NULL) < 0)
			return 1;
		t0 = now();
		t_resolve[i] = t0 - t1;
		desired_free(&cur);
		cur = next;
		if (bench_full(&cur, &ps) < 0)
			return 1;
		t1 = now();
		t_full[i] = t1 - t0;
		if (bench_update(st, &cur, &ps, &ch, &info) < 0)
			return 1;
		t0 = now();
		t_update[i] = t0 - t1;
		if (bench_update(st6, &cur, &ps6, &ch, &info6) < 0)
			return 1;
		t_update6[i] = now() - t0;
		planned = info.ports_planned;
		changed = info.chains_changed;
		merge_changes_done(&ch);
		merge_snapshot_unref(prev);
		prev = snap;
	}
	printf("service_ports %zu\nmerge_s %.6f\nresolve_s %.6f\nplan_full_s %.6f\n"
	       "plan_update_s %.6f\nplan_update6_s %.6f\nports_planned %zu\nchains_changed %zu\n",
	       cur.n_ports, median(t_merge, reps), median(t_resolve, reps), median(t_full, reps),
	       median(t_update, reps), median(t_update6, reps), planned, changed);
	desired_free(&cur);
	merge_snapshot_unref(prev);
	plan_store_free(st);
	plan_store_free(st6);
	chain_hasher_free(h);
	merge_free(m);
	free(t_merge);
	free(t_resolve);
	free(t_full);
	free(t_update);
	free(t_update6);
	return 0;
}
