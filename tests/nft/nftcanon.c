/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <linux/netfilter.h>

#include <libnftnl/expr.h>

#include "nft/nftcanon.h"

static void hex(FILE *f, const void *p, uint32_t len)
{
	const uint8_t *b = p;

	for (uint32_t i = 0; i < len; i++)
		fprintf(f, "%02x", b[i]);
}

void nftcanon_rule(FILE *f, const struct nftnl_rule *r)
{
	struct nftnl_expr_iter *it = nftnl_expr_iter_create(r);
	struct nftnl_expr *e;
	char buf[4096];

	/* The ip family's tables bare, as the IPv4 references were recorded. */
	fprintf(f, "%s%s %s\n",
		nftnl_rule_is_set(r, NFTNL_RULE_FAMILY) && nftnl_rule_get_u32(r, NFTNL_RULE_FAMILY) == NFPROTO_IPV6
			? "ip6 "
			: "",
		nftnl_rule_get_str(r, NFTNL_RULE_TABLE), nftnl_rule_get_str(r, NFTNL_RULE_CHAIN));
	while (it && (e = nftnl_expr_iter_next(it))) {
		const char *name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);
		uint32_t len = 0;
		const void *info = NULL;

		if (strcmp(name, "counter") == 0) {
			fprintf(f, "  counter\n");
			continue;
		}
		nftnl_expr_snprintf(buf, sizeof(buf), e, NFTNL_OUTPUT_DEFAULT, 0);
		fprintf(f, "  %s %s", name, buf);
		if (strcmp(name, "match") == 0)
			info = nftnl_expr_get_data(e, NFTNL_EXPR_MT_INFO, &len);
		else if (strcmp(name, "target") == 0)
			info = nftnl_expr_get_data(e, NFTNL_EXPR_TG_INFO, &len);
		if (info) {
			fprintf(f, " info ");
			hex(f, info, len);
		}
		fputc('\n', f);
	}
	if (it)
		nftnl_expr_iter_destroy(it);
}
