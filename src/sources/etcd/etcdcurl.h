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
#include "sources/file/pemfile.h"

/* Connection settings, owned copies of the options. */
struct etcd_conn {
	char **urls;   /* members, no trailing '/' */
	size_t n_urls;
	char *prefix;  /* normalized */
	struct pemfile ca, cert, key; /* --etcd-cacert, --etcd-cert, --etcd-key */
	enum file_mode_check mode;
};

/*
 * Copy and check options, reading the TLS files (diags as
 * etcd_options_check).  0, -EINVAL, -ENOMEM.
 */
int etcd_conn_init(struct etcd_conn *c, const struct etcd_options *o, struct diag_list *d);
void etcd_conn_done(struct etcd_conn *c);

/*
 * Read each TLS file again that changed since it was read (only a stat()
 * for one that did not).  1 if any changed, 0 if none, or the first -errno:
 * a file that cannot be used keeps its old bytes, with one diag naming the
 * option and the file.
 */
int etcd_conn_refresh(struct etcd_conn *c, struct diag_list *d);

/*
 * Prepare easy for a POST of body (JSON, copied) to url + path: timeouts,
 * keepalive, the TLS material as bytes, no proxy, HTTP/1.1.  timeout_ms 0 = none (watch).
 * *headers must be freed with curl_slist_free_all after the transfer.
 * 0, -ENOMEM, -EIO (libcurl refused an option).
 */
int etcd_curl_prepare(CURL *easy, const struct etcd_conn *c, const char *url, const char *path,
		      const char *body, long timeout_ms, struct curl_slist **headers);

#endif
