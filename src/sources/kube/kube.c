/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The API source (kube.h): its options and kubeconfig, one reflector per
 * resource (kuberefl.c) on one libcurl multi handle on the loop, its
 * status, the one-shot list.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/kube/kubestate.h"
#include "sources/net/jitter.h"
#include "util.h"

#define DEFAULT_PAGE 500

void kube_notify(struct kube_source *s, enum kube_source_event ev, const char *fmt, ...)
{
	char msg[800];
	va_list ap;

	if (!s->fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->fn(s, ev, msg, s->userdata);
}

/* host[:port] of a URL as Go's url.URL.Host has it ("https://10.96.0.1:443/x"
 * -> "10.96.0.1:443", "[::1]:6443" kept bracketed). */
static void url_host(const char *url, char *out, size_t len)
{
	const char *p = strstr(url, "://"), *e;

	p = p ? p + 3 : url;
	e = p + strcspn(p, "/?#");
	/* userinfo is not part of Host */
	for (const char *at = p; at < e; at++)
		if (*at == '@')
			p = at + 1;
	snprintf(out, len, "%.*s", (int)(e - p), p);
}

bool kube_options_wanted(const struct kube_options *o)
{
	return (o->kubeconfig && *o->kubeconfig) || (o->master && *o->master);
}

static int load_config(const struct kube_options *o, struct kube_config *c, struct diag_list *d)
{
	if (o->kubeconfig && *o->kubeconfig)
		return kube_config_load(o->kubeconfig, o->master && *o->master ? o->master : NULL,
					o->mode, c, d);
	if (o->master && *o->master)
		return kube_config_master(o->master, c, d);
	return kube_config_in_cluster(o->sa_dir, o->mode, c, d);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct kube_source *, kube_source_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct loop *, loop_free);

int kube_source_new(struct loop *l, struct merge *m, const struct kube_options *o, kube_event_fn fn,
		    void *userdata, struct kube_source **ret, struct diag_list *d)
{
	_cleanup_(kube_source_freep) struct kube_source *s = NULL;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = l;
	s->merge = m;
	s->fn = fn;
	s->userdata = userdata;
	s->page = o->page_size ? o->page_size : DEFAULT_PAGE;
	s->watch_list = !o->no_watch_list;
	s->content_type = strdup(o->content_type && *o->content_type ? o->content_type
								      : KUBE_CT_DEFAULT);
	if (!s->content_type)
		return -ENOMEM;
	if (!kube_content_type_valid(s->content_type)) {
		diag_add(d, DIAG_ERROR, NULL, NULL, "--kube-api-content-type",
			 "'%.100s' is not a content type svcnat reads (%s or %s)", s->content_type,
			 KUBE_CT_PROTOBUF, KUBE_CT_JSON);
		return -EINVAL;
	}
	/* kube-proxy sends clientConnection.acceptContentTypes when given
	 * (cmd/kube-proxy/app/server.go, createClient), else the header
	 * follows the content type. */
	if (o->accept_content_types && *o->accept_content_types) {
		const char *why = NULL;

		if (!kube_accept_valid(o->accept_content_types, &why)) {
			diag_add(d, DIAG_ERROR, NULL, NULL, "clientConnection.acceptContentTypes",
				 "'%.100s' is not %s", o->accept_content_types, why);
			return -EINVAL;
		}
	}
	r = kube_accept_header(s->content_type, o->accept_content_types, s->accept,
			       sizeof(s->accept));
	if (r < 0)
		return r;
	r = load_config(o, &s->cfg, d);
	if (r < 0)
		return r;
	s->rnd = jitter_seed();
	s->label_q = kube_query_escape(KUBE_PROXY_SELECTOR);
	if (!s->label_q)
		return -ENOMEM;
	if (o->node_name && *o->node_name) {
		_cleanup_free_ char *fs = NULL;

		if (asprintf(&fs, "metadata.name=%s", o->node_name) < 0)
			return -ENOMEM;
		s->node_q = kube_query_escape(fs);
		if (!s->node_q)
			return -ENOMEM;
	}
	s->on_request = o->on_request;
	s->request_userdata = o->request_userdata;
	url_host(s->cfg.server, s->host, sizeof(s->host));
	r = curlloop_init(&s->curl, l, kube_refl_transfer_done, s);
	if (r < 0)
		return r;
	for (enum kube_res res = 0; res < KUBE_RES_COUNT; res++) {
		struct kube_reflector *rf;
		int sid = -1;

		if (res == KUBE_RES_NODE && !s->node_q)
			continue;
		if (res != KUBE_RES_NODE) {
			char name[64];

			snprintf(name, sizeof(name), "api:%s", kube_res_name(res));
			sid = merge_source_register(m, name);
			if (sid < 0)
				return sid;
		}
		rf = &s->rf[s->n_rf++];
		r = kube_refl_init(rf, s, res, sid);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

int kube_source_start(struct kube_source *s)
{
	if (s->started)
		return -EALREADY;
	s->started = true;
	s->first_list_started = loop_now_usec();
	/* A failure to start is retried like a failed connection. */
	for (size_t i = 0; i < s->n_rf; i++)
		(void)kube_refl_connect(&s->rf[i]);
	return 0;
}

int kube_source_resync(struct kube_source *s)
{
	if (!s->started)
		return kube_source_start(s);
	for (size_t i = 0; i < s->n_rf; i++) {
		struct kube_reflector *rf = &s->rf[i];

		(void)loop_timer_arm(rf->retry_timer, 0);
		reflector_forget_relist(&rf->refl); /* asked for: no backoff */
		kube_refl_relist(rf, "resync requested");
	}
	return 0;
}

void kube_source_get_status(const struct kube_source *s, struct kube_source_status *ret)
{
	struct kube_source_status st = {
		.synced = s->synced,
		.server = s->cfg.server,
		.rv_services = s->rf[0].sink.rv,
		.rv_slices = s->rf[1].sink.rv,
		.relists = s->relists,
		.streamed = s->streamed,
		.protobuf = s->protobuf,
		.reconnects = s->reconnects,
		.last_list_usec = s->last_list_usec,
		.last_error = s->last_error,
		.connected = s->n_rf > 0,
	};

	for (size_t i = 0; i < s->n_rf; i++) {
		const struct kube_sink *k = &s->rf[i].sink;

		st.connected = st.connected && s->rf[i].refl.connected;
		st.events += k->events;
		st.bookmarks += k->bookmarks;
		st.rejected += k->rejected;
	}
	*ret = st;
}

const struct kube_node *kube_source_node(const struct kube_source *s)
{
	for (size_t i = 0; i < s->n_rf; i++)
		if (s->rf[i].res == KUBE_RES_NODE && s->rf[i].sink.have_node)
			return &s->rf[i].sink.node;
	return NULL;
}

void kube_source_free(struct kube_source *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_rf; i++)
		kube_refl_done(&s->rf[i]);
	curlloop_done(&s->curl);
	kube_config_done(&s->cfg);
	free(s->content_type);
	free(s->label_q);
	free(s->node_q);
	free(s);
}

static void once_event(struct kube_source *s, enum kube_source_event ev, const char *msg, void *userdata)
{
	struct diag_list *d = userdata;

	if (ev == KUBE_SRC_FATAL || ev == KUBE_SRC_DIAG)
		diag_add(d, ev == KUBE_SRC_FATAL ? DIAG_ERROR : DIAG_WARNING, "api", NULL, NULL,
			 "%s", msg);
}

int kube_list_once(struct merge *m, const struct kube_options *o, struct kube_node *ret_node,
		   bool *ret_have_node, struct diag_list *d)
{
	/* Freed in this order: the source first, then its loop. */
	_cleanup_(loop_freep) struct loop *l = NULL;
	_cleanup_(kube_source_freep) struct kube_source *s = NULL;
	const struct kube_node *n;
	int r;

	r = loop_new(&l);
	if (r < 0)
		return r;
	r = kube_source_new(l, m, o, once_event, d, &s, d);
	if (r < 0)
		return r;
	s->once = true;
	s->once_diags = d;
	(void)kube_source_start(s);
	r = loop_run(l);
	if (r >= 0)
		r = s->once_result;
	if (r >= 0 && !kube_refl_all_listed(s, true))
		r = -EIO;
	n = kube_source_node(s);
	if (ret_have_node)
		*ret_have_node = n != NULL;
	if (n && ret_node)
		*ret_node = *n;
	return r;
}
