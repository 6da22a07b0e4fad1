/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/resolve.h"
#include "util.h"

/* A slice with its position in the snapshot (the order endpoints are first seen in). */
struct slice_ref {
	const struct epslice *e;
	size_t idx;
};

struct cand {
	const struct epslice_endpoint *ep;
	uint16_t port;
	size_t seq;
};

struct rctx {
	const char *hostname;
	int family;
	struct diag_list *diags;
	struct slice_ref *by_svc; /* sorted by ns, service_name, snapshot order */
	size_t n_by_svc;
	struct cand *cands;
	size_t n_cands, cap_cands;
};

static const char *nz(const char *s)
{
	return s ? s : "";
}

static const char *proto_upper(uint8_t p)
{
	switch (p) {
	case PROTO_TCP:
		return "TCP";
	case PROTO_UDP:
		return "UDP";
	case PROTO_SCTP:
		return "SCTP";
	}
	return "?";
}

static const char *family_name(int family)
{
	return family == AF_INET6 ? "IPv6" : "IPv4";
}

/* Whether the run keeps addresses of family f (family 0: both). */
static bool fam_ok(const struct rctx *c, int f)
{
	return !c->family || f == c->family;
}

static int slice_ref_cmp(const void *a, const void *b)
{
	const struct slice_ref *x = a, *y = b;
	int r = strcmp(nz(x->e->ns), nz(y->e->ns));

	if (!r)
		r = strcmp(nz(x->e->service_name), nz(y->e->service_name));
	if (!r)
		r = x->idx < y->idx ? -1 : x->idx > y->idx;
	return r;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	int r = ipaddr_cmp(&x->ep->addr, &y->ep->addr);

	if (!r)
		r = x->port < y->port ? -1 : x->port > y->port;
	if (!r)
		r = x->seq < y->seq ? -1 : x->seq > y->seq;
	return r;
}

static int svc_port_cmp(const void *a, const void *b)
{
	const struct svc_port *x = a, *y = b;
	int r = strcmp(x->key, y->key);

	if (!r)
		r = x->protocol < y->protocol ? -1 : x->protocol > y->protocol;
	return r;
}

static void note_other_family(struct rctx *c, const char *object, const char *field,
			      const char *what, const char *first, size_t count)
{
	char more[48] = "";

	if (count > 1)
		snprintf(more, sizeof(more), " (and %zu more)", count - 1);
	/* Notes are advisory: losing one to ENOMEM must not fail the build. */
	(void)diag_add(c->diags, DIAG_NOTE, NULL, object, field, "%s %s %s ignored in an %s run%s",
		       family_name(c->family == AF_INET ? AF_INET6 : AF_INET), what, first,
		       family_name(c->family), more);
}

/* One note per slice naming its first endpoint of the other family. */
static void note_slice_families(struct rctx *c, const struct merge_snapshot *snap)
{
	size_t i, j;

	for (i = 0; i < snap->n_slices; i++) {
		const struct epslice *e = snap->slices[i];
		char buf[INET6_ADDRSTRLEN], obj[1024];
		const struct ipaddr *first = NULL;
		size_t count = 0;

		for (j = 0; j < e->n_endpoints; j++) {
			if (!e->endpoints[j].addr.family || fam_ok(c, e->endpoints[j].addr.family))
				continue;
			if (!count++)
				first = &e->endpoints[j].addr;
		}
		if (!count)
			continue;
		snprintf(obj, sizeof(obj), "%s%s/%s",
			 e->origin == ORIGIN_K8S ? "EndpointSlice " :
			 e->origin == ORIGIN_K8S_EP ? "Endpoints " : "",
			 nz(e->ns), nz(e->name));
		note_other_family(c, obj, "endpoints", "address", ipaddr_fmt(first, buf, sizeof(buf)),
				  count);
	}
}

/* Family-filtered copies of a service's addresses, shared by all its ports. */
struct svc_addrs {
	const struct ipaddr *cluster_ip; /* first of the run's family, or NULL */
	const struct ipaddr *cluster_ip2;/* both families: the first of the other one */
	struct ipaddr *external_ips;
	size_t n_external_ips;
	struct ipaddr *lb_ips;
	size_t n_lb_ips;
	struct ipnet *ranges;
	size_t n_ranges;
};

static void svc_addrs_done(struct svc_addrs *a)
{
	free(a->external_ips);
	free(a->lb_ips);
	free(a->ranges);
}

static int svc_addrs_build(struct rctx *c, const struct service *s, struct svc_addrs *ret)
{
	struct svc_addrs a = { 0 };
	const char *field = NULL, *what = "address";
	char first[INET6_ADDRSTRLEN + 4] = "", obj[1024];
	size_t other = 0, i;

#define OTHER(fld, kind, fmt_expr)                                                             \
	do {                                                                                   \
		if (!other++) {                                                                \
			field = (fld);                                                         \
			what = (kind);                                                         \
			fmt_expr;                                                              \
		}                                                                              \
	} while (0)

	for (i = 0; i < s->n_cluster_ips; i++) {
		if (fam_ok(c, s->cluster_ips[i].family)) {
			/* Both families: the service's first cluster IP of each. */
			if (!a.cluster_ip)
				a.cluster_ip = &s->cluster_ips[i];
			else if (!c->family && !a.cluster_ip2 &&
				 s->cluster_ips[i].family != a.cluster_ip->family)
				a.cluster_ip2 = &s->cluster_ips[i];
		} else {
			OTHER("spec.clusterIPs", "address",
			      ipaddr_fmt(&s->cluster_ips[i], first, sizeof(first)));
		}
	}
	a.external_ips = reallocarray_z(NULL, s->n_external_ips, sizeof(*a.external_ips));
	a.lb_ips = reallocarray_z(NULL, s->n_lb_ingress, sizeof(*a.lb_ips));
	a.ranges = reallocarray_z(NULL, s->n_lb_source_ranges, sizeof(*a.ranges));
	if (!a.external_ips || !a.lb_ips || !a.ranges) {
		svc_addrs_done(&a);
		return -ENOMEM;
	}
	for (i = 0; i < s->n_external_ips; i++) {
		if (fam_ok(c, s->external_ips[i].family))
			a.external_ips[a.n_external_ips++] = s->external_ips[i];
		else
			OTHER("spec.externalIPs", "address",
			      ipaddr_fmt(&s->external_ips[i], first, sizeof(first)));
	}
	for (i = 0; i < s->n_lb_ingress; i++) {
		const struct lb_ingress *in = &s->lb_ingress[i];

		if (!fam_ok(c, in->ip.family))
			OTHER("status.loadBalancer.ingress", "address",
			      ipaddr_fmt(&in->ip, first, sizeof(first)));
		else if (!in->ipmode_proxy)
			a.lb_ips[a.n_lb_ips++] = in->ip;
	}
	for (i = 0; i < s->n_lb_source_ranges; i++) {
		const struct ipnet *n = &s->lb_source_ranges[i];

		if (fam_ok(c, n->addr.family)) {
			a.ranges[a.n_ranges++] = *n;
		} else {
			char buf[INET6_ADDRSTRLEN];

			OTHER("spec.loadBalancerSourceRanges", "range",
			      snprintf(first, sizeof(first), "%s/%u",
				       ipaddr_fmt(&n->addr, buf, sizeof(buf)), n->plen));
		}
	}
#undef OTHER
	if (other) {
		snprintf(obj, sizeof(obj), "%s/%s", nz(s->ns), nz(s->name));
		note_other_family(c, obj, field, what, first, other);
	}
	*ret = a;
	return 0;
}

/* kube-proxy's order: the informer's label filter, then ShouldSkipService, then the family. */
static const char *skip_reason(const struct rctx *c, const struct service *s,
			       const struct svc_addrs *a)
{
	if (s->proxy_name)
		return "has label service.kubernetes.io/service-proxy-name";
	if (s->type == SVC_EXTERNAL_NAME)
		return "type ExternalName";
	if (s->headless)
		return "headless";
	/* The 2014 format has no cluster IPs: its services are node-port style only. */
	if (s->origin == ORIGIN_LEGACY)
		return NULL;
	if (!s->n_cluster_ips)
		return "no cluster IP";
	if (!a->cluster_ip)
		return c->family == AF_INET6 ? "no IPv6 cluster IP" : "no IPv4 cluster IP";
	return NULL;
}

static bool externally_accessible(const struct service *s)
{
	return s->type == SVC_NODE_PORT || s->type == SVC_LOAD_BALANCER ||
	       (s->type == SVC_CLUSTER_IP && s->n_external_ips > 0);
}

static int dup_str(const char *s, char **ret)
{
	*ret = strdup(nz(s));
	return *ret ? 0 : -ENOMEM;
}

/* Copies of n hint names into *ret (NULL when n is 0); 0 or -ENOMEM. */
static int dup_names(char *const *src, size_t n, char ***ret, size_t *ret_n)
{
	char **v;
	size_t i;

	*ret = NULL;
	*ret_n = 0;
	if (!n)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (dup_str(src[i], &v[i]) < 0) {
			while (i--)
				free(v[i]);
			free(v);
			return -ENOMEM;
		}
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static int copy_endpoint(const struct rctx *c, const struct cand *k, struct endpoint *ret)
{
	const struct epslice_endpoint *src = k->ep;
	_cleanup_(endpoint_done) struct endpoint e = {
		.addr = src->addr,
		.port = k->port,
		.ready = src->ready,
		.serving = src->serving,
		.terminating = src->terminating,
		.has_hints = src->has_hints,
	};

	e.is_local = c->hostname && *c->hostname && src->node_name &&
		     streq(src->node_name, c->hostname);
	if (src->node_name && !(e.node_name = strdup(src->node_name)))
		return -ENOMEM;
	if (src->zone && !(e.zone = strdup(src->zone)))
		return -ENOMEM;
	if (dup_names(src->hint_zones, src->n_hint_zones, &e.hint_zones, &e.n_hint_zones) < 0 ||
	    dup_names(src->hint_nodes, src->n_hint_nodes, &e.hint_nodes, &e.n_hint_nodes) < 0)
		return -ENOMEM;
	*ret = e;
	e = (struct endpoint){ 0 };
	return 0;
}

/* The slices of a service: [*ret_lo, *ret_hi) in c->by_svc. */
static void slice_range(const struct rctx *c, const char *ns, const char *name, size_t *ret_lo,
			size_t *ret_hi)
{
	size_t lo = 0, hi = c->n_by_svc, i;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct epslice *e = c->by_svc[mid].e;
		int r = strcmp(nz(e->ns), ns);

		if (!r)
			r = strcmp(nz(e->service_name), name);
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < c->n_by_svc; i++) {
		const struct epslice *e = c->by_svc[i].e;

		if (!streq(nz(e->ns), ns) || !streq(nz(e->service_name), name))
			break;
	}
	*ret_lo = lo;
	*ret_hi = i;
}

/*
 * kube-proxy's endpointSliceCache dedupes by "ip:port": a later duplicate
 * replaces the kept one only when it is not terminating (a running pod wins
 * over a terminating pod that had its IP).  Among equals kube-proxy's pick
 * depends on map order; here it is the first in snapshot (slice key) order.
 */
static int gather_endpoints(struct rctx *c, const struct service_port_spec *spec,
			    enum item_origin want, size_t lo, size_t hi, struct svc_port *sp)
{
	size_t i, j, k, n = 0, seq = 0;

	c->n_cands = 0;
	for (i = lo; i < hi; i++) {
		const struct epslice *e = c->by_svc[i].e;

		if (e->origin != want)
			continue;
		for (j = 0; j < e->n_ports; j++) {
			const struct epslice_port *p = &e->ports[j];

			if (!p->port || p->protocol != spec->protocol ||
			    !streq(nz(p->name), nz(spec->name)))
				continue;
			for (k = 0; k < e->n_endpoints; k++) {
				if (!fam_ok(c, e->endpoints[k].addr.family))
					continue;
				if (GROW(c->cands, c->cap_cands, c->n_cands + 1) < 0)
					return -ENOMEM;
				c->cands[c->n_cands++] =
					(struct cand){ &e->endpoints[k], p->port, seq++ };
			}
		}
	}
	if (!c->n_cands)
		return 0;
	qsort_safe(c->cands, c->n_cands, sizeof(*c->cands), cand_cmp);
	sp->endpoints = calloc(c->n_cands, sizeof(*sp->endpoints));
	if (!sp->endpoints)
		return -ENOMEM;
	for (i = 0; i < c->n_cands; i = j) {
		const struct cand *pick = &c->cands[i];
		int r;

		for (j = i; j < c->n_cands && ipaddr_cmp(&c->cands[j].ep->addr, &pick->ep->addr) == 0 &&
			    c->cands[j].port == pick->port;
		     j++)
			if (pick->ep->terminating && !c->cands[j].ep->terminating)
				pick = &c->cands[j];
		r = copy_endpoint(c, pick, &sp->endpoints[n]);
		if (r < 0)
			return r;
		sp->n_endpoints = ++n;
	}
	return 0;
}

static int make_port(struct rctx *c, const struct service *s, const struct service_port_spec *spec,
		     const struct svc_addrs *a, const char *reason, struct svc_port *sp)
{
	size_t lo, hi, i;
	enum item_origin want;
	int r;

	sp->protocol = spec->protocol;
	sp->type = s->type;
	sp->origin = s->origin;
	sp->headless = s->headless;
	sp->skipped = reason != NULL;
	sp->skip_reason = reason;
	sp->port = spec->port;
	sp->node_port = spec->node_port;
	sp->affinity_client_ip = s->affinity_client_ip;
	sp->affinity_timeout = s->affinity_client_ip ? s->affinity_timeout : 0;
	sp->ext_policy = externally_accessible(s) && s->ext_policy == POLICY_LOCAL ?
				 POLICY_LOCAL : POLICY_CLUSTER;
	sp->int_policy = s->int_policy;
	if (s->type == SVC_LOAD_BALANCER && sp->ext_policy == POLICY_LOCAL)
		sp->health_check_node_port = s->health_check_node_port;

	if (dup_str(s->ns, &sp->ns) < 0 || dup_str(s->name, &sp->name) < 0 ||
	    dup_str(spec->name, &sp->port_name) < 0)
		return -ENOMEM;
	if (*sp->port_name)
		r = asprintf(&sp->key, "%s/%s:%s", sp->ns, sp->name, sp->port_name);
	else
		r = asprintf(&sp->key, "%s/%s", sp->ns, sp->name);
	if (r < 0) {
		sp->key = NULL;
		return -ENOMEM;
	}
	if (spec->target_port && !(sp->target_port = strdup(spec->target_port)))
		return -ENOMEM;

	if (a->cluster_ip) {
		sp->cluster_ips = calloc(2, sizeof(*sp->cluster_ips));
		if (!sp->cluster_ips)
			return -ENOMEM;
		sp->cluster_ips[0] = *a->cluster_ip;
		sp->n_cluster_ips = 1;
		if (a->cluster_ip2)
			sp->cluster_ips[sp->n_cluster_ips++] = *a->cluster_ip2;
	}
#define COPY(dst, ndst, src, nsrc)                                                             \
	do {                                                                                   \
		if (nsrc) {                                                                    \
			dst = reallocarray_z(NULL, nsrc, sizeof(*dst));                        \
			if (!dst)                                                              \
				return -ENOMEM;                                                \
			memcpy(dst, src, (nsrc) * sizeof(*dst));                               \
			ndst = nsrc;                                                           \
		}                                                                              \
	} while (0)
	COPY(sp->external_ips, sp->n_external_ips, a->external_ips, a->n_external_ips);
	COPY(sp->lb_ips, sp->n_lb_ips, a->lb_ips, a->n_lb_ips);
	COPY(sp->lb_source_ranges, sp->n_lb_source_ranges, a->ranges, a->n_ranges);
#undef COPY

	slice_range(c, nz(s->ns), nz(s->name), &lo, &hi);
	if (s->origin == ORIGIN_LEGACY) {
		want = ORIGIN_LEGACY;
	} else {
		want = ORIGIN_K8S_EP;
		for (i = lo; i < hi; i++)
			if (c->by_svc[i].e->origin == ORIGIN_K8S)
				want = ORIGIN_K8S;
	}
	return gather_endpoints(c, spec, want, lo, hi, sp);
}

/*
 * Two spec.ports entries with one name and protocol (which the API rejects)
 * collide in kube-proxy's ServicePortMap, where the later one wins.
 */
static bool later_duplicate(const struct service *s, size_t j)
{
	size_t k;

	for (k = j + 1; k < s->n_ports; k++)
		if (s->ports[k].protocol == s->ports[j].protocol &&
		    streq(nz(s->ports[k].name), nz(s->ports[j].name)))
			return true;
	return false;
}

/* What a resolve context owns: its slice index and candidates. */
static void rctx_done(struct rctx *c)
{
	free(c->by_svc);
	free(c->cands);
}

int resolve_build(const struct merge_snapshot *snap, const struct resolve_opts *opts,
		  struct desired *ret, struct diag_list *diags)
{
	_cleanup_(rctx_done) struct rctx c = {
		.hostname = opts ? opts->hostname : NULL,
		.family = opts ? opts->family : 0,
		.diags = diags,
	};
	_cleanup_(desired_free) struct desired d = { 0 };
	size_t total = 0, i, j;
	int r;

	if (!snap || !ret)
		return -EINVAL;
	for (i = 0; i < snap->n_services; i++)
		total += snap->services[i]->n_ports;
	if (snap->n_slices) {
		c.by_svc = calloc(snap->n_slices, sizeof(*c.by_svc));
		if (!c.by_svc)
			return -ENOMEM;
		for (i = 0; i < snap->n_slices; i++) {
			const struct epslice *e = snap->slices[i];

			/* kube-proxy ignores slices without the service-name label. */
			if (e->service_name && *e->service_name)
				c.by_svc[c.n_by_svc++] = (struct slice_ref){ e, i };
		}
		qsort_safe(c.by_svc, c.n_by_svc, sizeof(*c.by_svc), slice_ref_cmp);
	}
	if (total) {
		d.ports = calloc(total, sizeof(*d.ports));
		if (!d.ports)
			return -ENOMEM;
	}
	note_slice_families(&c, snap);

	for (i = 0; i < snap->n_services; i++) {
		const struct service *s = snap->services[i];
		struct svc_addrs a;
		const char *reason;

		r = svc_addrs_build(&c, s, &a);
		if (r < 0)
			return r;
		reason = skip_reason(&c, s, &a);
		for (j = 0; j < s->n_ports; j++) {
			if (later_duplicate(s, j)) {
				char obj[1024], fld[48];

				snprintf(obj, sizeof(obj), "%s/%s", nz(s->ns), nz(s->name));
				snprintf(fld, sizeof(fld), "spec.ports[%zu].name", j);
				(void)diag_add(diags, DIAG_WARNING, NULL, obj, fld,
					       "port name '%s' used twice for %s, the later entry is used",
					       nz(s->ports[j].name), proto_upper(s->ports[j].protocol));
				continue;
			}
			r = make_port(&c, s, &s->ports[j], &a, reason, &d.ports[d.n_ports++]);
			if (r < 0)
				break;
		}
		svc_addrs_done(&a);
		if (r < 0)
			return r;
	}

	qsort_safe(d.ports, d.n_ports, sizeof(*d.ports), svc_port_cmp);
	*ret = d;
	d = (struct desired){ 0 };
	return 0;
}

/* --- dump --- */

static const char *type_name(enum svc_type t)
{
	switch (t) {
	case SVC_CLUSTER_IP:
		return "ClusterIP";
	case SVC_NODE_PORT:
		return "NodePort";
	case SVC_LOAD_BALANCER:
		return "LoadBalancer";
	case SVC_EXTERNAL_NAME:
		return "ExternalName";
	}
	return "?";
}

static void put_addr_port(const struct ipaddr *a, uint16_t port, FILE *f)
{
	char buf[INET6_ADDRSTRLEN];

	ipaddr_fmt(a, buf, sizeof(buf));
	if (a->family == AF_INET6)
		fprintf(f, "[%s]:%u", buf, port);
	else
		fprintf(f, "%s:%u", buf, port);
}

static void put_addrs(const char *label, const struct ipaddr *a, size_t n, FILE *f)
{
	char buf[INET6_ADDRSTRLEN];
	size_t i;

	if (!n)
		return;
	fprintf(f, " %s=", label);
	for (i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? "," : "", ipaddr_fmt(&a[i], buf, sizeof(buf)));
}

static void put_endpoint(const struct endpoint *e, FILE *f)
{
	size_t i;

	fputc(' ', f);
	put_addr_port(&e->addr, e->port, f);
	if (e->ready)
		fputs(" (ready", f);
	else if (e->terminating)
		fputs(e->serving ? " (terminating,serving" : " (terminating", f);
	else
		fputs(e->serving ? " (serving" : " (not-ready", f);
	if (e->node_name)
		fprintf(f, ",%s", e->node_name);
	if (e->zone)
		fprintf(f, ",zone=%s", e->zone);
	if (e->n_hint_zones) {
		fputs(",hints=", f);
		for (i = 0; i < e->n_hint_zones; i++)
			fprintf(f, "%s%s", i ? "+" : "", e->hint_zones[i]);
	}
	if (e->n_hint_nodes) {
		fputs(",nodehints=", f);
		for (i = 0; i < e->n_hint_nodes; i++)
			fprintf(f, "%s%s", i ? "+" : "", e->hint_nodes[i]);
	}
	if (e->is_local)
		fputs(",local", f);
	fputc(')', f);
}

void resolve_dump(const struct desired *d, FILE *f)
{
	char buf[INET6_ADDRSTRLEN];
	size_t i, j;

	for (i = 0; i < d->n_ports; i++) {
		const struct svc_port *p = &d->ports[i];

		fprintf(f, "%s %s %s", p->key, proto_upper(p->protocol), type_name(p->type));
		if (p->skipped) {
			fprintf(f, " skipped: %s\n", p->skip_reason ? p->skip_reason : "?");
			continue;
		}
		fputc(' ', f);
		if (p->n_cluster_ips) {
			/* A dual-stack port: "10.0.0.1:80,[fd00::1]:80". */
			for (j = 0; j < p->n_cluster_ips; j++) {
				if (j)
					fputc(',', f);
				put_addr_port(&p->cluster_ips[j], p->port, f);
			}
		} else
			fprintf(f, "port=%u", p->port);
		if (p->node_port)
			fprintf(f, " nodePort=%u", p->node_port);
		put_addrs("externalIPs", p->external_ips, p->n_external_ips, f);
		put_addrs("lbIPs", p->lb_ips, p->n_lb_ips, f);
		if (p->n_lb_source_ranges) {
			fputs(" sourceRanges=", f);
			for (j = 0; j < p->n_lb_source_ranges; j++)
				fprintf(f, "%s%s/%u", j ? "," : "",
					ipaddr_fmt(&p->lb_source_ranges[j].addr, buf, sizeof(buf)),
					p->lb_source_ranges[j].plen);
		}
		if (p->affinity_client_ip)
			fprintf(f, " affinity=ClientIP/%us", p->affinity_timeout);
		if (p->health_check_node_port)
			fprintf(f, " healthCheckNodePort=%u", p->health_check_node_port);
		fprintf(f, " eTP=%s iTP=%s ->", p->ext_policy == POLICY_LOCAL ? "Local" : "Cluster",
			p->int_policy == POLICY_LOCAL ? "Local" : "Cluster");
		if (!p->n_endpoints)
			fputs(" (none)", f);
		for (j = 0; j < p->n_endpoints; j++)
			put_endpoint(&p->endpoints[j], f);
		fputc('\n', f);
	}
}
