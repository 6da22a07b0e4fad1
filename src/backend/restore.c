/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The restore writer, for hosts whose iptables is nft-based: read the
 * live tables with iptables-save, write what differs with one
 * `iptables-restore --noflush` run for every table, as kube-proxy does.
 * The tool commits table by table (iptables-nft-restore as well as the
 * legacy one), so a table it committed before refusing a later one is
 * found by saving it again, and put back from the save taken at prepare
 * (with its counters) by one `iptables-restore -c` of that table.
 * Owned chains are declared (":KUBE-X - [0:0]" flushes them) and refilled,
 * stale ones flushed and deleted, and the jump rules in the built-in
 * chains fixed by number ("-D CHAIN N", "-I CHAIN N rule") in the same
 * transaction, so the table never shows a half state.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/run.h"
#include "backend/writer.h"
#include "backend/xt/xtlock.h"
#include "backend/xt/xtsnap.h"
#include "core/owned.h"
#include "core/parse.h"
#include "core/render.h"
#include "util.h"

/* One "-A CHAIN args" line of iptables-save output. */
struct sline {
	char chain[RS_CHAIN_MAXLEN + 4];
	char target[RS_CHAIN_MAXLEN + 4]; /* "" unless -j/-g CHAIN ends the line */
	const char *args;                 /* into the text, up to the newline */
	size_t args_len;
	size_t pos;                       /* 1-based within its chain */
};

struct scan {
	char (*chains)[RS_CHAIN_MAXLEN + 4]; /* declared chains, sorted */
	size_t n_chains, cap_chains;
	struct sline *lines;
	size_t n_lines, cap_lines;
};

static void scan_done(struct scan *s)
{
	free(s->chains);
	free(s->lines);
	memset(s, 0, sizeof(*s));
}

static int chain_name_cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

static bool scan_declared(const struct scan *s, const char *name)
{
	char key[RS_CHAIN_MAXLEN + 4];

	if (!s->n_chains)
		return false;
	snprintf(key, sizeof(key), "%s", name);
	return bsearch(key, s->chains, s->n_chains, sizeof(*s->chains), chain_name_cmp) != NULL;
}

/* Split iptables-save text of one table into declarations and rule lines. */
static int scan_text(const char *text, struct scan *s)
{
	const char *p = text;
	char cur[RS_CHAIN_MAXLEN + 4] = "";
	size_t pos = 0;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (p[0] == ':') {
			size_t n = strcspn(p + 1, " \n");

			if (n > RS_CHAIN_MAXLEN)
				return -EINVAL;
			if (GROW(s->chains, s->cap_chains, s->n_chains + 1) < 0)
				return -ENOMEM;
			memcpy(s->chains[s->n_chains], p + 1, n);
			s->chains[s->n_chains][n] = '\0';
			s->n_chains++;
		} else if (strncmp(p, "-A ", 3) == 0) {
			const char *c = p + 3, *args;
			size_t n = strcspn(c, " \n");
			struct sline *l;

			if (n > RS_CHAIN_MAXLEN)
				return -EINVAL;
			if (GROW(s->lines, s->cap_lines, s->n_lines + 1) < 0)
				return -ENOMEM;
			l = &s->lines[s->n_lines++];
			memset(l, 0, sizeof(*l));
			memcpy(l->chain, c, n);
			if (!streq(l->chain, cur)) {
				snprintf(cur, sizeof(cur), "%s", l->chain);
				pos = 0;
			}
			l->pos = ++pos;
			args = c + n;
			if (*args == ' ')
				args++;
			l->args = args;
			l->args_len = len - (size_t)(args - p);
			/* A jump to a chain has no target options: "-j NAME" ends it. */
			{
				const char *end = p + len, *tok = end;

				while (tok > args && tok[-1] != ' ')
					tok--;
				if (tok - args >= 3 &&
				    (memcmp(tok - 3, "-j ", 3) == 0 || memcmp(tok - 3, "-g ", 3) == 0) &&
				    (tok - 3 == args || tok[-4] == ' ') && end > tok &&
				    (size_t)(end - tok) <= RS_CHAIN_MAXLEN)
					memcpy(l->target, tok, (size_t)(end - tok));
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	if (s->n_chains > 1)
		qsort(s->chains, s->n_chains, sizeof(*s->chains), chain_name_cmp);
	return 0;
}

/* --- text building --- */

struct sbuf {
	char *p;
	size_t len, cap;
	char *rule; /* render scratch */
	size_t rule_cap;
};

static int sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (GROW(b->p, b->cap, b->len + n + 1) < 0)
		return -ENOMEM;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static int sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || GROW(b->p, b->cap, b->len + (size_t)n + 1) < 0)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

/* Render r into b->rule; returns it or NULL. */
static const char *sb_render(struct sbuf *b, const struct rs_rule *r)
{
	int n;

	if (!b->rule_cap) {
		b->rule = malloc(512);
		if (!b->rule)
			return NULL;
		b->rule_cap = 512;
	}
	n = render_rule(r, b->rule, b->rule_cap);
	if (n < 0)
		return NULL;
	if ((size_t)n >= b->rule_cap) {
		char *nr = realloc(b->rule, (size_t)n + 1);

		if (!nr)
			return NULL;
		b->rule = nr;
		b->rule_cap = (size_t)n + 1;
		render_rule(r, b->rule, b->rule_cap);
	}
	return b->rule;
}

/* --- reading --- */

/* One table's part of a transaction. */
struct rtable {
	char *text;  /* what commit sends: "*table ... COMMIT" */
	char *seen;  /* the save prepare read, without counters */
	char *saved; /* the same with counters (keep), for put_back */
	bool committed;
};

struct restore_writer {
	struct writer w;
	/* [WRITER_IPV4]: iptables-X-restore/-save, [WRITER_IPV6]: ip6tables'
	 * (NULL when the host has none: the writer is then IPv4 only). */
	char *restore_cmd[2];
	char *save_cmd[2];
	struct rtable t[2][RS_NTABLES];
};

static int save_table(struct restore_writer *b, enum writer_family fam, enum rs_table t,
		      bool counters, char **ret, struct diag_list *d)
{
	const char *argv[] = { b->save_cmd[fam], "-t", rs_table_name(t), counters ? "-c" : NULL,
			       NULL };
	const struct writer_table tab = { fam, t };
	_cleanup_free_ char *err = NULL;
	char *out = NULL;
	int status, r;

	r = backend_run(argv, NULL, 0, &out, &err, &status);
	if (r < 0) {
		diag_add(d, DIAG_ERROR, b->save_cmd[fam], writer_table_name(&tab), NULL,
			 "cannot run: %s", strerror(-r));
		return r;
	}
	if (status != 0) {
		err[strcspn(err, "\n")] = '\0';
		diag_add(d, DIAG_ERROR, b->save_cmd[fam], writer_table_name(&tab), NULL,
			 "exit status %d: %s", status, err[0] ? err : "(no message)");
		free(out);
		return -EIO;
	}
	*ret = out;
	return 0;
}

/*
 * iptables-save -c text without its counters, as iptables-save prints it
 * without -c: "[p:b] -A ..." loses its prefix, ":CHAIN P [p:b]" keeps
 * them (iptables-save prints chain counters either way).
 */
static char *strip_counters(const char *in)
{
	char *out = malloc(strlen(in) + 1), *o = out;

	if (!out)
		return NULL;
	for (const char *p = in; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);

		if (p[0] == '[') {
			const char *sp = memchr(p, ' ', len);

			if (sp && sp[-1] == ']') {
				len -= (size_t)(sp + 1 - p);
				p = sp + 1;
			}
		}
		memcpy(o, p, len);
		o += len;
		p += len;
	}
	*o = '\0';
	return out;
}

/*
 * Keep only what svcnat owns: owned chains, and in built-in chains the
 * rules that jump to an owned (or planned) chain.
 */
static int filter_owned(const struct ruleset *in, const struct ruleset *plan, struct ruleset *out)
{
	for (int t = 0; t < RS_NTABLES; t++) {
		const struct rs_chains *cs = &in->t[t];

		for (size_t i = 0; i < cs->n; i++) {
			const struct rs_chain *c = cs->chains[i];
			struct rs_chain *n;
			size_t k = 0;

			if (!c->builtin && !owned_chain_ours(plan, (enum rs_table)t, c->name))
				continue;
			n = ruleset_copy_chain(out, c);
			if (!n)
				return -ENOMEM;
			if (!c->builtin)
				continue;
			for (size_t j = 0; j < n->n_rules; j++) {
				const struct rs_target *tg = &n->rules[j].t;

				if ((tg->kind == RS_T_JUMP || tg->kind == RS_T_GOTO) && tg->u.chain &&
				    owned_chain_ours(plan, (enum rs_table)t, tg->u.chain))
					n->rules[k++] = n->rules[j];
			}
			n->n_rules = k;
		}
	}
	return 0;
}

static unsigned parse_flags(enum writer_family fam)
{
	return PARSE_OWNED_ONLY | (fam == WRITER_IPV6 ? PARSE_IPV6 : 0);
}

static int parse_live(const char *text, enum writer_family fam, const struct ruleset *plan,
		      struct ruleset **ret, struct diag_list *d)
{
	struct ruleset *parsed = NULL, *out;
	int r;

	r = ruleset_parse(text, strlen(text), parse_flags(fam), &parsed, d);
	if (r < 0)
		return r;
	out = ruleset_new();
	if (!out) {
		ruleset_free(parsed);
		return -ENOMEM;
	}
	r = filter_owned(parsed, plan, out);
	ruleset_free(parsed);
	if (r < 0) {
		ruleset_free(out);
		return r;
	}
	*ret = out;
	return 0;
}

static int restore_read(struct writer *w, const struct writer_table *tab,
			const struct ruleset *plan, struct ruleset *out, struct diag_list *d)
{
	struct restore_writer *rw = (struct restore_writer *)w;
	_cleanup_free_ char *text = NULL;
	struct ruleset *live = NULL;
	int r;

	if (!rw->save_cmd[tab->family])
		return -EAFNOSUPPORT;
	r = save_table(rw, tab->family, tab->table, false, &text, d);
	if (r < 0)
		return r;
	r = ruleset_parse(text, strlen(text), parse_flags(tab->family), &live, d);
	if (r < 0)
		return r;
	r = filter_owned(live, plan, out);
	ruleset_free(live);
	return r;
}

/* --- applying --- */

struct rsync {
	struct restore_writer *b;
	enum writer_family fam;
	enum rs_table t;
	const char *table;
	const struct ruleset *plan;
	struct apply_result *res;
	struct diag_list *d;
	struct scan sc;
	struct ruleset *live; /* NULL when the live rules could not be parsed */
	struct sbuf decl, rules, tail;
	bool changed;
};

static bool chain_matches_live(struct rsync *s, const struct rs_chain *pc)
{
	const struct rs_chain *lc = s->live ? ruleset_find_chain(s->live, s->t, pc->name) : NULL;

	if (!lc || lc->n_rules != pc->n_rules)
		return false;
	for (size_t i = 0; i < pc->n_rules; i++)
		if (!owned_rule_same(&lc->rules[i], &pc->rules[i]))
			return false;
	return true;
}

static int put_chain(struct rsync *s, const struct rs_chain *pc)
{
	int r = sb_printf(&s->decl, ":%s - [0:0]\n", pc->name);

	for (size_t i = 0; r >= 0 && i < pc->n_rules; i++) {
		const char *txt = sb_render(&s->rules, &pc->rules[i]);

		if (!txt)
			return -ENOMEM;
		r = sb_printf(&s->tail, "-A %s %s\n", pc->name, txt);
		s->res->rules_written++;
	}
	return r;
}

struct live_lines {
	struct sline *const *ours;
	char *const *ptxt;
};

static bool live_line_same(void *ctx, size_t i, size_t j)
{
	const struct live_lines *ll = ctx;
	const struct sline *l = ll->ours[i];

	return strlen(ll->ptxt[j]) == l->args_len && memcmp(ll->ptxt[j], l->args, l->args_len) == 0;
}

/* A NULL-terminated vector of strings and the strings. */
static void strv_free(char **v)
{
	for (char **s = v; *s; s++)
		free(*s);
	free(v);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free)

/* The built-in chain's jump rules, as owned_jumps_match() decides. */
static int fix_jumps(struct rsync *s, const char *builtin, struct sbuf *dels, struct sbuf *ins)
{
	const struct rs_chain *pc = ruleset_find_chain(s->plan, s->t, builtin);
	size_t np = pc ? pc->n_rules : 0, n_ours = 0, n_del = 0;
	_cleanup_(strv_freep) char **ptxt = calloc(np + 1, sizeof(char *));
	_cleanup_free_ long *kpos = calloc(np + 1, sizeof(long));
	_cleanup_free_ struct sline **ours = calloc(s->sc.n_lines + 1, sizeof(*ours));
	_cleanup_free_ long *match = calloc(s->sc.n_lines + 1, sizeof(long));
	_cleanup_free_ size_t *del = calloc(s->sc.n_lines + 1, sizeof(size_t));
	struct live_lines ll = { ours, ptxt };
	size_t cursor = 1, inserted = 0;
	int r = 0;

	if (!ptxt || !kpos || !ours || !match || !del)
		return -ENOMEM;
	for (size_t j = 0; j < np; j++) {
		const char *txt = sb_render(&s->rules, &pc->rules[j]);

		if (!txt || !(ptxt[j] = strdup(txt)))
			return -ENOMEM;
	}
	for (size_t i = 0; i < s->sc.n_lines; i++) {
		struct sline *l = &s->sc.lines[i];

		if (streq(l->chain, builtin) && l->target[0] &&
		    owned_chain_ours(s->plan, s->t, l->target))
			ours[n_ours++] = l;
	}
	/* kpos first holds the live jump each plan jump is... */
	r = owned_jumps_match(n_ours, np, live_line_same, &ll, match, kpos);
	if (r <= 0)
		return r;
	for (size_t k = 0; k < n_ours; k++)
		if (match[k] < 0)
			del[n_del++] = ours[k]->pos;
	/* ...then its position once the deletions are done. */
	for (size_t j = 0; j < np; j++) {
		size_t before = 0, pos;

		if (kpos[j] < 0)
			continue;
		pos = ours[kpos[j]]->pos;
		for (size_t x = 0; x < n_del; x++)
			if (del[x] < pos)
				before++;
		kpos[j] = (long)(pos - before);
	}
	r = 0;
	for (size_t x = n_del; r >= 0 && x-- > 0;) {
		r = sb_printf(dels, "-D %s %zu\n", builtin, del[x]);
		s->changed = true;
	}
	for (size_t j = 0; r >= 0 && j < np; j++) {
		if (kpos[j] >= 0) {
			cursor = (size_t)kpos[j] + inserted + 1;
			continue;
		}
		r = sb_printf(ins, "-I %s %zu %s\n", builtin, cursor, ptxt[j]);
		cursor++;
		inserted++;
		s->res->jumps_added++;
		s->res->rules_written++;
		s->changed = true;
	}
	return r;
}

static bool stale_referenced(struct rsync *s, const char *name)
{
	for (size_t i = 0; i < s->sc.n_lines; i++) {
		const struct sline *l = &s->sc.lines[i];

		if (streq(l->target, name) && !rs_chain_is_builtin(s->t, l->chain) &&
		    !owned_chain_ours(s->plan, s->t, l->chain))
			return true;
	}
	return false;
}

/*
 * Run restore_cmd with text on its stdin: args "--noflush" for a sync,
 * "-c" for a put-back.  -EAGAIN: a table changed under it; -EBUSY: the
 * xtables lock stayed taken; -EIO: refused (diag naming `what`).
 */
static int run_restore(struct restore_writer *b, enum writer_family fam, const char *arg,
		       const char *what, const char *text, size_t len, struct diag_list *d)
{
	char wait[16];
	const char *cmd = b->restore_cmd[fam];
	const char *argv[] = { cmd, arg, "-w", wait, NULL };
	const char *lock = b->w.cfg.lock_path ? b->w.cfg.lock_path : XTLOCK_DEFAULT_PATH;
	_cleanup_free_ char *err = NULL;
	int status, r;

	snprintf(wait, sizeof(wait), "%u", (b->w.cfg.lock_wait_ms + 999) / 1000);
	setenv("XTABLES_LOCKFILE", lock, 1);
	r = backend_run(argv, text, len, NULL, &err, &status);
	if (r < 0) {
		diag_add(d, DIAG_ERROR, cmd, what, NULL, "cannot run: %s", strerror(-r));
		return r;
	}
	if (status == 0)
		return 0;
	if (strstr(err, "xtables lock")) {
		diag_add(d, DIAG_ERROR, cmd, what, NULL,
			 "could not take the xtables lock %s within %s s (another iptables "
			 "writer holds it)", lock, wait);
		return -EBUSY;
	}
	/* iptables-restore's own message for a table changed under it. */
	if (strstr(err, "Resource temporarily unavailable"))
		return -EAGAIN;
	for (char *p = err; *p; p++)
		if (*p == '\n' && p[1])
			*p = ';';
	err[strcspn(err, "\n")] = '\0';
	diag_add(d, DIAG_ERROR, cmd, what, NULL, "exit status %d: %s", status,
		 err[0] ? err : "(no message)");
	return -EIO;
}

static void sb_done(struct sbuf *b)
{
	free(b->p);
	free(b->rule);
}

/* Read the table and build the text that makes it equal the plan. */
static int sync_table(struct rsync *s, bool keep, bool *ret_changed)
{
	const struct rs_chains *cs = &s->plan->t[s->t];
	struct rtable *rt = &s->b->t[s->fam][s->t];
	const char *text;
	_cleanup_(sb_done) struct sbuf dels = { 0 }, ins = { 0 }, stale = { 0 }, all = { 0 };
	struct diag_list pd;
	int r;

	*ret_changed = false;
	r = save_table(s->b, s->fam, s->t, keep, keep ? &rt->saved : &rt->seen, s->d);
	if (r < 0)
		return r;
	if (keep && !(rt->seen = strip_counters(rt->saved)))
		return -ENOMEM;
	text = rt->seen;
	r = scan_text(text, &s->sc);
	if (r < 0)
		return r;
	/* A live rule the parser rejects only means that chain is rewritten. */
	diag_list_init(&pd);
	if (parse_live(text, s->fam, s->plan, &s->live, &pd) < 0)
		s->live = NULL;
	diag_list_done(&pd);

	for (size_t i = 0; i < cs->n; i++) {
		const struct rs_chain *pc = cs->chains[i];
		bool exists = scan_declared(&s->sc, pc->name);

		if (pc->builtin || (exists && chain_matches_live(s, pc)))
			continue;
		r = put_chain(s, pc);
		if (r < 0)
			return r;
		if (exists)
			s->res->chains_replaced++;
		else
			s->res->chains_created++;
		s->changed = true;
	}
	for (size_t i = 0; i < s->sc.n_chains; i++) {
		const char *name = s->sc.chains[i];

		if (rs_chain_is_builtin(s->t, name) || !owned_chain(s->t, name) ||
		    ruleset_find_chain(s->plan, s->t, name))
			continue;
		if (stale_referenced(s, name)) {
			const struct rs_chain *lc =
				s->live ? ruleset_find_chain(s->live, s->t, name) : NULL;

			diag_add(s->d, DIAG_WARNING, s->b->restore_cmd[s->fam], s->table, name,
				 "not deleted: a rule of another program still jumps to it");
			if (lc && lc->n_rules == 0)
				continue;
			r = sb_printf(&s->decl, ":%s - [0:0]\n", name);
		} else {
			r = sb_printf(&s->decl, ":%s - [0:0]\n", name);
			if (r >= 0)
				r = sb_printf(&stale, "-X %s\n", name);
			s->res->chains_deleted++;
		}
		if (r < 0)
			return r;
		s->changed = true;
	}
	for (size_t i = 0; i < s->sc.n_chains; i++) {
		if (!rs_chain_is_builtin(s->t, s->sc.chains[i]))
			continue;
		r = fix_jumps(s, s->sc.chains[i], &dels, &ins);
		if (r < 0)
			return r;
	}
	if (!s->changed)
		return r;
	if ((r = sb_printf(&all, "*%s\n", s->table)) < 0 ||
	    (s->decl.len && (r = sb_add(&all, s->decl.p, s->decl.len)) < 0) ||
	    (s->tail.len && (r = sb_add(&all, s->tail.p, s->tail.len)) < 0) ||
	    (dels.len && (r = sb_add(&all, dels.p, dels.len)) < 0) ||
	    (ins.len && (r = sb_add(&all, ins.p, ins.len)) < 0) ||
	    (stale.len && (r = sb_add(&all, stale.p, stale.len)) < 0) ||
	    (r = sb_printf(&all, "COMMIT\n")) < 0)
		return r;
	rt->text = TAKE_PTR(all.p);
	*ret_changed = true;
	return r;
}

static void rsync_done(struct rsync *s)
{
	scan_done(&s->sc);
	ruleset_free(s->live);
	free(s->decl.p);
	free(s->rules.p);
	free(s->rules.rule);
	free(s->tail.p);
}

static void rtable_done(struct rtable *rt)
{
	free(rt->text);
	free(rt->seen);
	free(rt->saved);
	memset(rt, 0, sizeof(*rt));
}

static int restore_prepare(struct writer *w, const struct writer_table *tab,
			   const struct ruleset *plan, bool keep, bool *ret_changed,
			   struct apply_result *res, struct diag_list *d)
{
	struct restore_writer *rw = (struct restore_writer *)w;
	struct rsync s = { .b = rw, .plan = plan, .res = res, .d = d };
	int r;

	if (!rw->restore_cmd[tab->family])
		return -EAFNOSUPPORT;
	s.fam = tab->family;
	s.t = tab->table;
	s.table = rs_table_name(tab->table); /* the "*table" line too */
	rtable_done(&rw->t[tab->family][tab->table]);
	r = sync_table(&s, keep, ret_changed);
	rsync_done(&s);
	return r;
}

/* After a refused run: did the tool commit this table before it stopped? */
static bool restore_landed(struct restore_writer *rw, const struct writer_table *tab,
			   struct diag_list *d)
{
	const struct rtable *rt = &rw->t[tab->family][tab->table];
	_cleanup_free_ char *now = NULL;
	struct diag_list sd;
	bool same;

	diag_list_init(&sd);
	same = save_table(rw, tab->family, tab->table, false, &now, &sd) >= 0 && rt->seen &&
	       streq(now, rt->seen);
	if (!now)
		diag_list_move(d, &sd);
	diag_list_done(&sd);
	/* Unknown counts as landed: the driver then puts it back. */
	return !same;
}

/* One restore run for the tables of one family (idx: their indexes in tabs). */
static int commit_family(struct restore_writer *rw, const struct writer_table *tabs,
			 const size_t *idx, size_t n, bool *ret_done, struct diag_list *d)
{
	struct sbuf all = { 0 };
	int r = 0;

	for (size_t i = 0; i < n && r >= 0; i++) {
		const char *text = rw->t[tabs[idx[i]].family][tabs[idx[i]].table].text;

		if (!text) {
			free(all.p);
			return -EINVAL;
		}
		r = sb_add(&all, text, strlen(text));
	}
	if (r >= 0)
		r = run_restore(rw, tabs[idx[0]].family, "--noflush",
				n == 1 ? writer_table_name(&tabs[idx[0]]) : NULL, all.p, all.len, d);
	free(all.p);
	for (size_t i = 0; i < n; i++) {
		const struct writer_table *t = &tabs[idx[i]];

		/* The tool stops at the table it cannot commit: the last one
		 * sent is never in when it fails. */
		ret_done[idx[i]] = r >= 0 || (i + 1 < n && restore_landed(rw, t, d));
		rw->t[t->family][t->table].committed = ret_done[idx[i]];
	}
	return r;
}

/*
 * iptables-restore and ip6tables-restore are two tools: one run each, the
 * family of the last table (the one the driver did not keep) last, so
 * whatever the first run committed can be put back if the second fails.
 */
static int restore_commit(struct writer *w, const struct writer_table *tabs, size_t n,
			  bool *ret_done, struct diag_list *d)
{
	struct restore_writer *rw = (struct restore_writer *)w;
	enum writer_family last = n ? tabs[n - 1].family : WRITER_IPV4;
	size_t idx[2][8], cnt[2] = { 0, 0 };
	int r = 0;

	if (n > ARRAY_SIZE(idx[0]))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		ret_done[i] = false;
		idx[tabs[i].family == last][cnt[tabs[i].family == last]++] = i;
	}
	if (cnt[0])
		r = commit_family(rw, tabs, idx[0], cnt[0], ret_done, d);
	if (r >= 0 && cnt[1])
		r = commit_family(rw, tabs, idx[1], cnt[1], ret_done, d);
	return r;
}

static int restore_put_back(struct writer *w, const struct writer_table *tab, struct diag_list *d)
{
	struct restore_writer *rw = (struct restore_writer *)w;
	const struct rtable *rt = &rw->t[tab->family][tab->table];

	if (!rt->committed || !rt->saved)
		return -EINVAL;
	/* Without --noflush the tool replaces the whole table by the save,
	 * counters included (-c). */
	return run_restore(rw, tab->family, "-c", writer_table_name(tab), rt->saved,
			   strlen(rt->saved), d);
}

static void restore_reset(struct writer *w)
{
	struct restore_writer *rw = (struct restore_writer *)w;

	for (size_t f = 0; f < 2; f++)
		for (size_t i = 0; i < RS_NTABLES; i++)
			rtable_done(&rw->t[f][i]);
}

static void restore_free(struct writer *w)
{
	struct restore_writer *rw = (struct restore_writer *)w;

	if (!w)
		return;
	restore_reset(w);
	for (size_t f = 0; f < 2; f++) {
		free(rw->restore_cmd[f]);
		free(rw->save_cmd[f]);
	}
	free(rw);
}

#define RESTORE_OPS                                                                          \
	.name = "restore", .one_commit = true, .prepare = restore_prepare,                    \
	.commit = restore_commit, .put_back = restore_put_back, .reset = restore_reset,       \
	.read = restore_read, .free = restore_free

/* Without the host's ip6tables tools: iptables only. */
static const struct writer_ops restore_ops = { RESTORE_OPS, .ipv6 = false };
static const struct writer_ops restore_ops6 = { RESTORE_OPS, .ipv6 = true };

/* iptables-X-restore -> iptables-X-save, keeping any directory part. */
static char *save_for(const char *restore)
{
	const char *base = strrchr(restore, '/');
	const char *hit;
	size_t n = strlen(restore);
	char *s;

	base = base ? base + 1 : restore;
	hit = strstr(base, "-restore");
	s = malloc(n + 1);
	if (!s)
		return NULL;
	if (!hit) {
		snprintf(s, n + 1, "%s", restore);
		return s;
	}
	snprintf(s, n + 1, "%.*s-save%s", (int)(hit - restore), restore, hit + strlen("-restore"));
	return s;
}

/* iptables-X-restore -> ip6tables-X-restore (basename "iptables..." only). */
static char *ip6_for(const char *cmd)
{
	const char *base = strrchr(cmd, '/');
	char *s = NULL;

	base = base ? base + 1 : cmd;
	if (strncmp(base, "iptables", strlen("iptables")) != 0)
		return NULL;
	if (asprintf(&s, "%.*sip6%s", (int)(base - cmd), cmd, base + strlen("ip")) < 0)
		return NULL;
	return s;
}

int writer_restore_new(const struct writer_config *cfg, struct writer **ret, struct diag_list *d)
{
	struct restore_writer *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->w.ops = &restore_ops;
	b->w.cfg = *cfg;
	if (cfg->restore_cmd) {
		b->restore_cmd[WRITER_IPV4] = strdup(cfg->restore_cmd);
	} else {
		const char *argv[] = { "iptables", "--version", NULL };
		_cleanup_free_ char *out = NULL;
		int status = 127;
		bool legacy;

		if (backend_run(argv, NULL, 0, &out, NULL, &status) < 0 || status != 0) {
			diag_add(d, DIAG_ERROR, "backend", NULL, NULL,
				 "the restore backend needs the iptables command, which cannot "
				 "be run");
			free(b);
			return -ENOENT;
		}
		legacy = strstr(out, "(legacy)") != NULL;
		b->restore_cmd[WRITER_IPV4] =
			strdup(legacy ? "iptables-legacy-restore" : "iptables-nft-restore");
	}
	b->save_cmd[WRITER_IPV4] =
		b->restore_cmd[WRITER_IPV4] ? save_for(b->restore_cmd[WRITER_IPV4]) : NULL;
	if (!b->save_cmd[WRITER_IPV4]) {
		restore_free(&b->w);
		return -ENOMEM;
	}
	b->restore_cmd[WRITER_IPV6] = ip6_for(b->restore_cmd[WRITER_IPV4]);
	b->save_cmd[WRITER_IPV6] = ip6_for(b->save_cmd[WRITER_IPV4]);
	if (b->restore_cmd[WRITER_IPV6] && b->save_cmd[WRITER_IPV6]) {
		const char *argv[] = { b->save_cmd[WRITER_IPV6], "--version", NULL };
		int status = 127;
		/* The tools alone do not say the kernel runs IPv6: ask it.  A
		 * missing ip6_tables is not a reason here, as the legacy tools
		 * load the module themselves. */
		const char *why = xt_ip6_tables_missing();

		if (why && !strstr(why, "no IPv6"))
			why = NULL;
		if (why)
			diag_add(d, DIAG_NOTE, "restore", NULL, NULL,
				 "%s: svcnat writes the iptables tables only, IPv6 services are "
				 "not programmed",
				 why);
		else if (backend_run(argv, NULL, 0, NULL, NULL, &status) >= 0 && status == 0)
			b->w.ops = &restore_ops6;
	}
	if (b->w.ops != &restore_ops6) {
		free(b->restore_cmd[WRITER_IPV6]);
		free(b->save_cmd[WRITER_IPV6]);
		b->restore_cmd[WRITER_IPV6] = b->save_cmd[WRITER_IPV6] = NULL;
	}
	b->w.cfg.restore_cmd = b->restore_cmd[WRITER_IPV4];
	*ret = &b->w;
	return 0;
}
