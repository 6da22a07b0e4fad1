/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one transaction every writer goes through (writer.h): the lock, the
 * plan check, prepare every table before the first commit, commit, put
 * back what a refused later table would leave half done, the bounded
 * EAGAIN retry, and the messages that say what the kernel holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/detect.h"
#include "backend/diff.h"
#include "backend/keepfile.h"
#include "backend/writer.h"
#include "backend/xt/xtlock.h"
#include "core/owned.h"
#include "util.h"

#define DEFAULT_COMMIT_RETRIES 3
#define READ_RETRIES 3

struct backend {
	enum backend_kind kind;
	struct backend_options o; /* strings point into the copies below */
	char *lock_path;
	char *restore_cmd;
	char *runtime_dir;
	struct writer *w;
};

/* The tables, in the order they are prepared and committed: the IPv4 nat
 * table, as a rule the largest, last, so it never has to be kept for a
 * put-back.  The IPv6 ones take part when the sync has an IPv6 plan and
 * the writer can write ip6tables (writer_ops.ipv6): all four or none. */
static const struct writer_table tables[] = {
	{ WRITER_IPV4, RS_FILTER },
	{ WRITER_IPV6, RS_FILTER },
	{ WRITER_IPV6, RS_NAT },
	{ WRITER_IPV4, RS_NAT },
};
#define N_TABLES ARRAY_SIZE(tables)

/* The same with ip6 nat last, for a sync whose IPv6 nat plan is the larger
 * (an IPv6-only or mostly IPv6 cluster). */
static const struct writer_table tables_ip6_nat_last[N_TABLES] = {
	{ WRITER_IPV4, RS_FILTER },
	{ WRITER_IPV6, RS_FILTER },
	{ WRITER_IPV4, RS_NAT },
	{ WRITER_IPV6, RS_NAT },
};

/* The two plans of a sync (plan[WRITER_IPV6] NULL: IPv4 only) and the
 * order of its tables. */
struct plans {
	const struct ruleset *plan[2];
	const struct writer_table *tables;
};

/* The rules of rs's nat table, counted up to a little past `limit`: every
 * chain is a cache miss at 100,000 chains, and only the larger one matters. */
static size_t nat_rules(const struct ruleset *rs, size_t limit)
{
	const struct rs_chains *cs = &rs->t[RS_NAT];
	size_t n = 0;

	for (size_t i = 0; i < cs->n && n <= limit; i++)
		n += cs->chains[i]->n_rules;
	return n;
}

/* The larger nat table last: the one a writer need not keep (a second
 * copy of it, read for a put-back, cost an IPv6-only sync at 10,000 x 10
 * a third more peak memory through libiptc). */
static const struct writer_table *table_order(const struct ruleset *rs, const struct ruleset *rs6)
{
	size_t n6 = rs6 ? nat_rules(rs6, SIZE_MAX) : 0;

	return rs6 && n6 > nat_rules(rs, n6) ? tables_ip6_nat_last : tables;
}

static bool table_on(const struct plans *ps, size_t i)
{
	return ps->plan[ps->tables[i].family] != NULL;
}

/* The last table of the sync: the one never kept for a put-back. */
static size_t last_on(const struct plans *ps)
{
	size_t last = 0;

	for (size_t i = 0; i < N_TABLES; i++)
		if (table_on(ps, i))
			last = i;
	return last;
}

int backend_kind_parse(const char *s, enum backend_kind *ret)
{
	if (!s)
		return -EINVAL;
	if (streq(s, "auto"))
		*ret = BACKEND_AUTO;
	else if (streq(s, "libiptc"))
		*ret = BACKEND_LIBIPTC;
	else if (streq(s, "direct"))
		*ret = BACKEND_DIRECT;
	else if (streq(s, "restore"))
		*ret = BACKEND_RESTORE;
	else if (streq(s, "nft"))
		*ret = BACKEND_NFT;
	else
		return -EINVAL;
	return 0;
}

const char *backend_kind_name(enum backend_kind k)
{
	switch (k) {
	case BACKEND_AUTO:
		return "auto";
	case BACKEND_LIBIPTC:
		return "libiptc";
	case BACKEND_RESTORE:
		return "restore";
	case BACKEND_DIRECT:
		return "direct";
	case BACKEND_NFT:
		return "nft";
	}
	return "unknown";
}

/* --- backend objects --- */

static int backend_alloc(const struct backend_options *o, struct backend **ret)
{
	struct backend *b = calloc(1, sizeof(*b));
	const char *dir = keepfile_dir(o ? o->runtime_dir : NULL);

	if (!b)
		return -ENOMEM;
	if (o)
		b->o = *o;
	b->lock_path = strdup(o && o->lock_path ? o->lock_path : XTLOCK_DEFAULT_PATH);
	b->restore_cmd = o && o->restore_cmd ? strdup(o->restore_cmd) : NULL;
	b->runtime_dir = dir ? strdup(dir) : NULL;
	if (!b->lock_path || (o && o->restore_cmd && !b->restore_cmd) || (dir && !b->runtime_dir)) {
		backend_free(b);
		return -ENOMEM;
	}
	b->o.lock_path = b->lock_path;
	b->o.restore_cmd = b->restore_cmd;
	b->o.runtime_dir = b->runtime_dir ? b->runtime_dir : "";
	if (!b->o.lock_wait_ms)
		b->o.lock_wait_ms = XTLOCK_DEFAULT_WAIT_MS;
	if (!o || !o->commit_retries)
		b->o.commit_retries = DEFAULT_COMMIT_RETRIES;
	*ret = b;
	return 0;
}

int backend_new(const struct backend_options *o, struct backend **ret, struct diag_list *d)
{
	struct backend *b;
	enum backend_kind kind = o ? o->kind : BACKEND_AUTO;
	struct writer_config cfg;
	int r;

	r = backend_alloc(o, &b);
	if (r < 0)
		return r;
	if (kind == BACKEND_AUTO) {
		r = detect_backend_kind(&kind);
		if (r < 0) {
			diag_add(d, DIAG_ERROR, "backend", NULL, NULL,
				 "cannot tell which iptables this host uses: %s", strerror(-r));
			backend_free(b);
			return r;
		}
	}
	b->kind = kind;
	b->o.kind = kind;
	cfg = (struct writer_config){ .lock_path = b->o.lock_path,
				      .lock_wait_ms = b->o.lock_wait_ms,
				      .restore_cmd = b->o.restore_cmd,
				      .keep_dir = b->runtime_dir,
				      .verbose = b->o.verbose,
				      .threads = b->o.threads,
				      .par = b->o.par };
	if (kind == BACKEND_NFT && (!o || o->kind == BACKEND_AUTO)) {
		/* auto: restore stays the fallback where the kernel's nf_tables
		 * cannot be used in process (but not for a missing capability,
		 * which restore lacks too). */
		struct diag_list why;

		diag_list_init(&why);
		r = writer_nft_new(&cfg, &b->w, &why);
		if (r == -EPERM || r == -EACCES)
			diag_list_move(d, &why);
		else if (r < 0)
			diag_add(d, DIAG_NOTE, "backend", NULL, NULL,
				 "the nft writer is unavailable (%s); using iptables-restore",
				 why.n ? why.items[0].msg : strerror(-r));
		diag_list_done(&why);
		if (r == -EPERM || r == -EACCES) {
			backend_free(b);
			return r;
		}
		if (r < 0)
			b->kind = b->o.kind = kind = BACKEND_RESTORE;
	}
	r = b->w                     ? 0
	    : kind == BACKEND_LIBIPTC ? writer_iptc_new(&cfg, &b->w, d)
	    : kind == BACKEND_DIRECT  ? writer_direct_new(&cfg, &b->w, d)
	    : kind == BACKEND_NFT     ? writer_nft_new(&cfg, &b->w, d)
				      : writer_restore_new(&cfg, &b->w, d);
	if (r < 0) {
		backend_free(b);
		return r;
	}
	*ret = b;
	return 0;
}

int backend_new_over(const struct backend_options *o, struct writer *w, struct backend **ret)
{
	int r = backend_alloc(o, ret);

	if (r < 0) {
		w->ops->free(w);
		return r;
	}
	(*ret)->kind = o ? o->kind : BACKEND_AUTO;
	(*ret)->w = w;
	return 0;
}

void backend_free(struct backend *b)
{
	if (!b)
		return;
	if (b->w)
		b->w->ops->free(b->w);
	free(b->lock_path);
	free(b->restore_cmd);
	free(b->runtime_dir);
	free(b);
}

enum backend_kind backend_kind_of(const struct backend *b)
{
	return b->kind;
}

/* --- the transaction --- */

DEFINE_TRIVIAL_CLEANUP_FUNC(struct ruleset *, ruleset_free)

enum after {
	AFTER_NOTHING,  /* nothing was committed */
	AFTER_PUT_BACK, /* what was committed is back as it was */
	AFTER_STUCK,    /* some table keeps the new rules */
};

/*
 * After a refused commit: put back, newest first, every table this
 * attempt committed, and say plainly what the kernel holds now.
 */
static enum after put_back(struct backend *b, const struct plans *ps,
			   const struct writer_table *chg, bool *done, size_t n, struct diag_list *d)
{
	const struct writer_ops *ops = b->w->ops;
	enum after a = AFTER_NOTHING;
	char what[256];
	size_t at = 0;

	for (size_t k = n; k-- > 0;) {
		if (!done[k])
			continue;
		if (ops->put_back && ops->put_back(b->w, &chg[k], d) >= 0) {
			done[k] = false;
			diag_add(d, DIAG_NOTE, ops->name, writer_table_name(&chg[k]), NULL,
				 "already written; put back as it was (rules and counters)");
			if (a == AFTER_NOTHING)
				a = AFTER_PUT_BACK;
		} else {
			a = AFTER_STUCK;
		}
	}
	if (a != AFTER_STUCK)
		return a;
	what[0] = '\0';
	for (size_t i = 0; i < N_TABLES; i++) {
		bool is_new = false;

		if (!table_on(ps, i))
			continue;

		for (size_t k = 0; k < n; k++)
			if (done[k] && chg[k].family == ps->tables[i].family &&
			    chg[k].table == ps->tables[i].table)
				is_new = true;
		at += (size_t)snprintf(what + at, at < sizeof(what) ? sizeof(what) - at : 0,
				       "%s%s %s", at ? ", " : "", writer_table_name(&ps->tables[i]),
				       is_new ? "holds the new rules (putting it back failed)"
					      : "keeps its previous rules");
	}
	diag_add(d, DIAG_ERROR, ops->name, NULL, NULL, "the tables are half written: %s", what);
	return a;
}

/*
 * One attempt: prepare every table (writing nothing), then commit the
 * changed ones; on a refusal put back what was committed.  *ret_after:
 * what the kernel holds after a failure.  *ret_table: the table of an
 * -EAGAIN (NULL: one of several committed together).
 */
static int transaction(struct backend *b, const struct plans *ps, struct apply_result *res,
		       enum after *ret_after, const char **ret_table, struct diag_list *d)
{
	const struct writer_ops *ops = b->w->ops;
	struct writer_table chg[N_TABLES];
	bool done[N_TABLES] = { false };
	size_t n = 0, k, last = last_on(ps);
	int r = 0;

	*ret_after = AFTER_NOTHING;
	for (size_t i = 0; i < N_TABLES; i++) {
		bool changed = false;

		double t0, enc;

		if (!table_on(ps, i))
			continue;
		t0 = monotonic_seconds();
		enc = res->encode_seconds;
		*ret_table = writer_table_name(&ps->tables[i]);
		r = ops->prepare(b->w, &ps->tables[i], ps->plan[ps->tables[i].family], i != last,
				 &changed, res, d);
		res->read_seconds += monotonic_seconds() - t0 - (res->encode_seconds - enc);
		if (r < 0)
			return r;
		if (changed)
			chg[n++] = ps->tables[i];
	}
	double tw = monotonic_seconds();

	if (ops->one_commit && n) {
		*ret_table = NULL;
		r = ops->commit(b->w, chg, n, done, d);
	} else {
		for (k = 0; k < n && r >= 0; k++) {
			*ret_table = writer_table_name(&chg[k]);
			r = ops->commit(b->w, &chg[k], 1, &done[k], d);
		}
	}
	res->write_seconds = monotonic_seconds() - tw;
	if (r < 0)
		*ret_after = put_back(b, ps, chg, done, n, d);
	for (k = 0; k < n; k++) {
		if (chg[k].family == WRITER_IPV4)
			res->committed[chg[k].table] = done[k];
		else
			res->committed6[chg[k].table] = done[k];
	}
	return r < 0 ? r : 0;
}

/* A failed apply: what the kernel holds now, said once.  Returns r. */
static int refused(const struct writer_ops *ops, enum after after, struct apply_result *res,
		   struct diag_list *d, int r)
{
	res->partial = after == AFTER_STUCK;
	if (after == AFTER_NOTHING)
		diag_add(d, DIAG_ERROR, ops->name, NULL, NULL,
			 "nothing was written; the kernel keeps its previous rules");
	else if (after == AFTER_PUT_BACK)
		diag_add(d, DIAG_ERROR, ops->name, NULL, NULL, "the kernel keeps its previous rules");
	return r;
}

static int drive(struct backend *b, const struct plans *ps, struct apply_result *res,
		 struct diag_list *d)
{
	const struct writer_ops *ops = b->w->ops;
	_cleanup_close_ int lock = -1;
	double t0 = monotonic_seconds();
	enum after after = AFTER_NOTHING;
	const char *table = NULL;
	int r;

	memset(res, 0, sizeof(*res));
	for (size_t i = 0; i < N_TABLES; i++) {
		if (!table_on(ps, i))
			continue;
		r = owned_check_targets(ps->plan[ps->tables[i].family], ps->tables[i].table,
					b->o.par, b->o.threads, d);
		if (r < 0)
			return refused(ops, after, res, d, r);
	}
	if (ops->needs_xtables_lock) {
		r = xtlock_take(b->o.lock_path, b->o.lock_wait_ms, &lock, d);
		if (r < 0)
			return refused(ops, after, res, d, r);
	}
	for (unsigned attempt = 0;; attempt++) {
		memset(res, 0, sizeof(*res));
		ops->reset(b->w);
		r = transaction(b, ps, res, &after, &table, d);
		ops->reset(b->w);
		if (r != -EAGAIN || after == AFTER_STUCK)
			break;
		if (attempt >= b->o.commit_retries) {
			diag_add(d, DIAG_ERROR, ops->name, table, NULL,
				 "another program kept changing the table%s while svcnat wrote it; "
				 "gave up after %u retries",
				 table ? "" : "s", b->o.commit_retries);
			break;
		}
		diag_add(d, DIAG_NOTE, ops->name, table, NULL,
			 "the table%s changed while svcnat wrote it; reading it again "
			 "(retry %u of %u)", table ? "" : "s", attempt + 1, b->o.commit_retries);
	}
	if (r < 0)
		return refused(ops, after, res, d, r);
	res->seconds = monotonic_seconds() - t0;
	return 0;
}

bool backend_has_ipv6(const struct backend *b)
{
	return b && b->w->ops->ipv6;
}

size_t backend_kept_bytes(const struct backend *b)
{
	return b && b->w->ops->kept_bytes ? b->w->ops->kept_bytes(b->w) : 0;
}

int backend_apply_families(struct backend *b, const struct ruleset *rs,
			   const struct ruleset *rs6, struct apply_result *res,
			   struct diag_list *d)
{
	struct apply_result tmp;
	struct plans ps = { { rs, rs6 }, NULL };

	if (!b || !rs || (rs6 && !b->w->ops->ipv6))
		return -EINVAL;
	ps.tables = table_order(rs, rs6);
	return drive(b, &ps, res ? res : &tmp, d);
}

int backend_apply(struct backend *b, const struct ruleset *rs, struct apply_result *res,
		  struct diag_list *d)
{
	return backend_apply_families(b, rs, NULL, res, d);
}

int backend_cleanup(struct backend *b, struct diag_list *d)
{
	_cleanup_(ruleset_freep) struct ruleset *empty = NULL;
	struct apply_result res;

	if (!b)
		return -EINVAL;
	empty = ruleset_new();
	if (!empty)
		return -ENOMEM;
	/* Syncing to an empty plan removes every owned chain and jump rule
	 * and nothing else, in ip6tables too when the writer writes it. */
	return backend_apply_families(b, empty, b->w->ops->ipv6 ? empty : NULL, &res, d);
}

/* --- --diff --- */

static int diff_family(struct backend *b, enum writer_family fam, const struct ruleset *rs,
		       FILE *out, struct diag_list *d)
{
	_cleanup_(ruleset_freep) struct ruleset *live = NULL;
	int r = 0;

	live = ruleset_new();
	if (!live)
		return -ENOMEM;
	for (size_t i = 0; i < N_TABLES && r >= 0; i++) {
		if (tables[i].family != fam)
			continue;
		for (unsigned attempt = 0;; attempt++) {
			r = b->w->ops->read(b->w, &tables[i], rs, live, d);
			if (r != -EAGAIN || attempt >= READ_RETRIES)
				break;
		}
	}
	if (r < 0)
		return r;
	ruleset_sort(live);
	return diff_print(live, rs, out);
}

int backend_diff_families(struct backend *b, const struct ruleset *rs, const struct ruleset *rs6,
			  FILE *out, struct diag_list *d)
{
	int r, r6 = 0;

	if (!b || !rs || !out || (rs6 && !b->w->ops->ipv6))
		return -EINVAL;
	r = diff_family(b, WRITER_IPV4, rs, out, d);
	if (r >= 0 && rs6) {
		/* ip6tables' lines after a marker line of their own. */
		if (fputs("# ip6tables\n", out) < 0)
			return -EIO;
		r6 = diff_family(b, WRITER_IPV6, rs6, out, d);
		if (r6 < 0)
			return r6;
	}
	return r < 0 ? r : (r || r6);
}

int backend_diff(struct backend *b, const struct ruleset *rs, FILE *out, struct diag_list *d)
{
	return backend_diff_families(b, rs, NULL, out, d);
}
