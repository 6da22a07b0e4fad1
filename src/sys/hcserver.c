/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sys/hcserver.h"
#include "sys/http.h"
#include "sys/log.h"
#include "util.h"

struct hc_entry {
	struct hc_servers *owner;
	char *ns;
	char *name;
	uint16_t port;
	unsigned local_endpoints[2]; /* [HC_IPV4], [HC_IPV6] */
	struct http_server **srv; /* one per listening address */
	size_t n_srv;
	char (*binds)[HC_BIND_LEN]; /* what srv listen on (hc_listen_binds()) */
	size_t n_binds;
};

struct hc_servers {
	struct http_pool *pool;
	bool (*healthy)(void *ud);
	void *ud;
	struct hc_entry **v; /* sorted by ns, name */
	size_t n;
};

static int want_cmp(const void *a, const void *b)
{
	const struct hc_want *x = a, *y = b;
	int c = strcmp(x->ns, y->ns);

	return c ? c : strcmp(x->name, y->name);
}

static bool ip_in(const struct ipaddr *v, size_t n, const struct ipaddr *a)
{
	for (size_t i = 0; i < n; i++)
		if (ipaddr_cmp(&v[i], a) == 0)
			return true;
	return false;
}

/* kube-proxy's LocalReadyEndpoints(): distinct IPs of ready endpoints on
 * this node, over every port of the service, per family (each of
 * kube-proxy's proxiers counts its own family's EndpointSlices). */
static int count_local(const struct desired *d, const char *ns, const char *name, unsigned ret[2])
{
	_cleanup_free_ struct ipaddr *ips = NULL;
	size_t n = 0;

	for (size_t i = 0; i < d->n_ports; i++) {
		const struct svc_port *sp = &d->ports[i];

		if (!streq(sp->ns, ns) || !streq(sp->name, name))
			continue;
		for (size_t k = 0; k < sp->n_endpoints; k++) {
			const struct endpoint *ep = &sp->endpoints[k];
			struct ipaddr *nv;

			if (!ep->ready || !ep->is_local || ip_in(ips, n, &ep->addr))
				continue;
			nv = reallocarray_z(ips, n + 1, sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			ips = nv;
			ips[n++] = ep->addr;
		}
	}
	ret[HC_IPV4] = ret[HC_IPV6] = 0;
	for (size_t i = 0; i < n; i++)
		ret[ips[i].family == AF_INET6 ? HC_IPV6 : HC_IPV4]++;
	return 0;
}

int hc_wanted(const struct desired *d, struct hc_want **ret)
{
	struct hc_want *v = NULL;
	size_t n = 0, out = 0;

	for (size_t i = 0; i < d->n_ports; i++) {
		const struct svc_port *sp = &d->ports[i];
		struct hc_want *nv;

		/* The API sets healthCheckNodePort only for these; kube-proxy
		 * serves whatever port the service carries. */
		if (sp->skipped || !sp->health_check_node_port || sp->type != SVC_LOAD_BALANCER ||
		    sp->ext_policy != POLICY_LOCAL)
			continue;
		nv = reallocarray_z(v, n + 1, sizeof(*v));
		if (!nv) {
			free(v);
			return -ENOMEM;
		}
		v = nv;
		v[n++] = (struct hc_want){ .ns = sp->ns, .name = sp->name,
					   .port = sp->health_check_node_port };
	}
	if (n)
		qsort(v, n, sizeof(*v), want_cmp);
	/* One entry per service (kube-proxy keys both maps by its name). */
	for (size_t i = 0; i < n; i++) {
		if (out && want_cmp(&v[out - 1], &v[i]) == 0)
			continue;
		v[out] = v[i];
		if (count_local(d, v[out].ns, v[out].name, v[out].local_endpoints) < 0) {
			free(v);
			return -ENOMEM;
		}
		out++;
	}
	*ret = v;
	return (int)out;
}

char *hc_body(const char *ns, const char *name, unsigned local_endpoints, bool proxy_healthy)
{
	char *s = NULL;

	/* Go's %q of a Kubernetes name is the name in quotes: names are DNS
	 * labels, nothing to escape. */
	if (asprintf(&s,
		     "{\n\t\"service\": {\n\t\t\"namespace\": \"%s\",\n\t\t\"name\": \"%s\"\n\t},\n"
		     "\t\"localEndpoints\": %u,\n\t\"serviceProxyHealthy\": %s\n}",
		     ns, name, local_endpoints, proxy_healthy ? "true" : "false") < 0)
		return NULL;
	return s;
}

/* The answer of a listener of family f: that family's local endpoints. */
static int h_service(struct hc_entry *e, int f, struct http_response *resp)
{
	bool healthy = e->owner->healthy ? e->owner->healthy(e->owner->ud) : true;
	unsigned n = e->local_endpoints[f];

	resp->body = hc_body(e->ns, e->name, n, healthy);
	if (!resp->body)
		return -ENOMEM;
	resp->len = strlen(resp->body);
	resp->status = n && healthy ? 200 : 503;
	resp->content_type = "application/json";
	/* kube-proxy's weight for load balancers that use it (GCE's
	 * WEIGHTED_MAGLEV), on 503 too */
	resp->header = "X-Load-Balancing-Endpoint-Weight";
	snprintf(resp->header_value, sizeof(resp->header_value), "%u", n);
	return 0;
}

static int h_service4(void *userdata, struct http_response *resp)
{
	return h_service(userdata, HC_IPV4, resp);
}

static int h_service6(void *userdata, struct http_response *resp)
{
	return h_service(userdata, HC_IPV6, resp);
}

/* Every path is the service's health (kube-proxy registers one handler);
 * one table per family of the listening address. */
static const struct http_route hc_routes4[] = {
	{ "*", h_service4 },
};
static const struct http_route hc_routes6[] = {
	{ "*", h_service6 },
};

/* Close e's servers (it keeps its service and port). */
static void entry_close(struct hc_entry *e)
{
	for (size_t i = 0; i < e->n_srv; i++)
		http_server_free(e->srv[i]);
	free(e->srv);
	free(e->binds);
	e->srv = NULL;
	e->binds = NULL;
	e->n_srv = e->n_binds = 0;
}

static void entry_free(struct hc_entry *e)
{
	if (!e)
		return;
	entry_close(e);
	free(e->ns);
	free(e->name);
	free(e);
}

int hc_servers_new(struct http_pool *pool, bool (*healthy)(void *ud), void *ud,
		   struct hc_servers **ret)
{
	struct hc_servers *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->pool = pool;
	h->healthy = healthy;
	h->ud = ud;
	*ret = h;
	return 0;
}

void hc_servers_free(struct hc_servers *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++)
		entry_free(h->v[i]);
	free(h->v);
	free(h);
}

size_t hc_servers_count(const struct hc_servers *h)
{
	return h ? h->n : 0;
}

/*
 * kube-proxy's nodeIPs for one family's servers: every address when
 * NodePorts answer on every address, else the node's addresses (of that
 * family) inside --nodeport-addresses.  Fills addrs (at most max);
 * returns the count (0: all addresses).
 */
static size_t listen_addrs(const struct plan_settings *s, int family, struct ipaddr *addrs,
			   size_t max)
{
	size_t n = 0, cidrs = 0;

	for (size_t k = 0; k < s->n_nodeport_addresses; k++) {
		const struct ipnet *c = &s->nodeport_addresses[k];

		if (c->addr.family != family)
			continue;
		if (c->plen == 0)
			return 0;
		cidrs++;
		for (size_t i = 0; i < s->n_local_addrs && n < max; i++) {
			bool dup = false;

			if (s->local_addrs[i].family != family ||
			    !ipnet_contains(c, &s->local_addrs[i]))
				continue;
			for (size_t j = 0; j < n; j++)
				dup = dup || ipaddr_cmp(&addrs[j], &s->local_addrs[i]) == 0;
			if (!dup)
				addrs[n++] = s->local_addrs[i];
		}
	}
	return cidrs ? n : 0;
}

size_t hc_listen_binds(const struct plan_settings *s, int family, uint16_t port,
		       char (*ret)[HC_BIND_LEN], size_t max)
{
	static const int fams[] = { AF_INET, AF_INET6 };
	size_t out = 0;

	for (size_t f = 0; f < ARRAY_SIZE(fams); f++) {
		struct ipaddr addrs[32];
		size_t n;

		if (family != AF_UNSPEC && family != fams[f])
			continue;
		n = listen_addrs(s, fams[f], addrs, ARRAY_SIZE(addrs));
		for (size_t i = 0; i < (n ? n : 1) && out < max; i++) {
			char ip[64];

			if (n)
				ipaddr_fmt(&addrs[i], ip, sizeof(ip));
			else
				snprintf(ip, sizeof(ip), fams[f] == AF_INET ? "0.0.0.0" : "::");
			/* http_server_new()'s syntax: [IPv6]:port */
			snprintf(ret[out++], HC_BIND_LEN, fams[f] == AF_INET6 ? "[%s]:%u" : "%s:%u",
				 ip, port);
		}
	}
	return out;
}

static int entry_open(struct hc_servers *h, struct hc_entry *e, const struct plan_settings *s,
		      int family, struct diag_list *diags)
{
	char binds[64][HC_BIND_LEN];
	size_t want = hc_listen_binds(s, family, e->port, binds, ARRAY_SIZE(binds));

	e->srv = calloc(want ? want : 1, sizeof(*e->srv));
	e->binds = calloc(want ? want : 1, sizeof(*e->binds));
	if (!e->srv || !e->binds)
		return -ENOMEM;
	memcpy(e->binds, binds, want * sizeof(*binds));
	e->n_binds = want;
	for (size_t i = 0; i < want; i++) {
		/* "[...]:port" binds an IPv6 address */
		const struct http_route *routes = binds[i][0] == '[' ? hc_routes6 : hc_routes4;
		int r = http_server_new(h->pool, HTTP_HEALTH, binds[i], routes, 1, e,
					&e->srv[i]);

		if (r < 0) {
			/* As kube-proxy: close what opened, try again next sync. */
			diag_add(diags, DIAG_ERROR, NULL, NULL, NULL,
				 "health check of service %s/%s on %s: %s (retrying at the next sync)",
				 e->ns, e->name, binds[i], strerror(-r));
			for (size_t k = 0; k < e->n_srv; k++)
				http_server_free(e->srv[k]);
			e->n_srv = 0;
			return r == -ENOMEM ? r : -EADDRNOTAVAIL;
		}
		e->n_srv++;
	}
	return 0;
}

/* Whether e would listen elsewhere now (the node's addresses moved). */
static bool binds_moved(const struct hc_entry *e, const struct plan_settings *s, int family)
{
	char binds[64][HC_BIND_LEN];
	size_t n = hc_listen_binds(s, family, e->port, binds, ARRAY_SIZE(binds));

	if (n != e->n_binds)
		return true;
	for (size_t i = 0; i < n; i++)
		if (!streq(binds[i], e->binds[i]))
			return true;
	return false;
}

/* Make nv[0..out) h's servers, followed by those from h->v[i] on not merged
 * yet (kept open as they are when an allocation failed midway). */
static void servers_adopt(struct hc_servers *h, struct hc_entry **nv, size_t out, size_t i)
{
	while (i < h->n)
		nv[out++] = h->v[i++];
	free(h->v);
	h->v = nv;
	h->n = out;
}

int hc_servers_sync(struct hc_servers *h, const struct desired *d, const struct plan_settings *s,
		    int family, struct diag_list *diags)
{
	_cleanup_free_ struct hc_want *w = NULL;
	struct hc_entry **nv;
	size_t out = 0, i = 0, j = 0;
	int n = hc_wanted(d, &w), r;

	if (n < 0)
		return n;
	nv = calloc((size_t)n + h->n + 1, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	/* Merge the two sorted lists. */
	while (i < h->n || j < (size_t)n) {
		struct hc_entry *e = i < h->n ? h->v[i] : NULL;
		int c = !e ? 1 : j == (size_t)n ? -1 : strcmp(e->ns, w[j].ns);

		if (e && j < (size_t)n && c == 0)
			c = strcmp(e->name, w[j].name);
		if (c < 0 || (c == 0 && e->port != w[j].port)) {
			log_info("closing the health check of service %s/%s on port %u", e->ns,
				 e->name, e->port);
			entry_free(e);
			i++;
			continue;
		}
		if (c == 0) {
			memcpy(e->local_endpoints, w[j].local_endpoints, sizeof(e->local_endpoints));
			i++;
			j++;
			if (!binds_moved(e, s, family)) {
				nv[out++] = e;
				continue;
			}
			/* The node's addresses inside --nodeport-addresses changed:
			 * listen where kube-proxy would now. */
			entry_close(e);
			r = entry_open(h, e, s, family, diags);
			if (r == -ENOMEM) {
				entry_free(e);
				servers_adopt(h, nv, out, i);
				return r;
			}
			if (r < 0) {
				entry_free(e); /* opened anew at the next sync */
				continue;
			}
			log_info("re-opened the health check of service %s/%s on port %u on the "
				 "node's new addresses", e->ns, e->name, e->port);
			nv[out++] = e;
			continue;
		}
		e = calloc(1, sizeof(*e));
		if (!e || !(e->ns = strdup(w[j].ns)) || !(e->name = strdup(w[j].name))) {
			entry_free(e);
			servers_adopt(h, nv, out, i);
			return -ENOMEM;
		}
		e->owner = h;
		e->port = w[j].port;
		memcpy(e->local_endpoints, w[j].local_endpoints, sizeof(e->local_endpoints));
		r = entry_open(h, e, s, family, diags);
		if (r == -ENOMEM) {
			entry_free(e);
			servers_adopt(h, nv, out, i);
			return r;
		}
		if (r < 0) {
			entry_free(e);
		} else {
			if (family == AF_INET)
				log_info("opened the health check of service %s/%s on port %u "
					 "(%u local endpoints)", e->ns, e->name, e->port,
					 e->local_endpoints[HC_IPV4]);
			else
				log_info("opened the health check of service %s/%s on port %u "
					 "(local endpoints: %u IPv4, %u IPv6)", e->ns, e->name,
					 e->port, e->local_endpoints[HC_IPV4],
					 e->local_endpoints[HC_IPV6]);
			nv[out++] = e;
		}
		j++;
	}
	servers_adopt(h, nv, out, i);
	return 0;
}
