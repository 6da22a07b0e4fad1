/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Endpoint selection (core/planport.c, categorize) against kube-proxy's
 * own table, TestCategorizeEndpoints in pkg/proxy/topology_test.go: each
 * row is one service port planned alone, and the endpoint sets are read
 * back from the rules: the cluster set is what KUBE-SVC- jumps to, the
 * local set what KUBE-SVL- jumps to, all the KUBE-SEP- chains there are,
 * and "has any endpoints" is the absence of kube-proxy's "has no
 * endpoints" REJECT.  kube-proxy tells a nil set (the service never uses
 * that policy) from an empty one; in rules both are "no chain".
 *
 * The rows keep kube-proxy's names, addresses and order.  kube-proxy's
 * BaseEndpointInfo fields are copied as they are (a row's "ready" endpoint
 * is not "serving" unless it says so, which changes nothing here).  Rows
 * marked "svcnat:" are ours: node hints combined with the rest.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/diag.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/render.h"
#include "core/ruleset.h"
#include "util.h"

#define MAX_ROW_EPS 6
#define MAX_LIST 4

/* kube-proxy's BaseEndpointInfo as a row writes it. */
struct row_ep {
	const char *ep;                /* "10.1.2.3:80" */
	bool ready, serving, terminating, local;
	const char *zones[MAX_LIST];   /* zoneHints; none: no hint */
	const char *nodes[MAX_LIST];   /* nodeHints */
};

struct row {
	const char *name;
	int family;                    /* the plan's; 0: AF_INET */
	const char *node;              /* nodeName; NULL: kube-proxy's test default "" */
	const char *zone;              /* topology.kubernetes.io/zone; NULL: no label */
	bool itp_local, etp_local;
	uint16_t node_port;            /* externally accessible when set */
	struct row_ep eps[MAX_ROW_EPS];
	/* Expected sets, comma-separated and sorted; NULL: nil (== empty here). */
	const char *cluster, *local, *all;
	bool only_remote;
};

#define R .ready = true
#define S .serving = true
#define T .terminating = true
#define L .local = true
#define Z(...) .zones = { __VA_ARGS__ }
#define N(...) .nodes = { __VA_ARGS__ }

/* The four endpoints of kube-proxy's PreferSameNode rows, all hinted. */
#define SAME_NODE_EPS                                                                      \
	{ { "10.1.2.3:80", Z("zone-a"), N("node-1"), R }, { "10.1.2.4:80", Z("zone-b"), N("node-2"), R }, \
	  { "10.1.2.5:80", Z("zone-c"), N("node-3"), R }, { "10.1.2.6:80", Z("zone-a"), N("node-4"), R } }

/* The four endpoints of kube-proxy's zone rows. */
#define ZONE_EPS                                                                           \
	{ { "10.1.2.3:80", Z("zone-a"), R }, { "10.1.2.4:80", Z("zone-b"), R },                 \
	  { "10.1.2.5:80", Z("zone-c"), R }, { "10.1.2.6:80", Z("zone-a"), R } }

static const struct row rows[] = {
	/* --- kube-proxy's rows --- */
	{ .name = "should use topology since all endpoints have hints, node has a zone label and "
		  "and there are endpoints for the node's zone",
	  .zone = "zone-a", .eps = ZONE_EPS, .cluster = "10.1.2.3:80,10.1.2.6:80" },
	{ .name = "externalTrafficPolicy: Local, topology ignored for Local endpoints",
	  .zone = "zone-a", .etp_local = true, .node_port = 8080,
	  .eps = { { "10.1.2.3:80", Z("zone-a"), R, L }, { "10.1.2.4:80", Z("zone-b"), R, L },
		   { "10.1.2.5:80", Z("zone-c"), R }, { "10.1.2.6:80", Z("zone-a"), R } },
	  .cluster = "10.1.2.3:80,10.1.2.6:80", .local = "10.1.2.3:80,10.1.2.4:80",
	  .all = "10.1.2.3:80,10.1.2.4:80,10.1.2.6:80" },
	{ .name = "internalTrafficPolicy: Local, topology ignored for Local endpoints",
	  .zone = "zone-a", .itp_local = true, .node_port = 8080,
	  .eps = { { "10.1.2.3:80", Z("zone-a"), R, L }, { "10.1.2.4:80", Z("zone-b"), R, L },
		   { "10.1.2.5:80", Z("zone-c"), R }, { "10.1.2.6:80", Z("zone-a"), R } },
	  .cluster = "10.1.2.3:80,10.1.2.6:80", .local = "10.1.2.3:80,10.1.2.4:80",
	  .all = "10.1.2.3:80,10.1.2.4:80,10.1.2.6:80" },
	{ .name = "empty node labels",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), R } }, .cluster = "10.1.2.3:80" },
	{ .name = "empty zone label", .zone = "",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), R } }, .cluster = "10.1.2.3:80" },
	{ .name = "node in different zone, no endpoint filtering", .zone = "zone-b",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), R } }, .cluster = "10.1.2.3:80" },
	{ .name = "unready endpoint", .zone = "zone-a",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), R }, { "10.1.2.4:80", Z("zone-b"), R },
		   { "10.1.2.5:80", Z("zone-c"), R }, { "10.1.2.6:80", Z("zone-a") } },
	  .cluster = "10.1.2.3:80" },
	{ .name = "only unready endpoints in same zone (should not filter)", .zone = "zone-a",
	  .eps = { { "10.1.2.3:80", Z("zone-a") }, { "10.1.2.4:80", Z("zone-b"), R },
		   { "10.1.2.5:80", Z("zone-c"), R }, { "10.1.2.6:80", Z("zone-a") } },
	  .cluster = "10.1.2.4:80,10.1.2.5:80" },
	{ .name = "missing hints, no filtering applied", .zone = "zone-a",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), R }, { "10.1.2.4:80", Z("zone-b"), R },
		   { "10.1.2.5:80", R }, { "10.1.2.6:80", Z("zone-a"), R } },
	  .cluster = "10.1.2.3:80,10.1.2.4:80,10.1.2.5:80,10.1.2.6:80" },
	{ .name = "multiple hints per endpoint, filtering includes any endpoint with zone included",
	  .zone = "zone-c",
	  .eps = { { "10.1.2.3:80", Z("zone-a", "zone-b", "zone-c"), R },
		   { "10.1.2.4:80", Z("zone-b", "zone-c"), R },
		   { "10.1.2.5:80", Z("zone-b", "zone-d"), R }, { "10.1.2.6:80", Z("zone-c"), R } },
	  .cluster = "10.1.2.3:80,10.1.2.4:80,10.1.2.6:80" },
	{ .name = "conflicting topology and localness require merging allEndpoints",
	  .zone = "zone-a", .etp_local = true, .node_port = 8080,
	  .eps = { { "10.0.0.0:80", Z("zone-a"), R, L }, { "10.0.0.1:80", Z("zone-b"), R, L },
		   { "10.0.0.2:80", Z("zone-a"), R }, { "10.0.0.3:80", Z("zone-b"), R } },
	  .cluster = "10.0.0.0:80,10.0.0.2:80", .local = "10.0.0.0:80,10.0.0.1:80",
	  .all = "10.0.0.0:80,10.0.0.1:80,10.0.0.2:80" },
	{ .name = "internalTrafficPolicy: Local, with empty endpoints", .itp_local = true, .local = "" },
	{ .name = "internalTrafficPolicy: Local, but all endpoints are remote", .itp_local = true,
	  .eps = { { "10.0.0.0:80", R }, { "10.0.0.1:80", R } }, .local = "", .only_remote = true },
	{ .name = "internalTrafficPolicy: Local, all endpoints are local", .itp_local = true,
	  .eps = { { "10.0.0.0:80", R, L }, { "10.0.0.1:80", R, L } },
	  .local = "10.0.0.0:80,10.0.0.1:80" },
	{ .name = "internalTrafficPolicy: Local, some endpoints are local", .itp_local = true,
	  .eps = { { "10.0.0.0:80", R, L }, { "10.0.0.1:80", R } }, .local = "10.0.0.0:80" },
	{ .name = "Cluster traffic policy, endpoints not Ready",
	  .eps = { { "10.0.0.0:80" }, { "10.0.0.1:80" } }, .cluster = "" },
	{ .name = "Cluster traffic policy, some endpoints are Ready",
	  .eps = { { "10.0.0.0:80" }, { "10.0.0.1:80", R } }, .cluster = "10.0.0.1:80" },
	{ .name = "Cluster traffic policy, all endpoints are terminating",
	  .eps = { { "10.0.0.0:80", S, T, L }, { "10.0.0.1:80", S, T } },
	  .cluster = "10.0.0.0:80,10.0.0.1:80" },
	{ .name = "iTP: Local, eTP: Cluster, some endpoints local", .itp_local = true,
	  .node_port = 8080, .eps = { { "10.0.0.0:80", R, L }, { "10.0.0.1:80", R } },
	  .cluster = "10.0.0.0:80,10.0.0.1:80", .local = "10.0.0.0:80",
	  .all = "10.0.0.0:80,10.0.0.1:80" },
	{ .name = "iTP: Cluster, eTP: Local, some endpoints local", .etp_local = true,
	  .node_port = 8080, .eps = { { "10.0.0.0:80", R, L }, { "10.0.0.1:80", R } },
	  .cluster = "10.0.0.0:80,10.0.0.1:80", .local = "10.0.0.0:80",
	  .all = "10.0.0.0:80,10.0.0.1:80" },
	{ .name = "iTP: Local, eTP: Local, some endpoints local", .itp_local = true,
	  .etp_local = true, .node_port = 8080,
	  .eps = { { "10.0.0.0:80", R, L }, { "10.0.0.1:80", R } },
	  .cluster = "10.0.0.0:80,10.0.0.1:80", .local = "10.0.0.0:80",
	  .all = "10.0.0.0:80,10.0.0.1:80" },
	{ .name = "iTP: Local, eTP: Local, all endpoints remote", .itp_local = true,
	  .etp_local = true, .node_port = 8080, .eps = { { "10.0.0.0:80", R }, { "10.0.0.1:80", R } },
	  .cluster = "10.0.0.0:80,10.0.0.1:80", .local = "", .all = "10.0.0.0:80,10.0.0.1:80" },
	{ .name = "iTP: Local, eTP: Local, all endpoints remote and terminating", .itp_local = true,
	  .etp_local = true, .node_port = 8080,
	  .eps = { { "10.0.0.0:80", S, T }, { "10.0.0.1:80", S, T } },
	  .cluster = "10.0.0.0:80,10.0.0.1:80", .local = "", .all = "10.0.0.0:80,10.0.0.1:80",
	  .only_remote = true },
	{ .name = "iTP: Cluster, eTP: Local, with terminating endpoints", .etp_local = true,
	  .node_port = 8080,
	  .eps = { { "10.0.0.0:80", R }, { "10.0.0.1:80", L }, { "10.0.0.2:80", S, T, L },
		   { "10.0.0.3:80", S, T } },
	  .cluster = "10.0.0.0:80", .local = "10.0.0.2:80", .all = "10.0.0.0:80,10.0.0.2:80" },
	{ .name = "externalTrafficPolicy ignored if not externally accessible", .etp_local = true,
	  .eps = { { "10.0.0.0:80", R }, { "10.0.0.1:80", R, L } },
	  .cluster = "10.0.0.0:80,10.0.0.1:80", .all = "10.0.0.0:80,10.0.0.1:80" },
	{ .name = "no cluster endpoints for iTP:Local internal-only service", .itp_local = true,
	  .eps = { { "10.0.0.0:80", R }, { "10.0.0.1:80", R, L } },
	  .local = "10.0.0.1:80", .all = "10.0.0.1:80" },
	/* kube-proxy's PreferSameNode rows (node-1 in zone-a), checked against
	 * the copy of its table in Antrea's vendored kube-proxy tests (the
	 * upstream file with these rows was not at hand).  Its row
	 * "PreferSameNode falls back to same-zone when feature gate disabled"
	 * has no counterpart: the gate is locked on since 1.35. */
	{ .name = "PreferSameNode available", .node = "node-1", .zone = "zone-a",
	  .eps = SAME_NODE_EPS, .cluster = "10.1.2.3:80" },
	{ .name = "PreferSameNode ignored if some endpoints unhinted", .node = "node-1",
	  .zone = "zone-a",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), N("node-1"), R }, { "10.1.2.4:80", R },
		   { "10.1.2.5:80", Z("zone-c"), N("node-3"), R },
		   { "10.1.2.6:80", Z("zone-a"), N("node-4"), R } },
	  .cluster = "10.1.2.3:80,10.1.2.4:80,10.1.2.5:80,10.1.2.6:80" },
	{ .name = "PreferSameNode falls back to PreferSameZone if no endpoint for node",
	  .node = "node-0", .zone = "zone-a", .eps = SAME_NODE_EPS,
	  .cluster = "10.1.2.3:80,10.1.2.6:80" },
	/* --- svcnat: node hints with the rest --- */
	{ .name = "svcnat: one endpoint with a zone hint but no node hint: zone hints used",
	  .node = "node-1", .zone = "zone-a",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), N("node-1"), R },
		   { "10.1.2.4:80", Z("zone-b"), N("node-2"), R }, { "10.1.2.5:80", Z("zone-c"), R },
		   { "10.1.2.6:80", Z("zone-a"), N("node-4"), R } },
	  .cluster = "10.1.2.3:80,10.1.2.6:80" },
	{ .name = "svcnat: node hints without zone hints, node without zone label",
	  .node = "node-1",
	  .eps = { { "10.1.2.3:80", N("node-1"), R }, { "10.1.2.4:80", N("node-2"), R } },
	  .cluster = "10.1.2.3:80" },
	{ .name = "svcnat: node hints only, none for this node: every endpoint", .node = "node-0",
	  .zone = "zone-a",
	  .eps = { { "10.1.2.3:80", N("node-1"), R }, { "10.1.2.4:80", N("node-2"), R } },
	  .cluster = "10.1.2.3:80,10.1.2.4:80" },
	{ .name = "svcnat: an endpoint hinted for several nodes", .node = "node-2", .zone = "zone-a",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), N("node-1", "node-2"), R },
		   { "10.1.2.4:80", Z("zone-a"), N("node-2"), R },
		   { "10.1.2.5:80", Z("zone-b"), N("node-3"), R } },
	  .cluster = "10.1.2.3:80,10.1.2.4:80" },
	{ .name = "svcnat: this node's endpoint not ready: its hint does not count", .node = "node-1",
	  .zone = "zone-a",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), N("node-1") }, { "10.1.2.4:80", Z("zone-b"), N("node-2"), R },
		   { "10.1.2.6:80", Z("zone-a"), N("node-4"), R } },
	  .cluster = "10.1.2.6:80" },
	{ .name = "svcnat: an unready endpoint without hints does not turn node hints off",
	  .node = "node-1", .zone = "zone-a",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), N("node-1"), R }, { "10.1.2.4:80" },
		   { "10.1.2.6:80", Z("zone-a"), N("node-4"), R } },
	  .cluster = "10.1.2.3:80" },
	{ .name = "svcnat: no ready endpoint: terminating ones, hints ignored", .node = "node-1",
	  .zone = "zone-a",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), N("node-1"), S, T },
		   { "10.1.2.4:80", Z("zone-b"), N("node-2"), S, T } },
	  .cluster = "10.1.2.3:80,10.1.2.4:80" },
	{ .name = "svcnat: eTP Local with node hints: Local takes every local endpoint",
	  .node = "node-1", .zone = "zone-a", .etp_local = true, .node_port = 8080,
	  .eps = { { "10.1.2.3:80", Z("zone-a"), N("node-1"), R, L },
		   { "10.1.2.4:80", Z("zone-a"), N("node-2"), R, L },
		   { "10.1.2.6:80", Z("zone-a"), N("node-4"), R } },
	  .cluster = "10.1.2.3:80", .local = "10.1.2.3:80,10.1.2.4:80",
	  .all = "10.1.2.3:80,10.1.2.4:80" },
	{ .name = "svcnat: iTP Local with node hints: hints only for external traffic",
	  .node = "node-1", .zone = "zone-a", .itp_local = true, .node_port = 8080,
	  .eps = { { "10.1.2.3:80", Z("zone-a"), N("node-1"), R, L },
		   { "10.1.2.4:80", Z("zone-a"), N("node-2"), R, L },
		   { "10.1.2.6:80", Z("zone-a"), N("node-4"), R } },
	  .cluster = "10.1.2.3:80", .local = "10.1.2.3:80,10.1.2.4:80",
	  .all = "10.1.2.3:80,10.1.2.4:80" },
	/* Each family decides alone, as each kube-proxy proxier does: one
	 * unhinted IPv6 endpoint leaves IPv6 unfiltered, IPv4 keeps its hints. */
	{ .name = "svcnat: dual-stack, IPv4 plan: its endpoints all hinted", .node = "node-1",
	  .zone = "zone-a",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), N("node-1"), R }, { "10.1.2.4:80", Z("zone-a"), N("node-2"), R },
		   { "[2001:2::3]:80", Z("zone-a"), N("node-1"), R }, { "[2001:2::4]:80", R } },
	  .cluster = "10.1.2.3:80" },
	{ .name = "svcnat: dual-stack, IPv6 plan: one unhinted endpoint", .family = AF_INET6,
	  .node = "node-1", .zone = "zone-a",
	  .eps = { { "10.1.2.3:80", Z("zone-a"), N("node-1"), R }, { "10.1.2.4:80", Z("zone-a"), N("node-2"), R },
		   { "[2001:2::3]:80", Z("zone-a"), N("node-1"), R }, { "[2001:2::4]:80", R } },
	  .cluster = "[2001:2::3]:80,[2001:2::4]:80" },
};

/* ---------------------------------------------------------------------- */

struct plan_in {
	struct svc_port port;
	struct endpoint eps[MAX_ROW_EPS];
	char *strs[MAX_ROW_EPS][2 * MAX_LIST];
	struct ipaddr cip[2], node_ip[2];
};

static size_t list_len(const char *const *v)
{
	size_t n = 0;

	while (n < MAX_LIST && v[n])
		n++;
	return n;
}

/* One row's service port: ClusterIP 172.30.0.41:80/TCP, or NodePort. */
static void build(const struct row *rw, struct plan_in *in)
{
	struct svc_port *p = &in->port;

	memset(in, 0, sizeof(*in));
	assert_int_equal(ipaddr_parse("172.30.0.41", &in->cip[0]), 0);
	assert_int_equal(ipaddr_parse("2001:2:0:f000::41", &in->cip[1]), 0);
	p->ns = "ns1";
	p->name = "svc1";
	p->port_name = "p80";
	p->key = "ns1/svc1:p80";
	p->protocol = PROTO_TCP;
	p->type = rw->node_port ? SVC_NODE_PORT : SVC_CLUSTER_IP;
	p->port = 80;
	p->node_port = rw->node_port;
	p->cluster_ips = in->cip;
	p->n_cluster_ips = 2;
	p->ext_policy = rw->etp_local ? POLICY_LOCAL : POLICY_CLUSTER;
	p->int_policy = rw->itp_local ? POLICY_LOCAL : POLICY_CLUSTER;
	p->endpoints = in->eps;
	for (size_t i = 0; i < MAX_ROW_EPS && rw->eps[i].ep; i++) {
		const struct row_ep *re = &rw->eps[i];
		struct endpoint *e = &in->eps[p->n_endpoints++];
		char addr[64], *colon;

		snprintf(addr, sizeof(addr), "%s", re->ep);
		colon = strrchr(addr, ':');
		assert_non_null(colon);
		*colon = '\0';
		if (colon[-1] == ']')
			colon[-1] = '\0';
		assert_int_equal(ipaddr_parse(addr[0] == '[' ? addr + 1 : addr, &e->addr), 0);
		e->port = (uint16_t)atoi(colon + 1);
		e->ready = re->ready;
		e->serving = re->serving;
		e->terminating = re->terminating;
		e->is_local = re->local;
		e->n_hint_zones = list_len(re->zones);
		e->n_hint_nodes = list_len(re->nodes);
		e->hint_zones = (char **)re->zones;
		e->hint_nodes = (char **)re->nodes;
		e->has_hints = e->n_hint_zones || e->n_hint_nodes;
	}
}

static char *plan_text(const struct row *rw, struct plan_in *in)
{
	struct desired d = { .ports = &in->port, .n_ports = 1 };
	struct plan_settings s;
	struct ruleset *rs = NULL;
	struct diag_list diags;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	plan_settings_init(&s);
	s.family = rw->family ? rw->family : AF_INET;
	s.dual_stack = true;
	s.hostname = rw->node ? rw->node : "";
	s.zone = rw->zone;
	assert_int_equal(ipaddr_parse("192.168.0.2", &in->node_ip[0]), 0);
	assert_int_equal(ipaddr_parse("2001:2::2", &in->node_ip[1]), 0);
	s.node_ips = in->node_ip;
	s.n_node_ips = 2;
	s.local_addrs = in->node_ip;
	s.n_local_addrs = 2;
	diag_list_init(&diags);
	assert_int_equal(plan_build(&d, &s, &rs, NULL, &diags), 0);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(render_save(rs, RENDER_ALL, f), 0);
	assert_int_equal(fclose(f), 0);
	ruleset_free(rs);
	diag_list_done(&diags);
	return buf;
}

/* The word after `key ` in line, into out. */
static bool word_after(const char *line, const char *key, char *out, size_t n)
{
	const char *p = strstr(line, key);
	size_t k;

	if (!p)
		return false;
	p += strlen(key);
	k = strcspn(p, " \n");
	if (k >= n)
		return false;
	memcpy(out, p, k);
	out[k] = '\0';
	return true;
}

struct sets {
	char sep[16][64], dst[16][64];   /* KUBE-SEP- chain -> its DNAT destination */
	size_t n_sep;
	char cluster[256], local[256], all[256];
	bool has_any;
};

static const char *dst_of(const struct sets *st, const char *sep)
{
	for (size_t i = 0; i < st->n_sep; i++)
		if (streq(st->sep[i], sep))
			return st->dst[i];
	fail_msg("no DNAT in %s", sep);
	return "";
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, comma-separated. */
static void set_add(char *set, size_t n, const char *v)
{
	char tmp[256], *items[16], *save = NULL;
	size_t k = 0;

	snprintf(tmp, sizeof(tmp), "%s%s%s", set, *set ? "," : "", v);
	for (char *t = strtok_r(tmp, ",", &save); t && k < 16; t = strtok_r(NULL, ",", &save))
		items[k++] = t;
	qsort(items, k, sizeof(*items), str_cmp);
	set[0] = '\0';
	for (size_t i = 0; i < k; i++)
		snprintf(set + strlen(set), n - strlen(set), "%s%s", i ? "," : "", items[i]);
}

static void read_sets(const char *text, struct sets *st)
{
	char *copy = strdup(text), *save = NULL, w[64];

	assert_non_null(copy);
	memset(st, 0, sizeof(*st));
	st->has_any = !strstr(text, " has no endpoints\"");
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (strncmp(l, "-A KUBE-SEP-", 12) == 0 && word_after(l, "--to-destination ", w, sizeof(w))) {
			assert_true(st->n_sep < 16);
			assert_true(word_after(l, "-A ", st->sep[st->n_sep], sizeof(st->sep[0])));
			snprintf(st->dst[st->n_sep++], sizeof(st->dst[0]), "%s", w);
			set_add(st->all, sizeof(st->all), w);
		}
	free(copy);
	copy = strdup(text);
	assert_non_null(copy);
	save = NULL;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *set = strncmp(l, "-A KUBE-SVC-", 12) == 0 ? st->cluster :
			    strncmp(l, "-A KUBE-SVL-", 12) == 0 ? st->local : NULL;

		if (set && word_after(l, "-j ", w, sizeof(w)) && strncmp(w, "KUBE-SEP-", 9) == 0)
			set_add(set, sizeof(st->cluster), dst_of(st, w));
	}
	free(copy);
}

static void expect_set(const char *row, const char *what, const char *got, const char *want)
{
	if (!streq(got, want ? want : ""))
		fail_msg("%s: %s endpoints: got {%s}, want {%s}", row, what, got, want ? want : "");
}

static void test_categorize_endpoints(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		const struct row *rw = &rows[i];
		const char *all = rw->all;
		struct plan_in in;
		struct sets st;
		char *text;
		bool has_any;

		build(rw, &in);
		text = plan_text(rw, &in);
		read_sets(text, &st);
		/* kube-proxy's rule for a row without allEndpoints */
		if (!all)
			all = rw->cluster && !rw->local ? rw->cluster : rw->local;
		expect_set(rw->name, "cluster", st.cluster, rw->cluster);
		expect_set(rw->name, "local", st.local, rw->local);
		expect_set(rw->name, "all", st.all, all);
		has_any = (all && *all) || rw->only_remote;
		if (st.has_any != has_any)
			fail_msg("%s: hasAnyEndpoints: got %d, want %d", rw->name, st.has_any, has_any);
		print_message("ok: %s\n", rw->name);
		free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_categorize_endpoints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
