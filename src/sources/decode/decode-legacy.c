/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The original (2014) kube-proxy format: field names match
 * case-insensitively, as Go's encoding/json matched them.
 */
#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "sources/decode/decode-group.h"
#include "sources/decode/decode-item.h"
#include "sources/decode/decode-legacy.h"
#include "sources/decode/decode-names.h"

/* "ip:port" or "[v6]:port". */
static int parse_hostport(const char *s, struct ipaddr *addr, uint16_t *port)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *p;
	unsigned long v = 0;
	size_t hl;

	colon = strrchr(s, ':');
	if (!colon || !colon[1])
		return -EINVAL;
	hl = (size_t)(colon - s);
	if (s[0] == '[') {
		if (hl < 3 || s[hl - 1] != ']')
			return -EINVAL;
		s++;
		hl -= 2;
	} else if (memchr(s, ':', hl)) {
		return -EINVAL;
	}
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	for (p = colon + 1; *p; p++) {
		if (*p < '0' || *p > '9' || p - colon > 5)
			return -EINVAL;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < 1 || v > 65535 || ipaddr_parse(host, addr) < 0)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

/* Endpoints: ["ip:port", ...] into groups, one per (port, family). */
int decode_legacy_endpoints(struct dctx *c, const cJSON *j, const char *ns,
			    const char *name, uint8_t proto, struct decoded *out)
{
	_cleanup_(epgroups_done) struct epgroups gs = { 0 };
	const cJSON *arr, *e;
	size_t n = 0, i = 0, l;
	int r = 0; /* no Endpoints at all: none, no error */

	arr = dec_get_ci(j, "Endpoints");
	if (arr) {
		l = dec_path_key(c, "Endpoints");
		r = dec_check_array(c, arr, DECODE_MAX_ENDPOINTS, &n);
		dec_path_pop(c, l);
		if (r < 0)
			return r;
	}
	l = dec_path_key(c, "Endpoints");
	cJSON_ArrayForEach(e, arr) {
		struct epslice_endpoint ep = { .ready = true, .serving = true };
		struct epslice_port port = { .name = (char *)"", .protocol = proto };
		size_t l2 = dec_path_idx(c, i++);
		const char *s;
		struct epgroup *g;
		char buf[300];

		r = dec_check_str(c, e, &s);
		if (r == 0 && parse_hostport(s, &ep.addr, &port.port) < 0)
			r = dec_fail(c, "%s is not a valid \"ip:port\"",
				     dec_quote(s, buf, sizeof(buf)));
		if (r == 0)
			r = epgroup_get(&gs, ORIGIN_LEGACY, ns, name, &port, 1, ep.addr.family, &g);
		if (r == 0)
			r = epgroup_add(g, &ep);
		dec_path_pop(c, l2);
		if (r < 0)
			break;
	}
	dec_path_pop(c, l);
	if (r < 0)
		return r;
	return epgroups_emit(&gs, ORIGIN_LEGACY, ns, name, out);
}

/* Name (or the original api.Service's "id"), falling back to key_name. */
int decode_legacy_name(struct dctx *c, const cJSON *j, const char *key_name, const char **ret)
{
	const cJSON *nj = dec_get_ci(j, "Name");
	const char *key = "Name";
	const char *s = NULL;
	size_t l;
	int r = 0;

	if (!nj && dec_get_ci(j, "ID")) {
		nj = dec_get_ci(j, "ID");
		key = "ID";
	}
	l = dec_path_key(c, key);
	if (nj)
		r = dec_check_str(c, nj, &s);
	if (r == 0 && (!s || !*s))
		s = key_name && *key_name ? key_name : NULL;
	if (r == 0 && !s)
		r = dec_fail(c, "missing");
	if (r == 0)
		r = dec_check_name(c, s, dec_is_legacy_name, "name");
	dec_path_pop(c, l);
	if (r == 0)
		*ret = s;
	return r;
}

int decode_legacy_service(struct dctx *c, const cJSON *j, const char *key_ns,
			  const char *key_name, bool with_endpoints,
			  struct decoded *out)
{
	_cleanup_(service_unrefp) struct service *s = NULL;
	const char *ns = key_ns && *key_ns ? key_ns : "default";
	const char *name, *ps;
	const cJSON *pj, *cp;
	uint8_t proto = PROTO_TCP;
	char buf[300];
	uint32_t port;
	size_t l;
	int r;

	dec_set_object(c, NULL, NULL, NULL);
	r = dec_check_object(c, j);
	if (r < 0)
		return r;
	r = decode_legacy_name(c, j, key_name, &name);
	if (r < 0)
		return r;
	dec_set_object(c, NULL, ns, name);

	pj = dec_get_ci(j, "Protocol");
	if (pj) {
		l = dec_path_key(c, "Protocol");
		r = dec_check_str(c, pj, &ps);
		if (r == 0 && (!*ps || strcasecmp(ps, "TCP") == 0))
			proto = PROTO_TCP;
		else if (r == 0 && strcasecmp(ps, "UDP") == 0)
			proto = PROTO_UDP;
		else if (r == 0)
			r = dec_fail(c, "%s is not a valid protocol (TCP, UDP)",
				     dec_quote(ps, buf, sizeof(buf)));
		dec_path_pop(c, l);
		if (r < 0)
			return r;
	}
	pj = dec_get_ci(j, "Port");
	l = dec_path_key(c, "Port");
	r = pj ? dec_check_uint(c, pj, 1, 65535, "port", &port) : dec_fail(c, "missing");
	dec_path_pop(c, l);
	if (r < 0)
		return r;

	s = dec_service_new();
	if (!s)
		return -ENOMEM;
	s->origin = ORIGIN_LEGACY;
	s->type = SVC_NODE_PORT;
	s->ns = strdup(ns);
	s->name = strdup(name);
	s->ports = calloc(1, sizeof(*s->ports));
	if (!s->ns || !s->name || !s->ports)
		return -ENOMEM;
	s->n_ports = 1;
	s->ports[0].protocol = proto;
	s->ports[0].port = (uint16_t)port;
	s->ports[0].node_port = (uint16_t)port;
	s->ports[0].name = strdup("");
	/* The original api.Service named the endpoints' port "containerPort". */
	cp = dec_get_ci(j, "ContainerPort");
	if (cJSON_IsNumber(cp) && cp->valuedouble >= 1 && cp->valuedouble <= 65535 &&
	    cp->valuedouble == floor(cp->valuedouble))
		snprintf(buf, sizeof(buf), "%.0f", cp->valuedouble);
	else if (cJSON_IsString(cp) && !dec_has_nul(cp) && dec_is_port_name(cp->valuestring))
		snprintf(buf, sizeof(buf), "%s", cp->valuestring);
	else
		buf[0] = '\0';
	s->ports[0].target_port = strdup(buf);
	if (!s->ports[0].name || !s->ports[0].target_port)
		return -ENOMEM;

	if (with_endpoints) {
		r = decode_legacy_endpoints(c, j, ns, name, proto, out);
		if (r < 0)
			return r;
	}
	return dec_add_service(out, TAKE_PTR(s));
}
