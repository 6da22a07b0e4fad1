/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kube-proxy's flags that svcnat accepts and ignores, and the fields of a
 * KubeProxyConfiguration, applied as the flags of the same meaning.
 * Messages go to stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/kpflags.h"
#include "cli/kpconfig.h"
#include "sources/kube/kubereq.h"
#include "util.h"

/*
 * kube-proxy's flags that svcnat accepts and ignores with a warning (why).
 * Flags that take a value are required_argument, boolean ones optional.
 */
static const struct {
	const char *name;
	int has_arg;
	const char *why;
} kp_ignored[] = {
	{ "feature-gates", required_argument, NULL },
	{ "kube-api-burst", required_argument, "svcnat's API client has no such setting" },
	{ "kube-api-qps", required_argument, "svcnat's API client has no such setting" },
	{ "config-sync-period", required_argument,
	  "svcnat follows its sources by change (inotify, watches), without a resync period" },
	{ "profiling", optional_argument, "svcnat has no /debug/pprof" },
	{ "show-hidden-metrics-for-version", required_argument, "svcnat hides no metrics" },
	{ "ipvs-sync-period", required_argument, "IPVS mode only" },
	{ "ipvs-min-sync-period", required_argument, "IPVS mode only" },
	{ "ipvs-scheduler", required_argument, "IPVS mode only" },
	{ "ipvs-exclude-cidrs", required_argument, "IPVS mode only" },
	{ "ipvs-strict-arp", optional_argument, "IPVS mode only" },
	{ "ipvs-tcp-timeout", required_argument, "IPVS mode only" },
	{ "ipvs-tcpfin-timeout", required_argument, "IPVS mode only" },
	{ "ipvs-udp-timeout", required_argument, "IPVS mode only" },
	{ "log-text-split-stream", optional_argument, "svcnat writes every line to standard error" },
	{ "log-text-info-buffer-size", required_argument, "svcnat does not buffer its log" },
	{ "log-json-split-stream", optional_argument, "svcnat writes every line to standard error" },
	{ "log-json-info-buffer-size", required_argument, "svcnat does not buffer its log" },
	/*
	 * klog's flags, which kube-proxy took before Kubernetes 1.26 and refuses
	 * since ("unknown flag"): svcnat still starts, and says so.
	 * --log-file, --logtostderr and --alsologtostderr are svcnat's own
	 * (cli/options.c), with klog's meaning.
	 */
#define KLOG_GONE "removed from kube-proxy in Kubernetes 1.26; svcnat logs to standard error"
	{ "log-dir", required_argument, KLOG_GONE " (redirect it, or use kube-log-runner)" },
	{ "log-file-max-size", required_argument, KLOG_GONE },
	{ "skip-headers", optional_argument, KLOG_GONE },
	{ "skip-log-headers", optional_argument, KLOG_GONE },
	{ "add-dir-header", optional_argument, KLOG_GONE },
	{ "one-output", optional_argument, KLOG_GONE },
	{ "stderrthreshold", required_argument, KLOG_GONE },
	{ "log-backtrace-at", required_argument, KLOG_GONE },
#undef KLOG_GONE
};

struct option *kpflags_all_options(const struct option *own, size_t n)
{
	size_t k = ARRAY_SIZE(kp_ignored);
	struct option *v = calloc(n + k + 1, sizeof(*v));

	if (!v)
		return NULL;
	memcpy(v, own, n * sizeof(*v));
	for (size_t i = 0; i < k; i++)
		v[n + i] = (struct option){ kp_ignored[i].name, kp_ignored[i].has_arg, NULL,
					    OPT_IGNORED + (int)i };
	return v;
}

/* The option (flag) of a long name, from the table. */
static const struct option *find_option(const struct option *all, const char *name)
{
	for (; all->name; all++)
		if (streq(all->name, name))
			return all;
	return NULL;
}

static bool in_csv(const char *list, const char *v)
{
	size_t n = strlen(v);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, v, n) == 0 && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

/* Blanks around s trimmed in place (strings.TrimSpace). */
static char *trim_blanks(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* strconv.ParseBool, as feature gate values are read: 1 true, 0 false, -1 neither. */
static int parse_go_bool(const char *v)
{
	if (in_csv("1,t,T,TRUE,true,True", v))
		return 1;
	if (in_csv("0,f,F,FALSE,false,False", v))
		return 0;
	return -1;
}

/*
 * One feature gate set to value (component-base featuregate, SetFromMap).
 * PreferSameTrafficDistribution (node hints) is GA and locked on since
 * Kubernetes 1.35 (pkg/features/kube_features.go): true is its default,
 * false fails as kube-proxy fails.  svcnat has no other gate; those are
 * accepted and ignored.  0 or -EINVAL (printed).
 */
static int feature_gate(const struct pstate *ps, const char *name, const char *value)
{
	int v = parse_go_bool(value);

	if (v < 0) {
		fprintf(stderr, "svcnat: %s: invalid value of %s=%s: not a bool\n", ps->name, name,
			value);
		return -EINVAL;
	}
	if (streq(name, "WatchListClient")) {
		/* client-go's streaming lists (on by default since 1.35) */
		ps->o->kube_no_watch_list = !v;
		return 0;
	}
	if (streq(name, "PreferSameTrafficDistribution")) {
		if (v)
			return 0;
		fprintf(stderr, "svcnat: %s: cannot set feature gate %s to false, feature is locked "
			"to true (GA since Kubernetes 1.35)\n", ps->name, name);
		return -EINVAL;
	}
	fprintf(stderr, "svcnat: warning: %s: feature gate '%s' accepted and ignored: svcnat "
		"does not have it\n", ps->name, name);
	return 0;
}

/* --feature-gates "Name=bool,...", split as featuregate.Set splits it. */
static int feature_gates(const struct pstate *ps, const char *list)
{
	_cleanup_free_ char *copy = strdup(list);
	char *save = NULL, *item;

	if (!copy)
		return -ENOMEM;
	for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '='), *name;
		int r;

		if (eq)
			*eq = '\0';
		name = trim_blanks(item);
		if (!eq) {
			fprintf(stderr, "svcnat: %s: missing bool value for %s\n", ps->name, name);
			return -EINVAL;
		}
		r = feature_gate(ps, name, trim_blanks(eq + 1));
		if (r < 0)
			return r;
	}
	return 0;
}

int kpflags_ignore(struct pstate *ps, int c, const char *arg)
{
	if (c < OPT_IGNORED || c >= OPT_IGNORED + (int)ARRAY_SIZE(kp_ignored))
		return -EINVAL;
	if (!kp_ignored[c - OPT_IGNORED].why)
		return feature_gates(ps, arg ? arg : "");
	/* A zero or false value asks for nothing: no warning. */
	if (!arg || !(streq(arg, "") || streq(arg, "0") || streq(arg, "0s") || streq(arg, "false")))
		opt_warn_ignored(ps, kp_ignored[c - OPT_IGNORED].why);
	return 0;
}

/*
 * A KubeProxyConfiguration's fields, each with the flag of the same meaning
 * (NULL: accepted and ignored, with a warning unless the value is zero or
 * kube-proxy's default, given in `dflt`).  A path ending in '.' matches
 * every field under it.
 */
static const struct {
	const char *path;
	const char *flag;
	const char *dflt;
	const char *why;
} kp_fields[] = {
	{ "hostnameOverride", "hostname-override", NULL, NULL },
	{ "bindAddress", "bind-address", NULL, NULL },
	{ "healthzBindAddress", "healthz-bind-address", NULL, NULL },
	{ "metricsBindAddress", "metrics-bind-address", NULL, NULL },
	{ "bindAddressHardFail", "bind-address-hard-fail", NULL, NULL },
	{ "mode", "proxy-mode", NULL, NULL },
	{ "iptables.masqueradeBit", "iptables-masquerade-bit", NULL, NULL },
	{ "iptables.masqueradeAll", "masquerade-all", NULL, NULL },
	{ "iptables.localhostNodePorts", "iptables-localhost-nodeports", NULL, NULL },
	{ "iptables.syncPeriod", "iptables-sync-period", NULL, NULL },
	{ "iptables.minSyncPeriod", "iptables-min-sync-period", NULL, NULL },
	{ "detectLocalMode", "detect-local-mode", NULL, NULL },
	{ "detectLocal.bridgeInterface", "pod-bridge-interface", NULL, NULL },
	{ "detectLocal.interfaceNamePrefix", "pod-interface-name-prefix", NULL, NULL },
	{ "detectLocal.clusterCIDRs", "cluster-cidr", NULL, NULL },
	{ "clusterCIDR", "cluster-cidr", NULL, NULL },
	{ "nodePortAddresses", "nodeport-addresses", NULL, NULL },
	{ "oomScoreAdj", "oom-score-adj", NULL, NULL },
	{ "conntrack.maxPerCore", "conntrack-max-per-core", NULL, NULL },
	{ "conntrack.min", "conntrack-min", NULL, NULL },
	{ "conntrack.tcpEstablishedTimeout", "conntrack-tcp-timeout-established", NULL, NULL },
	{ "conntrack.tcpCloseWaitTimeout", "conntrack-tcp-timeout-close-wait", NULL, NULL },
	{ "conntrack.tcpBeLiberal", "conntrack-tcp-be-liberal", NULL, NULL },
	{ "conntrack.udpTimeout", "conntrack-udp-timeout", NULL, NULL },
	{ "conntrack.udpStreamTimeout", "conntrack-udp-timeout-stream", NULL, NULL },
	{ "logging.verbosity", "v", NULL, NULL },
	{ "logging.format", "logging-format", NULL, NULL },
	{ "logging.flushFrequency", "log-flush-frequency", NULL, NULL },
	{ "logging.vmodule", "vmodule", NULL, NULL },
	{ "featureGates.", NULL, NULL, NULL },
	{ "clientConnection.kubeconfig", "kubeconfig", NULL, NULL },
	{ "clientConnection.contentType", "kube-api-content-type", NULL, NULL },
	{ "clientConnection.", NULL, "application/vnd.kubernetes.protobuf,5,10",
	  "svcnat's sources have no such setting" },
	{ "logging.", NULL, NULL, "svcnat's log has no such setting" },
	{ "enableProfiling", NULL, NULL, "svcnat has no /debug/pprof" },
	{ "showHiddenMetricsForVersion", NULL, NULL, "svcnat hides no metrics" },
	{ "iptables.snatNodeInternalIP", NULL, NULL, "not implemented by svcnat" },
	{ "ipvs.syncPeriod", NULL, "30s", "IPVS mode only" },
	{ "ipvs.scheduler", NULL, "rr", "IPVS mode only" },
	{ "ipvs.", NULL, NULL, "IPVS mode only" },
	{ "nftables.syncPeriod", NULL, "30s", "nftables mode only" },
	{ "nftables.minSyncPeriod", NULL, "1s", "nftables mode only" },
	{ "nftables.masqueradeBit", NULL, "14", "nftables mode only" },
	{ "nftables.", NULL, NULL, "nftables mode only" },
	{ "winkernel.", NULL, NULL, "Windows only" },
	{ "windowsRunAsService", NULL, NULL, "Windows only" },
	{ "configSyncPeriod", NULL, "15m0s,15m",
	  "svcnat follows its sources by change (inotify, watches), without a resync period" },
	{ "portRange", NULL, NULL, "unused by kube-proxy too" },
};

/* A value that sets nothing: null, empty, zero, false, or kube-proxy's default. */
static bool kp_zero(const struct kpfield *f, const char *dflt)
{
	return f->null || !f->value[0] || in_csv("0,0s,false,0.0", f->value) || (dflt && in_csv(dflt, f->value));
}

/*
 * clientConnection.acceptContentTypes has no flag in kube-proxy either:
 * the Accept header's value of every request as given
 * (cmd/kube-proxy/app/server.go, createClient).  0 or -EINVAL (printed).
 */
static int kp_accept_types(struct pstate *ps, const struct kpfield *f)
{
	const char *why = NULL;

	if (f->null || !f->value[0]) {
		ps->o->kube_accept_content_types = (free(ps->o->kube_accept_content_types), NULL);
		return 0;
	}
	if (!kube_accept_valid(f->value, &why)) {
		fprintf(stderr, "svcnat: %s (line %u): '%.100s' is not %s\n", ps->name, f->line,
			f->value, why);
		return -EINVAL;
	}
	return opt_set_str(&ps->o->kube_accept_content_types, f->value);
}

/* Whether the file's value for option c is one, without applying it: a
 * flag given on the command line wins over the field, which kube-proxy
 * would still have read (and refused if bad). */
static int kp_check_only(const struct pstate *ps, int c, const char *arg)
{
	_cleanup_(options_done) struct svcnat_options scratch;
	struct pstate sp = *ps;

	options_init(&scratch);
	sp.o = &scratch;
	return opt_apply(&sp, c, arg);
}

static int kp_field(struct pstate *ps, const struct option *all, const struct kpconfig *kc,
		    const struct kpfield *f)
{
	struct svcnat_options *o = ps->o;
	const struct option *opt;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kp_fields); i++) {
		const char *m = kp_fields[i].path;
		size_t n = strlen(m);

		if (m[n - 1] == '.' ? strncmp(f->path, m, n) == 0 : streq(f->path, m))
			break;
	}
	snprintf(ps->name, sizeof(ps->name), "%s: %s", kc->path, f->path);
	if (streq(f->path, "clientConnection.acceptContentTypes"))
		return kp_accept_types(ps, f);
	if (i == ARRAY_SIZE(kp_fields)) {
		fprintf(stderr, "svcnat: warning: %s (line %u): not a KubeProxyConfiguration field "
			"svcnat knows; ignored\n", ps->name, f->line);
		return 0;
	}
	if (!kp_fields[i].flag && !kp_fields[i].why) {
		/* featureGates: a mapping of gate names to bools */
		if (f->null)
			return 0;
		return feature_gate(ps, f->path + strlen(kp_fields[i].path), f->value);
	}
	if (!kp_fields[i].flag) {
		if (!kp_zero(f, kp_fields[i].dflt))
			opt_warn_ignored(ps, kp_fields[i].why);
		return 0;
	}
	/* Empty or null: kube-proxy's default, which is svcnat's. */
	if (f->null || !f->value[0])
		return 0;
	opt = find_option(all, kp_fields[i].flag);
	if (!opt)
		return -EINVAL;
	/* Flags on the command line override the file (component-base's
	 * logging flags too: kube-proxy's copyLogsFromFlags).  --vmodule
	 * is set before the file is read only by the command line. */
	if ((o->given & opt_given_bit(opt->val)) || (streq(opt->name, "vmodule") && o->vmodule))
		return kp_check_only(ps, opt->val, f->value);
	return opt_apply(ps, opt->val, f->value);
}

/*
 * kube-proxy reads no flag once --config is given but --hostname-override
 * and the logging flags (cmd/kube-proxy/app/options.go, Complete); svcnat
 * lets a flag win over the file instead, and says so for each such flag.
 */
static void warn_flags_over_file(struct pstate *ps, const struct option *all, const char *file)
{
	for (size_t i = 0; i < ARRAY_SIZE(kp_fields); i++) {
		const char *flag = kp_fields[i].flag;
		const struct option *opt;
		bool seen = false;

		if (!flag || streq(flag, "hostname-override") || streq(flag, "v") ||
		    streq(flag, "logging-format") || streq(flag, "log-flush-frequency") ||
		    streq(flag, "vmodule"))
			continue;
		for (size_t k = 0; k < i; k++)
			seen = seen || (kp_fields[k].flag && streq(kp_fields[k].flag, flag));
		opt = find_option(all, flag);
		if (seen || !opt || !(ps->o->given & opt_given_bit(opt->val)))
			continue;
		fprintf(stderr, "svcnat: warning: --%s: given with the KubeProxyConfiguration %s: "
			"svcnat uses the flag, where kube-proxy would ignore it and use the file\n",
			flag, file);
	}
}

/* Drop configs[i] (it is the KubeProxyConfiguration, not a service source). */
static void drop_config(struct svcnat_options *o, size_t i)
{
	free(o->configs[i]);
	memmove(&o->configs[i], &o->configs[i + 1], (o->n_configs - i - 1) * sizeof(*o->configs));
	o->n_configs--;
}

int kpflags_apply_config(struct pstate *ps, const struct option *all)
{
	struct svcnat_options *o = ps->o;
	/* The rule of every config file (pipeline.c's for services files):
	 * refused where svcnat writes rules (the daemon, --once). */
	enum file_mode_check mode = o->allow_insecure_config ? FILE_MODE_IGNORE
				    : ps->dry || ps->cleanup || ps->dump || ps->init_only ||
						  o->mode == MODE_ETCD_LOAD
					    ? FILE_MODE_WARN
					    : FILE_MODE_REFUSE;
	size_t i = 0;
	int r;

	while (i < o->n_configs) {
		_cleanup_(kpconfig_freep) struct kpconfig *kc = NULL;
		struct diag_list d;

		diag_list_init(&d);
		r = kpconfig_read(o->configs[i], mode, &kc, &d);
		diag_list_print(&d, stderr);
		diag_list_done(&d);
		if (r == -ENOMEM) {
			fputs("svcnat: out of memory\n", stderr);
			return EXIT_RUNTIME;
		}
		if (r < 0) {
			if (r != -EINVAL && r != -EPERM)
				fprintf(stderr, "svcnat: %s: %s\n", o->configs[i], strerror(-r));
			return EXIT_USAGE;
		}
		if (r == 0) {
			i++;
			continue;
		}
		if (o->kp_config) {
			fprintf(stderr, "svcnat: %s: a second KubeProxyConfiguration (the first is %s)\n",
				o->configs[i], o->kp_config);
			return EXIT_USAGE;
		}
		if (!streq(kc->api_version, "kubeproxy.config.k8s.io/v1alpha1")) {
			fprintf(stderr, "svcnat: %s: apiVersion '%s': svcnat reads "
				"kubeproxy.config.k8s.io/v1alpha1\n", o->configs[i], kc->api_version);
			return EXIT_USAGE;
		}
		o->kp_config = strdup(o->configs[i]);
		if (!o->kp_config)
			return EXIT_RUNTIME;
		for (size_t k = 0; k < kc->n_fields; k++) {
			r = kp_field(ps, all, kc, &kc->fields[k]);
			if (r == -ENOMEM)
				return EXIT_RUNTIME;
			if (r < 0)
				return EXIT_USAGE;
		}
		warn_flags_over_file(ps, all, o->kp_config);
		drop_config(o, i);
	}
	/* component-base's LoggingConfiguration Validate: vmodule is the text
	 * format's (the flags are checked as the file's fields). */
	if (o->vmodule && o->vmodule[0] && o->log_format == LOG_FORMAT_OPT_JSON) {
		fprintf(stderr, "svcnat: vmodule '%s': only supported for the text log format, "
			"not json\n", o->vmodule);
		return EXIT_USAGE;
	}
	return 0;
}
