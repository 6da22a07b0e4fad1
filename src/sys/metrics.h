/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Metrics in the Prometheus text exposition format (version 0.0.4).
 *
 * A small registry: metric families are declared once (name, type, help,
 * histogram buckets), then series are updated by family name and a label
 * string.  Label strings are written as they appear between the braces,
 * e.g. `table="nat"`; build them with metrics_label() so values are
 * escaped.  No threads: the daemon's loop owns the registry.
 *
 * metrics_declare_svcnat() declares svcnat's families and creates every
 * series it knows at 0.  kube-proxy's names, types, labels and buckets are
 * kept where kube-proxy has the metric (pkg/proxy/metrics), so its
 * dashboards work; ip_family is "IPv4", and "IPv6" too on a dual-stack
 * node (metrics_declare_family()), as kube-proxy's meta-proxier reports
 * each family's proxier:
 *   kubeproxy_sync_proxy_rules_duration_seconds{ip_family}        histogram: plan + apply of one sync
 *   kubeproxy_sync_full_proxy_rules_duration_seconds{ip_family}   histogram: initial, periodic, retry syncs
 *   kubeproxy_sync_partial_proxy_rules_duration_seconds{ip_family} histogram: syncs for a change
 *   kubeproxy_network_programming_duration_seconds{ip_family}     histogram: from the oldest change to its commit
 *   kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family}  gauge: unix time of the last successful sync
 *   kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family} gauge: of the last change queued
 *   kubeproxy_sync_proxy_rules_iptables_total{ip_family,table}    gauge: rules svcnat owns per table
 *   kubeproxy_sync_proxy_rules_iptables_last{ip_family,table}     gauge: rules written in the last sync
 *   kubeproxy_sync_proxy_rules_iptables_restore_failures_total{ip_family} counter: failed syncs
 *   kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total{ip_family} counter: always 0
 *   kubeproxy_sync_proxy_rules_{service,endpoint}_changes_total    counter: objects added, replaced, removed
 *   kubeproxy_sync_proxy_rules_{service,endpoint}_changes_pending  gauge: those since the last sync started
 *   kubeproxy_sync_proxy_rules_no_local_endpoints_total{ip_family,traffic_policy} gauge
 *   kubeproxy_proxy_healthz_total{code}, kubeproxy_proxy_livez_total{code} counters
 *   process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
 *   process_start_time_seconds, process_open_fds, process_max_fds (Prometheus' standard)
 * and svcnat's own, prefixed svcnat_:
 *   svcnat_syncs_total{reason}                 counter: syncs run, by why (initial, change, retry, periodic)
 *   svcnat_sync_rules_written_total            counter: rules written to the kernel
 *   svcnat_sync_chains_changed_total{op}       counter: owned chains created / replaced / deleted
 *   svcnat_repairs_total                       counter: syncs that found the kernel drifted and fixed it
 *   svcnat_sync_part_duration_seconds{part}    histogram: decode, merge, resolve, plan, encode,
 *                                              kernel_read, kernel_write of each sync
 *   svcnat_sync_service_ports_rebuilt{step}    gauge: service ports the last sync resolved / planned anew
 *   svcnat_chains{table}                       gauge: owned chains per table
 *   svcnat_services                            gauge: service ports known (programmed)
 *   svcnat_endpoints                           gauge: endpoints known (programmed)
 *   svcnat_source_errors_total{source}         counter: rejected reads / invalid objects per source
 *   svcnat_source_files_read_total{source}     counter: files read and decoded per --config
 *   svcnat_conntrack_entries_deleted_total     counter: stale UDP conntrack entries deleted
 *   svcnat_conntrack_errors_total              counter: failed conntrack cleanups
 */
#ifndef SVCNAT_SYS_METRICS_H
#define SVCNAT_SYS_METRICS_H

#include <stddef.h>
#include <stdio.h>

enum metric_type {
	METRIC_COUNTER,
	METRIC_GAUGE,
	METRIC_HISTOGRAM,
};

struct metrics;

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/*
 * Declare a family.  name must match [a-zA-Z_:][a-zA-Z0-9_:]*; buckets
 * (histograms only) are upper bounds in increasing order, +Inf implied;
 * strings are copied.  0, -EEXIST, -EINVAL, -ENOMEM.
 */
int metrics_declare(struct metrics *m, const char *name, enum metric_type type,
		    const char *help, const double *buckets, size_t n_buckets);

/*
 * Update the series `labels` (NULL or "" = no labels) of a family, created
 * at 0 on first use.  -ENOENT for an undeclared name, -EINVAL for a type
 * mismatch (or a negative counter increment), -ENOMEM.
 */
int metrics_counter_add(struct metrics *m, const char *name, const char *labels, double v);
int metrics_gauge_set(struct metrics *m, const char *name, const char *labels, double v);
/* A counter kept elsewhere (the kernel's), set to its value as read:
 * -EINVAL for a negative v, else as metrics_counter_add(). */
int metrics_counter_set(struct metrics *m, const char *name, const char *labels, double v);
int metrics_histogram_observe(struct metrics *m, const char *name, const char *labels, double v);

/* Create the series `labels` of a family at 0 if it does not exist (so it
 * is written from the start).  0, -ENOENT, -ENOMEM. */
int metrics_touch(struct metrics *m, const char *name, const char *labels);

/* Remove the series `labels` of a family (its HELP and TYPE stay): a
 * value that can no longer be read is not reported.  0 or -ENOENT. */
int metrics_remove(struct metrics *m, const char *name, const char *labels);

/* Refresh the process_* families (CPU, memory, start time, descriptors)
 * from /proc/self; called before each scrape.  Returns 0. */
int metrics_update_process(struct metrics *m);

/* Read a counter or gauge series back (tests, /healthz detail).  0 or -ENOENT. */
int metrics_get(const struct metrics *m, const char *name, const char *labels, double *ret);

/*
 * Write `key="value"` into buf with value escaped (\\, \", \n) as the text
 * format requires.  Returns buf, or NULL when it does not fit.
 */
char *metrics_label(char *buf, size_t len, const char *key, const char *value);

/*
 * Write every family in declaration order, series sorted by labels.
 * 0 or -errno (write error).
 */
int metrics_write(const struct metrics *m, FILE *f);

/* Declare the families listed above.  0 or -ENOMEM. */
int metrics_declare_svcnat(struct metrics *m);

/* Create at 0 every series above that has an ip_family label, for one more
 * ip_family (kube-proxy's "IPv6"), after metrics_declare_svcnat().  0,
 * -EINVAL (a label too long), -ENOMEM. */
int metrics_declare_family(struct metrics *m, const char *ip_family);

#endif
