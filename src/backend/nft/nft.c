/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The nf_tables writer: svcnat's chains in tables ip filter, ip nat,
 * ip6 filter and ip6 nat, written over netlink in iptables-nft's and
 * ip6tables-nft's encoding (nftenc.c), every table in one batch
 * (nftbatch.c), only what differs (nftdiff.c).
 *
 * The live state is read once and kept: while the ruleset generation is
 * the one svcnat's last commit produced, nobody else has written and the
 * kept state is the kernel's, so a sync with no change costs one GETGEN
 * and sends nothing.  Any other generation means another program wrote
 * (anything, in any table): read the tables again.  Each family is read
 * when a sync first needs it (with that family's plan), and only at the
 * generation the other one was read at.  The batch carries the generation
 * it was planned against; the kernel refuses it (ERESTART) if the ruleset
 * moved since, which is reported as -EAGAIN.
 *
 * A restart need not read the tables either: the state is kept in a file
 * (nftkeep.h, keepfile.h) when the process ends, with the generation it
 * is the kernel's at, and the next process takes it only while the
 * generation is still that one.  Any other program's commit since moves
 * the generation, and the tables are read as at a first start.  A batch
 * planned against the taken state carries its generation like any other.
 *
 * Like iptables-nft (1.8.x), this writer takes no xtables lock: the
 * generation check makes the transaction safe on its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libnftnl/gen.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include "backend/nft/nftbatch.h"
#include "backend/nft/nftdiff.h"
#include "backend/nft/nftenc.h"
#include "backend/nft/nftkeep.h"
#include "backend/nft/nftread.h"
#include "backend/writer.h"
#include "util.h"

struct nft_writer {
	struct writer w;          /* first: the driver's handle */
	struct nftsock *sock;
	struct nftread_state *st; /* kept live state, or NULL */
	size_t copied;            /* rules copied into st since it was read */
	size_t read_rules;        /* rules st held when read (or since, at most) */
	/* The transaction in progress, until reset. */
	struct nftbatch *batch;
	const struct ruleset *plan[2]; /* [enum writer_family]; NULL: no table of it */
	bool checked[2];               /* the family's kept state checked for this plan */
	double t_read, t_diff;         /* seconds: generation check and reads, diff + encoding */
	double c_diff;                 /* the process's CPU seconds in diff + encoding */
	unsigned parts;                /* the most parts a table was encoded in at once */
	/* Following the notifications (nftsock_follow() worked): st holds
	 * the kernel's state as of generation ok_gen while ok, though other
	 * programs wrote since st was read, as long as nothing they wrote
	 * mattered (nftread_event_matters()). */
	bool follow;
	bool ok;
	bool dirty;      /* a notification since the last NEWGEN mattered */
	uint32_t ok_gen;
	size_t kept_foreign; /* other programs' changes found not to matter */
	/* The state kept across restarts (keepfile.h): in keep_dir (NULL:
	 * none) under this namespace's key. */
	const char *keep_dir;
	struct keepkey key;
	bool keep_tried; /* the previous run's file was looked at */
	bool file_ok;    /* the file holds st as it is (taken from it, nothing since) */
	bool used;       /* a transaction ran: st is worth keeping at the end */
};

/* The process's CPU time: the figure a loaded machine does not inflate. */
static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct nft_writer *nft_of(struct writer *w)
{
	return (struct nft_writer *)w;
}

static void drop_state(struct nft_writer *x)
{
	nftread_state_free(x->st);
	x->st = NULL;
	x->copied = x->read_rules = 0;
	x->ok = false;
	x->file_ok = false;
}

/* Whether the plan names a chain the kept state filed as another program's. */
static bool plan_claims_other(const struct nftread_state *st, enum writer_family f,
			      const struct ruleset *plan)
{
	for (int t = 0; plan && t < RS_NTABLES; t++)
		for (size_t i = 0; i < plan->t[t].n; i++)
			if (nftread_other(st, f, (enum rs_table)t, plan->t[t].chains[i]->name))
				return true;
	return false;
}

/* st is the kernel's state as of generation gen (read or committed then). */
static void known_at(struct nft_writer *x, uint32_t gen)
{
	x->ok = x->follow;
	x->ok_gen = gen;
	x->dirty = false;
}

/* One notification: each transaction's changes come before the NEWGEN of
 * the generation it made. */
static int event_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nft_writer *x = data;
	struct nftnl_gen *g;
	uint32_t gen;

	if (!x->ok)
		return 0;
	if (nlh->nlmsg_type != ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWGEN)) {
		if (!x->dirty && x->st && nftread_event_matters(x->st, nlh))
			x->dirty = true;
		return 0;
	}
	g = nftnl_gen_alloc();
	if (!g || nftnl_gen_nlmsg_parse(nlh, g) < 0) {
		nftnl_gen_free(g);
		x->ok = false;
		return 0;
	}
	gen = nftnl_gen_get_u32(g, NFTNL_GEN_ID);
	nftnl_gen_free(g);
	if ((int32_t)(gen - x->ok_gen) <= 0) {
		/* Already in st: read after it, or svcnat's own commit. */
	} else if (gen == x->ok_gen + 1 && !x->dirty) {
		x->ok_gen = gen;
		x->kept_foreign++;
	} else {
		x->ok = false; /* it mattered, or a generation went unseen */
	}
	x->dirty = false;
	return 0;
}

/* Rules st holds, decoded or not. */
static size_t state_rules(const struct nftread_state *st)
{
	size_t n = 0;

	for (int f = 0; f < 2; f++) {
		if (!st->f[f].read)
			continue;
		n += ruleset_count_rules(st->f[f].rs);
		for (int t = 0; t < RS_NTABLES; t++)
			for (size_t i = 0; i < st->f[f].t[t].n; i++)
				n += st->f[f].t[t].chains[i].n_lazy;
	}
	return n;
}

/*
 * The state the previous process kept, when the ruleset is still at the
 * generation it was kept at: nobody has written since, so it is the
 * kernel's.  Anything else is left to a read (with a warning when the file
 * is damaged or not safe to trust; keepfile.h).
 */
static void take_kept(struct nft_writer *x, uint32_t gen, struct diag_list *d)
{
	_cleanup_free_ void *buf = NULL;
	struct nftread_state *st = NULL;
	size_t off, len;
	uint32_t kept;
	char path[4096];
	double t0 = monotonic_seconds(), t1, c0 = cpu_seconds(), c1;
	int r;

	x->keep_tried = true;
	if (!x->keep_dir || keepfile_path(x->keep_dir, "nft", &x->key, path, sizeof(path)) < 0)
		return;
	r = keepfile_read(x->keep_dir, "nft", &x->key, &kept, &buf, &off, &len, d);
	if (r < 0)
		return;
	if (kept != gen) {
		if (x->w.cfg.verbose)
			diag_add(d, DIAG_NOTE, "nft", NULL, NULL,
				 "%s: kept at generation %u, the ruleset is at %u (another "
				 "program wrote since): reading the tables",
				 path, kept, gen);
		return;
	}
	t1 = monotonic_seconds();
	c1 = cpu_seconds();
	r = nftkeep_decode(TAKE_PTR(buf), off, len, &st);
	if (r < 0) {
		diag_add(d, DIAG_WARNING, path, NULL, NULL,
			 "the state kept by the previous run is ignored: %s",
			 r == -ENOMEM ? strerror(ENOMEM) : "not a state svcnat writes");
		return;
	}
	st->genid = gen;
	x->st = st;
	known_at(x, gen);
	x->read_rules = state_rules(st);
	x->file_ok = true;
	diag_add(d, DIAG_NOTE, "nft", NULL, NULL,
		 "the tables are as the previous run left them (generation %u, kept in %s): "
		 "not read again", gen, path);
	if (x->w.cfg.verbose)
		diag_add(d, DIAG_NOTE, "nft", NULL, NULL,
			 "kept state: %zu bytes read in %.3f s (%.3f s CPU), decoded in %.3f s "
			 "(%.3f s CPU)", len, t1 - t0, c1 - c0, monotonic_seconds() - t1,
			 cpu_seconds() - c1);
}

/*
 * At the end: keep st for the next process when it is the kernel's at
 * the generation now (read, committed, or only other programs' changes
 * that did not matter since) and the file does not hold it already.
 * Nothing to report to: a state not kept means a read at the next start.
 */
static void keep_state(struct nft_writer *x)
{
	struct keepbuf b = { 0 };
	uint32_t gen;

	if (!x->used || !x->st || !x->keep_dir || x->file_ok || nftsock_getgen(x->sock, &gen) < 0)
		return;
	if (x->follow && nftsock_events(x->sock, event_cb, x) < 0)
		x->ok = false;
	if (x->st->genid != gen && !(x->ok && x->ok_gen == gen))
		return;
	if (nftkeep_encode(x->st, &b) >= 0)
		(void)keepfile_write(x->keep_dir, "nft", &x->key, gen, b.p, b.n, NULL);
	keepbuf_done(&b);
}

/*
 * Keep the state while the generation is the one it was read at (or
 * svcnat's last commit made), or while every change since, as the
 * notifications tell, left what st holds as it was.
 */
static int check_gen(struct nft_writer *x, struct diag_list *d)
{
	uint32_t gen;
	bool current;
	int r;

	r = nftsock_getgen(x->sock, &gen);
	if (r < 0) {
		diag_add(d, DIAG_ERROR, "nft", NULL, NULL, "reading the ruleset generation: %s",
			 strerror(-r));
		return r;
	}
	/* After the generation: the notifications up to it are queued by
	 * the time GETGEN answers (but for a commit still under way, which
	 * the batch's generation then refuses). */
	if (x->follow && nftsock_events(x->sock, event_cb, x) < 0)
		x->ok = false;
	if (!x->st && !x->keep_tried)
		take_kept(x, gen, d);
	/* A commit may have come after GETGEN: ok_gen is then the newer. */
	current = x->st && (x->st->genid == gen || (x->ok && (int32_t)(x->ok_gen - gen) >= 0));
	if (current && x->ok)
		x->st->genid = x->ok_gen;
	/* Re-read now and then all the same, so that the copies of
	 * committed rules kept in st do not pile up in a long-running daemon. */
	if (x->st && (!current || x->copied > 2 * x->read_rules + 100000))
		drop_state(x);
	if (!x->st && !(x->st = nftread_state_new()))
		return -ENOMEM;
	return 0;
}

/*
 * Read family f into st.  When the other family was read already, the
 * two must describe one generation: f is read on its own, and the other
 * is kept only if the notifications show that nothing since it was read
 * changed it, up to exactly the generation f was read at.
 */
static int read_family(struct nft_writer *x, enum writer_family f, const struct ruleset *plan,
		       struct diag_list *d)
{
	bool other = x->st->f[!f].read;
	uint32_t g0 = x->st->genid;
	int r;

	x->st->f[!f].read = false;
	r = nftread_family(x->sock, x->st, f, plan, d);
	x->st->f[!f].read = other;
	if (r < 0 || !other || x->st->genid == g0)
		return r;
	if (x->follow && nftsock_events(x->sock, event_cb, x) < 0)
		x->ok = false;
	if (x->ok && x->ok_gen == x->st->genid)
		return 0;
	return -EAGAIN;
}

/* Family f of the state equal to the kernel's, for this plan: kept or read. */
static int fresh_family(struct nft_writer *x, enum writer_family f, const struct ruleset *plan,
			struct diag_list *d)
{
	int r;

	if (x->st->f[f].read && !plan_claims_other(x->st, f, plan))
		return 0;
	r = read_family(x, f, plan, d);
	if (r < 0) {
		drop_state(x);
		return r;
	}
	known_at(x, x->st->genid);
	x->file_ok = false;
	x->read_rules = 0;
	for (int k = 0; k < 2; k++)
		x->read_rules += x->st->f[k].read ? ruleset_count_rules(x->st->f[k].rs) : 0;
	return 0;
}

/* A part of the encoding beside the first gets this many new chains'
 * rules at least: a few milliseconds of work, against a thread's start. */
#define ENCODE_PART_MIN_RULES 1500

static int nft_prepare(struct writer *w, const struct writer_table *tab, const struct ruleset *plan,
		       bool keep, bool *ret_changed, struct apply_result *res,
		       struct diag_list *d)
{
	struct nft_writer *x = nft_of(w);
	struct nftdiff_par par = { .run = w->cfg.par, .parts = w->cfg.threads,
				   .min_rules = ENCODE_PART_MIN_RULES };
	enum writer_family f = tab->family;
	size_t n0, b0;
	double t0, t1, c1;
	int r;

	(void)keep; /* one atomic batch: nothing is ever put back */
	x->used = true;
	t0 = monotonic_seconds();
	if (!x->batch || !x->st) {
		nftbatch_free(x->batch);
		x->batch = NULL;
		r = check_gen(x, d);
		if (r < 0)
			return r;
		x->batch = nftbatch_new();
		if (!x->batch)
			return -ENOMEM;
		x->checked[0] = x->checked[1] = false;
		x->plan[0] = x->plan[1] = NULL;
		x->t_read = x->t_diff = x->c_diff = 0;
		x->parts = 1;
	}
	if (!x->checked[f]) {
		r = fresh_family(x, f, plan, d);
		if (r < 0)
			return r;
		x->checked[f] = true;
		x->plan[f] = plan;
	}
	n0 = nftbatch_count(x->batch);
	b0 = nftbatch_bytes(x->batch);
	t1 = monotonic_seconds();
	c1 = cpu_seconds();
	x->t_read += t1 - t0;
	r = nftdiff_build(x->sock, x->st, plan, f, tab->table, x->batch, &par, res, d);
	/* The diff's rare chain reloads count as encoding too: the driver
	 * takes the rest of prepare as reading the kernel. */
	res->encode_seconds += monotonic_seconds() - t1;
	if (x->parts < par.used)
		x->parts = par.used;
	x->t_diff += monotonic_seconds() - t1;
	x->c_diff += cpu_seconds() - c1;
	if (r < 0) {
		/* A chain re-read for its handles may have failed half way:
		 * the next attempt reads everything again. */
		drop_state(x);
		/* Someone wrote while a chain was re-read: read again now. */
		return r == -EINTR ? -EAGAIN : r;
	}
	res->messages += nftbatch_count(x->batch) - n0;
	res->bytes += nftbatch_bytes(x->batch) - b0;
	*ret_changed = nftbatch_count(x->batch) > n0;
	return 0;
}

/* After a commit: the copies kept since the read, and what the tables hold. */
static void committed_counts(struct nft_writer *x)
{
	size_t planned = 0;

	/* What a file kept of the tables before is no longer what they hold. */
	x->file_ok = false;
	x->copied += nftbatch_count(x->batch);
	/* A full sync into empty tables is no churn: measure copies against
	 * what the tables hold now. */
	for (int f = 0; f < 2; f++)
		planned += x->plan[f] ? ruleset_count_rules(x->plan[f]) : 0;
	if (x->read_rules < planned)
		x->read_rules = planned;
}

/* Batches from this many messages on update the kept state beside the commit. */
#define KEPT_BESIDE_MIN 1000

/*
 * The commit (part 0, on the calling thread: the kernel's answers) and,
 * with two parts, the kept state's update for it (part 1) at once: the
 * update reads only the plans and the state, which the commit leaves
 * alone.  Should the commit fail, the state is dropped.
 */
struct commit_job {
	struct nft_writer *x;
	struct diag_list *d;
	uint32_t genid, next;
	int r, kept_r;
	double t_commit, t_kept;
	double cpu_commit; /* the commit thread's CPU time: the kernel's work on the batch */
};

static void commit_part(void *arg, unsigned i)
{
	struct commit_job *j = arg;
	double t0 = monotonic_seconds(), c0 = thread_cpu_seconds();

	if (i == 0) {
		j->r = nftbatch_commit(j->x->sock, j->x->batch, j->genid, j->d);
		j->t_commit = monotonic_seconds() - t0;
		j->cpu_commit = thread_cpu_seconds() - c0;
	} else {
		j->kept_r = nftdiff_committed(j->x->st, j->x->plan, j->next);
		j->t_kept = monotonic_seconds() - t0;
	}
}

/*
 * nft_commit() of a big batch on two threads: the kept state is updated
 * while the kernel commits, so the batch and the state's new copies are
 * held at once (a higher peak, for a shorter sync).
 */
static int commit_beside(struct nft_writer *x, const struct writer_table *tabs, size_t n,
			 bool *ret_done, uint32_t next, struct diag_list *d)
{
	struct commit_job j = { .x = x, .d = d, .genid = x->st->genid, .next = next };
	size_t msgs = nftbatch_count(x->batch), bytes = nftbatch_bytes(x->batch);

	(void)tabs;
	x->w.cfg.par(2, commit_part, &j);
	if (j.r < 0) {
		/* The state holds what was not committed. */
		drop_state(x);
		return j.r;
	}
	for (size_t i = 0; i < n; i++)
		ret_done[i] = true;
	committed_counts(x);
	nftbatch_free(x->batch);
	x->batch = NULL;
	if (j.kept_r < 0)
		drop_state(x);
	else
		known_at(x, next);
	if (x->w.cfg.verbose)
		diag_add(d, DIAG_NOTE, "nft", NULL, NULL,
			 "generation checked (and tables read) in %.3f s, diffed and encoded %zu "
			 "messages (%zu bytes, %u part%s at once) in %.3f s (CPU %.3f s), "
			 "committed in %.3f s (CPU %.3f s), kept state updated in %.3f s beside "
			 "the commit; %zu changes of other programs left it as it was",
			 x->t_read, msgs, bytes, x->parts, x->parts == 1 ? "" : "s", x->t_diff,
			 x->c_diff, j.t_commit, j.cpu_commit, j.t_kept, x->kept_foreign);
	return 0;
}

static int commit_batch(struct writer *w, const struct writer_table *tabs, size_t n,
			bool *ret_done, struct diag_list *d)
{
	struct nft_writer *x = nft_of(w);
	size_t msgs, bytes;
	double t0 = monotonic_seconds(), c0 = thread_cpu_seconds(), t1, c1;
	uint32_t next;
	int r;

	for (size_t i = 0; i < n; i++)
		ret_done[i] = false;
	if (!x->batch || !x->st)
		return -EINVAL;
	msgs = nftbatch_count(x->batch);
	bytes = nftbatch_bytes(x->batch);
	/* Each commit moves the generation by one (never to 0), and the
	 * generation check guarantees this one was the only one. */
	next = x->st->genid + 1 ? x->st->genid + 1 : 1;
	if (w->cfg.threads > 1 && w->cfg.par && msgs >= KEPT_BESIDE_MIN)
		return commit_beside(x, tabs, n, ret_done, next, d);
	r = nftbatch_commit(x->sock, x->batch, x->st->genid, d);
	/* The kernel processes the batch inside sendmsg, on this thread. */
	c1 = thread_cpu_seconds();
	if (r == -EAGAIN && x->follow)
		return r; /* another program wrote since: the notifications tell whether it matters */
	if (r < 0) {
		/* The kept state is no longer to be trusted. */
		drop_state(x);
		return r;
	}
	for (size_t i = 0; i < n; i++)
		ret_done[i] = true;
	committed_counts(x);
	/* The sent batch goes before the kept state takes its copies: the
	 * peak of a full sync is the larger of the two, not their sum. */
	nftbatch_free(x->batch);
	x->batch = NULL;
	t1 = monotonic_seconds();
	if (nftdiff_committed(x->st, x->plan, next) < 0)
		drop_state(x);
	else
		known_at(x, next);
	if (w->cfg.verbose)
		diag_add(d, DIAG_NOTE, "nft", NULL, NULL,
			 "generation checked (and tables read) in %.3f s, diffed and encoded %zu "
			 "messages (%zu bytes, %u part%s at once) in %.3f s (CPU %.3f s), "
			 "committed in %.3f s (CPU %.3f s), kept state updated in %.3f s; %zu "
			 "changes of other programs left it as it was",
			 x->t_read, msgs, bytes, x->parts, x->parts == 1 ? "" : "s", x->t_diff,
			 x->c_diff, t1 - t0, c1 - c0, monotonic_seconds() - t1, x->kept_foreign);
	return 0;
}

/*
 * After a commit made while out of the notification group: what came
 * before leaving it is read as usual, then the group is joined again.
 * Another program's commit in between went unseen, as may the start of
 * one under way while joining (the kernel moves the generation before it
 * notifies), so st stays trusted through the notifications only when the
 * generation after joining is the one st is known at.
 */
static void listen_again(struct nft_writer *x)
{
	uint32_t gen;

	if (nftsock_events(x->sock, event_cb, x) < 0)
		x->ok = false;
	if (nftsock_listen(x->sock, true) < 0) {
		x->follow = x->ok = false;
		return;
	}
	if (nftsock_getgen(x->sock, &gen) < 0 || x->ok_gen != gen)
		x->ok = false;
}

/*
 * The notifications of svcnat's own commit tell it nothing (event_cb
 * skips them), but the kernel builds one for every rule of the batch
 * while anyone listens: the commit leaves the group for its duration.
 */
static int nft_commit(struct writer *w, const struct writer_table *tabs, size_t n, bool *ret_done,
		      struct diag_list *d)
{
	struct nft_writer *x = nft_of(w);
	bool muted = x->follow && nftsock_listen(x->sock, false) >= 0;
	int r;

	r = commit_batch(w, tabs, n, ret_done, d);
	if (muted)
		listen_again(x);
	return r;
}

static void nft_reset(struct writer *w)
{
	struct nft_writer *x = nft_of(w);

	nftbatch_free(x->batch);
	x->batch = NULL;
	x->plan[0] = x->plan[1] = NULL;
	x->checked[0] = x->checked[1] = false;
	/* What the transaction decoded (or read) of svcnat's chains waits
	 * for the next one as bytes again. */
	if (x->st)
		nftkeep_pack(x->st);
}

static int nft_read(struct writer *w, const struct writer_table *tab, const struct ruleset *plan,
		    struct ruleset *out, struct diag_list *d)
{
	struct nft_writer *x = nft_of(w);
	const struct nftread_table *tb;
	int r;

	r = check_gen(x, d);
	if (r < 0)
		return r;
	r = fresh_family(x, tab->family, plan, d);
	if (r < 0)
		return r;
	/* Kept chains still as bytes are decoded for the reader. */
	r = nftkeep_materialize(x->st);
	if (r < 0) {
		drop_state(x);
		return r == -ENOMEM ? r : -EAGAIN;
	}
	tb = &x->st->f[tab->family].t[tab->table];
	for (size_t i = 0; i < tb->n; i++) {
		const struct nftread_chain *ch = &tb->chains[i];

		if (!ch->gone && !ruleset_copy_chain(out, ch->c))
			return -ENOMEM;
	}
	return 0;
}

static void nft_free(struct writer *w)
{
	struct nft_writer *x = nft_of(w);

	if (!x)
		return;
	nft_reset(w);
	keep_state(x);
	drop_state(x);
	nftsock_close(x->sock);
	free(x);
}

/* iptables-nft takes no xtables lock either: the generation check makes
 * the transaction safe on its own.  One batch: nothing to put back. */
static size_t nft_kept_bytes(const struct writer *w)
{
	return nftread_state_bytes(((const struct nft_writer *)w)->st);
}

#define NFT_OPS                                                                              \
	.name = "nft", .needs_xtables_lock = false, .one_commit = true, .prepare = nft_prepare, \
	.commit = nft_commit, .put_back = NULL, .reset = nft_reset, .read = nft_read,         \
	.free = nft_free, .kept_bytes = nft_kept_bytes

/* Without IPv6 in the kernel: ip filter and ip nat only. */
static const struct writer_ops nft_ops = { NFT_OPS, .ipv6 = false };
static const struct writer_ops nft_ops6 = { NFT_OPS, .ipv6 = true };

int writer_nft_new(const struct writer_config *cfg, struct writer **ret, struct diag_list *d)
{
	struct nft_writer *x = calloc(1, sizeof(*x));
	int r, fd;

	if (!x)
		return -ENOMEM;
	r = nftsock_open(&x->sock, d);
	if (r < 0) {
		free(x);
		return r;
	}
	/* Without the notifications every write of another program means
	 * reading the tables again, as before. */
	x->follow = nftsock_follow(x->sock) >= 0;
	/* As kube-proxy runs single-stack where ip6tables does not work: a
	 * kernel without IPv6 (or ipv6.disable=1) has no AF_INET6 sockets. */
	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 && errno == EAFNOSUPPORT) {
		x->w.ops = &nft_ops;
		diag_add(d, DIAG_NOTE, "nft", NULL, NULL,
			 "the kernel has no IPv6: svcnat writes the iptables tables only, IPv6 "
			 "services are not programmed");
	} else {
		x->w.ops = &nft_ops6;
	}
	if (fd >= 0)
		close(fd);
	x->w.cfg = *cfg;
	/* Without a namespace cookie a file could be another namespace's
	 * that reused the inode: nothing is kept then. */
	if (cfg->keep_dir && keepfile_key(&x->key) >= 0)
		x->keep_dir = cfg->keep_dir;
	*ret = &x->w;
	return 0;
}
