/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>

#include "sources/decode/decode-endpoints.h"
#include "sources/decode/decode-group.h"
#include "sources/decode/decode-item.h"
#include "sources/decode/decode-names.h"

static void ports_done(struct epslice_port *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(p[i].name);
	free(p);
}

/* subsets[].ports[] into a new sorted array. */
static int decode_subset_ports(struct dctx *c, const cJSON *subset, struct epslice_port **ret,
			       size_t *ret_n)
{
	struct epslice_port *p = NULL;
	const cJSON *arr, *j;
	size_t n, k = 0, i, l;
	uint32_t v;
	int r;

	r = dec_get_array(c, subset, "ports", DECODE_MAX_PORTS, &arr, &n);
	if (r < 0)
		return r;
	if (n) {
		p = calloc(n, sizeof(*p));
		if (!p)
			return -ENOMEM;
	}
	l = dec_path_key(c, "ports");
	cJSON_ArrayForEach(j, arr) {
		size_t l2 = dec_path_idx(c, k);
		char *name = NULL;

		r = dec_check_object(c, j);
		if (r == 0)
			r = dec_dup_str(c, j, "name", dec_is_port_name_or_empty, "port name",
					&name);
		if (r == 0 && !name) {
			name = strdup("");
			if (!name)
				r = -ENOMEM;
		}
		if (r == 0) {
			p[k].name = name;
			k++;
			r = dec_get_proto(c, j, "protocol", &p[k - 1].protocol);
		}
		if (r == 0 && !dec_get(j, "port"))
			r = dec_fail_at(c, "port", "missing");
		if (r == 0)
			r = dec_get_uint(c, j, "port", 1, 65535, "port", &v);
		if (r == 0)
			p[k - 1].port = (uint16_t)v;
		for (i = 0; r == 0 && i + 1 < k; i++) {
			if (streq(p[i].name, p[k - 1].name))
				r = dec_fail_at(c, "name", "duplicate port name \"%s\"", p[k - 1].name);
		}
		dec_path_pop(c, l2);
		if (r < 0)
			break;
	}
	dec_path_pop(c, l);
	if (r < 0) {
		ports_done(p, k);
		return r;
	}
	if (k > 1)
		qsort_safe(p, k, sizeof(*p), epgroup_port_cmp);
	*ret = p;
	*ret_n = k;
	return 0;
}

/* One Endpoints object while its subsets are decoded (for the dec_entry_fns). */
struct ep_ctx {
	struct epgroups *gs;
	const char *ns, *svc;
	size_t total;                     /* addresses so far, in every subset */
	const struct epslice_port *ports; /* the current subset's */
	size_t n_ports;
	bool ready;                       /* addresses (true) or notReadyAddresses */
};

/* subsets[].addresses[i] or notReadyAddresses[i] (a dec_entry_fn). */
static int decode_subset_addr(struct dctx *c, const cJSON *j, size_t i, void *ud)
{
	struct ep_ctx *x = ud;
	struct epslice_endpoint ep = { .ready = x->ready, .serving = x->ready };
	const cJSON *ip;
	struct epgroup *g;
	int r;

	r = dec_check_object(c, j);
	if (r == 0 && ++x->total > DECODE_MAX_ENDPOINTS)
		r = dec_fail(c, "more than %d addresses in the object", DECODE_MAX_ENDPOINTS);
	if (r == 0) {
		size_t l = dec_path_key(c, "ip");

		ip = dec_get(j, "ip");
		r = ip ? dec_check_ip(c, ip, &ep.addr) : dec_fail(c, "missing");
		dec_path_pop(c, l);
	}
	if (r == 0)
		r = dec_dup_str(c, j, "nodeName", dec_is_dns1123_subdomain, "node name",
				&ep.node_name);
	if (r == 0)
		r = epgroup_get(x->gs, ORIGIN_K8S_EP, x->ns, x->svc, x->ports, x->n_ports,
			      ep.addr.family, &g);
	if (r == 0)
		r = epgroup_add(g, &ep);
	epslice_endpoint_done(&ep);
	return r;
}

/* subsets[i] (a dec_entry_fn). */
static int decode_subset(struct dctx *c, const cJSON *subset, size_t i, void *ud)
{
	struct ep_ctx *x = ud;
	struct epslice_port *ports = NULL;
	size_t n_ports = 0;
	int r;

	r = dec_check_object(c, subset);
	if (r == 0)
		r = decode_subset_ports(c, subset, &ports, &n_ports);
	x->ports = ports;
	x->n_ports = n_ports;
	x->ready = true;
	if (r == 0)
		r = dec_each(c, subset, "addresses", DECODE_MAX_ENDPOINTS, NULL, 0,
			     decode_subset_addr, x);
	x->ready = false;
	if (r == 0)
		r = dec_each(c, subset, "notReadyAddresses", DECODE_MAX_ENDPOINTS, NULL, 0,
			     decode_subset_addr, x);
	ports_done(ports, n_ports);
	x->ports = NULL;
	x->n_ports = 0;
	return r;
}

int decode_endpoints(struct dctx *c, const cJSON *j, const char *key_ns,
		     const char *key_name, struct decoded *out)
{
	_cleanup_(epgroups_done) struct epgroups gs = { 0 };
	struct dec_meta m;
	struct ep_ctx x;
	int r;

	r = dec_get_meta(c, j, "Endpoints", key_ns, key_name, dec_is_dns1035_label, "service name",
			&m);
	if (r < 0)
		return r;
	x = (struct ep_ctx){ .gs = &gs, .ns = m.ns, .svc = m.name };
	r = dec_each(c, j, "subsets", DECODE_MAX_ENDPOINTS, NULL, 0, decode_subset, &x);
	if (r < 0)
		return r;
	return epgroups_emit(&gs, ORIGIN_K8S_EP, m.ns, m.name, out);
}
