/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests: iptables-save rendering, parsing it back, and the rule
 * tracer the planner's behavioural tests rely on.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/diag.h"
#include "core/parse.h"
#include "core/render.h"
#include "core/ruleset.h"
#include "tracer/tracer.h"
#include "util.h"

/* --- helpers --- */

static char *read_data(const char *name, size_t *ret_len)
{
	char path[512];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/tests/data/golden/%s", SRCDIR, name);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*ret_len = (size_t)n;
	return buf;
}

static char *render_str(const struct ruleset *rs, unsigned flags)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(render_save(rs, flags, f), 0);
	fclose(f);
	return buf;
}

static struct ruleset *parse_ok(const char *text, unsigned flags)
{
	struct diag_list d;
	struct ruleset *rs = NULL;
	int r;

	diag_list_init(&d);
	r = ruleset_parse(text, strlen(text), flags, &rs, &d);
	if (r < 0)
		diag_list_print(&d, stderr);
	assert_int_equal(r, 0);
	assert_int_equal(d.n, 0);
	diag_list_done(&d);
	return rs;
}

/* The first diagnostic of a parse that must fail, as one line. */
static char *parse_err(const char *text, unsigned flags)
{
	struct diag_list d;
	struct ruleset *rs = NULL;
	char *s;

	diag_list_init(&d);
	assert_int_equal(ruleset_parse(text, strlen(text), flags, &rs, &d), -EINVAL);
	assert_null(rs);
	assert_int_equal(d.n, 1);
	s = diag_format(&d.items[0]);
	assert_non_null(s);
	diag_list_done(&d);
	return s;
}

static struct ipaddr ip(const char *s)
{
	struct ipaddr a;

	assert_int_equal(ipaddr_parse(s, &a), 0);
	return a;
}

static struct ipnet net(const char *s)
{
	struct ipnet n;

	assert_int_equal(ipnet_parse(s, &n), 0);
	return n;
}

/* --- quoting --- */

static void test_quote(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "abc", "abc" },
		{ "simple_-x", "simple_-x" },
		{ "KUBE-SVC-ABC123", "KUBE-SVC-ABC123" },
		{ "", "\"\"" },
		{ "a b", "\"a b\"" },
		{ "x.y", "\"x.y\"" },
		{ "ns/svc:port", "\"ns/svc:port\"" },
		{ "a\"b", "\"a\\\"b\"" },
		{ "a\\b", "\"a\\\\b\"" },
		{ "it's", "\"it\\'s\"" },
		{ "\"\\'", "\"\\\"\\\\\\'\"" },
		{ "tab\there", "\"tab\there\"" },
		{ "default/web:http -> 198.18.65.2:8080", "\"default/web:http -> 198.18.65.2:8080\"" },
	};
	char buf[128];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		int n = render_quote(cases[i].in, buf, sizeof(buf));

		assert_string_equal(buf, cases[i].out);
		assert_int_equal(n, (int)strlen(cases[i].out));
	}
	/* snprintf semantics: truncated, terminated, full length returned */
	assert_int_equal(render_quote("a b c", buf, 4), 7);
	assert_string_equal(buf, "\"a ");
	assert_int_equal(render_quote("a b c", NULL, 0), 7);
}

/* --- every match and target form --- */

struct form {
	const char *expect;
	void (*build)(struct ruleset *rs, struct rs_rule *r);
	bool lossy; /* renders canonically, parses back to a different model */
};

static struct rs_match *add(struct rs_rule *r, enum rs_match_kind k)
{
	struct rs_match *m = rs_rule_add_match(r, k);

	assert_non_null(m);
	return m;
}

static void f_src(struct ruleset *rs, struct rs_rule *r)
{
	r->src = net("198.18.65.2");
	r->t.kind = RS_T_ACCEPT;
}

static void f_src_masked(struct ruleset *rs, struct rs_rule *r)
{
	r->src = (struct ipnet){ .addr = ip("198.18.65.77"), .plen = 18 };
	r->src_inv = true;
	r->t.kind = RS_T_DROP;
}

static void f_dst_proto(struct ruleset *rs, struct rs_rule *r)
{
	r->src = net("198.18.1.0/25");
	r->dst = net("198.19.0.10/32");
	r->dst_inv = true;
	r->proto = IPPROTO_UDP;
	r->t.kind = RS_T_RETURN;
}

static void f_iface_inv(struct ruleset *rs, struct rs_rule *r)
{
	r->dst = net("198.19.0.10/32");
	r->in_iface = "cbr0";
	r->in_iface_inv = true;
	r->proto = IPPROTO_TCP;
	add(r, RS_M_PORT)->u.port.dport = 80;
	r->t.kind = RS_T_RETURN;
}

static void f_iface_prefix(struct ruleset *rs, struct rs_rule *r)
{
	r->in_iface = "veth";
	r->in_iface_prefix = true;
	r->t.kind = RS_T_ACCEPT;
}

static void f_any_net(struct ruleset *rs, struct rs_rule *r)
{
	r->src = net("0.0.0.0/0");
	r->t.kind = RS_T_ACCEPT;
}

static void f_comment(struct ruleset *rs, struct rs_rule *r)
{
	add(r, RS_M_COMMENT)->u.comment = "default/web:http cluster IP";
	r->t.kind = RS_T_ACCEPT;
}

static void f_port(struct ruleset *rs, struct rs_rule *r)
{
	r->dst = net("198.19.0.10");
	r->proto = IPPROTO_TCP;
	add(r, RS_M_COMMENT)->u.comment = "plain";
	add(r, RS_M_PORT)->u.port.dport = 80;
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = "KUBE-SVC-X";
}

static void f_port_sctp_inv(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m;

	r->proto = IPPROTO_SCTP;
	m = add(r, RS_M_PORT);
	m->u.port.dport = 30000;
	m->invert = true;
	r->t.kind = RS_T_GOTO;
	r->t.u.chain = "KUBE-X";
}

static void f_port_range(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m;

	r->proto = IPPROTO_UDP;
	add(r, RS_M_COMMENT)->u.comment = "ports 30000-30255";
	m = add(r, RS_M_PORT);
	m->u.port.dport = 30000;
	m->u.port.dport_max = 30255;
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = "KUBE-X";
}

static void f_port_range_sctp_inv(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m;

	r->proto = IPPROTO_SCTP;
	m = add(r, RS_M_PORT);
	m->u.port.dport = 1;
	m->u.port.dport_max = 65535;
	m->invert = true;
	r->t.kind = RS_T_RETURN;
}

static void f_port_bare(struct ruleset *rs, struct rs_rule *r)
{
	r->proto = IPPROTO_TCP;
	add(r, RS_M_PORT);
	r->t.kind = RS_T_DNAT;
	r->t.u.dnat.addr = ip("198.18.65.2");
	r->t.u.dnat.port = 8080;
}

static void f_addrtype(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m = add(r, RS_M_ADDRTYPE);

	m->u.addrtype.type = RS_ADDRTYPE_LOCAL;
	m = add(r, RS_M_ADDRTYPE);
	m->u.addrtype.src = true;
	m->u.addrtype.type = RS_ADDRTYPE_LOCAL;
	m->invert = true;
	r->t.kind = RS_T_RETURN;
}

static void f_mark(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m = add(r, RS_M_MARK);

	m->u.mark.value = 0x4000;
	m->u.mark.mask = 0x4000;
	m->invert = true;
	r->t.kind = RS_T_RETURN;
}

static void f_mark_full(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m = add(r, RS_M_MARK);

	m->u.mark.value = 0x10;
	m->u.mark.mask = 0xffffffff;
	r->t.kind = RS_T_ACCEPT;
}

static void f_ct(struct ruleset *rs, struct rs_rule *r)
{
	add(r, RS_M_CONNTRACK)->u.ct.states = RS_CT_ESTABLISHED | RS_CT_RELATED;
	r->t.kind = RS_T_ACCEPT;
}

static void f_ct_all(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m = add(r, RS_M_CONNTRACK);

	m->u.ct.states = RS_CT_DNAT | RS_CT_SNAT | RS_CT_ESTABLISHED | RS_CT_RELATED | RS_CT_NEW |
			 RS_CT_INVALID;
	m->invert = true;
	r->t.kind = RS_T_DROP;
}

static void f_stat(struct ruleset *rs, struct rs_rule *r)
{
	add(r, RS_M_STATISTIC)->u.stat.probability = 1.0 / 3.0;
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = "KUBE-SEP-A";
}

static void f_stat_inv(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m = add(r, RS_M_STATISTIC);

	m->u.stat.probability = 0.1;
	m->invert = true;
	r->t.kind = RS_T_RETURN;
}

static void f_recent_rcheck(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m = add(r, RS_M_RECENT);

	m->u.recent.name = "KUBE-SEP-A";
	m->u.recent.seconds = 10800;
	m->u.recent.reap = true;
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = "KUBE-SEP-A";
}

static void f_recent_set(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m;

	r->proto = IPPROTO_TCP;
	add(r, RS_M_COMMENT)->u.comment = "ns/svc:p";
	m = add(r, RS_M_RECENT);
	m->u.recent.name = "KUBE-SEP-A";
	m->u.recent.set = true;
	add(r, RS_M_PORT);
	r->t.kind = RS_T_DNAT;
	r->t.u.dnat.addr = ip("198.18.65.2");
	r->t.u.dnat.port = 8080;
}

/* The compact layout's affinity check: --update, DNAT with only "-p". */
static void f_recent_update(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m;

	r->proto = IPPROTO_TCP;
	m = add(r, RS_M_RECENT);
	m->u.recent.name = "KUBE-SEP-A";
	m->u.recent.update = true;
	m->u.recent.seconds = 600;
	m->u.recent.reap = true;
	r->t.kind = RS_T_DNAT;
	r->t.u.dnat.addr = ip("198.18.65.2");
	r->t.u.dnat.port = 8080;
}

static void f_recent_update_inv(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m = add(r, RS_M_RECENT);

	m->u.recent.name = "KUBE-SEP-B";
	m->u.recent.update = true;
	m->invert = true;
	r->t.kind = RS_T_RETURN;
}

/* The compact layout's spread: statistic, then --set. */
static void f_compact_spread(struct ruleset *rs, struct rs_rule *r)
{
	struct rs_match *m;

	r->proto = IPPROTO_UDP;
	add(r, RS_M_STATISTIC)->u.stat.probability = 0.5;
	m = add(r, RS_M_RECENT);
	m->u.recent.name = "KUBE-SEP-A";
	m->u.recent.set = true;
	r->t.kind = RS_T_DNAT;
	r->t.u.dnat.addr = ip("198.18.65.2");
	r->t.u.dnat.port = 53;
}

static void f_dnat_noport(struct ruleset *rs, struct rs_rule *r)
{
	r->t.kind = RS_T_DNAT;
	r->t.u.dnat.addr = ip("198.18.65.2");
}

static void f_mark_or(struct ruleset *rs, struct rs_rule *r)
{
	r->t.kind = RS_T_MARK;
	r->t.u.mark.op = RS_MARK_OR;
	r->t.u.mark.value = 0x4000;
}

static void f_mark_xor(struct ruleset *rs, struct rs_rule *r)
{
	r->t.kind = RS_T_MARK;
	r->t.u.mark.op = RS_MARK_XOR;
	r->t.u.mark.value = 0x4000;
}

static void f_mark_set(struct ruleset *rs, struct rs_rule *r)
{
	r->t.kind = RS_T_MARK;
	r->t.u.mark.op = RS_MARK_SET;
	r->t.u.mark.value = 0x10;
	r->t.u.mark.mask = 0x30;
}

static void f_masq(struct ruleset *rs, struct rs_rule *r)
{
	add(r, RS_M_COMMENT)->u.comment = "kubernetes service traffic requiring SNAT";
	r->t.kind = RS_T_MASQUERADE;
	r->t.u.masq.random_fully = true;
}

static void f_masq_plain(struct ruleset *rs, struct rs_rule *r)
{
	r->t.kind = RS_T_MASQUERADE;
}

static void f_reject(struct ruleset *rs, struct rs_rule *r)
{
	r->t.kind = RS_T_REJECT;
}

static void f_no_target(struct ruleset *rs, struct rs_rule *r)
{
	add(r, RS_M_COMMENT)->u.comment = "counting only";
}

static void f_empty(struct ruleset *rs, struct rs_rule *r)
{
}

/* kube-proxy's counted INVALID drop and localhost node port: two spaces
 * before the name, as libxt_nfacct's save prints it. */
static void f_nfacct_invalid(struct ruleset *rs, struct rs_rule *r)
{
	add(r, RS_M_CONNTRACK)->u.ct.states = RS_CT_INVALID;
	add(r, RS_M_NFACCT)->u.nfacct.name = "ct_state_invalid_dropped_pkts";
	r->t.kind = RS_T_DROP;
}

static void f_nfacct_localhost(struct ruleset *rs, struct rs_rule *r)
{
	r->dst.addr = ip("127.0.0.0");
	r->dst.plen = 8;
	r->proto = IPPROTO_TCP;
	add(r, RS_M_COMMENT)->u.comment = "ns/svc:p";
	add(r, RS_M_PORT)->u.port.dport = 30080;
	add(r, RS_M_NFACCT)->u.nfacct.name = "localhost_nps_accepted_pkts";
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = "KUBE-X";
}

static const struct form forms[] = {
	{ "-s 198.18.65.2/32 -j ACCEPT", f_src, false },
	{ "! -s 198.18.64.0/18 -j DROP", f_src_masked, true },
	{ "-s 198.18.1.0/25 ! -d 198.19.0.10/32 -p udp -j RETURN", f_dst_proto, false },
	{ "-d 198.19.0.10/32 ! -i cbr0 -p tcp -m tcp --dport 80 -j RETURN", f_iface_inv, false },
	{ "-i veth+ -j ACCEPT", f_iface_prefix, false },
	{ "-j ACCEPT", f_any_net, true },
	{ "-m comment --comment \"default/web:http cluster IP\" -j ACCEPT", f_comment, false },
	{ "-d 198.19.0.10/32 -p tcp -m comment --comment plain -m tcp --dport 80 -j KUBE-SVC-X", f_port, false },
	{ "-p sctp -m sctp ! --dport 30000 -g KUBE-X", f_port_sctp_inv, false },
	{ "-p tcp -m tcp -j DNAT --to-destination 198.18.65.2:8080", f_port_bare, false },
	{ "-p udp -m comment --comment \"ports 30000-30255\" -m udp --dport 30000:30255 -j KUBE-X",
	  f_port_range, false },
	{ "-p sctp -m sctp ! --dport 1:65535 -j RETURN", f_port_range_sctp_inv, false },
	{ "-m addrtype --dst-type LOCAL -m addrtype ! --src-type LOCAL -j RETURN", f_addrtype, false },
	{ "-m mark ! --mark 0x4000/0x4000 -j RETURN", f_mark, false },
	{ "-m mark --mark 0x10 -j ACCEPT", f_mark_full, false },
	{ "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT", f_ct, false },
	{ "-m conntrack ! --ctstate INVALID,NEW,RELATED,ESTABLISHED,SNAT,DNAT -j DROP", f_ct_all, false },
	{ "-m statistic --mode random --probability 0.3333333333 -j KUBE-SEP-A", f_stat, false },
	{ "-m statistic --mode random ! --probability 0.1000000000 -j RETURN", f_stat_inv, false },
	{ "-m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-A --mask 255.255.255.255 --rsource -j KUBE-SEP-A",
	  f_recent_rcheck, false },
	{ "-p tcp -m comment --comment \"ns/svc:p\" -m recent --set --name KUBE-SEP-A --mask 255.255.255.255 --rsource -m tcp -j DNAT --to-destination 198.18.65.2:8080",
	  f_recent_set, false },
	{ "-p tcp -m recent --update --seconds 600 --reap --name KUBE-SEP-A --mask 255.255.255.255 --rsource -j DNAT --to-destination 198.18.65.2:8080",
	  f_recent_update, false },
	{ "-m recent ! --update --name KUBE-SEP-B --mask 255.255.255.255 --rsource -j RETURN",
	  f_recent_update_inv, false },
	{ "-p udp -m statistic --mode random --probability 0.5000000000 -m recent --set --name KUBE-SEP-A --mask 255.255.255.255 --rsource -j DNAT --to-destination 198.18.65.2:53",
	  f_compact_spread, false },
	{ "-j DNAT --to-destination 198.18.65.2", f_dnat_noport, false },
	{ "-j MARK --set-xmark 0x4000/0x4000", f_mark_or, false },
	{ "-j MARK --set-xmark 0x4000/0x0", f_mark_xor, false },
	{ "-j MARK --set-xmark 0x10/0x30", f_mark_set, false },
	{ "-m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully",
	  f_masq, false },
	{ "-j MASQUERADE", f_masq_plain, false },
	{ "-j REJECT --reject-with icmp-port-unreachable", f_reject, false },
	{ "-m comment --comment \"counting only\"", f_no_target, false },
	{ "", f_empty, false },
	{ "-m conntrack --ctstate INVALID -m nfacct --nfacct-name  ct_state_invalid_dropped_pkts -j DROP",
	  f_nfacct_invalid, false },
	{ "-d 127.0.0.0/8 -p tcp -m comment --comment \"ns/svc:p\" -m tcp --dport 30080 -m nfacct --nfacct-name  localhost_nps_accepted_pkts -j KUBE-X",
	  f_nfacct_localhost, false },
};

/* A ruleset holding every form, one rule each, in one user chain per table. */
static struct ruleset *forms_ruleset(void)
{
	struct ruleset *rs = ruleset_new();
	struct rs_chain *c[RS_NTABLES];
	size_t i, t;

	assert_non_null(rs);
	for (t = 0; t < RS_NTABLES; t++) {
		c[t] = ruleset_add_chain(rs, (enum rs_table)t, "KUBE-FORMS");
		assert_non_null(c[t]);
		assert_non_null(ruleset_add_chain(rs, (enum rs_table)t, "KUBE-SVC-X"));
		assert_non_null(ruleset_add_chain(rs, (enum rs_table)t, "KUBE-X"));
		assert_non_null(ruleset_add_chain(rs, (enum rs_table)t, "KUBE-SEP-A"));
	}
	for (i = 0; i < ARRAY_SIZE(forms); i++) {
		if (forms[i].lossy)
			continue;
		/* NAT-only targets go to nat, REJECT to filter, the rest to both. */
		for (t = 0; t < RS_NTABLES; t++) {
			struct rs_rule *r = rs_chain_append(c[t]);

			assert_non_null(r);
			forms[i].build(rs, r);
			if ((t == RS_FILTER && (r->t.kind == RS_T_DNAT || r->t.kind == RS_T_MASQUERADE)) ||
			    (t == RS_NAT && r->t.kind == RS_T_REJECT))
				c[t]->n_rules--;
		}
	}
	return rs;
}

static void test_render_forms(void **state)
{
	struct ruleset *rs = ruleset_new();
	char buf[512];
	size_t i;

	assert_non_null(rs);
	for (i = 0; i < ARRAY_SIZE(forms); i++) {
		struct rs_rule r = { 0 };
		int n;

		forms[i].build(rs, &r);
		n = render_rule(&r, buf, sizeof(buf));
		assert_string_equal(buf, forms[i].expect);
		assert_int_equal(n, (int)strlen(forms[i].expect));
		/* a short buffer gets a terminated prefix and the full length */
		if (n > 4) {
			char small[5];

			assert_int_equal(render_rule(&r, small, sizeof(small)), n);
			assert_memory_equal(small, forms[i].expect, 4);
			assert_int_equal(small[4], '\0');
		}
	}
	ruleset_free(rs);
}

static void test_render_save_layout(void **state)
{
	struct ruleset *rs = ruleset_new();
	struct rs_chain *c;
	struct rs_rule *r;
	char *text;

	assert_non_null(rs);
	/* created out of order: rendering sorts chains, builtins by hook */
	assert_non_null(c = ruleset_add_chain(rs, RS_NAT, "KUBE-SVC-B"));
	assert_non_null(r = rs_chain_append(c));
	r->t.kind = RS_T_RETURN;
	assert_non_null(c = ruleset_add_chain(rs, RS_NAT, "POSTROUTING"));
	assert_non_null(r = rs_chain_append(c));
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = "KUBE-POSTROUTING";
	assert_non_null(ruleset_add_chain(rs, RS_NAT, "KUBE-POSTROUTING"));
	assert_non_null(c = ruleset_add_chain(rs, RS_NAT, "PREROUTING"));
	assert_non_null(r = rs_chain_append(c));
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = "KUBE-SVC-B";
	assert_non_null(c = ruleset_add_chain(rs, RS_FILTER, "KUBE-FORWARD"));
	assert_non_null(r = rs_chain_append(c));
	r->t.kind = RS_T_ACCEPT;

	text = render_str(rs, RENDER_ALL);
	assert_string_equal(text, "*filter\n"
				  ":INPUT ACCEPT [0:0]\n"
				  ":FORWARD ACCEPT [0:0]\n"
				  ":OUTPUT ACCEPT [0:0]\n"
				  ":KUBE-FORWARD - [0:0]\n"
				  "-A KUBE-FORWARD -j ACCEPT\n"
				  "COMMIT\n"
				  "*nat\n"
				  ":PREROUTING ACCEPT [0:0]\n"
				  ":INPUT ACCEPT [0:0]\n"
				  ":OUTPUT ACCEPT [0:0]\n"
				  ":POSTROUTING ACCEPT [0:0]\n"
				  ":KUBE-POSTROUTING - [0:0]\n"
				  ":KUBE-SVC-B - [0:0]\n"
				  "-A PREROUTING -j KUBE-SVC-B\n"
				  "-A POSTROUTING -j KUBE-POSTROUTING\n"
				  "-A KUBE-SVC-B -j RETURN\n"
				  "COMMIT\n");
	free(text);

	/* sorted in place gives the same text */
	ruleset_sort(rs);
	text = render_str(rs, RENDER_NAT | RENDER_NO_BUILTIN_RULES);
	assert_string_equal(text, "*nat\n"
				  ":PREROUTING ACCEPT [0:0]\n"
				  ":INPUT ACCEPT [0:0]\n"
				  ":OUTPUT ACCEPT [0:0]\n"
				  ":POSTROUTING ACCEPT [0:0]\n"
				  ":KUBE-POSTROUTING - [0:0]\n"
				  ":KUBE-SVC-B - [0:0]\n"
				  "-A KUBE-SVC-B -j RETURN\n"
				  "COMMIT\n");
	free(text);

	text = render_str(rs, RENDER_FILTER);
	assert_non_null(strstr(text, "*filter\n"));
	assert_null(strstr(text, "*nat"));
	free(text);
	ruleset_free(rs);
}

/* A comment longer than the renderer's output buffer still comes out whole. */
static void test_render_huge_line(void **state)
{
	struct ruleset *rs = ruleset_new();
	size_t n = 600 * 1024;
	char *big = malloc(n + 1), *text, *want;
	struct rs_chain *c;
	struct rs_rule *r;

	assert_non_null(rs);
	assert_non_null(big);
	memset(big, 'x', n);
	big[n] = '\0';
	assert_non_null(c = ruleset_add_chain(rs, RS_FILTER, "KUBE-A"));
	for (int i = 0; i < 3; i++) {
		assert_non_null(r = rs_chain_append(c));
		add(r, RS_M_COMMENT)->u.comment = i == 1 ? big : "small";
		r->t.kind = RS_T_ACCEPT;
	}
	text = render_str(rs, RENDER_ALL);
	want = malloc(n + 64);
	assert_non_null(want);
	snprintf(want, n + 64, "-A KUBE-A -m comment --comment %s -j ACCEPT\n", big);
	assert_non_null(strstr(text, want));
	assert_non_null(strstr(text, "-A KUBE-A -m comment --comment small -j ACCEPT\nCOMMIT\n"));
	free(want);
	free(text);
	free(big);
	ruleset_free(rs);
}

static void test_render_write_error(void **state)
{
	struct ruleset *rs = forms_ruleset();
	FILE *f = fopen("/dev/full", "we");

	if (!f) {
		ruleset_free(rs);
		skip();
	}
	assert_int_equal(render_save(rs, RENDER_ALL, f), -ENOSPC);
	fclose(f);
	ruleset_free(rs);
}

/* --- round trips --- */

static void assert_rulesets_equal(const struct ruleset *a, const struct ruleset *b)
{
	size_t t, i;

	for (t = 0; t < RS_NTABLES; t++) {
		for (i = 0; i < a->t[t].n; i++) {
			const struct rs_chain *ca = a->t[t].chains[i];
			const struct rs_chain *cb = ruleset_find_chain(b, (enum rs_table)t, ca->name);

			if (!cb || !rs_chain_equal(ca, cb))
				fail_msg("chain %s/%s differs", rs_table_name((enum rs_table)t), ca->name);
		}
	}
	assert_int_equal(ruleset_count_rules(a), ruleset_count_rules(b));
}

static void test_round_trip(void **state)
{
	struct ruleset *rs = forms_ruleset(), *back;
	char *t1, *t2;
	size_t t, n_builtin_nat = 0;

	t1 = render_str(rs, RENDER_ALL);
	back = parse_ok(t1, 0);
	t2 = render_str(back, RENDER_ALL);
	assert_string_equal(t1, t2);
	/* model level: equal chain by chain (builtins are declared, empty) */
	assert_rulesets_equal(rs, back);
	for (t = 0; t < back->t[RS_NAT].n; t++)
		n_builtin_nat += back->t[RS_NAT].chains[t]->builtin;
	assert_int_equal(n_builtin_nat, 4);
	assert_true(back->t[RS_NAT].sorted);
	free(t1);
	free(t2);
	ruleset_free(back);
	ruleset_free(rs);
}

/*
 * What iptables-legacy-save and iptables-nft-save printed for
 * save-input.txt after loading it into a namespace (kernel's 11-digit
 * probabilities, --set-xmark, counters with -c, header comments): parses to
 * the same model as the restore input itself.
 */
static void test_parse_saved_samples(void **state)
{
	static const char *const samples[] = { "save-legacy.txt", "save-legacy-c.txt", "save-nft.txt" };
	size_t len, i;
	char *input = read_data("save-input.txt", &len);
	struct ruleset *want = parse_ok(input, 0);
	const struct rs_chain *c;

	c = ruleset_find_chain(want, RS_NAT, "KUBE-SVC-WEBHTTP000000000");
	assert_non_null(c);
	assert_int_equal(c->n_rules, 5);
	assert_int_equal(c->rules[2].m[1].kind, RS_M_STATISTIC);
	assert_true(fabs(c->rules[2].m[1].u.stat.probability - 1.0 / 3) < 1e-9);
	c = ruleset_find_chain(want, RS_NAT, "KUBE-MARK-MASQ");
	assert_int_equal(c->rules[0].t.kind, RS_T_MARK);
	assert_int_equal(c->rules[0].t.u.mark.op, RS_MARK_OR);
	c = ruleset_find_chain(want, RS_NAT, "KUBE-POSTROUTING");
	assert_int_equal(c->rules[1].t.u.mark.op, RS_MARK_XOR);
	assert_int_equal(ruleset_count_rules(want), 42);

	for (i = 0; i < ARRAY_SIZE(samples); i++) {
		char *text = read_data(samples[i], &len);
		struct ruleset *got = parse_ok(text, 0);

		assert_rulesets_equal(want, got);
		assert_rulesets_equal(got, want);
		c = ruleset_find_chain(got, RS_NAT, "KUBE-SVC-WEBHTTP000000000");
		assert_true(fabs(c->rules[2].m[1].u.stat.probability - 0.33333333349) < 1e-12);
		/* and the same in PARSE_OWNED_ONLY mode: everything is svcnat's */
		ruleset_free(got);
		got = parse_ok(text, PARSE_OWNED_ONLY);
		assert_rulesets_equal(want, got);
		ruleset_free(got);
		free(text);
	}
	ruleset_free(want);
	free(input);
}

/* Drop "[p:b] " prefixes, comment lines and probability digits past 6. */
static char *normalise(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	assert_non_null(out);
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s + 1) : strlen(s);

		if (*s == '#') {
			s += n;
			continue;
		}
		if (*s == '[') {
			const char *sp = strchr(s, ' ');

			n -= (size_t)(sp + 1 - s);
			s = sp + 1;
		}
		for (size_t i = 0; i < n; i++) {
			*o++ = s[i];
			if (i >= 14 && !strncmp(s + i - 14, "--probability ", 14)) {
				size_t k = i + 1, d = 0;

				while (k < n && s[k] != ' ') {
					if (d++ < 7)
						*o++ = s[k];
					k++;
				}
				i = k - 1;
			}
		}
		s += n;
	}
	*o = '\0';
	return out;
}

/* render(parse(iptables-legacy-save output)) is that output, normalised. */
static void test_render_matches_iptables_save(void **state)
{
	size_t len;
	char *text = read_data("save-legacy.txt", &len);
	struct ruleset *rs = parse_ok(text, 0);
	char *mine = render_str(rs, RENDER_ALL);
	char *a = normalise(mine), *b = normalise(text);

	assert_string_equal(a, b);
	free(a);
	free(b);
	free(mine);
	free(text);
	ruleset_free(rs);
}

static void test_parse_owned_only(void **state)
{
	size_t len;
	char *text = read_data("save-foreign-c.txt", &len);
	struct ruleset *rs = parse_ok(text, PARSE_OWNED_ONLY);
	char *out = render_str(rs, RENDER_ALL);
	char *err;

	/* Docker's chain and jumps, the user's DNAT, -o rules, -m limit, the
	 * mangle table: all skipped; FORWARD DROP policy ignored.  "-i" is in
	 * the rule model (kube-proxy's interface detectors), so the rule
	 * added to KUBE-FORWARD is read as one of that chain's rules. */
	assert_string_equal(out, "*filter\n"
				 ":INPUT ACCEPT [0:0]\n"
				 ":FORWARD ACCEPT [0:0]\n"
				 ":OUTPUT ACCEPT [0:0]\n"
				 ":KUBE-FORWARD - [0:0]\n"
				 "-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n"
				 "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP\n"
				 "-A KUBE-FORWARD -i eth0 -j ACCEPT\n"
				 "-A KUBE-FORWARD -m mark --mark 0x4000/0x4000 -j ACCEPT\n"
				 "COMMIT\n"
				 "*nat\n"
				 ":PREROUTING ACCEPT [0:0]\n"
				 ":INPUT ACCEPT [0:0]\n"
				 ":OUTPUT ACCEPT [0:0]\n"
				 ":POSTROUTING ACCEPT [0:0]\n"
				 ":KUBE-MARK-MASQ - [0:0]\n"
				 ":KUBE-SERVICES - [0:0]\n"
				 "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
				 "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n"
				 "-A KUBE-SERVICES -d 198.19.0.10/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
				 "COMMIT\n");
	assert_null(ruleset_find_chain(rs, RS_NAT, "DOCKER"));
	free(out);
	ruleset_free(rs);

	/* without the flag the first foreign thing is an error naming it */
	err = parse_err(text, 0);
	assert_string_equal(err, "line 13: outside svcnat's rule model: unexpected '-o'");
	free(err);
	free(text);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *text;
		unsigned flags;
		const char *msg;
	} cases[] = {
		{ "-A X -j ACCEPT\n", 0, "line 1: '-A' outside a table" },
		{ "*nat\n-A KUBE-X -j ACCEPT\nCOMMIT\n", 0, "line 2: chain 'KUBE-X' is not declared" },
		{ "*nat\n-A KUBE-X -j ACCEPT\nCOMMIT\n", PARSE_OWNED_ONLY,
		  "line 2: chain 'KUBE-X' is not declared" },
		{ "*nat\n:KUBE-X - [0:0]\n", 0, "line 3: missing COMMIT at the end" },
		{ "*nat\n:KUBE-X - [0:0]\n*filter\n", 0, "line 3: '*filter' before COMMIT" },
		{ "*mangle\nCOMMIT\n", 0, "line 1: outside svcnat's rule model: table 'mangle'" },
		{ "*nat\nCOMMIT\n*nat\nCOMMIT\n", 0, "line 3: table 'nat' given twice" },
		{ "*nat\n:KUBE-X - [0:0]\n:KUBE-X - [0:0]\nCOMMIT\n", 0,
		  "line 3: chain 'KUBE-X': declared twice" },
		{ "*nat\n:KUBE-XXXXXXXXXXXXXXXXXXXXXXXXXX - [0:0]\nCOMMIT\n", 0,
		  "line 2: chain 'KUBE-XXXXXXXXXXXXXXXXXXXXXXXXXX': name too long" },
		{ "*nat\n:KUBE-X ACCEPT [0:0]\nCOMMIT\n", 0, "line 2: bad policy 'ACCEPT' for chain 'KUBE-X'" },
		{ "*filter\n:FORWARD DROP [0:0]\nCOMMIT\n", 0,
		  "line 2: outside svcnat's rule model: policy DROP of FORWARD" },
		{ "*nat\n:KUBE-X - [0:x]\nCOMMIT\n", 0, "line 2: bad counters '[0:x]'" },
		{ "*nat\n:KUBE-X - [0:0]\n[1:] -A KUBE-X\nCOMMIT\n", 0, "line 3: bad counters '[1:]'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m comment --comment \"open\nCOMMIT\n", 0,
		  "line 3: unterminated quoted string" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -j NOWHERE\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: target 'NOWHERE'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -p tcp -m tcp --dport 99999 -j ACCEPT\nCOMMIT\n", 0,
		  "line 3: bad port '99999'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -p tcp -m tcp --dport 80: -j ACCEPT\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: bad port '80:'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -p tcp -m tcp --dport 90:80 -j ACCEPT\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: bad port '90:80'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -p tcp -m tcp --dport 80:99999 -j ACCEPT\nCOMMIT\n", 0,
		  "line 3: bad port '80:99999'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -p tcp -m udp --dport 80\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: match '-m udp' without '-p udp'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m statistic --mode random --probability 1.5\nCOMMIT\n",
		  0, "line 3: bad probability '1.5'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m statistic --mode nth --every 2\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: statistic mode 'nth'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m conntrack --ctstate NEW,BOGUS\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: conntrack state in 'NEW,BOGUS'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m mark --mark 0x1/zz\nCOMMIT\n", 0,
		  "line 3: bad mark '0x1/zz'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m recent --rcheck --name a --rdest\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: unsupported option '--rdest' of '-m recent'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m recent --rcheck --reap --name a\nCOMMIT\n", 0,
		  "line 3: '--reap' needs --seconds" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m recent --update --reap --name a\nCOMMIT\n", 0,
		  "line 3: '--reap' needs --seconds" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m recent --rcheck --update --name a\nCOMMIT\n", 0,
		  "line 3: two recent commands" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m recent --name a --rsource\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: '-m recent' without --set, --rcheck or --update" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -j DNAT --to-destination 1.2.3.4:80-90\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: DNAT destination '1.2.3.4:80-90'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -j MASQUERADE --to-ports 1000\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: unsupported option '--to-ports' of MASQUERADE" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -s 1.2.3.4/33 -j ACCEPT\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: address '1.2.3.4/33'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X ! -p tcp -j ACCEPT\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: '! -p'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -j ACCEPT -p tcp\nCOMMIT\n", 0,
		  "line 3: outside svcnat's rule model: unexpected '-p' after the target" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X ! !\nCOMMIT\n", 0, "line 3: '!' given twice" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -j MARK --or-mark 0x1/0x1\nCOMMIT\n", 0,
		  "line 3: '--or-mark' takes no mask" },
		{ "*nat\n-N KUBE-X\nCOMMIT\n", 0, "line 2: unexpected '-N'" },
		{ "*nat\nCOMMIT extra\n", 0, "line 2: unexpected 'extra' after COMMIT" },
		{ "*nat\r\nCOMMIT\r\n", 0, "line 1: carriage return in line" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m recent --set --name \"a b\"\nCOMMIT\n", 0,
		  "line 3: bad recent name 'a b'" },
		{ "*nat\n:\"KUBE-a b\" - [0:0]\nCOMMIT\n", 0, "line 2: bad chain name 'KUBE-a b'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m nfacct\nCOMMIT\n", 0,
		  "line 3: '-m nfacct' needs --nfacct-name" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m nfacct ! --nfacct-name a\nCOMMIT\n", 0,
		  "line 3: '-m nfacct' needs --nfacct-name" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m nfacct --nfacct-name n234567890123456789012345678901b\nCOMMIT\n",
		  0, "line 3: bad nfacct name 'n234567890123456789012345678901b'" },
		{ "*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m nfacct --nfacct-name a --nfacct-name b\nCOMMIT\n",
		  0, "line 3: outside svcnat's rule model: unsupported option '--nfacct-name' of '-m nfacct'" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		char *s = parse_err(cases[i].text, cases[i].flags);

		if (strcmp(s, cases[i].msg))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, s, cases[i].msg);
		free(s);
	}
}

/* kube-proxy writes one space before the name (proxier.go); it reads as
 * the form iptables-save prints. */
static void test_parse_nfacct_kube_proxy_form(void **state)
{
	struct ruleset *rs = parse_ok("*filter\n:KUBE-FORWARD - [0:0]\n"
				      "-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct "
				      "--nfacct-name ct_state_invalid_dropped_pkts -j DROP\nCOMMIT\n",
				      0);
	char *text = render_str(rs, RENDER_ALL);

	(void)state;
	assert_non_null(strstr(text, "-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct "
				     "--nfacct-name  ct_state_invalid_dropped_pkts -j DROP\n"));
	free(text);
	ruleset_free(rs);
}

static void test_parse_misc(void **state)
{
	struct ruleset *rs;
	const struct rs_chain *c;
	static const char nul_text[] = "*nat\nCOMMIT\n\0garbage";
	struct diag_list d;

	/* blank lines, comments, odd spacing, tabs, empty quoted comment,
	 * long option spellings, --set-mark/--and-mark, "-p all" */
	rs = parse_ok("# hello\n\n*nat\n:KUBE-X - [0:0]\n:KUBE-Y -\n"
		      "-A KUBE-X   -m comment --comment \"\"\t-j KUBE-Y  \n"
		      "-A KUBE-X --source 10.1.2.3/8 --protocol all --match mark --mark 16 --jump ACCEPT\n"
		      "-A KUBE-X -j MARK --set-mark 0x10/0x30\n"
		      "-A KUBE-X -j MARK --and-mark 0xffffbfff\n"
		      "-A KUBE-X --goto KUBE-Y\n"
		      "COMMIT\n",
		      0);
	c = ruleset_find_chain(rs, RS_NAT, "KUBE-X");
	assert_int_equal(c->n_rules, 5);
	assert_string_equal(c->rules[0].m[0].u.comment, "");
	assert_string_equal(c->rules[0].t.u.chain, "KUBE-Y");
	assert_int_equal(c->rules[1].src.plen, 8);
	assert_int_equal(c->rules[1].src.addr.u.b[0], 10);
	assert_int_equal(c->rules[1].src.addr.u.b[1], 0); /* masked */
	assert_int_equal(c->rules[1].proto, 0);
	assert_int_equal(c->rules[1].m[0].u.mark.value, 16);
	assert_int_equal(c->rules[1].m[0].u.mark.mask, 0xffffffff);
	assert_int_equal(c->rules[2].t.u.mark.op, RS_MARK_SET);
	assert_int_equal(c->rules[2].t.u.mark.value, 0x10);
	assert_int_equal(c->rules[2].t.u.mark.mask, 0x30);
	assert_int_equal(c->rules[3].t.u.mark.op, RS_MARK_SET);
	assert_int_equal(c->rules[3].t.u.mark.value, 0);
	assert_int_equal(c->rules[3].t.u.mark.mask, 0x4000);
	assert_int_equal(c->rules[4].t.kind, RS_T_GOTO);
	ruleset_free(rs);

	/* rules of chains interleaved (restore input may do that), names
	 * that prefix each other, counters: each rule lands in its chain */
	rs = parse_ok("*nat\n:KUBE-A - [0:0]\n:KUBE-AB - [0:0]\n"
		      "-A KUBE-A -j KUBE-AB\n[3:4] -A KUBE-AB -j RETURN\n-A KUBE-A -j ACCEPT\n"
		      "-A KUBE-AB -j DROP\n-A KUBE-AB -j ACCEPT\n-A KUBE-A\n-A KUBE-A -j DROP\nCOMMIT\n",
		      0);
	c = ruleset_find_chain(rs, RS_NAT, "KUBE-A");
	assert_int_equal(c->n_rules, 4);
	assert_int_equal(c->rules[0].t.kind, RS_T_JUMP);
	assert_int_equal(c->rules[1].t.kind, RS_T_ACCEPT);
	assert_int_equal(c->rules[2].t.kind, 0);
	assert_int_equal(c->rules[3].t.kind, RS_T_DROP);
	c = ruleset_find_chain(rs, RS_NAT, "KUBE-AB");
	assert_int_equal(c->n_rules, 3);
	assert_int_equal(c->rules[0].t.kind, RS_T_RETURN);
	assert_int_equal(c->rules[2].t.kind, RS_T_ACCEPT);
	ruleset_free(rs);

	/* an empty text is an empty ruleset; text without a final newline */
	rs = parse_ok("", 0);
	assert_int_equal(ruleset_count_rules(rs), 0);
	ruleset_free(rs);
	rs = parse_ok("*filter\n:KUBE-A - [0:0]\n-A KUBE-A -j DROP\nCOMMIT", 0);
	assert_int_equal(ruleset_count_rules(rs), 1);
	ruleset_free(rs);

	/* length is honoured: a NUL inside the text is an error, not an end */
	diag_list_init(&d);
	assert_int_equal(ruleset_parse(nul_text, sizeof(nul_text) - 1, 0, &rs, &d), -EINVAL);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.items[0].msg, "NUL byte in line");
	diag_list_done(&d);
	/* ... and text is not read past len */
	rs = NULL;
	assert_int_equal(ruleset_parse("*nat\nCOMMIT\nGARBAGE", 12, 0, &rs, NULL), 0);
	ruleset_free(rs);
	/* diags may be NULL */
	rs = NULL;
	assert_int_equal(ruleset_parse("bogus", 5, 0, &rs, NULL), -EINVAL);
	assert_null(rs);
}

/* --- fuzz: random mutations of real samples never crash or leak, and
 * whatever parses renders to text that parses to the same text again --- */

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fuzz_one(const char *buf, size_t len, unsigned flags)
{
	struct ruleset *rs = NULL, *rs2 = NULL;
	struct diag_list d;
	char *t1, *t2;

	diag_list_init(&d);
	if (ruleset_parse(buf, len, flags, &rs, &d) < 0) {
		assert_null(rs);
		assert_true(d.n >= 1);
		diag_list_done(&d);
		return;
	}
	diag_list_done(&d);
	t1 = render_str(rs, RENDER_ALL);
	rs2 = parse_ok(t1, 0);
	t2 = render_str(rs2, RENDER_ALL);
	if (strcmp(t1, t2))
		fail_msg("render/parse not idempotent for:\n%.*s", (int)len, buf);
	free(t1);
	free(t2);
	ruleset_free(rs);
	ruleset_free(rs2);
}

static void test_fuzz(void **state)
{
	static const char *const files[] = { "save-legacy.txt", "save-foreign-c.txt", "save-input.txt" };
	static const char alphabet[] = " \t\n\"\\!-:/[]#*0123456789xACDEGKMNPRSTU";
	/* Deterministic by default; SVCNAT_FUZZ_SEED/ITERS explore further. */
	const char *seed_env = getenv("SVCNAT_FUZZ_SEED");
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) | 1 : 0x9e3779b97f4a7c15ULL;
	const char *iters_env = getenv("SVCNAT_FUZZ_ITERS");
	unsigned iters = iters_env ? (unsigned)strtoul(iters_env, NULL, 10) : 1500;
	size_t f, len;

	for (f = 0; f < ARRAY_SIZE(files); f++) {
		char *orig = read_data(files[f], &len);
		char *buf = malloc(len + 64);

		assert_non_null(buf);
		for (unsigned it = 0; it < iters; it++) {
			size_t n = len, k, nmut = 1 + rng_next(&seed) % 4;

			memcpy(buf, orig, len);
			for (k = 0; k < nmut && n; k++) {
				size_t pos = rng_next(&seed) % n;

				switch (rng_next(&seed) % 4) {
				case 0: /* replace a byte */
					buf[pos] = alphabet[rng_next(&seed) % (sizeof(alphabet) - 1)];
					break;
				case 1: /* random byte, any value */
					buf[pos] = (char)rng_next(&seed);
					break;
				case 2: /* delete a run */
				{
					size_t run = 1 + rng_next(&seed) % 16;

					if (run > n - pos)
						run = n - pos;
					memmove(buf + pos, buf + pos + run, n - pos - run);
					n -= run;
					break;
				}
				default: /* truncate */
					n = pos;
					break;
				}
			}
			fuzz_one(buf, n, 0);
			fuzz_one(buf, n, PARSE_OWNED_ONLY);
		}
		free(buf);
		free(orig);
	}
}

/* --- tracer --- */

static const struct ipaddr node_ips[1] = {
	{ .family = AF_INET, .u.b = { 198, 18, 0, 1 } },
};

static struct trace_result trace(const struct ruleset *rs, const char *recent, const char *src,
				 const char *dst, uint8_t proto, uint16_t dport, bool local)
{
	struct trace_env env = { .local_addrs = node_ips, .n_local_addrs = 1, .recent_name = recent };
	struct trace_packet p = { .src = ip(src), .dst = ip(dst), .proto = proto, .dport = dport,
				  .from_local = local };
	struct trace_result res = { 0 };
	double sum = 0;
	size_t i;

	assert_int_equal(trace_packet(rs, &env, &p, &res), 0);
	for (i = 0; i < res.n; i++)
		sum += res.o[i].probability;
	if (fabs(sum - 1.0) > 1e-9) {
		trace_result_print(&res, stderr);
		fail_msg("probabilities sum to %f", sum);
	}
	return res;
}

/* A kube-proxy-shaped ruleset: web (3 endpoints, affinity), nodeport, an
 * empty service, a DROP'ing firewall, masquerade via mark. */
static struct ruleset *kp_ruleset(void)
{
	size_t len;
	char *text = read_data("save-input.txt", &len);
	struct ruleset *rs = parse_ok(text, 0);

	free(text);
	return rs;
}

static void test_trace_statistic_and_affinity(void **state)
{
	struct ruleset *rs = kp_ruleset();
	struct trace_result r;

	/* pod -> cluster IP: 1/3 each, no masquerade, affinity recorded */
	r = trace(rs, NULL, "198.18.65.9", "198.19.0.10", IPPROTO_TCP, 80, false);
	assert_true(fabs(trace_prob_to(&r, "198.18.65.2", 8080) - 1.0 / 3) < 1e-9);
	assert_true(fabs(trace_prob_to(&r, "198.18.65.3", 8080) - 1.0 / 3) < 1e-9);
	assert_true(fabs(trace_prob_to(&r, "198.18.66.2", 0) - 1.0 / 3) < 1e-9);
	assert_true(fabs(trace_prob_verdict(&r, TRACE_DNAT) - 1.0) < 1e-9);
	assert_true(trace_none_masq(&r));
	assert_false(trace_all_masq(&r));
	for (size_t i = 0; i < r.n; i++) {
		if (ipaddr_cmp(&r.o[i].dnat_addr, &node_ips[0]) == 0)
			fail();
		if (r.o[i].dnat_addr.u.b[3] == 2 && r.o[i].dnat_addr.u.b[2] == 65)
			assert_string_equal(r.o[i].recent_set, "KUBE-SEP-AAAAAAAAAAAAAAAA");
		else
			assert_null(r.o[i].recent_set);
		assert_true(strncmp(r.o[i].last_chain, "KUBE-SEP-", 9) == 0);
	}
	trace_result_done(&r);

	/* an affinity entry for endpoint A: always A */
	r = trace(rs, "KUBE-SEP-AAAAAAAAAAAAAAAA", "198.18.65.9", "198.19.0.10", IPPROTO_TCP, 80,
		  false);
	assert_int_equal(r.n, 1);
	assert_true(fabs(trace_prob_to(&r, "198.18.65.2", 8080) - 1.0) < 1e-12);
	trace_result_done(&r);

	/* wrong port or protocol: not a service packet */
	r = trace(rs, NULL, "198.18.65.9", "198.19.0.10", IPPROTO_UDP, 80, false);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.o[0].verdict, TRACE_ACCEPT);
	assert_false(r.o[0].masquerade);
	trace_result_done(&r);
	ruleset_free(rs);
}

static void test_trace_masquerade(void **state)
{
	struct ruleset *rs = kp_ruleset();
	struct trace_result r;

	/* off-cluster source to the cluster IP: marked, masqueraded on the
	 * way out, the mark cleared by KUBE-POSTROUTING's xor first */
	r = trace(rs, NULL, "198.18.1.5", "198.19.0.10", IPPROTO_TCP, 80, false);
	assert_true(fabs(trace_prob_verdict(&r, TRACE_DNAT) - 1.0) < 1e-9);
	assert_true(trace_all_masq(&r));
	for (size_t i = 0; i < r.n; i++)
		assert_true(r.o[i].masq_marked);
	trace_result_done(&r);

	/* hairpin: endpoint A to its own service, landing on itself */
	r = trace(rs, NULL, "198.18.65.2", "198.19.0.10", IPPROTO_TCP, 80, false);
	for (size_t i = 0; i < r.n; i++) {
		bool self = r.o[i].dnat_addr.u.b[2] == 65 && r.o[i].dnat_addr.u.b[3] == 2;

		assert_true(r.o[i].masquerade == self);
	}
	trace_result_done(&r);

	/* from the node itself (OUTPUT path), node address as source */
	r = trace(rs, NULL, "198.18.0.1", "198.19.0.10", IPPROTO_TCP, 80, true);
	assert_true(fabs(trace_prob_verdict(&r, TRACE_DNAT) - 1.0) < 1e-9);
	assert_true(trace_all_masq(&r));
	trace_result_done(&r);
	ruleset_free(rs);
}

static void test_trace_nodeport_and_filter(void **state)
{
	struct ruleset *rs = kp_ruleset();
	struct trace_result r;

	/* NodePort on the node's address (addrtype LOCAL): external, so
	 * masqueraded via KUBE-EXT- */
	r = trace(rs, NULL, "198.18.1.5", "198.18.0.1", IPPROTO_TCP, 30080, false);
	assert_true(fabs(trace_prob_verdict(&r, TRACE_DNAT) - 1.0) < 1e-9);
	assert_true(trace_all_masq(&r));
	trace_result_done(&r);

	/* the same port on a non-local address: nothing happens */
	r = trace(rs, NULL, "198.18.1.5", "198.18.0.2", IPPROTO_TCP, 30080, false);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.o[0].verdict, TRACE_ACCEPT);
	trace_result_done(&r);

	/* 127.0.0.0/8 is always local */
	r = trace(rs, NULL, "127.0.0.1", "127.0.0.1", IPPROTO_TCP, 30080, true);
	assert_true(fabs(trace_prob_verdict(&r, TRACE_DNAT) - 1.0) < 1e-9);
	trace_result_done(&r);

	/* no endpoints: filter KUBE-SERVICES rejects (FORWARD, pod source) */
	r = trace(rs, NULL, "198.18.65.9", "198.19.0.30", IPPROTO_TCP, 80, false);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.o[0].verdict, TRACE_REJECT);
	assert_string_equal(r.o[0].last_chain, "KUBE-SERVICES");
	trace_result_done(&r);

	/* empty service's node port on a local address: filter INPUT path */
	r = trace(rs, NULL, "198.18.1.5", "198.18.0.1", IPPROTO_TCP, 30081, false);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.o[0].verdict, TRACE_REJECT);
	assert_string_equal(r.o[0].last_chain, "KUBE-EXTERNAL-SERVICES");
	trace_result_done(&r);

	/* load balancer: allowed range reaches endpoints, others are
	 * dropped by the firewall chain in filter, after nat let them pass */
	r = trace(rs, NULL, "198.18.1.5", "198.18.200.5", IPPROTO_TCP, 80, false);
	assert_true(fabs(trace_prob_verdict(&r, TRACE_DNAT) - 1.0) < 1e-9);
	trace_result_done(&r);
	r = trace(rs, NULL, "198.18.1.200", "198.18.200.5", IPPROTO_TCP, 80, false);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.o[0].verdict, TRACE_DROP);
	assert_string_equal(r.o[0].last_chain, "KUBE-PROXY-FIREWALL");
	trace_result_done(&r);
	ruleset_free(rs);
}

static void test_trace_control_flow(void **state)
{
	struct ruleset *rs = parse_ok(
		"*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n"
		":KUBE-F - [0:0]\n"
		"-A FORWARD -j KUBE-F\n"
		"-A INPUT -p tcp -m tcp --dport 7 -j DROP\n"
		/* FORWARD sees the DNATed destination and port */
		"-A KUBE-F -d 198.18.66.7/32 -p tcp -m tcp --dport 9000 -j REJECT\n"
		"COMMIT\n"
		"*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n"
		":POSTROUTING ACCEPT [0:0]\n"
		":KUBE-A - [0:0]\n:KUBE-B - [0:0]\n:KUBE-C - [0:0]\n:KUBE-D - [0:0]\n"
		"-A PREROUTING -j KUBE-A\n"
		"-A PREROUTING -p tcp -m tcp ! --dport 7 -j DNAT --to-destination 198.18.66.9:1\n"
		/* jump, return to the caller, continue */
		"-A KUBE-A -j KUBE-B\n"
		"-A KUBE-A -p tcp -m tcp --dport 81 -g KUBE-C\n"
		"-A KUBE-A -p tcp -m tcp --dport 81 -j DNAT --to-destination 198.18.66.3:1\n"
		"-A KUBE-A -p tcp -m tcp --dport 82 -j KUBE-D\n"
		"-A KUBE-B -p tcp -m tcp --dport 80 -j RETURN\n"
		"-A KUBE-B -p tcp -m tcp --dport 80 -j DNAT --to-destination 198.18.66.1:1\n"
		/* goto: falling off KUBE-C returns to PREROUTING, not KUBE-A */
		"-A KUBE-C -p tcp -m tcp --dport 82 -j DNAT --to-destination 198.18.66.2:1\n"
		"-A KUBE-D -p tcp -j DNAT --to-destination 198.18.66.7:9000\n"
		"COMMIT\n",
		0);
	struct trace_result r;

	/* dport 80: KUBE-B returns early, KUBE-A falls through, PREROUTING's
	 * own DNAT applies */
	r = trace(rs, NULL, "198.18.1.5", "198.18.3.3", IPPROTO_TCP, 80, false);
	assert_int_equal(r.n, 1);
	assert_true(trace_prob_to(&r, "198.18.66.9", 1) == 1.0);
	assert_string_equal(r.o[0].last_chain, "PREROUTING");
	trace_result_done(&r);
	/* dport 81: goto KUBE-C (no match there) ends KUBE-A too: the DNAT
	 * after the goto in KUBE-A is never reached */
	r = trace(rs, NULL, "198.18.1.5", "198.18.3.3", IPPROTO_TCP, 81, false);
	assert_true(trace_prob_to(&r, "198.18.66.9", 1) == 1.0);
	trace_result_done(&r);
	/* dport 82: DNAT to 198.18.66.7:9000, which filter then rejects */
	r = trace(rs, NULL, "198.18.1.5", "198.18.3.3", IPPROTO_TCP, 82, false);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.o[0].verdict, TRACE_REJECT);
	assert_string_equal(r.o[0].last_chain, "KUBE-F");
	trace_result_done(&r);
	/* filter INPUT only for packets routed to the node itself (also
	 * when the node sends them to its own address) */
	r = trace(rs, NULL, "198.18.1.5", "198.18.0.1", IPPROTO_TCP, 7, false);
	assert_int_equal(r.o[0].verdict, TRACE_DROP);
	assert_string_equal(r.o[0].last_chain, "INPUT");
	trace_result_done(&r);
	r = trace(rs, NULL, "198.18.0.1", "127.0.0.1", IPPROTO_TCP, 7, true);
	assert_int_equal(r.o[0].verdict, TRACE_DROP);
	trace_result_done(&r);
	r = trace(rs, NULL, "198.18.1.5", "198.18.3.3", IPPROTO_TCP, 7, false);
	assert_int_equal(r.o[0].verdict, TRACE_ACCEPT);
	trace_result_done(&r);
	/* from the node: OUTPUT path, PREROUTING never applies */
	r = trace(rs, NULL, "198.18.0.1", "198.18.3.3", IPPROTO_TCP, 82, true);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.o[0].verdict, TRACE_ACCEPT);
	trace_result_done(&r);
	ruleset_free(rs);
}

/* Port ranges and prefixes, as the dispatch tree's chains match them. */
static void test_trace_ranges(void **state)
{
	struct ruleset *rs = parse_ok(
		"*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n"
		":POSTROUTING ACCEPT [0:0]\n:KUBE-A - [0:0]\n"
		"-A PREROUTING -p tcp -m tcp --dport 30000:30255 -j KUBE-A\n"
		"-A PREROUTING -d 198.19.16.0/20 -p udp -m udp --dport 53 -j DNAT --to-destination 198.18.66.2:1\n"
		"-A KUBE-A -p tcp -j DNAT --to-destination 198.18.66.1:1\n"
		"COMMIT\n",
		0);
	static const struct {
		const char *dst;
		uint8_t proto;
		uint16_t dport;
		const char *to;
	} cases[] = {
		{ "198.18.3.3", IPPROTO_TCP, 29999, NULL },
		{ "198.18.3.3", IPPROTO_TCP, 30000, "198.18.66.1" },
		{ "198.18.3.3", IPPROTO_TCP, 30255, "198.18.66.1" },
		{ "198.18.3.3", IPPROTO_TCP, 30256, NULL },
		{ "198.18.3.3", IPPROTO_UDP, 30000, NULL },
		{ "198.19.15.255", IPPROTO_UDP, 53, NULL },
		{ "198.19.16.0", IPPROTO_UDP, 53, "198.18.66.2" },
		{ "198.19.31.255", IPPROTO_UDP, 53, "198.18.66.2" },
		{ "198.19.32.0", IPPROTO_UDP, 53, NULL },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct trace_result r = trace(rs, NULL, "198.18.1.5", cases[i].dst, cases[i].proto,
					      cases[i].dport, false);

		if (cases[i].to)
			assert_true(trace_prob_to(&r, cases[i].to, 1) == 1.0);
		else
			assert_true(trace_prob_verdict(&r, TRACE_ACCEPT) == 1.0);
		trace_result_done(&r);
	}
	ruleset_free(rs);
}

static void test_trace_statistic_inverted_and_chained(void **state)
{
	/* four endpoints with kube-proxy's 1/4, 1/3, 1/2 chain, and an
	 * inverted statistic: every outcome weighs 1/4 */
	struct ruleset *rs = parse_ok(
		"*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-S - [0:0]\n"
		"-A PREROUTING -j KUBE-S\n"
		"-A KUBE-S -m statistic --mode random --probability 0.2500000000 -j DNAT --to-destination 198.18.65.1\n"
		"-A KUBE-S -m statistic --mode random ! --probability 0.6666666667 -j DNAT --to-destination 198.18.65.2\n"
		"-A KUBE-S -m statistic --mode random --probability 0.5000000000 -j DNAT --to-destination 198.18.65.3\n"
		"-A KUBE-S -j DNAT --to-destination 198.18.65.4\n"
		"COMMIT\n",
		0);
	struct trace_result r = trace(rs, NULL, "198.18.1.5", "198.19.0.1", IPPROTO_UDP, 53, false);

	assert_int_equal(r.n, 4);
	for (int i = 1; i <= 4; i++) {
		char a[32];

		snprintf(a, sizeof(a), "198.18.65.%d", i);
		assert_true(fabs(trace_prob_to(&r, a, 53) - 0.25) < 1e-9);
	}
	trace_result_done(&r);
	ruleset_free(rs);
}

static void test_trace_mark_and_errors(void **state)
{
	struct ruleset *rs = parse_ok(
		"*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n"
		":KUBE-LOOP - [0:0]\n:KUBE-G1 - [0:0]\n:KUBE-G2 - [0:0]\n:KUBE-P - [0:0]\n"
		"-A PREROUTING -p udp -j KUBE-LOOP\n"
		"-A PREROUTING -p sctp -j KUBE-G1\n"
		"-A PREROUTING -p tcp -j MARK --set-xmark 0x8/0x8\n"
		"-A PREROUTING -p tcp -m mark --mark 0x8/0x8 -j MARK --set-xmark 0x1/0x0\n"
		"-A POSTROUTING -j KUBE-P\n"
		"-A KUBE-P -m mark ! --mark 0x9 -j RETURN\n"
		"-A KUBE-P -j MASQUERADE\n"
		"-A KUBE-LOOP -j KUBE-LOOP\n"
		"-A KUBE-G1 -g KUBE-G2\n"
		"-A KUBE-G2 -g KUBE-G1\n"
		"COMMIT\n",
		0);
	struct trace_env env = { .local_addrs = node_ips, .n_local_addrs = 1, .masq_mark = 0x8 };
	struct trace_packet p = { .src = ip("198.18.1.5"), .dst = ip("198.18.3.3"), .proto = IPPROTO_TCP };
	struct trace_result r = { 0 };
	struct rs_chain *c;
	struct rs_rule *rule;

	/* or 0x8, then xor 0x1 when 0x8 is set: mark 0x9 -> masquerade */
	assert_int_equal(trace_packet(rs, &env, &p, &r), 0);
	assert_int_equal(r.n, 1);
	assert_true(r.o[0].masquerade);
	assert_true(r.o[0].masq_marked);
	trace_result_done(&r);
	env.masq_mark = 0x4000;
	assert_int_equal(trace_packet(rs, &env, &p, &r), 0);
	assert_false(r.o[0].masq_marked);
	trace_result_done(&r);

	p.proto = IPPROTO_UDP; /* jump loop */
	assert_int_equal(trace_packet(rs, &env, &p, &r), -ELOOP);
	assert_null(r.o);
	p.proto = IPPROTO_SCTP; /* goto cycle, no depth growth */
	assert_int_equal(trace_packet(rs, &env, &p, &r), -ELOOP);

	/* a jump to a chain the ruleset does not have */
	c = ruleset_find_chain(rs, RS_NAT, "KUBE-G1");
	rule = &c->rules[0];
	rule->t.u.chain = "KUBE-MISSING";
	assert_int_equal(trace_packet(rs, &env, &p, &r), -EINVAL);
	ruleset_free(rs);
}

/* --- scale: 10,000 services x 10 endpoints, kube-proxy-shaped --- */

static struct ruleset *big_ruleset(unsigned n_svc, unsigned n_ep)
{
	struct ruleset *rs = ruleset_new();
	struct rs_chain *svcs, *mm, *c;
	struct rs_rule *r;
	unsigned s, e;

	assert_non_null(rs);
	assert_non_null(svcs = ruleset_add_chain(rs, RS_NAT, "KUBE-SERVICES"));
	assert_non_null(mm = ruleset_add_chain(rs, RS_NAT, "KUBE-MARK-MASQ"));
	assert_non_null(r = rs_chain_append(mm));
	r->t.kind = RS_T_MARK;
	r->t.u.mark.value = 0x4000;
	for (s = 0; s < n_svc; s++) {
		const char *svc = ruleset_printf(rs, "KUBE-SVC-%016u", s);
		const char *comment = ruleset_printf(rs, "ns%u/svc%u:http cluster IP", s % 50, s);
		struct ipnet vip = { .addr = { .family = AF_INET,
					       .u.b = { 198, 19, (uint8_t)(s >> 8), (uint8_t)s } },
				     .plen = 32 };

		assert_non_null(svc);
		assert_non_null(c = ruleset_add_chain(rs, RS_NAT, svc));
		assert_non_null(r = rs_chain_append(svcs));
		r->dst = vip;
		r->proto = IPPROTO_TCP;
		add(r, RS_M_COMMENT)->u.comment = comment;
		add(r, RS_M_PORT)->u.port.dport = 80;
		r->t.kind = RS_T_JUMP;
		r->t.u.chain = c->name;
		assert_non_null(r = rs_chain_append(c));
		r->dst = vip;
		r->src = net("198.18.64.0/18");
		r->src_inv = true;
		r->proto = IPPROTO_TCP;
		add(r, RS_M_COMMENT)->u.comment = comment;
		add(r, RS_M_PORT)->u.port.dport = 80;
		r->t.kind = RS_T_JUMP;
		r->t.u.chain = "KUBE-MARK-MASQ";
		for (e = 0; e < n_ep; e++) {
			const char *sep = ruleset_printf(rs, "KUBE-SEP-%07u%09u", s, e);
			const char *ec = ruleset_printf(rs, "ns%u/svc%u:http", s % 50, s);
			struct ipaddr ep = { .family = AF_INET,
					     .u.b = { 198, 18, (uint8_t)(64 + (s >> 8) % 64), (uint8_t)e } };
			struct rs_chain *sc;

			assert_non_null(sc = ruleset_add_chain(rs, RS_NAT, sep));
			assert_non_null(r = rs_chain_append(c));
			add(r, RS_M_COMMENT)->u.comment = ec;
			if (e + 1 < n_ep)
				add(r, RS_M_STATISTIC)->u.stat.probability = 1.0 / (n_ep - e);
			r->t.kind = RS_T_JUMP;
			r->t.u.chain = sc->name;
			assert_non_null(r = rs_chain_append(sc));
			r->src = (struct ipnet){ .addr = ep, .plen = 32 };
			add(r, RS_M_COMMENT)->u.comment = ec;
			r->t.kind = RS_T_JUMP;
			r->t.u.chain = "KUBE-MARK-MASQ";
			assert_non_null(r = rs_chain_append(sc));
			r->proto = IPPROTO_TCP;
			add(r, RS_M_COMMENT)->u.comment = ec;
			add(r, RS_M_PORT);
			r->t.kind = RS_T_DNAT;
			r->t.u.dnat.addr = ep;
			r->t.u.dnat.port = 8080;
		}
	}
	return rs;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Render and parse a large ruleset and check the round trip.  Prints the
 * times (SVCNAT_BENCH=1 runs the full 10,000 x 10; the default is smaller
 * to keep sanitizer builds quick); asserts nothing about them.
 */
static void test_scale(void **state)
{
	bool full = getenv("SVCNAT_BENCH") != NULL;
	unsigned n_svc = full ? 10000 : 1000;
	struct ruleset *rs = big_ruleset(n_svc, 10), *back = NULL;
	double t0, best = 1e9, t_parse;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	/* to /dev/null, best of three: the renderer's own cost */
	f = fopen("/dev/null", "we");
	assert_non_null(f);
	for (int i = 0; i < 3; i++) {
		t0 = now();
		assert_int_equal(render_save(rs, RENDER_ALL, f), 0);
		if (now() - t0 < best)
			best = now() - t0;
	}
	fclose(f);

	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(render_save(rs, RENDER_ALL, f), 0);
	fclose(f);
	t0 = now();
	assert_int_equal(ruleset_parse(buf, len, 0, &back, NULL), 0);
	t_parse = now() - t0;
	printf("# scale: %u services x 10 endpoints: %zu rules, %zu bytes; render %.3f s, parse %.3f s\n",
	       n_svc, ruleset_count_rules(rs), len, best, t_parse);
	assert_int_equal(ruleset_count_rules(back), ruleset_count_rules(rs));
	assert_int_equal(ruleset_count_chains(back), ruleset_count_chains(rs));
	assert_rulesets_equal(rs, back);
	free(buf);
	ruleset_free(back);
	ruleset_free(rs);
}


/* ip6tables-save text (PARSE_IPV6): addresses, "[ADDR]:PORT" DNAT, the
 * icmp6 REJECT and the IPv6 recent mask survive parse -> render exactly;
 * IPv4 forms are refused there and IPv6 forms in an IPv4 parse. */
static void test_ipv6_round_trip(void **state)
{
	static const char text[] =
		"*filter\n"
		":INPUT ACCEPT [0:0]\n"
		":FORWARD ACCEPT [0:0]\n"
		":OUTPUT ACCEPT [0:0]\n"
		":KUBE-SERVICES - [0:0]\n"
		"-A INPUT -j KUBE-SERVICES\n"
		"-A KUBE-SERVICES -d 2001:2:0:f000::42/128 -p udp -m comment --comment \"ns2/svc2:p80 has no endpoints\" -m udp --dport 80 -j REJECT --reject-with icmp6-port-unreachable\n"
		"COMMIT\n"
		"*nat\n"
		":PREROUTING ACCEPT [0:0]\n"
		":INPUT ACCEPT [0:0]\n"
		":OUTPUT ACCEPT [0:0]\n"
		":POSTROUTING ACCEPT [0:0]\n"
		":KUBE-SEP-VTROCHHRTEVU3ZD7 - [0:0]\n"
		":KUBE-SERVICES - [0:0]\n"
		"-A PREROUTING -j KUBE-SERVICES\n"
		"-A KUBE-SEP-VTROCHHRTEVU3ZD7 -s 2001:2:0:180::1/128 -j KUBE-SEP-VTROCHHRTEVU3ZD7\n"
		"-A KUBE-SEP-VTROCHHRTEVU3ZD7 -p tcp -m recent --set --name KUBE-SEP-VTROCHHRTEVU3ZD7 --mask ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff --rsource -m tcp -j DNAT --to-destination [2001:2:0:180::1]:80\n"
		"-A KUBE-SERVICES ! -s 2001:2:0:10::/64 -d 2001:2:0:f000::41/128 -p tcp -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-VTROCHHRTEVU3ZD7 --mask ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff --rsource -j KUBE-SEP-VTROCHHRTEVU3ZD7\n"
		"-A KUBE-SERVICES -d 2001:2:0:f000::43/128 -j DNAT --to-destination 2001:2:0:180::3\n"
		"-A KUBE-SERVICES ! -d ::1/128 -m addrtype --dst-type LOCAL -j KUBE-SEP-VTROCHHRTEVU3ZD7\n"
		"COMMIT\n";
	struct ruleset *rs = parse_ok(text, PARSE_IPV6);
	const struct rs_chain *c = ruleset_find_chain(rs, RS_FILTER, "KUBE-SERVICES");
	char *out = render_str(rs, RENDER_ALL), *err;

	(void)state;
	assert_string_equal(out, text);
	assert_true(c->rules[0].t.u.reject.icmp6);
	assert_int_equal(c->rules[0].dst.addr.family, AF_INET6);
	assert_int_equal(c->rules[0].dst.plen, 128);
	free(out);
	ruleset_free(rs);
	/* host bits are masked, as ip6tables stores them */
	rs = parse_ok("*nat\n:KUBE-X - [0:0]\n-A KUBE-X -s 2001:2::ff/64 -j RETURN\nCOMMIT\n",
		      PARSE_IPV6);
	out = render_str(rs, RENDER_ALL);
	assert_non_null(strstr(out, "-A KUBE-X -s 2001:2::/64 -j RETURN\n"));
	free(out);
	ruleset_free(rs);
	/* REJECT without a type is ip6tables' default, icmp6-port-unreachable */
	rs = parse_ok("*filter\n:KUBE-X - [0:0]\n-A KUBE-X -j REJECT\nCOMMIT\n", PARSE_IPV6);
	assert_true(ruleset_find_chain(rs, RS_FILTER, "KUBE-X")->rules[0].t.u.reject.icmp6);
	ruleset_free(rs);
	/* the other family's forms */
	err = parse_err("*nat\n:KUBE-X - [0:0]\n-A KUBE-X -s 10.0.0.1/32 -j RETURN\nCOMMIT\n",
			PARSE_IPV6);
	assert_non_null(strstr(err, "10.0.0.1/32"));
	free(err);
	err = parse_err("*nat\n:KUBE-X - [0:0]\n-A KUBE-X -s 2001:2::1/128 -j RETURN\nCOMMIT\n", 0);
	assert_non_null(strstr(err, "2001:2::1/128"));
	free(err);
	err = parse_err("*filter\n:KUBE-X - [0:0]\n-A KUBE-X -j REJECT --reject-with icmp-port-unreachable\nCOMMIT\n",
			PARSE_IPV6);
	assert_non_null(strstr(err, "icmp-port-unreachable"));
	free(err);
	err = parse_err("*nat\n:KUBE-X - [0:0]\n-A KUBE-X -j DNAT --to-destination [2001:2::1\nCOMMIT\n",
			PARSE_IPV6);
	assert_non_null(strstr(err, "DNAT destination"));
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quote),
		cmocka_unit_test(test_render_forms),
		cmocka_unit_test(test_render_save_layout),
		cmocka_unit_test(test_render_huge_line),
		cmocka_unit_test(test_render_write_error),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_ipv6_round_trip),
		cmocka_unit_test(test_parse_saved_samples),
		cmocka_unit_test(test_render_matches_iptables_save),
		cmocka_unit_test(test_parse_owned_only),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_misc),
		cmocka_unit_test(test_parse_nfacct_kube_proxy_form),
		cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_trace_statistic_and_affinity),
		cmocka_unit_test(test_trace_masquerade),
		cmocka_unit_test(test_trace_nodeport_and_filter),
		cmocka_unit_test(test_trace_control_flow),
		cmocka_unit_test(test_trace_ranges),
		cmocka_unit_test(test_trace_statistic_inverted_and_chained),
		cmocka_unit_test(test_trace_mark_and_errors),
		cmocka_unit_test(test_scale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
