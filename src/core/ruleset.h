/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The rule model: tables, chains and ordered rules with typed matches and
 * targets.  The planner builds it; the iptables-save renderer, the libiptc
 * writer, the text parser (for --diff and tests) and the test tracer read
 * it.  Only the match and target kinds kube-proxy's iptables mode uses are
 * modelled, so every consumer can handle every rule.
 *
 * A rule's matches are kept in the order they are written to the kernel and
 * printed (iptables-save prints -s/-d/-p first, then the -m matches in
 * kernel order, then -j).  Strings (comments, recent names, chain names of
 * jump targets) live in the ruleset's string arena and stay valid until
 * ruleset_free().
 */
#ifndef SVCNAT_CORE_RULESET_H
#define SVCNAT_CORE_RULESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"

enum rs_table {
	RS_FILTER,
	RS_NAT,
	RS_NTABLES,
};

/* Longest chain name the kernel takes (XT_EXTENSION_MAXNAMELEN - 1). */
#define RS_CHAIN_MAXLEN 28
/* kube-proxy's rules have at most 3 (-m comment, -m tcp and -m addrtype or
 * -m nfacct); every slot costs each of the plan's rules 24 bytes. */
#define RS_MAX_MATCHES 3

/* The all-ones mask ip6tables-save prints for -m recent. */
#define RECENT_MASK6 "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"

enum rs_match_kind {
	RS_M_COMMENT = 1, /* -m comment --comment STR */
	RS_M_PORT,        /* -m tcp|udp|sctp --dport N or --dport N:M (protocol is
			   * rule.proto); dport 0: the bare "-m tcp" of kube-proxy's
			   * DNAT rules */
	RS_M_ADDRTYPE,    /* -m addrtype [!] --src-type|--dst-type LOCAL */
	RS_M_MARK,        /* -m mark [!] --mark V/M */
	RS_M_CONNTRACK,   /* -m conntrack [!] --ctstate S[,S...] */
	RS_M_STATISTIC,   /* -m statistic --mode random --probability P */
	RS_M_RECENT,      /* -m recent --set|--rcheck|--update [--seconds S --reap] --name N --mask 255.255.255.255 --rsource */
	RS_M_NFACCT,      /* -m nfacct --nfacct-name N: counts into the nfnetlink_acct
			   * object N of the network namespace, which must exist */
};

/* Longest nfacct object name (NFACCT_NAME_MAX - 1). */
#define RS_NFACCT_NAME_MAXLEN 31

/* addrtype types (values as in linux/netfilter/xt_addrtype.h). */
enum rs_addrtype {
	RS_ADDRTYPE_LOCAL = 1 << 2,
};

/* conntrack states: svcnat's own bits (the libiptc writer maps them to
 * xt_conntrack.h's, whose SNAT/DNAT bits depend on IP_CT_NUMBER). */
enum rs_ctstate {
	RS_CT_INVALID = 1 << 0,
	RS_CT_ESTABLISHED = 1 << 1,
	RS_CT_RELATED = 1 << 2,
	RS_CT_NEW = 1 << 3,
	RS_CT_SNAT = 1 << 8,
	RS_CT_DNAT = 1 << 9,
};

struct rs_match {
	uint8_t kind;   /* enum rs_match_kind */
	bool invert;    /* "!" before the match option */
	union {
		const char *comment;
		struct {
			uint16_t dport;
			/* 0: the single port dport; else the range
			 * dport..dport_max (dport >= 1, dport < dport_max),
			 * which the dispatch tree's port chains use */
			uint16_t dport_max;
		} port;
		struct {
			bool src;       /* --src-type if true, else --dst-type */
			uint16_t type;  /* enum rs_addrtype */
		} addrtype;
		struct {
			uint32_t value;
			uint32_t mask;
		} mark;
		struct {
			uint16_t states; /* enum rs_ctstate bits */
		} ct;
		struct {
			/* As the planner computed it; the kernel stores it as
			 * round(p * 2^31) in a u32. */
			double probability;
		} stat;
		struct {
			/* (fields ordered so that the union is 16 bytes) */
			const char *name;
			uint32_t seconds; /* --seconds (rcheck/update only; 0 = none) */
			bool set;         /* --set, else --rcheck (or --update) */
			bool update;      /* --update: --rcheck that also refreshes the
					   * entry when it matches (never with set) */
			bool reap;        /* --reap (rcheck/update only) */
			bool ipv6;        /* an ip6tables rule: the all-ones mask is
					   * ffff:...:ffff, not 255.255.255.255 */
		} recent;
		struct {
			const char *name; /* 1..RS_NFACCT_NAME_MAXLEN bytes */
		} nfacct;
	} u;
};

enum rs_target_kind {
	RS_T_NONE = 0,  /* no -j: the rule only counts and falls through (kube-proxy's
			 * last KUBE-FW- rule, "other traffic to ... will be dropped") */
	RS_T_JUMP = 1,  /* -j CHAIN */
	RS_T_GOTO,      /* -g CHAIN */
	RS_T_ACCEPT,
	RS_T_DROP,
	RS_T_RETURN,
	RS_T_REJECT,    /* --reject-with icmp-port-unreachable (kernel default), or
			 * icmp6-port-unreachable in an ip6tables rule (u.reject) */
	RS_T_DNAT,      /* --to-destination addr[:port] */
	RS_T_MARK,      /* --or-mark / --xor-mark / --set-xmark */
	RS_T_MASQUERADE,/* [--random-fully] */
};

enum rs_mark_op {
	RS_MARK_OR,
	RS_MARK_XOR,
	RS_MARK_SET,    /* --set-xmark value/mask */
};

struct rs_target {
	uint8_t kind; /* enum rs_target_kind */
	union {
		const char *chain; /* JUMP / GOTO */
		struct {
			struct ipaddr addr;
			uint16_t port; /* 0 = keep port */
		} dnat;
		struct {
			uint8_t op;   /* enum rs_mark_op */
			uint32_t value;
			uint32_t mask; /* SET only */
		} mark;
		struct {
			bool random_fully;
		} masq;
		struct {
			bool icmp6; /* ip6tables: icmp6-port-unreachable */
		} reject;
	} u;
};

/*
 * The plan holds every rule as one of these (168 bytes on LP64): the small
 * fields sit together so that no padding goes between them.
 */
struct rs_rule {
	struct ipnet src;  /* src.addr.family == 0: any */
	struct ipnet dst;
	bool src_inv;
	bool dst_inv;
	bool in_iface_prefix;
	bool in_iface_inv;
	uint8_t proto;     /* 0 = any */
	uint8_t n_matches;
	/* -i IFACE (in_iface_prefix: "IFACE+", every name starting so; a rule
	 * read from the kernel may keep the "+" at the end of the name, where
	 * iptables stores it); NULL: any.  kube-proxy's BridgeInterface and InterfaceNamePrefix
	 * local-traffic detectors.  Never matches a locally sent packet. */
	const char *in_iface;
	struct rs_match m[RS_MAX_MATCHES];
	struct rs_target t;
};

struct rs_chain {
	char name[RS_CHAIN_MAXLEN + 1];
	uint8_t table;   /* enum rs_table */
	bool builtin;    /* PREROUTING, INPUT, ...: holds only svcnat's jump rules */
	bool pooled;     /* ruleset.c's: one of a block of chains, not malloc'ed alone */
	struct rs_rule *rules;
	size_t n_rules;
	size_t cap_rules;
	/*
	 * Content stamp, the writers' "unchanged since the previous plan"
	 * signal.  0: unknown (treat the chain as changed).  A nonzero stamp
	 * is given by a plan store (core/planstore.h; the daemon keeps one
	 * per address family): two chains of that store's plans with the
	 * same table, name and nonzero stamp have equal rules
	 * (rs_chain_equal), so a writer that kept what it wrote for that
	 * (table, name, stamp) may write it again without looking at the
	 * rules.  Stamps of different stores (families) are not comparable.
	 * A chain whose content does not change keeps its stamp from plan to
	 * plan; a changed one gets a stamp never used before by that store.
	 * plan_build() alone leaves every stamp 0.  Whoever changes a
	 * chain's rules after planning sets the stamp to 0;
	 * ruleset_copy_chain() keeps it (the copy is equal).
	 */
	uint64_t stamp;
};

struct rs_chains {
	struct rs_chain **chains; /* creation order until ruleset_sort() */
	size_t n;
	size_t cap;
	bool sorted;
	size_t n_sorted; /* chains[0..n_sorted) are in ruleset_sort()'s order */
};

struct rs_arena;

struct ruleset {
	struct rs_chains t[RS_NTABLES];
	struct rs_arena *arena;
};

struct ruleset *ruleset_new(void);
void ruleset_free(struct ruleset *rs);

const char *rs_table_name(enum rs_table t);     /* "filter", "nat" */
bool rs_chain_is_builtin(enum rs_table t, const char *name);

/*
 * Add a chain (built-in chains are flagged as such).  Returns the chain or
 * NULL (errno ENOMEM, EEXIST if the name is taken, ENAMETOOLONG).
 * Pointers stay valid until ruleset_free().
 */
struct rs_chain *ruleset_add_chain(struct ruleset *rs, enum rs_table t, const char *name);
/*
 * ruleset_add_chain() for a caller that knows the name is not in table t
 * yet (names from a list it checked sorted and unique): the chain is not
 * indexed until the next ruleset_add_chain() or ruleset_move_chain() of
 * table t, so a table that is only walked never builds its index.  Until
 * then ruleset_find_chain() walks the table.  The chain record is carved
 * from a block of them (freed with rs; moved to another ruleset, it lives
 * only as long as rs, as its strings do).  NULL (errno ENOMEM,
 * ENAMETOOLONG).
 */
struct rs_chain *ruleset_add_chain_new(struct ruleset *rs, enum rs_table t, const char *name);

/*
 * Room for n more chains in table t, for a caller that knows how many it
 * adds: the chain array and (indexed: for ruleset_add_chain()) the index
 * are sized once instead of grown; ruleset_add_chain_new() needs no index.
 * 0 or -ENOMEM (nothing changes then).
 */
int ruleset_reserve(struct ruleset *rs, enum rs_table t, size_t n, bool indexed);
/* Find a chain by name: O(1) (hashed), but see ruleset_add_chain_new(). */
struct rs_chain *ruleset_find_chain(const struct ruleset *rs, enum rs_table t, const char *name);
/* Get or create. */
struct rs_chain *ruleset_get_chain(struct ruleset *rs, enum rs_table t, const char *name);

/*
 * Sort each table's chains into iptables-save order: built-in chains first
 * (in the kernel's hook order), then user chains by strcmp().  Chains
 * added since the last sort are merged into the sorted ones: O(k log n)
 * comparisons for k new chains.
 */
void ruleset_sort(struct ruleset *rs);

/*
 * Move chain c (of src) to dst: it leaves src's tables and index and joins
 * dst's (unsorted until ruleset_sort(dst)); src's order stays sorted if it
 * was.  Its strings stay in src's arena: dst may hold it only while src
 * lives.  0, or -EEXIST (dst has the name), -ENOENT (c is not in src),
 * -ENOMEM (nothing moved then).
 */
int ruleset_move_chain(struct ruleset *dst, struct ruleset *src, struct rs_chain *c);

/* Bytes taken in the string arena (strings are freed only with the
 * ruleset). */
size_t ruleset_arena_bytes(const struct ruleset *rs);

/*
 * The heap bytes rs holds: its chains and their rule arrays (as
 * allocated, spare room included), the tables' arrays and name indexes,
 * and the arena's chunks.  What malloc adds per block is not counted.
 */
size_t ruleset_bytes(const struct ruleset *rs);

/*
 * Give back the spare room of every chain's rule array (each holds
 * exactly its rules afterwards; appending still works).  Nothing else
 * changes; a failed shrink keeps the larger array.
 */
void ruleset_compact(struct ruleset *rs);

/* Append a zeroed rule; NULL on ENOMEM.  The pointer is valid until the
 * next append to the same chain. */
struct rs_rule *rs_chain_append(struct rs_chain *c);
/* Append a match slot of `kind`; NULL if the rule has RS_MAX_MATCHES. */
struct rs_match *rs_rule_add_match(struct rs_rule *r, enum rs_match_kind kind);

/* Copy a string into the arena; NULL on ENOMEM. */
const char *ruleset_strdup(struct ruleset *rs, const char *s);
const char *ruleset_printf(struct ruleset *rs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

bool rs_rule_equal(const struct rs_rule *a, const struct rs_rule *b);
bool rs_chain_equal(const struct rs_chain *a, const struct rs_chain *b);
size_t ruleset_count_rules(const struct ruleset *rs);
size_t ruleset_count_chains(const struct ruleset *rs);

/*
 * Copy chain `c` (with its rules and strings) into rs under the same table
 * and name.  Used to keep the unchanged parts of a previous plan.
 */
struct rs_chain *ruleset_copy_chain(struct ruleset *rs, const struct rs_chain *c);

#endif
