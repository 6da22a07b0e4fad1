/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Encoding planned rules as kernel entries (IPv4 ipt_entry, IPv6
 * ip6t_entry) and decoding kernel entries back into rules, and what the
 * kernel's errors mean.  Shared by the libiptc writer (iptc.c), the direct
 * writer (direct.c) and the nf_tables writer (nftenc.c, nftreadrule.c: its
 * compat expressions carry the same match and target blobs); neither
 * libiptc nor a socket is needed here.
 */
#ifndef SVCNAT_BACKEND_XTENTRY_H
#define SVCNAT_BACKEND_XTENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>

#include "core/ruleset.h"

/* Big enough for an entry with RS_MAX_MATCHES of the largest match. */
#define XT_ENTRY_MAX 2048

struct xt_entry_buf {
	union {
		struct ipt_entry e;
		struct ip6t_entry e6;
		unsigned char b[XT_ENTRY_MAX];
	};
} __attribute__((aligned(8)));

/*
 * An entry's layout per family, for code that walks tables of either.
 * After the address part (struct ipt_ip, struct ip6t_ip6) both entries
 * carry the same fields at other offsets; the matches start at size.  The
 * socket options share their values and structures (ipt_getinfo,
 * ipt_get_entries, ipt_replace, xt_counters_info) between the families;
 * only the level differs.
 */
struct xt_fam {
	int af;               /* AF_INET, AF_INET6 */
	int level;            /* SOL_IP, SOL_IPV6 */
	uint16_t size;        /* sizeof(struct ipt_entry), sizeof(struct ip6t_entry) */
	uint16_t target_at;   /* offsetof(..., target_offset) */
	uint16_t next_at;     /* offsetof(..., next_offset) */
	uint16_t counters_at; /* offsetof(..., counters) */
	const char *tool;     /* "iptables", "ip6tables": for messages */
	const char *so;       /* "IPT", "IP6T": the socket options' prefix, for messages */
};

extern const struct xt_fam xt_fam4, xt_fam6;

static inline uint16_t xt_fam_target_offset(const struct xt_fam *f, const void *e)
{
	uint16_t v;

	memcpy(&v, (const unsigned char *)e + f->target_at, sizeof(v));
	return v;
}

static inline uint16_t xt_fam_next_offset(const struct xt_fam *f, const void *e)
{
	uint16_t v;

	memcpy(&v, (const unsigned char *)e + f->next_at, sizeof(v));
	return v;
}

static inline void xt_fam_set_offsets(const struct xt_fam *f, void *e, uint16_t target,
				      uint16_t next)
{
	memcpy((unsigned char *)e + f->target_at, &target, sizeof(target));
	memcpy((unsigned char *)e + f->next_at, &next, sizeof(next));
}

static inline const struct xt_counters *xt_fam_counters(const struct xt_fam *f, const void *e)
{
	return (const struct xt_counters *)((const unsigned char *)e + f->counters_at);
}

/*
 * Build the kernel entry of rule r into buf.  With labels, a jump or verdict
 * is a standard target named after its chain or verdict ("ACCEPT", ...), as
 * libiptc takes it.  Without, it is the kernel's standard target: ACCEPT,
 * DROP and RETURN carry their verdict, and a jump, goto or no-target rule
 * carries 0 for the caller to replace with the offset it resolves to.
 * Returns 0, or -EINVAL with a static reason in *ret_why.
 */
int xt_entry_build(const struct rs_rule *r, bool labels, struct xt_entry_buf *buf,
		   const char **ret_why);

/*
 * The same as an IPv6 entry (buf->e6): IPv6 addresses, IP6T_F_PROTO with
 * -p as ip6tables sets it, IP6T_F_GOTO, and ip6tables' blobs where they
 * differ (REJECT with icmp6-port-unreachable, DNAT to an IPv6 address,
 * MASQUERADE as nf_nat_range, recent's all-ones IPv6 mask).
 */
int xt_entry_build6(const struct rs_rule *r, bool labels, struct xt_entry_buf *buf, const char **ret_why);

/*
 * What a standard target of entry e means, as libiptc's iptc_get_target
 * says it: "ACCEPT", "DROP", "RETURN", "QUEUE", "" (falls through) or the
 * name of the chain it jumps to; NULL when it cannot be resolved.
 */
typedef const char *(*xt_label_fn)(const struct ipt_entry *e, void *ctx);
typedef const char *(*xt_label6_fn)(const struct ip6t_entry *e, void *ctx);

/*
 * The name of a standard target's negative (absolute) verdict, as a label
 * function returns it: "ACCEPT", "DROP", "QUEUE", "RETURN"; NULL for any
 * other verdict (a jump offset, or a value the kernel does not define).
 */
const char *xt_verdict_name(int verdict);

/* The mask of an IPv6 prefix of plen bits (<= 128) into *m. */
void xt_plen_mask6(uint8_t plen, struct in6_addr *m);

/*
 * Decode entry e into *r (xtdecode.c).  Strings point into e (or into the label
 * function's storage) and live as long as those.  Returns 0, or -EINVAL with a
 * reason in why when the rule uses something the model has no place for.
 */
int xt_entry_decode(const struct ipt_entry *e, xt_label_fn label_of, void *ctx,
		    struct rs_rule *r, char *why, size_t whylen);
/* The same for an IPv6 entry (addresses of family AF_INET6). */
int xt_entry_decode6(const struct ip6t_entry *e, xt_label6_fn label_of, void *ctx,
		     struct rs_rule *r, char *why, size_t whylen);

/*
 * What errno err from a legacy xtables call means for a user, in words;
 * NULL when there is nothing to add to strerror().  commit: the error came
 * from replacing the table (as opposed to reading it).
 */
const char *xt_errno_meaning(int err, bool commit);

#endif
