/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A v1 Service into a struct service.  kube-proxy relies on the API
 * server's validation of these fields; a file is not an API server, so a
 * Service it would have refused is refused here (one diag) and skipped.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sources/decode/decode-item.h"
#include "sources/decode/decode-names.h"
#include "sources/decode/decode-service.h"

#define LABEL_HEADLESS "service.kubernetes.io/headless"
#define LABEL_PROXY_NAME "service.kubernetes.io/service-proxy-name"
#define MAX_AFFINITY_TIMEOUT 86400

static int decode_service_port(struct dctx *c, const cJSON *j, struct service_port_spec *p)
{
	const cJSON *tp;
	uint32_t v;
	char buf[16];
	int r;

	r = dec_check_object(c, j);
	if (r < 0)
		return r;
	r = dec_dup_str(c, j, "name", dec_is_port_name_or_empty, "port name", &p->name);
	if (r < 0)
		return r;
	if (!p->name) {
		p->name = strdup("");
		if (!p->name)
			return -ENOMEM;
	}
	r = dec_get_proto(c, j, "protocol", &p->protocol);
	if (r < 0)
		return r;
	if (!dec_get(j, "port"))
		return dec_fail_at(c, "port", "missing");
	r = dec_get_uint(c, j, "port", 1, 65535, "port", &v);
	if (r < 0)
		return r;
	p->port = (uint16_t)v;
	r = dec_get_uint(c, j, "nodePort", 0, 65535, "node port", &v);
	if (r < 0)
		return r;
	p->node_port = (uint16_t)v;

	tp = dec_get(j, "targetPort");
	if (cJSON_IsString(tp) && tp->valuestring && (*tp->valuestring || dec_has_nul(tp))) {
		size_t l = dec_path_key(c, "targetPort");
		const char *str;

		r = dec_check_str(c, tp, &str);
		if (r == 0)
			r = dec_check_name(c, str, dec_is_port_name, "port name");
		dec_path_pop(c, l);
		if (r < 0)
			return r;
		p->target_port = strdup(tp->valuestring);
	} else {
		if (tp && !cJSON_IsString(tp)) {
			size_t l = dec_path_key(c, "targetPort");

			r = cJSON_IsNumber(tp) ? dec_check_uint(c, tp, 0, 65535, "port", &v)
					       : dec_type_error(c, tp, "a number or a string");
			dec_path_pop(c, l);
			if (r < 0)
				return r;
		} else {
			v = 0;
		}
		/* The API server defaults an unset (or 0) targetPort to port. */
		snprintf(buf, sizeof(buf), "%u", v ? v : p->port);
		p->target_port = strdup(buf);
	}
	if (!p->target_port)
		return -ENOMEM;
	return 0;
}

/* spec.ports[i], unique by name and by port per protocol (a dec_entry_fn). */
static int decode_service_port_at(struct dctx *c, const cJSON *e, size_t i, void *ud)
{
	struct service *s = ud;
	struct service_port_spec *p = &s->ports[i];
	int r;

	s->n_ports = i + 1;
	r = decode_service_port(c, e, p);
	for (size_t k = 0; r == 0 && k < i; k++) {
		const struct service_port_spec *q = &s->ports[k];

		if (q->protocol == p->protocol && streq(q->name, p->name)) {
			r = dec_fail_at(c, "name",
					"duplicate port name \"%s\" for %s (also spec.ports[%zu])",
					p->name, proto_name(p->protocol), k);
		} else if (q->protocol == p->protocol && q->port == p->port) {
			r = dec_fail_at(c, "port", "duplicate port %u/%s (also spec.ports[%zu])",
					p->port, proto_name(p->protocol), k);
		}
	}
	return r;
}

static int decode_service_ports(struct dctx *c, const cJSON *spec, struct service *s)
{
	return dec_each(c, spec, "ports", DECODE_MAX_PORTS, (void **)&s->ports, sizeof(*s->ports),
			decode_service_port_at, s);
}

/* clusterIP / clusterIPs: "None" = headless, "" = none; clusterIPs wins
 * but must start with clusterIP when both are set, as the API requires. */
static int decode_cluster_ips(struct dctx *c, const cJSON *spec, struct service *s)
{
	const char *cip, *str;
	const cJSON *arr, *e;
	struct ipaddr a;
	char buf[300];
	size_t n, i = 0, l;
	int r;

	r = dec_get_str(c, spec, "clusterIP", &cip);
	if (r < 0)
		return r;
	r = dec_get_array(c, spec, "clusterIPs", 2, &arr, &n);
	if (r < 0)
		return r;
	if (n == 0) {
		if (!cip || !*cip)
			return 0;
		if (streq(cip, "None")) {
			s->headless = true;
			return 0;
		}
		l = dec_path_key(c, "clusterIP");
		r = ipaddr_parse(cip, &a) < 0 ? dec_fail(c, "%s is not a valid IP address",
							 dec_quote(cip, buf, sizeof(buf)))
					      : 0;
		dec_path_pop(c, l);
		if (r < 0)
			return r;
		s->cluster_ips = malloc(sizeof(*s->cluster_ips));
		if (!s->cluster_ips)
			return -ENOMEM;
		s->cluster_ips[0] = a;
		s->n_cluster_ips = 1;
		return 0;
	}

	s->cluster_ips = calloc(n, sizeof(*s->cluster_ips));
	if (!s->cluster_ips)
		return -ENOMEM;
	l = dec_path_key(c, "clusterIPs");
	cJSON_ArrayForEach(e, arr) {
		size_t l2 = dec_path_idx(c, i);

		r = dec_check_str(c, e, &str);
		if (r == 0 && streq(str, "None")) {
			if (n != 1)
				r = dec_fail(c, "\"None\" must be the only entry");
			else
				s->headless = true;
		} else if (r == 0) {
			r = dec_check_ip(c, e, &s->cluster_ips[i]);
			if (r == 0 && i == 1 &&
			    s->cluster_ips[0].family == s->cluster_ips[1].family)
				r = dec_fail(c, "a second cluster IP of the same family");
			if (r == 0)
				s->n_cluster_ips = i + 1;
		}
		if (r == 0 && i == 0 && cip && *cip &&
		    (s->headless ? !streq(cip, "None")
				 : ipaddr_parse(cip, &a) < 0 || ipaddr_cmp(&a, &s->cluster_ips[0])))
			r = dec_fail(c, "%s does not match spec.clusterIP %s",
				     dec_quote(str, buf, 150), dec_quote(cip, buf + 150, 150));
		dec_path_pop(c, l2);
		if (r < 0)
			break;
		i++;
	}
	dec_path_pop(c, l);
	return r;
}

static int decode_policy(struct dctx *c, const cJSON *spec, const char *key, bool global_ok,
			 enum traffic_policy *ret)
{
	const char *v;
	char buf[300];
	int r;

	*ret = POLICY_CLUSTER;
	r = dec_get_str(c, spec, key, &v);
	if (r < 0 || !v || !*v || streq(v, "Cluster"))
		return r;
	if (streq(v, "Local")) {
		*ret = POLICY_LOCAL;
		return 0;
	}
	/* "Global" is the pre-1.15 name of Cluster, still accepted by kube-proxy. */
	if (global_ok && streq(v, "Global"))
		return 0;
	return dec_fail_at(c, key, "%s is not a valid policy (Cluster, Local)",
			   dec_quote(v, buf, sizeof(buf)));
}

static int decode_affinity(struct dctx *c, const cJSON *spec, struct service *s)
{
	const cJSON *cfg, *cip;
	const char *v;
	char buf[300];
	uint32_t t;
	size_t l;
	int r;

	r = dec_get_str(c, spec, "sessionAffinity", &v);
	if (r < 0 || !v || !*v || streq(v, "None"))
		return r;
	if (!streq(v, "ClientIP"))
		return dec_fail_at(c, "sessionAffinity",
				   "%s is not a valid session affinity (None, ClientIP)",
				   dec_quote(v, buf, sizeof(buf)));
	s->affinity_client_ip = true;
	r = dec_get_object(c, spec, "sessionAffinityConfig", &cfg);
	if (r < 0 || !cfg)
		return r;
	l = dec_path_key(c, "sessionAffinityConfig");
	r = dec_get_object(c, cfg, "clientIP", &cip);
	if (r == 0 && cip) {
		size_t l2 = dec_path_key(c, "clientIP");

		r = dec_get_uint(c, cip, "timeoutSeconds", 1, MAX_AFFINITY_TIMEOUT,
				 "timeout (1-86400 seconds)", &t);
		if (r == 0 && t)
			s->affinity_timeout = t;
		dec_path_pop(c, l2);
	}
	dec_path_pop(c, l);
	return r;
}

/* status.loadBalancer.ingress[i] (a dec_entry_fn). */
static int decode_lb_ingress(struct dctx *c, const cJSON *e, size_t i, void *ud)
{
	struct service *s = ud;
	struct lb_ingress *in = &s->lb_ingress[s->n_lb_ingress];
	const cJSON *ip;
	const char *mode;
	char buf[300];
	int r;

	r = dec_check_object(c, e);
	if (r == 0)
		r = dec_get_str(c, e, "ipMode", &mode);
	if (r == 0 && mode && *mode && !streq(mode, "VIP") && !streq(mode, "Proxy"))
		r = dec_fail_at(c, "ipMode", "%s is not a valid ipMode (VIP, Proxy)",
				dec_quote(mode, buf, sizeof(buf)));
	ip = dec_get(e, "ip");
	/* Hostname-only ingress entries program nothing in iptables mode. */
	if (r == 0 && ip) {
		size_t l = dec_path_key(c, "ip");

		r = dec_check_ip(c, ip, &in->ip);
		dec_path_pop(c, l);
		if (r == 0) {
			in->ipmode_proxy = mode && streq(mode, "Proxy");
			s->n_lb_ingress++;
		}
	}
	return r;
}

static int decode_lb_status(struct dctx *c, const cJSON *j, struct service *s)
{
	const cJSON *status, *lb;
	size_t l;
	int r;

	r = dec_get_object(c, j, "status", &status);
	if (r < 0 || !status)
		return r;
	l = dec_path_key(c, "status");
	r = dec_get_object(c, status, "loadBalancer", &lb);
	if (r == 0 && lb) {
		dec_path_key(c, "loadBalancer");
		r = dec_each(c, lb, "ingress", DECODE_MAX_ADDRS, (void **)&s->lb_ingress,
			     sizeof(*s->lb_ingress), decode_lb_ingress, s);
	}
	dec_path_pop(c, l);
	return r;
}

/* spec.loadBalancerSourceRanges[i] (a dec_entry_fn). */
static int decode_source_range(struct dctx *c, const cJSON *e, size_t i, void *ud)
{
	struct service *s = ud;
	const char *str;
	char buf[300];
	int r;

	r = dec_check_str(c, e, &str);
	if (r == 0 && ipnet_parse(str, &s->lb_source_ranges[i]) < 0)
		r = dec_fail(c, "%s is not a valid CIDR", dec_quote(str, buf, sizeof(buf)));
	if (r == 0)
		s->n_lb_source_ranges = i + 1;
	return r;
}

static int decode_source_ranges(struct dctx *c, const cJSON *spec, struct service *s)
{
	return dec_each(c, spec, "loadBalancerSourceRanges", DECODE_MAX_ADDRS,
			(void **)&s->lb_source_ranges, sizeof(*s->lb_source_ranges),
			decode_source_range, s);
}

static int decode_service_type(struct dctx *c, const cJSON *spec, enum svc_type *ret)
{
	static const struct {
		const char *name;
		enum svc_type type;
	} types[] = {
		{ "ClusterIP", SVC_CLUSTER_IP },
		{ "NodePort", SVC_NODE_PORT },
		{ "LoadBalancer", SVC_LOAD_BALANCER },
		{ "ExternalName", SVC_EXTERNAL_NAME },
	};
	const char *v;
	char buf[300];
	size_t i;
	int r;

	*ret = SVC_CLUSTER_IP;
	r = dec_get_str(c, spec, "type", &v);
	if (r < 0 || !v || !*v)
		return r;
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		if (streq(v, types[i].name)) {
			*ret = types[i].type;
			return 0;
		}
	}
	return dec_fail_at(c, "type",
			   "%s is not a valid service type (ClusterIP, NodePort, LoadBalancer, "
			   "ExternalName)",
			   dec_quote(v, buf, sizeof(buf)));
}

int decode_service(struct dctx *c, const cJSON *j, const char *key_ns,
		   const char *key_name, struct decoded *out)
{
	_cleanup_(service_unrefp) struct service *s = NULL;
	const char *headless, *proxy;
	const cJSON *spec;
	struct dec_meta m;
	uint32_t v;
	size_t l, i;
	int r;

	r = dec_get_meta(c, j, "Service", key_ns, key_name, dec_is_dns1035_label, "service name",
			 &m);
	if (r < 0)
		return r;
	r = dec_get_label(c, m.labels, LABEL_HEADLESS, &headless);
	if (r < 0)
		return r;
	r = dec_get_label(c, m.labels, LABEL_PROXY_NAME, &proxy);
	if (r < 0)
		return r;

	s = dec_service_new();
	if (!s)
		return -ENOMEM;
	s->origin = ORIGIN_K8S;
	s->ns = strdup(m.ns);
	s->name = strdup(m.name);
	if (!s->ns || !s->name)
		return -ENOMEM;
	s->headless = headless != NULL;
	if (proxy) {
		s->proxy_name = strdup(proxy);
		if (!s->proxy_name)
			return -ENOMEM;
	}

	r = dec_get_object(c, j, "spec", &spec);
	if (r < 0)
		return r;
	l = dec_path_key(c, "spec");
	r = decode_service_type(c, spec, &s->type);
	if (r == 0)
		r = decode_cluster_ips(c, spec, s);
	if (r == 0)
		r = decode_service_ports(c, spec, s);
	if (r == 0)
		r = dec_get_ip_list(c, spec, "externalIPs", &s->external_ips, &s->n_external_ips);
	if (r == 0)
		r = decode_source_ranges(c, spec, s);
	if (r == 0)
		r = decode_affinity(c, spec, s);
	if (r == 0)
		r = decode_policy(c, spec, "externalTrafficPolicy", true, &s->ext_policy);
	if (r == 0)
		r = decode_policy(c, spec, "internalTrafficPolicy", false, &s->int_policy);
	if (r == 0)
		r = dec_get_uint(c, spec, "healthCheckNodePort", 0, 65535, "node port", &v);
	if (r == 0)
		s->health_check_node_port = (uint16_t)v;
	dec_path_pop(c, l);
	if (r < 0)
		return r;
	r = decode_lb_status(c, j, s);
	if (r < 0)
		return r;

	/* The API server refuses node ports on ClusterIP services; kube-proxy
	 * would never see one, so do not program one. */
	if (s->type == SVC_CLUSTER_IP) {
		for (i = 0; i < s->n_ports; i++) {
			if (!s->ports[i].node_port)
				continue;
			l = dec_path_push(c, "spec.ports[%zu].nodePort", i);
			r = dec_report(c, DIAG_WARNING, "ignored for a service of type ClusterIP");
			dec_path_pop(c, l);
			if (r < 0)
				return r;
			s->ports[i].node_port = 0;
		}
	}
	return dec_add_service(out, TAKE_PTR(s));
}
