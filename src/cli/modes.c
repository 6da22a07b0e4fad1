/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What each mode does: --dry-run, --diff, --dump-state, --once,
 * --cleanup, --init-only, etcd-load and the daemon, from the options.
 * Exit codes: sys/exitcode.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/detect.h"
#include "cli/config.h"
#include "cli/configz.h"
#include "cli/etcdload.h"
#include "cli/modes.h"
#include "core/render.h"
#include "core/resolve.h"
#include "daemon/daemon.h"
#include "pipeline/node.h"
#include "pipeline/counters.h"
#include "pipeline/pipeline.h"
#include "sys/exitcode.h"
#include "sys/log.h"
#include "sys/nslock.h"
#include "sys/host.h"
#include "util.h"

/* Plain "error: ..." lines, or log lines when --logging-format (or the daemon) says so. */
static void print_diags(struct diag_list *d)
{
	if (log_get_format() == LOG_FORMAT_PLAIN) {
		diag_list_print(d, stderr);
	} else {
		for (size_t i = 0; i < d->n; i++) {
			_cleanup_free_ char *s = diag_format(&d->items[i]);
			int level = d->items[i].level == DIAG_ERROR     ? LOG_LEVEL_ERR
				    : d->items[i].level == DIAG_WARNING ? LOG_LEVEL_WARNING
									: LOG_LEVEL_INFO;

			log_msg(level, "%s", s ? s : d->items[i].msg);
		}
		if (d->dropped)
			log_warn("%zu more messages not shown", d->dropped);
	}
	diag_list_done(d);
	diag_list_init(d);
}

/*
 * A --config that cannot be used, whatever the reason (missing, unreadable,
 * a symlink loop, not a regular file or directory, writable by others,
 * too large, not valid JSON, a file of its directory rejected whole), is
 * bad configuration: 2.  Only running out of memory is a runtime failure.
 * r is pipeline_read_sources()'s (!= 0).
 */
static int exit_code_for(int r)
{
	/* -ENOTCONN: the API server could not be listed (not the configuration). */
	return r == -ENOMEM || r == -ENOTCONN ? EXIT_RUNTIME : EXIT_USAGE;
}

/*
 * iptables-save's text, then, when the IPv6 plan programs anything,
 * ip6tables-save's (each with its own tables and COMMITs, as
 * "iptables-save; ip6tables-save" prints them).
 */
static int print_plans(struct ruleset *rs[PLAN_NFAMILIES], const struct plan_stats st[PLAN_NFAMILIES])
{
	int r;

	r = render_save(rs[PLAN_V4], RENDER_ALL, stdout);
	if (r >= 0 && st[PLAN_V6].services)
		r = render_save(rs[PLAN_V6], RENDER_ALL, stdout);
	return r;
}

/* Both families' plans, freed at the end of the scope. */
struct plans {
	struct ruleset *rs[PLAN_NFAMILIES];
	struct plan_stats st[PLAN_NFAMILIES];
};

static void plans_done(struct plans *pl)
{
	ruleset_free(pl->rs[PLAN_V4]);
	ruleset_free(pl->rs[PLAN_V6]);
}

/* Every source read once; else the diagnostics printed and *ret_code set. */
static bool read_sources(struct pipeline *p, int usage_only, int *ret_code, struct diag_list *d)
{
	int r = pipeline_read_sources(p, d);

	if (r == 0)
		return true;
	print_diags(d);
	*ret_code = usage_only ? EXIT_USAGE : exit_code_for(r);
	return false;
}

/* --dump-state: the resolved state, as text. */
static int run_dump_state(struct pipeline *p, struct diag_list *d)
{
	int r, code;

	if (!read_sources(p, false, &code, d))
		return code;
	r = pipeline_resolve(p, d);
	print_diags(d);
	if (r < 0)
		return EXIT_RUNTIME;
	resolve_dump(pipeline_desired(p), stdout);
	return fflush(stdout) == 0 ? 0 : EXIT_RUNTIME;
}

/* --dry-run: the plans as iptables-save text; hermetic (no address learnt). */
static int run_dry_run(struct pipeline *p, struct diag_list *d)
{
	_cleanup_(plans_done) struct plans pl = { 0 };
	int r, code;

	if (!read_sources(p, false, &code, d))
		return code;
	pipeline_check_families(p, d);
	r = pipeline_plan(p, pl.rs, pl.st, d);
	print_diags(d);
	if (r < 0)
		return EXIT_RUNTIME;
	r = print_plans(pl.rs, pl.st);
	if (r < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "svcnat: writing the rules: %s\n", strerror(r < 0 ? -r : errno));
		return EXIT_RUNTIME;
	}
	return 0;
}

/* --dry-run --diff, with diff(1)'s exit codes: 0 equal, 1 different, 2 could
 * not compare.  ip6tables too where the backend writes it. */
static int run_diff(struct pipeline *p, struct diag_list *d)
{
	_cleanup_(plans_done) struct plans pl = { 0 };
	struct backend *b;
	int r, code;

	if (!read_sources(p, true, &code, d))
		return code;
	r = pipeline_learn_addresses(p, d);
	if (r >= 0) {
		pipeline_check_families(p, d);
		r = pipeline_plan(p, pl.rs, pl.st, d);
	}
	if (r < 0) {
		print_diags(d);
		return EXIT_USAGE;
	}
	r = pipeline_backend(p, &b, d);
	print_diags(d);
	if (r < 0) {
		fputs("svcnat: --diff: could not compare with the kernel\n", stderr);
		return EXIT_USAGE;
	}
	r = backend_diff_families(b, pl.rs[PLAN_V4], backend_has_ipv6(b) ? pl.rs[PLAN_V6] : NULL,
				  stdout, d);
	print_diags(d);
	if (fflush(stdout) != 0 && r >= 0)
		r = -errno;
	if (r < 0) {
		fprintf(stderr, "svcnat: --diff: could not compare with the kernel: %s\n",
			strerror(-r));
		return EXIT_USAGE;
	}
	return r == 0 ? 0 : 1;
}

/* The sysctls the data path needs and the conntrack settings, once the
 * node's addresses are known (IPv6 forwarding matters with a global one). */
static int setup_sysctls(const struct svcnat_options *o, struct pipeline *p, struct diag_list *d)
{
	struct host_sysctls h;

	config_sysctls(o, &h);
	h.global6 = node_has_global6(pipeline_settings(p));
	return host_setup_sysctls("", &h, d);
}

static int run_once(const struct svcnat_options *o, struct pipeline *p, struct diag_list *d)
{
	struct sync_report rep;
	int r;

	r = pipeline_read_sources(p, d);
	if (r != 0) {
		print_diags(d);
		return exit_code_for(r);
	}
	r = pipeline_learn_addresses(p, d);
	if (r >= 0)
		pipeline_check_families(p, d);
	if (r >= 0)
		r = setup_sysctls(o, p, d);
	if (r < 0) {
		print_diags(d);
		return EXIT_RUNTIME;
	}
	r = pipeline_sync(p, &rep, d);
	print_diags(d);
	if (r < 0) {
		log_err("sync failed; %s", rep.apply.partial
				? "the tables are half written (see above)"
				: "the kernel keeps its previous rules");
		return EXIT_RUNTIME;
	}
	if (!rep.apply.committed[RS_NAT] && !rep.apply.committed[RS_FILTER] &&
	    !rep.apply.committed6[RS_NAT] && !rep.apply.committed6[RS_FILTER])
		log_debug("rules already up to date: nothing written");
	log_info("synced %zu service ports, %zu endpoints: %zu chains, %zu rules; "
		 "%zu chains created, %zu replaced, %zu deleted in %.3fs (plan %.3fs)",
		 rep.plan.services, rep.plan.endpoints, rep.plan.chains, rep.plan.rules,
		 rep.apply.chains_created, rep.apply.chains_replaced, rep.apply.chains_deleted,
		 rep.total_seconds, rep.plan_seconds);
	if (rep.warm_bytes)
		log_debug("%.1f MiB faulted in ahead of the decode, merge and plan on a thread "
			  "of its own", (double)rep.warm_bytes / (1 << 20));
	if (rep.ipv6)
		log_info("  and IPv6 (ip6tables): %zu service ports, %zu endpoints: "
			 "%zu chains, %zu rules", rep.plan6.services, rep.plan6.endpoints,
			 rep.plan6.chains, rep.plan6.rules);
	return 0;
}

/* kube-proxy's --init-only: what needs full root (sysctls), then exit. */
static int run_init_only(const struct svcnat_options *o, struct pipeline *p,
			 struct diag_list *d)
{
	int r = setup_sysctls(o, p, d);

	print_diags(d);
	return r < 0 ? EXIT_RUNTIME : 0;
}

/* The legacy nat or filter table of either family (the direct writer
 * writes both). */
static bool legacy_tables_present(void)
{
	static const char *const names[] = { "/proc/net/ip_tables_names",
					     "/proc/net/ip6_tables_names" };

	return detect_legacy_tables(names, ARRAY_SIZE(names));
}

/*
 * Remove svcnat's (and kube-proxy's) chains and jump rules.  With
 * --backend auto from every iptables flavour present: the legacy tables
 * (direct writer) and the nft ones (nft writer, where iptables-nft is
 * installed); a given
 * --backend cleans what it writes.
 */
static int run_cleanup(const struct svcnat_options *o, struct pipeline *p, struct diag_list *d)
{
	struct backend *b;
	int r, failed = 0;

	r = pipeline_backend(p, &b, d); /* also checks CAP_NET_ADMIN */
	if (r < 0 || o->backend.kind != BACKEND_AUTO) {
		if (r >= 0)
			r = backend_cleanup(b, d);
		print_diags(d);
		return r < 0 ? EXIT_RUNTIME : 0;
	}
	const struct {
		enum backend_kind kind;
		const char *cmd;
		const char *what;
		bool present;
	} flavours[] = {
		{ BACKEND_DIRECT, NULL, "legacy", legacy_tables_present() },
		{ BACKEND_NFT, NULL, "nft",
		  detect_command("iptables-nft-restore", NULL) &&
			  detect_command("iptables-nft-save", NULL) },
	};
	for (size_t i = 0; i < ARRAY_SIZE(flavours); i++) {
		struct backend_options bo = o->backend;
		struct backend *fb = NULL;

		if (!flavours[i].present) {
			log_debug("--cleanup: no %s iptables tables here", flavours[i].what);
			continue;
		}
		bo.kind = flavours[i].kind;
		bo.restore_cmd = flavours[i].cmd;
		r = backend_new(&bo, &fb, d);
		if (r >= 0)
			r = backend_cleanup(fb, d);
		backend_free(fb);
		if (r < 0) {
			log_err("--cleanup: the %s tables: %s", flavours[i].what, strerror(-r));
			failed = 1;
		} else {
			log_debug("--cleanup: the %s tables are clean", flavours[i].what);
		}
	}
	print_diags(d);
	return failed ? EXIT_RUNTIME : 0;
}

/*
 * --once and --cleanup refuse to write the kernel under a running daemon:
 * its next sync would undo a --once, and put back what --cleanup removed
 * (an outage until then).  They do not hold the lock themselves, so a
 * daemon starting meanwhile is not turned away; two one-shots are ordered
 * by the xtables lock.  Returns true when the mode may go on.
 */
static bool no_daemon_here(const char *mode)
{
	struct nslock_holder h;
	int r = nslock_holder(&h);
	char pid[32] = "pid unknown";

	if (r < 0) {
		log_debug("%s: cannot ask for this network namespace's daemon: %s", mode,
			  strerror(-r));
		return true;
	}
	if (r == 0)
		return true;
	if (!nslock_holder_is_peer(&h)) {
		log_warn("%s: this network namespace's lock @%s is held by pid %d uid %d, not a "
			 "root svcnat; going on", mode, NSLOCK_NAME, (int)h.pid, (int)h.uid);
		return true;
	}
	if (h.pid > 0)
		snprintf(pid, sizeof(pid), "pid %d", (int)h.pid);
	log_err("%s: a svcnat daemon (%s) runs in this network namespace and would undo this "
		"at its next sync; stop it first", mode, pid);
	return false;
}

/* `svcnat etcd-load --etcd-endpoints URLS FILE...`: populate the cluster store. */
static int run_etcd_load(const struct svcnat_options *o, struct diag_list *d)
{
	const struct etcd_options eo = {
		.endpoints = o->etcd_endpoints,
		.prefix = o->etcd_prefix,
		.cacert = o->etcd_cacert,
		.cert = o->etcd_cert,
		.key = o->etcd_key,
		.mode = config_file_mode(o),
	};
	int r;

	if (!o->etcd_endpoints || !o->n_args) {
		fputs("svcnat: etcd-load needs --etcd-endpoints URL[,URL...] and a FILE\n", stderr);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < o->n_args; i++) {
		r = etcd_load_file(&eo, o->args[i], d);
		print_diags(d);
		if (r < 0)
			return r == -EIO || r == -ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
		printf("%s: %d objects written to etcd\n", o->args[i], r);
	}
	return 0;
}

/*
 * kube-proxy's oomScoreAdj defaults to -999 (pkg/proxy/apis/config/v1alpha1
 * defaults, qos.KubeProxyOOMScoreAdj) and a failure to apply it is logged
 * at 2 only (cmd/kube-proxy/app/server.go, Run): lowering the score needs
 * CAP_SYS_RESOURCE, or systemd's OOMScoreAdjust= having set it already.
 */
#define OOM_SCORE_ADJ_DEFAULT (-999)

static void default_oom_score(void)
{
	int r = host_set_oom_score("", OOM_SCORE_ADJ_DEFAULT);

	if (r < 0)
		log_v(2, "cannot set /proc/self/oom_score_adj to %d (kube-proxy's default): %s",
		      OOM_SCORE_ADJ_DEFAULT, strerror(-r));
}

/* kube-proxy's --oom-score-adj, first thing (a failure is only logged). */
static void set_oom_score(const struct svcnat_options *o, struct diag_list *d)
{
	int r;

	if (!o->oom_score_adj_set)
		return;
	r = host_set_oom_score("", o->oom_score_adj);
	if (r < 0)
		/* As kube-proxy: logged, not fatal (lowering needs CAP_SYS_RESOURCE). */
		diag_add(d, DIAG_WARNING, NULL, NULL, "--oom-score-adj",
			 "cannot set /proc/self/oom_score_adj to %d: %s", o->oom_score_adj,
			 strerror(-r));
	print_diags(d);
}

/*
 * The nfacct counters whose "-m nfacct" matches the plan carries (enum
 * plan_nfacct bits), as kube-proxy's pkg/proxy/iptables/proxier.go: it
 * ensures each counter (pkg/proxy/util/nfacct Ensure) and writes a
 * counter's matches only when that worked.  --once and the daemon make
 * them: with --nfacct on one that cannot be made is fatal, with auto it
 * is a warning and the plan goes without its match.  The modes that write
 * nothing plan what --once would write here: on, every match; auto, those
 * of the counters that exist or that nfnetlink_acct would make (probed,
 * read-only; a verbose note says when it cannot tell).  *ret_c: what the
 * daemon keeps ensuring.  0 or -errno.
 */
static int nfacct_plan(const struct svcnat_options *o, unsigned *ret, struct counters *ret_c,
		       struct diag_list *d)
{
	struct counters c = { .want = o->nfacct == NFACCT_OPT_OFF ? 0 : PLAN_NFACCT_ALL,
			      .required = o->nfacct == NFACCT_OPT_ON };
	unsigned bits, unknown;
	int err;

	if (ret_c)
		*ret_c = c;
	if (!c.want) {
		*ret = 0;
		return 0;
	}
	if (o->mode != MODE_ONCE && o->mode != MODE_DAEMON) {
		if (c.required) {
			*ret = c.want;
			return 0;
		}
		bits = counters_probe(c.want, &unknown, &err);
		if (unknown)
			log_info("--nfacct auto: cannot tell whether --once could make the nfacct "
				 "counters here (%s): planned without their -m nfacct matches; "
				 "--nfacct on or off gives a plan of its own",
				 strerror(-err));
		*ret = bits;
		return 0;
	}
	/* Without CAP_NET_ADMIN the run stops at the backend with the reason:
	 * no warning about the counters first. */
	if (!c.required && !host_has_net_admin("")) {
		*ret = 0;
		return 0;
	}
	bits = counters_ensure(&c, d);
	if (c.required && c.failing)
		return -EIO;
	*ret = bits;
	if (ret_c)
		*ret_c = c;
	return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct pipeline *, pipeline_free)

/* The modes that run a pipeline of their own. */
static int run_pipeline_mode(const struct svcnat_options *o, struct diag_list *d)
{
	_cleanup_(pipeline_freep) struct pipeline *p = NULL;
	struct pipeline_config c;
	int r;

	config_pipeline(o, &c);
	if (o->mode != MODE_CLEANUP && o->mode != MODE_INIT_ONLY) {
		r = nfacct_plan(o, &c.plan.nfacct, NULL, d);
		print_diags(d);
		if (r < 0)
			return EXIT_RUNTIME;
	}
	r = pipeline_new(&c, &p, d);
	if (r < 0) {
		print_diags(d);
		return r == -EEXIST ? EXIT_USAGE : EXIT_RUNTIME;
	}
	switch (o->mode) {
	case MODE_ONCE:
		r = run_once(o, p, d);
		/* The process exits next: its memory goes with it. */
		pipeline_leave(p);
		p = NULL;
		return r;
	case MODE_CLEANUP:
		return run_cleanup(o, p, d);
	case MODE_INIT_ONLY:
		return run_init_only(o, p, d);
	case MODE_DUMP_STATE:
		return run_dump_state(p, d);
	case MODE_DIFF:
		return run_diff(p, d);
	default:
		return run_dry_run(p, d);
	}
}

int modes_run(const struct svcnat_options *o)
{
	_cleanup_(diag_list_done) struct diag_list d;
	struct daemon_config dc;

	diag_list_init(&d);
	if (o->mode == MODE_ETCD_LOAD)
		return run_etcd_load(o, &d);
	if (o->mode == MODE_DAEMON || o->mode == MODE_ONCE || o->mode == MODE_INIT_ONLY)
		set_oom_score(o, &d);
	if (o->mode == MODE_DAEMON && !o->oom_score_adj_set)
		default_oom_score();
	if (o->mode == MODE_DAEMON) {
		_cleanup_free_ char *configz = NULL;

		if (configz_render(o, &configz) < 0) {
			log_err("out of memory");
			return EXIT_RUNTIME;
		}
		config_daemon(o, &dc);
		dc.configz = configz;
		if (nfacct_plan(o, &dc.pipeline.plan.nfacct, &dc.nfacct, &d) < 0) {
			print_diags(&d);
			return EXIT_RUNTIME;
		}
		print_diags(&d);
		return daemon_main(&dc);
	}
	if ((o->mode == MODE_ONCE && !no_daemon_here("--once")) ||
	    (o->mode == MODE_CLEANUP && !no_daemon_here("--cleanup")))
		return EXIT_RUNTIME;
	return run_pipeline_mode(o, &d);
}
