/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Connection admission for the HTTP servers (sys/http.c), pure: counts of
 * open connections per client, per kind of server and in all, and the
 * answer to "may this client open one more?".  A client is an IPv4 address
 * (also as an IPv4-mapped IPv6 address) or an IPv6 /64, since one host
 * commonly holds a whole /64.  The per-client count is kept per kind, so
 * that a client's connections to the metrics server never use up its share
 * on the health servers.  Memory is bounded: a client has an entry only
 * while it has connections, and there are at most max_total of those.
 */
#ifndef SVCNAT_SYS_HTTPLIMIT_H
#define SVCNAT_SYS_HTTPLIMIT_H

#include <stdint.h>
#include <sys/socket.h>

/* The kinds of server: health (/healthz, health-check node ports) first. */
enum http_kind { HTTP_HEALTH, HTTP_OTHER, HTTP_KIND_MAX };

struct httplimit_key {
	uint8_t b[10]; /* kind, family, 8 address bytes (IPv4: 4, zero-padded) */
};

/*
 * The client of sa for a server of kind k into *ret.  0, or -EAFNOSUPPORT
 * for an address that is neither IPv4 nor IPv6 (then no limit applies but
 * the totals).
 */
int httplimit_key(const struct sockaddr *sa, socklen_t len, enum http_kind k,
		  struct httplimit_key *ret);

struct httplimit_conf {
	unsigned max_total;               /* all kinds together, >= 1 */
	unsigned max_kind[HTTP_KIND_MAX]; /* each kind at most (0: max_total) */
	unsigned per_client;              /* per client and kind, >= 1 */
};

struct httplimit;

/* A table for conf (copied); seed keys the hash.  0 or -ENOMEM/-EINVAL. */
int httplimit_new(const struct httplimit_conf *conf, uint64_t seed, struct httplimit **ret);
void httplimit_free(struct httplimit *t);

/*
 * Whether one more connection of key may open: 0; -ENOSPC when the total
 * or the kind's share is taken; -EDQUOT when the client's share is.
 */
int httplimit_check(const struct httplimit *t, const struct httplimit_key *key);
/*
 * Count one connection of key in / out (whether or not it was checked:
 * the counts are the truth).  add: 0, or -ENOSPC when the table is full
 * (more than max_total at once; the connection is not counted).  del of a
 * key with no connection is a no-op.
 */
int httplimit_add(struct httplimit *t, const struct httplimit_key *key);
void httplimit_del(struct httplimit *t, const struct httplimit_key *key);

/* Open connections: in all, of one kind, of one client. */
unsigned httplimit_total(const struct httplimit *t);
unsigned httplimit_kind(const struct httplimit *t, enum http_kind k);
unsigned httplimit_client(const struct httplimit *t, const struct httplimit_key *key);

#endif
