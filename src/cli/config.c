/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>
#include <sys/stat.h>

#include "cli/config.h"
#include "sources/file/cfgfile.h"
#include "sys/exitcode.h"
#include "sys/log.h"
#include "util.h"

enum file_mode_check config_file_mode(const struct svcnat_options *o)
{
	if (o->allow_insecure_config)
		return FILE_MODE_IGNORE;
	return o->mode == MODE_DAEMON || o->mode == MODE_ONCE ? FILE_MODE_REFUSE : FILE_MODE_WARN;
}

int config_check_modes(const struct svcnat_options *o)
{
	if (config_file_mode(o) != FILE_MODE_REFUSE)
		return 0;
	for (size_t i = 0; i < o->n_configs; i++) {
		_cleanup_(diag_list_done) struct diag_list d;
		struct stat st;

		/* Before the first continue: the cleanup runs on every way out. */
		diag_list_init(&d);
		if (strcmp(o->configs[i], "-") == 0 || stat(o->configs[i], &st) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (cfgfile_check_mode(o->configs[i], &st, FILE_MODE_REFUSE, NULL, &d) == 0)
			continue;
		/* The one wording of this refusal is cfgfile's. */
		for (size_t k = 0; k < d.n; k++) {
			_cleanup_free_ char *line = diag_format(&d.items[k]);

			log_err("%s", line ? line : d.items[k].msg);
		}
		if (!d.n)
			log_err("out of memory");
		return d.n ? EXIT_USAGE : EXIT_RUNTIME;
	}
	return 0;
}

/* What to say when the backend cannot be created without CAP_NET_ADMIN. */
static const char *no_net_admin(enum svcnat_mode mode)
{
	switch (mode) {
	case MODE_DIFF:
		return "reading the kernel's iptables rules needs CAP_NET_ADMIN: "
		       "run svcnat --diff as root";
	case MODE_CLEANUP:
		return "removing iptables rules needs CAP_NET_ADMIN: run svcnat as root";
	default:
		return "writing iptables rules needs CAP_NET_ADMIN: run svcnat as root "
		       "(or use --dry-run, which needs no privileges)";
	}
}

void config_pipeline(const struct svcnat_options *o, struct pipeline_config *ret)
{
	*ret = (struct pipeline_config){
		.configs = o->configs,
		.n_configs = o->n_configs,
		.hostname = o->hostname,
		.zone = o->zone,
		.plan = o->plan,
		.node_ips_given = o->node_ips_given,
		.nodeport_primary = o->nodeport_primary,
		.bind_address_set = o->bind_address_set,
		.bind_address = o->bind_address,
		.backend = o->backend,
		.file_mode = config_file_mode(o),
		.kube = o->kube,
		.kubeconfig = o->kubeconfig,
		.master = o->master,
		.etcd_endpoints = o->etcd_endpoints,
		.etcd_prefix = o->etcd_prefix,
		.etcd_cacert = o->etcd_cacert,
		.etcd_cert = o->etcd_cert,
		.etcd_key = o->etcd_key,
		.kube_content_type = o->kube_content_type,
		.kube_accept_content_types = o->kube_accept_content_types,
		.kube_no_watch_list = o->kube_no_watch_list,
		/* The daemon plans again and again: it keeps the chain names
		 * and plans between syncs. */
		.keep_plans = o->mode == MODE_DAEMON,
		.sync_once = o->mode == MODE_ONCE,
		/* Only the daemon reads its files again. */
		.read_once = o->mode != MODE_DAEMON,
		.no_net_admin = no_net_admin(o->mode),
	};
}

void config_sysctls(const struct svcnat_options *o, struct host_sysctls *ret)
{
	*ret = (struct host_sysctls){
		.set = o->set_sysctls,
		.localhost_nodeports = o->plan.localhost_nodeports,
		.conntrack = o->conntrack,
	};
}

void config_daemon(const struct svcnat_options *o, struct daemon_config *ret)
{
	memset(ret, 0, sizeof(*ret));
	config_pipeline(o, &ret->pipeline);
	config_sysctls(o, &ret->sysctls);
	ret->kp_config = o->kp_config;
	/* options_parse() checked both (options_sync_periods()). */
	(void)options_sync_periods(o, &ret->min_sync_usec, &ret->sync_period_usec);
	ret->healthz_bind_address =
		o->healthz_bind_address ? o->healthz_bind_address : OPT_DEFAULT_HEALTHZ_BIND;
	ret->metrics_bind_address =
		o->metrics_bind_address ? o->metrics_bind_address : OPT_DEFAULT_METRICS_BIND;
	ret->bind_address_hard_fail = o->bind_address_hard_fail;
	ret->etcd_endpoints = o->etcd_endpoints;
	ret->etcd_prefix = o->etcd_prefix;
	ret->etcd_cacert = o->etcd_cacert;
	ret->etcd_cert = o->etcd_cert;
	ret->etcd_key = o->etcd_key;
}
