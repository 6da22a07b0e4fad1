/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>

#include "core/progtime.h"
#include "sources/decode/decode-item.h"
#include "sources/decode/decode-names.h"
#include "sources/decode/decode-slice.h"

#define LABEL_SERVICE_NAME "kubernetes.io/service-name"

/* One entry of ports (a dec_entry_fn on the slice). */
static int decode_slice_port(struct dctx *c, const cJSON *j, size_t i, void *ud)
{
	struct epslice *e = ud;
	struct epslice_port *p = &e->ports[e->n_ports];
	const cJSON *port;
	uint32_t v;
	size_t k;
	int r;

	r = dec_check_object(c, j);
	if (r < 0)
		return r;
	port = dec_get(j, "port");
	if (!port) {
		/* A nil port means "all ports": nothing kube-proxy can program. */
		return dec_report(c, DIAG_NOTE, "no port number; ignored");
	}
	r = dec_get_uint(c, j, "port", 1, 65535, "port", &v);
	if (r < 0)
		return r;
	r = dec_get_proto(c, j, "protocol", &p->protocol);
	if (r < 0)
		return r;
	r = dec_dup_str(c, j, "name", dec_is_port_name_or_empty, "port name", &p->name);
	if (r < 0)
		return r;
	if (!p->name) {
		/* kube-proxy ignores a port with a nil name (endpointslicecache.go,
		 * endpointInfoByServicePort); an unnamed port is "name": "". */
		return dec_report(c, DIAG_NOTE, "no name (an unnamed port has \"name\": \"\"); "
				  "ignored, as kube-proxy ignores it");
	}
	p->port = (uint16_t)v;
	e->n_ports++;
	for (k = 0; k + 1 < e->n_ports; k++) {
		if (streq(e->ports[k].name, p->name))
			return dec_fail_at(c, "name", "duplicate port name \"%s\"", p->name);
	}
	return 0;
}

/* hints.forZones[i] (a dec_entry_fn on the endpoint). */
static int decode_hint_zone(struct dctx *c, const cJSON *z, size_t i, void *ud)
{
	struct epslice_endpoint *ep = ud;
	char *name = NULL;
	int r;

	r = dec_check_object(c, z);
	if (r == 0)
		r = dec_dup_str(c, z, "name", dec_is_label_value, "zone", &name);
	/* No name is the empty zone name, a valid label value that kube-proxy
	 * keeps (endpointslicecache.go, addEndpoints). */
	if (r == 0 && !name && !(name = strdup("")))
		r = -ENOMEM;
	if (r == 0)
		ep->hint_zones[ep->n_hint_zones++] = name;
	return r;
}

/* hints.forNodes[i] (a dec_entry_fn on the endpoint). */
static int decode_hint_node(struct dctx *c, const cJSON *n, size_t i, void *ud)
{
	struct epslice_endpoint *ep = ud;
	char *name = NULL;
	int r;

	r = dec_check_object(c, n);
	if (r == 0)
		r = dec_dup_str(c, n, "name", dec_is_dns1123_subdomain, "node name", &name);
	if (r == 0 && !name) {
		/* The API requires a node name here (an empty one is invalid). */
		r = dec_fail_at(c, "name", "missing (a node name is required)");
	}
	if (r == 0)
		ep->hint_nodes[ep->n_hint_nodes++] = name;
	return r;
}

static int decode_hints(struct dctx *c, const cJSON *j, struct epslice_endpoint *ep)
{
	const cJSON *hints;
	size_t l;
	int r;

	r = dec_get_object(c, j, "hints", &hints);
	if (r < 0 || !hints)
		return r;
	ep->has_hints = true;
	l = dec_path_key(c, "hints");
	r = dec_each(c, hints, "forZones", DECODE_MAX_ADDRS, (void **)&ep->hint_zones,
		     sizeof(*ep->hint_zones), decode_hint_zone, ep);
	if (r == 0)
		r = dec_each(c, hints, "forNodes", DECODE_MAX_ADDRS, (void **)&ep->hint_nodes,
			     sizeof(*ep->hint_nodes), decode_hint_node, ep);
	dec_path_pop(c, l);
	return r;
}

/* One entry of endpoints (a dec_entry_fn on the slice). */
static int decode_slice_endpoint(struct dctx *c, const cJSON *j, size_t i, void *ud)
{
	struct epslice *e = ud;
	struct epslice_endpoint *ep = &e->endpoints[e->n_endpoints];
	const cJSON *addrs, *cond, *first;
	int ready, serving, terminating;
	char buf[64];
	size_t n, l;
	int r;

	r = dec_check_object(c, j);
	if (r < 0)
		return r;
	r = dec_get_array(c, j, "addresses", 100, &addrs, &n);
	if (r < 0)
		return r;
	l = dec_path_key(c, "addresses");
	if (n == 0) {
		r = dec_fail(c, "missing (at least one address is required)");
		dec_path_pop(c, l);
		return r;
	}
	/* kube-proxy uses only the first address; the API makes the rest
	 * duplicates of it. */
	first = cJSON_GetArrayItem(addrs, 0);
	dec_path_idx(c, 0);
	r = dec_check_ip(c, first, &ep->addr);
	if (r == 0 && ep->addr.family != e->family)
		r = dec_fail(c, "%s does not match addressType %s",
			     ipaddr_fmt(&ep->addr, buf, sizeof(buf)),
			     e->family == AF_INET ? "IPv4" : "IPv6");
	dec_path_pop(c, l);
	if (r < 0)
		return r;
	e->n_endpoints++;

	r = dec_get_object(c, j, "conditions", &cond);
	if (r < 0)
		return r;
	l = dec_path_key(c, "conditions");
	r = dec_get_bool(c, cond, "ready", &ready);
	if (r == 0)
		r = dec_get_bool(c, cond, "serving", &serving);
	if (r == 0)
		r = dec_get_bool(c, cond, "terminating", &terminating);
	dec_path_pop(c, l);
	if (r < 0)
		return r;
	/* As kube-proxy reads them (endpointslicecache.go, addEndpoints): nil
	 * ready and nil serving mean true, nil terminating means false.  So a
	 * terminating endpoint without a serving condition is a fallback. */
	ep->ready = ready != 0;
	ep->serving = serving != 0;
	ep->terminating = terminating == 1;

	r = dec_dup_str(c, j, "nodeName", dec_is_dns1123_subdomain, "node name", &ep->node_name);
	if (r == 0)
		r = dec_dup_str(c, j, "zone", dec_is_label_value, "zone", &ep->zone);
	if (r == 0)
		r = decode_hints(c, j, ep);
	return r;
}

/* The EndpointSlice controller's last-change-trigger-time, for the network
 * programming latency.  Unreadable, it is noted and left out, as kube-proxy
 * does (endpointschangetracker.go, getLastChangeTriggerTime). */
static int decode_trigger_time(struct dctx *c, const cJSON *j, struct epslice *e)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(j, "metadata");
	const cJSON *an = cJSON_GetObjectItemCaseSensitive(md, "annotations");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(an, PROGTIME_ANNOTATION);
	char buf[300];
	size_t l;
	int r;

	if (!v)
		return 0;
	if (cJSON_IsString(v) && progtime_parse(v->valuestring, &e->trigger_time) == 0)
		return 0;
	l = dec_path_push(c, "metadata.annotations[\"%s\"]", PROGTIME_ANNOTATION);
	r = dec_report(c, DIAG_NOTE, "%s is not an RFC 3339 time; not measured",
		       cJSON_IsString(v) ? dec_quote(v->valuestring, buf, sizeof(buf)) : "the value");
	dec_path_pop(c, l);
	return r;
}

int decode_endpointslice(struct dctx *c, const cJSON *j, const char *key_ns,
			 const char *key_name, struct decoded *out)
{
	_cleanup_(epslice_unrefp) struct epslice *e = NULL;
	const char *svc, *at;
	char buf[300];
	struct dec_meta m;
	size_t l;
	int r;

	r = dec_get_meta(c, j, "EndpointSlice", key_ns, key_name, dec_is_dns1123_subdomain,
			 "EndpointSlice name", &m);
	if (r < 0)
		return r;
	svc = NULL;
	if (m.labels) {
		r = dec_get_label(c, m.labels, LABEL_SERVICE_NAME, &svc);
		if (r < 0)
			return r;
	}
	if (!svc || !*svc)
		return dec_fail_at(c, "metadata.labels",
				   "no %s label: the slice belongs to no service", LABEL_SERVICE_NAME);
	l = dec_path_push(c, "metadata.labels[\"%s\"]", LABEL_SERVICE_NAME);
	r = dec_check_name(c, svc, dec_is_dns1035_label, "service name");
	dec_path_pop(c, l);
	if (r < 0)
		return r;

	e = dec_epslice_new(ORIGIN_K8S);
	if (!e)
		return -ENOMEM;
	r = dec_get_str(c, j, "addressType", &at);
	if (r < 0)
		return r;
	if (at && streq(at, "IPv4")) {
		e->family = AF_INET;
	} else if (at && streq(at, "IPv6")) {
		e->family = AF_INET6;
	} else if (at && streq(at, "FQDN")) {
		return dec_report(c, DIAG_NOTE,
				  "addressType FQDN is not used by kube-proxy; ignored");
	} else {
		l = dec_path_key(c, "addressType");
		r = at ? dec_fail(c, "%s is not a valid addressType (IPv4, IPv6, FQDN)",
				  dec_quote(at, buf, sizeof(buf)))
		       : dec_fail(c, "missing");
		dec_path_pop(c, l);
		return r;
	}
	e->ns = strdup(m.ns);
	e->name = strdup(m.name);
	e->service_name = strdup(svc);
	if (!e->ns || !e->name || !e->service_name)
		return -ENOMEM;

	r = dec_each(c, j, "ports", DECODE_MAX_PORTS, (void **)&e->ports, sizeof(*e->ports),
		     decode_slice_port, e);
	if (r < 0)
		return r;
	r = dec_each(c, j, "endpoints", DECODE_MAX_ENDPOINTS, (void **)&e->endpoints,
		     sizeof(*e->endpoints), decode_slice_endpoint, e);
	if (r < 0)
		return r;
	r = decode_trigger_time(c, j, e);
	if (r < 0)
		return r;
	return dec_add_slice(out, TAKE_PTR(e));
}
