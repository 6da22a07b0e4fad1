/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness for the xt entry codec (src/backend/xt/xtentry.h: the
 * kernel's ipt_entry and ip6t_entry layouts, written by the direct and
 * libiptc backends).
 *
 *  - The input as a raw entry of each family (within the kernel's own
 *    bounds: target offset and next offset inside the entry) is decoded: it
 *    may be refused, never misread.
 *  - The input as iptables-save text and as ip6tables-save text
 *    (core/parse.c) gives rules; every rule that encodes for its family
 *    must decode again to the same rule (owned_rule_same(), the writers'
 *    test), and re-encoding that gives the same bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* glibc's <netinet/in.h> (via the core headers) before the kernel's. */
#include "core/owned.h"
#include "core/parse.h"
#include "core/render.h"
#include "backend/xt/xtentry.h"

/* Standard targets as the kernel holds them; a verdict of 0 is the jump
 * offset the writer fills in, resolved here to the rule's own target. */
static const char *label_at(const struct xt_standard_target *st, const struct rs_rule *orig)
{
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

static const char *label(const struct ipt_entry *e, void *ctx)
{
	return label_at((const void *)((const char *)e + e->target_offset), ctx);
}

static const char *label6(const struct ip6t_entry *e, void *ctx)
{
	return label_at((const void *)((const char *)e + e->target_offset), ctx);
}

static int build(int af, const struct rs_rule *r, bool labels, struct xt_entry_buf *buf,
		 const char **why)
{
	return af == AF_INET6 ? xt_entry_build6(r, labels, buf, why)
			      : xt_entry_build(r, labels, buf, why);
}

static int decode(int af, const struct xt_entry_buf *buf, const struct rs_rule *orig,
		  struct rs_rule *r, char *why, size_t whylen)
{
	return af == AF_INET6 ? xt_entry_decode6(&buf->e6, label6, (void *)orig, r, why, whylen)
			      : xt_entry_decode(&buf->e, label, (void *)orig, r, why, whylen);
}

static void raw_entry(const struct xt_fam *f, const uint8_t *data, size_t size)
{
	static struct xt_entry_buf buf;
	struct rs_rule r;
	char why[128];

	if (size < f->size || size > sizeof(buf))
		return;
	memset(&buf, 0, sizeof(buf));
	memcpy(buf.b, data, size);
	if (xt_fam_target_offset(f, buf.b) < f->size ||
	    xt_fam_target_offset(f, buf.b) > xt_fam_next_offset(f, buf.b) ||
	    xt_fam_next_offset(f, buf.b) > size)
		return;
	(void)decode(f->af, &buf, NULL, &r, why, sizeof(why));
}

static void rule_round_trip(const struct xt_fam *f, const struct rs_chain *c,
			    const struct rs_rule *r)
{
	static struct xt_entry_buf b1, b2, bl;
	const char *why = NULL;
	char t1[4096], t2[4096], w[128];
	struct rs_rule dec;

	memset(&b1, 0, sizeof(b1));
	if (build(f->af, r, false, &b1, &why) < 0)
		return;
	memset(&bl, 0, sizeof(bl));
	if (build(f->af, r, true, &bl, &why) < 0)
		fprintf(stderr, "%s: encodes for the kernel, not for libiptc: %s\n", c->name, why),
			abort();
	if (decode(f->af, &b1, r, &dec, w, sizeof(w)) < 0) {
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
	if (build(f->af, &dec, false, &b2, &why) < 0 ||
	    xt_fam_next_offset(f, b1.b) != xt_fam_next_offset(f, b2.b) ||
	    memcmp(b1.b, b2.b, xt_fam_next_offset(f, b1.b)) != 0) {
		fprintf(stderr, "-A %s %s: re-encoding differs\n", c->name, t1);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct xt_fam *const fams[] = { &xt_fam4, &xt_fam6 };

	for (size_t k = 0; k < 2; k++) {
		const struct xt_fam *f = fams[k];
		struct ruleset *rs = NULL;
		struct diag_list d;
		size_t t, i, j;

		raw_entry(f, data, size);
		diag_list_init(&d);
		if (ruleset_parse((const char *)data, size, f->af == AF_INET6 ? PARSE_IPV6 : 0, &rs,
				  &d) == 0) {
			for (t = 0; t < RS_NTABLES; t++)
				for (i = 0; i < rs->t[t].n; i++)
					for (j = 0; j < rs->t[t].chains[i]->n_rules; j++)
						rule_round_trip(f, rs->t[t].chains[i],
								&rs->t[t].chains[i]->rules[j]);
			ruleset_free(rs);
		}
		diag_list_done(&d);
	}
	return 0;
}
