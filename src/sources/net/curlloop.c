/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libcurl's multi interface on the loop (curl's "multi_socket" API). */
#include <errno.h>
#include <stdbool.h>
#include <sys/epoll.h>

#include "sources/net/curlloop.h"

static void process_done(struct curlloop *c)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(c->multi, &left))) {
		void *priv = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&priv);
		c->done(priv, msg->data.result, c->userdata);
	}
}

static int on_io(struct loop *l, int fd, uint32_t events, void *userdata)
{
	struct curlloop *c = userdata;
	int flags = 0, running;

	if (events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP))
		flags |= CURL_CSELECT_IN;
	if (events & EPOLLOUT)
		flags |= CURL_CSELECT_OUT;
	if (events & EPOLLERR)
		flags |= CURL_CSELECT_ERR;
	curl_multi_socket_action(c->multi, fd, flags, &running);
	process_done(c);
	return 0;
}

static int on_timer(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct curlloop *c = userdata;
	int running;

	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	process_done(c);
	return 0;
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct curlloop *c = userp;
	uint32_t ev = 0;
	int r;

	if (what == CURL_POLL_REMOVE) {
		(void)loop_del_io(c->loop, fd);
		curl_multi_assign(c->multi, fd, NULL);
		return 0;
	}
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		ev |= EPOLLIN;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		ev |= EPOLLOUT;
	if (socketp)
		return loop_mod_io(c->loop, fd, ev) < 0 ? -1 : 0;
	r = loop_add_io(c->loop, fd, ev, on_io, c);
	if (r == -EEXIST) {
		/* curl closed an fd without telling us and got the number back. */
		(void)loop_del_io(c->loop, fd);
		r = loop_add_io(c->loop, fd, ev, on_io, c);
	}
	if (r < 0)
		return -1;
	curl_multi_assign(c->multi, fd, c);
	return 0;
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct curlloop *c = userp;
	int r;

	if (timeout_ms < 0)
		r = loop_timer_arm(c->timer, 0);
	else
		/* 0 means "now": the loop takes 0 as disarm, so use 1 us. */
		r = loop_timer_arm(c->timer, timeout_ms ? (uint64_t)timeout_ms * 1000 : 1);
	return r < 0 ? -1 : 0;
}

int curlloop_global_init(void)
{
	static bool done;

	if (done)
		return 0;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -EIO;
	done = true;
	return 0;
}

int curlloop_init(struct curlloop *c, struct loop *l, curlloop_done_fn done, void *userdata)
{
	int r;

	c->loop = l;
	c->done = done;
	c->userdata = userdata;
	r = curlloop_global_init();
	if (r < 0)
		return r;
	c->multi = curl_multi_init();
	if (!c->multi)
		return -ENOMEM;
	if (curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, socket_cb) != CURLM_OK ||
	    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c) != CURLM_OK ||
	    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb) != CURLM_OK ||
	    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c) != CURLM_OK)
		return -EIO;
	return loop_timer_new(l, on_timer, c, &c->timer);
}

void curlloop_done(struct curlloop *c)
{
	if (c->multi)
		curl_multi_cleanup(c->multi);
	c->multi = NULL;
	loop_timer_free(c->timer);
	c->timer = NULL;
}

static CURLcode set_blob(CURL *e, CURLoption opt, const char *data, size_t len)
{
	struct curl_blob b = { .data = (void *)data, .len = len, .flags = CURL_BLOB_COPY };

	return data ? curl_easy_setopt(e, opt, &b) : CURLE_OK;
}

int curlloop_set_tls(CURL *e, const char *ca, size_t ca_len, const char *cert, size_t cert_len,
		     const char *key, size_t key_len)
{
	CURLcode cc = set_blob(e, CURLOPT_CAINFO_BLOB, ca, ca_len);

	if (cc == CURLE_OK)
		cc = set_blob(e, CURLOPT_SSLCERT_BLOB, cert, cert_len);
	if (cc == CURLE_OK)
		cc = set_blob(e, CURLOPT_SSLKEY_BLOB, key, key_len);
	if (cc == CURLE_OK)
		return 0;
	return cc == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EIO;
}
