/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/owned.h"
#include "core/parse.h"
#include "util.h"

/*
 * Rule-level results: RULE_BAD is malformed text, RULE_FOREIGN is valid
 * iptables but outside the model.  In PARSE_OWNED_ONLY mode both skip the
 * rule; otherwise both are errors.
 */
enum {
	RULE_OK = 0,
	RULE_BAD = 1,
	RULE_FOREIGN = 2,
};

enum { TABLE_NONE = -1, TABLE_SKIP = -2 };

struct parser {
	unsigned flags;
	unsigned line;
	struct ruleset *rs;
	struct diag_list *diags;
	int table;        /* enum rs_table, TABLE_NONE or TABLE_SKIP */
	bool seen[RS_NTABLES];

	char *tbuf;       /* token storage for the current line */
	size_t tcap;
	char **tok;
	size_t ntok;
	size_t cap_tok;

	char msg[160];    /* why the current rule failed */

	struct rs_chain *last; /* chain of the previous -A line */
	const char *here; /* the current line and what follows it */
	size_t here_len;
};

static bool owned_only(const struct parser *p)
{
	return p->flags & PARSE_OWNED_ONLY;
}

static int line_error(struct parser *p, const char *fmt, ...) _printf_(2, 3);
static int line_error(struct parser *p, const char *fmt, ...)
{
	char field[32], msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(field, sizeof(field), "line %u", p->line);
	if (p->diags && diag_add(p->diags, DIAG_ERROR, NULL, NULL, field, "%s", msg) < 0)
		return -ENOMEM;
	return -EINVAL;
}

static int rule_fail(struct parser *p, int kind, const char *fmt, ...) _printf_(3, 4);
static int rule_fail(struct parser *p, int kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
	va_end(ap);
	return kind;
}

/* --- tokenizer: iptables-restore's (add_param_to_argv) --- */

/* End the token that began at *start (tbuf has room: see tokenize()). */
static int emit(struct parser *p, size_t *out, size_t *start)
{
	if (GROW(p->tok, p->cap_tok, p->ntok + 1) < 0)
		return -ENOMEM;
	p->tbuf[(*out)++] = '\0';
	p->tok[p->ntok++] = p->tbuf + *start;
	*start = *out;
	return 0;
}

/*
 * Split a line as iptables-restore does (add_param_to_argv): blanks
 * separate, "..." quotes with backslash escapes inside, a closing quote
 * ends the token.  Tokens and their NULs take at most 2n + 1 bytes.
 */
static int tokenize(struct parser *p, const char *s, size_t n)
{
	bool quote = false, esc = false;
	size_t i, out = 0, start = 0;
	int r;

	if (n > SIZE_MAX / 2 - 2)
		return -ENOMEM;
	if (GROW(p->tbuf, p->tcap, 2 * n + 2) < 0)
		return -ENOMEM;
	p->ntok = 0;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (quote) {
			if (esc) {
				p->tbuf[out++] = c;
				esc = false;
			} else if (c == '\\') {
				esc = true;
			} else if (c == '"') {
				quote = false;
				r = emit(p, &out, &start);
				if (r < 0)
					return r;
			} else {
				p->tbuf[out++] = c;
			}
			continue;
		}
		if (c == '"') {
			quote = true;
			continue;
		}
		if (c == ' ' || c == '\t') {
			if (out > start) {
				r = emit(p, &out, &start);
				if (r < 0)
					return r;
			}
			continue;
		}
		p->tbuf[out++] = c;
	}
	if (quote)
		return line_error(p, "unterminated quoted string");
	if (out > start)
		return emit(p, &out, &start);
	return 0;
}

/* --- scalar parsers (strict: iptables-save's spelling) --- */

static bool parse_u32(const char *s, uint32_t max, uint32_t *ret)
{
	uint64_t v = 0;
	int base = 10;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return false;
		v = v * (unsigned)base + d;
		if (v > max)
			return false;
	}
	*ret = (uint32_t)v;
	return true;
}

static bool parse_dec(const char *s, uint32_t max, uint32_t *ret)
{
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return false;
	return parse_u32(s, max, ret);
}

/* Dotted quad; stops at end or `stop` and reports where. */
static bool parse_ipv4(const char *s, struct ipaddr *ret, const char **end)
{
	struct ipaddr a = { .family = AF_INET };
	int i;

	for (i = 0; i < 4; i++) {
		unsigned v = 0, nd = 0;

		if (i) {
			if (*s != '.')
				return false;
			s++;
		}
		while (*s >= '0' && *s <= '9' && nd < 3) {
			v = v * 10 + (unsigned)(*s - '0');
			s++;
			nd++;
		}
		if (!nd || v > 255)
			return false;
		a.u.b[i] = (uint8_t)v;
	}
	*end = s;
	*ret = a;
	return true;
}

static bool parse_net4(const char *s, struct ipnet *ret)
{
	struct ipnet n = { 0 };
	const char *e;
	uint32_t plen = 32;

	if (!parse_ipv4(s, &n.addr, &e))
		return false;
	if (*e == '/') {
		if (!parse_dec(e + 1, 32, &plen))
			return false;
	} else if (*e) {
		return false;
	}
	n.plen = (uint8_t)plen;
	/* iptables stores the address masked. */
	if (plen < 32) {
		uint32_t m = plen ? htonl(~0u << (32 - plen)) : 0;

		n.addr.u.v4.s_addr &= m;
	}
	*ret = n;
	return true;
}

/* An IPv6 address as inet_pton takes it, of at most len characters. */
static bool parse_ipv6(const char *s, size_t len, struct ipaddr *ret)
{
	char buf[INET6_ADDRSTRLEN];
	struct ipaddr a = { .family = AF_INET6 };

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, &a.u.v6) != 1)
		return false;
	*ret = a;
	return true;
}

/* ip6tables-save's "ADDR/PLEN" (or a bare address, /128), masked. */
static bool parse_net6(const char *s, struct ipnet *ret)
{
	const char *slash = strchr(s, '/');
	struct ipnet n = { 0 };
	uint32_t plen = 128;

	if (!parse_ipv6(s, slash ? (size_t)(slash - s) : strlen(s), &n.addr))
		return false;
	if (slash && !parse_dec(slash + 1, 128, &plen))
		return false;
	n.plen = (uint8_t)plen;
	for (unsigned i = 0; i < 16; i++) {
		unsigned bit = i * 8;

		if (bit >= plen)
			n.addr.u.b[i] = 0;
		else if (plen - bit < 8)
			n.addr.u.b[i] &= (uint8_t)(0xff << (8 - (plen - bit)));
	}
	*ret = n;
	return true;
}

static bool parse_net(const struct parser *p, const char *s, struct ipnet *ret)
{
	return p->flags & PARSE_IPV6 ? parse_net6(s, ret) : parse_net4(s, ret);
}

static bool parse_proto(const char *s, uint8_t *ret)
{
	static const struct {
		const char *name;
		uint8_t num;
	} names[] = {
		{ "tcp", IPPROTO_TCP },	    { "udp", IPPROTO_UDP }, { "sctp", IPPROTO_SCTP },
		{ "icmp", IPPROTO_ICMP },   { "udplite", IPPROTO_UDPLITE },
		{ "esp", IPPROTO_ESP },	    { "ah", IPPROTO_AH },   { "all", 0 },
	};
	uint32_t v;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (streq(s, names[i].name)) {
			*ret = names[i].num;
			return true;
		}
	}
	if (!parse_dec(s, 255, &v))
		return false;
	*ret = (uint8_t)v;
	return true;
}

/*
 * Chain and recent-list names as svcnat renders them unquoted: printable,
 * no blanks or quote characters, not starting like an option.
 */
static bool valid_name(const char *s, size_t max)
{
	size_t n = strlen(s), i;

	if (!n || n > max || s[0] == '-' || s[0] == '!')
		return false;
	for (i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == '"' || s[i] == '\'' || s[i] == '\\')
			return false;
	return true;
}

/* --- rules --- */

/* Cursor over one rule's tokens. */
struct cur {
	char **t;
	size_t n;
	size_t i;
};

static const char *peek(const struct cur *c, size_t k)
{
	return c->i + k < c->n ? c->t[c->i + k] : NULL;
}

static bool starts_long(const char *s)
{
	return s && s[0] == '-' && s[1] == '-';
}

/*
 * Next option of a match or target: "[!] --name".  Returns false at the
 * end of the module's options.
 */
static bool next_opt(struct cur *c, const char **ret_opt, bool *ret_inv)
{
	/* Long spellings of the rule-level options end a module's options. */
	static const char *const rule_opts[] = {
		"--source", "--destination", "--src", "--dst", "--protocol", "--match",
		"--jump", "--goto", "--in-interface", "--out-interface", "--fragment",
	};
	const char *a = peek(c, 0);
	bool inv = false;
	size_t i;

	if (a && streq(a, "!") && starts_long(peek(c, 1))) {
		inv = true;
		c->i++;
		a = peek(c, 0);
	}
	if (!starts_long(a))
		return false;
	for (i = 0; i < ARRAY_SIZE(rule_opts); i++) {
		if (streq(a, rule_opts[i])) {
			c->i -= inv;
			return false;
		}
	}
	c->i++;
	*ret_opt = a;
	*ret_inv = inv;
	return true;
}

static const char *opt_arg(struct cur *c)
{
	const char *a = peek(c, 0);

	if (a)
		c->i++;
	return a;
}

/*
 * "N" or "N:M" (N < M; "N:N" is N, as iptables-save prints it) with
 * 1 <= N.  -EINVAL for a bad number, -EOPNOTSUPP for a range svcnat never
 * writes (open ends, from 0, reversed).
 */
static int parse_port_range(const char *v, uint32_t *ret_lo, uint32_t *ret_hi)
{
	const char *colon = strchr(v, ':');
	char lo_s[8];
	uint32_t lo, hi;

	if (!colon) {
		if (!parse_dec(v, 65535, &lo) || !lo)
			return -EINVAL;
		*ret_lo = lo;
		*ret_hi = 0;
		return 0;
	}
	if ((size_t)(colon - v) >= sizeof(lo_s))
		return -EINVAL;
	memcpy(lo_s, v, (size_t)(colon - v));
	lo_s[colon - v] = '\0';
	if (!lo_s[0] || !colon[1])
		return -EOPNOTSUPP;
	if (!parse_dec(lo_s, 65535, &lo) || !parse_dec(colon + 1, 65535, &hi))
		return -EINVAL;
	if (!lo || hi < lo)
		return -EOPNOTSUPP;
	*ret_lo = lo;
	*ret_hi = hi == lo ? 0 : hi;
	return 0;
}

static int match_port(struct parser *p, struct cur *c, struct rs_rule *r, const char *mod,
		      struct rs_match *m)
{
	const char *opt, *v;
	uint32_t port, port_max;
	bool inv, have = false;
	int r_ok;

	if (!r->proto || (r->proto != IPPROTO_TCP && r->proto != IPPROTO_UDP &&
			  r->proto != IPPROTO_SCTP) ||
	    !streq(mod, r->proto == IPPROTO_TCP ? "tcp" : r->proto == IPPROTO_UDP ? "udp" : "sctp"))
		return rule_fail(p, RULE_FOREIGN, "match '-m %s' without '-p %s'", mod, mod);
	while (next_opt(c, &opt, &inv)) {
		if (!streq(opt, "--dport") && !streq(opt, "--destination-port"))
			return rule_fail(p, RULE_FOREIGN, "unsupported option '%s' of '-m %s'", opt, mod);
		if (have)
			return rule_fail(p, RULE_BAD, "'%s' given twice", opt);
		v = opt_arg(c);
		if (!v)
			return rule_fail(p, RULE_BAD, "'%s' needs a value", opt);
		r_ok = parse_port_range(v, &port, &port_max);
		if (r_ok < 0)
			return rule_fail(p, r_ok == -EOPNOTSUPP ? RULE_FOREIGN : RULE_BAD,
					 "bad port '%s'", v);
		m->invert = inv;
		m->u.port.dport = (uint16_t)port;
		m->u.port.dport_max = (uint16_t)port_max;
		have = true;
	}
	return RULE_OK;
}

static int match_comment(struct parser *p, struct cur *c, struct rs_match *m)
{
	const char *opt, *v;
	bool inv;

	if (!next_opt(c, &opt, &inv) || !streq(opt, "--comment") || inv)
		return rule_fail(p, RULE_BAD, "'-m comment' needs --comment");
	v = opt_arg(c);
	if (!v)
		return rule_fail(p, RULE_BAD, "'--comment' needs a value");
	m->u.comment = v;
	if (next_opt(c, &opt, &inv))
		return rule_fail(p, RULE_BAD, "unexpected '%s' after --comment", opt);
	return RULE_OK;
}

static int match_addrtype(struct parser *p, struct cur *c, struct rs_match *m)
{
	const char *opt, *v;
	bool inv;

	if (!next_opt(c, &opt, &inv) || (!streq(opt, "--src-type") && !streq(opt, "--dst-type")))
		return rule_fail(p, RULE_FOREIGN, "'-m addrtype' without --src-type or --dst-type");
	v = opt_arg(c);
	if (!v)
		return rule_fail(p, RULE_BAD, "'%s' needs a value", opt);
	if (!streq(v, "LOCAL"))
		return rule_fail(p, RULE_FOREIGN, "address type '%s'", v);
	m->invert = inv;
	m->u.addrtype.src = streq(opt, "--src-type");
	m->u.addrtype.type = RS_ADDRTYPE_LOCAL;
	if (next_opt(c, &opt, &inv))
		return rule_fail(p, RULE_FOREIGN, "unsupported option '%s' of '-m addrtype'", opt);
	return RULE_OK;
}

/* "V" or "V/M" (hex or decimal); the mask defaults to all ones. */
static bool parse_valmask(const char *s, uint32_t *ret_v, uint32_t *ret_m)
{
	char buf[32];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	uint32_t v, m = UINT32_MAX;

	if (n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (!parse_u32(buf, UINT32_MAX, &v))
		return false;
	if (slash && !parse_u32(slash + 1, UINT32_MAX, &m))
		return false;
	*ret_v = v;
	*ret_m = m;
	return true;
}

static int match_mark(struct parser *p, struct cur *c, struct rs_match *m)
{
	const char *opt, *v;
	bool inv;

	if (!next_opt(c, &opt, &inv) || !streq(opt, "--mark"))
		return rule_fail(p, RULE_BAD, "'-m mark' needs --mark");
	v = opt_arg(c);
	if (!v || !parse_valmask(v, &m->u.mark.value, &m->u.mark.mask))
		return rule_fail(p, RULE_BAD, "bad mark '%s'", v ? v : "");
	m->invert = inv;
	if (next_opt(c, &opt, &inv))
		return rule_fail(p, RULE_BAD, "unexpected '%s' after --mark", opt);
	return RULE_OK;
}

static int match_conntrack(struct parser *p, struct cur *c, struct rs_match *m)
{
	static const struct {
		const char *name;
		uint16_t bit;
	} states[] = {
		{ "INVALID", RS_CT_INVALID }, { "NEW", RS_CT_NEW },   { "RELATED", RS_CT_RELATED },
		{ "ESTABLISHED", RS_CT_ESTABLISHED }, { "SNAT", RS_CT_SNAT }, { "DNAT", RS_CT_DNAT },
	};
	const char *opt, *v, *s;
	uint16_t bits = 0;
	bool inv;

	if (!next_opt(c, &opt, &inv) || !streq(opt, "--ctstate"))
		return rule_fail(p, RULE_FOREIGN, "'-m conntrack' without --ctstate");
	v = opt_arg(c);
	if (!v || !*v)
		return rule_fail(p, RULE_BAD, "'--ctstate' needs a value");
	for (s = v; *s;) {
		size_t n = strcspn(s, ","), i;

		for (i = 0; i < ARRAY_SIZE(states); i++)
			if (strlen(states[i].name) == n && !strncmp(s, states[i].name, n))
				break;
		if (i == ARRAY_SIZE(states))
			return rule_fail(p, RULE_FOREIGN, "conntrack state in '%s'", v);
		bits |= states[i].bit;
		s += n;
		if (*s == ',' && *++s == '\0')
			return rule_fail(p, RULE_BAD, "bad state list '%s'", v);
	}
	m->invert = inv;
	m->u.ct.states = bits;
	if (next_opt(c, &opt, &inv))
		return rule_fail(p, RULE_FOREIGN, "unsupported option '%s' of '-m conntrack'", opt);
	return RULE_OK;
}

static int match_statistic(struct parser *p, struct cur *c, struct rs_match *m)
{
	const char *opt, *v;
	char *end;
	double prob;
	bool inv;

	if (!next_opt(c, &opt, &inv) || !streq(opt, "--mode") || inv)
		return rule_fail(p, RULE_BAD, "'-m statistic' needs --mode");
	v = opt_arg(c);
	if (!v || !streq(v, "random"))
		return rule_fail(p, RULE_FOREIGN, "statistic mode '%s'", v ? v : "");
	if (!next_opt(c, &opt, &inv) || !streq(opt, "--probability"))
		return rule_fail(p, RULE_BAD, "'--mode random' needs --probability");
	v = opt_arg(c);
	if (!v || !*v || !(*v >= '0' && *v <= '9'))
		return rule_fail(p, RULE_BAD, "bad probability '%s'", v ? v : "");
	errno = 0;
	prob = strtod(v, &end);
	if (errno || *end || !isfinite(prob) || prob < 0.0 || prob > 1.0)
		return rule_fail(p, RULE_BAD, "bad probability '%s'", v);
	m->invert = inv;
	m->u.stat.probability = prob;
	if (next_opt(c, &opt, &inv))
		return rule_fail(p, RULE_FOREIGN, "unsupported option '%s' of '-m statistic'", opt);
	return RULE_OK;
}

static int match_recent(struct parser *p, struct cur *c, struct rs_match *m)
{
	const char *opt, *v;
	bool inv, have_cmd = false;
	uint32_t secs;

	m->u.recent.name = "DEFAULT";
	m->u.recent.ipv6 = p->flags & PARSE_IPV6;
	while (next_opt(c, &opt, &inv)) {
		if (streq(opt, "--set") || streq(opt, "--rcheck") || streq(opt, "--update")) {
			if (have_cmd)
				return rule_fail(p, RULE_BAD, "two recent commands");
			have_cmd = true;
			m->invert = inv;
			m->u.recent.set = streq(opt, "--set");
			m->u.recent.update = streq(opt, "--update");
			continue;
		}
		if (inv)
			return rule_fail(p, RULE_BAD, "'!' before '%s'", opt);
		if (streq(opt, "--reap")) {
			m->u.recent.reap = true;
		} else if (streq(opt, "--rsource")) {
			/* the default */
		} else if (streq(opt, "--seconds")) {
			v = opt_arg(c);
			if (!v || !parse_dec(v, UINT32_MAX, &secs) || !secs)
				return rule_fail(p, RULE_BAD, "bad --seconds '%s'", v ? v : "");
			m->u.recent.seconds = secs;
		} else if (streq(opt, "--name")) {
			v = opt_arg(c);
			if (!v || !valid_name(v, 199))
				return rule_fail(p, RULE_BAD, "bad recent name '%s'", v ? v : "");
			m->u.recent.name = v;
		} else if (streq(opt, "--mask")) {
			v = opt_arg(c);
			if (!v || !streq(v, p->flags & PARSE_IPV6 ? RECENT_MASK6 : "255.255.255.255"))
				return rule_fail(p, RULE_FOREIGN, "recent mask '%s'", v ? v : "");
		} else {
			return rule_fail(p, RULE_FOREIGN, "unsupported option '%s' of '-m recent'", opt);
		}
	}
	if (!have_cmd)
		return rule_fail(p, RULE_FOREIGN, "'-m recent' without --set, --rcheck or --update");
	if (m->u.recent.set && (m->u.recent.seconds || m->u.recent.reap))
		return rule_fail(p, RULE_FOREIGN, "'--set' with --seconds/--reap");
	if (m->u.recent.reap && !m->u.recent.seconds)
		return rule_fail(p, RULE_BAD, "'--reap' needs --seconds");
	return RULE_OK;
}

static int match_nfacct(struct parser *p, struct cur *c, struct rs_match *m)
{
	const char *opt, *v;
	bool inv;

	if (!next_opt(c, &opt, &inv) || !streq(opt, "--nfacct-name") || inv)
		return rule_fail(p, RULE_BAD, "'-m nfacct' needs --nfacct-name");
	v = opt_arg(c);
	if (!v || !valid_name(v, RS_NFACCT_NAME_MAXLEN))
		return rule_fail(p, RULE_BAD, "bad nfacct name '%s'", v ? v : "");
	m->u.nfacct.name = v;
	if (next_opt(c, &opt, &inv))
		return rule_fail(p, RULE_FOREIGN, "unsupported option '%s' of '-m nfacct'", opt);
	return RULE_OK;
}

static int parse_match(struct parser *p, struct cur *c, struct rs_rule *r)
{
	static const struct {
		const char *name;
		enum rs_match_kind kind;
	} mods[] = {
		{ "comment", RS_M_COMMENT },	{ "tcp", RS_M_PORT },
		{ "udp", RS_M_PORT },		{ "sctp", RS_M_PORT },
		{ "addrtype", RS_M_ADDRTYPE },	{ "mark", RS_M_MARK },
		{ "conntrack", RS_M_CONNTRACK }, { "statistic", RS_M_STATISTIC },
		{ "recent", RS_M_RECENT },	{ "nfacct", RS_M_NFACCT },
	};
	const char *mod = opt_arg(c);
	struct rs_match *m;
	size_t i;

	if (!mod)
		return rule_fail(p, RULE_BAD, "'-m' needs a module name");
	for (i = 0; i < ARRAY_SIZE(mods); i++)
		if (streq(mod, mods[i].name))
			break;
	if (i == ARRAY_SIZE(mods))
		return rule_fail(p, RULE_FOREIGN, "match '-m %s'", mod);
	m = rs_rule_add_match(r, mods[i].kind);
	if (!m)
		return rule_fail(p, RULE_FOREIGN, "more than %d matches", RS_MAX_MATCHES);
	switch (mods[i].kind) {
	case RS_M_COMMENT:
		return match_comment(p, c, m);
	case RS_M_PORT:
		return match_port(p, c, r, mod, m);
	case RS_M_ADDRTYPE:
		return match_addrtype(p, c, m);
	case RS_M_MARK:
		return match_mark(p, c, m);
	case RS_M_CONNTRACK:
		return match_conntrack(p, c, m);
	case RS_M_STATISTIC:
		return match_statistic(p, c, m);
	case RS_M_NFACCT:
		return match_nfacct(p, c, m);
	default:
		return match_recent(p, c, m);
	}
}

static int target_dnat(struct parser *p, struct cur *c, struct rs_target *t)
{
	const char *opt, *v, *e;
	uint32_t port;
	bool inv;

	if (!next_opt(c, &opt, &inv) || !streq(opt, "--to-destination") || inv)
		return rule_fail(p, RULE_FOREIGN, "DNAT without --to-destination");
	v = opt_arg(c);
	if (v && (p->flags & PARSE_IPV6)) {
		/* ip6tables-save: "[ADDR]:PORT", or "ADDR" without a port. */
		const char *close = v[0] == '[' ? strchr(v, ']') : NULL;

		if (close ? !parse_ipv6(v + 1, (size_t)(close - v - 1), &t->u.dnat.addr)
			  : !parse_ipv6(v, strlen(v), &t->u.dnat.addr))
			return rule_fail(p, RULE_FOREIGN, "DNAT destination '%s'", v);
		e = close ? close + 1 : v + strlen(v);
		if (close && *e != ':')
			return rule_fail(p, RULE_FOREIGN, "DNAT destination '%s'", v);
	} else if (!v || !parse_ipv4(v, &t->u.dnat.addr, &e)) {
		return rule_fail(p, RULE_FOREIGN, "DNAT destination '%s'", v ? v : "");
	}
	if (*e == ':') {
		if (!parse_dec(e + 1, 65535, &port) || !port)
			return rule_fail(p, RULE_FOREIGN, "DNAT destination '%s'", v);
		t->u.dnat.port = (uint16_t)port;
	} else if (*e) {
		return rule_fail(p, RULE_FOREIGN, "DNAT destination '%s'", v);
	}
	return RULE_OK;
}

/*
 * The kernel keeps a MARK target as (value, mask), mark = (mark & ~mask) ^
 * value, and iptables-save prints it as --set-xmark.  Map it back to the
 * model's canonical op: mask == value is --or-mark, mask 0 is --xor-mark.
 */
static int target_mark(struct parser *p, struct cur *c, struct rs_target *t)
{
	const char *opt, *v;
	uint32_t val, mask;
	bool inv;

	if (!next_opt(c, &opt, &inv) || inv)
		return rule_fail(p, RULE_BAD, "MARK needs an option");
	v = opt_arg(c);
	if (!v || !parse_valmask(v, &val, &mask))
		return rule_fail(p, RULE_BAD, "bad mark '%s'", v ? v : "");
	if (streq(opt, "--set-xmark")) {
		/* as given */
	} else if (streq(opt, "--set-mark")) {
		mask |= val;
	} else if (strchr(v, '/')) {
		return rule_fail(p, RULE_BAD, "'%s' takes no mask", opt);
	} else if (streq(opt, "--or-mark")) {
		mask = val;
	} else if (streq(opt, "--xor-mark")) {
		mask = 0;
	} else if (streq(opt, "--and-mark")) {
		mask = ~val;
		val = 0;
	} else {
		return rule_fail(p, RULE_FOREIGN, "unsupported option '%s' of MARK", opt);
	}
	t->u.mark.value = val;
	if (mask == val && val) {
		t->u.mark.op = RS_MARK_OR;
	} else if (mask == 0) {
		t->u.mark.op = RS_MARK_XOR;
	} else {
		t->u.mark.op = RS_MARK_SET;
		t->u.mark.mask = mask;
	}
	return RULE_OK;
}

static int parse_target(struct parser *p, struct cur *c, struct rs_rule *r, bool go)
{
	const char *name = opt_arg(c), *opt, *v;
	const struct rs_chain *tc;
	struct rs_target *t = &r->t;
	bool inv;
	int k;

	if (!name || !*name)
		return rule_fail(p, RULE_BAD, "'%s' needs a target", go ? "-g" : "-j");
	if (go) {
		/* fallthrough to the chain lookup below */
	} else if (streq(name, "ACCEPT")) {
		t->kind = RS_T_ACCEPT;
	} else if (streq(name, "DROP")) {
		t->kind = RS_T_DROP;
	} else if (streq(name, "RETURN")) {
		t->kind = RS_T_RETURN;
	} else if (streq(name, "MASQUERADE")) {
		t->kind = RS_T_MASQUERADE;
		while (next_opt(c, &opt, &inv)) {
			if (!streq(opt, "--random-fully") || inv)
				return rule_fail(p, RULE_FOREIGN, "unsupported option '%s' of MASQUERADE", opt);
			t->u.masq.random_fully = true;
		}
	} else if (streq(name, "REJECT")) {
		t->kind = RS_T_REJECT;
		t->u.reject.icmp6 = p->flags & PARSE_IPV6;
		if (next_opt(c, &opt, &inv)) {
			if (!streq(opt, "--reject-with") || inv)
				return rule_fail(p, RULE_FOREIGN, "unsupported option '%s' of REJECT", opt);
			v = opt_arg(c);
			if (!v || !streq(v, t->u.reject.icmp6 ? "icmp6-port-unreachable"
							       : "icmp-port-unreachable"))
				return rule_fail(p, RULE_FOREIGN, "reject type '%s'", v ? v : "");
		}
	} else if (streq(name, "DNAT")) {
		t->kind = RS_T_DNAT;
		k = target_dnat(p, c, t);
		if (k != RULE_OK)
			return k;
	} else if (streq(name, "MARK")) {
		t->kind = RS_T_MARK;
		k = target_mark(p, c, t);
		if (k != RULE_OK)
			return k;
	}
	if (!t->kind) {
		tc = p->table >= 0 ? ruleset_find_chain(p->rs, (enum rs_table)p->table, name) : NULL;
		if (!tc || tc->builtin)
			return rule_fail(p, RULE_FOREIGN, "target '%s'", name);
		t->kind = go ? RS_T_GOTO : RS_T_JUMP;
		t->u.chain = tc->name;
	}
	if (peek(c, 0))
		return rule_fail(p, RULE_FOREIGN, "unexpected '%s' after the target", peek(c, 0));
	return RULE_OK;
}

/* Parse the options after "-A CHAIN" into *r (strings still in tokens). */
static int parse_rule_opts(struct parser *p, struct cur *c, struct rs_rule *r)
{
	bool inv = false;
	int k;

	while (peek(c, 0)) {
		const char *a = opt_arg(c), *v;

		if (streq(a, "!")) {
			if (inv)
				return rule_fail(p, RULE_BAD, "'!' given twice");
			inv = true;
			continue;
		}
		if (streq(a, "-s") || streq(a, "-d") || streq(a, "--source") ||
		    streq(a, "--destination")) {
			bool src = a[1] == 's' || a[2] == 's';
			struct ipnet *n = src ? &r->src : &r->dst;

			v = opt_arg(c);
			if (n->addr.family)
				return rule_fail(p, RULE_BAD, "'%s' given twice", a);
			if (!v || !parse_net(p, v, n))
				return rule_fail(p, RULE_FOREIGN, "address '%s'", v ? v : "");
			if (src)
				r->src_inv = inv;
			else
				r->dst_inv = inv;
		} else if (streq(a, "-i") || streq(a, "--in-interface")) {
			size_t len;

			v = opt_arg(c);
			if (r->in_iface)
				return rule_fail(p, RULE_BAD, "'%s' given twice", a);
			len = v ? strlen(v) : 0;
			if (!len || len > 16 || (len == 16 && v[15] != '+') || streq(v, "+"))
				return rule_fail(p, RULE_FOREIGN, "interface '%s'", v ? v : "");
			r->in_iface = v; /* copied without the '+' by copy_rule_strings() */
			r->in_iface_prefix = v[len - 1] == '+';
			r->in_iface_inv = inv;
		} else if (streq(a, "-p") || streq(a, "--protocol")) {
			v = opt_arg(c);
			if (inv)
				return rule_fail(p, RULE_FOREIGN, "'! -p'");
			if (r->proto)
				return rule_fail(p, RULE_BAD, "'%s' given twice", a);
			if (!v || !parse_proto(v, &r->proto))
				return rule_fail(p, RULE_FOREIGN, "protocol '%s'", v ? v : "");
		} else if (streq(a, "-m") || streq(a, "--match")) {
			if (inv)
				return rule_fail(p, RULE_BAD, "'!' before '%s'", a);
			k = parse_match(p, c, r);
			if (k != RULE_OK)
				return k;
		} else if (streq(a, "-j") || streq(a, "--jump") || streq(a, "-g") ||
			   streq(a, "--goto")) {
			if (inv)
				return rule_fail(p, RULE_BAD, "'!' before '%s'", a);
			return parse_target(p, c, r, a[1] == 'g' || a[2] == 'g');
		} else {
			return rule_fail(p, a[0] == '-' ? RULE_FOREIGN : RULE_BAD,
					 "unexpected '%s'", a);
		}
		inv = false;
	}
	if (inv)
		return rule_fail(p, RULE_BAD, "'!' at the end of the rule");
	return RULE_OK;
}

/* "[packets:bytes]" */
static bool parse_counters(const char *s)
{
	size_t n = strlen(s), a, b;

	if (n < 5 || s[0] != '[' || s[n - 1] != ']')
		return false;
	a = strspn(s + 1, "0123456789");
	if (!a || s[1 + a] != ':')
		return false;
	b = strspn(s + 2 + a, "0123456789");
	return b && 2 + a + b == n - 1;
}

/*
 * Number of consecutive lines from the current one that append to `name`
 * (iptables-save prints a chain's rules together).  Used to size the
 * chain's rule array once: most chains have two or three rules, and the
 * growth policy's minimum of 8 ~200-byte rules per chain costs more than
 * the parse itself at 100,000 chains.
 */
static size_t count_run(const struct parser *p, const char *name)
{
	const char *s = p->here, *end = p->here + p->here_len;
	size_t nlen = strlen(name), n = 0;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end;

		if (*s == '[') {
			s = memchr(s, ' ', (size_t)(e - s));
			if (!s)
				break;
			s++;
		}
		if ((size_t)(e - s) < 3 + nlen || memcmp(s, "-A ", 3) ||
		    memcmp(s + 3, name, nlen) || (s + 3 + nlen < e && s[3 + nlen] != ' '))
			break;
		n++;
		if (!nl)
			break;
		s = nl + 1;
	}
	return n;
}

static int copy_rule_strings(struct parser *p, struct rs_rule *r)
{
	size_t i;

	for (i = 0; i < r->n_matches; i++) {
		const char **s = r->m[i].kind == RS_M_COMMENT ? &r->m[i].u.comment :
				 r->m[i].kind == RS_M_RECENT  ? &r->m[i].u.recent.name :
				 r->m[i].kind == RS_M_NFACCT  ? &r->m[i].u.nfacct.name :
								NULL;

		if (!s)
			continue;
		*s = ruleset_strdup(p->rs, *s);
		if (!*s)
			return -ENOMEM;
	}
	if (r->in_iface) {
		int len = (int)strlen(r->in_iface) - (r->in_iface_prefix ? 1 : 0);

		r->in_iface = ruleset_printf(p->rs, "%.*s", len, r->in_iface);
		if (!r->in_iface)
			return -ENOMEM;
	}
	return 0;
}

static int do_rule(struct parser *p)
{
	struct cur c = { .t = p->tok, .n = p->ntok };
	struct rs_rule tmp = { 0 }, *r;
	struct rs_chain *chain;
	const char *name;
	int k;

	if (peek(&c, 0)[0] == '[') {
		if (!parse_counters(peek(&c, 0)))
			return line_error(p, "bad counters '%s'", peek(&c, 0));
		c.i++;
	}
	if (!peek(&c, 0) || !streq(peek(&c, 0), "-A"))
		return line_error(p, "expected '-A', got '%s'", peek(&c, 0) ? peek(&c, 0) : "");
	c.i++;
	name = opt_arg(&c);
	if (!name)
		return line_error(p, "'-A' needs a chain name");
	if (owned_only(p) && !owned_kube_name(name) && !rs_chain_is_builtin((enum rs_table)p->table, name))
		return 0;
	/* A chain's rules come together: skip the lookup for the next one. */
	chain = p->last && streq(p->last->name, name) ? p->last :
		ruleset_find_chain(p->rs, (enum rs_table)p->table, name);
	p->last = chain;
	if (!chain)
		return line_error(p, "chain '%s' is not declared", name);

	k = parse_rule_opts(p, &c, &tmp);
	if (k == RULE_OK && owned_only(p) && chain->builtin &&
	    !((tmp.t.kind == RS_T_JUMP || tmp.t.kind == RS_T_GOTO) && owned_kube_name(tmp.t.u.chain)))
		return 0;
	if (k != RULE_OK) {
		if (owned_only(p))
			return 0;
		return line_error(p, "%s%s", k == RULE_FOREIGN ? "outside svcnat's rule model: " : "",
				  p->msg);
	}
	if (copy_rule_strings(p, &tmp) < 0)
		return -ENOMEM;
	if (!chain->cap_rules) {
		size_t want = count_run(p, chain->name);

		if (want > 0) {
			chain->rules = reallocarray_z(NULL, want, sizeof(*chain->rules));
			if (!chain->rules)
				return -ENOMEM;
			chain->cap_rules = want;
		}
	}
	r = rs_chain_append(chain);
	if (!r)
		return -ENOMEM;
	*r = tmp;
	return 0;
}

static int do_chain(struct parser *p)
{
	const char *name = p->tok[0] + 1, *policy;
	bool builtin = rs_chain_is_builtin((enum rs_table)p->table, name);

	if (p->ntok < 2 || p->ntok > 3)
		return line_error(p, "expected ':CHAIN POLICY [packets:bytes]'");
	policy = p->tok[1];
	if (p->ntok == 3 && !parse_counters(p->tok[2]))
		return line_error(p, "bad counters '%s'", p->tok[2]);
	if (owned_only(p) && !builtin && !owned_kube_name(name))
		return 0;
	if (builtin ? !streq(policy, "ACCEPT") && !streq(policy, "DROP") : !streq(policy, "-"))
		return line_error(p, "bad policy '%s' for chain '%s'", policy, name);
	if (builtin && !streq(policy, "ACCEPT") && !owned_only(p))
		return line_error(p, "outside svcnat's rule model: policy %s of %s", policy, name);
	if (!valid_name(name, SIZE_MAX))
		return line_error(p, "bad chain name '%s'", name);
	if (!ruleset_add_chain(p->rs, (enum rs_table)p->table, name)) {
		if (errno == ENOMEM)
			return -ENOMEM;
		return line_error(p, "chain '%s': %s", name,
				  errno == EEXIST ? "declared twice" : "name too long");
	}
	return 0;
}

static int do_table(struct parser *p, const char *name)
{
	enum rs_table t;

	if (streq(name, "filter"))
		t = RS_FILTER;
	else if (streq(name, "nat"))
		t = RS_NAT;
	else if (owned_only(p)) {
		p->table = TABLE_SKIP;
		return 0;
	} else
		return line_error(p, "outside svcnat's rule model: table '%s'", name);
	if (p->seen[t])
		return line_error(p, "table '%s' given twice", name);
	p->seen[t] = true;
	p->table = (int)t;
	p->last = NULL;
	return 0;
}

static int do_line(struct parser *p, const char *s, size_t n)
{
	int r;

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n && s[n - 1] == '\r')
		return line_error(p, "carriage return in line");
	if (memchr(s, '\0', n))
		return line_error(p, "NUL byte in line");
	if (n == 0 || s[0] == '#')
		return 0;

	r = tokenize(p, s, n);
	if (r < 0)
		return r;
	if (p->ntok == 0)
		return 0;

	if (p->tok[0][0] == '*') {
		if (p->table != TABLE_NONE)
			return line_error(p, "'%s' before COMMIT", p->tok[0]);
		if (p->ntok != 1 || !p->tok[0][1])
			return line_error(p, "bad table line");
		return do_table(p, p->tok[0] + 1);
	}
	if (p->table == TABLE_NONE)
		return line_error(p, "'%s' outside a table", p->tok[0]);
	if (streq(p->tok[0], "COMMIT")) {
		if (p->ntok != 1)
			return line_error(p, "unexpected '%s' after COMMIT", p->tok[1]);
		p->table = TABLE_NONE;
		p->last = NULL;
		return 0;
	}
	if (p->table == TABLE_SKIP)
		return 0;
	if (p->tok[0][0] == ':')
		return do_chain(p);
	if (p->tok[0][0] == '[' || streq(p->tok[0], "-A"))
		return do_rule(p);
	return line_error(p, "unexpected '%s'", p->tok[0]);
}

/* What a parser owns: the ruleset until it is taken, its buffers. */
static void parser_done(struct parser *p)
{
	ruleset_free(p->rs);
	free(p->tbuf);
	free(p->tok);
}

int ruleset_parse(const char *text, size_t len, unsigned flags, struct ruleset **ret,
		  struct diag_list *diags)
{
	_cleanup_(parser_done) struct parser p = { .flags = flags, .diags = diags,
						   .table = TABLE_NONE };
	size_t off = 0;
	int r = 0;

	p.rs = ruleset_new();
	if (!p.rs)
		return -ENOMEM;
	while (off < len) {
		const char *s = text + off;
		const char *nl = memchr(s, '\n', len - off);
		size_t n = nl ? (size_t)(nl - s) : len - off;

		p.line++;
		p.here = s;
		p.here_len = len - off;
		r = do_line(&p, s, n);
		if (r < 0)
			return r;
		off += n + (nl ? 1 : 0);
	}
	if (p.table != TABLE_NONE) {
		p.line++;
		return line_error(&p, "missing COMMIT at the end");
	}
	/* An empty table is sorted already (and qsort must not see NULL). */
	for (size_t t = 0; t < RS_NTABLES; t++)
		if (!p.rs->t[t].n)
			p.rs->t[t].sorted = true;
	ruleset_sort(p.rs);
	*ret = TAKE_PTR(p.rs);
	return r;
}
