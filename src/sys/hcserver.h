/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kube-proxy's service health-check servers (pkg/proxy/healthcheck,
 * service_health.go): for every LoadBalancer service with
 * externalTrafficPolicy Local and a healthCheckNodePort, an HTTP server on
 * that port of the node-port addresses of each family written (0.0.0.0
 * and, dual-stack, :: when NodePorts answer on every address; kube-proxy
 * runs one server set per family).  Every path answers 200 when the service has ready
 * endpoints of the listening address's family on this node and the proxy is
 * healthy, else 503, with
 * kube-proxy's JSON body:
 *
 *   {
 *   	"service": {
 *   		"namespace": "ns",
 *   		"name": "name"
 *   	},
 *   	"localEndpoints": 1,
 *   	"serviceProxyHealthy": true
 *   }
 *
 * (tab-indented, no final newline), Content-Type application/json,
 * X-Content-Type-Options nosniff and X-Load-Balancing-Endpoint-Weight:
 * the localEndpoints count.  Servers run on the daemon's loop.
 */
#ifndef SVCNAT_SYS_HCSERVER_H
#define SVCNAT_SYS_HCSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/model.h"
#include "core/plan.h"
#include "sys/http.h"

/* The families of hc_want.local_endpoints. */
enum { HC_IPV4, HC_IPV6 };

/* One wanted health check: a service (not a port) of the desired state. */
struct hc_want {
	const char *ns;     /* borrowed from the desired state */
	const char *name;
	uint16_t port;      /* healthCheckNodePort */
	/* distinct IPs of ready endpoints on this node, [HC_IPV4] and
	 * [HC_IPV6]: a listener on an address of one family answers with
	 * its family's count, as kube-proxy's per-family proxiers do */
	unsigned local_endpoints[2];
};

/*
 * The health checks d asks for, sorted by namespace and name (a service
 * with several ports counts once; its endpoints' IPs once each, as
 * kube-proxy's LocalReadyEndpoints()).  *ret is the caller's (free()).
 * Returns the count, or -ENOMEM.
 */
int hc_wanted(const struct desired *d, struct hc_want **ret);

/* Write kube-proxy's body for one service into a malloc'd string. */
char *hc_body(const char *ns, const char *name, unsigned local_endpoints, bool proxy_healthy);

struct hc_servers;

/* healthy() is asked at every request (kube-proxy's serviceProxyHealthy);
 * the servers are health servers of pool (which must outlive them). */
int hc_servers_new(struct http_pool *pool, bool (*healthy)(void *ud), void *ud,
		   struct hc_servers **ret);
void hc_servers_free(struct hc_servers *h);

/*
 * The addresses a health check on port listens on, as http_server_new()
 * bind strings ("198.18.0.1:32000", "[2001:2::1]:32000"): per family
 * (family AF_INET, AF_INET6, or AF_UNSPEC for both, IPv4 first), the
 * node's addresses (s->local_addrs) inside that family's
 * --nodeport-addresses, or the family's wildcard when it has none, or one
 * of 0 bits, or none of its CIDRs holds a node address.  At most max;
 * returns the count.
 */
#define HC_BIND_LEN 80
size_t hc_listen_binds(const struct plan_settings *s, int family, uint16_t port,
		       char (*ret)[HC_BIND_LEN], size_t max);

/*
 * Make the servers those of d: close the ones no longer wanted (or whose
 * port changed), open the new ones on the node-port addresses of s of
 * family (AF_INET, or AF_UNSPEC for a dual-stack node: both; see
 * hc_listen_binds()); a listener that fails is reported in diags and the
 * service's others closed, tried again next time, as kube-proxy does;
 * update every count.  0 or -ENOMEM.
 */
int hc_servers_sync(struct hc_servers *h, const struct desired *d, const struct plan_settings *s,
		    int family, struct diag_list *diags);

/* How many services have open servers (tests, metrics). */
size_t hc_servers_count(const struct hc_servers *h);

#endif
