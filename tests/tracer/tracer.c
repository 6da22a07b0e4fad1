/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/tracer.h"
#include "util.h"

#define MAX_DEPTH 64
/* Rule evaluations over all branches of one trace: bounds goto cycles
 * (which never deepen the stack) and statistic fan-out. */
#define MAX_STEPS (4u * 1000 * 1000)

enum hook {
	H_NAT_PREROUTING,
	H_NAT_OUTPUT,
	H_FILTER_INPUT,
	H_FILTER_FORWARD,
	H_FILTER_OUTPUT,
	H_NAT_POSTROUTING,
	H_NAT_INPUT,
	H_DONE,
};

static const struct {
	enum rs_table table;
	const char *chain;
} hooks[] = {
	[H_NAT_PREROUTING] = { RS_NAT, "PREROUTING" },
	[H_NAT_OUTPUT] = { RS_NAT, "OUTPUT" },
	[H_FILTER_INPUT] = { RS_FILTER, "INPUT" },
	[H_FILTER_FORWARD] = { RS_FILTER, "FORWARD" },
	[H_FILTER_OUTPUT] = { RS_FILTER, "OUTPUT" },
	[H_NAT_POSTROUTING] = { RS_NAT, "POSTROUTING" },
	[H_NAT_INPUT] = { RS_NAT, "INPUT" },
};

struct frame {
	const struct rs_chain *chain;
	size_t idx; /* next rule */
};

/* One branch of the trace; copied whole when a statistic match forks. */
struct branch {
	double prob;
	struct ipaddr src, dst;
	uint8_t proto;
	uint16_t dport;
	uint32_t mark;
	bool dnat;
	struct ipaddr dnat_addr;
	uint16_t dnat_port;
	bool masq;
	bool left_filter;     /* masq_marked is final */
	bool masq_marked;
	const char *recent_set;
	const char *last_chain;
	enum hook hook;
	unsigned depth;
	struct frame st[MAX_DEPTH + 1]; /* the built-in chain + 64 jumps */
};

struct tracer {
	const struct ruleset *rs;
	const struct trace_env *env;
	const struct trace_packet *pkt;
	struct branch **work;
	size_t n_work, cap_work;
	struct trace_result res;
	size_t cap_res;
	unsigned long steps;
};

static bool is_local(const struct trace_env *env, const struct ipaddr *a)
{
	size_t i;

	static const uint8_t v6_lo[16] = { [15] = 1 };

	if (a->family == AF_INET && a->u.b[0] == 127)
		return true;
	if (a->family == AF_INET6 && memcmp(a->u.b, v6_lo, 16) == 0)
		return true;
	for (i = 0; i < env->n_local_addrs; i++)
		if (ipaddr_cmp(&env->local_addrs[i], a) == 0)
			return true;
	return false;
}

static uint32_t masq_bit(const struct tracer *t)
{
	return t->env->masq_mark ? t->env->masq_mark : 0x4000;
}

static bool net_match(const struct ipnet *n, bool inv, const struct ipaddr *a)
{
	if (!n->addr.family || (!n->plen && !inv))
		return true;
	return ipnet_contains(n, a) != inv;
}

static int push(struct tracer *t, struct branch *b)
{
	if (GROW(t->work, t->cap_work, t->n_work + 1) < 0)
		return -ENOMEM;
	t->work[t->n_work++] = b;
	return 0;
}

static bool outcome_same(const struct trace_outcome *a, const struct trace_outcome *b)
{
	return a->verdict == b->verdict && a->masquerade == b->masquerade &&
	       a->masq_marked == b->masq_marked &&
	       streq_null(a->recent_set, b->recent_set) && streq_null(a->last_chain, b->last_chain) &&
	       (a->verdict != TRACE_DNAT ||
		(a->dnat_port == b->dnat_port && ipaddr_cmp(&a->dnat_addr, &b->dnat_addr) == 0));
}

static int finish(struct tracer *t, const struct branch *b, enum trace_verdict v)
{
	struct trace_outcome o = {
		.probability = b->prob,
		.verdict = v,
		.masquerade = b->masq,
		.recent_set = b->recent_set,
		.last_chain = b->last_chain,
		.masq_marked = b->left_filter ? b->masq_marked : (b->mark & masq_bit(t)) != 0,
	};
	size_t i;

	if (v == TRACE_ACCEPT && b->dnat)
		o.verdict = TRACE_DNAT;
	if (o.verdict == TRACE_DNAT) {
		o.dnat_addr = b->dnat_addr;
		o.dnat_port = b->dnat_port;
	}
	for (i = 0; i < t->res.n; i++) {
		if (outcome_same(&t->res.o[i], &o)) {
			t->res.o[i].probability += o.probability;
			return 0;
		}
	}
	if (GROW(t->res.o, t->cap_res, t->res.n + 1) < 0)
		return -ENOMEM;
	t->res.o[t->res.n++] = o;
	return 0;
}

/* The hook after b->hook for this packet (routing decided by its dst). */
static enum hook next_hook(const struct tracer *t, const struct branch *b)
{
	switch (b->hook) {
	case H_NAT_PREROUTING:
		return is_local(t->env, &b->dst) ? H_FILTER_INPUT : H_FILTER_FORWARD;
	case H_NAT_OUTPUT:
		return H_FILTER_OUTPUT;
	case H_FILTER_FORWARD:
	case H_FILTER_OUTPUT:
		return H_NAT_POSTROUTING;
	case H_NAT_POSTROUTING:
		/* A locally sent packet to a local address loops back in. */
		return t->pkt->from_local && is_local(t->env, &b->dst) ? H_FILTER_INPUT : H_DONE;
	case H_FILTER_INPUT:
		return H_NAT_INPUT;
	default:
		return H_DONE;
	}
}

enum mres { M_NO, M_YES };

/*
 * Evaluate a rule's matches.  A statistic match forks: the branch where it
 * does not match is queued (its frame already points past this rule) and
 * this branch continues with the matching share.
 */
static int eval_matches(struct tracer *t, struct branch *b, const struct rs_rule *r)
{
	size_t i;

	if (r->proto && r->proto != b->proto)
		return M_NO;
	if (!net_match(&r->src, r->src_inv, &b->src) || !net_match(&r->dst, r->dst_inv, &b->dst))
		return M_NO;
	if (r->in_iface) {
		/* A locally sent packet has no input interface. */
		const char *in = t->pkt->from_local || !t->pkt->in_iface ? "" : t->pkt->in_iface;
		bool hit = r->in_iface_prefix ? strncmp(in, r->in_iface, strlen(r->in_iface)) == 0
					      : strcmp(in, r->in_iface) == 0;

		if (hit == r->in_iface_inv)
			return M_NO;
	}
	for (i = 0; i < r->n_matches && i < RS_MAX_MATCHES; i++) {
		const struct rs_match *m = &r->m[i];
		bool hit;

		switch (m->kind) {
		case RS_M_COMMENT:
			hit = true;
			break;
		case RS_M_PORT:
			/* dport 0 is a bare "-m tcp": any port of the protocol */
			hit = b->proto == r->proto &&
			      (!m->u.port.dport || b->dport == m->u.port.dport ||
			       (m->u.port.dport_max && b->dport >= m->u.port.dport &&
				b->dport <= m->u.port.dport_max));
			break;
		case RS_M_ADDRTYPE: {
			const struct ipaddr *a = m->u.addrtype.src ? &b->src : &b->dst;

			hit = (m->u.addrtype.type & RS_ADDRTYPE_LOCAL) && is_local(t->env, a);
			break;
		}
		case RS_M_MARK:
			hit = (b->mark & m->u.mark.mask) == m->u.mark.value;
			break;
		case RS_M_CONNTRACK: {
			uint16_t st = RS_CT_NEW | (b->dnat ? RS_CT_DNAT : 0);

			hit = (m->u.ct.states & st) != 0;
			break;
		}
		case RS_M_RECENT:
			if (m->u.recent.set) {
				hit = true;
			} else {
				hit = t->env->recent_name && m->u.recent.name &&
				      streq(t->env->recent_name, m->u.recent.name);
			}
			break;
		case RS_M_NFACCT:
			/* counts the packet and always matches */
			hit = true;
			break;
		case RS_M_STATISTIC: {
			double p = m->u.stat.probability;
			struct branch *nb;
			int ret;

			if (m->invert)
				p = 1.0 - p;
			if (p <= 0.0)
				return M_NO;
			if (p >= 1.0)
				continue;
			nb = malloc(sizeof(*nb));
			if (!nb)
				return -ENOMEM;
			*nb = *b;
			nb->prob = b->prob * (1.0 - p);
			ret = push(t, nb);
			if (ret < 0) {
				free(nb);
				return ret;
			}
			b->prob *= p;
			continue;
		}
		default:
			return M_NO;
		}
		if (hit == m->invert)
			return M_NO;
	}
	/* --set records the client only when the whole rule matched (svcnat
	 * puts it last but for the target), and so does --update, which
	 * refreshes the entry it found. */
	for (i = 0; i < r->n_matches && i < RS_MAX_MATCHES; i++)
		if (r->m[i].kind == RS_M_RECENT && !r->m[i].invert &&
		    (r->m[i].u.recent.set || r->m[i].u.recent.update))
			b->recent_set = r->m[i].u.recent.name;
	return M_YES;
}

/* Enter a hook's built-in chain; false when the ruleset lacks it. */
static bool enter_hook(struct tracer *t, struct branch *b)
{
	const struct rs_chain *c = ruleset_find_chain(t->rs, hooks[b->hook].table,
						       hooks[b->hook].chain);

	if (b->hook == H_NAT_POSTROUTING && !b->left_filter) {
		b->left_filter = true;
		b->masq_marked = (b->mark & masq_bit(t)) != 0;
	}
	if (!c)
		return false;
	b->depth = 1;
	b->st[0] = (struct frame){ .chain = c, .idx = 0 };
	return true;
}

/* Run one branch to its end.  Returns 0 or -errno. */
static int run(struct tracer *t, struct branch *b)
{
	for (;;) {
		struct frame *f;
		const struct rs_rule *r;
		const struct rs_chain *c;
		int m;

		if (b->depth == 0) {
			if (b->hook == H_DONE)
				return finish(t, b, TRACE_ACCEPT);
			if (!enter_hook(t, b)) {
				b->hook = next_hook(t, b);
				continue;
			}
		}
		f = &b->st[b->depth - 1];
		if (f->idx >= f->chain->n_rules) {
			/* End of a user chain returns; of a built-in, policy ACCEPT. */
			b->depth--;
			if (b->depth == 0)
				b->hook = next_hook(t, b);
			continue;
		}
		if (++t->steps > MAX_STEPS)
			return -ELOOP;
		r = &f->chain->rules[f->idx++];
		m = eval_matches(t, b, r);
		if (m < 0)
			return m;
		if (m == M_NO)
			continue;

		switch (r->t.kind) {
		case RS_T_JUMP:
		case RS_T_GOTO:
			c = r->t.u.chain ? ruleset_find_chain(t->rs, hooks[b->hook].table, r->t.u.chain) :
					   NULL;
			if (!c)
				return -EINVAL;
			if (r->t.kind == RS_T_JUMP) {
				if (b->depth > MAX_DEPTH)
					return -ELOOP;
				b->depth++;
			}
			b->st[b->depth - 1] = (struct frame){ .chain = c, .idx = 0 };
			break;
		case RS_T_RETURN:
			b->depth--;
			if (b->depth == 0)
				b->hook = next_hook(t, b);
			break;
		case RS_T_ACCEPT:
			b->depth = 0;
			b->hook = next_hook(t, b);
			break;
		case RS_T_DROP:
		case RS_T_REJECT:
			b->last_chain = f->chain->name;
			return finish(t, b, r->t.kind == RS_T_DROP ? TRACE_DROP : TRACE_REJECT);
		case RS_T_DNAT:
			b->dnat = true;
			b->dnat_addr = r->t.u.dnat.addr;
			b->dst = r->t.u.dnat.addr;
			b->dnat_port = r->t.u.dnat.port ? r->t.u.dnat.port : b->dport;
			b->dport = b->dnat_port;
			b->last_chain = f->chain->name;
			b->depth = 0;
			b->hook = next_hook(t, b);
			break;
		case RS_T_MARK: {
			uint32_t mask = r->t.u.mark.op == RS_MARK_OR  ? r->t.u.mark.value :
					r->t.u.mark.op == RS_MARK_XOR ? 0 :
									r->t.u.mark.mask;

			b->mark = (b->mark & ~mask) ^ r->t.u.mark.value;
			break;
		}
		case RS_T_MASQUERADE:
			b->masq = true;
			b->depth = 0;
			b->hook = next_hook(t, b);
			break;
		default:
			/* No target: a counting rule. */
			break;
		}
	}
}

int trace_packet(const struct ruleset *rs, const struct trace_env *env,
		 const struct trace_packet *p, struct trace_result *ret)
{
	struct tracer t = { .rs = rs, .env = env, .pkt = p };
	struct branch *b;
	int r = 0;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->prob = 1.0;
	b->src = p->src;
	b->dst = p->dst;
	b->proto = p->proto;
	b->dport = p->dport;
	b->hook = p->from_local ? H_NAT_OUTPUT : H_NAT_PREROUTING;
	if (push(&t, b) < 0) {
		free(b);
		return -ENOMEM;
	}
	while (t.n_work) {
		b = t.work[--t.n_work];
		if (r >= 0)
			r = run(&t, b);
		free(b);
	}
	free(t.work);
	if (r < 0) {
		trace_result_done(&t.res);
		return r;
	}
	*ret = t.res;
	return 0;
}

void trace_result_done(struct trace_result *r)
{
	if (!r)
		return;
	free(r->o);
	r->o = NULL;
	r->n = 0;
}

double trace_prob_to(const struct trace_result *r, const char *addr, uint16_t port)
{
	struct ipaddr a;
	double sum = 0.0;
	size_t i;

	if (ipaddr_parse(addr, &a) < 0)
		return -1.0;
	for (i = 0; i < r->n; i++)
		if (r->o[i].verdict == TRACE_DNAT && ipaddr_cmp(&r->o[i].dnat_addr, &a) == 0 &&
		    (!port || r->o[i].dnat_port == port))
			sum += r->o[i].probability;
	return sum;
}

double trace_prob_verdict(const struct trace_result *r, enum trace_verdict v)
{
	double sum = 0.0;
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->o[i].verdict == v)
			sum += r->o[i].probability;
	return sum;
}

bool trace_all_masq(const struct trace_result *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->o[i].verdict == TRACE_DNAT && !r->o[i].masquerade)
			return false;
	return true;
}

bool trace_none_masq(const struct trace_result *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->o[i].verdict == TRACE_DNAT && r->o[i].masquerade)
			return false;
	return true;
}

void trace_result_print(const struct trace_result *r, FILE *f)
{
	static const char *const names[] = { "ACCEPT", "DNAT", "REJECT", "DROP" };
	char buf[INET6_ADDRSTRLEN];
	size_t i;

	for (i = 0; i < r->n; i++) {
		const struct trace_outcome *o = &r->o[i];

		fprintf(f, "  %.6f %s", o->probability,
			(unsigned)o->verdict < ARRAY_SIZE(names) ? names[o->verdict] : "?");
		if (o->verdict == TRACE_DNAT)
			fprintf(f, " %s:%u", ipaddr_fmt(&o->dnat_addr, buf, sizeof(buf)),
				o->dnat_port);
		if (o->masquerade)
			fprintf(f, " masquerade");
		else if (o->masq_marked)
			fprintf(f, " masq-marked");
		if (o->recent_set)
			fprintf(f, " recent-set=%s", o->recent_set);
		if (o->last_chain)
			fprintf(f, " (%s)", o->last_chain);
		fputc('\n', f);
	}
}
