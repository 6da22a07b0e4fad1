/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test and benchmark driver for the backends: builds a kube-proxy-shaped
 * ruleset (generated, or parsed from iptables-save text) and runs one
 * backend operation on it, printing the apply_result.
 *
 *   backend-driver [--backend=K] [--lock-path=P] [--lock-wait-ms=N]
 *                  [--restore-cmd=C] [--check-lock] [--race=TABLE=CMD]
 *                  apply|diff|render|cleanup [SPEC]
 *
 * --check-lock: afterwards, fail (exit 3) if the xtables lock is still held
 * by this process.
 * --race=TABLE=CMD (direct and libiptc): run the shell command CMD (another
 * program changing the kernel's tables) once, just before the first commit
 * of TABLE ("filter", "ip6 nat", ...), so that the kernel refuses that
 * commit with EAGAIN and the backend must read and plan again.
 *
 * SPEC: gen:N:M[:VARIANT]  N services x M endpoints; VARIANT v > 0 moves
 *                          service 0's first endpoint by v addresses
 *       fail:N:M           as gen, plus a DNAT rule in a filter chain, which
 *                          the kernel refuses at commit
 *       dangle:N:M         as gen, plus a jump to a chain the plan lacks,
 *                          which the backend refuses before writing
 *       failnat:N:M        as gen, plus a filter rule gen lacks and a REJECT
 *                          rule in a nat chain, which the kernel refuses in
 *                          nat only (REJECT is valid in filter alone): the
 *                          filter table is written before nat is refused
 *       file:PATH          iptables-save text (svcnat --dry-run output); from
 *                          a second *filter on, ip6tables-save text (a
 *                          dual-stack dry-run): then both families are
 *                          applied in one transaction
 *       fail6:PATH         as file:PATH (dual-stack), plus a DNAT rule in the
 *                          ip6 filter table's KUBE-SERVICES, which the kernel
 *                          refuses at commit (in the ip6 part of the batch)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/writer.h"
#include "core/chainname.h"
#include "core/parse.h"
#include "core/render.h"
#include "util.h"

static struct ipaddr v4(uint32_t host)
{
	struct ipaddr a = { .family = AF_INET };

	a.u.v4.s_addr = htonl(host);
	return a;
}

static struct ipnet net(uint32_t host, uint8_t plen)
{
	struct ipnet n = { .addr = v4(host), .plen = plen };

	return n;
}

#define NEED(x)                                                                \
	do {                                                                   \
		if (!(x))                                                      \
			return -ENOMEM;                                        \
	} while (0)

/* text is in the arena already (ruleset_printf), or NULL on ENOMEM. */
static int comment(struct rs_rule *r, const char *text)
{
	struct rs_match *m = rs_rule_add_match(r, RS_M_COMMENT);

	NEED(m && text);
	m->u.comment = text;
	return 0;
}

static int jump(struct rs_chain *from, const char *to, uint16_t ctstates, const char *cmt,
		struct ruleset *rs)
{
	struct rs_rule *r = rs_chain_append(from);

	NEED(r);
	if (ctstates) {
		struct rs_match *m = rs_rule_add_match(r, RS_M_CONNTRACK);

		NEED(m);
		m->u.ct.states = ctstates;
	}
	if (cmt && comment(r, ruleset_strdup(rs, cmt)) < 0)
		return -ENOMEM;
	r->t.kind = RS_T_JUMP;
	NEED(r->t.u.chain = ruleset_strdup(rs, to));
	return 0;
}

static int generate(struct ruleset *rs, unsigned n, unsigned m, unsigned variant, bool fail,
		    bool dangle, bool failnat)
{
	struct rs_chain *pre, *out, *post, *mm, *kpost, *ksvc, *knp, *fin, *ffwd, *fout, *fsvc,
		*fext, *ffw;
	struct rs_rule *r;
	struct rs_match *x;
	uint32_t ep_base = (198u << 24) | (18u << 16) | (64u << 8); /* 198.18.64.0 */
	uint32_t vip_base = (198u << 24) | (19u << 16);             /* 198.19.0.0 */

	NEED(pre = ruleset_add_chain(rs, RS_NAT, "PREROUTING"));
	NEED(out = ruleset_add_chain(rs, RS_NAT, "OUTPUT"));
	NEED(post = ruleset_add_chain(rs, RS_NAT, "POSTROUTING"));
	NEED(mm = ruleset_add_chain(rs, RS_NAT, "KUBE-MARK-MASQ"));
	NEED(kpost = ruleset_add_chain(rs, RS_NAT, "KUBE-POSTROUTING"));
	NEED(ksvc = ruleset_add_chain(rs, RS_NAT, "KUBE-SERVICES"));
	NEED(knp = ruleset_add_chain(rs, RS_NAT, "KUBE-NODEPORTS"));
	NEED(fin = ruleset_add_chain(rs, RS_FILTER, "INPUT"));
	NEED(ffwd = ruleset_add_chain(rs, RS_FILTER, "FORWARD"));
	NEED(fout = ruleset_add_chain(rs, RS_FILTER, "OUTPUT"));
	NEED(fsvc = ruleset_add_chain(rs, RS_FILTER, "KUBE-SERVICES"));
	NEED(fext = ruleset_add_chain(rs, RS_FILTER, "KUBE-EXTERNAL-SERVICES"));
	NEED(ffw = ruleset_add_chain(rs, RS_FILTER, "KUBE-FORWARD"));

	if (jump(pre, "KUBE-SERVICES", 0, "kubernetes service portals", rs) < 0 ||
	    jump(out, "KUBE-SERVICES", 0, "kubernetes service portals", rs) < 0 ||
	    jump(post, "KUBE-POSTROUTING", 0, "kubernetes postrouting rules", rs) < 0 ||
	    jump(fin, "KUBE-EXTERNAL-SERVICES", RS_CT_NEW,
		 "kubernetes externally-visible service portals", rs) < 0 ||
	    jump(ffwd, "KUBE-FORWARD", 0, "kubernetes forwarding rules", rs) < 0 ||
	    jump(ffwd, "KUBE-SERVICES", RS_CT_NEW, "kubernetes service portals", rs) < 0 ||
	    jump(fout, "KUBE-SERVICES", RS_CT_NEW, "kubernetes service portals", rs) < 0)
		return -ENOMEM;

	NEED(r = rs_chain_append(mm));
	r->t.kind = RS_T_MARK;
	r->t.u.mark.op = RS_MARK_OR;
	r->t.u.mark.value = 0x4000;

	NEED(r = rs_chain_append(kpost));
	NEED(x = rs_rule_add_match(r, RS_M_MARK));
	x->invert = true;
	x->u.mark.value = x->u.mark.mask = 0x4000;
	r->t.kind = RS_T_RETURN;
	NEED(r = rs_chain_append(kpost));
	r->t.kind = RS_T_MARK;
	r->t.u.mark.op = RS_MARK_XOR;
	r->t.u.mark.value = 0x4000;
	NEED(r = rs_chain_append(kpost));
	if (comment(r, ruleset_strdup(rs, "kubernetes service traffic requiring SNAT")) < 0)
		return -ENOMEM;
	r->t.kind = RS_T_MASQUERADE;
	r->t.u.masq.random_fully = true;

	NEED(r = rs_chain_append(ffw));
	NEED(x = rs_rule_add_match(r, RS_M_CONNTRACK));
	x->u.ct.states = RS_CT_INVALID;
	r->t.kind = RS_T_DROP;
	NEED(r = rs_chain_append(ffw));
	if (comment(r, ruleset_strdup(rs, "kubernetes forwarding rules")) < 0)
		return -ENOMEM;
	NEED(x = rs_rule_add_match(r, RS_M_MARK));
	x->u.mark.value = x->u.mark.mask = 0x4000;
	r->t.kind = RS_T_ACCEPT;
	NEED(r = rs_chain_append(ffw));
	if (comment(r, ruleset_strdup(rs, "kubernetes forwarding conntrack rule")) < 0)
		return -ENOMEM;
	NEED(x = rs_rule_add_match(r, RS_M_CONNTRACK));
	x->u.ct.states = RS_CT_RELATED | RS_CT_ESTABLISHED;
	r->t.kind = RS_T_ACCEPT;

	for (unsigned i = 0; i < n; i++) {
		char key[64], svc[RS_CHAIN_MAXLEN + 1], ep[32], sep[RS_CHAIN_MAXLEN + 1];
		uint8_t proto = i % 97 == 96 ? IPPROTO_SCTP : i % 7 == 6 ? IPPROTO_UDP : IPPROTO_TCP;
		const char *pn = proto == IPPROTO_TCP ? "tcp" : proto == IPPROTO_UDP ? "udp" : "sctp";
		struct ipaddr vip = v4(vip_base + 10 + i);
		bool affinity = i % 50 == 3;
		unsigned neps = i % 50 == 49 ? 0 : m;
		struct rs_chain *sc;
		char vipbuf[INET6_ADDRSTRLEN];

		snprintf(key, sizeof(key), "ns%u/svc%u:p", i % 100, i);
		ipaddr_fmt(&vip, vipbuf, sizeof(vipbuf));
		if (neps == 0) {
			NEED(r = rs_chain_append(fsvc));
			r->dst = net(vip_base + 10 + i, 32);
			r->proto = proto;
			if (comment(r, ruleset_printf(rs, "%s has no endpoints", key)) < 0)
				return -ENOMEM;
			NEED(x = rs_rule_add_match(r, RS_M_PORT));
			x->u.port.dport = 80;
			r->t.kind = RS_T_REJECT;
			continue;
		}
		chain_name("KUBE-SVC-", key, pn, NULL, svc);
		NEED(sc = ruleset_add_chain(rs, RS_NAT, svc));

		NEED(r = rs_chain_append(ksvc));
		r->dst = net(vip_base + 10 + i, 32);
		r->proto = proto;
		if (comment(r, ruleset_printf(rs, "%s cluster IP", key)) < 0)
			return -ENOMEM;
		NEED(x = rs_rule_add_match(r, RS_M_PORT));
		x->u.port.dport = 80;
		r->t.kind = RS_T_JUMP;
		r->t.u.chain = sc->name;

		if (i % 20 == 5) {
			/* A load-balancer firewall chain, ending in a counting rule. */
			char fw[RS_CHAIN_MAXLEN + 1];
			struct rs_chain *fc;

			chain_name("KUBE-FW-", key, pn, NULL, fw);
			NEED(fc = ruleset_add_chain(rs, RS_NAT, fw));
			NEED(r = rs_chain_append(fc));
			r->src = net((198u << 24) | (18u << 16) | (1u << 8), 25);
			if (comment(r, ruleset_printf(rs, "%s loadbalancer IP", key)) < 0)
				return -ENOMEM;
			r->t.kind = RS_T_JUMP;
			r->t.u.chain = sc->name;
			NEED(r = rs_chain_append(fc));
			if (comment(r, ruleset_printf(rs, "other traffic to %s will be dropped", key)) < 0)
				return -ENOMEM;
			r->t.kind = RS_T_NONE;
			NEED(r = rs_chain_append(ksvc));
			r->dst = net(((198u << 24) | (18u << 16) | (200u << 8)) + i % 250, 32);
			r->proto = proto;
			if (comment(r, ruleset_printf(rs, "%s loadbalancer IP", key)) < 0)
				return -ENOMEM;
			NEED(x = rs_rule_add_match(r, RS_M_PORT));
			x->u.port.dport = 80;
			r->t.kind = RS_T_JUMP;
			r->t.u.chain = fc->name;
		}
		if (i % 4 == 1) {
			NEED(r = rs_chain_append(knp));
			r->proto = proto;
			if (comment(r, ruleset_strdup(rs, key)) < 0)
				return -ENOMEM;
			NEED(x = rs_rule_add_match(r, RS_M_PORT));
			x->u.port.dport = (uint16_t)(30000 + i % 2700);
			r->t.kind = RS_T_JUMP;
			r->t.u.chain = sc->name;
		}

		NEED(r = rs_chain_append(sc));
		r->src = net((198u << 24) | (18u << 16) | (64u << 8), 18);
		r->src_inv = true;
		r->dst = net(vip_base + 10 + i, 32);
		r->proto = proto;
		if (comment(r, ruleset_printf(rs, "%s cluster IP", key)) < 0)
			return -ENOMEM;
		NEED(x = rs_rule_add_match(r, RS_M_PORT));
		x->u.port.dport = 80;
		r->t.kind = RS_T_JUMP;
		r->t.u.chain = mm->name;

		for (unsigned j = 0; j < neps; j++) {
			uint32_t host = ep_base + ((i * m + j) % 65000);
			struct ipaddr a;
			struct rs_chain *ec;
			const char *sepname;

			if (i == 0 && j == 0 && variant)
				host = ep_base + 65000 + variant % 500;
			a = v4(host);
			ipaddr_fmt(&a, ep, sizeof(ep));
			strcat(ep, ":8080");
			chain_name("KUBE-SEP-", key, pn, ep, sep);
			NEED(ec = ruleset_add_chain(rs, RS_NAT, sep));
			sepname = ec->name;

			if (affinity) {
				NEED(r = rs_chain_append(sc));
				if (comment(r, ruleset_printf(rs, "%s -> %s", key, ep)) < 0)
					return -ENOMEM;
				NEED(x = rs_rule_add_match(r, RS_M_RECENT));
				x->u.recent.name = sepname;
				x->u.recent.seconds = 10800;
				x->u.recent.reap = true;
				r->t.kind = RS_T_JUMP;
				r->t.u.chain = sepname;
			}
			NEED(r = rs_chain_append(sc));
			if (comment(r, ruleset_printf(rs, "%s -> %s", key, ep)) < 0)
				return -ENOMEM;
			if (j + 1 < neps) {
				NEED(x = rs_rule_add_match(r, RS_M_STATISTIC));
				x->u.stat.probability = 1.0 / (double)(neps - j);
			}
			r->t.kind = RS_T_JUMP;
			r->t.u.chain = sepname;

			NEED(r = rs_chain_append(ec));
			r->src = net(host, 32);
			if (comment(r, ruleset_strdup(rs, key)) < 0)
				return -ENOMEM;
			r->t.kind = RS_T_JUMP;
			r->t.u.chain = mm->name;
			NEED(r = rs_chain_append(ec));
			r->proto = proto;
			if (comment(r, ruleset_strdup(rs, key)) < 0)
				return -ENOMEM;
			if (affinity) {
				NEED(x = rs_rule_add_match(r, RS_M_RECENT));
				x->u.recent.name = sepname;
				x->u.recent.set = true;
			}
			/* kube-proxy's DNAT rules carry a bare -m tcp/udp/sctp. */
			NEED(x = rs_rule_add_match(r, RS_M_PORT));
			x->u.port.dport = i % 2 ? 0 : 8080;
			r->t.kind = RS_T_DNAT;
			r->t.u.dnat.addr = a;
			r->t.u.dnat.port = 8080;
		}
	}
	NEED(r = rs_chain_append(ksvc));
	if (comment(r, ruleset_strdup(rs, "kubernetes service nodeports; NOTE: this must be the last rule in this chain")) < 0)
		return -ENOMEM;
	NEED(x = rs_rule_add_match(r, RS_M_ADDRTYPE));
	x->u.addrtype.type = RS_ADDRTYPE_LOCAL;
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = knp->name;

	if (fail) {
		NEED(r = rs_chain_append(fext));
		r->proto = IPPROTO_TCP;
		r->t.kind = RS_T_DNAT;
		r->t.u.dnat.addr = v4(ep_base + 1);
	}
	if (failnat) {
		NEED(r = rs_chain_append(fsvc));
		r->dst = net(vip_base + 9, 32);
		r->proto = IPPROTO_TCP;
		if (comment(r, ruleset_strdup(rs, "failnat: a filter rule gen lacks")) < 0)
			return -ENOMEM;
		r->t.kind = RS_T_REJECT;
		NEED(r = rs_chain_append(ksvc));
		r->dst = net(vip_base + 9, 32);
		r->proto = IPPROTO_TCP;
		r->t.kind = RS_T_REJECT;
	}
	if (dangle) {
		NEED(r = rs_chain_append(ksvc));
		r->t.kind = RS_T_JUMP;
		r->t.u.chain = ruleset_strdup(rs, "KUBE-SVC-NOSUCHCHAIN");
		if (!r->t.u.chain)
			return -ENOMEM;
	}
	ruleset_sort(rs);
	return 0;
}

/* --race: a writer that forwards to another and runs a command once,
 * before the first commit of one table. */
struct race_writer {
	struct writer w;
	struct writer_ops ops;
	struct writer *inner;
	char *table;
	const char *cmd;
	bool ran;
};

static struct writer *race_inner(struct writer *w)
{
	return ((struct race_writer *)w)->inner;
}

static int race_prepare(struct writer *w, const struct writer_table *tab,
			const struct ruleset *plan, bool keep, bool *ret_changed,
			struct apply_result *res, struct diag_list *d)
{
	struct writer *in = race_inner(w);

	return in->ops->prepare(in, tab, plan, keep, ret_changed, res, d);
}

static int race_commit(struct writer *w, const struct writer_table *tabs, size_t n,
		       bool *ret_done, struct diag_list *d)
{
	struct race_writer *rw = (struct race_writer *)w;

	for (size_t i = 0; i < n && !rw->ran; i++) {
		if (!streq(writer_table_name(&tabs[i]), rw->table))
			continue;
		rw->ran = true;
		fprintf(stderr, "race: %s\n", rw->cmd);
		if (system(rw->cmd) != 0)
			fprintf(stderr, "race: the command failed\n");
	}
	return rw->inner->ops->commit(rw->inner, tabs, n, ret_done, d);
}

static int race_put_back(struct writer *w, const struct writer_table *tab, struct diag_list *d)
{
	struct writer *in = race_inner(w);

	return in->ops->put_back(in, tab, d);
}

static void race_reset(struct writer *w)
{
	struct writer *in = race_inner(w);

	in->ops->reset(in);
}

static int race_read(struct writer *w, const struct writer_table *tab,
		     const struct ruleset *plan, struct ruleset *out, struct diag_list *d)
{
	struct writer *in = race_inner(w);

	return in->ops->read(in, tab, plan, out, d);
}

static void race_free(struct writer *w)
{
	struct race_writer *rw = (struct race_writer *)w;

	rw->inner->ops->free(rw->inner);
	free(rw->table);
	free(rw);
}

static int race_new(const struct backend_options *o, const char *spec, struct backend **ret,
		    struct diag_list *d)
{
	struct writer_config cfg = { .lock_path = o->lock_path ? o->lock_path : "/run/xtables.lock",
				     .lock_wait_ms = o->lock_wait_ms ? o->lock_wait_ms : 5000 };
	const char *eq = strchr(spec, '=');
	struct race_writer *rw;
	struct writer *in = NULL;
	int r;

	if (!eq || (o->kind != BACKEND_DIRECT && o->kind != BACKEND_LIBIPTC))
		return -EINVAL;
	r = o->kind == BACKEND_DIRECT ? writer_direct_new(&cfg, &in, d)
				      : writer_iptc_new(&cfg, &in, d);
	if (r < 0)
		return r;
	rw = calloc(1, sizeof(*rw));
	if (!rw) {
		in->ops->free(in);
		return -ENOMEM;
	}
	rw->ops = *in->ops;
	rw->ops.prepare = race_prepare;
	rw->ops.commit = race_commit;
	rw->ops.put_back = in->ops->put_back ? race_put_back : NULL;
	rw->ops.reset = race_reset;
	rw->ops.read = race_read;
	rw->ops.free = race_free;
	rw->w.ops = &rw->ops;
	rw->w.cfg = cfg;
	rw->inner = in;
	rw->table = strndup(spec, (size_t)(eq - spec));
	rw->cmd = eq + 1;
	if (!rw->table) {
		race_free(&rw->w);
		return -ENOMEM;
	}
	return backend_new_over(o, &rw->w, ret);
}

/* CPU seconds of this process so far: user + system, and user alone. */
static double cpu_now(double *ret_user)
{
	struct rusage ru;
	double user;

	getrusage(RUSAGE_SELF, &ru);
	user = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	if (ret_user)
		*ret_user = user;
	return user + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* A DNAT rule in ip6 filter KUBE-SERVICES: refused at commit. */
static int add_fail6(struct ruleset *rs6)
{
	struct rs_chain *c = ruleset_find_chain(rs6, RS_FILTER, "KUBE-SERVICES");
	struct rs_rule *r;

	if (!c)
		return -EINVAL;
	NEED(r = rs_chain_append(c));
	r->proto = IPPROTO_TCP;
	r->t.kind = RS_T_DNAT;
	r->t.u.dnat.addr.family = AF_INET6;
	inet_pton(AF_INET6, "2001:2:0:101::1", &r->t.u.dnat.addr.u.v6);
	return 0;
}

/* *ret6: the ip6tables part of a dual-stack file, else NULL. */
static int load_spec(const char *spec, struct ruleset **ret, struct ruleset **ret6, struct diag_list *d)
{
	struct ruleset *rs = NULL;
	unsigned n = 0, m = 0, v = 0;
	bool fail6 = strncmp(spec, "fail6:", 6) == 0;
	int r;

	*ret6 = NULL;
	if (strncmp(spec, "file:", 5) == 0 || fail6) {
		FILE *f = fopen(strchr(spec, ':') + 1, "re");
		_cleanup_free_ char *text = NULL;
		size_t len = 0, cap = 0, got;
		char *six;

		if (!f)
			return -errno;
		do {
			if (GROW(text, cap, len + 65536 + 1) < 0) {
				fclose(f);
				return -ENOMEM;
			}
			got = fread(text + len, 1, 65536, f);
			len += got;
		} while (got > 0);
		fclose(f);
		text[len] = '\0';
		six = len ? strstr(text + 1, "\n*filter\n") : NULL;
		if (six)
			six++;
		r = ruleset_parse(text, six ? (size_t)(six - text) : len, 0, &rs, d);
		if (r < 0)
			return r;
		ruleset_sort(rs);
		if (six) {
			r = ruleset_parse(six, len - (size_t)(six - text), PARSE_IPV6, ret6, d);
			if (r >= 0 && fail6)
				r = add_fail6(*ret6);
			if (r < 0) {
				ruleset_free(rs);
				ruleset_free(*ret6);
				*ret6 = NULL;
				return r;
			}
			ruleset_sort(*ret6);
		} else if (fail6) {
			ruleset_free(rs);
			return -EINVAL;
		}
		*ret = rs;
		return 0;
	}
	if ((strncmp(spec, "gen:", 4) != 0 && strncmp(spec, "fail:", 5) != 0 &&
	     strncmp(spec, "dangle:", 7) != 0 && strncmp(spec, "failnat:", 8) != 0) ||
	    sscanf(strchr(spec, ':') + 1, "%u:%u:%u", &n, &m, &v) < 2)
		return -EINVAL;
	rs = ruleset_new();
	if (!rs)
		return -ENOMEM;
	r = generate(rs, n, m, v, strncmp(spec, "fail:", 5) == 0, spec[0] == 'd',
		     strncmp(spec, "failnat:", 8) == 0);
	if (r < 0) {
		ruleset_free(rs);
		return r;
	}
	*ret = rs;
	return 0;
}

int main(int argc, char **argv)
{
	struct backend_options o = { .kind = BACKEND_LIBIPTC };
	struct backend *b = NULL;
	struct ruleset *rs = NULL, *rs6 = NULL;
	struct diag_list d;
	const char *cmd = NULL, *spec = NULL, *race = NULL;
	bool check_lock = false;
	int r, i, ret = 1;

	diag_list_init(&d);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strncmp(a, "--backend=", 10) == 0) {
			if (backend_kind_parse(a + 10, &o.kind) < 0) {
				fprintf(stderr, "bad backend '%s'\n", a + 10);
				return 2;
			}
		} else if (strncmp(a, "--lock-path=", 12) == 0) {
			o.lock_path = a + 12;
		} else if (strncmp(a, "--lock-wait-ms=", 15) == 0) {
			o.lock_wait_ms = (unsigned)strtoul(a + 15, NULL, 10);
		} else if (strncmp(a, "--restore-cmd=", 14) == 0) {
			o.restore_cmd = a + 14;
		} else if (streq(a, "--check-lock")) {
			check_lock = true;
		} else if (strncmp(a, "--race=", 7) == 0) {
			race = a + 7;
		} else if (!cmd) {
			cmd = a;
		} else if (!spec) {
			spec = a;
		} else {
			fprintf(stderr, "usage: see the header of backend-driver.c\n");
			return 2;
		}
	}
	if (!cmd || (!streq(cmd, "cleanup") && !spec)) {
		fprintf(stderr, "usage: backend-driver [options] apply|diff|render|cleanup [SPEC]\n");
		return 2;
	}
	if (spec) {
		r = load_spec(spec, &rs, &rs6, &d);
		if (r < 0) {
			diag_list_print(&d, stderr);
			fprintf(stderr, "cannot load '%s': %s\n", spec, strerror(-r));
			goto out;
		}
	}
	if (streq(cmd, "render")) {
		ret = render_save(rs, RENDER_ALL, stdout) < 0;
		goto out;
	}
	if (rs6 && !streq(cmd, "apply")) {
		fprintf(stderr, "an ip6tables part is taken by apply only\n");
		ret = 2;
		goto out;
	}
	r = race ? race_new(&o, race, &b, &d) : backend_new(&o, &b, &d);
	if (r < 0)
		goto fail;
	fprintf(stderr, "backend: %s\n", backend_kind_name(backend_kind_of(b)));
	if (streq(cmd, "apply")) {
		struct apply_result res;
		double u0, u1, c0 = cpu_now(&u0), c1;

		r = backend_apply_families(b, rs, rs6, &res, &d);
		if (r < 0)
			goto fail;
		c1 = cpu_now(&u1);
		printf("result: filter=%s nat=%s%s%s%s%s created=%zu replaced=%zu deleted=%zu "
		       "jumps=%zu rules=%zu messages=%zu bytes=%zu seconds=%.3f cpu=%.3f user=%.3f\n",
		       res.committed[RS_FILTER] ? "committed" : "unchanged",
		       res.committed[RS_NAT] ? "committed" : "unchanged", rs6 ? " filter6=" : "",
		       rs6 ? (res.committed6[RS_FILTER] ? "committed" : "unchanged") : "",
		       rs6 ? " nat6=" : "",
		       rs6 ? (res.committed6[RS_NAT] ? "committed" : "unchanged") : "",
		       res.chains_created, res.chains_replaced, res.chains_deleted, res.jumps_added,
		       res.rules_written, res.messages, res.bytes, res.seconds, c1 - c0, u1 - u0);
		ret = 0;
	} else if (streq(cmd, "diff")) {
		r = backend_diff(b, rs, stdout, &d);
		if (r < 0)
			goto fail;
		ret = r;
	} else if (streq(cmd, "cleanup")) {
		r = backend_cleanup(b, &d);
		if (r < 0)
			goto fail;
		ret = 0;
	} else {
		fprintf(stderr, "unknown command '%s'\n", cmd);
		ret = 2;
	}
	goto out;
fail:
	fprintf(stderr, "%s failed: %s\n", cmd, strerror(-r));
	ret = 1;
out:
	diag_list_print(&d, stderr);
	if (check_lock) {
		/* flock() conflicts between open file descriptions of one
		 * process too: this fails if the backend kept the lock. */
		const char *path = o.lock_path ? o.lock_path : "/run/xtables.lock";
		int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);

		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
			fprintf(stderr, "lock: free\n");
		} else {
			fprintf(stderr, "lock: HELD\n");
			ret = 3;
		}
		if (fd >= 0)
			close(fd);
	}
	backend_free(b);
	ruleset_free(rs);
	ruleset_free(rs6);
	diag_list_done(&d);
	return ret;
}
