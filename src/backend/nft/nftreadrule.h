/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One nf_tables rule back into the rule model: nf_tables rule -> struct
 * rs_rule, the inverse of nftenc.c.  Strict: only the encoding iptables-nft
 * and ip6tables-nft 1.8.9 write decodes (their expressions, and the xt
 * match and target blobs they carry); anything else is a foreign rule.
 * Pure: no socket, no table state (nftread.h reads whole tables with it).
 */
#ifndef SVCNAT_BACKEND_NFTREADRULE_H
#define SVCNAT_BACKEND_NFTREADRULE_H

#include <libnftnl/rule.h>

#include "backend/writer.h"
#include "core/ruleset.h"

/*
 * Decode nf_tables rule nr of family f into *out, copying its strings into
 * rs's arena.
 * Returns 0, 1 when the rule is not one svcnat writes (*out is then a
 * foreign rule: t.kind OWNED_T_FOREIGN, its reason in m[0].u.comment),
 * or -ENOMEM.  *ret_jump (may be NULL) is the chain the rule jumps or goes
 * to, decodable or not (in rs's arena), or NULL.
 */
int nftread_rule(const struct nftnl_rule *nr, enum writer_family f, struct ruleset *rs,
		 struct rs_rule *out, const char **ret_jump);

#endif
