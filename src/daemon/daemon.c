/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's lifecycle: setup in order (the lock, the pipeline, the
 * loop, the sources, the HTTP servers), the signals, the file watch, and
 * teardown.  The syncs are sync.c's; metrics and the HTTP handlers
 * telemetry.c's.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "core/duration.h"
#include "daemon/daemon.h"
#include "daemon/state.h"
#include "pipeline/node.h"
#include "sources/etcd/etcdsrc.h"
#include "sources/file/filesrc.h"
#include "sources/kube/kubesrc.h"
#include "sys/log.h"
#include "sys/nslock.h"
#include "util.h"

void daemon_log_diags(struct diag_list *d)
{
	size_t i;

	for (i = 0; i < d->n; i++) {
		_cleanup_free_ char *line = diag_format(&d->items[i]);
		int level = d->items[i].level == DIAG_ERROR   ? LOG_LEVEL_ERR
			    : d->items[i].level == DIAG_WARNING ? LOG_LEVEL_WARNING
								: LOG_LEVEL_INFO;

		if (line)
			log_msg(level, "%s", line);
	}
	if (d->dropped)
		log_warn("%zu more diagnostics not shown", d->dropped);
	diag_list_done(d);
	diag_list_init(d);
}

/* A source's event: log its record, count its errors. */
static void on_source_event(const struct source *s, const struct source_event *ev, void *userdata)
{
	static const int level[] = {
		[SOURCE_DEBUG] = LOG_LEVEL_DEBUG,
		[SOURCE_INFO] = LOG_LEVEL_INFO,
		[SOURCE_WARNING] = LOG_LEVEL_WARNING,
		[SOURCE_ERROR] = LOG_LEVEL_ERR,
	};
	struct daemon *dm = userdata;

	if (ev->diag) {
		_cleanup_free_ char *line = diag_format(ev->diag);

		if (line)
			log_msg(level[ev->severity], "%s", line);
	}
	telemetry_source_errors(dm, s->name, ev->errors);
}

/* The fswatch tag of the KubeProxyConfiguration (a source's is the source). */
#define KPCONFIG_TAG ((void *)&kpconfig_tag)
static const char kpconfig_tag;

static void on_fs_change(struct fswatch *w, const char *path, void *tag, void *userdata)
{
	struct daemon *dm = userdata;

	if (tag == KPCONFIG_TAG) {
		/* As kube-proxy: its settings are read at start, so a changed
		 * file ends the daemon (exit 1; systemd's Restart=on-failure,
		 * or the DaemonSet, starts it again with them).  The rules stay. */
		log_warn("%s: the KubeProxyConfiguration changed: exiting to be restarted with it "
			 "(the rules stay in place)", path);
		dm->exit_code = EXIT_RUNTIME;
		loop_quit(dm->loop, 0);
		return;
	}

	log_debug("%s changed", path);
	sourceset_mark_dirty(tag);
}

static int on_signal(struct loop *l, int fd, uint32_t events, void *userdata)
{
	struct daemon *dm = userdata;
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			log_info("SIGHUP: re-reading every source");
			sourceset_reread(dm->sources);
			/* A re-read that changes nothing still checks the kernel. */
			syncpolicy_change(&dm->gate.policy, loop_now_usec());
			break;
		case SIGTERM:
		case SIGINT:
			log_info("%s: exiting, the rules stay in place",
				 si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
			loop_quit(l, 0);
			return 0;
		default:
			break;
		}
	}
	return 0;
}

static int on_watchdog(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct daemon *dm = userdata;

	/* The loop turned: tell systemd we are alive (WatchdogSec=). */
	(void)sd_notify(0, "WATCHDOG=1");
	return loop_timer_arm(dm->watchdog, dm->watchdog_usec / 2);
}

static int setup_signals(struct daemon *dm)
{
	sigset_t mask;
	int r;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	dm->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (dm->sigfd < 0)
		return -errno;
	r = loop_add_io(dm->loop, dm->sigfd, EPOLLIN, on_signal, dm);
	return r;
}

/* Watch and read --config number i (at start). */
static int setup_file(struct daemon *dm, size_t i)
{
	const char *path = dm->o->pipeline.configs[i];
	struct source *s;
	int r;

	r = filesrc_live_new(pipeline_file_source(dm->p, i), dm->metrics, &s);
	if (r >= 0)
		r = sourceset_add(dm->sources, s);
	if (r < 0)
		return r;
	if (!streq(path, "-")) {
		r = fswatch_add(dm->watch, path, s);
		if (r < 0) {
			log_err("%s: cannot watch it: %s", path, strerror(-r));
			return r;
		}
	}
	/* A config writable by others is refused at start (exit 2);
	 * anything else unreadable is waited for. */
	return sourceset_read(dm->sources, s) == -EPERM ? -EPERM : 0;
}

/* The network sources: etcd, the API.  Started with the files read. */
static int setup_network(struct daemon *dm)
{
	struct etcd_options eo = {
		.endpoints = dm->o->etcd_endpoints,
		.prefix = dm->o->etcd_prefix,
		.cacert = dm->o->etcd_cacert,
		.cert = dm->o->etcd_cert,
		.key = dm->o->etcd_key,
		.mode = dm->o->pipeline.file_mode,
	};
	struct kube_options ko = {
		.kubeconfig = dm->o->pipeline.kubeconfig,
		.master = dm->o->pipeline.master,
		.content_type = dm->o->pipeline.kube_content_type,
		.accept_content_types = dm->o->pipeline.kube_accept_content_types,
		.no_watch_list = dm->o->pipeline.kube_no_watch_list,
		.node_name = dm->o->pipeline.hostname,
		.mode = dm->o->pipeline.file_mode,
		.on_request = kpmetrics_rest_request,
		.request_userdata = dm->metrics,
	};
	struct merge *m = pipeline_merge(dm->p);
	struct source *s;
	struct diag_list d;
	int r = 0;

	diag_list_init(&d);
	if (dm->o->etcd_endpoints) {
		r = etcdsrc_new(dm->loop, m, dm->metrics, &eo, &d, &s);
		if (r >= 0)
			r = sourceset_add(dm->sources, s);
	}
	if (r >= 0 && dm->o->pipeline.kube) {
		r = kubesrc_new(dm->loop, m, dm->metrics, &ko, sync_node, dm, &d, &s);
		if (r >= 0) {
			kpmetrics_declare_rest_client(dm->metrics);
			r = sourceset_add(dm->sources, s);
		}
	}
	daemon_log_diags(&d);
	diag_list_done(&d);
	return r;
}

static int setup_sources(struct daemon *dm)
{
	size_t i;
	int r;

	r = loop_timer_new(dm->loop, sync_wait_timer, dm, &dm->wait_timer);
	if (r < 0)
		return r;
	r = metrics_declare(dm->metrics, "svcnat_source_conflicts_total", METRIC_COUNTER,
			    "Objects defined by two sources (each conflict counted once)", NULL, 0);
	if (r < 0)
		return r;
	r = fswatch_new(dm->loop, on_fs_change, dm, &dm->watch);
	if (r < 0)
		return r;
	if (dm->o->kp_config) {
		r = fswatch_add(dm->watch, dm->o->kp_config, KPCONFIG_TAG);
		if (r < 0) {
			log_err("%s: cannot watch it: %s", dm->o->kp_config, strerror(-r));
			return r;
		}
	}
	for (i = 0; i < dm->o->pipeline.n_configs; i++) {
		r = setup_file(dm, i);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A contender's connection, made to learn our pid: closed at once. */
static int on_lock_probe(struct loop *l, int fd, uint32_t events, void *userdata)
{
	(void)events;
	(void)userdata;
	if (nslock_drain(fd) < 0)
		/* Out of descriptors: stop accepting (we keep the lock; a
		 * contender then learns it is held, not by whom). */
		(void)loop_del_io(l, fd);
	return 0;
}

/*
 * One daemon per network namespace: two would each undo the other's rules
 * at every sync.  Taken before anything touches the kernel.  A holder of
 * another uid (or one that does not answer as svcnat does) squats the name:
 * warn and go on without the guard rather than never start.
 */
static int take_netns_lock(struct daemon *dm)
{
	struct nslock_holder h;
	int r = nslock_take(&dm->lock_fd, &h);

	if (r == -EBUSY && !nslock_holder_is_peer(&h)) {
		if (h.uid != (uid_t)-1)
			log_warn("this network namespace's lock @%s is held by pid %d uid %u, not a "
				 "root svcnat; continuing without the one-daemon guard", NSLOCK_NAME,
				 (int)h.pid, (unsigned)h.uid);
		else
			log_warn("this network namespace's lock @%s is held by a process that does "
				 "not answer as svcnat does; continuing without the one-daemon guard",
				 NSLOCK_NAME);
		return 0;
	}
	if (r == -EBUSY) {
		if (h.pid > 0)
			log_err("another svcnat (pid %d) already runs in this network namespace; "
				"not starting a second one", (int)h.pid);
		else
			log_err("another svcnat (pid unknown: another pid namespace) already runs "
				"in this network namespace; not starting a second one");
	} else if (r < 0) {
		log_err("cannot take this network namespace's lock (@%s): %s", NSLOCK_NAME,
			strerror(-r));
	}
	return r;
}

static void daemon_done(struct daemon *dm)
{
	if (worker_busy(dm->worker))
		log_info("waiting for the kernel write in progress to end");
	/* Joins a write in progress: the kernel's tables stay consistent. */
	worker_free(dm->worker);
	diag_list_done(&dm->job.d);
	hc_servers_free(dm->hc);
	merge_snapshot_unref(dm->last_snap);
	loop_timer_free(dm->watchdog);
	http_server_free(dm->healthz);
	http_server_free(dm->metrics_srv);
	http_pool_free(dm->http_pool);
	sourceset_free(dm->sources);
	nladdrs_watch_free(dm->addrs);
	fswatch_free(dm->watch);
	loop_timer_free(dm->sync_timer);
	loop_timer_free(dm->wait_timer);
	if (dm->sigfd >= 0) {
		loop_del_io(dm->loop, dm->sigfd);
		close(dm->sigfd);
	}
	loop_free(dm->loop);
	pipeline_free(dm->p);
	if (dm->lock_fd >= 0)
		close(dm->lock_fd);
	kpmetrics_free(dm->kpm);
	metrics_free(dm->metrics);
}

/* The sync policy from --min-sync-period and --sync-period; 0 or EXIT_USAGE. */
static int sync_config(const struct daemon_config *o, struct syncpolicy_config *pc)
{
	/* The command line checked the periods; a caller that did not is a bug. */
	if (syncpolicy_config_periods(pc, o->min_sync_usec, o->sync_period_usec) < 0) {
		log_err("invalid sync periods in the daemon's configuration");
		return EXIT_RUNTIME;
	}
	if (o->pipeline.n_configs == 0 && !o->etcd_endpoints && !o->pipeline.kube) {
		fprintf(stderr, "svcnat: nothing to follow: give --config PATH, --etcd-endpoints and/or "
				"--kubeconfig\n");
		return EXIT_USAGE;
	}
	return 0;
}

/* The lock, the metrics, the pipeline and its backend.  *code is the exit
 * code should it fail. */
static int setup_pipeline(struct daemon *dm, struct diag_list *d, struct backend **ret_b,
			  int *code)
{
	int r;

	r = take_netns_lock(dm);
	if (r < 0)
		return r;
	dm->metrics = metrics_new();
	if (!dm->metrics || metrics_declare_svcnat(dm->metrics) < 0)
		return -ENOMEM;
	r = pipeline_new(&dm->o->pipeline, &dm->p, d);
	daemon_log_diags(d);
	if (r < 0) {
		*code = r == -EEXIST ? EXIT_USAGE : EXIT_RUNTIME;
		return r;
	}
	r = pipeline_backend(dm->p, ret_b, d);
	daemon_log_diags(d);
	if (r < 0)
		return r;
	/* Dual-stack (ip6tables written too): kube-proxy's IPv6 series from
	 * the start, beside the IPv4 ones. */
	dm->ipv6 = pipeline_family(dm->p) == AF_UNSPEC;
	if (dm->ipv6 && metrics_declare_family(dm->metrics, "IPv6") < 0)
		return -ENOMEM;
	if (kpmetrics_new(dm->metrics, pipeline_family(dm->p), wall_now(), &dm->kpm) < 0)
		return -ENOMEM;
	return 0;
}

/* The loop and what runs on it before any source: signals, the worker,
 * the sync timer and gate, the HTTP pool, the watchdog. */
static int setup_loop(struct daemon *dm, const struct syncpolicy_config *pc)
{
	struct http_limits hl;
	int r;

	r = loop_new(&dm->loop);
	if (r < 0)
		return r;
	r = setup_signals(dm);
	if (r >= 0 && dm->lock_fd >= 0)
		r = loop_add_io(dm->loop, dm->lock_fd, EPOLLIN, on_lock_probe, dm);
	if (r < 0)
		return r;
	/* After the signal mask is set: the worker's thread must not take
	 * TERM/INT/HUP (it blocks every signal anyway). */
	r = worker_new(dm->loop, &dm->worker);
	if (r < 0)
		return r;
	r = loop_timer_new(dm->loop, sync_timer, dm, &dm->sync_timer);
	if (r < 0)
		return r;
	http_limits_default(http_raise_nofile(), &hl);
	r = http_pool_new(dm->loop, &hl, &dm->http_pool);
	if (r < 0)
		return r;
	r = hc_servers_new(dm->http_pool, telemetry_proxy_healthy, dm, &dm->hc);
	if (r < 0)
		return r;
	if (sd_watchdog_enabled(0, &dm->watchdog_usec) > 0 && dm->watchdog_usec) {
		r = loop_timer_new(dm->loop, on_watchdog, dm, &dm->watchdog);
		if (r >= 0)
			r = loop_timer_arm(dm->watchdog, dm->watchdog_usec / 2);
		if (r < 0)
			return r;
	}
	r = sourceset_new(on_source_event, dm, &dm->sources);
	if (r < 0)
		return r;
	gate_init(&dm->gate, pc, dm->sources, loop_now_usec());
	return merge_handler_register(pipeline_merge(dm->p), MERGE_HANDLE_ALL, sync_merged, dm);
}

/* Without --node-ip: follow the node's addresses (both families: each
 * plan takes its own). */
static int setup_addrs(struct daemon *dm)
{
	const struct ipaddr *addrs;
	size_t n;
	int r;

	if (dm->o->pipeline.node_ips_given)
		return 0;
	r = nladdrs_watch_new(dm->loop, AF_UNSPEC, sync_addrs, dm, &dm->addrs);
	if (r < 0) {
		log_err("cannot follow the node's addresses over netlink: %s", strerror(-r));
		return r;
	}
	nladdrs_watch_get(dm->addrs, &addrs, &n);
	return pipeline_set_addresses(dm->p, addrs, n) < 0 ? -ENOMEM : 0;
}

/* The sysctls the data path needs and the conntrack settings, once the
 * node's addresses are known (IPv6 forwarding matters with a global one). */
static int setup_sysctls(struct daemon *dm, struct diag_list *d)
{
	struct host_sysctls h = dm->o->sysctls;

	h.global6 = node_has_global6(pipeline_settings(dm->p));
	return host_setup_sysctls("", &h, d);
}

/* Every source, read or started; *code is the exit code should it fail. */
static int setup_all_sources(struct daemon *dm, int *code)
{
	int r;

	r = setup_sources(dm);
	if (r == -EPERM) {
		*code = EXIT_USAGE;
		return r;
	}
	if (r < 0)
		return r;
	r = setup_network(dm);
	if (r >= 0)
		r = sourceset_start(dm->sources);
	if (r == -EINVAL || r == -ENOENT || r == -EACCES || r == -EPERM)
		*code = EXIT_USAGE;
	return r;
}

/* Set up and run the loop until it stops; *code is the exit code (kept
 * when setup fails).  0 or -errno. */
static int daemon_run(struct daemon *dm, const struct syncpolicy_config *pc,
		      struct diag_list *d, int *code)
{
	struct backend *b;
	char a[32], c[32];
	int r;

	r = setup_pipeline(dm, d, &b, code);
	if (r >= 0)
		r = setup_loop(dm, pc);
	if (r >= 0)
		r = setup_addrs(dm);
	if (r < 0)
		return r;
	pipeline_check_families(dm->p, d);
	r = setup_sysctls(dm, d);
	daemon_log_diags(d);
	if (r >= 0)
		r = setup_all_sources(dm, code);
	if (r >= 0)
		r = telemetry_http_setup(dm);
	if (r < 0)
		return r;
	loop_set_post(dm->loop, sync_post, dm);
	log_info("svcnat %s running: %zu sources, backend %s, min-sync-period %s, sync-period %s",
		 PACKAGE_VERSION, sourceset_size(dm->sources), backend_kind_name(backend_kind_of(b)),
		 duration_fmt(pc->min_sync_usec, a, sizeof(a)),
		 duration_fmt(pc->sync_period_usec, c, sizeof(c)));
	r = loop_run(dm->loop);
	(void)sd_notify(0, "STOPPING=1");
	if (r < 0)
		log_err("event loop failed: %s", strerror(-r));
	else
		*code = dm->exit_code;
	return r;
}

int daemon_main(const struct daemon_config *o)
{
	struct daemon dm = { .o = o, .sigfd = -1, .lock_fd = -1, .nfacct = o->nfacct };
	struct syncpolicy_config pc;
	struct diag_list d;
	int r, code;

	code = sync_config(o, &pc);
	if (code)
		return code;
	code = EXIT_RUNTIME;
	diag_list_init(&d);
	r = daemon_run(&dm, &pc, &d, &code);
	if (r == -ENOMEM)
		log_err("out of memory");
	daemon_log_diags(&d);
	diag_list_done(&d);
	daemon_done(&dm);
	return code;
}
