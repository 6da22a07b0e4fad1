/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "util.h"

/*
 * Kubernetes' ParseIPSloppy accepts IPv4 octets with leading zeros and reads
 * them as decimal (not octal, unlike inet_aton).  inet_pton rejects them, so
 * normalise first.
 */
static int parse_ipv4_sloppy(const char *s, struct in_addr *ret)
{
	unsigned long oct[4];
	const char *p = s;
	int i;

	for (i = 0; i < 4; i++) {
		unsigned long v = 0;
		int digits = 0;

		while (*p >= '0' && *p <= '9') {
			v = v * 10 + (unsigned long)(*p - '0');
			if (++digits > 3 || v > 255)
				return -EINVAL;
			p++;
		}
		if (digits == 0)
			return -EINVAL;
		oct[i] = v;
		if (i < 3) {
			if (*p != '.')
				return -EINVAL;
			p++;
		}
	}
	if (*p != '\0')
		return -EINVAL;
	ret->s_addr = htonl((uint32_t)(oct[0] << 24 | oct[1] << 16 | oct[2] << 8 | oct[3]));
	return 0;
}

int ipaddr_parse(const char *s, struct ipaddr *ret)
{
	struct ipaddr a = { 0 };

	if (!s || !*s || strlen(s) >= INET6_ADDRSTRLEN)
		return -EINVAL;
	if (strchr(s, ':')) {
		if (inet_pton(AF_INET6, s, &a.u.v6) != 1)
			return -EINVAL;
		a.family = AF_INET6;
	} else {
		if (parse_ipv4_sloppy(s, &a.u.v4) < 0)
			return -EINVAL;
		a.family = AF_INET;
	}
	*ret = a;
	return 0;
}

static void ipnet_mask(struct ipnet *n)
{
	unsigned bytes = n->addr.family == AF_INET ? 4 : 16;
	unsigned i;

	for (i = 0; i < bytes; i++) {
		unsigned bit = i * 8;

		if (bit >= n->plen)
			n->addr.u.b[i] = 0;
		else if (n->plen - bit < 8)
			n->addr.u.b[i] &= (uint8_t)(0xff << (8 - (n->plen - bit)));
	}
}

int ipnet_parse(const char *s, struct ipnet *ret)
{
	char buf[INET6_ADDRSTRLEN + 8];
	struct ipnet n = { 0 };
	const char *start = s, *end;
	char *slash;
	size_t len;
	int r;

	if (!s)
		return -EINVAL;
	while (isspace((unsigned char)*start))
		start++;
	end = start + strlen(start);
	while (end > start && isspace((unsigned char)end[-1]))
		end--;
	len = (size_t)(end - start);
	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, start, len);
	buf[len] = '\0';

	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	r = ipaddr_parse(buf, &n.addr);
	if (r < 0)
		return r;
	if (slash) {
		const char *p = slash + 1;
		unsigned long v = 0;
		int digits = 0;

		while (*p >= '0' && *p <= '9' && digits < 4) {
			v = v * 10 + (unsigned long)(*p - '0');
			p++;
			digits++;
		}
		if (digits == 0 || *p != '\0')
			return -EINVAL;
		if (v > (n.addr.family == AF_INET ? 32u : 128u))
			return -EINVAL;
		n.plen = (uint8_t)v;
	} else {
		n.plen = n.addr.family == AF_INET ? 32 : 128;
	}
	ipnet_mask(&n);
	*ret = n;
	return 0;
}

const char *ipaddr_fmt(const struct ipaddr *a, char *buf, size_t len)
{
	if (!a->family || !inet_ntop(a->family, &a->u, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

int ipaddr_cmp(const struct ipaddr *a, const struct ipaddr *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->u.b, b->u.b, a->family == AF_INET ? 4 : 16);
}

bool ipnet_contains(const struct ipnet *n, const struct ipaddr *a)
{
	unsigned full, rem;

	if (n->addr.family != a->family)
		return false;
	full = n->plen / 8;
	rem = n->plen % 8;
	if (memcmp(n->addr.u.b, a->u.b, full) != 0)
		return false;
	if (rem) {
		uint8_t m = (uint8_t)(0xff << (8 - rem));

		if ((n->addr.u.b[full] & m) != (a->u.b[full] & m))
			return false;
	}
	return true;
}

const char *proto_name(uint8_t proto)
{
	switch (proto) {
	case PROTO_TCP:
		return "tcp";
	case PROTO_UDP:
		return "udp";
	case PROTO_SCTP:
		return "sctp";
	default:
		return "?";
	}
}

uint8_t proto_from_k8s(const char *s)
{
	if (!s)
		return 0;
	if (streq(s, "TCP"))
		return PROTO_TCP;
	if (streq(s, "UDP"))
		return PROTO_UDP;
	if (streq(s, "SCTP"))
		return PROTO_SCTP;
	return 0;
}

/* --- services --- */

struct service *service_ref(struct service *s)
{
	if (s)
		s->refcnt++;
	return s;
}

static void service_free(struct service *s)
{
	size_t i;

	free(s->ns);
	free(s->name);
	free(s->proxy_name);
	free(s->cluster_ips);
	free(s->external_ips);
	free(s->lb_ingress);
	free(s->lb_source_ranges);
	for (i = 0; i < s->n_ports; i++) {
		free(s->ports[i].name);
		free(s->ports[i].target_port);
	}
	free(s->ports);
	free(s);
}

void service_unref(struct service *s)
{
	if (!s)
		return;
	if (--s->refcnt == 0)
		service_free(s);
}

static bool addrs_equal(const struct ipaddr *a, const struct ipaddr *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ipaddr_cmp(&a[i], &b[i]) != 0)
			return false;
	return true;
}

static bool nets_equal(const struct ipnet *a, const struct ipnet *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i].plen != b[i].plen || ipaddr_cmp(&a[i].addr, &b[i].addr) != 0)
			return false;
	return true;
}

bool service_equal(const struct service *a, const struct service *b)
{
	size_t i;

	if (a == b)
		return true;
	if (a->origin != b->origin || a->type != b->type || a->headless != b->headless ||
	    a->affinity_client_ip != b->affinity_client_ip ||
	    a->affinity_timeout != b->affinity_timeout || a->ext_policy != b->ext_policy ||
	    a->int_policy != b->int_policy ||
	    a->health_check_node_port != b->health_check_node_port ||
	    a->n_cluster_ips != b->n_cluster_ips || a->n_external_ips != b->n_external_ips ||
	    a->n_lb_ingress != b->n_lb_ingress ||
	    a->n_lb_source_ranges != b->n_lb_source_ranges || a->n_ports != b->n_ports)
		return false;
	if (!streq_null(a->ns, b->ns) || !streq_null(a->name, b->name) ||
	    !streq_null(a->proxy_name, b->proxy_name))
		return false;
	if (!addrs_equal(a->cluster_ips, b->cluster_ips, a->n_cluster_ips) ||
	    !addrs_equal(a->external_ips, b->external_ips, a->n_external_ips) ||
	    !nets_equal(a->lb_source_ranges, b->lb_source_ranges, a->n_lb_source_ranges))
		return false;
	for (i = 0; i < a->n_lb_ingress; i++)
		if (a->lb_ingress[i].ipmode_proxy != b->lb_ingress[i].ipmode_proxy ||
		    ipaddr_cmp(&a->lb_ingress[i].ip, &b->lb_ingress[i].ip) != 0)
			return false;
	for (i = 0; i < a->n_ports; i++) {
		const struct service_port_spec *pa = &a->ports[i], *pb = &b->ports[i];

		if (pa->protocol != pb->protocol || pa->port != pb->port ||
		    pa->node_port != pb->node_port || !streq_null(pa->name, pb->name) ||
		    !streq_null(pa->target_port, pb->target_port))
			return false;
	}
	return true;
}

/* --- endpoint slices --- */

struct epslice *epslice_ref(struct epslice *e)
{
	if (e)
		e->refcnt++;
	return e;
}

/* A vector of n strings and the strings. */
static void names_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void epslice_endpoint_done(struct epslice_endpoint *ep)
{
	free(ep->node_name);
	free(ep->zone);
	names_free(ep->hint_zones, ep->n_hint_zones);
	names_free(ep->hint_nodes, ep->n_hint_nodes);
	*ep = (struct epslice_endpoint){ 0 };
}

void endpoint_done(struct endpoint *ep)
{
	free(ep->node_name);
	free(ep->zone);
	names_free(ep->hint_zones, ep->n_hint_zones);
	names_free(ep->hint_nodes, ep->n_hint_nodes);
	*ep = (struct endpoint){ 0 };
}

static void epslice_free(struct epslice *e)
{
	size_t i;

	free(e->ns);
	free(e->name);
	free(e->service_name);
	for (i = 0; i < e->n_ports; i++)
		free(e->ports[i].name);
	free(e->ports);
	for (i = 0; i < e->n_endpoints; i++)
		epslice_endpoint_done(&e->endpoints[i]);
	free(e->endpoints);
	free(e);
}

void epslice_unref(struct epslice *e)
{
	if (!e)
		return;
	if (--e->refcnt == 0)
		epslice_free(e);
}

/* Two lists of n hint names (zones or nodes), in order. */
static bool names_equal(char *const *a, char *const *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!streq_null(a[i], b[i]))
			return false;
	return true;
}

bool epslice_equal(const struct epslice *a, const struct epslice *b)
{
	size_t i;

	if (a == b)
		return true;
	if (a->origin != b->origin || a->family != b->family || a->n_ports != b->n_ports ||
	    a->n_endpoints != b->n_endpoints || !streq_null(a->ns, b->ns) ||
	    !streq_null(a->name, b->name) || !streq_null(a->service_name, b->service_name))
		return false;
	for (i = 0; i < a->n_ports; i++)
		if (a->ports[i].protocol != b->ports[i].protocol ||
		    a->ports[i].port != b->ports[i].port ||
		    !streq_null(a->ports[i].name, b->ports[i].name))
			return false;
	for (i = 0; i < a->n_endpoints; i++) {
		const struct epslice_endpoint *ea = &a->endpoints[i], *eb = &b->endpoints[i];

		if (ipaddr_cmp(&ea->addr, &eb->addr) != 0 || ea->ready != eb->ready ||
		    ea->serving != eb->serving || ea->terminating != eb->terminating ||
		    ea->has_hints != eb->has_hints || ea->n_hint_zones != eb->n_hint_zones ||
		    ea->n_hint_nodes != eb->n_hint_nodes ||
		    !streq_null(ea->node_name, eb->node_name) || !streq_null(ea->zone, eb->zone) ||
		    !names_equal(ea->hint_zones, eb->hint_zones, ea->n_hint_zones) ||
		    !names_equal(ea->hint_nodes, eb->hint_nodes, ea->n_hint_nodes))
			return false;
	}
	return true;
}

/* --- desired state --- */

void svc_port_done(struct svc_port *p)
{
	size_t i;

	free(p->ns);
	free(p->name);
	free(p->port_name);
	free(p->key);
	free(p->target_port);
	free(p->cluster_ips);
	free(p->external_ips);
	free(p->lb_ips);
	free(p->lb_source_ranges);
	for (i = 0; i < p->n_endpoints; i++)
		endpoint_done(&p->endpoints[i]);
	free(p->endpoints);
	memset(p, 0, sizeof(*p));
}

void desired_free(struct desired *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n_ports; i++)
		svc_port_done(&d->ports[i]);
	free(d->ports);
	d->ports = NULL;
	d->n_ports = 0;
}
