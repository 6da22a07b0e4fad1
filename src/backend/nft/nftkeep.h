/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The nf_tables writer's kept state (nftread.h) as bytes, for the file a
 * restarted svcnat trusts while the ruleset generation is the one it was
 * kept at (keepfile.h).  Everything a state holds but the plan stores'
 * content stamps (another process's stamps mean nothing) and what only a
 * transaction in progress holds (touched chains); chains svcnat deleted
 * are left out, rule handles kept where known.
 */
#ifndef SVCNAT_BACKEND_NFTKEEP_H
#define SVCNAT_BACKEND_NFTKEEP_H

#include <stddef.h>

#include "backend/keepfile.h"
#include "backend/nft/nftread.h"

/*
 * Append st to b.  0, or -ENOTSUP when a rule holds a match or target
 * this format does not know (nothing is kept then), -ENOMEM.
 */
int nftkeep_encode(const struct nftread_state *st, struct keepbuf *b);

/*
 * A state from the len bytes at buf + off (as nftkeep_encode() wrote them), its
 * genid 0 (the caller sets it).  Takes buf over (malloc'ed; freed also on
 * failure): the rules of svcnat's own chains stay undecoded in it
 * (nftread_chain.lazy) until nftkeep_chain_rules(), so that a restart
 * whose plan equals them never builds them (nftkeep_chain_same()).  0,
 * -EINVAL when the bytes are not such a state (anything out of range,
 * unsorted, truncated or left over; a lazy chain's rules are checked when
 * decoded), or -ENOMEM.  *ret is set only on success.
 */
int nftkeep_decode(void *buf, size_t off, size_t len, struct nftread_state **ret);

/*
 * Whether lazy chain ch holds exactly pc's rules (as bytes: equal bytes
 * are equal rules; unequal ones may still be owned_rule_same(), which the
 * caller then decides on the decoded rules).  scratch: a buffer reused
 * between calls.  1, 0, or -ENOMEM.
 */
int nftkeep_chain_same(const struct nftread_chain *ch, const struct rs_chain *pc,
		       struct keepbuf *scratch);

/*
 * Decode lazy chain ch of family f into ch->c (a no-op when it is not
 * lazy).  0, -EINVAL (damaged: the state must be dropped) or -ENOMEM.
 */
int nftkeep_chain_rules(struct nftread_state *st, enum writer_family f, struct nftread_chain *ch);

/* Every lazy chain of st decoded.  0 or as nftkeep_chain_rules(). */
int nftkeep_materialize(struct nftread_state *st);

/*
 * Between syncs a user chain needs its rules only to be compared with a
 * plan (nftkeep_chain_same()) or, when it differs, diffed (decoded
 * then): they wait as these bytes, a fraction of the decoded rules.
 * scratch: a buffer reused between calls.
 *
 * nftkeep_chain_pack(): decoded user chain ch's rules become bytes of its
 * own (ch lazy, ch->c holds none).  0, also when there is nothing to
 * pack (a built-in, lazy or empty chain); -ENOTSUP (a rule this format
 * does not keep) or -ENOMEM: ch is left as it was.
 *
 * nftkeep_chain_take(): user chain ch holds pc's rules from now on, as
 * bytes, none decoded (handles and flags untouched).  0; -ENOTSUP (a
 * built-in chain, no rules, or a rule this format does not keep) or
 * -ENOMEM: ch is left as it was.
 *
 * nftkeep_pack(): every decoded user chain of st packed; one that cannot
 * be stays decoded.
 */
int nftkeep_chain_pack(struct nftread_chain *ch, struct keepbuf *scratch);
int nftkeep_chain_take(struct nftread_chain *ch, const struct rs_chain *pc, struct keepbuf *scratch);
void nftkeep_pack(struct nftread_state *st);

#endif
