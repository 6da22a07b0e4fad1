/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon: `svcnat` without --once/--dry-run.  Runs the pipeline from
 * one epoll loop until SIGTERM/SIGINT, leaving the rules in place.
 */
#ifndef SVCNAT_DAEMON_H
#define SVCNAT_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "pipeline/counters.h"
#include "pipeline/pipeline.h"
#include "sys/host.h"

/*
 * What the daemon follows and serves, built by the command line
 * (cli/config.h) with every default applied; strings are borrowed.
 */
struct daemon_config {
	struct pipeline_config pipeline;
	struct host_sysctls sysctls;      /* checked and written at start (global6 there) */
	const char *kp_config;            /* the KubeProxyConfiguration, watched; or NULL */
	uint64_t min_sync_usec;           /* --min-sync-period, checked by the command line */
	uint64_t sync_period_usec;        /* --sync-period: > 0 and >= min_sync_usec */
	const char *healthz_bind_address; /* "" = off */
	const char *metrics_bind_address; /* "" = off */
	bool bind_address_hard_fail;      /* a server that cannot listen is fatal */
	const char *etcd_endpoints;       /* comma-separated URLs; NULL = no etcd source */
	const char *etcd_prefix;
	const char *etcd_cacert;
	const char *etcd_cert;
	const char *etcd_key;
	const char *configz;               /* the /configz JSON (cli/configz.h); or NULL */
	struct counters nfacct;            /* kube-proxy's nfacct counters, as the start
					    * left them (pipeline.plan.nfacct: those made) */
};

/* Run the daemon; returns the process exit code (sys/exitcode.h). */
int daemon_main(const struct daemon_config *o);

#endif
