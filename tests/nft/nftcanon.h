/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A canonical text of an nf_tables rule, for comparing svcnat's encoding
 * with iptables-nft's: the chain, then one line per expression as
 * libnftnl prints it, with the xt blob of a match or target in hex.  The
 * handle, position and counter values are left out (they differ between
 * two writes of the same rule).
 */
#ifndef SVCNAT_TESTS_NFTCANON_H
#define SVCNAT_TESTS_NFTCANON_H

#include <stdio.h>

#include <libnftnl/rule.h>

/* Print rule r's canonical text to f. */
void nftcanon_rule(FILE *f, const struct nftnl_rule *r);

#endif
