/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness for the xt entry codec (src/backend/xtentry.h: the
 * kernel's ipt_entry layout, written by the direct and libiptc backends).
 *
 *  - The input as a raw entry (within the kernel's own bounds: target
 *    offset and next offset inside the entry) is decoded: it may be refused,
 *    never misread.
 *  - The input as iptables-save text (core/parse.c) gives rules; every rule
 *    that encodes must decode again to the same rule (owned_rule_same(),
 *    the writers' test), and re-encoding that gives the same bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* glibc's <netinet/in.h> (via the core headers) before the kernel's. */
#include "core/owned.h"
#include "core/parse.h"
#include "core/render.h"
#include "backend/xtentry.h"

/* Standard targets as the kernel holds them; a verdict of 0 is the jump
 * offset the writer fills in, resolved here to the rule's own target. */
static const char *label(const struct ipt_entry *e, void *ctx)
{
	const struct rs_rule *orig = ctx;
	const struct xt_standard_target *st = (const void *)((const char *)e + e->target_offset);

	if (st->target.u.target_size < XT_ALIGN(sizeof(*st)))
		return NULL;
	if (st->verdict < 0)
		return xt_verdict_name(st->verdict);
	if (st->verdict > 0)
		return "KUBE-SOME-CHAIN";
	if (!orig)
		return "";
	return orig->t.kind == RS_T_JUMP || orig->t.kind == RS_T_GOTO ? orig->t.u.chain : "";
}

static void raw_entry(const uint8_t *data, size_t size)
{
	static struct xt_entry_buf buf;
	struct rs_rule r;
	char why[128];

	if (size < sizeof(struct ipt_entry) || size > sizeof(buf))
		return;
	memset(&buf, 0, sizeof(buf));
	memcpy(buf.b, data, size);
	if (buf.e.target_offset < sizeof(buf.e) || buf.e.target_offset > buf.e.next_offset ||
	    buf.e.next_offset > size)
		return;
	(void)xt_entry_decode(&buf.e, label, NULL, &r, why, sizeof(why));
}

static void rule_round_trip(const struct rs_chain *c, const struct rs_rule *r)
{
	static struct xt_entry_buf b1, b2, bl;
	const char *why = NULL;
	char t1[4096], t2[4096], w[128];
	struct rs_rule dec;

	memset(&b1, 0, sizeof(b1));
	if (xt_entry_build(r, false, &b1, &why) < 0)
		return;
	memset(&bl, 0, sizeof(bl));
	if (xt_entry_build(r, true, &bl, &why) < 0)
		fprintf(stderr, "%s: encodes for the kernel, not for libiptc: %s\n", c->name, why),
			abort();
	if (xt_entry_decode(&b1.e, label, (void *)r, &dec, w, sizeof(w)) < 0) {
		render_rule(r, t1, sizeof(t1));
		fprintf(stderr, "-A %s %s\nencodes but does not decode: %s\n", c->name, t1, w);
		abort();
	}
	/* The writers compare what they read back with what they planned so:
	 * a rule that does not read back as itself would be rewritten at every
	 * sync. */
	render_rule(r, t1, sizeof(t1));
	render_rule(&dec, t2, sizeof(t2));
	if (!owned_rule_same(r, &dec)) {
		fprintf(stderr, "-A %s %s\ndecodes as\n-A %s %s\n", c->name, t1, c->name, t2);
		abort();
	}
	memset(&b2, 0, sizeof(b2));
	if (xt_entry_build(&dec, false, &b2, &why) < 0 || b1.e.next_offset != b2.e.next_offset ||
	    memcmp(b1.b, b2.b, b1.e.next_offset) != 0) {
		fprintf(stderr, "-A %s %s: re-encoding differs\n", c->name, t1);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ruleset *rs = NULL;
	struct diag_list d;
	size_t t, i, j;

	raw_entry(data, size);
	diag_list_init(&d);
	if (ruleset_parse((const char *)data, size, 0, &rs, &d) == 0) {
		for (t = 0; t < RS_NTABLES; t++)
			for (i = 0; i < rs->t[t].n; i++)
				for (j = 0; j < rs->t[t].chains[i]->n_rules; j++)
					rule_round_trip(rs->t[t].chains[i],
							&rs->t[t].chains[i]->rules[j]);
		ruleset_free(rs);
	}
	diag_list_done(&d);
	return 0;
}
