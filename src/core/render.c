/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/render.h"
#include "util.h"

/*
 * A bounded writer that keeps counting past the end of its buffer, so one
 * pass both writes and measures (snprintf semantics).  `sep` puts a blank
 * before every part but the first, as iptables-save joins a rule's options.
 */
struct wbuf {
	char *p;
	size_t len;
	size_t pos;
	bool started;
};

static void put_mem(struct wbuf *w, const char *s, size_t n)
{
	if (w->pos < w->len) {
		size_t room = w->len - w->pos;

		memcpy(w->p + w->pos, s, n < room ? n : room);
	}
	w->pos += n;
}

static void put_char(struct wbuf *w, char c)
{
	if (w->pos < w->len)
		w->p[w->pos] = c;
	w->pos++;
}

static void put_str(struct wbuf *w, const char *s)
{
	put_mem(w, s, strlen(s));
}

static void sep(struct wbuf *w)
{
	if (w->started)
		put_char(w, ' ');
	w->started = true;
}

/* A part of the rule: blank-separated from the previous one. */
static void part(struct wbuf *w, const char *s)
{
	sep(w);
	put_str(w, s);
}

static void put_u32(struct wbuf *w, uint32_t v)
{
	char tmp[10];
	size_t n = 0;

	do {
		tmp[sizeof(tmp) - ++n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put_mem(w, tmp + sizeof(tmp) - n, n);
}

static void put_hex(struct wbuf *w, uint32_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[10];
	size_t n = 0;

	do {
		tmp[sizeof(tmp) - ++n] = digits[v & 0xf];
		v >>= 4;
	} while (v);
	tmp[sizeof(tmp) - ++n] = 'x';
	tmp[sizeof(tmp) - ++n] = '0';
	put_mem(w, tmp + sizeof(tmp) - n, n);
}

static void put_ipv4(struct wbuf *w, const uint8_t *b)
{
	int i;

	for (i = 0; i < 4; i++) {
		if (i)
			put_char(w, '.');
		put_u32(w, b[i]);
	}
}

static void put_addr(struct wbuf *w, const struct ipaddr *a)
{
	char buf[INET6_ADDRSTRLEN];

	if (a->family == AF_INET) {
		put_ipv4(w, a->u.b);
		return;
	}
	put_str(w, ipaddr_fmt(a, buf, sizeof(buf)));
}

/* The network as iptables-save prints it: host bits cleared, "/plen". */
static void put_net(struct wbuf *w, const struct ipnet *n)
{
	struct ipaddr a = n->addr;
	unsigned bytes = a.family == AF_INET ? 4 : 16;
	unsigned plen = n->plen > bytes * 8 ? bytes * 8 : n->plen;
	unsigned i;

	for (i = 0; i < bytes; i++) {
		unsigned bit = i * 8;

		if (bit >= plen)
			a.u.b[i] = 0;
		else if (plen - bit < 8)
			a.u.b[i] &= (uint8_t)(0xff << (8 - (plen - bit)));
	}
	put_addr(w, &a);
	put_char(w, '/');
	put_u32(w, plen);
}

/* Protocol names iptables-save prints without a lookup. */
static const char *proto_str(uint8_t proto, char *buf, size_t len)
{
	switch (proto) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_SCTP:
		return "sctp";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_UDPLITE:
		return "udplite";
	case IPPROTO_ESP:
		return "esp";
	case IPPROTO_AH:
		return "ah";
	default:
		snprintf(buf, len, "%u", proto);
		return buf;
	}
}

static void put_quoted(struct wbuf *w, const char *s)
{
	static const char plain[] = "_-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	size_t n = strspn(s, plain);
	const char *p;

	if (n > 0 && s[n] == '\0') {
		put_mem(w, s, n);
		return;
	}
	put_char(w, '"');
	for (p = strpbrk(s, "\"\\'"); p; p = strpbrk(s, "\"\\'")) {
		put_mem(w, s, (size_t)(p - s));
		put_char(w, '\\');
		put_char(w, *p);
		s = p + 1;
	}
	put_str(w, s);
	put_char(w, '"');
}

static void put_inv(struct wbuf *w, bool inv)
{
	if (inv)
		part(w, "!");
}

/* Names in the order libxt_addrtype prints them (bit order). */
static const char *const addrtype_names[] = {
	"UNSPEC", "UNICAST", "LOCAL", "BROADCAST", "ANYCAST", "MULTICAST",
	"BLACKHOLE", "UNREACHABLE", "PROHIBIT", "THROW", "NAT", "XRESOLVE",
};

static void put_list(struct wbuf *w, unsigned bits, const char *const *names,
		     const unsigned *vals, size_t n)
{
	bool first = true;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!(bits & vals[i]))
			continue;
		if (!first)
			put_char(w, ',');
		put_str(w, names[i]);
		first = false;
	}
}

static void put_addrtype(struct wbuf *w, uint16_t type)
{
	unsigned vals[ARRAY_SIZE(addrtype_names)];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(vals); i++)
		vals[i] = 1u << i;
	put_list(w, type, addrtype_names, vals, ARRAY_SIZE(vals));
}

/* libxt_conntrack's order; UNTRACKED is not in the model. */
static const char *const ct_names[] = { "INVALID", "NEW", "RELATED", "ESTABLISHED", "SNAT", "DNAT" };
static const unsigned ct_vals[] = { RS_CT_INVALID, RS_CT_NEW, RS_CT_RELATED, RS_CT_ESTABLISHED,
				    RS_CT_SNAT, RS_CT_DNAT };

static void put_match(struct wbuf *w, const struct rs_rule *r, const struct rs_match *m)
{
	char pbuf[8];

	switch (m->kind) {
	case RS_M_COMMENT:
		part(w, "-m comment --comment ");
		put_quoted(w, m->u.comment ? m->u.comment : "");
		break;
	case RS_M_PORT:
		part(w, "-m ");
		put_str(w, proto_str(r->proto, pbuf, sizeof(pbuf)));
		/* dport 0: a bare "-m tcp", as kube-proxy's DNAT rules have. */
		if (!m->u.port.dport)
			break;
		put_inv(w, m->invert);
		part(w, "--dport ");
		put_u32(w, m->u.port.dport);
		if (m->u.port.dport_max) {
			put_str(w, ":");
			put_u32(w, m->u.port.dport_max);
		}
		break;
	case RS_M_ADDRTYPE:
		part(w, "-m addrtype");
		put_inv(w, m->invert);
		part(w, m->u.addrtype.src ? "--src-type " : "--dst-type ");
		put_addrtype(w, m->u.addrtype.type);
		break;
	case RS_M_MARK:
		part(w, "-m mark");
		put_inv(w, m->invert);
		part(w, "--mark ");
		put_hex(w, m->u.mark.value);
		if (m->u.mark.mask != UINT32_MAX) {
			put_char(w, '/');
			put_hex(w, m->u.mark.mask);
		}
		break;
	case RS_M_CONNTRACK:
		part(w, "-m conntrack");
		put_inv(w, m->invert);
		part(w, "--ctstate ");
		put_list(w, m->u.ct.states, ct_names, ct_vals, ARRAY_SIZE(ct_vals));
		break;
	case RS_M_STATISTIC: {
		/* kube-proxy's precision ("%0.10f"); iptables-save shows the
		 * kernel's fixed-point value with 11 digits instead. */
		char num[32];

		part(w, "-m statistic --mode random");
		put_inv(w, m->invert);
		part(w, "--probability ");
		snprintf(num, sizeof(num), "%0.10f", m->u.stat.probability);
		put_str(w, num);
		break;
	}
	case RS_M_RECENT:
		part(w, "-m recent");
		put_inv(w, m->invert);
		part(w, m->u.recent.set ? "--set" : m->u.recent.update ? "--update" : "--rcheck");
		if (m->u.recent.seconds) {
			part(w, "--seconds ");
			put_u32(w, m->u.recent.seconds);
		}
		if (m->u.recent.reap)
			part(w, "--reap");
		part(w, "--name ");
		put_str(w, m->u.recent.name ? m->u.recent.name : "DEFAULT");
		part(w, m->u.recent.ipv6 ? "--mask " RECENT_MASK6 " --rsource"
					 : "--mask 255.255.255.255 --rsource");
		break;
	case RS_M_NFACCT:
		/* Two spaces before the name, as libxt_nfacct's save prints it
		 * (kube-proxy writes one; iptables-restore reads either). */
		part(w, "-m nfacct --nfacct-name  ");
		put_str(w, m->u.nfacct.name ? m->u.nfacct.name : "");
		break;
	default:
		break;
	}
}

static void put_target(struct wbuf *w, const struct rs_target *t)
{
	switch (t->kind) {
	case RS_T_JUMP:
	case RS_T_GOTO:
		part(w, t->kind == RS_T_JUMP ? "-j " : "-g ");
		put_str(w, t->u.chain ? t->u.chain : "");
		break;
	case RS_T_ACCEPT:
		part(w, "-j ACCEPT");
		break;
	case RS_T_DROP:
		part(w, "-j DROP");
		break;
	case RS_T_RETURN:
		part(w, "-j RETURN");
		break;
	case RS_T_REJECT:
		part(w, t->u.reject.icmp6 ? "-j REJECT --reject-with icmp6-port-unreachable"
					  : "-j REJECT --reject-with icmp-port-unreachable");
		break;
	case RS_T_DNAT:
		part(w, "-j DNAT --to-destination ");
		/* ip6tables-save brackets an IPv6 address only before a port. */
		if (t->u.dnat.addr.family == AF_INET6 && t->u.dnat.port)
			put_char(w, '[');
		put_addr(w, &t->u.dnat.addr);
		if (t->u.dnat.addr.family == AF_INET6 && t->u.dnat.port)
			put_char(w, ']');
		if (t->u.dnat.port) {
			put_char(w, ':');
			put_u32(w, t->u.dnat.port);
		}
		break;
	case RS_T_MARK: {
		/* The kernel keeps only (value, mask) and iptables-save prints
		 * every MARK as --set-xmark: --or-mark v is v/v, --xor-mark v
		 * is v/0. */
		uint32_t mask = t->u.mark.op == RS_MARK_OR    ? t->u.mark.value :
				t->u.mark.op == RS_MARK_XOR   ? 0 :
								t->u.mark.mask;

		part(w, "-j MARK --set-xmark ");
		put_hex(w, t->u.mark.value);
		put_char(w, '/');
		put_hex(w, mask);
		break;
	}
	case RS_T_MASQUERADE:
		part(w, "-j MASQUERADE");
		if (t->u.masq.random_fully)
			part(w, "--random-fully");
		break;
	default:
		break;
	}
}

static void put_rule(struct wbuf *w, const struct rs_rule *r)
{
	char pbuf[8];
	size_t i, n;

	if (r->src.addr.family && (r->src.plen || r->src_inv)) {
		put_inv(w, r->src_inv);
		part(w, "-s ");
		put_net(w, &r->src);
	}
	if (r->dst.addr.family && (r->dst.plen || r->dst_inv)) {
		put_inv(w, r->dst_inv);
		part(w, "-d ");
		put_net(w, &r->dst);
	}
	if (r->in_iface) {
		/* iptables-save order: -s, -d, -i, -o, -p */
		put_inv(w, r->in_iface_inv);
		part(w, "-i ");
		put_str(w, r->in_iface);
		if (r->in_iface_prefix)
			put_str(w, "+");
	}
	if (r->proto) {
		part(w, "-p ");
		put_str(w, proto_str(r->proto, pbuf, sizeof(pbuf)));
	}
	n = r->n_matches < RS_MAX_MATCHES ? r->n_matches : RS_MAX_MATCHES;
	for (i = 0; i < n; i++)
		put_match(w, r, &r->m[i]);
	put_target(w, &r->t);
}

static int clamp_len(size_t n)
{
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

int render_rule(const struct rs_rule *r, char *buf, size_t len)
{
	struct wbuf w = { .p = buf, .len = len };

	put_rule(&w, r);
	if (len)
		buf[w.pos < len ? w.pos : len - 1] = '\0';
	return clamp_len(w.pos);
}

int render_quote(const char *s, char *buf, size_t len)
{
	struct wbuf w = { .p = buf, .len = len };

	put_quoted(&w, s);
	if (len)
		buf[w.pos < len ? w.pos : len - 1] = '\0';
	return clamp_len(w.pos);
}

/* --- whole ruleset --- */

#define OUT_SIZE (256 * 1024)

struct out {
	FILE *f;
	char *buf;
	size_t used;
	int err;
};

static void out_flush(struct out *o)
{
	if (o->used && !o->err && fwrite(o->buf, 1, o->used, o->f) != o->used)
		o->err = errno ? -errno : -EIO;
	o->used = 0;
}

/*
 * Write prefix, name, the rule (if any), suffix and "\n": straight into
 * the buffer when it fits, else after a flush, else (a line longer than
 * the buffer) through a temporary allocation.
 */
static void out_line(struct out *o, const char *prefix, const char *name, const struct rs_rule *r,
		     const char *suffix)
{
	struct wbuf w;
	int attempt;

	for (attempt = 0; attempt < 2; attempt++) {
		w = (struct wbuf){ .p = o->buf + o->used, .len = OUT_SIZE - o->used };
		put_str(&w, prefix);
		put_str(&w, name);
		if (r) {
			w.started = true;
			put_rule(&w, r);
		}
		put_str(&w, suffix);
		put_char(&w, '\n');
		if (w.pos <= w.len) {
			o->used += w.pos;
			return;
		}
		out_flush(o);
	}

	/* Longer than the whole buffer (huge comment): render it apart. */
	{
		_cleanup_free_ char *big = malloc(w.pos);
		size_t need = w.pos;

		if (!big) {
			if (!o->err)
				o->err = -ENOMEM;
			return;
		}
		w = (struct wbuf){ .p = big, .len = need };
		put_str(&w, prefix);
		put_str(&w, name);
		if (r) {
			w.started = true;
			put_rule(&w, r);
		}
		put_str(&w, suffix);
		put_char(&w, '\n');
		if (!o->err && fwrite(big, 1, need, o->f) != need)
			o->err = errno ? -errno : -EIO;
	}
}

static const char *const builtin_filter[] = { "INPUT", "FORWARD", "OUTPUT" };
static const char *const builtin_nat[] = { "PREROUTING", "INPUT", "OUTPUT", "POSTROUTING" };

static int chain_name_cmp(const void *a, const void *b)
{
	return strcmp((*(struct rs_chain *const *)a)->name, (*(struct rs_chain *const *)b)->name);
}

static int render_table(const struct ruleset *rs, enum rs_table t, unsigned flags, struct out *o)
{
	const struct rs_chains *cs = &rs->t[t];
	const char *const *bi = t == RS_NAT ? builtin_nat : builtin_filter;
	size_t n_bi = t == RS_NAT ? ARRAY_SIZE(builtin_nat) : ARRAY_SIZE(builtin_filter);
	_cleanup_free_ struct rs_chain **user = NULL;
	size_t n_user = 0, i, j;

	/* iptables-save order: every built-in chain in hook order (declared
	 * even when svcnat has no rules there), then user chains by name. */
	user = reallocarray_z(NULL, cs->n, sizeof(*user));
	if (!user)
		return -ENOMEM;
	for (i = 0; i < cs->n; i++)
		if (!rs_chain_is_builtin(t, cs->chains[i]->name))
			user[n_user++] = cs->chains[i];
	if (!cs->sorted)
		qsort_safe(user, n_user, sizeof(*user), chain_name_cmp);

	out_line(o, "*", rs_table_name(t), NULL, "");
	for (i = 0; i < n_bi; i++)
		out_line(o, ":", bi[i], NULL, " ACCEPT [0:0]");
	for (i = 0; i < n_user; i++)
		out_line(o, ":", user[i]->name, NULL, " - [0:0]");

	if (!(flags & RENDER_NO_BUILTIN_RULES)) {
		for (i = 0; i < n_bi; i++) {
			const struct rs_chain *c = ruleset_find_chain(rs, t, bi[i]);

			if (!c)
				continue;
			for (j = 0; j < c->n_rules; j++)
				out_line(o, "-A ", c->name, &c->rules[j], "");
		}
	}
	for (i = 0; i < n_user; i++)
		for (j = 0; j < user[i]->n_rules; j++)
			out_line(o, "-A ", user[i]->name, &user[i]->rules[j], "");
	out_line(o, "COMMIT", "", NULL, "");
	return 0;
}

int render_save(const struct ruleset *rs, unsigned flags, FILE *f)
{
	static const enum rs_table order[] = { RS_FILTER, RS_NAT };
	struct out o = { .f = f };
	size_t i;
	int r = 0;

	o.buf = malloc(OUT_SIZE);
	if (!o.buf)
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(order) && r >= 0; i++) {
		if (!(flags & (1u << order[i])) || !rs->t[order[i]].n)
			continue;
		r = render_table(rs, order[i], flags, &o);
	}
	out_flush(&o);
	free(o.buf);
	if (r < 0)
		return r;
	if (o.err)
		return o.err;
	if (fflush(f) != 0)
		return errno ? -errno : -EIO;
	return 0;
}
