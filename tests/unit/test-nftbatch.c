/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nftdiff.c's encoding in parts and nftbatch.c's joining of them, without
 * a kernel: the same plan into the same state gives the same batch, byte
 * for byte (sequence numbers included), the same message contexts (what
 * a refusal is reported as), the same list of written chains and the same
 * counts, whether one part encodes it or up to NFTDIFF_MAX_PARTS do, on
 * threads of their own:
 *   - the shipped examples' golden dry-runs (ip and ip6 tables) and a
 *     larger generated nat table, into empty tables;
 *   - the same with chains the kernel holds already (the state after a
 *     commit), new chains among them and after them: only the chains
 *     after the last one held are split off;
 *   - a batch part joined to a batch: renumbered, and the pages taken.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include "backend/nft/nftbatch.h"
#include "backend/nft/nftdiff.h"
#include "backend/nft/nftread.h"
#include "core/parse.h"
#include "util.h"
#include "slurp.h"

/* A runner with a thread per part beside the first, as sys/par.c's. */
struct th {
	par_part_fn fn;
	void *arg;
	unsigned i;
};

static void *th_main(void *p)
{
	struct th *t = p;

	t->fn(t->arg, t->i);
	return NULL;
}

static unsigned runs; /* splits the runner was asked for */

static void run_threads(unsigned n, par_part_fn fn, void *arg)
{
	pthread_t th[NFTDIFF_MAX_PARTS];
	struct th t[NFTDIFF_MAX_PARTS];

	assert_true(n >= 2 && n <= NFTDIFF_MAX_PARTS);
	runs++;
	for (unsigned i = 1; i < n; i++) {
		t[i] = (struct th){ fn, arg, i };
		assert_int_equal(pthread_create(&th[i], NULL, th_main, &t[i]), 0);
	}
	fn(arg, 0);
	for (unsigned i = 1; i < n; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
}

/* What one encoding made: the batch's bytes and contexts, the chains
 * noted as written per table, the counts. */
struct made {
	char *bytes;
	size_t len, room, n;
	struct nftmsg_ctx *ctx;
	const char **touched[RS_NTABLES];
	size_t n_touched[RS_NTABLES];
	struct apply_result res;
};

static void made_done(struct made *m)
{
	free(m->bytes);
	free(m->ctx);
	for (int t = 0; t < RS_NTABLES; t++)
		free(m->touched[t]);
	memset(m, 0, sizeof(*m));
}

/* The batch's pages one after the other, as sendmsg() joins them. */
static char *stream(const struct nftbatch *b, size_t *ret_len, size_t *ret_room)
{
	char *bytes = NULL;
	FILE *out = open_memstream(&bytes, ret_len);
	const void *pg;
	size_t plen;

	assert_non_null(out);
	for (size_t i = 0; (pg = nftbatch_page(b, i, &plen)); i++)
		assert_int_equal(fwrite(pg, 1, plen, out), plen);
	fclose(out);
	/* BEGIN's room (written at commit) comes first. */
	*ret_room = *ret_len - nftbatch_bytes(b);
	assert_true(*ret_room > 0 && *ret_room < 64);
	return bytes;
}

/* The message headers, walked: sequence numbers 1.. in order. */
static void check_seqs(const char *bytes, size_t len, size_t room, size_t n)
{
	size_t off = room, k = 0;

	while (off < len) {
		const struct nlmsghdr *h = (const void *)(bytes + off);

		assert_int_equal(h->nlmsg_seq, ++k);
		off += NLMSG_ALIGN(h->nlmsg_len);
	}
	assert_int_equal(k, n);
}

/* Both tables of plan (family f) into st, in `parts` parts at most. */
static void encode(struct nftread_state *st, const struct ruleset *plan, enum writer_family f,
		   unsigned parts, struct made *m)
{
	struct nftdiff_par par = { .run = run_threads, .parts = parts, .min_rules = 1 };
	struct nftbatch *b = nftbatch_new();
	struct diag_list d;

	assert_non_null(b);
	diag_list_init(&d);
	memset(m, 0, sizeof(*m));
	for (int t = 0; t < RS_NTABLES; t++) {
		struct nftread_table *tb = &st->f[f].t[t];

		assert_int_equal(nftdiff_build(NULL, st, plan, f, (enum rs_table)t, b,
					       parts > 1 ? &par : NULL, &m->res, &d),
				 0);
		m->n_touched[t] = tb->n_touched;
		m->touched[t] = calloc(tb->n_touched + 1, sizeof(char *));
		assert_non_null(m->touched[t]);
		if (tb->n_touched)
			memcpy(m->touched[t], tb->touched, tb->n_touched * sizeof(char *));
	}
	assert_int_equal(d.n, 0);
	m->bytes = stream(b, &m->len, &m->room);
	m->n = nftbatch_count(b);
	m->ctx = calloc(m->n + 1, sizeof(*m->ctx));
	assert_non_null(m->ctx);
	for (size_t i = 0; i < m->n; i++)
		m->ctx[i] = *nftbatch_ctx(b, (uint32_t)i + 1);
	nftbatch_free(b);
	diag_list_done(&d);
}

static void same(const struct made *a, const struct made *b, const char *what, unsigned parts)
{
	if (a->len != b->len || memcmp(a->bytes, b->bytes, a->len) != 0)
		fail_msg("%s: the batch of %u parts differs from one part's", what, parts);
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		assert_int_equal(a->ctx[i].op, b->ctx[i].op);
		assert_int_equal(a->ctx[i].family, b->ctx[i].family);
		assert_int_equal(a->ctx[i].table, b->ctx[i].table);
		assert_ptr_equal(a->ctx[i].chain, b->ctx[i].chain);
		assert_int_equal(a->ctx[i].rule, b->ctx[i].rule);
	}
	for (int t = 0; t < RS_NTABLES; t++) {
		assert_int_equal(a->n_touched[t], b->n_touched[t]);
		for (size_t i = 0; i < a->n_touched[t]; i++)
			assert_ptr_equal(a->touched[t][i], b->touched[t][i]);
	}
	assert_int_equal(a->res.rules_written, b->res.rules_written);
	assert_int_equal(a->res.jumps_added, b->res.jumps_added);
	assert_int_equal(a->res.chains_created, b->res.chains_created);
	assert_memory_equal(a->res.committed, b->res.committed, sizeof(a->res.committed));
	assert_memory_equal(a->res.committed6, b->res.committed6, sizeof(a->res.committed6));
}

/*
 * plan (family f) into st (copied afresh for each encoding by `fresh`),
 * with 1 part and with 2 to NFTDIFF_MAX_PARTS: the same each time.
 * Returns the splits made.
 */
static unsigned check_plan(struct nftread_state *(*fresh)(void *), void *ctx,
			   const struct ruleset *plan, enum writer_family f, const char *what)
{
	struct made one, many;
	unsigned before = runs;
	struct nftread_state *st = fresh(ctx);

	encode(st, plan, f, 1, &one);
	nftread_state_free(st);
	assert_true(one.n > 0);
	check_seqs(one.bytes, one.len, one.room, one.n);
	for (unsigned parts = 2; parts <= NFTDIFF_MAX_PARTS; parts++) {
		st = fresh(ctx);
		encode(st, plan, f, parts, &many);
		nftread_state_free(st);
		same(&one, &many, what, parts);
		made_done(&many);
	}
	made_done(&one);
	return runs - before;
}

static struct nftread_state *empty_state(void *ctx)
{
	struct nftread_state *st = nftread_state_new();

	(void)ctx;
	assert_non_null(st);
	return st;
}

static void check_file(const char *name)
{
	char path[512];
	_cleanup_free_ char *text = NULL;
	struct ruleset *rs = NULL, *rs6 = NULL;
	struct diag_list d;
	char *v6;
	size_t len;

	diag_list_init(&d);
	snprintf(path, sizeof(path), "%s/tests/data/golden/%s.rules", SRCDIR, name);
	text = slurp(path, &len);
	v6 = strstr(text + 1, "\n*filter\n");
	if (v6)
		v6++;
	assert_int_equal(ruleset_parse(text, v6 ? (size_t)(v6 - text) : len, 0, &rs, &d), 0);
	assert_true(check_plan(empty_state, NULL, rs, WRITER_IPV4, name) > 0);
	if (v6) {
		assert_int_equal(ruleset_parse(v6, len - (size_t)(v6 - text), PARSE_IPV6, &rs6, &d),
				 0);
		assert_true(check_plan(empty_state, NULL, rs6, WRITER_IPV6, name) > 0);
	}
	ruleset_free(rs);
	ruleset_free(rs6);
	diag_list_done(&d);
}

static void test_golden(void **state)
{
	(void)state;
	check_file("cluster");
	check_file("dual-stack");
}

/* A nat table of n services of three endpoints, chains named with
 * `prefix` (sorted among each other by their number). */
static char *gen_nat(const char *prefix, unsigned n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	fputs("*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n"
	      ":KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n",
	      f);
	for (unsigned i = 0; i < n; i++) {
		fprintf(f, ":KUBE-SVC-%s%05u - [0:0]\n", prefix, i);
		for (unsigned e = 0; e < 3; e++)
			fprintf(f, ":KUBE-SEP-%s%05u%u - [0:0]\n", prefix, i, e);
	}
	fputs("-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
	      "-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
	      "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n",
	      f);
	for (unsigned i = 0; i < n; i++) {
		fprintf(f, "-A KUBE-SERVICES -d 198.19.%u.%u/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-%s%05u\n",
			i / 250, i % 250 + 1, prefix, i);
		for (unsigned e = 0; e < 3; e++) {
			if (e < 2)
				fprintf(f, "-A KUBE-SVC-%s%05u -m statistic --mode random --probability "
					   "%s -j KUBE-SEP-%s%05u%u\n",
					prefix, i, e ? "0.50000000000" : "0.33333333349", prefix, i, e);
			else
				fprintf(f, "-A KUBE-SVC-%s%05u -j KUBE-SEP-%s%05u%u\n", prefix, i,
					prefix, i, e);
			fprintf(f, "-A KUBE-SEP-%s%05u%u -s 198.18.%u.%u/32 -j KUBE-MARK-MASQ\n", prefix,
				i, e, 64 + i / 80, (i % 80) * 3 + e + 1);
			fprintf(f, "-A KUBE-SEP-%s%05u%u -p tcp -m tcp -j DNAT --to-destination "
				   "198.18.%u.%u:8080\n",
				prefix, i, e, 64 + i / 80, (i % 80) * 3 + e + 1);
		}
	}
	fputs("COMMIT\n", f);
	fclose(f);
	return text;
}

static struct ruleset *parse_text(const char *text)
{
	struct ruleset *rs = NULL;
	struct diag_list d;

	diag_list_init(&d);
	assert_int_equal(ruleset_parse(text, strlen(text), 0, &rs, &d), 0);
	diag_list_done(&d);
	return rs;
}

static void test_generated(void **state)
{
	_cleanup_free_ char *text = gen_nat("G", 400);
	struct ruleset *rs = parse_text(text);

	(void)state;
	assert_true(check_plan(empty_state, NULL, rs, WRITER_IPV4, "generated") > 0);
	ruleset_free(rs);
}

/* The state after committing plan `held` into empty tables. */
static struct nftread_state *held_state(void *ctx)
{
	const struct ruleset *held = ctx;
	const struct ruleset *plans[2] = { held, NULL };
	struct nftread_state *st = nftread_state_new();
	struct made m;

	assert_non_null(st);
	/* Read, as empty tables (what nftread_family() makes of them). */
	st->f[WRITER_IPV4].rs = ruleset_new();
	assert_non_null(st->f[WRITER_IPV4].rs);
	st->f[WRITER_IPV4].read = true;
	encode(st, held, WRITER_IPV4, 1, &m);
	made_done(&m);
	assert_int_equal(nftdiff_committed(st, plans, 2), 0);
	return st;
}

/*
 * Chains KUBE-SVC-M* and KUBE-SEP-M* held; the plan adds chains before
 * them (B), among them (N) and after them (Z): held chains (equal, so no
 * handles are needed) keep the split to the chains after the last held
 * one, and the batch is still one part's.
 */
static void test_held(void **state)
{
	_cleanup_free_ char *held_text = gen_nat("M", 150);
	_cleanup_free_ char *b = gen_nat("B", 60), *n = gen_nat("N", 60), *z = gen_nat("Z", 200);
	struct ruleset *held = parse_text(held_text);
	struct ruleset *plan = ruleset_new();
	struct ruleset *parts[] = { parse_text(held_text), parse_text(b), parse_text(n),
				    parse_text(z) };

	(void)state;
	assert_non_null(plan);
	/* The plan: every part's chains, the built-in ones' jumps once. */
	for (size_t k = 0; k < ARRAY_SIZE(parts); k++) {
		const struct rs_chains *cs = &parts[k]->t[RS_NAT];

		for (size_t i = 0; i < cs->n; i++)
			if (!ruleset_find_chain(plan, RS_NAT, cs->chains[i]->name) &&
			    !ruleset_copy_chain(plan, cs->chains[i]))
				fail();
	}
	ruleset_sort(plan);
	assert_true(check_plan(held_state, held, plan, WRITER_IPV4, "held") > 0);
	for (size_t k = 0; k < ARRAY_SIZE(parts); k++)
		ruleset_free(parts[k]);
	ruleset_free(plan);
	ruleset_free(held);
}

/* A part's messages renumbered after the batch's, its pages taken. */
static void test_join(void **state)
{
	struct nftbatch *b = nftbatch_new(), *p = nftbatch_new_part();
	struct nftmsg_ctx c = { .op = NFTMSG_CHAIN_ADD, .rule = -1 };
	_cleanup_free_ char *bytes = NULL;
	struct nlmsghdr *h;
	size_t len, room, pages = 0;

	(void)state;
	assert_non_null(b);
	assert_non_null(p);
	for (int i = 0; i < 3; i++) {
		assert_non_null(nftbatch_msg(b, NFPROTO_IPV4, NFT_MSG_NEWCHAIN, 0));
		assert_int_equal(nftbatch_push(b, &c), 0);
	}
	c.op = NFTMSG_RULE_ADD;
	for (int i = 0; i < 2; i++) {
		c.rule = i;
		h = nftbatch_msg(p, NFPROTO_IPV4, NFT_MSG_NEWRULE, 0);
		assert_non_null(h);
		assert_int_equal(h->nlmsg_seq, i + 1);
		assert_int_equal(nftbatch_push(p, &c), 0);
	}
	/* Not while a message is built and not pushed. */
	assert_non_null(nftbatch_msg(p, NFPROTO_IPV4, NFT_MSG_NEWRULE, 0));
	assert_int_equal(nftbatch_join(b, p), -EINVAL);
	nftbatch_free(p);
	p = nftbatch_new_part();
	assert_non_null(p);
	for (int i = 0; i < 2; i++) {
		c.rule = i;
		assert_non_null(nftbatch_msg(p, NFPROTO_IPV4, NFT_MSG_NEWRULE, 0));
		assert_int_equal(nftbatch_push(p, &c), 0);
	}
	len = nftbatch_bytes(b) + nftbatch_bytes(p);
	assert_int_equal(nftbatch_join(b, p), 0);
	assert_int_equal(nftbatch_count(p), 0);
	assert_int_equal(nftbatch_bytes(p), 0);
	assert_null(nftbatch_page(p, 0, NULL));
	nftbatch_free(p);
	assert_int_equal(nftbatch_count(b), 5);
	assert_int_equal(nftbatch_bytes(b), len);
	assert_int_equal(nftbatch_ctx(b, 4)->op, NFTMSG_RULE_ADD);
	assert_int_equal(nftbatch_ctx(b, 5)->rule, 1);
	assert_int_equal(nftbatch_ctx(b, 3)->op, NFTMSG_CHAIN_ADD);
	assert_null(nftbatch_ctx(b, 6));
	assert_null(nftbatch_ctx(b, 0));
	while (nftbatch_page(b, pages, NULL))
		pages++;
	assert_int_equal(pages, 2);
	bytes = stream(b, &len, &room);
	check_seqs(bytes, len, room, 5);
	/* The next message is numbered on. */
	h = nftbatch_msg(b, NFPROTO_IPV4, NFT_MSG_DELCHAIN, 0);
	assert_non_null(h);
	assert_int_equal(h->nlmsg_seq, 6);
	assert_int_equal(nftbatch_push(b, &c), 0);
	nftbatch_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_generated),
		cmocka_unit_test(test_held),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
