/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libcurl's multi interface on the daemon's loop: curl's sockets become loop
 * io sources, its timeout a loop timer, and each finished transfer is handed
 * to the owner's callback.  Shared by the etcd and API server sources.
 */
#ifndef SVCNAT_SOURCES_CURLLOOP_H
#define SVCNAT_SOURCES_CURLLOOP_H

#include <curl/curl.h>

#include "sys/loop.h"

/*
 * A transfer is done: priv is its easy handle's CURLINFO_PRIVATE (may be
 * NULL), result its outcome.  The callback may remove and free the handle.
 */
typedef void (*curlloop_done_fn)(void *priv, CURLcode result, void *userdata);

/* Embedded in its owner; zeroed (or curlloop_done()) = nothing to free. */
struct curlloop {
	CURLM *multi;             /* add and remove easy handles here */
	struct loop *loop;
	struct loop_timer *timer; /* curl's timeout */
	curlloop_done_fn done;
	void *userdata;
};

/*
 * Set up c (zeroed by the caller) on loop l, done(.., userdata) called for
 * every finished transfer.  Runs libcurl's global init once.  Returns 0,
 * -ENOMEM or -EIO (libcurl refused); on failure curlloop_done() cleans up.
 */
int curlloop_init(struct curlloop *c, struct loop *l, curlloop_done_fn done, void *userdata);

/*
 * libcurl's global init, once per process (later calls return 0).  Not
 * thread-safe: call it from main-level code or the loop thread.  0 or -EIO.
 */
int curlloop_global_init(void);

/*
 * TLS material for e as bytes (CURLOPT_CAINFO_BLOB, _SSLCERT_BLOB,
 * _SSLKEY_BLOB, copied): libcurl then opens no path of its own, which a
 * FIFO swapped in would block on.  A NULL one is not set (ca: the system's
 * CAs).  0, -ENOMEM, or -EIO (libcurl refused: built without blob support).
 */
int curlloop_set_tls(CURL *e, const char *ca, size_t ca_len, const char *cert, size_t cert_len,
		     const char *key, size_t key_len);

/* Free the multi handle and the timer; remove every easy handle first. */
void curlloop_done(struct curlloop *c);

#endif
