/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one-shot modes' etcd read: the live source's first full read on a
 * loop of its own, stopped as soon as the read is applied or every member
 * has failed once.
 */
#include <errno.h>

#include "sources/etcd/etcd.h"
#include "sys/loop.h"

struct once {
	struct loop *loop;
	struct diag_list *d;
	size_t members;  /* --etcd-endpoints URLs */
	size_t failures; /* members tried and failed */
};

static void once_event(struct etcd_source *s, enum etcd_event ev, const char *msg, void *userdata)
{
	struct once *o = userdata;

	switch (ev) {
	case ETCD_EV_SYNCED:
		loop_quit(o->loop, 0);
		break;
	case ETCD_EV_DISCONNECTED:
	case ETCD_EV_RETRY:
		/* Each failure moves on to the next member: one try each. */
		if (++o->failures >= o->members) {
			struct etcd_status st;

			/* "URL: what failed", without the daemon's "retrying". */
			etcd_source_get_status(s, &st);
			diag_add(o->d, DIAG_ERROR, "etcd", NULL, NULL, "%s", st.last_error);
			loop_quit(o->loop, -EIO);
		}
		break;
	case ETCD_EV_DIAG:
		diag_add(o->d, DIAG_WARNING, "etcd", NULL, NULL, "%s", msg);
		break;
	default:
		break;
	}
}

int etcd_list_once(struct merge *m, const struct etcd_options *opt, struct diag_list *d)
{
	struct once o = { .d = d };
	struct etcd_source *s = NULL;
	char **urls = NULL;
	int r;

	r = etcd_options_check(opt, d);
	if (r < 0)
		return r;
	r = etcd_endpoints_parse(opt->endpoints, &urls, &o.members);
	if (r < 0)
		return r;
	etcd_endpoints_free(urls, o.members);
	r = loop_new(&o.loop);
	if (r < 0)
		return r;
	r = etcd_source_new(o.loop, m, opt, once_event, &o, &s);
	if (r >= 0)
		r = etcd_source_start(s);
	if (r >= 0)
		r = loop_run(o.loop);
	etcd_source_free(s);
	loop_free(o.loop);
	return r;
}
