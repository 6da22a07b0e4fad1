/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The service model, in Kubernetes terms.
 *
 * Two layers:
 *  - Source items, as sources report them and the merge engine stores them:
 *    struct service (one Service object with all its ports) and
 *    struct epslice (one EndpointSlice, or one v1 Endpoints object, or one
 *    original-format endpoint list).  Items are immutable once built and
 *    reference-counted, so a snapshot can share them with the engine.
 *  - The resolved desired state (struct desired): one struct svc_port per
 *    service port, keyed "namespace/name:portname" + protocol, each with its
 *    endpoints, built by resolve_build() from a merged snapshot.  This is
 *    what the rule planner reads.
 *
 * Pure data: no I/O here.  Every string is owned by the struct holding it.
 */
#ifndef SVCNAT_CORE_MODEL_H
#define SVCNAT_CORE_MODEL_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "util.h"

/* An IPv4 or IPv6 address; family is AF_INET or AF_INET6 (0 = unset). */
struct ipaddr {
	uint8_t family;
	union {
		struct in_addr v4;
		struct in6_addr v6;
		uint8_t b[16];
	} u;
};

/* An address with a prefix length (a CIDR); plen <= 32 or <= 128. */
struct ipnet {
	struct ipaddr addr;
	uint8_t plen;
};

enum l4proto {
	PROTO_TCP = IPPROTO_TCP,
	PROTO_UDP = IPPROTO_UDP,
	PROTO_SCTP = IPPROTO_SCTP,
};

enum svc_type {
	SVC_CLUSTER_IP,
	SVC_NODE_PORT,
	SVC_LOAD_BALANCER,
	SVC_EXTERNAL_NAME,
};

enum traffic_policy {
	POLICY_CLUSTER,
	POLICY_LOCAL,
};

/* Where a service item came from, for diagnostics and --dump-state. */
enum item_origin {
	ORIGIN_K8S,    /* Kubernetes v1 Service / discovery.k8s.io/v1 EndpointSlice */
	ORIGIN_K8S_EP, /* Kubernetes v1 Endpoints (used only when no slice exists) */
	ORIGIN_LEGACY, /* the 2014 kube-proxy config format */
};

/* One entry of spec.ports[]. */
struct service_port_spec {
	char *name;        /* "" when unnamed */
	uint8_t protocol;  /* enum l4proto */
	uint16_t port;
	uint16_t node_port;        /* 0 = none */
	char *target_port;         /* number or name, as written; informational */
};

/* One load-balancer ingress entry (status.loadBalancer.ingress[]). */
struct lb_ingress {
	struct ipaddr ip;
	bool ipmode_proxy; /* ipMode: Proxy -> not programmed as a VIP */
};

/*
 * A Service.  Immutable after construction; refcounted.
 */
struct service {
	unsigned refcnt;
	enum item_origin origin;
	char *ns;
	char *name;
	enum svc_type type;
	bool headless;              /* clusterIP None, or service.kubernetes.io/headless label */
	char *proxy_name;           /* service.kubernetes.io/service-proxy-name label, or NULL */
	struct ipaddr *cluster_ips; /* spec.clusterIPs (or clusterIP) */
	size_t n_cluster_ips;
	struct ipaddr *external_ips;
	size_t n_external_ips;
	struct lb_ingress *lb_ingress;
	size_t n_lb_ingress;
	struct ipnet *lb_source_ranges;
	size_t n_lb_source_ranges;
	bool affinity_client_ip;
	uint32_t affinity_timeout;  /* seconds; 10800 default */
	enum traffic_policy ext_policy;
	enum traffic_policy int_policy;
	uint16_t health_check_node_port; /* 0 = none */
	struct service_port_spec *ports;
	size_t n_ports;
};

/* One port of an EndpointSlice (or of an Endpoints subset). */
struct epslice_port {
	char *name;       /* "" when unnamed */
	uint8_t protocol;
	uint16_t port;
};

/* One endpoint of a slice: a single address with its conditions. */
struct epslice_endpoint {
	struct ipaddr addr;
	bool ready;
	bool serving;
	bool terminating;
	char *node_name;   /* may be NULL */
	char *zone;        /* may be NULL */
	char **hint_zones; /* hints.forZones[].name */
	size_t n_hint_zones;
	char **hint_nodes; /* hints.forNodes[].name */
	size_t n_hint_nodes;
	bool has_hints;    /* hints present at all (even empty) */
};

/*
 * An EndpointSlice: the endpoints of one service, or part of them.  Keyed
 * by namespace + slice name; service_name groups slices of one service.
 * A v1 Endpoints object becomes one epslice per subset set, origin
 * ORIGIN_K8S_EP, name = service name; ports apply to every endpoint.
 */
struct epslice {
	unsigned refcnt;
	enum item_origin origin;
	char *ns;
	char *name;          /* slice name (item key within the namespace) */
	char *service_name;  /* kubernetes.io/service-name label */
	uint8_t family;      /* AF_INET / AF_INET6 (addressType) */
	struct epslice_port *ports;
	size_t n_ports;
	struct epslice_endpoint *endpoints;
	size_t n_endpoints;
	/* endpoints.kubernetes.io/last-change-trigger-time in unix seconds,
	 * 0 when absent or unreadable (core/progtime.h).  Not compared by
	 * epslice_equal(): it measures a change, it is not one. */
	double trigger_time;
};

/* --- resolved desired state, what the planner reads --- */

struct endpoint {
	struct ipaddr addr;
	uint16_t port;
	bool ready;
	bool serving;
	bool terminating;
	bool is_local;      /* node_name equals the planner's hostname (set by resolve) */
	char *node_name;
	char *zone;
	char **hint_zones;  /* the slice endpoint's hints.forZones[].name */
	size_t n_hint_zones;
	char **hint_nodes;  /* its hints.forNodes[].name */
	size_t n_hint_nodes;
	bool has_hints;
};

struct svc_port {
	char *ns;
	char *name;
	char *port_name;        /* "" when unnamed */
	char *key;              /* "ns/name:port_name" or "ns/name" when unnamed */
	uint8_t protocol;
	enum svc_type type;
	enum item_origin origin;
	bool headless;
	bool skipped;           /* programs nothing: headless, ExternalName, proxy-name */
	const char *skip_reason;/* static string when skipped */
	struct ipaddr *cluster_ips;
	size_t n_cluster_ips;
	uint16_t port;
	uint16_t node_port;
	char *target_port;
	struct ipaddr *external_ips;
	size_t n_external_ips;
	struct ipaddr *lb_ips;  /* ingress IPs, ipMode Proxy ones excluded */
	size_t n_lb_ips;
	struct ipnet *lb_source_ranges;
	size_t n_lb_source_ranges;
	bool affinity_client_ip;
	uint32_t affinity_timeout;
	enum traffic_policy ext_policy;
	enum traffic_policy int_policy;
	uint16_t health_check_node_port;
	struct endpoint *endpoints;   /* sorted by addr, port; deduplicated */
	size_t n_endpoints;
};

/* The full desired state: service ports sorted by (key, protocol). */
struct desired {
	struct svc_port *ports;
	size_t n_ports;
};

/* --- helpers --- */

/* Parse "1.2.3.4" / "fd00::1" into *ret; 0 or -EINVAL.  Leading-zero IPv4
 * octets ("010.001.002.003") are accepted as decimal, as Kubernetes' legacy
 * parser does. */
int ipaddr_parse(const char *s, struct ipaddr *ret);
/* Parse "10.0.0.0/8" (stray blanks trimmed); a bare address gets /32 or /128.
 * Host bits are masked off. */
int ipnet_parse(const char *s, struct ipnet *ret);
/* Format into buf (at least INET6_ADDRSTRLEN bytes); returns buf. */
const char *ipaddr_fmt(const struct ipaddr *a, char *buf, size_t len);
int ipaddr_cmp(const struct ipaddr *a, const struct ipaddr *b);
bool ipnet_contains(const struct ipnet *n, const struct ipaddr *a);
/* "tcp"/"udp"/"sctp" (lowercase, as in chain hashes). */
const char *proto_name(uint8_t proto);
/* "TCP"/"UDP"/"SCTP"; 0 for unknown, case-sensitive as the API is. */
uint8_t proto_from_k8s(const char *s);

struct service *service_ref(struct service *s);
void service_unref(struct service *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct service *, service_unref)
bool service_equal(const struct service *a, const struct service *b);

struct epslice *epslice_ref(struct epslice *e);
void epslice_unref(struct epslice *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct epslice *, epslice_unref)

/* Free an endpoint's strings and hint arrays (not the endpoint itself) and
 * zero it: a slice's, or a resolved service port's. */
void epslice_endpoint_done(struct epslice_endpoint *ep);
void endpoint_done(struct endpoint *ep);
bool epslice_equal(const struct epslice *a, const struct epslice *b);

void svc_port_done(struct svc_port *p);
void desired_free(struct desired *d);

#endif
