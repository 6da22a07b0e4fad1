/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test driver for the etcd source alone (tests/e2e/etcd-source.sh): runs the
 * source on a loop with a merge engine and prints, line-buffered,
 *   EVENT <name> <message>        for every source event
 *   STATE rev=R services=N slices=M [list]   after every merged change
 * where list is "S ns/name:port ... E ns/name:ip,ip ..." when N+M <= 50.
 * SIGUSR1 prints a STATUS line (etcd_source_get_status), SIGHUP reads
 * everything again on a new connection (etcd_source_resync).  Runs until
 * SIGTERM/SIGINT.
 *
 * usage: etcd-follow URL[,URL...] [PREFIX [CACERT CERT KEY]]  ("" = unset)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <inttypes.h>

#include "core/merge.h"
#include "sources/etcd/etcd.h"
#include "sys/loop.h"

struct ctx {
	struct merge *m;
	struct etcd_source *src;
};

static const char *const ev_names[] = {
	[ETCD_EV_CONNECTED] = "connected", [ETCD_EV_DISCONNECTED] = "disconnected",
	[ETCD_EV_RETRY] = "retry",         [ETCD_EV_SYNCED] = "synced",
	[ETCD_EV_COMPACTED] = "compacted", [ETCD_EV_DIAG] = "diag",
};

static void on_event(struct etcd_source *s, enum etcd_event ev, const char *msg, void *userdata)
{
	printf("EVENT %s %s\n", ev_names[ev], msg);
}

static void print_state(const struct merge_snapshot *snap, int64_t rev)
{
	char ip[64];

	printf("STATE rev=%" PRId64 " services=%zu slices=%zu", rev, snap->n_services,
	       snap->n_slices);
	if (snap->n_services + snap->n_slices <= 50) {
		for (size_t i = 0; i < snap->n_services; i++) {
			const struct service *s = snap->services[i];

			printf(" S:%s/%s:%u", s->ns, s->name, s->n_ports ? s->ports[0].port : 0);
		}
		for (size_t i = 0; i < snap->n_slices; i++) {
			const struct epslice *e = snap->slices[i];

			printf(" E:%s/%s:", e->ns, e->name);
			for (size_t j = 0; j < e->n_endpoints; j++)
				printf("%s%s", j ? "," : "",
				       ipaddr_fmt(&e->endpoints[j].addr, ip, sizeof(ip)));
		}
	}
	printf("\n");
}

static void on_merge(const struct merge_snapshot *snap, unsigned changed, void *userdata)
{
	struct ctx *c = userdata;
	struct etcd_status st;

	etcd_source_get_status(c->src, &st);
	print_state(snap, st.revision);
}

static void post(struct loop *l, void *userdata)
{
	struct ctx *c = userdata;

	(void)merge_flush(c->m);
}

static int on_signal(struct loop *l, int fd, uint32_t events, void *userdata)
{
	struct ctx *c = userdata;
	struct signalfd_siginfo si;
	struct etcd_status st;

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo == SIGUSR1) {
		etcd_source_get_status(c->src, &st);
		printf("STATUS connected=%d synced=%d revision=%" PRId64 " reconnects=%" PRIu64
		       " full_reads=%" PRIu64 " events=%" PRIu64 " rejected=%" PRIu64
		       " last_read_ms=%" PRIu64 " endpoint=%s last_error=%s\n",
		       st.connected, st.synced, st.revision, st.reconnects, st.full_reads, st.events,
		       st.rejected, st.last_read_usec / 1000, st.endpoint, st.last_error);
		return 0;
	}
	if (si.ssi_signo == SIGHUP) {
		(void)etcd_source_resync(c->src);
		return 0;
	}
	loop_quit(l, 0);
	return 0;
}

int main(int argc, char **argv)
{
	struct etcd_options o = { 0 };
	struct loop *l = NULL;
	struct ctx c = { 0 };
	sigset_t mask;
	int sfd, r;

	if (argc < 2) {
		fprintf(stderr, "usage: %s URL[,URL...] [PREFIX [CACERT CERT KEY]]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	o.endpoints = argv[1];
	o.prefix = argc > 2 && *argv[2] ? argv[2] : NULL;
	o.cacert = argc > 3 && *argv[3] ? argv[3] : NULL;
	o.cert = argc > 4 && *argv[4] ? argv[4] : NULL;
	o.key = argc > 5 && *argv[5] ? argv[5] : NULL;
	o.mode = FILE_MODE_REFUSE;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	c.m = merge_new();
	if (sfd < 0 || !c.m || loop_new(&l) < 0)
		return 1;
	r = etcd_source_new(l, c.m, &o, on_event, NULL, &c.src);
	if (r < 0) {
		fprintf(stderr, "etcd_source_new: %s\n", strerror(-r));
		return 2;
	}
	merge_handler_register(c.m, MERGE_HANDLE_ALL, on_merge, &c);
	loop_set_post(l, post, &c);
	loop_add_io(l, sfd, EPOLLIN, on_signal, &c);
	r = etcd_source_start(c.src);
	if (r >= 0)
		r = loop_run(l);
	loop_del_io(l, sfd);
	close(sfd);
	etcd_source_free(c.src);
	loop_free(l);
	merge_free(c.m);
	return r < 0 ? 1 : 0;
}
