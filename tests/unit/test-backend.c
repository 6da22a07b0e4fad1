/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one transaction (backend.c) over a recording fake writer: which
 * calls it makes, in which order, when a table is refused at prepare or at
 * commit, on EAGAIN once and for ever, and when putting a table back fails
 * too; and what its messages say the kernel holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/writer.h"
#include "util.h"

struct fake {
	struct writer w;
	struct writer_ops ops;
	char log[1024];     /* "prepare filter keep;commit filter;..." */
	const char *lock;   /* check the driver holds this lock at prepare */
	bool changed[2];    /* per table: prepare finds it changed */
	int prepare_err[2]; /* per table: prepare returns this */
	int commit_err[2];  /* per table: commit returns this ... */
	int commit_times[2]; /* ... this many times (-1: always) */
	bool lands[2];      /* one_commit: this table lands although commit fails */
	int put_back_err;
	bool lock_held;     /* seen at every prepare */
};

static void logf_(struct fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct fake *f, const char *fmt, ...)
{
	size_t n = strlen(f->log);
	va_list ap;

	if (n)
		f->log[n++] = ';';
	va_start(ap, fmt);
	vsnprintf(f->log + n, sizeof(f->log) - n, fmt, ap);
	va_end(ap);
}

static bool lock_taken(const char *path)
{
	int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	bool taken;

	if (fd < 0)
		return false;
	taken = flock(fd, LOCK_EX | LOCK_NB) < 0;
	close(fd);
	return taken;
}

static int fake_prepare(struct writer *w, const struct writer_table *tab,
			const struct ruleset *plan, bool keep, bool *ret_changed,
			struct apply_result *res, struct diag_list *d)
{
	struct fake *f = (struct fake *)w;

	(void)plan;
	logf_(f, "prepare %s%s", writer_table_name(tab), keep ? " keep" : "");
	if (f->lock && !lock_taken(f->lock))
		f->lock_held = false;
	if (f->prepare_err[tab->table]) {
		if (f->prepare_err[tab->table] != -EAGAIN)
			diag_add(d, DIAG_ERROR, "fake", writer_table_name(tab), NULL, "refused");
		return f->prepare_err[tab->table];
	}
	*ret_changed = f->changed[tab->table];
	res->rules_written += 10;
	return 0;
}

static int fake_commit(struct writer *w, const struct writer_table *tabs, size_t n, bool *ret_done,
		       struct diag_list *d)
{
	struct fake *f = (struct fake *)w;
	int r = 0;

	for (size_t i = 0; i < n; i++) {
		enum rs_table t = tabs[i].table;

		logf_(f, "commit %s", writer_table_name(&tabs[i]));
		ret_done[i] = false;
		if (r < 0)
			continue;
		if (f->commit_err[t] && f->commit_times[t] != 0) {
			if (f->commit_times[t] > 0)
				f->commit_times[t]--;
			r = f->commit_err[t];
			if (r != -EAGAIN)
				diag_add(d, DIAG_ERROR, "fake", writer_table_name(&tabs[i]), NULL,
					 "refused");
			continue;
		}
		ret_done[i] = true;
	}
	/* A one_commit writer whose tool went table by table. */
	for (size_t i = 0; r < 0 && i < n; i++)
		ret_done[i] = ret_done[i] && f->lands[tabs[i].table];
	return r;
}

static int fake_put_back(struct writer *w, const struct writer_table *tab, struct diag_list *d)
{
	struct fake *f = (struct fake *)w;

	logf_(f, "put_back %s", writer_table_name(tab));
	if (f->put_back_err)
		diag_add(d, DIAG_ERROR, "fake", writer_table_name(tab), NULL, "put back refused");
	return f->put_back_err;
}

static void fake_reset(struct writer *w)
{
	(void)w;
}

static int fake_read(struct writer *w, const struct writer_table *tab, const struct ruleset *plan,
		     struct ruleset *out, struct diag_list *d)
{
	(void)w, (void)tab, (void)plan, (void)out, (void)d;
	return 0;
}

static void fake_free(struct writer *w)
{
	(void)w; /* the test owns it */
}

static void fake_init(struct fake *f, bool one_commit)
{
	memset(f, 0, sizeof(*f));
	f->ops = (struct writer_ops){
		.name = "fake", .one_commit = one_commit, .prepare = fake_prepare,
		.commit = fake_commit, .put_back = fake_put_back, .reset = fake_reset,
		.read = fake_read, .free = fake_free,
	};
	f->w.ops = &f->ops;
	f->changed[RS_FILTER] = f->changed[RS_NAT] = true;
	f->lands[RS_FILTER] = true;
}

static bool has_msg(const struct diag_list *d, const char *what)
{
	for (size_t i = 0; i < d->n; i++)
		if (strstr(d->items[i].msg, what))
			return true;
	return false;
}

/* Run one apply of an empty plan over f; returns its result. */
static int run(struct fake *f, struct apply_result *res, struct diag_list *d)
{
	struct backend_options o = { .commit_retries = 3 };
	struct backend *b = NULL;
	struct ruleset *rs = ruleset_new();
	int r;

	assert_non_null(rs);
	assert_int_equal(backend_new_over(&o, &f->w, &b), 0);
	diag_list_init(d);
	r = backend_apply(b, rs, res, d);
	backend_free(b);
	ruleset_free(rs);
	return r;
}

static void test_both_land(void **state)
{
	struct fake f;
	struct apply_result res;
	struct diag_list d;

	(void)state;
	fake_init(&f, false);
	assert_int_equal(run(&f, &res, &d), 0);
	assert_string_equal(f.log, "prepare filter keep;prepare nat;commit filter;commit nat");
	assert_true(res.committed[RS_FILTER] && res.committed[RS_NAT]);
	assert_int_equal(res.rules_written, 20);
	assert_int_equal(d.n, 0);
	diag_list_done(&d);
}

static void test_unchanged_table_not_committed(void **state)
{
	struct fake f;
	struct apply_result res;
	struct diag_list d;

	(void)state;
	fake_init(&f, false);
	f.changed[RS_FILTER] = false;
	assert_int_equal(run(&f, &res, &d), 0);
	assert_string_equal(f.log, "prepare filter keep;prepare nat;commit nat");
	assert_false(res.committed[RS_FILTER]);
	assert_true(res.committed[RS_NAT]);
	diag_list_done(&d);
}

static void test_refused_at_prepare(void **state)
{
	static const char *const logs[2] = {
		"prepare filter keep",
		"prepare filter keep;prepare nat",
	};

	(void)state;
	for (int k = 0; k < 2; k++) {
		struct fake f;
		struct apply_result res;
		struct diag_list d;

		fake_init(&f, false);
		f.prepare_err[k] = -EINVAL;
		assert_int_equal(run(&f, &res, &d), -EINVAL);
		/* Nothing is committed when any table is refused at prepare. */
		assert_string_equal(f.log, logs[k]);
		assert_false(res.committed[RS_FILTER] || res.committed[RS_NAT] || res.partial);
		assert_true(has_msg(&d, "refused"));
		assert_true(has_msg(&d, "nothing was written; the kernel keeps its previous rules"));
		diag_list_done(&d);
	}
}

static void test_refused_at_commit(void **state)
{
	struct fake f;
	struct apply_result res;
	struct diag_list d;

	(void)state;
	/* The first table refused: nothing to put back. */
	fake_init(&f, false);
	f.commit_err[RS_FILTER] = -EINVAL;
	f.commit_times[RS_FILTER] = -1;
	assert_int_equal(run(&f, &res, &d), -EINVAL);
	assert_string_equal(f.log, "prepare filter keep;prepare nat;commit filter");
	assert_true(has_msg(&d, "nothing was written; the kernel keeps its previous rules"));
	assert_false(res.partial);
	diag_list_done(&d);

	/* The second refused: the first is put back, and the message says so. */
	fake_init(&f, false);
	f.commit_err[RS_NAT] = -EINVAL;
	f.commit_times[RS_NAT] = -1;
	assert_int_equal(run(&f, &res, &d), -EINVAL);
	assert_string_equal(f.log,
			    "prepare filter keep;prepare nat;commit filter;commit nat;put_back filter");
	assert_false(res.committed[RS_FILTER] || res.committed[RS_NAT] || res.partial);
	assert_true(has_msg(&d, "already written; put back as it was"));
	assert_true(has_msg(&d, "the kernel keeps its previous rules"));
	assert_false(has_msg(&d, "nothing was written"));
	diag_list_done(&d);

	/* Only nat changed and it is refused: nothing to put back. */
	fake_init(&f, false);
	f.changed[RS_FILTER] = false;
	f.commit_err[RS_NAT] = -ENOMEM;
	f.commit_times[RS_NAT] = -1;
	assert_int_equal(run(&f, &res, &d), -ENOMEM);
	assert_string_equal(f.log, "prepare filter keep;prepare nat;commit nat");
	assert_true(has_msg(&d, "nothing was written; the kernel keeps its previous rules"));
	diag_list_done(&d);
}

static void test_put_back_fails(void **state)
{
	struct fake f;
	struct apply_result res;
	struct diag_list d;

	(void)state;
	fake_init(&f, false);
	f.commit_err[RS_NAT] = -EINVAL;
	f.commit_times[RS_NAT] = -1;
	f.put_back_err = -EIO;
	assert_int_equal(run(&f, &res, &d), -EINVAL);
	assert_string_equal(f.log,
			    "prepare filter keep;prepare nat;commit filter;commit nat;put_back filter");
	assert_true(res.partial);
	assert_true(res.committed[RS_FILTER]);
	assert_false(res.committed[RS_NAT]);
	assert_true(has_msg(&d, "the tables are half written: filter holds the new rules "
				"(putting it back failed), nat keeps its previous rules"));
	assert_false(has_msg(&d, "the kernel keeps its previous rules"));
	diag_list_done(&d);

	/* Half written after an EAGAIN: no retry over a half-written kernel. */
	fake_init(&f, false);
	f.commit_err[RS_NAT] = -EAGAIN;
	f.commit_times[RS_NAT] = -1;
	f.put_back_err = -EIO;
	assert_int_equal(run(&f, &res, &d), -EAGAIN);
	assert_string_equal(f.log,
			    "prepare filter keep;prepare nat;commit filter;commit nat;put_back filter");
	assert_true(res.partial);
	diag_list_done(&d);
}

static void test_eagain(void **state)
{
	struct fake f;
	struct apply_result res;
	struct diag_list d;

	(void)state;
	/* Once, at the second table: put the first back, then all again. */
	fake_init(&f, false);
	f.commit_err[RS_NAT] = -EAGAIN;
	f.commit_times[RS_NAT] = 1;
	assert_int_equal(run(&f, &res, &d), 0);
	assert_string_equal(f.log, "prepare filter keep;prepare nat;commit filter;commit nat;"
				   "put_back filter;"
				   "prepare filter keep;prepare nat;commit filter;commit nat");
	assert_true(res.committed[RS_FILTER] && res.committed[RS_NAT]);
	/* The counts are the successful attempt's, not the sum. */
	assert_int_equal(res.rules_written, 20);
	assert_true(has_msg(&d, "reading it again (retry 1 of 3)"));
	assert_int_equal(diag_count(&d, DIAG_ERROR), 0);
	diag_list_done(&d);

	/* Once, at prepare. */
	fake_init(&f, false);
	f.prepare_err[RS_NAT] = -EAGAIN;
	{
		struct backend_options o = { .commit_retries = 3 };
		struct backend *b = NULL;
		struct ruleset *rs = ruleset_new();

		/* prepare_err stays: every attempt sees it, so this is "for ever". */
		assert_int_equal(backend_new_over(&o, &f.w, &b), 0);
		diag_list_init(&d);
		assert_int_equal(backend_apply(b, rs, &res, &d), -EAGAIN);
		backend_free(b);
		ruleset_free(rs);
	}
	assert_string_equal(f.log, "prepare filter keep;prepare nat;prepare filter keep;prepare nat;"
				   "prepare filter keep;prepare nat;prepare filter keep;prepare nat");
	assert_true(has_msg(&d, "gave up after 3 retries"));
	assert_true(has_msg(&d, "nothing was written; the kernel keeps its previous rules"));
	diag_list_done(&d);

	/* For ever, at commit: 1 + 3 attempts, each put back, one give-up. */
	fake_init(&f, false);
	f.commit_err[RS_NAT] = -EAGAIN;
	f.commit_times[RS_NAT] = -1;
	assert_int_equal(run(&f, &res, &d), -EAGAIN);
	{
		char want[1024] = "";

		for (int i = 0; i < 4; i++)
			strcat(want, i ? ";prepare filter keep;prepare nat;commit filter;commit nat;"
					 "put_back filter"
				       : "prepare filter keep;prepare nat;commit filter;commit nat;"
					 "put_back filter");
		assert_string_equal(f.log, want);
	}
	assert_true(has_msg(&d, "retry 3 of 3"));
	assert_false(has_msg(&d, "retry 4 of"));
	assert_true(has_msg(&d, "gave up after 3 retries"));
	assert_true(has_msg(&d, "the kernel keeps its previous rules"));
	assert_false(res.partial);
	diag_list_done(&d);
}

static void test_one_commit(void **state)
{
	struct fake f;
	struct apply_result res;
	struct diag_list d;

	(void)state;
	fake_init(&f, true);
	assert_int_equal(run(&f, &res, &d), 0);
	assert_string_equal(f.log, "prepare filter keep;prepare nat;commit filter;commit nat");
	diag_list_done(&d);

	/* The tool landed filter before it refused nat: filter is put back. */
	fake_init(&f, true);
	f.commit_err[RS_NAT] = -EIO;
	f.commit_times[RS_NAT] = -1;
	assert_int_equal(run(&f, &res, &d), -EIO);
	assert_string_equal(f.log,
			    "prepare filter keep;prepare nat;commit filter;commit nat;put_back filter");
	assert_true(has_msg(&d, "the kernel keeps its previous rules"));
	diag_list_done(&d);

	/* A transaction that landed nothing: nothing to put back. */
	fake_init(&f, true);
	f.lands[RS_FILTER] = false;
	f.commit_err[RS_NAT] = -EIO;
	f.commit_times[RS_NAT] = -1;
	assert_int_equal(run(&f, &res, &d), -EIO);
	assert_string_equal(f.log, "prepare filter keep;prepare nat;commit filter;commit nat");
	assert_true(has_msg(&d, "nothing was written; the kernel keeps its previous rules"));
	diag_list_done(&d);
}

static void test_plan_checked_first(void **state)
{
	struct fake f;
	struct apply_result res;
	struct diag_list d;
	struct backend_options o = { 0 };
	struct backend *b = NULL;
	struct ruleset *rs = ruleset_new();
	struct rs_chain *c;
	struct rs_rule *r;

	(void)state;
	assert_non_null(rs);
	c = ruleset_add_chain(rs, RS_NAT, "KUBE-SERVICES");
	assert_non_null(c);
	r = rs_chain_append(c);
	assert_non_null(r);
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = ruleset_strdup(rs, "KUBE-SVC-NOSUCHCHAIN");
	fake_init(&f, false);
	assert_int_equal(backend_new_over(&o, &f.w, &b), 0);
	diag_list_init(&d);
	assert_int_equal(backend_apply(b, rs, &res, &d), -EINVAL);
	assert_string_equal(f.log, "");
	assert_true(has_msg(&d, "jumps to 'KUBE-SVC-NOSUCHCHAIN', which is not a planned chain"));
	assert_true(has_msg(&d, "nothing was written"));
	diag_list_done(&d);
	backend_free(b);
	ruleset_free(rs);
}

static void test_lock_held(void **state)
{
	char path[] = "/tmp/test-backend-lock-XXXXXX";
	int fd = mkstemp(path);
	struct fake f;
	struct apply_result res;
	struct diag_list d;
	struct backend_options o = { .lock_path = path };
	struct backend *b = NULL;
	struct ruleset *rs = ruleset_new();

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	fake_init(&f, false);
	f.ops.needs_xtables_lock = true;
	f.lock = path;
	f.lock_held = true;
	assert_int_equal(backend_new_over(&o, &f.w, &b), 0);
	diag_list_init(&d);
	assert_int_equal(backend_apply(b, rs, &res, &d), 0);
	assert_true(f.lock_held);
	/* ...and released afterwards. */
	assert_false(lock_taken(path));
	diag_list_done(&d);
	backend_free(b);
	ruleset_free(rs);
	unlink(path);
}


/* Run one dual-stack apply (an empty plan for each family) over f. */
static int run6(struct fake *f, struct apply_result *res, struct diag_list *d)
{
	struct backend_options o = { .commit_retries = 3 };
	struct backend *b = NULL;
	struct ruleset *rs = ruleset_new(), *rs6 = ruleset_new();
	int r;

	assert_non_null(rs);
	assert_non_null(rs6);
	assert_int_equal(backend_new_over(&o, &f->w, &b), 0);
	diag_list_init(d);
	r = backend_apply_families(b, rs, rs6, res, d);
	backend_free(b);
	ruleset_free(rs);
	ruleset_free(rs6);
	return r;
}

/* Dual-stack (issue 14): the four tables in one transaction, the IPv4 nat
 * table last (never kept); a refused table puts back every one committed
 * before it, of both families; a writer without IPv6 is not asked. */
static void test_families(void **state)
{
	struct fake f;
	struct apply_result res;
	struct diag_list d;

	(void)state;
	fake_init(&f, false);
	f.ops.ipv6 = true;
	assert_int_equal(run6(&f, &res, &d), 0);
	assert_string_equal(f.log, "prepare filter keep;prepare ip6 filter keep;prepare ip6 nat keep;"
				   "prepare nat;commit filter;commit ip6 filter;commit ip6 nat;commit nat");
	assert_true(res.committed[RS_FILTER] && res.committed[RS_NAT]);
	assert_true(res.committed6[RS_FILTER] && res.committed6[RS_NAT]);
	diag_list_done(&d);

	/* ip6 nat refused: ip6 filter and filter go back, newest first */
	fake_init(&f, false);
	f.ops.ipv6 = true;
	f.commit_err[RS_NAT] = -EPERM;
	f.commit_times[RS_NAT] = -1;
	assert_int_equal(run6(&f, &res, &d), -EPERM);
	assert_string_equal(f.log, "prepare filter keep;prepare ip6 filter keep;prepare ip6 nat keep;"
				   "prepare nat;commit filter;commit ip6 filter;commit ip6 nat;"
				   "put_back ip6 filter;put_back filter");
	assert_false(res.partial);
	assert_false(res.committed[RS_FILTER] || res.committed6[RS_FILTER]);
	assert_true(has_msg(&d, "the kernel keeps its previous rules"));
	diag_list_done(&d);

	/* putting back fails: the message names all four tables */
	fake_init(&f, false);
	f.ops.ipv6 = true;
	f.commit_err[RS_NAT] = -EPERM;
	f.commit_times[RS_NAT] = -1;
	f.put_back_err = -EIO;
	assert_int_equal(run6(&f, &res, &d), -EPERM);
	assert_true(res.partial);
	assert_true(has_msg(&d, "filter holds the new rules (putting it back failed), ip6 filter "
				"holds the new rules (putting it back failed), ip6 nat keeps its "
				"previous rules, nat keeps its previous rules"));
	diag_list_done(&d);

	/* an IPv6 plan for a writer without IPv6: refused, nothing asked */
	fake_init(&f, false);
	assert_int_equal(run6(&f, &res, &d), -EINVAL);
	assert_string_equal(f.log, "");
	diag_list_done(&d);
}

/* The larger nat plan goes last (issue 14): an IPv6-only cluster's ip6 nat
 * table is the one not kept, and a refused IPv4 nat puts back what came
 * before it. */
static void test_ip6_nat_last(void **state)
{
	struct backend_options o = { .commit_retries = 3 };
	struct ruleset *rs = ruleset_new(), *rs6 = ruleset_new();
	struct apply_result res;
	struct backend *b = NULL;
	struct diag_list d;
	struct rs_chain *c;
	struct fake f;

	(void)state;
	assert_non_null(rs);
	assert_non_null(rs6);
	c = ruleset_add_chain(rs6, RS_NAT, "KUBE-MARK-MASQ");
	assert_non_null(c);
	for (int i = 0; i < 2; i++)
		assert_non_null(rs_chain_append(c));
	c->rules[1].t.kind = RS_T_RETURN;

	fake_init(&f, false);
	f.ops.ipv6 = true;
	assert_int_equal(backend_new_over(&o, &f.w, &b), 0);
	diag_list_init(&d);
	assert_int_equal(backend_apply_families(b, rs, rs6, &res, &d), 0);
	assert_string_equal(f.log, "prepare filter keep;prepare ip6 filter keep;prepare nat keep;"
				   "prepare ip6 nat;commit filter;commit ip6 filter;commit nat;"
				   "commit ip6 nat");
	diag_list_done(&d);
	backend_free(b);

	fake_init(&f, false);
	f.ops.ipv6 = true;
	f.commit_err[RS_NAT] = -EPERM;
	f.commit_times[RS_NAT] = 1;
	assert_int_equal(backend_new_over(&o, &f.w, &b), 0);
	diag_list_init(&d);
	assert_int_equal(backend_apply_families(b, rs, rs6, &res, &d), -EPERM);
	assert_string_equal(f.log, "prepare filter keep;prepare ip6 filter keep;prepare nat keep;"
				   "prepare ip6 nat;commit filter;commit ip6 filter;commit nat;"
				   "put_back ip6 filter;put_back filter");
	assert_true(has_msg(&d, "the kernel keeps its previous rules"));
	diag_list_done(&d);
	backend_free(b);

	/* As large as IPv4's (here: both empty): the IPv4 nat table last. */
	fake_init(&f, false);
	f.ops.ipv6 = true;
	assert_int_equal(run6(&f, &res, &d), 0);
	assert_string_equal(f.log, "prepare filter keep;prepare ip6 filter keep;prepare ip6 nat keep;"
				   "prepare nat;commit filter;commit ip6 filter;commit ip6 nat;commit nat");
	diag_list_done(&d);
	ruleset_free(rs);
	ruleset_free(rs6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_both_land),
		cmocka_unit_test(test_unchanged_table_not_committed),
		cmocka_unit_test(test_refused_at_prepare),
		cmocka_unit_test(test_refused_at_commit),
		cmocka_unit_test(test_put_back_fails),
		cmocka_unit_test(test_eagain),
		cmocka_unit_test(test_one_commit),
		cmocka_unit_test(test_plan_checked_first),
		cmocka_unit_test(test_lock_held),
		cmocka_unit_test(test_families),
		cmocka_unit_test(test_ip6_nat_last),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
