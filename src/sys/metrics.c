/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include "sys/metrics.h"
#include "util.h"

struct series {
	char *labels;     /* "" when none */
	double value;     /* counter / gauge */
	double sum;       /* histogram */
	unsigned long long count;
	unsigned long long *bucket_counts; /* per bucket, not cumulative */
};

struct family {
	char *name;
	char *help;
	enum metric_type type;
	double *buckets;
	size_t n_buckets;
	struct series *series;
	size_t n_series, cap_series;
};

struct metrics {
	struct family *fam;
	size_t n_fam, cap_fam;
};

struct metrics *metrics_new(void)
{
	return calloc(1, sizeof(struct metrics));
}

void metrics_free(struct metrics *m)
{
	size_t i, j;

	if (!m)
		return;
	for (i = 0; i < m->n_fam; i++) {
		struct family *f = &m->fam[i];

		for (j = 0; j < f->n_series; j++) {
			free(f->series[j].labels);
			free(f->series[j].bucket_counts);
		}
		free(f->series);
		free(f->name);
		free(f->help);
		free(f->buckets);
	}
	free(m->fam);
	free(m);
}

static bool valid_name(const char *n)
{
	const char *p;

	if (!n || !*n || (*n >= '0' && *n <= '9'))
		return false;
	for (p = n; *p; p++) {
		char c = *p;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == ':'))
			return false;
	}
	return true;
}

static struct family *find_family(const struct metrics *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->n_fam; i++)
		if (streq(m->fam[i].name, name))
			return &m->fam[i];
	return NULL;
}

int metrics_declare(struct metrics *m, const char *name, enum metric_type type,
		    const char *help, const double *buckets, size_t n_buckets)
{
	_cleanup_free_ char *n = NULL;
	_cleanup_free_ char *h = NULL;
	_cleanup_free_ double *b = NULL;
	struct family *f;
	size_t i;
	int r;

	if (!valid_name(name) || (type == METRIC_HISTOGRAM) != (n_buckets > 0))
		return -EINVAL;
	for (i = 0; i < n_buckets; i++)
		if (isnan(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1]))
			return -EINVAL;
	if (find_family(m, name))
		return -EEXIST;
	n = strdup(name);
	h = strdup(help ? help : "");
	if (!n || !h)
		return -ENOMEM;
	if (n_buckets) {
		b = reallocarray_z(NULL, n_buckets, sizeof(*b));
		if (!b)
			return -ENOMEM;
		memcpy(b, buckets, n_buckets * sizeof(*b));
	}
	r = GROW(m->fam, m->cap_fam, m->n_fam + 1);
	if (r < 0)
		return r;
	f = &m->fam[m->n_fam++];
	*f = (struct family){
		.name = TAKE_PTR(n),
		.help = TAKE_PTR(h),
		.type = type,
		.buckets = TAKE_PTR(b),
		.n_buckets = n_buckets,
	};
	return 0;
}

static int get_series(struct family *f, const char *labels, struct series **ret)
{
	_cleanup_free_ char *l = NULL;
	_cleanup_free_ unsigned long long *bc = NULL;
	size_t i;
	int r;

	if (!labels)
		labels = "";
	for (i = 0; i < f->n_series; i++) {
		if (streq(f->series[i].labels, labels)) {
			*ret = &f->series[i];
			return 0;
		}
	}
	l = strdup(labels);
	if (!l)
		return -ENOMEM;
	if (f->n_buckets) {
		bc = calloc(f->n_buckets, sizeof(*bc));
		if (!bc)
			return -ENOMEM;
	}
	r = GROW(f->series, f->cap_series, f->n_series + 1);
	if (r < 0)
		return r;
	f->series[f->n_series] = (struct series){ .labels = TAKE_PTR(l), .bucket_counts = TAKE_PTR(bc) };
	*ret = &f->series[f->n_series++];
	return 0;
}

static int lookup(struct metrics *m, const char *name, enum metric_type type, const char *labels,
		  struct series **ret)
{
	struct family *f = find_family(m, name);

	if (!f)
		return -ENOENT;
	if (f->type != type)
		return -EINVAL;
	return get_series(f, labels, ret);
}

int metrics_counter_add(struct metrics *m, const char *name, const char *labels, double v)
{
	struct series *s;
	int r;

	if (!(v >= 0))
		return -EINVAL;
	r = lookup(m, name, METRIC_COUNTER, labels, &s);
	if (r < 0)
		return r;
	s->value += v;
	return 0;
}

int metrics_counter_set(struct metrics *m, const char *name, const char *labels, double v)
{
	struct series *s;
	int r;

	if (!(v >= 0))
		return -EINVAL;
	r = lookup(m, name, METRIC_COUNTER, labels, &s);
	if (r < 0)
		return r;
	s->value = v;
	return 0;
}

int metrics_gauge_set(struct metrics *m, const char *name, const char *labels, double v)
{
	struct series *s;
	int r;

	r = lookup(m, name, METRIC_GAUGE, labels, &s);
	if (r < 0)
		return r;
	s->value = v;
	return 0;
}

int metrics_touch(struct metrics *m, const char *name, const char *labels)
{
	struct family *f = find_family(m, name);
	struct series *s;

	if (!f)
		return -ENOENT;
	return get_series(f, labels, &s);
}

int metrics_histogram_observe(struct metrics *m, const char *name, const char *labels, double v)
{
	struct family *f = find_family(m, name);
	struct series *s;
	size_t i;
	int r;

	if (!f)
		return -ENOENT;
	if (f->type != METRIC_HISTOGRAM || isnan(v))
		return -EINVAL;
	r = get_series(f, labels, &s);
	if (r < 0)
		return r;
	for (i = 0; i < f->n_buckets; i++) {
		if (v <= f->buckets[i]) {
			s->bucket_counts[i]++;
			break;
		}
	}
	s->count++;
	s->sum += v;
	return 0;
}

int metrics_remove(struct metrics *m, const char *name, const char *labels)
{
	struct family *f = find_family(m, name);

	if (!f)
		return -ENOENT;
	for (size_t i = 0; i < f->n_series; i++) {
		if (!streq(f->series[i].labels, labels ? labels : ""))
			continue;
		free(f->series[i].labels);
		free(f->series[i].bucket_counts);
		memmove(&f->series[i], &f->series[i + 1], (f->n_series - i - 1) * sizeof(*f->series));
		f->n_series--;
		return 0;
	}
	return -ENOENT;
}

int metrics_get(const struct metrics *m, const char *name, const char *labels, double *ret)
{
	const struct family *f = find_family(m, name);
	size_t i;

	if (!f || f->type == METRIC_HISTOGRAM)
		return -ENOENT;
	if (!labels)
		labels = "";
	for (i = 0; i < f->n_series; i++) {
		if (streq(f->series[i].labels, labels)) {
			*ret = f->series[i].value;
			return 0;
		}
	}
	return -ENOENT;
}

char *metrics_label(char *buf, size_t len, const char *key, const char *value)
{
	size_t o = 0;
	const char *p;

#define PUT(c)                                                                 \
	do {                                                                   \
		if (o + 1 >= len)                                              \
			return NULL;                                           \
		buf[o++] = (c);                                                \
	} while (0)
	for (p = key; *p; p++)
		PUT(*p);
	PUT('=');
	PUT('"');
	for (p = value; *p; p++) {
		if (*p == '\\' || *p == '"') {
			PUT('\\');
			PUT(*p);
		} else if (*p == '\n') {
			PUT('\\');
			PUT('n');
		} else {
			PUT(*p);
		}
	}
	PUT('"');
#undef PUT
	buf[o] = '\0';
	return buf;
}

static void fmt_value(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "NaN");
	else if (isinf(v))
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, len, "%.0f", v);
	else {
		/* The shortest text that reads back as v, as Go prints floats. */
		int prec;

		for (prec = 15; prec < 17; prec++) {
			snprintf(buf, len, "%.*g", prec, v);
			if (strtod(buf, NULL) == v)
				return;
		}
		snprintf(buf, len, "%.17g", v);
	}
}

/* HELP text escapes only backslash and newline. */
static void write_help(FILE *f, const char *help)
{
	for (; *help; help++) {
		if (*help == '\\')
			fputs("\\\\", f);
		else if (*help == '\n')
			fputs("\\n", f);
		else
			fputc(*help, f);
	}
}

static int series_cmp(const void *a, const void *b)
{
	const struct series *const *x = a, *const *y = b;

	return strcmp((*x)->labels, (*y)->labels);
}

static void write_series(FILE *f, const struct family *fam, const struct series *s)
{
	char v[64];

	if (fam->type != METRIC_HISTOGRAM) {
		fmt_value(v, sizeof(v), s->value);
		if (*s->labels)
			fprintf(f, "%s{%s} %s\n", fam->name, s->labels, v);
		else
			fprintf(f, "%s %s\n", fam->name, v);
		return;
	}

	unsigned long long cum = 0;
	const char *sep = *s->labels ? "," : "";
	size_t i;

	for (i = 0; i < fam->n_buckets; i++) {
		char le[64];

		cum += s->bucket_counts[i];
		snprintf(le, sizeof(le), "%g", fam->buckets[i]);
		fprintf(f, "%s_bucket{%s%sle=\"%s\"} %llu\n", fam->name, s->labels, sep, le, cum);
	}
	fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", fam->name, s->labels, sep, s->count);
	fmt_value(v, sizeof(v), s->sum);
	if (*s->labels) {
		fprintf(f, "%s_sum{%s} %s\n", fam->name, s->labels, v);
		fprintf(f, "%s_count{%s} %llu\n", fam->name, s->labels, s->count);
	} else {
		fprintf(f, "%s_sum %s\n", fam->name, v);
		fprintf(f, "%s_count %llu\n", fam->name, s->count);
	}
}

int metrics_write(const struct metrics *m, FILE *f)
{
	static const char *const type_names[] = { "counter", "gauge", "histogram" };
	size_t i, j;

	for (i = 0; i < m->n_fam; i++) {
		const struct family *fam = &m->fam[i];
		_cleanup_free_ const struct series **sorted = NULL;

		fprintf(f, "# HELP %s ", fam->name);
		write_help(f, fam->help);
		fprintf(f, "\n# TYPE %s %s\n", fam->name, type_names[fam->type]);
		if (!fam->n_series)
			continue;
		sorted = reallocarray_z(NULL, fam->n_series, sizeof(*sorted));
		if (!sorted)
			return -ENOMEM;
		for (j = 0; j < fam->n_series; j++)
			sorted[j] = &fam->series[j];
		qsort_safe(sorted, fam->n_series, sizeof(*sorted), series_cmp);
		for (j = 0; j < fam->n_series; j++)
			write_series(f, fam, sorted[j]);
	}
	if (fflush(f) != 0 || ferror(f))
		return -EIO;
	return 0;
}

#define V4 "ip_family=\"IPv4\""

/* The series declared at 0 by metrics_declare_svcnat() (kube-proxy's with
 * ip_family="IPv4"; metrics_declare_family() adds the IPv6 ones). */
static const struct {
	const char *name;
	const char *labels;
} initial_series[] = {
	{ "kubeproxy_sync_proxy_rules_duration_seconds", V4 },
	{ "kubeproxy_sync_full_proxy_rules_duration_seconds", V4 },
	{ "kubeproxy_sync_partial_proxy_rules_duration_seconds", V4 },
	{ "kubeproxy_network_programming_duration_seconds", V4 },
	{ "svcnat_change_to_commit_duration_seconds", NULL },
	{ "kubeproxy_conntrack_reconciler_sync_duration_seconds", V4 },
	{ "kubeproxy_conntrack_reconciler_deleted_entries_total", V4 },
	{ "kubeproxy_sync_proxy_rules_last_timestamp_seconds", V4 },
	{ "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", V4 },
	{ "kubeproxy_sync_proxy_rules_iptables_total", V4 ",table=\"filter\"" },
	{ "kubeproxy_sync_proxy_rules_iptables_total", V4 ",table=\"nat\"" },
	{ "kubeproxy_sync_proxy_rules_iptables_last", V4 ",table=\"filter\"" },
	{ "kubeproxy_sync_proxy_rules_iptables_last", V4 ",table=\"nat\"" },
	{ "kubeproxy_sync_proxy_rules_iptables_restore_failures_total", V4 },
	{ "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total", V4 },
	{ "kubeproxy_sync_proxy_rules_endpoint_changes_pending", NULL },
	{ "kubeproxy_sync_proxy_rules_endpoint_changes_total", NULL },
	{ "kubeproxy_sync_proxy_rules_service_changes_pending", NULL },
	{ "kubeproxy_sync_proxy_rules_service_changes_total", NULL },
	{ "kubeproxy_sync_proxy_rules_no_local_endpoints_total", V4 ",traffic_policy=\"external\"" },
	{ "kubeproxy_sync_proxy_rules_no_local_endpoints_total", V4 ",traffic_policy=\"internal\"" },
	{ "kubeproxy_proxy_healthz_total", "code=\"200\"" },
	{ "kubeproxy_proxy_healthz_total", "code=\"503\"" },
	{ "kubeproxy_proxy_livez_total", "code=\"200\"" },
	{ "kubeproxy_proxy_livez_total", "code=\"503\"" },
	{ "svcnat_syncs_total", "reason=\"initial\"" },
	{ "svcnat_syncs_total", "reason=\"change\"" },
	{ "svcnat_syncs_total", "reason=\"retry\"" },
	{ "svcnat_syncs_total", "reason=\"periodic\"" },
	{ "svcnat_sync_rules_written_total", NULL },
	{ "svcnat_sync_netlink_messages_total", NULL },
	{ "svcnat_sync_netlink_bytes_total", NULL },
	{ "svcnat_sync_chains_changed_total", "op=\"created\"" },
	{ "svcnat_sync_chains_changed_total", "op=\"deleted\"" },
	{ "svcnat_sync_chains_changed_total", "op=\"replaced\"" },
	{ "svcnat_repairs_total", NULL },
	{ "svcnat_sync_part_duration_seconds", "part=\"decode\"" },
	{ "svcnat_sync_part_duration_seconds", "part=\"merge\"" },
	{ "svcnat_sync_part_duration_seconds", "part=\"resolve\"" },
	{ "svcnat_sync_part_duration_seconds", "part=\"plan\"" },
	{ "svcnat_sync_part_duration_seconds", "part=\"encode\"" },
	{ "svcnat_sync_part_duration_seconds", "part=\"kernel_read\"" },
	{ "svcnat_sync_part_duration_seconds", "part=\"kernel_write\"" },
	{ "svcnat_sync_service_ports_rebuilt", "step=\"resolve\"" },
	{ "svcnat_sync_service_ports_rebuilt", "step=\"plan\"" },
	{ "svcnat_chains", "table=\"filter\"" },
	{ "svcnat_chains", "table=\"nat\"" },
	{ "svcnat_services", NULL },
	{ "svcnat_endpoints", NULL },
	{ "svcnat_dispatch_chains", NULL },
	{ "svcnat_dispatch_trees", NULL },
	{ "svcnat_conntrack_entries_deleted_total", NULL },
	{ "svcnat_conntrack_errors_total", NULL },
	{ "svcnat_memory_bytes", "part=\"plan_store\"" },
	{ "svcnat_memory_bytes", "part=\"kernel_state\"" },
	{ "svcnat_memory_bytes", "part=\"other\"" },
	{ "process_cpu_seconds_total", NULL },
	{ "process_resident_memory_bytes", NULL },
	{ "process_virtual_memory_bytes", NULL },
	{ "process_start_time_seconds", NULL },
	{ "process_open_fds", NULL },
	{ "process_max_fds", NULL },
};

/* kubernetes_build_info's labels, svcnat's own values (k8s.io/component-base
 * version.Info: kube's are filled by its build; go_version is empty, svcnat
 * is C; build_date is the "unknown" value kube's build leaves). */
static int build_info(struct metrics *m)
{
	static const char *const compiler =
#if defined(__clang__)
		"clang";
#else
		"gcc";
#endif
	static const char *const arch =
#if defined(__x86_64__)
		"amd64";
#elif defined(__aarch64__)
		"arm64";
#elif defined(__i386__)
		"386";
#elif defined(__arm__)
		"arm";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		"ppc64le";
#elif defined(__s390x__)
		"s390x";
#elif defined(__riscv) && __riscv_xlen == 64
		"riscv64";
#else
		"unknown";
#endif
	char major[16], minor[16], lbl[512];
	const char *v = PACKAGE_VERSION, *dot = strchr(v, '.');
	int r;

	snprintf(major, sizeof(major), "%.*s", dot ? (int)(dot - v) : (int)strlen(v), v);
	snprintf(minor, sizeof(minor), "%.*s", dot ? (int)strcspn(dot + 1, ".") : 0,
		 dot ? dot + 1 : "");
	snprintf(lbl, sizeof(lbl),
		 "build_date=\"1970-01-01T00:00:00Z\",compiler=\"%s\",git_commit=\"\","
		 "git_tree_state=\"\",git_version=\"v%s\",go_version=\"\",major=\"%s\","
		 "minor=\"%s\",platform=\"linux/%s\"",
		 compiler, v, major, minor, arch);
	r = metrics_declare(m, "kubernetes_build_info", METRIC_GAUGE,
			    "A metric with a constant '1' value labeled by major, minor, git version, "
			    "git commit, git tree state, build date, Go version, and compiler from "
			    "which Kubernetes was built, and platform on which it is running.",
			    NULL, 0);
	return r < 0 ? r : metrics_gauge_set(m, "kubernetes_build_info", lbl, 1);
}

/* The counters and gauges metrics_declare_svcnat() declares, by name. */
static const struct {
	const char *name;
	enum metric_type type;
	const char *help;
} plain_metrics[] = {
	{ "kubeproxy_sync_proxy_rules_last_timestamp_seconds", METRIC_GAUGE,
	  "The last time proxy rules were successfully synced" },
	{ "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", METRIC_GAUGE,
	  "The last time a sync of proxy rules was queued" },
	{ "kubeproxy_sync_proxy_rules_iptables_total", METRIC_GAUGE,
	  "Total number of iptables rules owned by svcnat, per table" },
	{ "kubeproxy_sync_proxy_rules_iptables_last", METRIC_GAUGE,
	  "Number of iptables rules written by svcnat in the last sync, per table" },
	{ "kubeproxy_sync_proxy_rules_iptables_restore_failures_total", METRIC_COUNTER,
	  "Cumulative proxy rules sync failures (plan or commit)" },
	{ "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total", METRIC_COUNTER,
	  "Cumulative partial restore failures (svcnat writes whole tables: always 0)" },
	{ "kubeproxy_sync_proxy_rules_endpoint_changes_pending", METRIC_GAUGE,
	  "Pending proxy rules Endpoint changes" },
	{ "kubeproxy_sync_proxy_rules_endpoint_changes_total", METRIC_COUNTER,
	  "Cumulative proxy rules Endpoint changes" },
	{ "kubeproxy_sync_proxy_rules_service_changes_pending", METRIC_GAUGE,
	  "Pending proxy rules Service changes" },
	{ "kubeproxy_sync_proxy_rules_service_changes_total", METRIC_COUNTER,
	  "Cumulative proxy rules Service changes" },
	{ "kubeproxy_sync_proxy_rules_no_local_endpoints_total", METRIC_GAUGE,
	  "Number of services with a Local traffic policy and no endpoints" },
	{ "kubeproxy_proxy_healthz_total", METRIC_COUNTER,
	  "Cumulative proxy healthz HTTP status" },
	{ "kubeproxy_proxy_livez_total", METRIC_COUNTER, "Cumulative proxy livez HTTP status" },
	{ "process_cpu_seconds_total", METRIC_COUNTER,
	  "Total user and system CPU time spent in seconds." },
	{ "process_resident_memory_bytes", METRIC_GAUGE, "Resident memory size in bytes." },
	{ "process_virtual_memory_bytes", METRIC_GAUGE, "Virtual memory size in bytes." },
	{ "process_start_time_seconds", METRIC_GAUGE,
	  "Start time of the process since unix epoch in seconds." },
	{ "process_open_fds", METRIC_GAUGE, "Number of open file descriptors." },
	{ "process_max_fds", METRIC_GAUGE, "Maximum number of open file descriptors." },
	{ "svcnat_syncs_total", METRIC_COUNTER, "Syncs run, by reason" },
	{ "svcnat_sync_rules_written_total", METRIC_COUNTER,
	  "Rules written to the kernel" },
	{ "svcnat_sync_netlink_messages_total", METRIC_COUNTER,
	  "nf_tables write messages sent (nft backend; 0 for the others)" },
	{ "svcnat_sync_netlink_bytes_total", METRIC_COUNTER,
	  "Bytes of nf_tables write messages sent (nft backend)" },
	{ "svcnat_sync_chains_changed_total", METRIC_COUNTER,
	  "Owned chains created, replaced or deleted" },
	{ "svcnat_repairs_total", METRIC_COUNTER,
	  "Syncs that found the kernel's rules drifted from the plan and restored them" },
	{ "svcnat_sync_service_ports_rebuilt", METRIC_GAUGE,
	  "Service ports the last sync resolved or planned anew (the others reused the previous result)" },
	{ "svcnat_chains", METRIC_GAUGE, "Owned chains, per table (iptables and ip6tables)" },
	{ "svcnat_services", METRIC_GAUGE, "Service ports programmed, per family summed" },
	{ "svcnat_endpoints", METRIC_GAUGE, "Endpoints programmed, per family summed" },
	{ "svcnat_dispatch_chains", METRIC_GAUGE,
	  "KUBE-DSP- chains of the dispatch trees (--dispatch)" },
	{ "svcnat_dispatch_trees", METRIC_GAUGE,
	  "Chains laid out as a dispatch tree (of nat KUBE-SERVICES, KUBE-NODEPORTS, filter KUBE-SERVICES, KUBE-EXTERNAL-SERVICES, KUBE-NODEPORTS)" },
	{ "svcnat_source_errors_total", METRIC_COUNTER,
	  "Rejected reads and invalid objects, per source" },
	{ "svcnat_source_files_read_total", METRIC_COUNTER,
	  "Files read and decoded, per --config (a directory's unchanged files are not read again)" },
	{ "kubeproxy_conntrack_reconciler_deleted_entries_total", METRIC_COUNTER,
	  "Cumulative conntrack flows deleted by conntrack reconciler" },
	{ "svcnat_conntrack_entries_deleted_total", METRIC_COUNTER,
	  "Stale UDP conntrack entries deleted" },
	{ "svcnat_conntrack_errors_total", METRIC_COUNTER,
	  "Failed conntrack cleanups" },
	{ "svcnat_memory_bytes", METRIC_GAUGE,
	  "Resident memory by what holds it: the plan stores (plan_store), what the writer keeps of the kernel's tables (kernel_state), and the rest of process_resident_memory_bytes (other: sources, merge, allocator slack, code)" },
};

/* The histograms, with kube-proxy's buckets.  0 or -errno. */
static int declare_histograms(struct metrics *m)
{
	double sync_buckets[15], prog_buckets[81];
	size_t i, n = 0;
	int r;

	/* kube-proxy: prometheus.ExponentialBuckets(0.001, 2, 15). */
	for (i = 0; i < ARRAY_SIZE(sync_buckets); i++)
		sync_buckets[i] = 0.001 * (double)(1u << i);
	/* kube-proxy's network programming buckets: 0 (component-base's
	 * MergeBuckets starts with it), 0.25, 0.5, 1..59 by 1, 60..115 by 5,
	 * 120..300 by 30. */
	prog_buckets[n++] = 0;
	prog_buckets[n++] = 0.25;
	prog_buckets[n++] = 0.5;
	for (i = 1; i <= 59; i++)
		prog_buckets[n++] = (double)i;
	for (i = 60; i <= 115; i += 5)
		prog_buckets[n++] = (double)i;
	for (i = 120; i <= 300; i += 30)
		prog_buckets[n++] = (double)i;

	r = metrics_declare(m, "kubeproxy_sync_proxy_rules_duration_seconds", METRIC_HISTOGRAM,
			    "SyncProxyRules latency in seconds", sync_buckets, ARRAY_SIZE(sync_buckets));
	if (r < 0)
		return r;
	r = metrics_declare(m, "kubeproxy_sync_full_proxy_rules_duration_seconds", METRIC_HISTOGRAM,
			    "SyncProxyRules latency in seconds for full resyncs", sync_buckets,
			    ARRAY_SIZE(sync_buckets));
	if (r < 0)
		return r;
	r = metrics_declare(m, "kubeproxy_sync_partial_proxy_rules_duration_seconds", METRIC_HISTOGRAM,
			    "SyncProxyRules latency in seconds for partial resyncs", sync_buckets,
			    ARRAY_SIZE(sync_buckets));
	if (r < 0)
		return r;
	r = metrics_declare(m, "kubeproxy_conntrack_reconciler_sync_duration_seconds",
			    METRIC_HISTOGRAM, "ReconcileConntrackFlowsLatency latency in seconds",
			    sync_buckets, ARRAY_SIZE(sync_buckets));
	if (r < 0)
		return r;
	r = metrics_declare(m, "svcnat_sync_part_duration_seconds", METRIC_HISTOGRAM,
			    "Each sync's parts in seconds: decode and merge (of the changes it "
			    "includes), resolve, plan, encode, kernel_read (read and compare), "
			    "kernel_write", sync_buckets, ARRAY_SIZE(sync_buckets));
	if (r < 0)
		return r;
	r = metrics_declare(m, "kubeproxy_network_programming_duration_seconds", METRIC_HISTOGRAM,
			    "In Cluster Network Programming Latency in seconds",
			    prog_buckets, n);
	if (r == 0)
		r = metrics_declare(m, "svcnat_change_to_commit_duration_seconds", METRIC_HISTOGRAM,
				    "From the first change svcnat saw (any source) to the commit of the "
				    "sync that held it, in seconds", prog_buckets, n);
	return r < 0 ? r : 0;
}

int metrics_declare_svcnat(struct metrics *m)
{
	size_t i;
	int r;

	r = declare_histograms(m);
	if (r < 0)
		return r;
	for (i = 0; i < ARRAY_SIZE(plain_metrics); i++) {
		r = metrics_declare(m, plain_metrics[i].name, plain_metrics[i].type,
				    plain_metrics[i].help, NULL, 0);
		if (r < 0)
			return r;
	}
	r = build_info(m);
	if (r < 0)
		return r;
	/* Every series exists from the start, at 0, as Prometheus clients
	 * expect (a counter first seen at 1 loses that increase). */
	for (i = 0; i < ARRAY_SIZE(initial_series); i++) {
		r = metrics_touch(m, initial_series[i].name, initial_series[i].labels);
		if (r < 0)
			return r;
	}
	return metrics_update_process(m);
}

int metrics_declare_family(struct metrics *m, const char *ip_family)
{
	char lbl[256];
	size_t i;
	int r;

	for (i = 0; i < ARRAY_SIZE(initial_series); i++) {
		const char *l = initial_series[i].labels;

		if (!l || strncmp(l, V4, strlen(V4)) != 0)
			continue;
		if (!metrics_label(lbl, sizeof(lbl), "ip_family", ip_family) ||
		    strlen(lbl) + strlen(l + strlen(V4)) >= sizeof(lbl))
			return -EINVAL;
		strcat(lbl, l + strlen(V4));
		r = metrics_touch(m, initial_series[i].name, lbl);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Linux's /proc/self/stat fields 14, 15 (utime, stime), 22 (starttime),
 * 23 (vsize), 24 (rss, pages). */
int metrics_update_process(struct metrics *m)
{
	static double start_time;
	unsigned long long ut = 0, st = 0, starttime = 0, vsize = 0;
	long long rss = 0;
	double tck = (double)sysconf(_SC_CLK_TCK), page = (double)sysconf(_SC_PAGESIZE);
	char buf[1024], *p;
	struct rlimit rl;
	size_t fds = 0;
	FILE *f;
	DIR *d;

	f = fopen("/proc/self/stat", "re");
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);

		fclose(f);
		buf[n] = '\0';
		/* Fields after the command name (which may contain spaces). */
		p = strrchr(buf, ')');
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
				  "%*d %*d %*d %*d %*d %*d %llu %llu %lld",
				  &ut, &st, &starttime, &vsize, &rss) == 5) {
			if (!start_time) {
				/* boot time + starttime ticks */
				FILE *s = fopen("/proc/stat", "re");
				unsigned long long btime = 0;

				while (s && fgets(buf, sizeof(buf), s))
					if (sscanf(buf, "btime %llu", &btime) == 1)
						break;
				if (s)
					fclose(s);
				start_time = (double)btime + (double)starttime / tck;
			}
			metrics_gauge_set(m, "process_start_time_seconds", NULL, start_time);
			metrics_gauge_set(m, "process_virtual_memory_bytes", NULL, (double)vsize);
			metrics_gauge_set(m, "process_resident_memory_bytes", NULL, (double)rss * page);
			/* A counter set to the kernel's total (which only grows). */
			{
				struct series *s;

				if (lookup(m, "process_cpu_seconds_total", METRIC_COUNTER, NULL, &s) >= 0)
					s->value = (double)(ut + st) / tck;
			}
		}
	}
	d = opendir("/proc/self/fd");
	if (d) {
		struct dirent *de;

		while ((de = readdir(d)))
			fds += de->d_name[0] != '.';
		closedir(d);
		/* minus the directory's own descriptor */
		metrics_gauge_set(m, "process_open_fds", NULL, (double)(fds ? fds - 1 : 0));
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		metrics_gauge_set(m, "process_max_fds", NULL,
				  rl.rlim_cur == RLIM_INFINITY ? INFINITY : (double)rl.rlim_cur);
	return 0;
}
