/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libcurl plumbing shared by the etcd source (multi interface, on the loop)
 * and `svcnat etcd-load` (blocking): one place sets the options every
 * request to a member gets.  Internal to sources/etcd*.c.
 */
#ifndef SVCNAT_SOURCES_ETCDCURL_H
#define SVCNAT_SOURCES_ETCDCURL_H

#include <curl/curl.h>
#include <stdbool.h>

#include "sources/etcd/etcd.h"

/* Connection settings, owned copies of the options. */
struct etcd_conn {
	char **urls;   /* members, no trailing '/' */
	size_t n_urls;
	char *prefix;  /* normalized */
	char *cacert;
	char *cert;
	char *key;
};

/* Copy and check options (diags as etcd_options_check).  0, -EINVAL, -ENOMEM. */
int etcd_conn_init(struct etcd_conn *c, const struct etcd_options *o, struct diag_list *d);
void etcd_conn_done(struct etcd_conn *c);

/*
 * Prepare easy for a POST of body (JSON, copied) to url + path: timeouts,
 * keepalive, TLS files, no proxy, HTTP/1.1.  timeout_ms 0 = none (watch).
 * *headers must be freed with curl_slist_free_all after the transfer.
 * 0, -ENOMEM, -EIO (libcurl refused an option).
 */
int etcd_curl_prepare(CURL *easy, const struct etcd_conn *c, const char *url, const char *path,
		      const char *body, long timeout_ms, struct curl_slist **headers);

#endif
