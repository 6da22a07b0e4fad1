/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netfilter/ct.h>
#include <netlink/netfilter/nfnl.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <stdlib.h>
#include <string.h>

#include "sys/conntrack.h"
#include "sys/nl.h"
#include "util.h"

struct frontend {
	struct ipaddr ip;  /* unused for node ports */
	uint16_t port;
	size_t ep_off;     /* into conntrack_index.eps */
	size_t n_eps;
};

struct conntrack_index {
	int family;
	struct frontend *ips;   /* sorted by ip, port */
	size_t n_ips, cap_ips;
	struct frontend *nports; /* sorted by port */
	size_t n_nports, cap_nports;
	struct ipaddr *eps;      /* per frontend group: sorted, deduplicated */
	size_t n_eps, cap_eps;
};

static int fe_ip_cmp(const void *a, const void *b)
{
	const struct frontend *x = a, *y = b;
	int c = ipaddr_cmp(&x->ip, &y->ip);

	if (c)
		return c;
	return (int)x->port - (int)y->port;
}

static int fe_port_cmp(const void *a, const void *b)
{
	const struct frontend *x = a, *y = b;

	return (int)x->port - (int)y->port;
}

static int ip_qcmp(const void *a, const void *b)
{
	return ipaddr_cmp(a, b);
}

static int add_fe(struct frontend **arr, size_t *n, size_t *cap, const struct ipaddr *ip,
		  uint16_t port, size_t off, size_t n_eps)
{
	int r = GROW(*arr, *cap, *n + 1);

	if (r < 0)
		return r;
	(*arr)[*n] = (struct frontend){ .port = port, .ep_off = off, .n_eps = n_eps };
	if (ip)
		(*arr)[*n].ip = *ip;
	(*n)++;
	return 0;
}

/* Whether the index covers family f (ix->family 0: both). */
static bool fam_ok(const struct conntrack_index *ix, int f)
{
	return f == ix->family || (!ix->family && (f == AF_INET || f == AF_INET6));
}

static int index_port(struct conntrack_index *ix, const struct svc_port *p)
{
	size_t off = ix->n_eps, n = 0, i;
	int r;

	for (i = 0; i < p->n_endpoints; i++) {
		const struct endpoint *e = &p->endpoints[i];

		if (!fam_ok(ix, e->addr.family) || !(e->serving || e->ready))
			continue;
		r = GROW(ix->eps, ix->cap_eps, ix->n_eps + 1);
		if (r < 0)
			return r;
		ix->eps[ix->n_eps++] = e->addr;
		n++;
	}
	if (n > 1) {
		size_t o = 1;

		qsort_safe(ix->eps + off, n, sizeof(*ix->eps), ip_qcmp);
		for (i = 1; i < n; i++)
			if (ipaddr_cmp(&ix->eps[off + o - 1], &ix->eps[off + i]) != 0)
				ix->eps[off + o++] = ix->eps[off + i];
		ix->n_eps = off + o;
		n = o;
	}

	const struct {
		const struct ipaddr *a;
		size_t n;
	} groups[] = {
		{ p->cluster_ips, p->n_cluster_ips },
		{ p->external_ips, p->n_external_ips },
		{ p->lb_ips, p->n_lb_ips },
	};
	size_t g;

	for (g = 0; g < ARRAY_SIZE(groups); g++) {
		for (i = 0; i < groups[g].n; i++) {
			if (!fam_ok(ix, groups[g].a[i].family))
				continue;
			r = add_fe(&ix->ips, &ix->n_ips, &ix->cap_ips, &groups[g].a[i], p->port, off, n);
			if (r < 0)
				return r;
		}
	}
	if (p->node_port)
		return add_fe(&ix->nports, &ix->n_nports, &ix->cap_nports, NULL, p->node_port, off, n);
	return 0;
}

int conntrack_index_build(const struct desired *d, int family, struct conntrack_index **ret)
{
	struct conntrack_index *ix;
	size_t i;
	int r;

	ix = calloc(1, sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	ix->family = family;
	for (i = 0; i < d->n_ports; i++) {
		const struct svc_port *p = &d->ports[i];

		if (p->protocol != PROTO_UDP || p->skipped)
			continue;
		r = index_port(ix, p);
		if (r < 0) {
			conntrack_index_free(ix);
			return r;
		}
	}
	/* Stable order: with duplicate keys bsearch may land on any of them;
	 * they come from one misconfiguration and either answer is fine. */
	if (ix->n_ips)
		qsort_safe(ix->ips, ix->n_ips, sizeof(*ix->ips), fe_ip_cmp);
	if (ix->n_nports)
		qsort_safe(ix->nports, ix->n_nports, sizeof(*ix->nports), fe_port_cmp);
	*ret = ix;
	return 0;
}

void conntrack_index_free(struct conntrack_index *ix)
{
	if (!ix)
		return;
	free(ix->ips);
	free(ix->nports);
	free(ix->eps);
	free(ix);
}

size_t conntrack_index_size(const struct conntrack_index *ix)
{
	return ix->n_ips + ix->n_nports;
}

static bool fe_stale(const struct conntrack_index *ix, const struct frontend *fe,
		     const struct ct_entry *e)
{
	if (fe->n_eps == 0)
		return ipaddr_cmp(&e->reply_src, &e->orig_dst) != 0;
	return !bsearch(&e->reply_src, ix->eps + fe->ep_off, fe->n_eps, sizeof(*ix->eps), ip_qcmp);
}

bool conntrack_entry_stale(const struct conntrack_index *ix, const struct ct_entry *e)
{
	struct frontend key = { .ip = e->orig_dst, .port = e->orig_dport };
	const struct frontend *fe;

	if (e->proto != PROTO_UDP || !fam_ok(ix, e->family))
		return false;
	if (e->orig_dst.family != e->family || e->reply_src.family != e->family)
		return false;
	fe = ix->n_ips ? bsearch(&key, ix->ips, ix->n_ips, sizeof(*ix->ips), fe_ip_cmp) : NULL;
	if (fe && fe_stale(ix, fe, e))
		return true;
	fe = ix->n_nports ? bsearch(&key, ix->nports, ix->n_nports, sizeof(*ix->nports), fe_port_cmp)
			  : NULL;
	return fe && fe_stale(ix, fe, e);
}

static bool to_ipaddr(struct nl_addr *a, int family, struct ipaddr *ret)
{
	size_t len;

	if (!a || nl_addr_get_family(a) != family)
		return false;
	len = nl_addr_get_len(a);
	if ((family == AF_INET && len != 4) || (family == AF_INET6 && len != 16))
		return false;
	memset(ret, 0, sizeof(*ret));
	ret->family = (uint8_t)family;
	memcpy(ret->u.b, nl_addr_get_binary_addr(a), len);
	return true;
}

struct scan {
	const struct conntrack_index *ix;
	struct nfnl_ct **stale;
	size_t n, cap;
	size_t scanned;
	int err;
};

static void scan_one(struct nl_object *obj, void *arg)
{
	struct scan *s = arg;
	struct nfnl_ct *ct = (struct nfnl_ct *)obj;
	struct ct_entry e = { 0 };

	s->scanned++;
	if (s->err)
		return;
	e.family = nfnl_ct_get_family(ct);
	e.proto = nfnl_ct_get_proto(ct);
	if (e.proto != PROTO_UDP || !fam_ok(s->ix, e.family))
		return;
	/* 0 = original direction, 1 = reply. */
	if (!to_ipaddr(nfnl_ct_get_dst(ct, 0), e.family, &e.orig_dst) ||
	    !to_ipaddr(nfnl_ct_get_src(ct, 1), e.family, &e.reply_src))
		return;
	e.orig_dport = nfnl_ct_get_dst_port(ct, 0);
	if (!conntrack_entry_stale(s->ix, &e))
		return;
	if (GROW(s->stale, s->cap, s->n + 1) < 0) {
		s->err = -ENOMEM;
		return;
	}
	nl_object_get(obj);
	s->stale[s->n++] = ct;
}

int conntrack_cleanup(const struct conntrack_index *ix, struct conntrack_result *res)
{
	struct conntrack_result out = { 0 };
	struct nl_cache *cache = NULL;
	struct scan s = { .ix = ix };
	struct nl_sock *sk;
	size_t i;
	int r;

	if (conntrack_index_size(ix) == 0) {
		if (res)
			*res = out;
		return 0;
	}
	sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	r = nlerr_to_errno(nfnl_connect(sk));
	if (r >= 0)
		r = nlerr_to_errno(nfnl_ct_alloc_cache(sk, &cache));
	if (r >= 0) {
		nl_cache_foreach(cache, scan_one, &s);
		r = s.err;
	}
	out.scanned = s.scanned;
	for (i = 0; i < s.n; i++) {
		if (r >= 0) {
			int d = nlerr_to_errno(nfnl_ct_del(sk, s.stale[i], 0));

			if (d >= 0) {
				out.deleted++;
				out.deleted6 += nfnl_ct_get_family(s.stale[i]) == AF_INET6;
			}
			else if (d != -ENOENT)
				out.failed++;
		}
		nfnl_ct_put(s.stale[i]);
	}
	free(s.stale);
	if (cache)
		nl_cache_free(cache);
	nl_socket_free(sk);
	if (r >= 0 && res)
		*res = out;
	return r < 0 ? r : 0;
}
