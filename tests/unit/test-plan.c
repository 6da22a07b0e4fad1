/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the rule planner: chain-name hashes, exact rule lists for
 * small cases (kube-proxy's own TestOverallIPTablesRules among them), and
 * packet flows through the planned rules with the test tracer, modelled on
 * kube-proxy's packet-flow tests (proxier_test.go).
 *
 * Addresses are kube-proxy's test addresses (never on the wire): node IP
 * 192.168.0.2, cluster CIDR 10.0.0.0/8, endpoints 10.180.x.y, cluster IPs
 * 172.30.x.y, external clients 203.0.113.x.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/chainname.h"
#include "core/diag.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/render.h"
#include "core/ruleset.h"
#include "tracer/tracer.h"
#include "util.h"

#define NODE_IP "192.168.0.2"
#define POD_CIDR "10.0.0.0/8"
#define MAX_PORTS 64
#define MAX_EPS 64

/* ---------------------------------------------------------------------- */
/* Fixture: a desired state built by hand, freed as a whole.               */

struct fx {
	struct desired d;
	size_t cap_ports;
	void **allocs;
	size_t n_allocs;
	size_t cap_allocs;
	struct plan_settings s;
	struct ipaddr node_ips[4];
	struct ipaddr local_addrs[8];
	struct ipnet cidrs[4];
	struct ipnet np_addrs[4];
	struct ruleset *rs;
	struct diag_list diags;
	struct plan_stats stats;
};

static void *fx_track(struct fx *f, void *p)
{
	if (!p)
		fail_msg("out of memory in test fixture");
	if (f->n_allocs == f->cap_allocs) {
		size_t ncap = f->cap_allocs ? 2 * f->cap_allocs : 64;
		void **n = realloc(f->allocs, ncap * sizeof(*n));

		if (!n)
			fail_msg("out of memory in test fixture");
		f->allocs = n;
		f->cap_allocs = ncap;
	}
	f->allocs[f->n_allocs++] = p;
	return p;
}

static void *fx_alloc(struct fx *f, size_t n, size_t sz)
{
	return fx_track(f, calloc(n ? n : 1, sz));
}

static char *fx_str(struct fx *f, const char *s)
{
	return fx_track(f, strdup(s));
}

static struct ipaddr ip(const char *s)
{
	struct ipaddr a;

	if (ipaddr_parse(s, &a) < 0)
		fail_msg("bad test address %s", s);
	return a;
}

static struct ipnet net(const char *s)
{
	struct ipnet n;

	if (ipnet_parse(s, &n) < 0)
		fail_msg("bad test CIDR %s", s);
	return n;
}

static struct fx *fx_new(void)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		fail_msg("out of memory");
	f->cap_ports = MAX_PORTS;
	f->d.ports = fx_alloc(f, f->cap_ports, sizeof(*f->d.ports));
	plan_settings_init(&f->s);
	f->s.hostname = "test-hostname";
	f->node_ips[0] = ip(NODE_IP);
	f->s.node_ips = f->node_ips;
	f->s.n_node_ips = 1;
	f->local_addrs[0] = ip(NODE_IP);
	f->s.local_addrs = f->local_addrs;
	f->s.n_local_addrs = 1;
	f->cidrs[0] = net(POD_CIDR);
	f->s.cluster_cidrs = f->cidrs;
	f->s.n_cluster_cidrs = 1;
	diag_list_init(&f->diags);
	return f;
}

static int fx_setup(void **state)
{
	*state = fx_new();
	return 0;
}

/* The flow tests run three times: kube-proxy's linear chains, the tree
 * with its default leaves (32), and the tree split down to one rule a leaf. */
static int fx_setup_linear(void **state)
{
	struct fx *f = fx_new();

	f->s.dispatch = DISPATCH_LINEAR;
	*state = f;
	return 0;
}

static int fx_setup_tree(void **state)
{
	struct fx *f = fx_new();

	f->s.dispatch = DISPATCH_TREE;
	*state = f;
	return 0;
}

static int fx_setup_tree1(void **state)
{
	struct fx *f = fx_new();

	f->s.dispatch = DISPATCH_TREE;
	f->s.dispatch_leaf_max = 1;
	*state = f;
	return 0;
}

static void fx_free(struct fx *f)
{
	if (!f)
		return;
	ruleset_free(f->rs);
	diag_list_done(&f->diags);
	for (size_t i = 0; i < f->n_allocs; i++)
		free(f->allocs[i]);
	free(f->allocs);
	free(f);
}

static int fx_teardown(void **state)
{
	fx_free(*state);
	return 0;
}

static uint8_t proto_of(const char *p)
{
	if (streq(p, "tcp"))
		return PROTO_TCP;
	if (streq(p, "udp"))
		return PROTO_UDP;
	if (streq(p, "sctp"))
		return PROTO_SCTP;
	fail_msg("bad protocol %s", p);
	return 0;
}

/* A ClusterIP service port with room for MAX_EPS endpoints. */
static struct svc_port *fx_port(struct fx *f, const char *ns, const char *name, const char *pname,
				const char *proto, const char *cip, unsigned port)
{
	struct svc_port *p;
	char key[256];

	if (f->d.n_ports == f->cap_ports)
		fail_msg("too many ports in fixture");
	p = &f->d.ports[f->d.n_ports++];
	memset(p, 0, sizeof(*p));
	p->ns = fx_str(f, ns);
	p->name = fx_str(f, name);
	p->port_name = fx_str(f, pname);
	if (pname[0])
		snprintf(key, sizeof(key), "%s/%s:%s", ns, name, pname);
	else
		snprintf(key, sizeof(key), "%s/%s", ns, name);
	p->key = fx_str(f, key);
	p->protocol = proto_of(proto);
	p->type = SVC_CLUSTER_IP;
	p->port = (uint16_t)port;
	p->affinity_timeout = 10800;
	if (cip) {
		p->cluster_ips = fx_alloc(f, 1, sizeof(*p->cluster_ips));
		p->cluster_ips[0] = ip(cip);
		p->n_cluster_ips = 1;
	}
	p->endpoints = fx_alloc(f, MAX_EPS, sizeof(*p->endpoints));
	return p;
}

static size_t csv_count(const char *csv)
{
	size_t n = 1;

	for (const char *c = csv; *c; c++)
		n += *c == ',';
	return n;
}

/* Comma-separated addresses into a fixture-owned array. */
static void fx_ips(struct fx *f, struct ipaddr **arr, size_t *n, const char *csv)
{
	char buf[512], *save = NULL;

	*arr = fx_alloc(f, csv_count(csv), sizeof(**arr));
	*n = 0;
	snprintf(buf, sizeof(buf), "%s", csv);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		(*arr)[(*n)++] = ip(t);
}

static void fx_nets(struct fx *f, struct ipnet **arr, size_t *n, const char *csv)
{
	char buf[512], *save = NULL;

	*arr = fx_alloc(f, csv_count(csv), sizeof(**arr));
	*n = 0;
	snprintf(buf, sizeof(buf), "%s", csv);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		(*arr)[(*n)++] = net(t);
}

enum {
	EP_READY = 1 << 0,    /* ready and serving */
	EP_TERM = 1 << 1,     /* terminating and serving */
	EP_TERM_NS = 1 << 2,  /* terminating, not serving */
	EP_LOCAL = 1 << 3,    /* on this node */
	EP_NOTREADY = 1 << 4, /* not ready, not serving, not terminating */
};

static struct endpoint *fx_ep(struct fx *f, struct svc_port *p, const char *addr, unsigned port,
			      unsigned flags)
{
	struct endpoint *e;

	if (p->n_endpoints == MAX_EPS)
		fail_msg("too many endpoints in fixture");
	e = &p->endpoints[p->n_endpoints++];
	memset(e, 0, sizeof(*e));
	e->addr = ip(addr);
	e->port = (uint16_t)port;
	e->ready = flags & EP_READY;
	e->serving = flags & (EP_READY | EP_TERM);
	e->terminating = flags & (EP_TERM | EP_TERM_NS);
	e->is_local = flags & EP_LOCAL;
	e->node_name = fx_str(f, e->is_local ? "test-hostname" : "other-node");
	return e;
}

static void fx_hints(struct fx *f, struct endpoint *e, const char *csv)
{
	char buf[256], *save = NULL;

	e->has_hints = true;
	e->hint_zones = fx_alloc(f, csv_count(csv), sizeof(char *));
	e->n_hint_zones = 0;
	snprintf(buf, sizeof(buf), "%s", csv);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		e->hint_zones[e->n_hint_zones++] = fx_str(f, t);
}

static int port_cmp(const void *a, const void *b)
{
	const struct svc_port *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : (int)x->protocol - (int)y->protocol;
}

static void fx_plan(struct fx *f)
{
	int r;

	qsort(f->d.ports, f->d.n_ports, sizeof(*f->d.ports), port_cmp);
	ruleset_free(f->rs);
	f->rs = NULL;
	r = plan_build(&f->d, &f->s, &f->rs, &f->stats, &f->diags);
	assert_int_equal(r, 0);
	assert_non_null(f->rs);
}

/* ---------------------------------------------------------------------- */
/* Text of the planned rules: ":CHAIN" lines, then "-A CHAIN args" lines,   */
/* both in ruleset order (iptables-save's).                                 */

struct sbuf {
	char *p;
	size_t n, cap;
};

static void sb_add(struct sbuf *b, const char *s, size_t len)
{
	if (b->n + len + 1 > b->cap) {
		size_t ncap = b->cap ? b->cap : 4096;
		char *np;

		while (ncap < b->n + len + 1)
			ncap *= 2;
		np = realloc(b->p, ncap);
		if (!np)
			fail_msg("out of memory");
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static void sb_rule(struct sbuf *b, const struct rs_chain *c, const struct rs_rule *r)
{
	char buf[1024];
	int n = render_rule(r, buf, sizeof(buf));

	assert_true(n >= 0 && (size_t)n < sizeof(buf));
	sb_str(b, "-A ");
	sb_str(b, c->name);
	if (n > 0) {
		sb_str(b, " ");
		sb_str(b, buf);
	}
	sb_str(b, "\n");
}

static char *chain_text(const struct rs_chain *c)
{
	struct sbuf b = { 0 };

	sb_str(&b, "");
	for (size_t i = 0; i < c->n_rules; i++)
		sb_rule(&b, c, &c->rules[i]);
	return b.p;
}

static char *table_text(const struct ruleset *rs, enum rs_table t)
{
	const struct rs_chains *cs = &rs->t[t];
	struct sbuf b = { 0 };

	sb_str(&b, "");
	for (size_t i = 0; i < cs->n; i++) {
		sb_str(&b, ":");
		sb_str(&b, cs->chains[i]->name);
		sb_str(&b, "\n");
	}
	for (size_t i = 0; i < cs->n; i++)
		for (size_t k = 0; k < cs->chains[i]->n_rules; k++)
			sb_rule(&b, cs->chains[i], &cs->chains[i]->rules[k]);
	return b.p;
}

/* Line-wise comparison that names the first differing line. */
static void expect_text(const char *what, const char *got, const char *want)
{
	const char *g = got, *w = want;
	unsigned line = 1;

	if (streq(got, want))
		return;
	while (*g && *w) {
		size_t gl = strcspn(g, "\n"), wl = strcspn(w, "\n");

		if (gl != wl || memcmp(g, w, gl) != 0) {
			print_error("%s: line %u differs\n  got:  %.*s\n  want: %.*s\n", what, line,
				    (int)gl, g, (int)wl, w);
			break;
		}
		g += gl + (g[gl] == '\n');
		w += wl + (w[wl] == '\n');
		line++;
	}
	print_error("---- got (%s) ----\n%s---- want ----\n%s", what, got, want);
	fail();
}

static void expect_table(const struct ruleset *rs, enum rs_table t, const char *want)
{
	char *got = table_text(rs, t);

	expect_text(rs_table_name(t), got, want);
	free(got);
}

static void expect_chain(const struct ruleset *rs, enum rs_table t, const char *name,
			 const char *want)
{
	const struct rs_chain *c = ruleset_find_chain(rs, t, name);
	char *got;

	if (!c)
		fail_msg("chain %s %s missing", rs_table_name(t), name);
	got = chain_text(c);
	expect_text(name, got, want);
	free(got);
}

/* want (one "-A ..." line) is one of the chain's rules. */
static void expect_rule_in(const struct ruleset *rs, enum rs_table t, const char *name,
			   const char *want)
{
	const struct rs_chain *c = ruleset_find_chain(rs, t, name);
	char *got;

	if (!c)
		fail_msg("chain %s %s missing", rs_table_name(t), name);
	got = chain_text(c);
	if (!strstr(got, want))
		fail_msg("%s: no rule\n  %s in\n%s", name, want, got);
	free(got);
}

static void expect_no_chain(const struct ruleset *rs, enum rs_table t, const char *name)
{
	if (ruleset_find_chain(rs, t, name))
		fail_msg("chain %s %s should not exist", rs_table_name(t), name);
}

static bool has_prefix_chain(const struct ruleset *rs, const char *prefix)
{
	for (int t = 0; t < RS_NTABLES; t++)
		for (size_t i = 0; i < rs->t[t].n; i++)
			if (!strncmp(rs->t[t].chains[i]->name, prefix, strlen(prefix)))
				return true;
	return false;
}

/* ---------------------------------------------------------------------- */
/* Chain names                                                             */

static void test_chain_hash(void **state)
{
	/* Reference values: kube-proxy's test expectations (first three and
	 * its TestOverallIPTablesRules), the rest computed outside the test
	 * as base64.b32encode(hashlib.sha256(s).digest())[:16]. */
	static const struct {
		const char *svc, *proto, *ep, *hash;
	} cases[] = {
		{ "ns1/svc1:p80", "tcp", NULL, "XPGD46QRK7WJZT7O" },
		{ "ns2/svc2:p80", "tcp", NULL, "GNZBNJ2PO5MGZ6GT" },
		{ "ns1/svc1:p80", "tcp", "10.180.0.1:80", "SXIVWICOYRO3J4NJ" },
		{ "ns5/svc5:p80", "tcp", NULL, "NUKIZ6OKUXPJNT4C" },
		{ "ns4/svc4:p80", "tcp", "10.180.0.5:80", "C6EBXVWJJZMIWKLZ" },
		{ "ns5/svc5:p80", "tcp", "10.180.0.3:80", "I77PXRDZVX7PMWMN" },
		/* the API server and DNS services: these names also appear in
		 * real clusters' iptables-save output */
		{ "default/kubernetes:https", "tcp", NULL, "NPX46M4PTMTKRN6Y" },
		{ "kube-system/kube-dns:dns", "udp", NULL, "TCOU7JCQXEZGVUNU" },
		/* unnamed port: "ns/svc" + "sctp" */
		{ "ns/svc", "sctp", NULL, "SKXTEDVHENCWGKPG" },
		/* IPv6 endpoint "[fd00::1]:8080" */
		{ "ns/svc:http", "tcp", "[fd00::1]:8080", "JMFX2HTYRYTW5YSU" },
		/* kube-proxy's TestEnableLocalhostNodePortsIPv6 endpoints */
		{ "ns1/svc1:p80", "tcp", "[ff06::c1]:80", "LIGRYQQLSZN4UWQ5" },
		{ "ns1/svc1:p80", "tcp", "[ff06::c2]:80", "XJJ5QXWGJG344QDZ" },
	};
	char h[CHAIN_HASH_LEN + 1], name[RS_CHAIN_MAXLEN + 1];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		chain_hash(cases[i].svc, cases[i].proto, cases[i].ep, h);
		assert_string_equal(h, cases[i].hash);
	}
	chain_name("KUBE-SVC-", "ns1/svc1:p80", "tcp", NULL, name);
	assert_string_equal(name, "KUBE-SVC-XPGD46QRK7WJZT7O");
	chain_name("KUBE-SEP-", "ns1/svc1:p80", "tcp", "10.180.0.1:80", name);
	assert_string_equal(name, "KUBE-SEP-SXIVWICOYRO3J4NJ");
	chain_name("KUBE-FW-", "ns5/svc5:p80", "tcp", NULL, name);
	assert_string_equal(name, "KUBE-FW-NUKIZ6OKUXPJNT4C");
	/* A prefix that would not fit is refused, not truncated. */
	chain_name("KUBE-A-VERY-LONG-PREFIX-", "ns", "tcp", NULL, name);
	assert_string_equal(name, "");
}

/* ---------------------------------------------------------------------- */
/* Exact rule lists                                                        */

/* The services of kube-proxy's TestOverallIPTablesRules. */
static void build_overall(struct fx *f)
{
	struct svc_port *p;

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);

	/* LoadBalancer, Local policy; its endpoint is not on this node. */
	p = fx_port(f, "ns2", "svc2", "p80", "tcp", "172.30.0.42", 80);
	p->type = SVC_LOAD_BALANCER;
	p->ext_policy = POLICY_LOCAL;
	p->node_port = 3001;
	fx_ips(f, &p->lb_ips, &p->n_lb_ips, "1.2.3.4");
	fx_ips(f, &p->external_ips, &p->n_external_ips, "192.168.99.22");
	p->health_check_node_port = 30000;
	fx_ep(f, p, "10.180.0.2", 80, EP_READY);

	p = fx_port(f, "ns3", "svc3", "p80", "tcp", "172.30.0.43", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3003;
	fx_ep(f, p, "10.180.0.3", 80, EP_READY);

	p = fx_port(f, "ns4", "svc4", "p80", "tcp", "172.30.0.44", 80);
	p->type = SVC_NODE_PORT;
	fx_ips(f, &p->external_ips, &p->n_external_ips, "192.168.99.33");
	fx_ep(f, p, "10.180.0.4", 80, EP_READY);
	fx_ep(f, p, "10.180.0.5", 80, EP_READY | EP_LOCAL);

	/* LoadBalancer, Cluster policy, source ranges, session affinity; the
	 * health check port is ignored with Cluster policy. */
	p = fx_port(f, "ns5", "svc5", "p80", "tcp", "172.30.0.45", 80);
	p->type = SVC_LOAD_BALANCER;
	p->node_port = 3002;
	fx_ips(f, &p->lb_ips, &p->n_lb_ips, "5.6.7.8");
	p->health_check_node_port = 30000;
	fx_nets(f, &p->lb_source_ranges, &p->n_lb_source_ranges, " 203.0.113.0/25");
	p->affinity_client_ip = true;
	p->affinity_timeout = 10800;
	fx_ep(f, p, "10.180.0.3", 80, EP_READY);

	/* No endpoints. */
	fx_port(f, "ns6", "svc6", "p80", "tcp", "172.30.0.46", 80);
}

static const char overall_filter[] =
	":INPUT\n"
	":FORWARD\n"
	":OUTPUT\n"
	":KUBE-EXTERNAL-SERVICES\n"
	":KUBE-FIREWALL\n"
	":KUBE-FORWARD\n"
	":KUBE-NODEPORTS\n"
	":KUBE-PROXY-FIREWALL\n"
	":KUBE-SERVICES\n"
	"-A INPUT -j KUBE-FIREWALL\n"
	"-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL\n"
	"-A INPUT -m comment --comment \"kubernetes health check service ports\" -j KUBE-NODEPORTS\n"
	"-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES\n"
	"-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL\n"
	"-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n"
	"-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
	"-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES\n"
	"-A OUTPUT -j KUBE-FIREWALL\n"
	"-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL\n"
	"-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
	"-A KUBE-EXTERNAL-SERVICES -d 192.168.99.22/32 -p tcp -m comment --comment \"ns2/svc2:p80 has no local endpoints\" -m tcp --dport 80 -j DROP\n"
	"-A KUBE-EXTERNAL-SERVICES -d 1.2.3.4/32 -p tcp -m comment --comment \"ns2/svc2:p80 has no local endpoints\" -m tcp --dport 80 -j DROP\n"
	"-A KUBE-EXTERNAL-SERVICES -p tcp -m comment --comment \"ns2/svc2:p80 has no local endpoints\" -m addrtype --dst-type LOCAL -m tcp --dport 3001 -j DROP\n"
	"-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment \"block incoming localnet connections\" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP\n"
	"-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP\n"
	"-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT\n"
	"-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n"
	"-A KUBE-NODEPORTS -p tcp -m comment --comment \"ns2/svc2:p80 health check node port\" -m tcp --dport 30000 -j ACCEPT\n"
	"-A KUBE-PROXY-FIREWALL -d 5.6.7.8/32 -p tcp -m comment --comment \"ns5/svc5:p80 traffic not accepted by KUBE-FW-NUKIZ6OKUXPJNT4C\" -m tcp --dport 80 -j DROP\n"
	"-A KUBE-SERVICES -d 172.30.0.46/32 -p tcp -m comment --comment \"ns6/svc6:p80 has no endpoints\" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable\n";

static const char overall_nat[] =
	":PREROUTING\n"
	":OUTPUT\n"
	":POSTROUTING\n"
	":KUBE-EXT-4SW47YFZTEDKD3PK\n"
	":KUBE-EXT-GNZBNJ2PO5MGZ6GT\n"
	":KUBE-EXT-NUKIZ6OKUXPJNT4C\n"
	":KUBE-EXT-X27LE4BHSL4DOUIK\n"
	":KUBE-FW-NUKIZ6OKUXPJNT4C\n"
	":KUBE-MARK-MASQ\n"
	":KUBE-NODEPORTS\n"
	":KUBE-POSTROUTING\n"
	":KUBE-SEP-C6EBXVWJJZMIWKLZ\n"
	":KUBE-SEP-I77PXRDZVX7PMWMN\n"
	":KUBE-SEP-OYPFS5VJICHGATKP\n"
	":KUBE-SEP-RS4RBKLTHTF2IUXJ\n"
	":KUBE-SEP-SXIVWICOYRO3J4NJ\n"
	":KUBE-SEP-UKSFD7AGPMPPLUHC\n"
	":KUBE-SERVICES\n"
	":KUBE-SVC-4SW47YFZTEDKD3PK\n"
	":KUBE-SVC-GNZBNJ2PO5MGZ6GT\n"
	":KUBE-SVC-NUKIZ6OKUXPJNT4C\n"
	":KUBE-SVC-X27LE4BHSL4DOUIK\n"
	":KUBE-SVC-XPGD46QRK7WJZT7O\n"
	"-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
	"-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
	"-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n"
	"-A KUBE-EXT-4SW47YFZTEDKD3PK -m comment --comment \"masquerade traffic for ns4/svc4:p80 external destinations\" -j KUBE-MARK-MASQ\n"
	"-A KUBE-EXT-4SW47YFZTEDKD3PK -j KUBE-SVC-4SW47YFZTEDKD3PK\n"
	"-A KUBE-EXT-GNZBNJ2PO5MGZ6GT -s 10.0.0.0/8 -m comment --comment \"pod traffic for ns2/svc2:p80 external destinations\" -j KUBE-SVC-GNZBNJ2PO5MGZ6GT\n"
	"-A KUBE-EXT-GNZBNJ2PO5MGZ6GT -m comment --comment \"masquerade LOCAL traffic for ns2/svc2:p80 external destinations\" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ\n"
	"-A KUBE-EXT-GNZBNJ2PO5MGZ6GT -m comment --comment \"route LOCAL traffic for ns2/svc2:p80 external destinations\" -m addrtype --src-type LOCAL -j KUBE-SVC-GNZBNJ2PO5MGZ6GT\n"
	"-A KUBE-EXT-NUKIZ6OKUXPJNT4C -m comment --comment \"masquerade traffic for ns5/svc5:p80 external destinations\" -j KUBE-MARK-MASQ\n"
	"-A KUBE-EXT-NUKIZ6OKUXPJNT4C -j KUBE-SVC-NUKIZ6OKUXPJNT4C\n"
	"-A KUBE-EXT-X27LE4BHSL4DOUIK -m comment --comment \"masquerade traffic for ns3/svc3:p80 external destinations\" -j KUBE-MARK-MASQ\n"
	"-A KUBE-EXT-X27LE4BHSL4DOUIK -j KUBE-SVC-X27LE4BHSL4DOUIK\n"
	"-A KUBE-FW-NUKIZ6OKUXPJNT4C -s 203.0.113.0/25 -m comment --comment \"ns5/svc5:p80 loadbalancer IP\" -j KUBE-EXT-NUKIZ6OKUXPJNT4C\n"
	"-A KUBE-FW-NUKIZ6OKUXPJNT4C -m comment --comment \"other traffic to ns5/svc5:p80 will be dropped by KUBE-PROXY-FIREWALL\"\n"
	"-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n"
	"-A KUBE-NODEPORTS -p tcp -m comment --comment \"ns2/svc2:p80\" -m tcp --dport 3001 -j KUBE-EXT-GNZBNJ2PO5MGZ6GT\n"
	"-A KUBE-NODEPORTS -p tcp -m comment --comment \"ns3/svc3:p80\" -m tcp --dport 3003 -j KUBE-EXT-X27LE4BHSL4DOUIK\n"
	"-A KUBE-NODEPORTS -p tcp -m comment --comment \"ns5/svc5:p80\" -m tcp --dport 3002 -j KUBE-EXT-NUKIZ6OKUXPJNT4C\n"
	"-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n"
	"-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0\n"
	"-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully\n"
	"-A KUBE-SEP-C6EBXVWJJZMIWKLZ -s 10.180.0.5/32 -m comment --comment \"ns4/svc4:p80\" -j KUBE-MARK-MASQ\n"
	"-A KUBE-SEP-C6EBXVWJJZMIWKLZ -p tcp -m comment --comment \"ns4/svc4:p80\" -m tcp -j DNAT --to-destination 10.180.0.5:80\n"
	"-A KUBE-SEP-I77PXRDZVX7PMWMN -s 10.180.0.3/32 -m comment --comment \"ns5/svc5:p80\" -j KUBE-MARK-MASQ\n"
	"-A KUBE-SEP-I77PXRDZVX7PMWMN -p tcp -m comment --comment \"ns5/svc5:p80\" -m recent --set --name KUBE-SEP-I77PXRDZVX7PMWMN --mask 255.255.255.255 --rsource -m tcp -j DNAT --to-destination 10.180.0.3:80\n"
	"-A KUBE-SEP-OYPFS5VJICHGATKP -s 10.180.0.3/32 -m comment --comment \"ns3/svc3:p80\" -j KUBE-MARK-MASQ\n"
	"-A KUBE-SEP-OYPFS5VJICHGATKP -p tcp -m comment --comment \"ns3/svc3:p80\" -m tcp -j DNAT --to-destination 10.180.0.3:80\n"
	"-A KUBE-SEP-RS4RBKLTHTF2IUXJ -s 10.180.0.2/32 -m comment --comment \"ns2/svc2:p80\" -j KUBE-MARK-MASQ\n"
	"-A KUBE-SEP-RS4RBKLTHTF2IUXJ -p tcp -m comment --comment \"ns2/svc2:p80\" -m tcp -j DNAT --to-destination 10.180.0.2:80\n"
	"-A KUBE-SEP-SXIVWICOYRO3J4NJ -s 10.180.0.1/32 -m comment --comment \"ns1/svc1:p80\" -j KUBE-MARK-MASQ\n"
	"-A KUBE-SEP-SXIVWICOYRO3J4NJ -p tcp -m comment --comment \"ns1/svc1:p80\" -m tcp -j DNAT --to-destination 10.180.0.1:80\n"
	"-A KUBE-SEP-UKSFD7AGPMPPLUHC -s 10.180.0.4/32 -m comment --comment \"ns4/svc4:p80\" -j KUBE-MARK-MASQ\n"
	"-A KUBE-SEP-UKSFD7AGPMPPLUHC -p tcp -m comment --comment \"ns4/svc4:p80\" -m tcp -j DNAT --to-destination 10.180.0.4:80\n"
	"-A KUBE-SERVICES -d 172.30.0.41/32 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O\n"
	"-A KUBE-SERVICES -d 172.30.0.42/32 -p tcp -m comment --comment \"ns2/svc2:p80 cluster IP\" -m tcp --dport 80 -j KUBE-SVC-GNZBNJ2PO5MGZ6GT\n"
	"-A KUBE-SERVICES -d 192.168.99.22/32 -p tcp -m comment --comment \"ns2/svc2:p80 external IP\" -m tcp --dport 80 -j KUBE-EXT-GNZBNJ2PO5MGZ6GT\n"
	"-A KUBE-SERVICES -d 1.2.3.4/32 -p tcp -m comment --comment \"ns2/svc2:p80 loadbalancer IP\" -m tcp --dport 80 -j KUBE-EXT-GNZBNJ2PO5MGZ6GT\n"
	"-A KUBE-SERVICES -d 172.30.0.43/32 -p tcp -m comment --comment \"ns3/svc3:p80 cluster IP\" -m tcp --dport 80 -j KUBE-SVC-X27LE4BHSL4DOUIK\n"
	"-A KUBE-SERVICES -d 172.30.0.44/32 -p tcp -m comment --comment \"ns4/svc4:p80 cluster IP\" -m tcp --dport 80 -j KUBE-SVC-4SW47YFZTEDKD3PK\n"
	"-A KUBE-SERVICES -d 192.168.99.33/32 -p tcp -m comment --comment \"ns4/svc4:p80 external IP\" -m tcp --dport 80 -j KUBE-EXT-4SW47YFZTEDKD3PK\n"
	"-A KUBE-SERVICES -d 172.30.0.45/32 -p tcp -m comment --comment \"ns5/svc5:p80 cluster IP\" -m tcp --dport 80 -j KUBE-SVC-NUKIZ6OKUXPJNT4C\n"
	"-A KUBE-SERVICES -d 5.6.7.8/32 -p tcp -m comment --comment \"ns5/svc5:p80 loadbalancer IP\" -m tcp --dport 80 -j KUBE-FW-NUKIZ6OKUXPJNT4C\n"
	"-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n"
	"-A KUBE-SVC-4SW47YFZTEDKD3PK ! -s 10.0.0.0/8 -d 172.30.0.44/32 -p tcp -m comment --comment \"ns4/svc4:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
	"-A KUBE-SVC-4SW47YFZTEDKD3PK -m comment --comment \"ns4/svc4:p80 -> 10.180.0.4:80\" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-UKSFD7AGPMPPLUHC\n"
	"-A KUBE-SVC-4SW47YFZTEDKD3PK -m comment --comment \"ns4/svc4:p80 -> 10.180.0.5:80\" -j KUBE-SEP-C6EBXVWJJZMIWKLZ\n"
	"-A KUBE-SVC-GNZBNJ2PO5MGZ6GT ! -s 10.0.0.0/8 -d 172.30.0.42/32 -p tcp -m comment --comment \"ns2/svc2:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
	"-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment \"ns2/svc2:p80 -> 10.180.0.2:80\" -j KUBE-SEP-RS4RBKLTHTF2IUXJ\n"
	"-A KUBE-SVC-NUKIZ6OKUXPJNT4C ! -s 10.0.0.0/8 -d 172.30.0.45/32 -p tcp -m comment --comment \"ns5/svc5:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
	"-A KUBE-SVC-NUKIZ6OKUXPJNT4C -m comment --comment \"ns5/svc5:p80 -> 10.180.0.3:80\" -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-I77PXRDZVX7PMWMN --mask 255.255.255.255 --rsource -j KUBE-SEP-I77PXRDZVX7PMWMN\n"
	"-A KUBE-SVC-NUKIZ6OKUXPJNT4C -m comment --comment \"ns5/svc5:p80 -> 10.180.0.3:80\" -j KUBE-SEP-I77PXRDZVX7PMWMN\n"
	"-A KUBE-SVC-X27LE4BHSL4DOUIK ! -s 10.0.0.0/8 -d 172.30.0.43/32 -p tcp -m comment --comment \"ns3/svc3:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
	"-A KUBE-SVC-X27LE4BHSL4DOUIK -m comment --comment \"ns3/svc3:p80 -> 10.180.0.3:80\" -j KUBE-SEP-OYPFS5VJICHGATKP\n"
	"-A KUBE-SVC-XPGD46QRK7WJZT7O ! -s 10.0.0.0/8 -d 172.30.0.41/32 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
	"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.1:80\" -j KUBE-SEP-SXIVWICOYRO3J4NJ\n";

/* kube-proxy's TestOverallIPTablesRules, rule for rule (less its nfacct
 * matches), plus the jump rules kube-proxy installs in the built-ins. */
static void test_overall(void **state)
{
	struct fx *f = *state;

	build_overall(f);
	fx_plan(f);
	expect_table(f->rs, RS_FILTER, overall_filter);
	expect_table(f->rs, RS_NAT, overall_nat);
	assert_int_equal(f->stats.services, 6);
	assert_int_equal(f->stats.endpoints, 6);
	assert_int_equal(f->stats.rules, ruleset_count_rules(f->rs));
	assert_int_equal(f->stats.chains, ruleset_count_chains(f->rs));
	assert_int_equal(diag_count(&f->diags, DIAG_NOTE), 0);
}

/* Endpoints are spread in kube-proxy's order (by "ip:port" as a string),
 * with probabilities 1/3, 1/2, rest; ClientIP affinity checks come first. */
static void test_exact_affinity_three_endpoints(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	p->affinity_client_ip = true;
	p->affinity_timeout = 300;
	fx_ep(f, p, "10.180.0.2", 80, EP_READY);
	fx_ep(f, p, "10.180.0.3", 80, EP_READY);
	fx_ep(f, p, "10.180.0.10", 80, EP_READY);
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-XPGD46QRK7WJZT7O",
		"-A KUBE-SVC-XPGD46QRK7WJZT7O ! -s 10.0.0.0/8 -d 172.30.0.41/32 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.10:80\" -m recent --rcheck --seconds 300 --reap --name KUBE-SEP-A6IB6ZRNSXM7OKSA --mask 255.255.255.255 --rsource -j KUBE-SEP-A6IB6ZRNSXM7OKSA\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.2:80\" -m recent --rcheck --seconds 300 --reap --name KUBE-SEP-LXVODXWDISEETFEF --mask 255.255.255.255 --rsource -j KUBE-SEP-LXVODXWDISEETFEF\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.3:80\" -m recent --rcheck --seconds 300 --reap --name KUBE-SEP-ICDUIKC33SFI6ZPR --mask 255.255.255.255 --rsource -j KUBE-SEP-ICDUIKC33SFI6ZPR\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.10:80\" -m statistic --mode random --probability 0.3333333333 -j KUBE-SEP-A6IB6ZRNSXM7OKSA\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.2:80\" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-LXVODXWDISEETFEF\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.3:80\" -j KUBE-SEP-ICDUIKC33SFI6ZPR\n");
	expect_chain(f->rs, RS_NAT, "KUBE-SEP-LXVODXWDISEETFEF",
		"-A KUBE-SEP-LXVODXWDISEETFEF -s 10.180.0.2/32 -m comment --comment \"ns1/svc1:p80\" -j KUBE-MARK-MASQ\n"
		"-A KUBE-SEP-LXVODXWDISEETFEF -p tcp -m comment --comment \"ns1/svc1:p80\" -m recent --set --name KUBE-SEP-LXVODXWDISEETFEF --mask 255.255.255.255 --rsource -m tcp -j DNAT --to-destination 10.180.0.2:80\n");
	/* The double is kept as computed, 1/(n-i). */
	{
		const struct rs_chain *c = ruleset_find_chain(f->rs, RS_NAT, "KUBE-SVC-XPGD46QRK7WJZT7O");

		assert_int_equal(c->rules[4].m[1].kind, RS_M_STATISTIC);
		assert_true(c->rules[4].m[1].u.stat.probability == 1.0 / 3.0);
		assert_true(c->rules[5].m[1].u.stat.probability == 1.0 / 2.0);
	}
}

/* No --cluster-cidr: no local-traffic detector, so no masquerade rule in
 * the service chain and no pod short-circuit in KUBE-EXT-. */
static void test_exact_no_cluster_cidr(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	f->s.n_cluster_cidrs = 0;
	p = fx_port(f, "ns2", "svc2", "p80", "tcp", "172.30.0.42", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3001;
	p->ext_policy = POLICY_LOCAL;
	fx_ep(f, p, "10.180.0.2", 80, EP_READY | EP_LOCAL);
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-GNZBNJ2PO5MGZ6GT",
		"-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment \"ns2/svc2:p80 -> 10.180.0.2:80\" -j KUBE-SEP-RS4RBKLTHTF2IUXJ\n");
	expect_chain(f->rs, RS_NAT, "KUBE-SVL-GNZBNJ2PO5MGZ6GT",
		"-A KUBE-SVL-GNZBNJ2PO5MGZ6GT -m comment --comment \"ns2/svc2:p80 -> 10.180.0.2:80\" -j KUBE-SEP-RS4RBKLTHTF2IUXJ\n");
	expect_chain(f->rs, RS_NAT, "KUBE-EXT-GNZBNJ2PO5MGZ6GT",
		"-A KUBE-EXT-GNZBNJ2PO5MGZ6GT -m comment --comment \"masquerade LOCAL traffic for ns2/svc2:p80 external destinations\" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ\n"
		"-A KUBE-EXT-GNZBNJ2PO5MGZ6GT -m comment --comment \"route LOCAL traffic for ns2/svc2:p80 external destinations\" -m addrtype --src-type LOCAL -j KUBE-SVC-GNZBNJ2PO5MGZ6GT\n"
		"-A KUBE-EXT-GNZBNJ2PO5MGZ6GT -j KUBE-SVL-GNZBNJ2PO5MGZ6GT\n");
}

static void test_exact_masquerade_all(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	f->s.masquerade_all = true;
	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-XPGD46QRK7WJZT7O",
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -d 172.30.0.41/32 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.1:80\" -j KUBE-SEP-SXIVWICOYRO3J4NJ\n");
}

/* internalTrafficPolicy=Local: the cluster IP goes to KUBE-SVL- with only
 * the local endpoints (masquerade rule first); without local endpoints the
 * filter table drops. */
static void test_exact_internal_local(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	p->int_policy = POLICY_LOCAL;
	fx_ep(f, p, "10.180.0.1", 80, EP_READY | EP_LOCAL);
	fx_ep(f, p, "10.180.2.1", 80, EP_READY);
	p = fx_port(f, "ns2", "svc2", "p80", "tcp", "172.30.0.42", 80);
	p->int_policy = POLICY_LOCAL;
	fx_ep(f, p, "10.180.2.2", 80, EP_READY);
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SERVICES",
		"-A KUBE-SERVICES -d 172.30.0.41/32 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-SVL-XPGD46QRK7WJZT7O\n"
		"-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n");
	expect_chain(f->rs, RS_NAT, "KUBE-SVL-XPGD46QRK7WJZT7O",
		"-A KUBE-SVL-XPGD46QRK7WJZT7O ! -s 10.0.0.0/8 -d 172.30.0.41/32 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVL-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.1:80\" -j KUBE-SEP-SXIVWICOYRO3J4NJ\n");
	expect_no_chain(f->rs, RS_NAT, "KUBE-SVC-XPGD46QRK7WJZT7O");
	expect_no_chain(f->rs, RS_NAT, "KUBE-SVL-GNZBNJ2PO5MGZ6GT");
	expect_no_chain(f->rs, RS_NAT, "KUBE-SVC-GNZBNJ2PO5MGZ6GT");
	expect_chain(f->rs, RS_FILTER, "KUBE-SERVICES",
		"-A KUBE-SERVICES -d 172.30.0.42/32 -p tcp -m comment --comment \"ns2/svc2:p80 has no local endpoints\" -m tcp --dport 80 -j DROP\n");
	/* Only the local endpoint has a KUBE-SEP- chain. */
	assert_int_equal(f->stats.endpoints, 1);
}

/* externalTrafficPolicy=Local with a local and a remote endpoint. */
static void test_exact_external_local(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns2", "svc2", "p80", "tcp", "172.30.0.42", 80);
	p->type = SVC_LOAD_BALANCER;
	p->ext_policy = POLICY_LOCAL;
	p->node_port = 3001;
	p->health_check_node_port = 30000;
	fx_ips(f, &p->lb_ips, &p->n_lb_ips, "1.2.3.4");
	fx_ep(f, p, "10.180.0.2", 80, EP_READY);
	fx_ep(f, p, "10.180.0.1", 80, EP_READY | EP_LOCAL);
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-EXT-GNZBNJ2PO5MGZ6GT",
		"-A KUBE-EXT-GNZBNJ2PO5MGZ6GT -s 10.0.0.0/8 -m comment --comment \"pod traffic for ns2/svc2:p80 external destinations\" -j KUBE-SVC-GNZBNJ2PO5MGZ6GT\n"
		"-A KUBE-EXT-GNZBNJ2PO5MGZ6GT -m comment --comment \"masquerade LOCAL traffic for ns2/svc2:p80 external destinations\" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ\n"
		"-A KUBE-EXT-GNZBNJ2PO5MGZ6GT -m comment --comment \"route LOCAL traffic for ns2/svc2:p80 external destinations\" -m addrtype --src-type LOCAL -j KUBE-SVC-GNZBNJ2PO5MGZ6GT\n"
		"-A KUBE-EXT-GNZBNJ2PO5MGZ6GT -j KUBE-SVL-GNZBNJ2PO5MGZ6GT\n");
	expect_chain(f->rs, RS_NAT, "KUBE-SVL-GNZBNJ2PO5MGZ6GT",
		"-A KUBE-SVL-GNZBNJ2PO5MGZ6GT -m comment --comment \"ns2/svc2:p80 -> 10.180.0.1:80\" -j KUBE-SEP-FKDX4UEXGN6O6BS2\n");
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-GNZBNJ2PO5MGZ6GT",
		"-A KUBE-SVC-GNZBNJ2PO5MGZ6GT ! -s 10.0.0.0/8 -d 172.30.0.42/32 -p tcp -m comment --comment \"ns2/svc2:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment \"ns2/svc2:p80 -> 10.180.0.1:80\" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-FKDX4UEXGN6O6BS2\n"
		"-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment \"ns2/svc2:p80 -> 10.180.0.2:80\" -j KUBE-SEP-RS4RBKLTHTF2IUXJ\n");
	/* Local endpoints exist: nothing is dropped, the health check port is
	 * open. */
	expect_chain(f->rs, RS_FILTER, "KUBE-EXTERNAL-SERVICES", "");
	expect_chain(f->rs, RS_FILTER, "KUBE-NODEPORTS",
		"-A KUBE-NODEPORTS -p tcp -m comment --comment \"ns2/svc2:p80 health check node port\" -m tcp --dport 30000 -j ACCEPT\n");
}

/* Terminating endpoints (Local policy falls back to the local serving
 * terminating one) and zone hints, as chain contents. */
static void test_exact_terminating_and_topology(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	f->s.n_cluster_cidrs = 0;
	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3001;
	p->ext_policy = POLICY_LOCAL;
	fx_ep(f, p, "10.0.2.1", 80, EP_READY);
	fx_ep(f, p, "10.0.1.2", 80, EP_TERM | EP_LOCAL);
	fx_ep(f, p, "10.0.1.3", 80, EP_TERM_NS | EP_LOCAL);
	/* Cluster policy, nothing ready: the serving terminating ones. */
	p = fx_port(f, "ns2", "svc2", "p80", "tcp", "172.30.0.42", 80);
	fx_ep(f, p, "10.0.1.4", 80, EP_TERM);
	fx_ep(f, p, "10.0.1.5", 80, EP_TERM);
	fx_ep(f, p, "10.0.1.6", 80, EP_TERM_NS);
	fx_ep(f, p, "10.0.1.7", 80, EP_NOTREADY);
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-XPGD46QRK7WJZT7O",
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.0.2.1:80\" -j KUBE-SEP-DKOTLDLLCEURVCB5\n");
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-GNZBNJ2PO5MGZ6GT",
		"-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment \"ns2/svc2:p80 -> 10.0.1.4:80\" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-2GBP5IZCVVCBSZXR\n"
		"-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment \"ns2/svc2:p80 -> 10.0.1.5:80\" -j KUBE-SEP-TQBOX52XYA4EQTNM\n");
	expect_chain(f->rs, RS_NAT, "KUBE-SVL-XPGD46QRK7WJZT7O",
		"-A KUBE-SVL-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.0.1.2:80\" -j KUBE-SEP-FRRGXMRCA6KBNYLB\n");
	expect_no_chain(f->rs, RS_NAT, "KUBE-SEP-G7XP5NU2Z2343ZYM");
	assert_int_equal(f->stats.endpoints, 4);

	f->d.n_ports = 0;
	f->s.zone = "zone-a";
	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	fx_hints(f, fx_ep(f, p, "10.0.1.1", 80, EP_READY), "zone-a");
	fx_hints(f, fx_ep(f, p, "10.0.1.2", 80, EP_READY), "zone-b");
	fx_hints(f, fx_ep(f, p, "10.0.1.3", 80, EP_READY), "zone-a");
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-XPGD46QRK7WJZT7O",
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.0.1.1:80\" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-SNQ3ZNILQDEJNDQO\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.0.1.3:80\" -j KUBE-SEP-G7XP5NU2Z2343ZYM\n");
	expect_no_chain(f->rs, RS_NAT, "KUBE-SEP-FRRGXMRCA6KBNYLB");
	/* Without a zone of its own the node uses every endpoint. */
	f->s.zone = NULL;
	fx_plan(f);
	assert_int_equal(ruleset_find_chain(f->rs, RS_NAT, "KUBE-SVC-XPGD46QRK7WJZT7O")->n_rules, 3);
}

/* --nodeport-addresses: one rule per matching node address instead of
 * addrtype LOCAL; loopback only with localhost node ports. */
static void test_exact_nodeport_addresses(void **state)
{
	struct fx *f = *state;

	f->local_addrs[0] = ip("192.168.0.2");
	f->local_addrs[1] = ip("10.1.1.1");
	f->local_addrs[2] = ip("127.0.0.1");
	f->local_addrs[3] = ip("192.168.0.3");
	f->s.n_local_addrs = 4;
	f->np_addrs[0] = net("192.168.0.0/24");
	f->np_addrs[1] = net("127.0.0.0/8");
	f->s.nodeport_addresses = f->np_addrs;
	f->s.n_nodeport_addresses = 2;
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SERVICES",
		"-A KUBE-SERVICES -d 192.168.0.2/32 -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -j KUBE-NODEPORTS\n"
		"-A KUBE-SERVICES -d 192.168.0.3/32 -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -j KUBE-NODEPORTS\n"
		"-A KUBE-SERVICES -d 127.0.0.1/32 -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -j KUBE-NODEPORTS\n");
	assert_int_equal(ruleset_find_chain(f->rs, RS_FILTER, "KUBE-FIREWALL")->n_rules, 1);

	/* Localhost node ports off: 127.0.0.1 is left out, with a warning,
	 * and the localnet guard is not needed. */
	f->s.localhost_nodeports = false;
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SERVICES",
		"-A KUBE-SERVICES -d 192.168.0.2/32 -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -j KUBE-NODEPORTS\n"
		"-A KUBE-SERVICES -d 192.168.0.3/32 -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -j KUBE-NODEPORTS\n");
	assert_int_equal(diag_count(&f->diags, DIAG_WARNING), 1);
	expect_chain(f->rs, RS_FILTER, "KUBE-FIREWALL", "");

	/* Node-port addresses without loopback turn localhost node ports off
	 * as kube-proxy does. */
	f->s.localhost_nodeports = true;
	f->s.n_nodeport_addresses = 1;
	fx_plan(f);
	expect_chain(f->rs, RS_FILTER, "KUBE-FIREWALL", "");
}

static void test_exact_nodeports_all_local(void **state)
{
	struct fx *f = *state;

	f->s.localhost_nodeports = false;
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SERVICES",
		"-A KUBE-SERVICES ! -d 127.0.0.0/8 -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n");
	expect_chain(f->rs, RS_FILTER, "KUBE-FIREWALL", "");
	/* 0.0.0.0/0 in --nodeport-addresses means all local addresses. */
	f->s.localhost_nodeports = true;
	f->np_addrs[0] = net("192.168.0.0/24");
	f->np_addrs[1] = net("0.0.0.0/0");
	f->s.nodeport_addresses = f->np_addrs;
	f->s.n_nodeport_addresses = 2;
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SERVICES",
		"-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n");
}

/* Past large_cluster_threshold endpoints, per-endpoint comments go; the
 * service-level comments stay. */
static void test_exact_large_cluster(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	f->s.large_cluster_threshold = 1;
	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	p->affinity_client_ip = true;
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	fx_ep(f, p, "10.180.0.2", 80, EP_READY);
	p->type = SVC_NODE_PORT;
	p->node_port = 3001;
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-XPGD46QRK7WJZT7O",
		"-A KUBE-SVC-XPGD46QRK7WJZT7O ! -s 10.0.0.0/8 -d 172.30.0.41/32 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-SXIVWICOYRO3J4NJ --mask 255.255.255.255 --rsource -j KUBE-SEP-SXIVWICOYRO3J4NJ\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-LXVODXWDISEETFEF --mask 255.255.255.255 --rsource -j KUBE-SEP-LXVODXWDISEETFEF\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-SXIVWICOYRO3J4NJ\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -j KUBE-SEP-LXVODXWDISEETFEF\n");
	expect_chain(f->rs, RS_NAT, "KUBE-SEP-SXIVWICOYRO3J4NJ",
		"-A KUBE-SEP-SXIVWICOYRO3J4NJ -s 10.180.0.1/32 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SEP-SXIVWICOYRO3J4NJ -p tcp -m recent --set --name KUBE-SEP-SXIVWICOYRO3J4NJ --mask 255.255.255.255 --rsource -m tcp -j DNAT --to-destination 10.180.0.1:80\n");
	expect_chain(f->rs, RS_NAT, "KUBE-NODEPORTS",
		"-A KUBE-NODEPORTS -p tcp -m comment --comment \"ns1/svc1:p80\" -m tcp --dport 3001 -j KUBE-EXT-XPGD46QRK7WJZT7O\n");
	/* At the threshold itself the comments are still there. */
	f->s.large_cluster_threshold = 2;
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SEP-SXIVWICOYRO3J4NJ",
		"-A KUBE-SEP-SXIVWICOYRO3J4NJ -s 10.180.0.1/32 -m comment --comment \"ns1/svc1:p80\" -j KUBE-MARK-MASQ\n"
		"-A KUBE-SEP-SXIVWICOYRO3J4NJ -p tcp -m comment --comment \"ns1/svc1:p80\" -m recent --set --name KUBE-SEP-SXIVWICOYRO3J4NJ --mask 255.255.255.255 --rsource -m tcp -j DNAT --to-destination 10.180.0.1:80\n");
}

/*
 * Compact layout: past compact_endpoints_threshold endpoints no KUBE-SEP-
 * chains; the service chain marks hairpin traffic of the endpoints that can
 * send it here, then checks affinity (--update) and spreads (statistic,
 * --set) with DNAT straight from the service chain.
 */
static void build_compact(struct fx *f)
{
	struct svc_port *p;

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	p->affinity_client_ip = true;
	fx_ep(f, p, "10.180.0.1", 80, EP_READY | EP_LOCAL);
	fx_ep(f, p, "10.180.0.2", 80, EP_READY);
	fx_ep(f, p, "10.180.0.3", 80, EP_READY);
	fx_ep(f, p, "10.180.0.9", 80, EP_NOTREADY);
	p = fx_port(f, "ns2", "svc2", "dns", "udp", "172.30.0.42", 53);
	fx_ep(f, p, "10.180.0.4", 5353, EP_READY);
	/* no node name: it may run here */
	fx_ep(f, p, "10.180.0.5", 5353, EP_READY)->node_name = NULL;
	/* Local external policy: pods of other nodes reach the cluster chain
	 * through the node port, so every endpoint there has a hairpin mark. */
	p = fx_port(f, "ns3", "svc3", "p80", "tcp", "172.30.0.43", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3003;
	p->ext_policy = POLICY_LOCAL;
	fx_ep(f, p, "10.180.0.6", 80, EP_READY | EP_LOCAL);
	fx_ep(f, p, "10.180.0.7", 80, EP_READY);
}

static void test_exact_compact(void **state)
{
	struct fx *f = *state;

	build_compact(f);
	/* 8 endpoints in all (the threshold counts the not-ready one), 7 usable */
	f->s.compact_endpoints_threshold = 7;
	fx_plan(f);
	assert_false(has_prefix_chain(f->rs, "KUBE-SEP-"));
	assert_int_equal(f->stats.services, 3);
	assert_int_equal(f->stats.endpoints, 7);
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-XPGD46QRK7WJZT7O",
		"-A KUBE-SVC-XPGD46QRK7WJZT7O ! -s 10.0.0.0/8 -d 172.30.0.41/32 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -s 10.180.0.1/32 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -p tcp -m recent --update --seconds 10800 --reap --name KUBE-SEP-SXIVWICOYRO3J4NJ --mask 255.255.255.255 --rsource -j DNAT --to-destination 10.180.0.1:80\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -p tcp -m recent --update --seconds 10800 --reap --name KUBE-SEP-LXVODXWDISEETFEF --mask 255.255.255.255 --rsource -j DNAT --to-destination 10.180.0.2:80\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -p tcp -m recent --update --seconds 10800 --reap --name KUBE-SEP-ICDUIKC33SFI6ZPR --mask 255.255.255.255 --rsource -j DNAT --to-destination 10.180.0.3:80\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -p tcp -m statistic --mode random --probability 0.3333333333 -m recent --set --name KUBE-SEP-SXIVWICOYRO3J4NJ --mask 255.255.255.255 --rsource -j DNAT --to-destination 10.180.0.1:80\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -p tcp -m statistic --mode random --probability 0.5000000000 -m recent --set --name KUBE-SEP-LXVODXWDISEETFEF --mask 255.255.255.255 --rsource -j DNAT --to-destination 10.180.0.2:80\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -p tcp -m recent --set --name KUBE-SEP-ICDUIKC33SFI6ZPR --mask 255.255.255.255 --rsource -j DNAT --to-destination 10.180.0.3:80\n");
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-EXEQMP2JXU5NJZKX",
		"-A KUBE-SVC-EXEQMP2JXU5NJZKX ! -s 10.0.0.0/8 -d 172.30.0.42/32 -p udp -m comment --comment \"ns2/svc2:dns cluster IP\" -m udp --dport 53 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-EXEQMP2JXU5NJZKX -s 10.180.0.5/32 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-EXEQMP2JXU5NJZKX -p udp -m statistic --mode random --probability 0.5000000000 -j DNAT --to-destination 10.180.0.4:5353\n"
		"-A KUBE-SVC-EXEQMP2JXU5NJZKX -p udp -j DNAT --to-destination 10.180.0.5:5353\n");
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-X27LE4BHSL4DOUIK",
		"-A KUBE-SVC-X27LE4BHSL4DOUIK ! -s 10.0.0.0/8 -d 172.30.0.43/32 -p tcp -m comment --comment \"ns3/svc3:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-X27LE4BHSL4DOUIK -s 10.180.0.6/32 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-X27LE4BHSL4DOUIK -s 10.180.0.7/32 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-X27LE4BHSL4DOUIK -p tcp -m statistic --mode random --probability 0.5000000000 -j DNAT --to-destination 10.180.0.6:80\n"
		"-A KUBE-SVC-X27LE4BHSL4DOUIK -p tcp -j DNAT --to-destination 10.180.0.7:80\n");
	expect_chain(f->rs, RS_NAT, "KUBE-SVL-X27LE4BHSL4DOUIK",
		"-A KUBE-SVL-X27LE4BHSL4DOUIK -s 10.180.0.6/32 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVL-X27LE4BHSL4DOUIK -p tcp -j DNAT --to-destination 10.180.0.6:80\n");
	/* The rest of the layout is kube-proxy's. */
	expect_chain(f->rs, RS_NAT, "KUBE-EXT-X27LE4BHSL4DOUIK",
		"-A KUBE-EXT-X27LE4BHSL4DOUIK -s 10.0.0.0/8 -m comment --comment \"pod traffic for ns3/svc3:p80 external destinations\" -j KUBE-SVC-X27LE4BHSL4DOUIK\n"
		"-A KUBE-EXT-X27LE4BHSL4DOUIK -m comment --comment \"masquerade LOCAL traffic for ns3/svc3:p80 external destinations\" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ\n"
		"-A KUBE-EXT-X27LE4BHSL4DOUIK -m comment --comment \"route LOCAL traffic for ns3/svc3:p80 external destinations\" -m addrtype --src-type LOCAL -j KUBE-SVC-X27LE4BHSL4DOUIK\n"
		"-A KUBE-EXT-X27LE4BHSL4DOUIK -j KUBE-SVL-X27LE4BHSL4DOUIK\n");

	/* Without a cluster CIDR there is no pod short-circuit: only the
	 * local endpoint is marked in the cluster chain too. */
	f->s.n_cluster_cidrs = 0;
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-X27LE4BHSL4DOUIK",
		"-A KUBE-SVC-X27LE4BHSL4DOUIK -s 10.180.0.6/32 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-X27LE4BHSL4DOUIK -p tcp -m statistic --mode random --probability 0.5000000000 -j DNAT --to-destination 10.180.0.6:80\n"
		"-A KUBE-SVC-X27LE4BHSL4DOUIK -p tcp -j DNAT --to-destination 10.180.0.7:80\n");
}

/* The threshold counts endpoints as large-cluster mode does: at N the
 * layout is kube-proxy's, past it compact; 0 means never. */
static void test_compact_threshold(void **state)
{
	static const struct {
		size_t threshold;
		bool compact;
	} cases[] = {
		{ 8, false }, { 7, true }, { 1, true }, { 0, false },
	};
	struct fx *f = *state;

	build_compact(f);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		f->s.compact_endpoints_threshold = cases[i].threshold;
		fx_plan(f);
		if (has_prefix_chain(f->rs, "KUBE-SEP-") == cases[i].compact)
			fail_msg("threshold %zu: want the %s layout", cases[i].threshold,
				 cases[i].compact ? "compact" : "kube-proxy");
		assert_int_equal(f->stats.endpoints, 7);
	}
	/* The default is far above this. */
	plan_settings_init(&f->s);
	assert_int_equal(f->s.compact_endpoints_threshold, 250000);
}

/* A source range holding the node IP also admits the node's own traffic,
 * which arrives from the VIP. */
static void test_exact_firewall_allow_from_node(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns5", "svc5", "p80", "tcp", "172.30.0.45", 80);
	p->type = SVC_LOAD_BALANCER;
	p->node_port = 3002;
	fx_ips(f, &p->lb_ips, &p->n_lb_ips, "5.6.7.8,5.6.7.9");
	fx_nets(f, &p->lb_source_ranges, &p->n_lb_source_ranges, "192.168.0.0/24,203.0.113.0/25");
	fx_ep(f, p, "10.180.0.3", 80, EP_READY);
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-FW-NUKIZ6OKUXPJNT4C",
		"-A KUBE-FW-NUKIZ6OKUXPJNT4C -s 192.168.0.0/24 -m comment --comment \"ns5/svc5:p80 loadbalancer IP\" -j KUBE-EXT-NUKIZ6OKUXPJNT4C\n"
		"-A KUBE-FW-NUKIZ6OKUXPJNT4C -s 203.0.113.0/25 -m comment --comment \"ns5/svc5:p80 loadbalancer IP\" -j KUBE-EXT-NUKIZ6OKUXPJNT4C\n"
		"-A KUBE-FW-NUKIZ6OKUXPJNT4C -s 5.6.7.8/32 -m comment --comment \"ns5/svc5:p80 loadbalancer IP\" -j KUBE-EXT-NUKIZ6OKUXPJNT4C\n"
		"-A KUBE-FW-NUKIZ6OKUXPJNT4C -s 5.6.7.9/32 -m comment --comment \"ns5/svc5:p80 loadbalancer IP\" -j KUBE-EXT-NUKIZ6OKUXPJNT4C\n"
		"-A KUBE-FW-NUKIZ6OKUXPJNT4C -m comment --comment \"other traffic to ns5/svc5:p80 will be dropped by KUBE-PROXY-FIREWALL\"\n");
	expect_chain(f->rs, RS_FILTER, "KUBE-PROXY-FIREWALL",
		"-A KUBE-PROXY-FIREWALL -d 5.6.7.8/32 -p tcp -m comment --comment \"ns5/svc5:p80 traffic not accepted by KUBE-FW-NUKIZ6OKUXPJNT4C\" -m tcp --dport 80 -j DROP\n"
		"-A KUBE-PROXY-FIREWALL -d 5.6.7.9/32 -p tcp -m comment --comment \"ns5/svc5:p80 traffic not accepted by KUBE-FW-NUKIZ6OKUXPJNT4C\" -m tcp --dport 80 -j DROP\n");
}

/* Several ports of one service (UDP, TCP and SCTP, one unnamed) get their
 * own chains; an unnamed port's key has no ":port". */
static void test_exact_multiport_protocols(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "kube-system", "kube-dns", "dns", "udp", "172.30.0.10", 53);
	fx_ep(f, p, "10.180.0.7", 53, EP_READY);
	p = fx_port(f, "kube-system", "kube-dns", "dns-tcp", "tcp", "172.30.0.10", 53);
	fx_ep(f, p, "10.180.0.7", 53, EP_READY);
	p = fx_port(f, "ns", "svc", "", "sctp", "172.30.0.11", 9999);
	p->type = SVC_NODE_PORT;
	p->node_port = 30999;
	fx_ep(f, p, "10.180.0.8", 19999, EP_READY);
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SERVICES",
		"-A KUBE-SERVICES -d 172.30.0.10/32 -p udp -m comment --comment \"kube-system/kube-dns:dns cluster IP\" -m udp --dport 53 -j KUBE-SVC-TCOU7JCQXEZGVUNU\n"
		"-A KUBE-SERVICES -d 172.30.0.10/32 -p tcp -m comment --comment \"kube-system/kube-dns:dns-tcp cluster IP\" -m tcp --dport 53 -j KUBE-SVC-ERIFXISQEP7F7OF4\n"
		"-A KUBE-SERVICES -d 172.30.0.11/32 -p sctp -m comment --comment \"ns/svc cluster IP\" -m sctp --dport 9999 -j KUBE-SVC-SKXTEDVHENCWGKPG\n"
		"-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n");
	expect_chain(f->rs, RS_NAT, "KUBE-NODEPORTS",
		"-A KUBE-NODEPORTS -p sctp -m comment --comment \"ns/svc\" -m sctp --dport 30999 -j KUBE-EXT-SKXTEDVHENCWGKPG\n");
	assert_int_equal(f->stats.services, 3);
	assert_int_equal(f->stats.endpoints, 3);
}

/* kube-proxy's nfacct matches (proxier.go syncProxyRules): the INVALID
 * drop counts into ct_state_invalid_dropped_pkts when that counter exists,
 * the localhost node-port rule comes with localhost_nps_accepted_pkts
 * alone, and a node port without endpoints gets none. */
static void test_exact_nfacct(void **state)
{
	static const char fwd[] =
		"-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT\n"
		"-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n";
	static const char np[] =
		"-A KUBE-NODEPORTS -p tcp -m comment --comment \"ns2/svc2:p80\" -m tcp --dport 3001 -j KUBE-EXT-GNZBNJ2PO5MGZ6GT\n";
	static const char np_counted[] =
		"-A KUBE-NODEPORTS -d 127.0.0.0/8 -p tcp -m comment --comment \"ns2/svc2:p80\" -m tcp --dport 3001 -m nfacct --nfacct-name  localhost_nps_accepted_pkts -j KUBE-EXT-GNZBNJ2PO5MGZ6GT\n";
	struct fx *f = *state;
	struct svc_port *p;
	char want[1024];

	p = fx_port(f, "ns2", "svc2", "p80", "tcp", "172.30.0.42", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3001;
	fx_ep(f, p, "10.180.0.2", 80, EP_READY);
	p = fx_port(f, "ns6", "svc6", "p80", "tcp", "172.30.0.46", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3006;

	fx_plan(f);
	snprintf(want, sizeof(want), "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP\n%s", fwd);
	expect_chain(f->rs, RS_FILTER, "KUBE-FORWARD", want);
	expect_chain(f->rs, RS_NAT, "KUBE-NODEPORTS", np);

	f->s.nfacct = PLAN_NFACCT_CT_INVALID;
	fx_plan(f);
	snprintf(want, sizeof(want),
		 "-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name  ct_state_invalid_dropped_pkts -j DROP\n%s",
		 fwd);
	expect_chain(f->rs, RS_FILTER, "KUBE-FORWARD", want);
	expect_chain(f->rs, RS_NAT, "KUBE-NODEPORTS", np);

	f->s.nfacct = PLAN_NFACCT_LOCALHOST_NP;
	fx_plan(f);
	snprintf(want, sizeof(want), "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP\n%s", fwd);
	expect_chain(f->rs, RS_FILTER, "KUBE-FORWARD", want);
	snprintf(want, sizeof(want), "%s%s", np_counted, np);
	expect_chain(f->rs, RS_NAT, "KUBE-NODEPORTS", want);

	/* be_liberal: no INVALID drop to count in. */
	f->s.nfacct = PLAN_NFACCT_ALL;
	f->s.conntrack_tcp_liberal = true;
	fx_plan(f);
	expect_chain(f->rs, RS_FILTER, "KUBE-FORWARD", fwd);
	expect_chain(f->rs, RS_NAT, "KUBE-NODEPORTS", want);

	/* Localhost node ports off: no counted rule. */
	f->s.localhost_nodeports = false;
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-NODEPORTS", np);
}

/* In a dispatch tree, the counted 127.0.0.0/8 rule is keyed by its port:
 * it lands in its port's leaf, just before that port's own rule, and the
 * chain's other node ports stay in the tree. */
static void test_tree_nfacct(void **state)
{
	struct fx *f = *state;
	const struct rs_chain *leaf = NULL;
	size_t at = 0;

	for (unsigned i = 0; i < 40; i++) {
		char name[16], cip[16];
		struct svc_port *p;

		snprintf(name, sizeof(name), "svc%u", i);
		snprintf(cip, sizeof(cip), "172.30.1.%u", i + 1);
		p = fx_port(f, "ns", name, "p", "tcp", cip, 80);
		p->type = SVC_NODE_PORT;
		p->node_port = (uint16_t)(30000 + 37 * i);
		fx_ep(f, p, "10.180.0.2", 80, EP_READY);
	}
	f->s.nfacct = PLAN_NFACCT_ALL;
	fx_plan(f);
	assert_true(f->stats.dispatch_trees >= 1);
	for (size_t i = 0; i < f->rs->t[RS_NAT].n && !leaf; i++) {
		const struct rs_chain *c = f->rs->t[RS_NAT].chains[i];

		for (size_t j = 0; j < c->n_rules; j++) {
			const struct rs_rule *r = &c->rules[j];

			if (r->n_matches == 3 && r->m[2].kind == RS_M_NFACCT &&
			    r->m[1].u.port.dport == 30000 + 37 * 5) {
				leaf = c;
				at = j;
				break;
			}
		}
	}
	assert_non_null(leaf);
	assert_true(strncmp(leaf->name, DISPATCH_PREFIX, strlen(DISPATCH_PREFIX)) == 0);
	assert_true(at + 1 < leaf->n_rules);
	assert_int_equal(leaf->rules[at + 1].m[1].u.port.dport, 30000 + 37 * 5);
	assert_int_equal(leaf->rules[at + 1].dst.addr.family, 0);
	{
		const struct rs_chain *np = ruleset_find_chain(f->rs, RS_NAT, "KUBE-NODEPORTS");

		for (size_t j = 0; j < np->n_rules; j++)
			assert_true(np->rules[j].t.kind == RS_T_JUMP &&
				    strncmp(np->rules[j].t.u.chain, DISPATCH_PREFIX,
					    strlen(DISPATCH_PREFIX)) == 0);
	}
}

static void test_exact_fixed_chains_settings(void **state)
{
	struct fx *f = *state;

	f->s.masquerade_bit = 0;
	f->s.random_fully = false;
	f->s.conntrack_tcp_liberal = true;
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-POSTROUTING",
		"-A KUBE-POSTROUTING -m mark ! --mark 0x1/0x1 -j RETURN\n"
		"-A KUBE-POSTROUTING -j MARK --set-xmark 0x1/0x0\n"
		"-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE\n");
	expect_chain(f->rs, RS_NAT, "KUBE-MARK-MASQ", "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x1/0x1\n");
	expect_chain(f->rs, RS_FILTER, "KUBE-FORWARD",
		"-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x1/0x1 -j ACCEPT\n"
		"-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n");
	/* With no services, the declared chains are all there and empty. */
	expect_chain(f->rs, RS_NAT, "KUBE-NODEPORTS", "");
	expect_chain(f->rs, RS_FILTER, "KUBE-SERVICES", "");
	expect_chain(f->rs, RS_FILTER, "KUBE-EXTERNAL-SERVICES", "");
	expect_chain(f->rs, RS_FILTER, "KUBE-NODEPORTS", "");
	expect_chain(f->rs, RS_FILTER, "KUBE-PROXY-FIREWALL", "");
	assert_int_equal(ruleset_count_chains(f->rs), 10);

	f->s.masquerade_bit = 32;
	ruleset_free(f->rs);
	f->rs = NULL;
	assert_int_equal(plan_build(&f->d, &f->s, &f->rs, NULL, NULL), -EINVAL);
	assert_null(f->rs);
	f->s.masquerade_bit = 14;
	f->s.family = AF_UNIX;
	assert_int_equal(plan_build(&f->d, &f->s, &f->rs, NULL, NULL), -EINVAL);
}

/* Skipped ports (headless, ExternalName, other proxies) and entries of the
 * other family program nothing; the latter leave notes. */
static void test_skipped_and_other_family(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns", "headless", "http", "tcp", NULL, 80);
	p->skipped = true;
	p->headless = true;
	p->skip_reason = "headless";
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	p = fx_port(f, "ns", "extname", "http", "tcp", "172.30.0.50", 80);
	p->type = SVC_EXTERNAL_NAME;
	p->skipped = true;
	p->skip_reason = "ExternalName";
	p = fx_port(f, "ns", "v6only", "http", "tcp", "fd00::10", 80);
	fx_ep(f, p, "fd00::1", 80, EP_READY);
	p = fx_port(f, "ns", "mixed", "http", "tcp", "172.30.0.51", 80);
	fx_ips(f, &p->external_ips, &p->n_external_ips, "fd00::99,192.168.99.1");
	fx_ep(f, p, "fd00::1", 80, EP_READY);
	fx_ep(f, p, "10.180.0.9", 80, EP_READY);
	/* A protocol outside TCP/UDP/SCTP is refused with an error. */
	p = fx_port(f, "ns", "icmp", "x", "tcp", "172.30.0.52", 80);
	p->protocol = IPPROTO_ICMP;
	fx_ep(f, p, "10.180.0.10", 80, EP_READY);
	fx_plan(f);
	assert_int_equal(diag_count(&f->diags, DIAG_ERROR), 1);
	assert_int_equal(f->stats.services, 1);
	assert_int_equal(f->stats.endpoints, 1);
	/* Only "mixed" in KUBE-SERVICES (cluster IP, external IP), then the
	 * node-port jump. */
	assert_int_equal(ruleset_find_chain(f->rs, RS_NAT, "KUBE-SERVICES")->n_rules, 3);
	expect_chain(f->rs, RS_FILTER, "KUBE-SERVICES", "");
	/* v6only: no cluster IP of this family; mixed: an IPv6 external IP
	 * and an IPv6 endpoint. */
	assert_int_equal(diag_count(&f->diags, DIAG_NOTE), 4);
	assert_int_equal(diag_count(&f->diags, DIAG_WARNING), 1);
}

static void test_duplicate_port_and_cidrs(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	fx_ep(f, p, "10.180.0.1", 80, EP_READY); /* duplicate endpoint */
	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.99", 80);
	fx_ep(f, p, "10.180.0.2", 80, EP_READY);
	f->cidrs[1] = net("10.200.0.0/16");
	f->s.n_cluster_cidrs = 2;
	fx_plan(f);
	assert_int_equal(f->stats.services, 1);
	assert_int_equal(f->stats.endpoints, 1);
	assert_int_equal(diag_count(&f->diags, DIAG_ERROR), 1);
	assert_int_equal(diag_count(&f->diags, DIAG_WARNING), 2);
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-XPGD46QRK7WJZT7O",
		"-A KUBE-SVC-XPGD46QRK7WJZT7O ! -s 10.0.0.0/8 -d 172.30.0.41/32 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.1:80\" -j KUBE-SEP-SXIVWICOYRO3J4NJ\n");
}

static void test_deterministic(void **state)
{
	struct fx *f = *state;
	struct ruleset *a;
	char *ta, *tb;

	build_overall(f);
	fx_plan(f);
	a = TAKE_PTR(f->rs);
	fx_plan(f);
	for (int t = 0; t < RS_NTABLES; t++) {
		assert_int_equal(a->t[t].n, f->rs->t[t].n);
		for (size_t i = 0; i < a->t[t].n; i++)
			assert_true(rs_chain_equal(a->t[t].chains[i], f->rs->t[t].chains[i]));
		ta = table_text(a, (enum rs_table)t);
		tb = table_text(f->rs, (enum rs_table)t);
		assert_string_equal(ta, tb);
		free(ta);
		free(tb);
	}
	ruleset_free(a);
}

/* 2,000 services x 10 endpoints: plans, with the expected counts. */
static void test_large_input(void **state)
{
	enum { NSVC = 2000, NEP = 10 };
	struct fx *f = *state;
	size_t base_rules;

	/* exact counts of kube-proxy's layout (the tree: test_tree_large) */
	f->s.dispatch = DISPATCH_LINEAR;
	fx_plan(f);
	base_rules = ruleset_count_rules(f->rs);
	f->d.ports = fx_alloc(f, NSVC, sizeof(*f->d.ports));
	f->cap_ports = NSVC;
	for (unsigned i = 0; i < NSVC; i++) {
		char name[32], cip[32], epip[32];
		struct svc_port *p;

		snprintf(name, sizeof(name), "svc%05u", i);
		snprintf(cip, sizeof(cip), "172.30.%u.%u", i / 250, i % 250 + 1);
		p = fx_port(f, "bench", name, "http", "tcp", cip, 80);
		if (i % 4 == 0) {
			p->type = SVC_NODE_PORT;
			p->node_port = (uint16_t)(30000 + i);
		}
		for (unsigned k = 0; k < NEP; k++) {
			snprintf(epip, sizeof(epip), "10.%u.%u.%u", 100 + i / 250, i % 250, k + 1);
			fx_ep(f, p, epip, 8080, EP_READY);
		}
	}
	fx_plan(f);
	assert_int_equal(f->stats.services, NSVC);
	assert_int_equal(f->stats.endpoints, NSVC * NEP);
	/* Per port: 1 in KUBE-SERVICES, 1 + NEP in KUBE-SVC-, 2 per KUBE-SEP-;
	 * node ports add 1 in KUBE-NODEPORTS and 2 in KUBE-EXT-. */
	assert_int_equal(ruleset_count_rules(f->rs),
			 base_rules + NSVC * (1 + 1 + NEP + 2 * NEP) + (NSVC / 4) * 3);
	assert_int_equal(ruleset_count_chains(f->rs), 10 + NSVC * (1 + NEP) + NSVC / 4);
	/* Past the default threshold of 1000 endpoints: no endpoint comments. */
	assert_int_equal(ruleset_find_chain(f->rs, RS_NAT, "KUBE-SVC-XPGD46QRK7WJZT7O"), NULL);
	{
		const struct rs_chain *c = ruleset_find_chain(f->rs, RS_NAT, "KUBE-SERVICES");

		assert_int_equal(c->rules[0].m[0].kind, RS_M_COMMENT);
		for (size_t i = 0; i < f->rs->t[RS_NAT].n; i++) {
			const struct rs_chain *s = f->rs->t[RS_NAT].chains[i];

			if (!strncmp(s->name, "KUBE-SEP-", 9))
				for (size_t k = 0; k < s->n_rules; k++)
					for (size_t m = 0; m < s->rules[k].n_matches; m++)
						assert_int_not_equal(s->rules[k].m[m].kind, RS_M_COMMENT);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Packet flows through the planned rules (the tracer)                    */

enum { MASQ_NO = 0, MASQ_YES = 1, MASQ_ANY = 2 };

struct flow {
	const char *name;
	const char *src;
	bool local;        /* sent from the node itself */
	const char *dst;
	unsigned dport;
	const char *out;   /* "ip:port, ip:port" (spread evenly), "REJECT", "DROP", or "" (not a service packet) */
	int masq;
	const char *proto; /* NULL: tcp */
	const char *recent;/* affinity entry present for this client */
	const char *iface; /* interface it arrives on (NULL: eth0) */
};

static bool near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

static void run_flow(const struct ruleset *rs, const struct ipaddr *local, size_t n_local,
		     const struct flow *fl)
{
	struct trace_env env = {
		.local_addrs = local, .n_local_addrs = n_local, .recent_name = fl->recent,
	};
	struct trace_packet pkt = {
		.src = ip(fl->src), .dst = ip(fl->dst), .dport = (uint16_t)fl->dport,
		.proto = proto_of(fl->proto ? fl->proto : "tcp"), .from_local = fl->local,
		.in_iface = fl->iface ? fl->iface : "eth0",
	};
	struct trace_result res = { 0 };
	bool ok = true;
	int r;

	r = trace_packet(rs, &env, &pkt, &res);
	if (r < 0)
		fail_msg("%s: trace_packet failed: %s", fl->name, strerror(-r));
	if (streq(fl->out, "REJECT")) {
		ok = near(trace_prob_verdict(&res, TRACE_REJECT), 1.0);
	} else if (streq(fl->out, "DROP")) {
		ok = near(trace_prob_verdict(&res, TRACE_DROP), 1.0);
	} else if (!fl->out[0]) {
		ok = near(trace_prob_verdict(&res, TRACE_ACCEPT), 1.0);
	} else {
		char buf[512], *save = NULL;
		size_t k = csv_count(fl->out);

		ok = near(trace_prob_verdict(&res, TRACE_DNAT), 1.0);
		snprintf(buf, sizeof(buf), "%s", fl->out);
		for (char *t = strtok_r(buf, ", ", &save); t && ok; t = strtok_r(NULL, ", ", &save)) {
			char *colon = strrchr(t, ':');

			*colon = '\0';
			ok = near(trace_prob_to(&res, t, (uint16_t)atoi(colon + 1)), 1.0 / (double)k);
		}
		if (ok && fl->masq == MASQ_YES)
			ok = trace_all_masq(&res);
		else if (ok && fl->masq == MASQ_NO)
			ok = trace_none_masq(&res);
	}
	if (!ok) {
		trace_result_print(&res, stderr);
		trace_result_done(&res);
		fail_msg("flow \"%s\": %s -> %s:%u: want \"%s\"%s", fl->name, fl->src, fl->dst,
			 fl->dport, fl->out,
			 fl->masq == MASQ_YES ? " masqueraded" :
			 fl->masq == MASQ_NO ? " not masqueraded" : "");
	}
	trace_result_done(&res);
}

static void run_flows(struct fx *f, const struct flow *fl, size_t n)
{
	for (size_t i = 0; i < n; i++)
		run_flow(f->rs, f->s.local_addrs, f->s.n_local_addrs, &fl[i]);
}

#define FL(n, s, l, d, p, o, m) \
	{ .name = n, .src = s, .local = l, .dst = d, .dport = p, .out = o, .masq = m }
#define FLP(n, s, l, d, p, o, m, pr) \
	{ .name = n, .src = s, .local = l, .dst = d, .dport = p, .out = o, .masq = m, .proto = pr }
#define FLR(n, s, l, d, p, o, m, pr, rc) \
	{ .name = n, .src = s, .local = l, .dst = d, .dport = p, .out = o, .masq = m, .proto = pr, \
	  .recent = rc }

#define FLI(n, s, i, d, p, o, m) \
	{ .name = n, .src = s, .iface = i, .dst = d, .dport = p, .out = o, .masq = m }

#define RUN_FLOWS(f, ...)                                                      \
	do {                                                                   \
		const struct flow _fl[] = { __VA_ARGS__ };                     \
		run_flows((f), _fl, ARRAY_SIZE(_fl));                          \
	} while (0)

/* kube-proxy's TestClusterIPGeneral. */
static void test_flow_cluster_ip(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	p = fx_port(f, "ns2", "svc2", "http", "tcp", "172.30.0.42", 80);
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	fx_ep(f, p, "10.180.2.1", 80, EP_READY);
	fx_ep(f, p, "10.180.3.1", 80, EP_READY);
	p = fx_port(f, "ns2", "svc2", "https", "tcp", "172.30.0.42", 443);
	fx_ep(f, p, "10.180.0.1", 8443, EP_READY);
	fx_ep(f, p, "10.180.2.1", 8443, EP_READY);
	p = fx_port(f, "ns3", "dns", "dns", "udp", "172.30.0.43", 53);
	fx_ep(f, p, "10.180.0.5", 5353, EP_READY);
	fx_plan(f);
	RUN_FLOWS(f,
		FL("simple clusterIP", "10.180.0.2", false, "172.30.0.41", 80, "10.180.0.1:80", MASQ_NO),
		FL("hairpin to own endpoint", "10.180.0.1", false, "172.30.0.41", 80, "10.180.0.1:80", MASQ_YES),
		FL("three endpoints, evenly", "10.180.0.2", false, "172.30.0.42", 80,
		  "10.180.0.1:80, 10.180.2.1:80, 10.180.3.1:80", MASQ_NO),
		FL("second port, target port", "10.180.0.2", false, "172.30.0.42", 443,
		  "10.180.0.1:8443, 10.180.2.1:8443", MASQ_NO),
		FL("external to clusterIP is masqueraded", "203.0.113.2", false, "172.30.0.41", 80,
		  "10.180.0.1:80", MASQ_YES),
		FL("node to clusterIP is masqueraded", NODE_IP, true, "172.30.0.41", 80, "10.180.0.1:80",
		  MASQ_YES),
		FL("pod on this node via OUTPUT? no: pod via PREROUTING", "10.0.5.5", false, "172.30.0.42", 443,
		  "10.180.0.1:8443, 10.180.2.1:8443", MASQ_NO),
		FLP("udp clusterIP", "10.180.0.2", false, "172.30.0.43", 53, "10.180.0.5:5353", MASQ_NO, "udp"),
		FLP("tcp to a udp-only port", "10.180.0.2", false, "172.30.0.43", 53, "", MASQ_ANY, "tcp"),
		FL("wrong port", "10.180.0.2", false, "172.30.0.41", 81, "", MASQ_ANY),
		FL("unknown IP", "10.180.0.2", false, "172.30.0.99", 80, "", MASQ_ANY),
	);
}

/*
 * --detect-local-mode: kube-proxy's four local-traffic detectors on a
 * NodePort service with externalTrafficPolicy Local.  The detector is the
 * "! <not local>" match of the cluster-IP masquerade rule and the "<local>"
 * match of KUBE-EXT-'s pod short-circuit (kube-proxy's IfNotLocal/IfLocal).
 */
static void detect_local_port(struct fx *f)
{
	struct svc_port *p;

	p = fx_port(f, "ns2", "svc2", "p80", "tcp", "172.30.0.42", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3001;
	p->ext_policy = POLICY_LOCAL;
	fx_ep(f, p, "10.180.0.2", 80, EP_READY | EP_LOCAL);
	fx_ep(f, p, "10.180.1.2", 80, EP_READY);
	fx_plan(f);
}

static void expect_detector(struct fx *f, const char *not_local, const char *local)
{
	char want[1024];

	snprintf(want, sizeof(want),
		 "-A KUBE-SVC-GNZBNJ2PO5MGZ6GT %s-p tcp -m comment --comment \"ns2/svc2:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n",
		 not_local);
	expect_rule_in(f->rs, RS_NAT, "KUBE-SVC-GNZBNJ2PO5MGZ6GT", want);
	snprintf(want, sizeof(want),
		 "-A KUBE-EXT-GNZBNJ2PO5MGZ6GT %s-m comment --comment \"pod traffic for ns2/svc2:p80 external destinations\" -j KUBE-SVC-GNZBNJ2PO5MGZ6GT\n",
		 local);
	expect_rule_in(f->rs, RS_NAT, "KUBE-EXT-GNZBNJ2PO5MGZ6GT", want);
}

static void test_detect_local_cluster_cidr(void **state)
{
	struct fx *f = *state;

	f->s.detect_local_mode = DETECT_LOCAL_CLUSTER_CIDR;
	detect_local_port(f);
	expect_detector(f, "! -s 10.0.0.0/8 -d 172.30.0.42/32 ", "-s 10.0.0.0/8 ");
	RUN_FLOWS(f,
		FL("pod to clusterIP", "10.0.5.5", false, "172.30.0.42", 80,
		   "10.180.0.2:80, 10.180.1.2:80", MASQ_NO),
		FL("outside to clusterIP", "203.0.113.2", false, "172.30.0.42", 80,
		   "10.180.0.2:80, 10.180.1.2:80", MASQ_YES),
		FL("pod to nodePort: cluster policy", "10.0.5.5", false, NODE_IP, 3001,
		   "10.180.0.2:80, 10.180.1.2:80", MASQ_NO),
		FL("outside to nodePort: local endpoint only", "203.0.113.2", false, NODE_IP, 3001,
		   "10.180.0.2:80", MASQ_NO),
	);
}

static void test_detect_local_node_cidr(void **state)
{
	struct fx *f = *state;
	struct ipnet pod[2] = { net("10.0.7.0/24"), net("10.0.8.0/24") };

	f->s.detect_local_mode = DETECT_LOCAL_NODE_CIDR;
	f->s.node_pod_cidrs = pod;
	f->s.n_node_pod_cidrs = 2;
	detect_local_port(f);
	/* The node's pod CIDR, not --cluster-cidr; one per family. */
	expect_detector(f, "! -s 10.0.7.0/24 -d 172.30.0.42/32 ", "-s 10.0.7.0/24 ");
	assert_int_equal(diag_count(&f->diags, DIAG_WARNING), 1);
	RUN_FLOWS(f,
		FL("pod of this node to clusterIP", "10.0.7.5", false, "172.30.0.42", 80,
		   "10.180.0.2:80, 10.180.1.2:80", MASQ_NO),
		FL("pod of another node is not local", "10.0.5.5", false, "172.30.0.42", 80,
		   "10.180.0.2:80, 10.180.1.2:80", MASQ_YES),
		FL("pod of this node to nodePort: cluster policy", "10.0.7.5", false, NODE_IP, 3001,
		   "10.180.0.2:80, 10.180.1.2:80", MASQ_NO),
	);
	/* No pod CIDR for the family: no detector, as kube-proxy's no-op one. */
	f->s.n_node_pod_cidrs = 0;
	fx_plan(f);
	expect_chain(f->rs, RS_NAT, "KUBE-SVC-GNZBNJ2PO5MGZ6GT",
		"-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment \"ns2/svc2:p80 -> 10.180.0.2:80\" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-RS4RBKLTHTF2IUXJ\n"
		"-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment \"ns2/svc2:p80 -> 10.180.1.2:80\" -j KUBE-SEP-J7UNSSMXXN3UTZD6\n");
}

static void test_detect_local_bridge(void **state)
{
	struct fx *f = *state;

	f->s.detect_local_mode = DETECT_LOCAL_BRIDGE;
	f->s.pod_bridge_interface = "cbr0";
	detect_local_port(f);
	expect_detector(f, "-d 172.30.0.42/32 ! -i cbr0 ", "-i cbr0 ");
	RUN_FLOWS(f,
		FLI("pod on the bridge to clusterIP", "10.99.0.5", "cbr0", "172.30.0.42", 80,
		    "10.180.0.2:80, 10.180.1.2:80", MASQ_NO),
		FLI("same source from eth0 is masqueraded", "10.99.0.5", "eth0", "172.30.0.42", 80,
		    "10.180.0.2:80, 10.180.1.2:80", MASQ_YES),
		FLI("a longer name is another interface", "10.99.0.5", "cbr01", "172.30.0.42", 80,
		    "10.180.0.2:80, 10.180.1.2:80", MASQ_YES),
		FLI("pod on the bridge to nodePort: cluster policy", "10.99.0.5", "cbr0", NODE_IP, 3001,
		    "10.180.0.2:80, 10.180.1.2:80", MASQ_NO),
		FLI("outside to nodePort: local endpoint only", "203.0.113.2", "eth0", NODE_IP, 3001,
		    "10.180.0.2:80", MASQ_NO),
		FL("node to clusterIP (no input interface)", NODE_IP, true, "172.30.0.42", 80,
		   "10.180.0.2:80, 10.180.1.2:80", MASQ_YES),
	);
	/* No name: kube-proxy's validation refuses it. */
	f->s.pod_bridge_interface = NULL;
	ruleset_free(f->rs);
	f->rs = NULL;
	assert_int_equal(plan_build(&f->d, &f->s, &f->rs, NULL, NULL), -EINVAL);
	assert_null(f->rs);
}

static void test_detect_local_iface_prefix(void **state)
{
	struct fx *f = *state;

	f->s.detect_local_mode = DETECT_LOCAL_IFACE_PREFIX;
	f->s.pod_interface_prefix = "veth";
	detect_local_port(f);
	expect_detector(f, "-d 172.30.0.42/32 ! -i veth+ ", "-i veth+ ");
	RUN_FLOWS(f,
		FLI("pod veth to clusterIP", "10.99.0.5", "veth1234", "172.30.0.42", 80,
		    "10.180.0.2:80, 10.180.1.2:80", MASQ_NO),
		FLI("eth0 to clusterIP is masqueraded", "10.99.0.5", "eth0", "172.30.0.42", 80,
		    "10.180.0.2:80, 10.180.1.2:80", MASQ_YES),
		FLI("pod veth to nodePort: cluster policy", "10.99.0.5", "vethab", NODE_IP, 3001,
		    "10.180.0.2:80, 10.180.1.2:80", MASQ_NO),
		FLI("outside to nodePort: local endpoint only", "203.0.113.2", "eth0", NODE_IP, 3001,
		    "10.180.0.2:80", MASQ_NO),
	);
	f->s.pod_interface_prefix = "veth+";
	ruleset_free(f->rs);
	f->rs = NULL;
	assert_int_equal(plan_build(&f->d, &f->s, &f->rs, NULL, NULL), -EINVAL);
}

/* kube-proxy's TestNoEndpointsReject: every address of the service rejects. */
static void test_flow_no_endpoints(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	p->type = SVC_LOAD_BALANCER;
	p->node_port = 3001;
	fx_ips(f, &p->external_ips, &p->n_external_ips, "192.168.99.11");
	fx_ips(f, &p->lb_ips, &p->n_lb_ips, "1.2.3.4");
	/* Endpoints that are not usable do not count. */
	fx_ep(f, p, "10.180.0.1", 80, EP_NOTREADY);
	fx_ep(f, p, "10.180.0.2", 80, EP_TERM_NS);
	fx_plan(f);
	RUN_FLOWS(f,
		FL("pod to clusterIP", "10.0.0.2", false, "172.30.0.41", 80, "REJECT", MASQ_ANY),
		FL("node to clusterIP", NODE_IP, true, "172.30.0.41", 80, "REJECT", MASQ_ANY),
		FL("external to externalIP", "203.0.113.2", false, "192.168.99.11", 80, "REJECT", MASQ_ANY),
		FL("external to nodePort", "203.0.113.2", false, NODE_IP, 3001, "REJECT", MASQ_ANY),
		FL("external to LB", "203.0.113.2", false, "1.2.3.4", 80, "REJECT", MASQ_ANY),
		FL("other port of the clusterIP", "10.0.0.2", false, "172.30.0.41", 81, "", MASQ_ANY),
	);
	assert_false(has_prefix_chain(f->rs, "KUBE-SVC-"));
	assert_false(has_prefix_chain(f->rs, "KUBE-EXT-"));
}

/* kube-proxy's TestLoadBalancer: source ranges guard the LB IP only. */
static void test_flow_load_balancer(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	p->type = SVC_LOAD_BALANCER;
	p->node_port = 3001;
	fx_ips(f, &p->external_ips, &p->n_external_ips, "192.168.99.11");
	fx_ips(f, &p->lb_ips, &p->n_lb_ips, "1.2.3.4");
	fx_nets(f, &p->lb_source_ranges, &p->n_lb_source_ranges, "192.168.0.0/24,203.0.113.0/25");
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	/* The VIP is also assigned on the node (a VIP-style LB). */
	f->local_addrs[1] = ip("1.2.3.4");
	f->s.n_local_addrs = 2;
	fx_plan(f);
	RUN_FLOWS(f,
		FL("pod to cluster IP", "10.0.0.2", false, "172.30.0.41", 80, "10.180.0.1:80", MASQ_NO),
		FL("external to nodePort", "203.0.113.2", false, NODE_IP, 3001, "10.180.0.1:80", MASQ_YES),
		FL("nodePort bypasses source ranges", "203.0.113.200", false, NODE_IP, 3001, "10.180.0.1:80",
		  MASQ_YES),
		FL("allowed external to LB", "203.0.113.2", false, "1.2.3.4", 80, "10.180.0.1:80", MASQ_YES),
		FL("blocked external to LB", "203.0.113.200", false, "1.2.3.4", 80, "DROP", MASQ_ANY),
		FL("blocked pod to LB", "10.0.0.2", false, "1.2.3.4", 80, "DROP", MASQ_ANY),
		FL("node to LB (node IP in a range)", NODE_IP, true, "1.2.3.4", 80, "10.180.0.1:80", MASQ_YES),
		FL("node to LB from the VIP", "1.2.3.4", true, "1.2.3.4", 80, "10.180.0.1:80", MASQ_YES),
		FL("external to externalIP (no ranges)", "203.0.113.200", false, "192.168.99.11", 80,
		  "10.180.0.1:80", MASQ_YES),
		FL("pod to externalIP is masqueraded", "10.0.0.2", false, "192.168.99.11", 80,
		  "10.180.0.1:80", MASQ_YES),
	);
	/* Without the node in a range, the VIP-sourced rule is not there. */
	p->lb_source_ranges[0] = net("192.168.7.0/24");
	fx_plan(f);
	RUN_FLOWS(f,
		FL("node to LB, node not in a range", "1.2.3.4", true, "1.2.3.4", 80, "DROP", MASQ_ANY),
		FL("allowed external to LB", "203.0.113.2", false, "1.2.3.4", 80, "10.180.0.1:80", MASQ_YES),
	);
}

/* kube-proxy's TestNodePorts (IPv4 cases). */
static void test_flow_node_ports(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3001;
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	fx_ep(f, p, "10.180.2.1", 80, EP_READY);
	p = fx_port(f, "ns1", "svc1", "p81", "udp", "172.30.0.41", 81);
	p->type = SVC_NODE_PORT;
	p->node_port = 3002;
	fx_ep(f, p, "10.180.0.1", 81, EP_READY);
	p = fx_port(f, "ns1", "svc1", "p82", "sctp", "172.30.0.41", 82);
	p->type = SVC_NODE_PORT;
	p->node_port = 3003;
	fx_ep(f, p, "10.180.0.1", 82, EP_READY);
	f->local_addrs[1] = ip("10.1.1.1");
	f->s.n_local_addrs = 2;
	fx_plan(f);
	RUN_FLOWS(f,
		FL("pod to cluster IP", "10.0.0.2", false, "172.30.0.41", 80, "10.180.0.1:80, 10.180.2.1:80", MASQ_NO),
		FL("external to nodePort", "203.0.113.2", false, NODE_IP, 3001, "10.180.0.1:80, 10.180.2.1:80",
		  MASQ_YES),
		FL("external to nodePort on the other node IP", "203.0.113.2", false, "10.1.1.1", 3001,
		  "10.180.0.1:80, 10.180.2.1:80", MASQ_YES),
		FL("pod to nodePort (Cluster policy masquerades)", "10.0.0.2", false, NODE_IP, 3001,
		  "10.180.0.1:80, 10.180.2.1:80", MASQ_YES),
		FL("node to own nodePort", NODE_IP, true, NODE_IP, 3001, "10.180.0.1:80, 10.180.2.1:80", MASQ_YES),
		FL("localhost nodePort", "127.0.0.1", true, "127.0.0.1", 3001, "10.180.0.1:80, 10.180.2.1:80",
		  MASQ_YES),
		FL("nodePort on a non-local IP", "203.0.113.2", false, "192.168.0.99", 3001, "", MASQ_ANY),
		FLP("udp nodePort", "203.0.113.2", false, NODE_IP, 3002, "10.180.0.1:81", MASQ_YES, "udp"),
		FLP("sctp nodePort", "203.0.113.2", false, NODE_IP, 3003, "10.180.0.1:82", MASQ_YES, "sctp"),
		FLP("tcp to the udp nodePort", "203.0.113.2", false, NODE_IP, 3002, "", MASQ_ANY, "tcp"),
	);

	f->s.localhost_nodeports = false;
	fx_plan(f);
	RUN_FLOWS(f,
		FL("localhost nodePort disabled", "127.0.0.1", true, "127.0.0.1", 3001, "", MASQ_ANY),
		FL("external to nodePort", "203.0.113.2", false, NODE_IP, 3001, "10.180.0.1:80, 10.180.2.1:80",
		  MASQ_YES),
	);

	f->s.localhost_nodeports = true;
	f->np_addrs[0] = net("192.168.0.0/24");
	f->s.nodeport_addresses = f->np_addrs;
	f->s.n_nodeport_addresses = 1;
	fx_plan(f);
	RUN_FLOWS(f,
		FL("nodePort on an address in --nodeport-addresses", "203.0.113.2", false, NODE_IP, 3001,
		  "10.180.0.1:80, 10.180.2.1:80", MASQ_YES),
		FL("nodePort on an address outside --nodeport-addresses", "203.0.113.2", false, "10.1.1.1", 3001,
		  "", MASQ_ANY),
		FL("localhost not in --nodeport-addresses", "127.0.0.1", true, "127.0.0.1", 3001, "", MASQ_ANY),
	);
}

/* kube-proxy's TestExternalTrafficPolicyLocal / TestOnlyLocalNodePorts /
 * TestOnlyLocalLoadBalancing / TestOnlyLocalExternalIPs. */
static void test_flow_external_policy_local(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	p->type = SVC_LOAD_BALANCER;
	p->ext_policy = POLICY_LOCAL;
	p->node_port = 3001;
	p->health_check_node_port = 30000;
	fx_ips(f, &p->external_ips, &p->n_external_ips, "192.168.99.11");
	fx_ips(f, &p->lb_ips, &p->n_lb_ips, "1.2.3.4");
	fx_ep(f, p, "10.180.0.1", 80, EP_READY | EP_LOCAL);
	fx_ep(f, p, "10.180.2.1", 80, EP_READY);
	fx_plan(f);
	RUN_FLOWS(f,
		FL("pod to cluster IP", "10.0.0.2", false, "172.30.0.41", 80, "10.180.0.1:80, 10.180.2.1:80", MASQ_NO),
		FL("external to nodePort: local only, source kept", "203.0.113.2", false, NODE_IP, 3001,
		  "10.180.0.1:80", MASQ_NO),
		FL("external to LB: local only", "203.0.113.2", false, "1.2.3.4", 80, "10.180.0.1:80", MASQ_NO),
		FL("external to externalIP: local only", "203.0.113.2", false, "192.168.99.11", 80,
		  "10.180.0.1:80", MASQ_NO),
		FL("pod to nodePort is short-circuited", "10.0.0.2", false, NODE_IP, 3001,
		  "10.180.0.1:80, 10.180.2.1:80", MASQ_NO),
		FL("pod to LB is short-circuited", "10.0.0.2", false, "1.2.3.4", 80, "10.180.0.1:80, 10.180.2.1:80",
		  MASQ_NO),
		FL("node to nodePort: all, masqueraded", NODE_IP, true, NODE_IP, 3001,
		  "10.180.0.1:80, 10.180.2.1:80", MASQ_YES),
		FL("node to externalIP: all, masqueraded", NODE_IP, true, "192.168.99.11", 80,
		  "10.180.0.1:80, 10.180.2.1:80", MASQ_YES),
	);

	/* No local endpoint: external traffic is dropped, internal still
	 * served. */
	p->endpoints[0].is_local = false;
	fx_plan(f);
	RUN_FLOWS(f,
		FL("external to nodePort, no local endpoints", "203.0.113.2", false, NODE_IP, 3001, "DROP", MASQ_ANY),
		FL("external to LB, no local endpoints", "203.0.113.2", false, "1.2.3.4", 80, "DROP", MASQ_ANY),
		FL("external to externalIP, no local endpoints", "203.0.113.2", false, "192.168.99.11", 80, "DROP",
		  MASQ_ANY),
		FL("pod to nodePort, no local endpoints", "10.0.0.2", false, NODE_IP, 3001,
		  "10.180.0.1:80, 10.180.2.1:80", MASQ_NO),
		FL("node to LB, no local endpoints", NODE_IP, true, "1.2.3.4", 80, "10.180.0.1:80, 10.180.2.1:80",
		  MASQ_YES),
		FL("pod to cluster IP", "10.0.0.2", false, "172.30.0.41", 80, "10.180.0.1:80, 10.180.2.1:80", MASQ_NO),
	);

	/* Without a cluster CIDR, pods cannot be told from outside clients. */
	p->endpoints[0].is_local = true;
	f->s.n_cluster_cidrs = 0;
	fx_plan(f);
	RUN_FLOWS(f,
		FL("pod to nodePort without detector", "10.0.0.2", false, NODE_IP, 3001, "10.180.0.1:80", MASQ_NO),
		FL("node to nodePort without detector", NODE_IP, true, NODE_IP, 3001, "10.180.0.1:80, 10.180.2.1:80",
		  MASQ_YES),
	);
}

/* kube-proxy's TestInternalTrafficPolicy. */
static void test_flow_internal_policy_local(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.1.1", 80);
	p->int_policy = POLICY_LOCAL;
	fx_ep(f, p, "10.0.1.1", 80, EP_READY | EP_LOCAL);
	fx_ep(f, p, "10.0.1.2", 80, EP_READY | EP_LOCAL);
	fx_ep(f, p, "10.0.1.3", 80, EP_READY);
	p = fx_port(f, "ns2", "svc2", "p80", "tcp", "172.30.1.2", 80);
	p->int_policy = POLICY_LOCAL;
	fx_ep(f, p, "10.0.1.3", 80, EP_READY);
	/* Local internal policy with a Cluster node port. */
	p = fx_port(f, "ns3", "svc3", "p80", "tcp", "172.30.1.3", 80);
	p->int_policy = POLICY_LOCAL;
	p->type = SVC_NODE_PORT;
	p->node_port = 3001;
	fx_ep(f, p, "10.0.1.1", 80, EP_READY | EP_LOCAL);
	fx_ep(f, p, "10.0.1.3", 80, EP_READY);
	fx_plan(f);
	RUN_FLOWS(f,
		FL("pod to clusterIP: local endpoints only", "10.0.0.2", false, "172.30.1.1", 80,
		  "10.0.1.1:80, 10.0.1.2:80", MASQ_NO),
		FL("node to clusterIP: local endpoints only", NODE_IP, true, "172.30.1.1", 80,
		  "10.0.1.1:80, 10.0.1.2:80", MASQ_YES),
		FL("no local endpoints: dropped", "10.0.0.2", false, "172.30.1.2", 80, "DROP", MASQ_ANY),
		FL("clusterIP of svc3: local only", "10.0.0.2", false, "172.30.1.3", 80, "10.0.1.1:80", MASQ_NO),
		FL("nodePort of svc3: whole cluster", "203.0.113.2", false, NODE_IP, 3001, "10.0.1.1:80, 10.0.1.3:80",
		  MASQ_YES),
	);
}

/* kube-proxy's TestEndpointSliceWithTerminatingEndpoints* (ProxyTerminatingEndpoints). */
static void test_flow_terminating(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "ready-and-terminating", "p80", "tcp", "172.30.1.1", 80);
	fx_ep(f, p, "10.0.1.1", 80, EP_READY);
	fx_ep(f, p, "10.0.1.2", 80, EP_TERM);
	fx_ep(f, p, "10.0.1.3", 80, EP_TERM_NS);
	fx_ep(f, p, "10.0.1.4", 80, EP_NOTREADY);
	p = fx_port(f, "ns2", "only-terminating", "p80", "tcp", "172.30.1.2", 80);
	fx_ep(f, p, "10.0.1.2", 80, EP_TERM);
	fx_ep(f, p, "10.0.1.3", 80, EP_TERM_NS);
	fx_ep(f, p, "10.0.1.5", 80, EP_TERM | EP_LOCAL);
	p = fx_port(f, "ns3", "none-serving", "p80", "tcp", "172.30.1.3", 80);
	fx_ep(f, p, "10.0.1.3", 80, EP_TERM_NS);
	fx_ep(f, p, "10.0.1.4", 80, EP_NOTREADY);
	/* Local external policy: the local terminating endpoint serves
	 * external traffic while the cluster has only a remote ready one. */
	p = fx_port(f, "ns4", "local-terminating", "p80", "tcp", "172.30.1.4", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3004;
	p->ext_policy = POLICY_LOCAL;
	fx_ep(f, p, "10.0.2.1", 80, EP_READY);
	fx_ep(f, p, "10.0.1.2", 80, EP_TERM | EP_LOCAL);
	fx_ep(f, p, "10.0.1.3", 80, EP_TERM_NS | EP_LOCAL);
	p = fx_port(f, "ns5", "local-ready-wins", "p80", "tcp", "172.30.1.5", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3005;
	p->ext_policy = POLICY_LOCAL;
	fx_ep(f, p, "10.0.1.1", 80, EP_READY | EP_LOCAL);
	fx_ep(f, p, "10.0.1.2", 80, EP_TERM | EP_LOCAL);
	fx_plan(f);
	RUN_FLOWS(f,
		FL("ready endpoints only", "10.0.0.2", false, "172.30.1.1", 80, "10.0.1.1:80", MASQ_NO),
		FL("serving terminating endpoints when none is ready", "10.0.0.2", false, "172.30.1.2", 80,
		  "10.0.1.2:80, 10.0.1.5:80", MASQ_NO),
		FL("nothing serving: rejected", "10.0.0.2", false, "172.30.1.3", 80, "REJECT", MASQ_ANY),
		FL("cluster traffic: the remote ready endpoint", "10.0.0.2", false, "172.30.1.4", 80, "10.0.2.1:80",
		  MASQ_NO),
		FL("external traffic: the local terminating endpoint", "203.0.113.2", false, NODE_IP, 3004,
		  "10.0.1.2:80", MASQ_NO),
		FL("external traffic: local ready beats local terminating", "203.0.113.2", false, NODE_IP, 3005,
		  "10.0.1.1:80", MASQ_NO),
	);
}

/* kube-proxy's topology tests: zone hints are all or nothing. */
static void test_flow_topology_hints(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;
	struct endpoint *e;

	f->s.zone = "zone-a";
	p = fx_port(f, "ns1", "hinted", "p80", "tcp", "172.30.1.1", 80);
	fx_hints(f, fx_ep(f, p, "10.0.1.1", 80, EP_READY), "zone-a");
	fx_hints(f, fx_ep(f, p, "10.0.1.2", 80, EP_READY), "zone-b");
	fx_hints(f, fx_ep(f, p, "10.0.1.3", 80, EP_READY), "zone-c,zone-a");
	fx_ep(f, p, "10.0.1.4", 80, EP_TERM); /* not ready: its missing hints do not count */
	p = fx_port(f, "ns2", "one-unhinted", "p80", "tcp", "172.30.1.2", 80);
	fx_hints(f, fx_ep(f, p, "10.0.1.1", 80, EP_READY), "zone-a");
	fx_ep(f, p, "10.0.1.2", 80, EP_READY);
	p = fx_port(f, "ns3", "none-for-zone", "p80", "tcp", "172.30.1.3", 80);
	fx_hints(f, fx_ep(f, p, "10.0.1.1", 80, EP_READY), "zone-b");
	fx_hints(f, fx_ep(f, p, "10.0.1.2", 80, EP_READY), "zone-c");
	p = fx_port(f, "ns4", "empty-hints", "p80", "tcp", "172.30.1.4", 80);
	e = fx_ep(f, p, "10.0.1.1", 80, EP_READY);
	e->has_hints = true; /* hints: {} counts as no zone hint */
	fx_hints(f, fx_ep(f, p, "10.0.1.2", 80, EP_READY), "zone-a");
	/* Local external policy ignores hints for external traffic. */
	p = fx_port(f, "ns5", "local-policy", "p80", "tcp", "172.30.1.5", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3005;
	p->ext_policy = POLICY_LOCAL;
	fx_hints(f, fx_ep(f, p, "10.0.1.1", 80, EP_READY), "zone-a");
	fx_hints(f, fx_ep(f, p, "10.0.1.2", 80, EP_READY | EP_LOCAL), "zone-b");
	fx_plan(f);
	RUN_FLOWS(f,
		FL("hints for this zone", "10.0.0.2", false, "172.30.1.1", 80, "10.0.1.1:80, 10.0.1.3:80", MASQ_NO),
		FL("one ready endpoint without hints: all", "10.0.0.2", false, "172.30.1.2", 80,
		  "10.0.1.1:80, 10.0.1.2:80", MASQ_NO),
		FL("no endpoint for this zone: all", "10.0.0.2", false, "172.30.1.3", 80, "10.0.1.1:80, 10.0.1.2:80",
		  MASQ_NO),
		FL("empty forZones: all", "10.0.0.2", false, "172.30.1.4", 80, "10.0.1.1:80, 10.0.1.2:80", MASQ_NO),
		FL("cluster IP uses hints", "10.0.0.2", false, "172.30.1.5", 80, "10.0.1.1:80", MASQ_NO),
		FL("Local external traffic ignores hints", "203.0.113.2", false, NODE_IP, 3005, "10.0.1.2:80",
		  MASQ_NO),
	);
	/* A node without a zone label ignores hints. */
	f->s.zone = NULL;
	fx_plan(f);
	RUN_FLOWS(f,
		FL("no node zone: all", "10.0.0.2", false, "172.30.1.1", 80, "10.0.1.1:80, 10.0.1.2:80, 10.0.1.3:80",
		  MASQ_NO),
	);
}

/* ClientIP affinity: an existing entry pins the client; a new connection
 * is spread and records its endpoint. */
static void test_flow_session_affinity(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;
	char sep1[RS_CHAIN_MAXLEN + 1], sep2[RS_CHAIN_MAXLEN + 1];
	struct trace_result res = { 0 };
	struct trace_packet pkt = {
		.src = ip("10.0.0.2"), .dst = ip("172.30.0.41"), .proto = PROTO_TCP, .dport = 80,
	};
	struct trace_env env = { 0 };

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	p->affinity_client_ip = true;
	p->affinity_timeout = 600;
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	fx_ep(f, p, "10.180.0.2", 80, EP_READY);
	fx_plan(f);
	chain_name("KUBE-SEP-", "ns1/svc1:p80", "tcp", "10.180.0.1:80", sep1);
	chain_name("KUBE-SEP-", "ns1/svc1:p80", "tcp", "10.180.0.2:80", sep2);
	RUN_FLOWS(f,
		FL("new client: spread", "10.0.0.2", false, "172.30.0.41", 80, "10.180.0.1:80, 10.180.0.2:80", MASQ_NO),
		FLR("client pinned to the second", "10.0.0.2", false, "172.30.0.41", 80, "10.180.0.2:80", MASQ_NO,
		  NULL, sep2),
		FLR("client pinned to the first", "10.0.0.2", false, "172.30.0.41", 80, "10.180.0.1:80", MASQ_NO,
		  NULL, sep1),
	);
	env.local_addrs = f->s.local_addrs;
	env.n_local_addrs = f->s.n_local_addrs;
	assert_int_equal(trace_packet(f->rs, &env, &pkt, &res), 0);
	for (size_t i = 0; i < res.n; i++) {
		const struct trace_outcome *o = &res.o[i];
		char buf[INET6_ADDRSTRLEN];

		assert_int_equal(o->verdict, TRACE_DNAT);
		assert_non_null(o->recent_set);
		assert_string_equal(o->recent_set,
				    streq(ipaddr_fmt(&o->dnat_addr, buf, sizeof(buf)), "10.180.0.1") ? sep1
												     : sep2);
	}
	trace_result_done(&res);
}

/* Masquerading: --masquerade-all, and no masquerading of cluster-IP
 * traffic without a local-traffic detector. */
static void test_flow_masquerade(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3001;
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	f->s.masquerade_all = true;
	fx_plan(f);
	RUN_FLOWS(f,
		FL("masquerade-all: pod to clusterIP", "10.0.0.2", false, "172.30.0.41", 80, "10.180.0.1:80", MASQ_YES),
	);
	f->s.masquerade_all = false;
	f->s.n_cluster_cidrs = 0;
	fx_plan(f);
	RUN_FLOWS(f,
		FL("no detector: pod to clusterIP", "10.0.0.2", false, "172.30.0.41", 80, "10.180.0.1:80", MASQ_NO),
		FL("no detector: external to clusterIP", "203.0.113.2", false, "172.30.0.41", 80, "10.180.0.1:80",
		  MASQ_NO),
		FL("no detector: hairpin still masqueraded", "10.180.0.1", false, "172.30.0.41", 80, "10.180.0.1:80",
		  MASQ_YES),
		FL("no detector: external to nodePort", "203.0.113.2", false, NODE_IP, 3001, "10.180.0.1:80", MASQ_YES),
	);
}

/* Large-cluster mode changes only comments, never where packets go. */
static void test_flow_large_cluster(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	f->s.large_cluster_threshold = 0;
	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "172.30.0.41", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3001;
	p->ext_policy = POLICY_LOCAL;
	fx_ep(f, p, "10.180.0.1", 80, EP_READY | EP_LOCAL);
	fx_ep(f, p, "10.180.0.2", 80, EP_READY);
	fx_ep(f, p, "10.180.0.3", 80, EP_READY | EP_LOCAL);
	fx_plan(f);
	RUN_FLOWS(f,
		FL("pod to clusterIP", "10.0.0.2", false, "172.30.0.41", 80,
		  "10.180.0.1:80, 10.180.0.2:80, 10.180.0.3:80", MASQ_NO),
		FL("external to nodePort", "203.0.113.2", false, NODE_IP, 3001, "10.180.0.1:80, 10.180.0.3:80",
		  MASQ_NO),
		FL("hairpin", "10.180.0.2", false, "172.30.0.41", 80, "10.180.0.1:80, 10.180.0.2:80, 10.180.0.3:80",
		  MASQ_ANY),
	);
}

/*
 * Trace a new tcp connection from 10.0.0.2 to ns1/svc1 (ClientIP affinity)
 * with the affinity entry `recent` present (NULL: none).  Every outcome must
 * be a DNAT whose --set/--update name is the KUBE-SEP- name of the endpoint
 * it went to; with an entry, all go to that endpoint.
 */
static void expect_affinity(struct fx *f, const char *recent, const char *const sep[3])
{
	static const char *const eps[3] = { "10.180.0.1", "10.180.0.2", "10.180.0.3" };
	struct trace_env env = {
		.local_addrs = f->s.local_addrs, .n_local_addrs = f->s.n_local_addrs,
		.recent_name = recent,
	};
	struct trace_packet pkt = {
		.src = ip("10.0.0.2"), .dst = ip("172.30.0.41"), .proto = PROTO_TCP, .dport = 80,
	};
	struct trace_result res = { 0 };

	assert_int_equal(trace_packet(f->rs, &env, &pkt, &res), 0);
	assert_true(near(trace_prob_verdict(&res, TRACE_DNAT), 1.0));
	for (size_t i = 0; i < res.n; i++) {
		const struct trace_outcome *o = &res.o[i];
		char buf[INET6_ADDRSTRLEN];
		size_t k;

		ipaddr_fmt(&o->dnat_addr, buf, sizeof(buf));
		for (k = 0; k < 3 && !streq(buf, eps[k]); k++)
			;
		if (k == 3 || !o->recent_set || !streq(o->recent_set, sep[k]) ||
		    (recent && !streq(recent, sep[k]))) {
			trace_result_print(&res, stderr);
			fail_msg("affinity entry %s: outcome to %s recorded %s", recent ? recent : "none",
				 buf, o->recent_set ? o->recent_set : "nothing");
		}
	}
	trace_result_done(&res);
}

/* The compact layout sends packets where kube-proxy's does (the same flows
 * through both); it masquerades every hairpin-capable endpoint's traffic to
 * its service, where kube-proxy marks only what lands on the sender. */
static void test_flow_compact(void **state)
{
	struct fx *f = *state;
	char sep[3][RS_CHAIN_MAXLEN + 1];
	const char *const seps[3] = { sep[0], sep[1], sep[2] };

	chain_name("KUBE-SEP-", "ns1/svc1:p80", "tcp", "10.180.0.1:80", sep[0]);
	chain_name("KUBE-SEP-", "ns1/svc1:p80", "tcp", "10.180.0.2:80", sep[1]);
	chain_name("KUBE-SEP-", "ns1/svc1:p80", "tcp", "10.180.0.3:80", sep[2]);
	build_compact(f);
	for (int compact = 0; compact < 2; compact++) {
		f->s.compact_endpoints_threshold = compact ? 1 : 0;
		fx_plan(f);
		assert_int_equal(has_prefix_chain(f->rs, "KUBE-SEP-"), !compact);
		RUN_FLOWS(f,
			FL("new client: spread", "10.0.0.2", false, "172.30.0.41", 80,
			  "10.180.0.1:80, 10.180.0.2:80, 10.180.0.3:80", MASQ_NO),
			FLR("client pinned to the second", "10.0.0.2", false, "172.30.0.41", 80,
			  "10.180.0.2:80", MASQ_NO, NULL, sep[1]),
			FLR("client pinned to the third", "10.0.0.2", false, "172.30.0.41", 80,
			  "10.180.0.3:80", MASQ_NO, NULL, sep[2]),
			FLR("entry of another list: spread", "10.0.0.2", false, "172.30.0.41", 80,
			  "10.180.0.1:80, 10.180.0.2:80, 10.180.0.3:80", MASQ_NO, NULL, "KUBE-SEP-OTHER"),
			FL("external to clusterIP is masqueraded", "203.0.113.2", false, "172.30.0.41", 80,
			  "10.180.0.1:80, 10.180.0.2:80, 10.180.0.3:80", MASQ_YES),
			FL("node to clusterIP is masqueraded", NODE_IP, true, "172.30.0.41", 80,
			  "10.180.0.1:80, 10.180.0.2:80, 10.180.0.3:80", MASQ_YES),
			FLP("udp: two endpoints, target port", "10.0.0.2", false, "172.30.0.42", 53,
			  "10.180.0.4:5353, 10.180.0.5:5353", MASQ_NO, "udp"),
			FLP("tcp to the udp port", "10.0.0.2", false, "172.30.0.42", 53, "", MASQ_ANY, "tcp"),
			FL("external to nodePort: local endpoint, source kept", "203.0.113.2", false, NODE_IP,
			  3003, "10.180.0.6:80", MASQ_NO),
			FL("pod to nodePort: short-circuited to all", "10.0.0.2", false, NODE_IP, 3003,
			  "10.180.0.6:80, 10.180.0.7:80", MASQ_NO),
			FL("node to nodePort: all, masqueraded", NODE_IP, true, NODE_IP, 3003,
			  "10.180.0.6:80, 10.180.0.7:80", MASQ_YES),
			FL("wrong port", "10.0.0.2", false, "172.30.0.41", 81, "", MASQ_ANY),
		);
		/* --set (new client) and --update (pinned) record the endpoint. */
		expect_affinity(f, NULL, seps);
		expect_affinity(f, sep[0], seps);
		expect_affinity(f, sep[2], seps);
	}
	/* Compact hairpin: masqueraded wherever the connection lands. */
	RUN_FLOWS(f,
		FL("local endpoint to its service", "10.180.0.1", false, "172.30.0.41", 80,
		  "10.180.0.1:80, 10.180.0.2:80, 10.180.0.3:80", MASQ_YES),
		FLR("local endpoint pinned to itself", "10.180.0.1", false, "172.30.0.41", 80,
		  "10.180.0.1:80", MASQ_YES, NULL, sep[0]),
		FLP("endpoint without a node name", "10.180.0.5", false, "172.30.0.42", 53,
		  "10.180.0.4:5353, 10.180.0.5:5353", MASQ_YES, "udp"),
		FL("pod of another node via the node port short-circuit", "10.180.0.7", false, NODE_IP,
		  3003, "10.180.0.6:80, 10.180.0.7:80", MASQ_YES),
		FL("local endpoint via the node port", "10.180.0.6", false, NODE_IP, 3003,
		  "10.180.0.6:80, 10.180.0.7:80", MASQ_YES),
		/* Its own node DNATs a remote pod's cluster IP traffic: no mark
		 * here for it (kube-proxy would mark the third that lands on it). */
		FL("remote endpoint to the cluster IP", "10.180.0.2", false, "172.30.0.41", 80,
		  "10.180.0.1:80, 10.180.0.2:80, 10.180.0.3:80", MASQ_NO),
	);
}

/* Headless and ExternalName services: packets pass untouched. */
static void test_flow_skipped(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "extname", "p80", "tcp", "172.30.0.41", 80);
	p->type = SVC_EXTERNAL_NAME;
	p->skipped = true;
	p->skip_reason = "ExternalName";
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	p = fx_port(f, "ns1", "other-proxy", "p80", "tcp", "172.30.0.42", 80);
	p->skipped = true;
	p->skip_reason = "service-proxy-name";
	fx_plan(f);
	RUN_FLOWS(f,
		FL("ExternalName", "10.0.0.2", false, "172.30.0.41", 80, "", MASQ_ANY),
		FL("another proxy's service, no endpoints: not rejected", "10.0.0.2", false, "172.30.0.42", 80, "",
		  MASQ_ANY),
	);
}

/* The TestOverallIPTablesRules services, by packet. */
static void test_flow_overall(void **state)
{
	struct fx *f = *state;

	build_overall(f);
	fx_plan(f);
	RUN_FLOWS(f,
		FL("svc1 clusterIP", "10.0.0.2", false, "172.30.0.41", 80, "10.180.0.1:80", MASQ_NO),
		FL("svc2 external: no local endpoint", "203.0.113.2", false, "1.2.3.4", 80, "DROP", MASQ_ANY),
		FL("svc2 pod to LB", "10.0.0.2", false, "1.2.3.4", 80, "10.180.0.2:80", MASQ_NO),
		FL("svc3 nodePort", "203.0.113.2", false, NODE_IP, 3003, "10.180.0.3:80", MASQ_YES),
		FL("svc4 externalIP", "203.0.113.2", false, "192.168.99.33", 80, "10.180.0.4:80, 10.180.0.5:80",
		  MASQ_YES),
		FL("svc5 LB from an allowed source", "203.0.113.2", false, "5.6.7.8", 80, "10.180.0.3:80", MASQ_YES),
		FL("svc5 LB from another source", "203.0.113.129", false, "5.6.7.8", 80, "DROP", MASQ_ANY),
		FL("svc6 no endpoints", "10.0.0.2", false, "172.30.0.46", 80, "REJECT", MASQ_ANY),
	);
}

/* The original (2014) format: a node port on every local address, no
 * cluster IP, endpoints from the listed ip:ports (issue 2's mapping). */
static void test_flow_legacy(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "default", "nodejs", "", "tcp", NULL, 10000);
	p->origin = ORIGIN_LEGACY;
	p->type = SVC_NODE_PORT;
	p->node_port = 10000;
	fx_ep(f, p, "10.240.180.168", 8000, EP_READY);
	fx_ep(f, p, "10.240.180.169", 8000, EP_READY);
	p = fx_port(f, "default", "empty", "", "tcp", NULL, 10001);
	p->origin = ORIGIN_LEGACY;
	p->type = SVC_NODE_PORT;
	p->node_port = 10001;
	/* Not legacy and no cluster IP: still not programmed. */
	p = fx_port(f, "default", "nocip", "", "tcp", NULL, 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 10002;
	fx_ep(f, p, "10.240.180.170", 8000, EP_READY);
	fx_plan(f);
	assert_int_equal(f->stats.services, 2);
	assert_int_equal(diag_count(&f->diags, DIAG_NOTE), 1);
	/* Nothing in KUBE-SERVICES but the node-port jump. */
	assert_int_equal(ruleset_find_chain(f->rs, RS_NAT, "KUBE-SERVICES")->n_rules, 1);
	RUN_FLOWS(f,
		FL("outside to the node's address", "203.0.113.9", false, NODE_IP, 10000,
		   "10.240.180.168:8000, 10.240.180.169:8000", MASQ_YES),
		FL("from the node to localhost", "127.0.0.1", true, "127.0.0.1", 10000,
		   "10.240.180.168:8000, 10.240.180.169:8000", MASQ_YES),
		FL("no endpoints: rejected", "203.0.113.9", false, NODE_IP, 10001, "REJECT", MASQ_ANY),
		FL("other port: not a service packet", "203.0.113.9", false, NODE_IP, 10002, "",
		   MASQ_ANY));
}

/* ---------------------------------------------------------------------- */
/* The dispatch tree (core/dispatch.h)                                     */

#define TMAX(a, b) ((a) > (b) ? (a) : (b))
#define TMIN(a, b) ((a) < (b) ? (a) : (b))

static bool outcome_key_eq(const struct trace_outcome *a, const struct trace_outcome *b)
{
	/* the deciding chain differs by design (a leaf, not the root) */
	return a->verdict == b->verdict && a->masquerade == b->masquerade &&
	       a->masq_marked == b->masq_marked &&
	       ((!a->recent_set && !b->recent_set) ||
		(a->recent_set && b->recent_set && streq(a->recent_set, b->recent_set))) &&
	       (a->verdict != TRACE_DNAT ||
		(a->dnat_port == b->dnat_port && ipaddr_cmp(&a->dnat_addr, &b->dnat_addr) == 0));
}

static double outcome_sum(const struct trace_result *r, const struct trace_outcome *o)
{
	double p = 0;

	for (size_t i = 0; i < r->n; i++)
		if (outcome_key_eq(&r->o[i], o))
			p += r->o[i].probability;
	return p;
}

/* The same outcomes, with the same probabilities, through both rulesets. */
static void expect_same_trace(const struct ruleset *a, const struct ruleset *b,
			      const struct trace_env *env, const struct trace_packet *pkt,
			      const char *what)
{
	struct trace_result ra = { 0 }, rb = { 0 };
	bool ok = true;
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

	assert_int_equal(trace_packet(a, env, pkt, &ra), 0);
	assert_int_equal(trace_packet(b, env, pkt, &rb), 0);
	for (size_t i = 0; ok && i < ra.n; i++)
		ok = near(outcome_sum(&ra, &ra.o[i]), outcome_sum(&rb, &ra.o[i]));
	for (size_t i = 0; ok && i < rb.n; i++)
		ok = near(outcome_sum(&ra, &rb.o[i]), outcome_sum(&rb, &rb.o[i]));
	if (!ok) {
		fprintf(stderr, "linear:\n");
		trace_result_print(&ra, stderr);
		fprintf(stderr, "tree:\n");
		trace_result_print(&rb, stderr);
		fail_msg("%s: %s -> %s:%u (proto %u%s) differs", what,
			 ipaddr_fmt(&pkt->src, s, sizeof(s)), ipaddr_fmt(&pkt->dst, d, sizeof(d)),
			 pkt->dport, pkt->proto, pkt->from_local ? ", from the node" : "");
	}
	trace_result_done(&ra);
	trace_result_done(&rb);
}

static uint32_t lcg(uint32_t *x)
{
	*x = *x * 1103515245u + 12345u;
	return *x >> 8;
}

/*
 * Services at the edges of the tree's ranges: addresses next to /4, /12
 * and /16 boundaries, the first and last leaf, several ports on one IP, an
 * external IP equal to the node IP, an external IP that is another local
 * address (with the port of another service's node port), node ports next
 * to the 16- and 256-port range edges, services without endpoints (filter
 * trees), a LoadBalancer with Local policy and no local endpoint (DROP,
 * health check node port), source ranges.
 */
static void build_edges(struct fx *f)
{
	static const char *const cips[] = {
		"10.96.0.1", "10.96.0.2", "10.111.255.255", "10.112.0.0", "172.30.0.41",
		"172.31.255.254", "176.0.0.1", "175.255.255.255", "0.0.0.1", "255.255.255.254",
		"172.30.15.255", "172.30.16.0",
	};
	static const unsigned nps[] = { 30719, 30720, 30735, 30736, 32767, 30000, 30975, 30976 };
	struct svc_port *p;
	char name[32];

	f->local_addrs[1] = ip("192.168.0.3");
	f->s.n_local_addrs = 2;
	for (size_t i = 0; i < ARRAY_SIZE(cips); i++) {
		snprintf(name, sizeof(name), "svc%02zu", i);
		p = fx_port(f, "edge", name, "http", "tcp", cips[i], 80);
		if (i < ARRAY_SIZE(nps)) {
			p->type = SVC_NODE_PORT;
			p->node_port = (uint16_t)nps[i];
		}
		fx_ep(f, p, "10.180.0.1", 8080 + (unsigned)i, EP_READY);
		fx_ep(f, p, "10.180.1.1", 8080 + (unsigned)i, EP_READY | EP_LOCAL);
		/* a second port on the same IP, another protocol */
		p = fx_port(f, "edge", name, "dns", "udp", cips[i], 53);
		fx_ep(f, p, "10.180.0.2", 5353, EP_READY);
	}
	/* external IP = the node IP; another = a local address, on the port
	 * of svc01's node port, and without endpoints */
	p = fx_port(f, "edge", "ext", "http", "tcp", "172.30.7.7", 80);
	fx_ips(f, &p->external_ips, &p->n_external_ips, NODE_IP ",198.51.100.7");
	fx_ep(f, p, "10.180.2.1", 80, EP_READY);
	p = fx_port(f, "edge", "extlocal", "http", "tcp", "172.30.7.8", 30720);
	fx_ips(f, &p->external_ips, &p->n_external_ips, "192.168.0.3");
	/* no endpoints: REJECT in filter KUBE-SERVICES, KUBE-EXTERNAL-SERVICES */
	p = fx_port(f, "edge", "empty", "http", "tcp", "172.30.9.9", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 31000;
	fx_ips(f, &p->external_ips, &p->n_external_ips, "198.51.100.9");
	p = fx_port(f, "edge", "empty2", "http", "udp", "10.96.0.3", 53);
	p->type = SVC_NODE_PORT;
	p->node_port = 30721;
	/* LB, Local policy, no local endpoint: DROP; health check node port */
	p = fx_port(f, "edge", "lb", "http", "tcp", "172.30.8.8", 80);
	p->type = SVC_LOAD_BALANCER;
	p->node_port = 31001;
	p->ext_policy = POLICY_LOCAL;
	p->health_check_node_port = 31002;
	fx_ips(f, &p->lb_ips, &p->n_lb_ips, "198.51.100.8");
	fx_ep(f, p, "10.180.3.1", 80, EP_READY);
	p = fx_port(f, "edge", "lbfw", "http", "tcp", "172.30.8.9", 80);
	p->type = SVC_LOAD_BALANCER;
	p->node_port = 31003;
	fx_ips(f, &p->lb_ips, &p->n_lb_ips, "198.51.100.10");
	fx_nets(f, &p->lb_source_ranges, &p->n_lb_source_ranges, "203.0.113.0/25");
	fx_ep(f, p, "10.180.3.2", 80, EP_READY);
	p->affinity_client_ip = true;
	/* after lb's node-port DROP in filter KUBE-EXTERNAL-SERVICES, a REJECT
	 * for a local external IP on the same port: the DROP comes first */
	p = fx_port(f, "edge", "zlocal", "http", "tcp", "172.30.8.10", 31001);
	fx_ips(f, &p->external_ips, &p->n_external_ips, "192.168.0.3");
}

/* Every service address and port, their neighbours, the node's addresses
 * with every node port and its neighbours, from a pod, from outside and
 * from the node: the same outcomes linear and as trees. */
static void check_equivalent(struct fx *f, const struct ruleset *lin, const char *what)
{
	static const char *const srcs[] = { "10.0.0.2", "203.0.113.2", "203.0.113.200", NODE_IP };
	struct trace_env env = { .local_addrs = f->s.local_addrs, .n_local_addrs = f->s.n_local_addrs };
	static const uint8_t protos[] = { PROTO_TCP, PROTO_UDP };
	size_t n = 0;

	for (size_t i = 0; i < f->d.n_ports; i++) {
		const struct svc_port *sp = &f->d.ports[i];
		struct ipaddr dsts[8];
		size_t nd = 0;
		uint16_t ports[4] = { sp->port, (uint16_t)(sp->port + 1), sp->node_port,
				      sp->health_check_node_port };

		if (sp->n_cluster_ips) {
			struct ipaddr a = sp->cluster_ips[0];
			uint32_t h = ntohl(a.u.v4.s_addr);

			dsts[nd++] = a;
			a.u.v4.s_addr = htonl(h + 1);
			dsts[nd++] = a;
			a.u.v4.s_addr = htonl(h - 1);
			dsts[nd++] = a;
		}
		for (size_t k = 0; k < sp->n_external_ips && nd < 6; k++)
			dsts[nd++] = sp->external_ips[k];
		for (size_t k = 0; k < sp->n_lb_ips && nd < 6; k++)
			dsts[nd++] = sp->lb_ips[k];
		dsts[nd++] = ip(NODE_IP);
		dsts[nd++] = ip("192.168.0.3");
		for (size_t d = 0; d < nd; d++)
			for (size_t s = 0; s < ARRAY_SIZE(srcs); s++)
				for (size_t k = 0; k < ARRAY_SIZE(ports); k++)
					for (size_t q = 0; q < ARRAY_SIZE(protos); q++) {
						struct trace_packet pkt = {
							.src = ip(srcs[s]), .dst = dsts[d],
							.proto = protos[q], .dport = ports[k],
							.from_local = streq(srcs[s], NODE_IP),
						};

						if (!ports[k])
							continue;
						for (int pm = -1; pm <= 1; pm += k >= 2 ? 1 : 2) {
							pkt.dport = (uint16_t)(ports[k] + pm * (k >= 2));
							expect_same_trace(lin, f->rs, &env, &pkt, what);
							n++;
						}
					}
	}
	/* localhost node ports, from the node */
	for (size_t i = 0; i < f->d.n_ports; i++) {
		struct trace_packet pkt = {
			.src = ip("127.0.0.1"), .dst = ip("127.0.0.1"), .proto = f->d.ports[i].protocol,
			.dport = f->d.ports[i].node_port, .from_local = true,
		};

		if (pkt.dport)
			expect_same_trace(lin, f->rs, &env, &pkt, what);
	}
	assert_true(n > 1000);
}

static void test_tree_equivalent(void **state)
{
	static const size_t leaves[] = { 32, 16, 4, 2, 1 };
	struct fx *f = *state;
	struct ruleset *lin;

	build_edges(f);
	f->s.dispatch = DISPATCH_LINEAR;
	fx_plan(f);
	assert_false(has_prefix_chain(f->rs, DISPATCH_PREFIX));
	lin = TAKE_PTR(f->rs);
	for (size_t i = 0; i < ARRAY_SIZE(leaves); i++) {
		char what[64];

		f->s.dispatch = DISPATCH_TREE;
		f->s.dispatch_leaf_max = leaves[i];
		fx_plan(f);
		assert_true(f->stats.dispatch_trees == 5);
		snprintf(what, sizeof(what), "tree with leaves of %zu", leaves[i]);
		check_equivalent(f, lin, what);
	}
	ruleset_free(lin);
}

/* The same with --nodeport-addresses: KUBE-SERVICES then ends with one
 * "-d ADDR -j KUBE-NODEPORTS" per matching local address (192.168.0.3
 * only), which stay after the tree. */
static void test_tree_equivalent_nodeport_addresses(void **state)
{
	static const size_t leaves[] = { 16, 1 };
	struct fx *f = *state;
	struct ruleset *lin;
	const struct rs_chain *c;

	build_edges(f);
	f->np_addrs[0] = net("192.168.0.3/32");
	f->s.nodeport_addresses = f->np_addrs;
	f->s.n_nodeport_addresses = 1;
	f->s.dispatch = DISPATCH_LINEAR;
	fx_plan(f);
	lin = TAKE_PTR(f->rs);
	for (size_t i = 0; i < ARRAY_SIZE(leaves); i++) {
		f->s.dispatch = DISPATCH_TREE;
		f->s.dispatch_leaf_max = leaves[i];
		fx_plan(f);
		c = ruleset_find_chain(f->rs, RS_NAT, "KUBE-SERVICES");
		assert_string_equal(c->rules[c->n_rules - 1].t.u.chain, "KUBE-NODEPORTS");
		assert_int_equal(c->rules[c->n_rules - 1].dst.plen, 32);
		check_equivalent(f, lin, "tree, --nodeport-addresses");
	}
	ruleset_free(lin);
}

/* Depth of the tree under chain c (1: a leaf), checking every chain's
 * shape on the way: a tree chain jumps only to tree chains (at most 16
 * rules, each commented "<root> <range>") or is a leaf of service rules
 * (at most leaf_max, unless all for one address). */
static unsigned tree_depth(const struct ruleset *rs, enum rs_table t, const struct rs_chain *c,
			   const char *root, size_t leaf_max, size_t *ret_leaf_rules)
{
	unsigned depth = 0, sub;
	size_t jumps = 0;

	assert_non_null(c);
	for (size_t i = 0; i < c->n_rules; i++) {
		const struct rs_rule *r = &c->rules[i];

		if (r->t.kind != RS_T_JUMP || strncmp(r->t.u.chain, DISPATCH_PREFIX, 9) != 0)
			continue;
		jumps++;
		assert_int_equal(r->m[0].kind, RS_M_COMMENT);
		assert_true(strncmp(r->m[0].u.comment, root, strlen(root)) == 0);
		assert_int_equal(r->m[0].u.comment[strlen(root)], ' ');
		sub = tree_depth(rs, t, ruleset_find_chain(rs, t, r->t.u.chain), root, leaf_max,
				 ret_leaf_rules);
		depth = TMAX(depth, sub);
	}
	if (!jumps) {
		assert_true(c->n_rules <= leaf_max);
		*ret_leaf_rules += c->n_rules;
		return 1;
	}
	if (!strncmp(c->name, DISPATCH_PREFIX, 9))
		assert_int_equal(jumps, c->n_rules);
	assert_true(jumps <= 16);
	return depth + 1;
}

/* n ClusterIP services (1 in 4 NodePort), addresses random in
 * 172.30.0.0/16, node ports in 30000-32767. */
static void build_random(struct fx *f, unsigned n, uint32_t seed)
{
	uint32_t x = seed;

	f->d.ports = fx_alloc(f, n + 1, sizeof(*f->d.ports));
	f->cap_ports = n + 1;
	f->d.n_ports = 0;
	for (unsigned i = 0; i < n; i++) {
		char name[32], cip[32];
		struct svc_port *p;
		uint32_t a = lcg(&x) & 0xffff;

		snprintf(name, sizeof(name), "svc%05u", i);
		snprintf(cip, sizeof(cip), "172.30.%u.%u", a >> 8, a & 0xff);
		p = fx_port(f, "rnd", name, "http", "tcp", cip, 80);
		if (i % 4 == 0) {
			p->type = SVC_NODE_PORT;
			p->node_port = (uint16_t)(30000 + i / 4);
		}
		fx_ep(f, p, "10.180.0.1", 8080, EP_READY);
	}
}

static void test_tree_shape(void **state)
{
	struct fx *f = *state;
	size_t leaf_rules = 0;
	unsigned depth;
	char *text;

	build_random(f, 1500, 7);
	f->s.dispatch = DISPATCH_AUTO;
	fx_plan(f);
	/* auto, past the threshold in nat KUBE-SERVICES only */
	assert_int_equal(f->stats.dispatch_trees, 1);
	assert_false(ruleset_find_chain(f->rs, RS_FILTER, "KUBE-SERVICES")->n_rules);
	f->s.dispatch_threshold = 300;
	fx_plan(f);
	assert_int_equal(f->stats.dispatch_trees, 2); /* and nat KUBE-NODEPORTS (375) */
	depth = tree_depth(f->rs, RS_NAT, ruleset_find_chain(f->rs, RS_NAT, "KUBE-SERVICES"),
			   "KUBE-SERVICES", f->s.dispatch_leaf_max, &leaf_rules);
	assert_int_equal(leaf_rules, 1500);
	/* 1500 in a /16: root -> 172.30.0.0/16 -> /20 -> /24 leaves */
	assert_true(depth <= 4);
	leaf_rules = 0;
	depth = tree_depth(f->rs, RS_NAT, ruleset_find_chain(f->rs, RS_NAT, "KUBE-NODEPORTS"),
			   "KUBE-NODEPORTS", f->s.dispatch_leaf_max, &leaf_rules);
	assert_int_equal(leaf_rules, 375);
	assert_true(depth <= 4);
	/* the last rule of KUBE-SERVICES is still the node-port jump */
	{
		const struct rs_chain *s = ruleset_find_chain(f->rs, RS_NAT, "KUBE-SERVICES");
		const struct rs_rule *last = &s->rules[s->n_rules - 1];

		assert_string_equal(last->t.u.chain, "KUBE-NODEPORTS");
		assert_int_equal(last->m[1].kind, RS_M_ADDRTYPE);
		for (size_t i = 0; i + 1 < s->n_rules; i++)
			assert_true(!strncmp(s->rules[i].t.u.chain, DISPATCH_PREFIX, 9));
	}
	/* a user still finds a service by its cluster IP */
	text = table_text(f->rs, RS_NAT);
	assert_non_null(strstr(text, "-d 172.30.")); /* the first service's, whatever it is */
	{
		char want[128];
		char cip[INET6_ADDRSTRLEN];

		snprintf(want, sizeof(want), "-d %s/32 -p tcp -m comment --comment \"rnd/svc00000:http cluster IP\"",
			 ipaddr_fmt(&f->d.ports[0].cluster_ips[0], cip, sizeof(cip)));
		assert_non_null(strstr(text, want));
	}
	free(text);
	/* names are deterministic from the content */
	{
		struct ruleset *a = TAKE_PTR(f->rs);
		char *ta, *tb;

		fx_plan(f);
		ta = table_text(a, RS_NAT);
		tb = table_text(f->rs, RS_NAT);
		assert_string_equal(ta, tb);
		free(ta);
		free(tb);
		ruleset_free(a);
	}
}

/* Chains of the dispatch layout (the five roots and KUBE-DSP-) that differ
 * between two plans: added, removed or changed. */
static size_t dispatch_changes(const struct ruleset *a, const struct ruleset *b, size_t *ret_rules)
{
	static const char *const roots[] = { "KUBE-SERVICES", "KUBE-NODEPORTS",
					     "KUBE-EXTERNAL-SERVICES" };
	size_t n = 0;

	for (int t = 0; t < RS_NTABLES; t++) {
		for (int pass = 0; pass < 2; pass++) {
			const struct ruleset *x = pass ? b : a, *y = pass ? a : b;

			for (size_t i = 0; i < x->t[t].n; i++) {
				const struct rs_chain *c = x->t[t].chains[i], *o;
				bool ours = !strncmp(c->name, DISPATCH_PREFIX, 9);

				for (size_t k = 0; k < ARRAY_SIZE(roots); k++)
					ours |= streq(c->name, roots[k]);
				if (!ours)
					continue;
				o = ruleset_find_chain(y, (enum rs_table)t, c->name);
				if (o && (pass || rs_chain_equal(c, o)))
					continue;
				n++;
				if (!pass)
					*ret_rules += c->n_rules;
			}
		}
	}
	return n;
}

/*
 * Stability: services added one at a time to 1,000 (and removed again)
 * rewrite a few dispatch chains each, not the whole chain: measured here
 * (printed) and bounded.  Linear, each add rewrites KUBE-SERVICES whole.
 */
static void test_tree_churn(void **state)
{
	enum { BASE = 1000, STEPS = 60 };
	struct fx *f = *state;
	size_t hist[64] = { 0 }, max = 0, total = 0, rules = 0, max_rules = 0;
	struct ruleset *prev;

	build_random(f, BASE + STEPS, 11);
	f->s.dispatch = DISPATCH_TREE;
	f->d.n_ports = BASE;
	fx_plan(f);
	prev = TAKE_PTR(f->rs);
	for (unsigned step = 0; step < 2 * STEPS; step++) {
		size_t n, r = 0;

		/* add ports BASE.. one by one, then remove them one by one */
		f->d.n_ports = step < STEPS ? BASE + step + 1 : BASE + 2 * STEPS - step - 1;
		fx_plan(f);
		n = dispatch_changes(prev, f->rs, &r);
		assert_true(n >= 1);
		hist[TMIN(n, ARRAY_SIZE(hist) - 1)]++;
		max = TMAX(max, n);
		max_rules = TMAX(max_rules, r);
		total += n;
		rules += r;
		ruleset_free(prev);
		prev = TAKE_PTR(f->rs);
	}
	print_message("tree churn at %u services: %zu adds/removes, dispatch chains rewritten: mean %.2f, max %zu; "
		      "rules in them: mean %.1f, max %zu\n",
		      BASE, (size_t)2 * STEPS, (double)total / (2 * STEPS), max,
		      (double)rules / (2 * STEPS), max_rules);
	for (size_t i = 0; i < ARRAY_SIZE(hist); i++)
		if (hist[i])
			print_message("  %zu chains: %zu times\n", i, hist[i]);
	/* a leaf (+ its parent when it appears, + 16 when it splits) per tree:
	 * nat KUBE-SERVICES and, for node ports, KUBE-NODEPORTS */
	assert_true(max <= 2 * 18);
	assert_true(total <= (size_t)2 * STEPS * 4);
	ruleset_free(prev);
}

/* The threshold: linear below it, per chain. */
static void test_tree_threshold(void **state)
{
	struct fx *f = *state;

	build_random(f, 8, 3);
	f->s.dispatch = DISPATCH_AUTO;
	f->s.dispatch_threshold = 9;
	fx_plan(f);
	assert_false(has_prefix_chain(f->rs, DISPATCH_PREFIX));
	f->s.dispatch_threshold = 8;
	fx_plan(f);
	assert_int_equal(f->stats.dispatch_trees, 1);
	assert_true(has_prefix_chain(f->rs, DISPATCH_PREFIX));
	/* tree: also the 2 node ports */
	f->s.dispatch = DISPATCH_TREE;
	fx_plan(f);
	assert_int_equal(f->stats.dispatch_trees, 2);
	f->s.dispatch_leaf_max = 0;
	qsort(f->d.ports, f->d.n_ports, sizeof(*f->d.ports), port_cmp);
	assert_int_equal(plan_build(&f->d, &f->s, &(struct ruleset *){ NULL }, NULL, NULL), -EINVAL);
}

/* IPv6: addresses of 128 bits, names by hash, shallow trees. */
static void test_tree_ipv6(void **state)
{
	struct fx *f = *state;
	struct ruleset *lin;
	struct trace_env env = { 0 };

	f->s.family = AF_INET6;
	f->node_ips[0] = ip("2001:2::2");
	f->local_addrs[0] = ip("2001:2::2");
	f->cidrs[0] = net("2001:2:0:1::/64");
	for (unsigned i = 0; i < 40; i++) {
		char name[32], cip[64];
		struct svc_port *p;

		snprintf(name, sizeof(name), "v6svc%02u", i);
		snprintf(cip, sizeof(cip), "2001:2:0:ff::%x", i * 977);
		p = fx_port(f, "v6", name, "http", "tcp", cip, 80);
		fx_ep(f, p, "2001:2:0:1::5", 8080 + i, EP_READY);
	}
	f->s.dispatch = DISPATCH_LINEAR;
	fx_plan(f);
	lin = TAKE_PTR(f->rs);
	f->s.dispatch = DISPATCH_TREE;
	f->s.dispatch_leaf_max = 2;
	fx_plan(f);
	env.local_addrs = f->s.local_addrs;
	env.n_local_addrs = 1;
	{
		size_t leaf_rules = 0;
		unsigned depth = tree_depth(f->rs, RS_NAT,
					    ruleset_find_chain(f->rs, RS_NAT, "KUBE-SERVICES"),
					    "KUBE-SERVICES", 2, &leaf_rules);

		/* the shared /112 costs no level of its own */
		assert_true(depth <= 6);
	}
	for (unsigned i = 0; i < 44; i++) {
		char cip[64];
		struct trace_packet pkt = { .src = ip("2001:2:0:1::9"), .proto = PROTO_TCP, .dport = 80 };

		snprintf(cip, sizeof(cip), "2001:2:0:ff::%x", i * 977);
		pkt.dst = ip(cip);
		expect_same_trace(lin, f->rs, &env, &pkt, "ipv6");
	}
	ruleset_free(lin);
}

/* ---------------------------------------------------------------------- */
/* IPv6 and dual-stack (issue 14).  kube-proxy's IPv6 addresses (fd00:...,  */
/* 2001:db8::, 2600:5200::) are mapped into svcnat's plan, 2001:2::/48:     */
/*   service fd00:172:30::41 -> 2001:2:0:f000::41, endpoints                */
/*   fd00:10:180::1 / ::2:1 -> 2001:2:0:180::1 / ::2:1, pod CIDR             */
/*   fd00:10::/64 -> 2001:2:0:10::/64 (pod fd00:10::2 -> 2001:2:0:10::2),    */
/*   external client 2600:5200::1 -> 2001:2:0:5200::1, node IP 2001:db8::1  */
/*   -> 2001:2::1 (2001:db8::/64 -> 2001:2::/64), alternate node IP          */
/*   2001:db8:1::2 -> 2001:2:0:1::2.                                         */

#define NODE_IP6 "2001:2::1"
#define NODE_IP6_ALT "2001:2:0:1::2"
#define POD_CIDR6 "2001:2:0:10::/64"

/* Both families' node addresses and pod CIDRs, as a dual-stack node has. */
static void fx_dual(struct fx *f, int family)
{
	f->s.family = family;
	f->node_ips[0] = ip(NODE_IP);
	f->node_ips[1] = ip(NODE_IP6);
	f->s.n_node_ips = 2;
	f->local_addrs[0] = ip(NODE_IP);
	f->local_addrs[1] = ip("192.168.1.2");
	f->local_addrs[2] = ip(NODE_IP6);
	f->local_addrs[3] = ip(NODE_IP6_ALT);
	f->s.n_local_addrs = 4;
	f->cidrs[0] = net(POD_CIDR);
	f->cidrs[1] = net(POD_CIDR6);
	f->s.n_cluster_cidrs = 2;
}

/* kube-proxy's TestNodePorts, every case (its three ipv6 ones included),
 * without and with its nfacct counters: with them, a localhost node port
 * has its counted 127.0.0.0/8 rule first, and the flows are the same. */
static void test_kp_node_ports(void **state)
{
	static const struct {
		const char *name;
		int family;
		bool localhost_nodeports;
		const char *nodeport_addresses; /* NULL: none */
		bool allow_alt_node_ip;
		bool expect_firewall;
	} cases[] = {
		{ "ipv4, localhost-nodeports enabled", AF_INET, true, NULL, true, true },
		{ "ipv4, localhost-nodeports disabled", AF_INET, false, NULL, true, false },
		{ "ipv4, localhost-nodeports disabled, localhost in nodeport-addresses", AF_INET,
		  false, "192.168.0.0/24,127.0.0.1/32", false, false },
		{ "ipv4, localhost-nodeports enabled, multiple nodeport-addresses", AF_INET, false,
		  "192.168.0.0/24,192.168.1.0/24,2001:2::/64", true, false },
		{ "ipv6, localhost-nodeports enabled", AF_INET6, true, NULL, true, false },
		{ "ipv6, localhost-nodeports disabled", AF_INET6, false, NULL, true, false },
		{ "ipv6, localhost-nodeports disabled, multiple nodeport-addresses", AF_INET6, false,
		  "192.168.0.0/24,192.168.1.0/24,2001:2::/64", false, false },
	};

	for (size_t k = 0; k < 2 * ARRAY_SIZE(cases); k++) {
		size_t i = k % ARRAY_SIZE(cases);
		bool nfacct = k >= ARRAY_SIZE(cases);
		struct fx *f = fx_new();
		bool v4 = cases[i].family == AF_INET;
		const char *svc = v4 ? "172.30.0.41" : "2001:2:0:f000::41";
		const char *ep1 = v4 ? "10.180.0.1" : "2001:2:0:180::1";
		const char *ep2 = v4 ? "10.180.2.1" : "2001:2:0:180::2:1";
		const char *pod = v4 ? "10.0.0.2" : "2001:2:0:10::2";
		const char *ext = v4 ? "203.0.113.2" : "2001:2:0:5200::1";
		const char *node = v4 ? NODE_IP : NODE_IP6;
		const char *alt = v4 ? "192.168.1.2" : NODE_IP6_ALT;
		const char *lo = v4 ? "127.0.0.1" : "::1";
		char out[256];
		struct svc_port *p;

		print_message("  case: %s%s\n", cases[i].name, nfacct ? ", nfacct" : "");
		fx_dual(f, cases[i].family);
		f->s.localhost_nodeports = cases[i].localhost_nodeports;
		f->s.nfacct = nfacct ? PLAN_NFACCT_ALL : 0;
		if (cases[i].nodeport_addresses)
			fx_nets(f, &f->s.nodeport_addresses, &f->s.n_nodeport_addresses,
				cases[i].nodeport_addresses);
		p = fx_port(f, "ns1", "svc1", "p80", "tcp", svc, 80);
		p->type = SVC_NODE_PORT;
		p->node_port = 3001;
		fx_ep(f, p, ep1, 80, EP_READY)->node_name = NULL;
		fx_ep(f, p, ep2, 80, EP_READY | EP_LOCAL);
		fx_plan(f);
		/* run_flow's "ip:port" list splits at the last colon. */
		snprintf(out, sizeof(out), "%s:80, %s:80", ep1, ep2);
		RUN_FLOWS(f,
			FL("pod to cluster IP", pod, false, svc, 80, out, MASQ_NO),
			FL("external to nodePort", ext, false, node, 3001, out, MASQ_YES),
			FL("node to nodePort", node, true, node, 3001, out, MASQ_YES),
		);
		if (v4 && cases[i].localhost_nodeports)
			RUN_FLOWS(f, FL("localhost to nodePort gets masqueraded", lo, true, lo, 3001, out,
					MASQ_YES), );
		else
			RUN_FLOWS(f, FL("localhost to nodePort is ignored", lo, true, lo, 3001, "",
					MASQ_ANY), );
		if (cases[i].allow_alt_node_ip)
			RUN_FLOWS(f, FL("external to nodePort on secondary IP", ext, false, alt, 3001, out,
					MASQ_YES), );
		else
			RUN_FLOWS(f, FL("secondary nodeIP ignores NodePorts", ext, false, alt, 3001, "",
					MASQ_ANY), );
		expect_chain(f->rs, RS_NAT, "KUBE-NODEPORTS",
			     nfacct && cases[i].expect_firewall ?
				     "-A KUBE-NODEPORTS -d 127.0.0.0/8 -p tcp -m comment --comment \"ns1/svc1:p80\" -m tcp --dport 3001 -m nfacct --nfacct-name  localhost_nps_accepted_pkts -j KUBE-EXT-XPGD46QRK7WJZT7O\n"
				     "-A KUBE-NODEPORTS -p tcp -m comment --comment \"ns1/svc1:p80\" -m tcp --dport 3001 -j KUBE-EXT-XPGD46QRK7WJZT7O\n" :
				     "-A KUBE-NODEPORTS -p tcp -m comment --comment \"ns1/svc1:p80\" -m tcp --dport 3001 -j KUBE-EXT-XPGD46QRK7WJZT7O\n");
		expect_chain(f->rs, RS_FILTER, "KUBE-FIREWALL",
			     cases[i].expect_firewall ?
				     "-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment \"block incoming localnet connections\" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP\n" :
				     "");
		fx_teardown((void **)&f);
	}
}

/* An IPv6 plan, exactly: a NodePort service with ClientIP affinity and a
 * service without endpoints, as kube-proxy's ip6tables proxier writes them
 * (same chain names, "[ip]:port" endpoints, icmp6 REJECT, the IPv6 recent
 * mask, "! -d ::1/128" on the node-port jump, no localnet guard). */
static void test_exact_ipv6(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	fx_dual(f, AF_INET6);
	p = fx_port(f, "ns1", "svc1", "p80", "tcp", "2001:2:0:f000::41", 80);
	p->type = SVC_NODE_PORT;
	p->node_port = 3001;
	p->affinity_client_ip = true;
	fx_ep(f, p, "2001:2:0:180::1", 80, EP_READY);
	fx_ep(f, p, "2001:2:0:180::2:1", 80, EP_READY | EP_LOCAL);
	fx_port(f, "ns2", "svc2", "p80", "udp", "2001:2:0:f000::42", 80);
	fx_plan(f);
	expect_table(f->rs, RS_NAT,
		":PREROUTING\n"
		":OUTPUT\n"
		":POSTROUTING\n"
		":KUBE-EXT-XPGD46QRK7WJZT7O\n"
		":KUBE-MARK-MASQ\n"
		":KUBE-NODEPORTS\n"
		":KUBE-POSTROUTING\n"
		":KUBE-SEP-2CPZN5742XOYCZVD\n"
		":KUBE-SEP-VTROCHHRTEVU3ZD7\n"
		":KUBE-SERVICES\n"
		":KUBE-SVC-XPGD46QRK7WJZT7O\n"
		"-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
		"-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
		"-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n"
		"-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment \"masquerade traffic for ns1/svc1:p80 external destinations\" -j KUBE-MARK-MASQ\n"
		"-A KUBE-EXT-XPGD46QRK7WJZT7O -j KUBE-SVC-XPGD46QRK7WJZT7O\n"
		"-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n"
		"-A KUBE-NODEPORTS -p tcp -m comment --comment \"ns1/svc1:p80\" -m tcp --dport 3001 -j KUBE-EXT-XPGD46QRK7WJZT7O\n"
		"-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n"
		"-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0\n"
		"-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully\n"
		"-A KUBE-SEP-2CPZN5742XOYCZVD -s 2001:2:0:180::2:1/128 -m comment --comment \"ns1/svc1:p80\" -j KUBE-MARK-MASQ\n"
		"-A KUBE-SEP-2CPZN5742XOYCZVD -p tcp -m comment --comment \"ns1/svc1:p80\" -m recent --set --name KUBE-SEP-2CPZN5742XOYCZVD --mask ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff --rsource -m tcp -j DNAT --to-destination [2001:2:0:180::2:1]:80\n"
		"-A KUBE-SEP-VTROCHHRTEVU3ZD7 -s 2001:2:0:180::1/128 -m comment --comment \"ns1/svc1:p80\" -j KUBE-MARK-MASQ\n"
		"-A KUBE-SEP-VTROCHHRTEVU3ZD7 -p tcp -m comment --comment \"ns1/svc1:p80\" -m recent --set --name KUBE-SEP-VTROCHHRTEVU3ZD7 --mask ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff --rsource -m tcp -j DNAT --to-destination [2001:2:0:180::1]:80\n"
		"-A KUBE-SERVICES -d 2001:2:0:f000::41/128 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O\n"
		"-A KUBE-SERVICES ! -d ::1/128 -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O ! -s 2001:2:0:10::/64 -d 2001:2:0:f000::41/128 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> [2001:2:0:180::1]:80\" -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-VTROCHHRTEVU3ZD7 --mask ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff --rsource -j KUBE-SEP-VTROCHHRTEVU3ZD7\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> [2001:2:0:180::2:1]:80\" -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-2CPZN5742XOYCZVD --mask ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff --rsource -j KUBE-SEP-2CPZN5742XOYCZVD\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> [2001:2:0:180::1]:80\" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-VTROCHHRTEVU3ZD7\n"
		"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> [2001:2:0:180::2:1]:80\" -j KUBE-SEP-2CPZN5742XOYCZVD\n");
	expect_table(f->rs, RS_FILTER,
		":INPUT\n"
		":FORWARD\n"
		":OUTPUT\n"
		":KUBE-EXTERNAL-SERVICES\n"
		":KUBE-FIREWALL\n"
		":KUBE-FORWARD\n"
		":KUBE-NODEPORTS\n"
		":KUBE-PROXY-FIREWALL\n"
		":KUBE-SERVICES\n"
		"-A INPUT -j KUBE-FIREWALL\n"
		"-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL\n"
		"-A INPUT -m comment --comment \"kubernetes health check service ports\" -j KUBE-NODEPORTS\n"
		"-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES\n"
		"-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL\n"
		"-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n"
		"-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
		"-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES\n"
		"-A OUTPUT -j KUBE-FIREWALL\n"
		"-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL\n"
		"-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
		"-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP\n"
		"-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT\n"
		"-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n"
		"-A KUBE-SERVICES -d 2001:2:0:f000::42/128 -p udp -m comment --comment \"ns2/svc2:p80 has no endpoints\" -m udp --dport 80 -j REJECT --reject-with icmp6-port-unreachable\n");
	assert_int_equal(diag_count(&f->diags, DIAG_NOTE), 0);
}

/*
 * Dual-stack: one desired state, one plan per family, each with its own
 * share (kube-proxy's service_test.go cases "service with both ipv4 and
 * ipv6 configurations under ipv4 mode, ipv6 entries should be filtered"
 * and its ipv6-mode mirror; IPv6 loadBalancerSourceRanges in the IPv6
 * KUBE-FW- chain).  No notes for entries the other plan programs.
 */
static void test_dual_stack_split(void **state)
{
	struct fx *f = *state;
	struct ruleset *v4;
	struct svc_port *p;

	p = fx_port(f, "ns1", "lb", "p80", "tcp", NULL, 80);
	fx_ips(f, &p->cluster_ips, &p->n_cluster_ips, "172.30.0.41,2001:2:0:f000::41");
	p->type = SVC_LOAD_BALANCER;
	p->node_port = 3001;
	fx_ips(f, &p->external_ips, &p->n_external_ips, "192.168.99.11,2001:2:0:e100::11");
	fx_ips(f, &p->lb_ips, &p->n_lb_ips, "1.2.3.4,2001:2:0:e000::4");
	fx_nets(f, &p->lb_source_ranges, &p->n_lb_source_ranges,
		"203.0.113.0/25,2001:2:0:5200::/64");
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	fx_ep(f, p, "2001:2:0:180::1", 80, EP_READY);
	/* IPv4 only, with an IPv6 external IP no run programs: one note. */
	p = fx_port(f, "ns1", "v4only", "p80", "tcp", "172.30.0.42", 80);
	fx_ips(f, &p->external_ips, &p->n_external_ips, "2001:2:0:e100::12");
	fx_ep(f, p, "10.180.0.2", 80, EP_READY);
	/* IPv6 only. */
	p = fx_port(f, "ns1", "v6only", "p80", "tcp", "2001:2:0:f000::43", 80);
	fx_ep(f, p, "2001:2:0:180::3", 80, EP_READY);

	fx_dual(f, AF_INET);
	f->s.dual_stack = true;
	fx_plan(f);
	v4 = TAKE_PTR(f->rs);
	assert_int_equal(f->stats.services, 2);
	assert_int_equal(f->stats.endpoints, 2);
	assert_int_equal(diag_count(&f->diags, DIAG_NOTE), 1);
	assert_non_null(strstr(f->diags.items[0].msg, "no IPv6 cluster IP"));

	fx_dual(f, AF_INET6);
	fx_plan(f);
	assert_int_equal(f->stats.services, 2);
	assert_int_equal(f->stats.endpoints, 2);
	assert_int_equal(diag_count(&f->diags, DIAG_NOTE), 1);

	RUN_FLOWS(f,
		FL("v6 pod to cluster IP", "2001:2:0:10::2", false, "2001:2:0:f000::41", 80,
		   "2001:2:0:180::1:80", MASQ_NO),
		FL("v6 external to external IP", "2001:2:0:5200::1", false, "2001:2:0:e100::11", 80,
		   "2001:2:0:180::1:80", MASQ_YES),
		FL("v6 allowed source to LB IP", "2001:2:0:5200::1", false, "2001:2:0:e000::4", 80,
		   "2001:2:0:180::1:80", MASQ_YES),
		FL("v6 other source to LB IP", "2001:2:0:5300::1", false, "2001:2:0:e000::4", 80,
		   "DROP", MASQ_ANY),
		FL("v6 external to nodePort", "2001:2:0:5200::1", false, NODE_IP6, 3001,
		   "2001:2:0:180::1:80", MASQ_YES),
		FL("v6 pod to the v6-only service", "2001:2:0:10::2", false, "2001:2:0:f000::43", 80,
		   "2001:2:0:180::3:80", MASQ_NO),
		FL("v6 plan ignores the v4-only service's v6 external IP", "2001:2:0:5200::1", false,
		   "2001:2:0:e100::12", 80, "", MASQ_ANY),
	);
	{
		const struct rs_chains *cs = &f->rs->t[RS_NAT];
		const struct rs_chain *fw = NULL;

		for (size_t i = 0; i < cs->n; i++)
			if (!strncmp(cs->chains[i]->name, "KUBE-FW-", 8))
				fw = cs->chains[i];
		assert_non_null(fw);
		/* the IPv6 source range only, then kube-proxy's counting rule */
		assert_int_equal(fw->n_rules, 2);
		assert_int_equal(fw->rules[0].src.addr.family, AF_INET6);
		expect_rule_in(f->rs, RS_NAT, fw->name, "-s 2001:2:0:5200::/64 -m comment --comment \"ns1/lb:p80 loadbalancer IP\" -j KUBE-EXT-");
	}

	ruleset_free(f->rs);
	f->rs = v4;
	fx_dual(f, AF_INET);
	RUN_FLOWS(f,
		FL("v4 pod to cluster IP", "10.0.0.2", false, "172.30.0.41", 80, "10.180.0.1:80", MASQ_NO),
		FL("v4 allowed source to LB IP", "203.0.113.2", false, "1.2.3.4", 80, "10.180.0.1:80",
		   MASQ_YES),
		FL("v4 other source to LB IP", "203.0.113.200", false, "1.2.3.4", 80, "DROP", MASQ_ANY),
		FL("v4 external to nodePort", "203.0.113.2", false, NODE_IP, 3001, "10.180.0.1:80",
		   MASQ_YES),
		FL("v4 pod to the v4-only service", "10.0.0.2", false, "172.30.0.42", 80,
		   "10.180.0.2:80", MASQ_NO),
	);
	/* The IPv4 plan has no IPv6 address anywhere, and the other way round. */
	for (int t = 0; t < RS_NTABLES; t++) {
		char *txt = table_text(f->rs, t);

		assert_null(strstr(txt, "2001:2:"));
		free(txt);
	}
}

/* Without dual_stack (an IPv4-only run), every IPv6 entry is a note. */
static void test_single_family_notes(void **state)
{
	struct fx *f = *state;
	struct svc_port *p;

	p = fx_port(f, "ns1", "lb", "p80", "tcp", NULL, 80);
	fx_ips(f, &p->cluster_ips, &p->n_cluster_ips, "172.30.0.41,2001:2:0:f000::41");
	fx_ips(f, &p->external_ips, &p->n_external_ips, "192.168.99.11,2001:2:0:e100::11");
	fx_ep(f, p, "10.180.0.1", 80, EP_READY);
	fx_ep(f, p, "2001:2:0:180::1", 80, EP_READY);
	p = fx_port(f, "ns1", "v6only", "p80", "tcp", "2001:2:0:f000::43", 80);
	fx_plan(f);
	/* external IP, endpoint, v6only's cluster IP */
	assert_int_equal(diag_count(&f->diags, DIAG_NOTE), 3);
}

/*
 * kube-proxy's TestEnableLocalhostNodePortsIPv6 and
 * TestDisableLocalhostNodePortsIPv6 (pkg/proxy/iptables/proxier_test.go),
 * with its addresses, so the chain names are its own: an IPv6 NodePort
 * service with externalTrafficPolicy Local and no local detector (no
 * cluster CIDR).  Both give the same rules: ip6tables has no
 * route_localnet, so --localhost-nodeports changes nothing in IPv6.
 */
static void test_kp_localhost_nodeports_ipv6(void **state)
{
	static const bool localhost[] = { true, false };

	for (size_t i = 0; i < ARRAY_SIZE(localhost); i++) {
		struct fx *f = fx_new();
		struct svc_port *p;

		print_message("  case: %s\n", localhost[i] ? "TestEnableLocalhostNodePortsIPv6"
							   : "TestDisableLocalhostNodePortsIPv6");
		fx_dual(f, AF_INET6);
		f->s.n_cluster_cidrs = 0;
		f->s.localhost_nodeports = localhost[i];
		p = fx_port(f, "ns1", "svc1", "p80", "tcp", "fd00:ab34::20", 80);
		p->type = SVC_NODE_PORT;
		p->node_port = 30001;
		p->ext_policy = POLICY_LOCAL;
		fx_ep(f, p, "ff06::c1", 80, EP_READY);
		fx_ep(f, p, "ff06::c2", 80, EP_READY | EP_LOCAL);
		fx_plan(f);
		expect_chain(f->rs, RS_NAT, "KUBE-NODEPORTS",
			"-A KUBE-NODEPORTS -p tcp -m comment --comment \"ns1/svc1:p80\" -m tcp --dport 30001 -j KUBE-EXT-XPGD46QRK7WJZT7O\n");
		expect_chain(f->rs, RS_NAT, "KUBE-SERVICES",
			"-A KUBE-SERVICES -d fd00:ab34::20/128 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O\n"
			"-A KUBE-SERVICES ! -d ::1/128 -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n");
		expect_chain(f->rs, RS_NAT, "KUBE-EXT-XPGD46QRK7WJZT7O",
			"-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment \"masquerade LOCAL traffic for ns1/svc1:p80 external destinations\" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ\n"
			"-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment \"route LOCAL traffic for ns1/svc1:p80 external destinations\" -m addrtype --src-type LOCAL -j KUBE-SVC-XPGD46QRK7WJZT7O\n"
			"-A KUBE-EXT-XPGD46QRK7WJZT7O -j KUBE-SVL-XPGD46QRK7WJZT7O\n");
		expect_chain(f->rs, RS_NAT, "KUBE-SEP-LIGRYQQLSZN4UWQ5",
			"-A KUBE-SEP-LIGRYQQLSZN4UWQ5 -s ff06::c1/128 -m comment --comment \"ns1/svc1:p80\" -j KUBE-MARK-MASQ\n"
			"-A KUBE-SEP-LIGRYQQLSZN4UWQ5 -p tcp -m comment --comment \"ns1/svc1:p80\" -m tcp -j DNAT --to-destination [ff06::c1]:80\n");
		expect_chain(f->rs, RS_NAT, "KUBE-SEP-XJJ5QXWGJG344QDZ",
			"-A KUBE-SEP-XJJ5QXWGJG344QDZ -s ff06::c2/128 -m comment --comment \"ns1/svc1:p80\" -j KUBE-MARK-MASQ\n"
			"-A KUBE-SEP-XJJ5QXWGJG344QDZ -p tcp -m comment --comment \"ns1/svc1:p80\" -m tcp -j DNAT --to-destination [ff06::c2]:80\n");
		/* No local detector: no "! -s CIDR" masquerade rule. */
		expect_chain(f->rs, RS_NAT, "KUBE-SVC-XPGD46QRK7WJZT7O",
			"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> [ff06::c1]:80\" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-LIGRYQQLSZN4UWQ5\n"
			"-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> [ff06::c2]:80\" -j KUBE-SEP-XJJ5QXWGJG344QDZ\n");
		expect_chain(f->rs, RS_NAT, "KUBE-SVL-XPGD46QRK7WJZT7O",
			"-A KUBE-SVL-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> [ff06::c2]:80\" -j KUBE-SEP-XJJ5QXWGJG344QDZ\n");
		expect_chain(f->rs, RS_FILTER, "KUBE-FORWARD",
			"-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP\n"
			"-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT\n"
			"-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n");
		/* No localnet guard in IPv6, whatever --localhost-nodeports says. */
		expect_chain(f->rs, RS_FILTER, "KUBE-FIREWALL", "");
		RUN_FLOWS(f,
			FL("external to nodePort: the local endpoint, client kept", "2001:db8::99", false,
			   NODE_IP6, 30001, "ff06::c2:80", MASQ_NO),
			FL("node to nodePort: every endpoint, masqueraded", NODE_IP6, true, NODE_IP6,
			   30001, "ff06::c1:80, ff06::c2:80", MASQ_YES),
			FL("::1 to nodePort is ignored", "::1", true, "::1", 30001, "", MASQ_ANY),
		);
		fx_teardown((void **)&f);
	}
}

/*
 * kube-proxy's TestServiceToServiceMap cases that split a service by
 * family (pkg/proxy/service_test.go), with its addresses: a service
 * tracker of one family keeps the service only when its cluster IP is of
 * that family, and then only the external IPs, loadBalancerSourceRanges
 * and load-balancer ingress IPs of that family.  Here each case is planned
 * for its family and the service's rules are checked exactly (every
 * service rule is in KUBE-SERVICES; the IPv4 plan carries no IPv6 address
 * and the other way round), then by packet.  One endpoint of each family
 * keeps the rules from being REJECTs.
 */
static void test_kp_service_family_split(void **state)
{
	static const struct {
		const char *desc;
		int family;
		const char *name, *cluster_ip, *external_ips, *source_ranges;
		const char *services; /* the KUBE-SERVICES chain, @: the service's hash */
	} cases[] = {
		{ "service with ipv6 clusterIP under ipv4 mode, service should be filtered", AF_INET,
		  "invalidIPv6InIPV4Mode", "2001:db8:85a3:0:0:8a2e:370:7334", NULL, NULL, "" },
		{ "service with ipv4 clusterIP under ipv6 mode, service should be filtered", AF_INET6,
		  "invalidIPv4InIPV6Mode", "10.0.0.1", NULL, NULL, "" },
		{ "service with ipv4 configurations under ipv4 mode", AF_INET, "validIPv4", "10.0.0.1",
		  "8.8.8.8", "0.0.0.0/1",
		  "-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m comment --comment \"test/validIPv4:testPort cluster IP\" -m tcp --dport 12345 -j KUBE-SVC-@\n"
		  "-A KUBE-SERVICES -d 8.8.8.8/32 -p tcp -m comment --comment \"test/validIPv4:testPort external IP\" -m tcp --dport 12345 -j KUBE-EXT-@\n"
		  "-A KUBE-SERVICES -d 8.8.8.8/32 -p tcp -m comment --comment \"test/validIPv4:testPort loadbalancer IP\" -m tcp --dport 12345 -j KUBE-FW-@\n" },
		{ "service with ipv6 configurations under ipv6 mode", AF_INET6, "validIPv6",
		  "2001:db8:85a3:0:0:8a2e:370:7334", "2001:db8:85a3:0:0:8a2e:370:7335", "2001:db8::/32",
		  "-A KUBE-SERVICES -d 2001:db8:85a3::8a2e:370:7334/128 -p tcp -m comment --comment \"test/validIPv6:testPort cluster IP\" -m tcp --dport 12345 -j KUBE-SVC-@\n"
		  "-A KUBE-SERVICES -d 2001:db8:85a3::8a2e:370:7335/128 -p tcp -m comment --comment \"test/validIPv6:testPort external IP\" -m tcp --dport 12345 -j KUBE-EXT-@\n"
		  "-A KUBE-SERVICES -d 2001:db8:85a3::8a2e:370:7335/128 -p tcp -m comment --comment \"test/validIPv6:testPort loadbalancer IP\" -m tcp --dport 12345 -j KUBE-FW-@\n" },
		{ "service with both ipv4 and ipv6 configurations under ipv4 mode, ipv6 fields should be filtered",
		  AF_INET, "filterIPv6InIPV4Mode", "10.0.0.1", "8.8.8.8,2001:db8:85a3:0:0:8a2e:370:7335",
		  "0.0.0.0/1,2001:db8::/32",
		  "-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m comment --comment \"test/filterIPv6InIPV4Mode:testPort cluster IP\" -m tcp --dport 12345 -j KUBE-SVC-@\n"
		  "-A KUBE-SERVICES -d 8.8.8.8/32 -p tcp -m comment --comment \"test/filterIPv6InIPV4Mode:testPort external IP\" -m tcp --dport 12345 -j KUBE-EXT-@\n"
		  "-A KUBE-SERVICES -d 8.8.8.8/32 -p tcp -m comment --comment \"test/filterIPv6InIPV4Mode:testPort loadbalancer IP\" -m tcp --dport 12345 -j KUBE-FW-@\n" },
		{ "service with both ipv4 and ipv6 configurations under ipv6 mode, ipv4 fields should be filtered",
		  AF_INET6, "filterIPv4InIPV6Mode", "2001:db8:85a3:0:0:8a2e:370:7334",
		  "8.8.8.8,2001:db8:85a3:0:0:8a2e:370:7335", "0.0.0.0/1,2001:db8::/32",
		  "-A KUBE-SERVICES -d 2001:db8:85a3::8a2e:370:7334/128 -p tcp -m comment --comment \"test/filterIPv4InIPV6Mode:testPort cluster IP\" -m tcp --dport 12345 -j KUBE-SVC-@\n"
		  "-A KUBE-SERVICES -d 2001:db8:85a3::8a2e:370:7335/128 -p tcp -m comment --comment \"test/filterIPv4InIPV6Mode:testPort external IP\" -m tcp --dport 12345 -j KUBE-EXT-@\n"
		  "-A KUBE-SERVICES -d 2001:db8:85a3::8a2e:370:7335/128 -p tcp -m comment --comment \"test/filterIPv4InIPV6Mode:testPort loadbalancer IP\" -m tcp --dport 12345 -j KUBE-FW-@\n" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		bool v4 = cases[i].family == AF_INET;
		const char *nodeports = v4 ?
			"-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n" :
			"-A KUBE-SERVICES ! -d ::1/128 -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n";
		const char *ep = v4 ? "10.180.0.1" : "fd00:10:180::1";
		char key[128], hash[CHAIN_HASH_LEN + 1], want[4096], flow_out[64];
		struct fx *f = fx_new();
		struct svc_port *p;
		size_t n;

		print_message("  case: %s\n", cases[i].desc);
		fx_dual(f, cases[i].family);
		f->s.dual_stack = true;
		p = fx_port(f, "test", cases[i].name, "testPort", "tcp", cases[i].cluster_ip, 12345);
		p->type = SVC_LOAD_BALANCER;
		if (cases[i].external_ips)
			fx_ips(f, &p->external_ips, &p->n_external_ips, cases[i].external_ips);
		if (cases[i].source_ranges)
			fx_nets(f, &p->lb_source_ranges, &p->n_lb_source_ranges, cases[i].source_ranges);
		/* status.loadBalancer.ingress: [testExternalIPv4, testExternalIPv6] */
		fx_ips(f, &p->lb_ips, &p->n_lb_ips, "8.8.8.8,2001:db8:85a3:0:0:8a2e:370:7335");
		fx_ep(f, p, "10.180.0.1", 12345, EP_READY);
		fx_ep(f, p, "fd00:10:180::1", 12345, EP_READY);
		fx_plan(f);

		snprintf(key, sizeof(key), "test/%s:testPort", cases[i].name);
		chain_hash(key, "tcp", NULL, hash);
		n = 0;
		want[0] = '\0';
		for (const char *c = cases[i].services; *c; c++) {
			const char *add = *c == '@' ? hash : (char[2]){ *c, 0 };

			assert_true(n + strlen(add) < sizeof(want));
			n += snprintf(want + n, sizeof(want) - n, "%s", add);
		}
		assert_true(n + strlen(nodeports) < sizeof(want));
		strcat(want, nodeports);
		expect_chain(f->rs, RS_NAT, "KUBE-SERVICES", want);
		for (int t = 0; t < RS_NTABLES; t++) {
			char *txt = table_text(f->rs, t);

			assert_null(strstr(txt, v4 ? "2001:db8" : "8.8.8.8"));
			assert_null(strstr(txt, v4 ? "fd00:" : "10.180."));
			free(txt);
		}
		if (!cases[i].external_ips)
			goto next;
		/* Only the source ranges of the plan's family guard the LB IP. */
		snprintf(want, sizeof(want), "-A KUBE-FW-%s -s %s -m comment --comment \"%s loadbalancer IP\" -j KUBE-EXT-%s\n"
			 "-A KUBE-FW-%s -m comment --comment \"other traffic to %s will be dropped by KUBE-PROXY-FIREWALL\"\n",
			 hash, v4 ? "0.0.0.0/1" : "2001:db8::/32", key, hash, hash, key);
		{
			char fw[32];

			snprintf(fw, sizeof(fw), "KUBE-FW-%s", hash);
			expect_chain(f->rs, RS_NAT, fw, want);
		}
		/* kube-proxy drops the rest in filter KUBE-PROXY-FIREWALL, for the
		 * family's LB IP only (not its other-family ingress IP). */
		snprintf(want, sizeof(want), "-A KUBE-PROXY-FIREWALL -d %s -p tcp -m comment --comment \"%s traffic not accepted by KUBE-FW-%s\" -m tcp --dport 12345 -j DROP\n",
			 v4 ? "8.8.8.8/32" : "2001:db8:85a3::8a2e:370:7335/128", key, hash);
		expect_chain(f->rs, RS_FILTER, "KUBE-PROXY-FIREWALL", want);
		snprintf(flow_out, sizeof(flow_out), "%s:12345", ep);
		RUN_FLOWS(f,
			FL("pod to cluster IP", v4 ? "10.0.0.2" : "2001:2:0:10::2", false,
			   v4 ? "10.0.0.1" : "2001:db8:85a3::8a2e:370:7334", 12345, flow_out, MASQ_NO),
			FL("allowed source to the LB/external IP", v4 ? "1.2.3.4" : "2001:db8:1::1",
			   false, v4 ? "8.8.8.8" : "2001:db8:85a3::8a2e:370:7335", 12345, flow_out,
			   MASQ_YES),
			/* kube-proxy's cases use one address as external IP and LB
			 * IP: the external IP rule comes first and takes no source
			 * ranges, so any source gets through (as with kube-proxy). */
			FL("other source to the LB/external IP", v4 ? "200.1.2.3" : "2001:db9::1", false,
			   v4 ? "8.8.8.8" : "2001:db8:85a3::8a2e:370:7335", 12345, flow_out, MASQ_YES),
		);
next:
		fx_teardown((void **)&f);
	}
}

/* The rules of chain (nat) that jump to KUBE-NODEPORTS. */
static char *nodeport_jumps(const struct ruleset *rs)
{
	const struct rs_chain *c = ruleset_find_chain(rs, RS_NAT, "KUBE-SERVICES");
	char *txt, *out, *line, *save = NULL;
	size_t n = 0;

	assert_non_null(c);
	txt = chain_text(c);
	out = calloc(1, strlen(txt) + 1);
	assert_non_null(out);
	for (line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strstr(line, "-j KUBE-NODEPORTS"))
			n += (size_t)sprintf(out + n, "%s\n", line);
	free(txt);
	return out;
}

/*
 * kube-proxy's TestGetNodeAddresses (pkg/proxy/util/nodeport_addresses_test.go),
 * every case for both families, as the rules they give: a family with no
 * CIDR in --nodeport-addresses, or a /0 one, matches every local address
 * (one addrtype LOCAL jump, "! -d ::1/128" in IPv6); otherwise one jump per
 * node address of that family inside its CIDRs.  The proxier (proxier.go)
 * then drops ::1 from the IPv6 list (no localhost node ports in IPv6) and
 * keeps 127.0.0.1 in IPv4 (--localhost-nodeports true, the default); none
 * at all when no address matches.
 */
static void test_kp_node_addresses(void **state)
{
	static const struct {
		const char *name, *cidrs, *addrs;
		const char *want4, *want6; /* "*": match all; else the IPs, "" none */
	} cases[] = {
		{ "IPv4 single", "10.20.30.0/24", "10.20.30.51,100.200.201.1", "10.20.30.51", "*" },
		{ "IPv4 zero CIDR", "0.0.0.0/0", "10.20.30.51,127.0.0.1", "*", "*" },
		{ "IPv6 multiple", "2001:db8::/64,::1/128", "2001:db8::1,::1", "*", "2001:db8::1" },
		{ "IPv6 zero CIDR", "::/0", "2001:db8::1,::1", "*", "*" },
		{ "IPv4 localhost exact", "127.0.0.1/32", "10.20.30.51,127.0.0.1", "127.0.0.1", "*" },
		{ "IPv4 localhost subnet", "127.0.0.0/8", "127.0.1.1", "127.0.1.1", "*" },
		{ "IPv4 multiple", "10.20.30.0/24,100.200.201.0/24", "10.20.30.51,100.200.201.1",
		  "10.20.30.51,100.200.201.1", "*" },
		{ "IPv4 multiple, no match", "10.20.30.0/24,100.200.201.0/24", "192.168.1.2,127.0.0.1",
		  "", "*" },
		{ "empty list, IPv4 addrs", NULL, "192.168.1.2,127.0.0.1", "*", "*" },
		{ "empty list, IPv6 addrs", NULL, "2001:db8::1,::1", "*", "*" },
		{ "IPv4 redundant CIDRs", "1.2.3.0/24,0.0.0.0/0", "1.2.3.4", "*", "*" },
		{ "Dual-stack, redundant IPv4", "0.0.0.0/0,1.2.3.0/24,2001:db8::1/128",
		  "1.2.3.4,2001:db8::1,127.0.0.1,::1", "*", "2001:db8::1" },
		{ "Dual-stack, redundant IPv6", "::/0,1.2.3.0/24,2001:db8::1/128",
		  "1.2.3.4,2001:db8::1,127.0.0.1,::1", "1.2.3.4", "*" },
	};
	static const char comment[] =
		"-m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\"";

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		for (int fam = 0; fam < 2; fam++) {
			const char *want_ips = fam ? cases[i].want6 : cases[i].want4;
			char want[1024] = "", buf[256], *save = NULL, *got;
			struct fx *f = fx_new();
			struct svc_port *p;
			size_t n = 0;

			print_message("  case: %s (%s)\n", cases[i].name, fam ? "IPv6" : "IPv4");
			f->s.family = fam ? AF_INET6 : AF_INET;
			f->s.dual_stack = true;
			f->s.n_node_ips = 0;
			f->s.n_cluster_cidrs = 0;
			snprintf(buf, sizeof(buf), "%s", cases[i].addrs);
			for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
				f->local_addrs[n++] = ip(t);
			f->s.n_local_addrs = n;
			if (cases[i].cidrs)
				fx_nets(f, &f->s.nodeport_addresses, &f->s.n_nodeport_addresses,
					cases[i].cidrs);
			p = fx_port(f, "ns1", "svc1", "p80", "tcp", NULL, 80);
			fx_ips(f, &p->cluster_ips, &p->n_cluster_ips, "172.30.0.41,fd00:172:30::41");
			p->type = SVC_NODE_PORT;
			p->node_port = 3001;
			fx_ep(f, p, "10.180.0.1", 80, EP_READY);
			fx_ep(f, p, "fd00:10:180::1", 80, EP_READY);
			fx_plan(f);

			if (!strcmp(want_ips, "*")) {
				snprintf(want, sizeof(want), "-A KUBE-SERVICES %s%s -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n",
					 fam ? "! -d ::1/128 " : "", comment);
			} else {
				snprintf(buf, sizeof(buf), "%s", want_ips);
				save = NULL;
				n = 0;
				for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
					n += (size_t)snprintf(want + n, sizeof(want) - n,
							      "-A KUBE-SERVICES -d %s/%d %s -j KUBE-NODEPORTS\n",
							      t, fam ? 128 : 32, comment);
			}
			got = nodeport_jumps(f->rs);
			expect_text("node-port jumps", got, want);
			free(got);
			fx_teardown((void **)&f);
		}
	}
}

/*
 * kube-proxy's TestFilterIncorrectIPVersion (pkg/proxy/util/utils_test.go),
 * its ten cases, as external IP rules: a family's plan writes the external
 * IPs of its family, in order, and none of the other.
 */
static void test_kp_external_ips_by_family(void **state)
{
	static const struct {
		const char *desc, *ips; /* "": none */
		bool want_ipv6;
		const char *correct;    /* the rules' addresses, in order */
	} cases[] = {
		{ "empty input IPv4", "", false, "" },
		{ "empty input IPv6", "", true, "" },
		{ "want IPv4 and receive IPv6", "fd00:20::1", false, "" },
		{ "want IPv6 and receive IPv4", "192.168.200.2", true, "" },
		{ "want IPv6 and receive IPv4 and IPv6", "192.168.200.2,192.1.34.23,fd00:20::1,2001:db9::3",
		  true, "fd00:20::1/128,2001:db9::3/128" },
		{ "want IPv4 and receive IPv4 and IPv6", "192.168.200.2,192.1.34.23,fd00:20::1,2001:db9::3",
		  false, "192.168.200.2/32,192.1.34.23/32" },
		{ "want IPv4 and receive IPv4 only", "192.168.200.2,192.1.34.23", false,
		  "192.168.200.2/32,192.1.34.23/32" },
		{ "want IPv6 and receive IPv4 only", "192.168.200.2,192.1.34.23", true, "" },
		{ "want IPv4 and receive IPv6 only", "fd00:20::1,2001:db9::3", false, "" },
		{ "want IPv6 and receive IPv6 only", "fd00:20::1,2001:db9::3", true,
		  "fd00:20::1/128,2001:db9::3/128" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct fx *f = fx_new();
		char got[512] = "", *txt, *line, *save = NULL;
		size_t n = 0;
		struct svc_port *p;

		print_message("  case: %s\n", cases[i].desc);
		fx_dual(f, cases[i].want_ipv6 ? AF_INET6 : AF_INET);
		f->s.dual_stack = true;
		p = fx_port(f, "ns1", "svc1", "p80", "tcp", NULL, 80);
		fx_ips(f, &p->cluster_ips, &p->n_cluster_ips, "172.30.0.41,fd00:172:30::41");
		if (cases[i].ips[0])
			fx_ips(f, &p->external_ips, &p->n_external_ips, cases[i].ips);
		fx_ep(f, p, "10.180.0.1", 80, EP_READY);
		fx_ep(f, p, "fd00:10:180::1", 80, EP_READY);
		fx_plan(f);
		txt = chain_text(ruleset_find_chain(f->rs, RS_NAT, "KUBE-SERVICES"));
		for (line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char addr[64];

			if (!strstr(line, "external IP\"") || sscanf(line, "-A KUBE-SERVICES -d %63s", addr) != 1)
				continue;
			n += (size_t)snprintf(got + n, sizeof(got) - n, "%s%s", n ? "," : "", addr);
		}
		free(txt);
		assert_string_equal(got, cases[i].correct);
		fx_teardown((void **)&f);
	}
}

#define TREE_TESTS \
	cmocka_unit_test_setup_teardown(test_tree_equivalent, fx_setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_tree_equivalent_nodeport_addresses, fx_setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_tree_shape, fx_setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_tree_churn, fx_setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_tree_threshold, fx_setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_tree_ipv6, fx_setup, fx_teardown),

#define FLOW_TESTS(setup) \
	cmocka_unit_test_setup_teardown(test_flow_cluster_ip, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_no_endpoints, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_load_balancer, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_node_ports, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_external_policy_local, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_internal_policy_local, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_terminating, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_topology_hints, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_session_affinity, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_masquerade, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_large_cluster, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_compact, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_skipped, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_overall, setup, fx_teardown), \
	cmocka_unit_test_setup_teardown(test_flow_legacy, setup, fx_teardown),

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_hash),
		cmocka_unit_test_setup_teardown(test_overall, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_affinity_three_endpoints, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_no_cluster_cidr, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_detect_local_cluster_cidr, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_detect_local_node_cidr, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_detect_local_bridge, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_detect_local_iface_prefix, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_masquerade_all, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_internal_local, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_external_local, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_terminating_and_topology, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_nodeport_addresses, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_nodeports_all_local, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_large_cluster, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_compact, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_compact_threshold, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_firewall_allow_from_node, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_multiport_protocols, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_fixed_chains_settings, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_exact_nfacct, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_tree_nfacct, fx_setup_tree, fx_teardown),
		cmocka_unit_test_setup_teardown(test_skipped_and_other_family, fx_setup, fx_teardown),
		cmocka_unit_test(test_kp_node_ports),
		cmocka_unit_test_setup_teardown(test_exact_ipv6, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_dual_stack_split, fx_setup, fx_teardown),
		cmocka_unit_test(test_kp_localhost_nodeports_ipv6),
		cmocka_unit_test(test_kp_service_family_split),
		cmocka_unit_test(test_kp_node_addresses),
		cmocka_unit_test(test_kp_external_ips_by_family),
		cmocka_unit_test_setup_teardown(test_single_family_notes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_port_and_cidrs, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_deterministic, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_large_input, fx_setup, fx_teardown),
		FLOW_TESTS(fx_setup_linear)
		TREE_TESTS
	};
	const struct CMUnitTest tree_tests[] = {
		FLOW_TESTS(fx_setup_tree)
	};
	const struct CMUnitTest tree1_tests[] = {
		FLOW_TESTS(fx_setup_tree1)
	};
	int failed;

	failed = cmocka_run_group_tests_name("linear", tests, NULL, NULL);
	failed += cmocka_run_group_tests_name("tree", tree_tests, NULL, NULL);
	failed += cmocka_run_group_tests_name("tree, leaves of 1", tree1_tests, NULL, NULL);
	return failed;
}
