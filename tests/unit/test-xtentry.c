/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The xt entry codec (src/backend/xt/xtentry.c) without a kernel:
 *   - every rule of a case, encoded as an ipt_entry or ip6t_entry, has the
 *     bytes iptables-legacy-restore / ip6tables-legacy-restore 1.8.9 put
 *     into the kernel for the same text (tests/data/xt/<case>.hex: the
 *     tables as IPT_SO_GET_ENTRIES / IP6T_SO_GET_ENTRIES returned them
 *     after the restore, recorded with tests/e2e/xtdump; jump offsets are
 *     the kernel's business and compared as 0);
 *   - each encoded entry and each recorded one decode back to the rule;
 *   - what the codec refuses: an address, REJECT type or recent mask of
 *     the other family, and ip6t entries svcnat does not write.
 * The cases: the shipped dual-stack example's golden dry-run (its iptables
 * and its ip6tables part), tests/data/xt/extra6.rules (-i and "-i veth+",
 * ranges, negations, goto, sctp, DNAT without a port, prefixes not on a
 * byte) and, for iptables, tests/data/nft/extra.rules and nfacct.rules.
 * To record again: `unshare -n sh -c 'ip6tables-legacy-restore <FILE &&
 * { echo table filter; xtdump 6 filter; echo table nat; xtdump 6 nat; }'`.
 */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/xt/xtentry.h"
#include "core/owned.h"
#include "core/parse.h"
#include "util.h"
#include "slurp.h"

/* One recorded entry: "table chain n hex". */
struct ref {
	char table[16], chain[32];
	long n;
	unsigned char *b;
	size_t len;
};

static size_t refs_load(const char *path, struct ref **ret)
{
	size_t len, n = 0, cap = 0;
	_cleanup_free_ char *text = slurp(path, &len);
	struct ref *refs = NULL;
	char table[16] = "";

	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char chain[32], num[16], *hex;
		struct ref *r;

		if (sscanf(line, "table %15s", table) == 1 || !strncmp(line, "hooks ", 6))
			continue;
		assert_int_equal(sscanf(line, "%31s %15s", chain, num), 2);
		if (streq(chain, "-"))
			continue;
		hex = strrchr(line, ' ') + 1;
		assert_int_equal(GROW(refs, cap, n + 1), 0);
		r = &refs[n++];
		snprintf(r->table, sizeof(r->table), "%s", table);
		snprintf(r->chain, sizeof(r->chain), "%s", chain);
		r->n = strtol(num, NULL, 10);
		r->len = strlen(hex) / 2;
		r->b = malloc(r->len);
		assert_non_null(r->b);
		for (size_t i = 0; i < r->len; i++)
			assert_int_equal(sscanf(hex + 2 * i, "%2hhx", &r->b[i]), 1);
	}
	*ret = refs;
	return n;
}

static void refs_free(struct ref *refs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(refs[i].b);
	free(refs);
}

static struct ref *ref_find(struct ref *refs, size_t n, const char *table, const char *chain,
			    size_t ruleno)
{
	for (size_t i = 0; i < n; i++)
		if (streq(refs[i].table, table) && streq(refs[i].chain, chain) &&
		    refs[i].n == (long)ruleno)
			return &refs[i];
	return NULL;
}

static const struct xt_entry_target *target_of(const struct xt_fam *f, const void *e)
{
	return (const void *)((const unsigned char *)e + xt_fam_target_offset(f, e));
}

/* A jump's or fall-through's verdict is an offset in the kernel's table. */
static void zero_offsets(const struct xt_fam *f, void *e)
{
	struct xt_standard_target *st = (void *)target_of(f, e);

	if (!strcmp(st->target.u.user.name, XT_STANDARD_TARGET) && st->verdict >= 0)
		st->verdict = 0;
}

struct lctx {
	const struct xt_fam *f;
	const struct rs_rule *r;
};

/* What the rule's standard target means: its chain for a jump (the offset
 * is not known here), "" for a fall-through, else the verdict's name. */
static const char *label(const void *e, void *ctx)
{
	const struct lctx *l = ctx;
	const struct xt_standard_target *st = (const void *)target_of(l->f, e);

	if (l->r->t.kind == RS_T_JUMP || l->r->t.kind == RS_T_GOTO)
		return l->r->t.u.chain;
	if (l->r->t.kind == RS_T_NONE)
		return "";
	return xt_verdict_name(st->verdict);
}

static const char *label4(const struct ipt_entry *e, void *ctx)
{
	return label(e, ctx);
}

static const char *label6(const struct ip6t_entry *e, void *ctx)
{
	return label(e, ctx);
}

static const struct xt_fam *fam_of(int af)
{
	return af == AF_INET6 ? &xt_fam6 : &xt_fam4;
}

static int build(int af, const struct rs_rule *r, struct xt_entry_buf *buf, const char **why)
{
	return af == AF_INET6 ? xt_entry_build6(r, false, buf, why)
			      : xt_entry_build(r, false, buf, why);
}

static void decode_same(int af, const void *e, const struct rs_rule *r, const char *what)
{
	struct lctx l = { .f = fam_of(af), .r = r };
	struct rs_rule dec;
	char why[160] = "";
	int k = af == AF_INET ? xt_entry_decode(e, label4, &l, &dec, why, sizeof(why))
			      : xt_entry_decode6(e, label6, &l, &dec, why, sizeof(why));

	if (k < 0)
		fail_msg("%s: does not decode: %s", what, why);
	if (!owned_rule_same(&dec, r))
		fail_msg("%s: decodes to another rule", what);
}

/* Rules of text (one family's iptables-save text) against the recording. */
static size_t check_rules(int af, const char *text, size_t len, const char *hexfile)
{
	const struct xt_fam *f = fam_of(af);
	struct ruleset *rs = NULL;
	struct diag_list d;
	struct ref *refs = NULL;
	size_t n_refs, rules = 0;
	char path[512];

	diag_list_init(&d);
	if (ruleset_parse(text, len, af == AF_INET6 ? PARSE_IPV6 : 0, &rs, &d) < 0) {
		diag_list_print(&d, stderr);
		fail_msg("%s: the rules do not parse", hexfile);
	}
	snprintf(path, sizeof(path), "%s/tests/data/xt/%s", SRCDIR, hexfile);
	n_refs = refs_load(path, &refs);
	for (int t = 0; t < RS_NTABLES; t++) {
		for (size_t i = 0; i < rs->t[t].n; i++) {
			const struct rs_chain *c = rs->t[t].chains[i];

			for (size_t j = 0; j < c->n_rules; j++) {
				struct xt_entry_buf buf, want;
				const char *why = NULL;
				struct ref *ref = ref_find(refs, n_refs, rs_table_name(t), c->name, j);
				char what[128];
				size_t k;

				snprintf(what, sizeof(what), "%s %s %s rule %zu", hexfile,
					 rs_table_name(t), c->name, j + 1);
				if (!ref)
					fail_msg("%s: not recorded", what);
				if (build(af, &c->rules[j], &buf, &why) < 0)
					fail_msg("%s: not encoded: %s", what, why);
				assert_true(ref->len <= sizeof(want.b));
				memcpy(want.b, ref->b, ref->len);
				zero_offsets(f, want.b);
				if (xt_fam_next_offset(f, buf.b) != ref->len)
					fail_msg("%s: %u bytes, ip%stables wrote %zu", what,
						 xt_fam_next_offset(f, buf.b), af == AF_INET6 ? "6" : "",
						 ref->len);
				for (k = 0; k < ref->len && buf.b[k] == want.b[k]; k++)
					;
				if (k < ref->len)
					fail_msg("%s: byte %zu is %02x, ip%stables wrote %02x", what, k,
						 buf.b[k], af == AF_INET6 ? "6" : "", want.b[k]);
				decode_same(af, buf.b, &c->rules[j], what);
				decode_same(af, ref->b, &c->rules[j], what);
				rules++;
			}
		}
	}
	refs_free(refs, n_refs);
	ruleset_free(rs);
	diag_list_done(&d);
	return rules;
}

/* The golden dual-stack dry-run: the iptables text, then the ip6tables text
 * (its second "*filter"). */
static void test_dual_stack(void **state)
{
	char path[512];
	size_t len;
	_cleanup_free_ char *text = NULL;
	const char *six;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/data/golden/dual-stack.rules", SRCDIR);
	text = slurp(path, &len);
	six = strstr(strstr(text, "*filter\n") + 1, "\n*filter\n");
	assert_non_null(six);
	six++;
	assert_true(check_rules(AF_INET, text, (size_t)(six - text), "dual-stack4.hex") >= 50);
	assert_true(check_rules(AF_INET6, six, len - (size_t)(six - text), "dual-stack6.hex") >= 50);
}

static void test_extra6(void **state)
{
	char path[512];
	size_t len;
	_cleanup_free_ char *text = NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/data/xt/extra6.rules", SRCDIR);
	text = slurp(path, &len);
	assert_true(check_rules(AF_INET6, text, len, "extra6.hex") >= 20);
}

static void test_extra4(void **state)
{
	char path[512];
	size_t len;
	_cleanup_free_ char *text = NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/data/nft/extra.rules", SRCDIR);
	text = slurp(path, &len);
	assert_true(check_rules(AF_INET, text, len, "extra4.hex") >= 8);
}

/* kube-proxy's nfacct rules (tests/data/nft/nfacct.rules: the INVALID drop
 * and localhost node ports, a name of 31 bytes), with the counters made
 * first (nfacct add NAME) so that the kernel takes them.  Their blob is
 * revision 1 with the object pointer the kernel shows as 0. */
static void test_nfacct4(void **state)
{
	char path[512];
	size_t len;
	_cleanup_free_ char *text = NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/data/nft/nfacct.rules", SRCDIR);
	text = slurp(path, &len);
	assert_true(check_rules(AF_INET, text, len, "nfacct4.hex") >= 10);
}

/* An nfacct match refused or not decoded: the name's length, an empty
 * name, revision 0, which svcnat does not write. */
static void test_nfacct_limits(void **state)
{
	struct rs_rule r = { .t.kind = RS_T_ACCEPT, .n_matches = 1 };
	struct xt_entry_buf buf;
	struct xt_entry_match *m;
	const char *why = NULL;
	struct rs_rule dec;
	char err[160];

	(void)state;
	r.m[0].kind = RS_M_NFACCT;
	r.m[0].u.nfacct.name = "n234567890123456789012345678901b"; /* 32 bytes */
	assert_int_equal(xt_entry_build(&r, false, &buf, &why), -EINVAL);
	assert_non_null(strstr(why, "nfacct"));
	r.m[0].u.nfacct.name = "";
	assert_int_equal(xt_entry_build(&r, false, &buf, &why), -EINVAL);
	r.m[0].u.nfacct.name = "n23456789012345678901234567890a";
	r.m[0].invert = true;
	assert_int_equal(xt_entry_build6(&r, false, &buf, &why), -EINVAL);
	r.m[0].invert = false;
	assert_int_equal(xt_entry_build6(&r, false, &buf, &why), 0);
	assert_int_equal(xt_entry_build(&r, false, &buf, &why), 0);
	m = (struct xt_entry_match *)(buf.b + sizeof(buf.e));
	assert_string_equal(m->u.user.name, "nfacct");
	assert_int_equal(m->u.user.revision, 1);
	assert_int_equal(m->u.match_size, 72);
	assert_true(xt_entry_decode(&buf.e, label4, &(struct lctx){ .f = &xt_fam4, .r = &r }, &dec,
				    err, sizeof(err)) >= 0);
	assert_string_equal(dec.m[0].u.nfacct.name, "n23456789012345678901234567890a");
	m->u.user.revision = 0;
	assert_true(xt_entry_decode(&buf.e, label4, &(struct lctx){ .f = &xt_fam4, .r = &r }, &dec,
				    err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "revision 0"));
	m->u.user.revision = 1;
	memset(m->data, 0, 32);
	assert_true(xt_entry_decode(&buf.e, label4, &(struct lctx){ .f = &xt_fam4, .r = &r }, &dec,
				    err, sizeof(err)) < 0);
}

static void parse_one(const char *line, unsigned flags, struct ruleset **rs,
		      const struct rs_rule **ret)
{
	char text[512];
	struct diag_list d;

	diag_list_init(&d);
	snprintf(text, sizeof(text), "*nat\n:KUBE-X - [0:0]\n-A KUBE-X %s\nCOMMIT\n", line);
	assert_int_equal(ruleset_parse(text, strlen(text), flags, rs, &d), 0);
	*ret = &ruleset_find_chain(*rs, RS_NAT, "KUBE-X")->rules[0];
	diag_list_done(&d);
}

/* Each family's entries refuse what belongs to the other. */
static void test_wrong_family(void **state)
{
	static const struct {
		const char *rule;
		unsigned flags; /* how the text is parsed */
		int af;         /* the family it is encoded for */
		const char *why;
	} cases[] = {
		{ "-s 198.18.0.1/32 -j RETURN", 0, AF_INET6, "not IPv6" },
		{ "-d 2001:2::1/128 -j RETURN", PARSE_IPV6, AF_INET, "not IPv4" },
		{ "-p tcp -m tcp -j DNAT --to-destination 198.18.0.1:80", 0, AF_INET6, "non-IPv6" },
		{ "-p tcp -m tcp -j DNAT --to-destination [2001:2::1]:80", PARSE_IPV6, AF_INET,
		  "non-IPv4" },
		{ "-j REJECT", 0, AF_INET6, "ICMP" },
		{ "-j REJECT --reject-with icmp6-port-unreachable", PARSE_IPV6, AF_INET, "ICMP" },
		{ "-m recent --set --name X --mask 255.255.255.255 --rsource -j RETURN", 0,
		  AF_INET6, "mask" },
		{ "-m recent --set --name X --mask ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
		  "--rsource -j RETURN",
		  PARSE_IPV6, AF_INET, "mask" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ruleset *rs = NULL;
		const struct rs_rule *r;
		struct xt_entry_buf buf;
		const char *why = NULL;

		parse_one(cases[i].rule, cases[i].flags, &rs, &r);
		assert_int_equal(build(cases[i].af, r, &buf, &why), -EINVAL);
		if (!why || !strstr(why, cases[i].why))
			fail_msg("'%s': refused because '%s', expected '%s'", cases[i].rule,
				 why ? why : "(none)", cases[i].why);
		assert_int_equal(build(cases[i].af == AF_INET ? AF_INET6 : AF_INET, r, &buf, &why), 0);
		ruleset_free(rs);
	}
}

/* ip6t entries svcnat does not write decode as foreign, with a reason. */
static void test_foreign6(void **state)
{
	static const struct {
		const char *what;
		size_t at; /* offset in struct ip6t_entry */
		uint8_t value;
		const char *why;
	} cases[] = {
		{ "-p without IP6T_F_PROTO", offsetof(struct ip6t_entry, ipv6.flags), 0, "protocol" },
		{ "--tos", offsetof(struct ip6t_entry, ipv6.tos), 0x10, "tos" },
		{ "! -p", offsetof(struct ip6t_entry, ipv6.invflags), IP6T_INV_PROTO, "protocol" },
		{ "-o", offsetof(struct ip6t_entry, ipv6.outiface), 'e', "output interface" },
		{ "a hole in the mask", offsetof(struct ip6t_entry, ipv6.dmsk) + 3, 0x7f, "mask" },
	};
	struct ruleset *rs = NULL;
	const struct rs_rule *r;
	struct xt_entry_buf good;
	const char *why = NULL;

	(void)state;
	parse_one("-d 2001:2::/64 -p tcp -m tcp --dport 80 -j RETURN", PARSE_IPV6, &rs, &r);
	assert_int_equal(build(AF_INET6, r, &good, &why), 0);
	decode_same(AF_INET6, good.b, r, "the unchanged entry");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct xt_entry_buf e = good;
		struct lctx l = { .f = &xt_fam6, .r = r };
		struct rs_rule dec;
		char reason[160] = "";

		e.b[cases[i].at] = cases[i].value;
		assert_int_equal(xt_entry_decode6(&e.e6, label6, &l, &dec, reason, sizeof(reason)),
				 -EINVAL);
		if (!strstr(reason, cases[i].why))
			fail_msg("%s: foreign because '%s', expected '%s'", cases[i].what, reason,
				 cases[i].why);
	}
	ruleset_free(rs);
}

/* A prefix as earlier svcnat wrote it ("veth" under its own mask, no "+")
 * still reads as the same rule. */
static void test_iface_prefix_forms(void **state)
{
	struct ruleset *rs = NULL;
	const struct rs_rule *r;
	struct xt_entry_buf e;
	const char *why = NULL;

	(void)state;
	parse_one("! -i veth+ -j RETURN", PARSE_IPV6, &rs, &r);
	assert_int_equal(build(AF_INET6, r, &e, &why), 0);
	assert_memory_equal(e.e6.ipv6.iniface, "veth+", 6);
	e.e6.ipv6.iniface[4] = '\0';
	decode_same(AF_INET6, e.b, r, "veth under its own mask");
	ruleset_free(rs);
}

/* "-s NET/0" matches every address: the kernel holds it as no address, and
 * it must still read back as the planned rule (else it is rewritten at
 * every sync); "! -s NET/0" (matches nothing) keeps its inversion and must
 * not read as "any". */
static void test_zero_prefix(void **state)
{
	static const struct {
		int af;
		const char *line;
	} cases[] = {
		{ AF_INET, "-s 198.18.0.0/0 -j RETURN" },
		{ AF_INET, "-d 198.18.0.0/0 -i eth0 -j RETURN" },
		{ AF_INET, "! -s 198.18.0.0/0 -j RETURN" },
		{ AF_INET, "! -d 0.0.0.0/0 -j RETURN" },
		{ AF_INET6, "-s 2001:2:0:4000::/0 -i eth0 -j RETURN" },
		{ AF_INET6, "-d ::/0 -j RETURN" },
		{ AF_INET6, "! -s 2001:2::/0 -j RETURN" },
		{ AF_INET6, "! -d ::/0 -j RETURN" },
	};
	struct ruleset *rs = NULL, *plain = NULL;
	const struct rs_rule *r, *any;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		unsigned flags = cases[i].af == AF_INET6 ? PARSE_IPV6 : 0;
		bool inv = cases[i].line[0] == '!';
		struct xt_entry_buf e;
		const char *why = NULL;

		parse_one(cases[i].line, flags, &rs, &r);
		assert_int_equal(build(cases[i].af, r, &e, &why), 0);
		decode_same(cases[i].af, e.b, r, cases[i].line);
		parse_one(strstr(cases[i].line, "-i eth0") ? "-i eth0 -j RETURN" : "-j RETURN", flags,
			  &plain, &any);
		if (owned_rule_same(r, any) == inv)
			fail_msg("%s: %s the rule without an address", cases[i].line,
				 inv ? "reads as" : "differs from");
		ruleset_free(plain);
		ruleset_free(rs);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dual_stack),
		cmocka_unit_test(test_extra6),
		cmocka_unit_test(test_extra4),
		cmocka_unit_test(test_nfacct4),
		cmocka_unit_test(test_nfacct_limits),
		cmocka_unit_test(test_iface_prefix_forms),
		cmocka_unit_test(test_wrong_family),
		cmocka_unit_test(test_foreign6),
		cmocka_unit_test(test_zero_prefix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
