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
 * A state from the len bytes at p (as nftkeep_encode() wrote them), its
 * genid 0 (the caller sets it).  0, -EINVAL when the bytes are not such a
 * state (anything out of range, unsorted, truncated or left over), or
 * -ENOMEM.  *ret is set only on success.
 */
int nftkeep_decode(const void *p, size_t len, struct nftread_state **ret);

#endif
