/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/internal.h"
#include "core/render.h"
#include "util.h"

#define DEFAULT_LOCK_PATH "/run/xtables.lock"
#define DEFAULT_LOCK_WAIT_MS 5000
#define DEFAULT_COMMIT_RETRIES 3

double backend_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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
	}
	return "unknown";
}

/* --- ownership --- */

static const char *const owned_prefixes[] = {
	"KUBE-SVC-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-SEP-", "KUBE-XLB-",
	"KUBE-DSP-", /* svcnat's dispatch tree (core/dispatch.h) */
};
static const char *const owned_nat[] = {
	"KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ", "KUBE-PROXY-CANARY",
};
static const char *const owned_filter[] = {
	"KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-NODEPORTS",
	"KUBE-PROXY-FIREWALL", "KUBE-PROXY-CANARY",
};

bool backend_chain_owned(enum rs_table t, const char *name)
{
	const char *const *fixed = t == RS_NAT ? owned_nat : owned_filter;
	size_t n = t == RS_NAT ? ARRAY_SIZE(owned_nat) : ARRAY_SIZE(owned_filter);

	if (!name || strncmp(name, "KUBE-", 5) != 0)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(owned_prefixes); i++)
		if (strncmp(name, owned_prefixes[i], strlen(owned_prefixes[i])) == 0)
			return true;
	for (size_t i = 0; i < n; i++)
		if (streq(name, fixed[i]))
			return true;
	return false;
}

bool backend_chain_ours(const struct ruleset *rs, enum rs_table t, const char *name)
{
	const struct rs_chain *c;

	if (backend_chain_owned(t, name))
		return true;
	c = rs ? ruleset_find_chain(rs, t, name) : NULL;
	return c && !c->builtin;
}

/* --- rule equality as the kernel stores rules --- */

void backend_mark_encode(const struct rs_target *t, uint32_t *ret_mark, uint32_t *ret_mask)
{
	/* As libxt_MARK encodes --or-mark, --xor-mark and --set-xmark. */
	switch (t->u.mark.op) {
	case RS_MARK_OR:
		*ret_mark = t->u.mark.value;
		*ret_mask = t->u.mark.value;
		break;
	case RS_MARK_XOR:
		*ret_mark = t->u.mark.value;
		*ret_mask = 0;
		break;
	default:
		*ret_mark = t->u.mark.value;
		*ret_mask = t->u.mark.mask;
		break;
	}
}

static void rule_canon(struct rs_rule *r)
{
	if (r->t.kind == RS_T_MARK) {
		uint32_t mark, mask;

		backend_mark_encode(&r->t, &mark, &mask);
		r->t.u.mark.op = RS_MARK_SET;
		r->t.u.mark.value = mark;
		r->t.u.mark.mask = mask;
	}
	if (!r->src.addr.family)
		r->src_inv = false;
	if (!r->dst.addr.family)
		r->dst_inv = false;
}

bool backend_rule_same(const struct rs_rule *a, const struct rs_rule *b)
{
	struct rs_rule ca, cb;

	if (a->t.kind == BACKEND_T_FOREIGN || b->t.kind == BACKEND_T_FOREIGN)
		return false;
	if (a->t.kind != RS_T_MARK && b->t.kind != RS_T_MARK && a->src_inv == b->src_inv &&
	    a->dst_inv == b->dst_inv)
		return rs_rule_equal(a, b);
	ca = *a;
	cb = *b;
	rule_canon(&ca);
	rule_canon(&cb);
	return rs_rule_equal(&ca, &cb);
}

/* --- shared by the legacy writers --- */

const char *backend_xt_errno_meaning(int err, bool commit)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return "svcnat needs CAP_NET_ADMIN (run it as root)";
	case EAGAIN:
		return "another program changed the table while svcnat was writing it";
	case ENOENT:
		return commit ? "the kernel lacks a match or target this ruleset uses "
				"(a missing xt_* module?)"
			      : "the table or chain does not exist (is ip_tables / iptable_nat loaded?)";
	case EINVAL:
		return commit ? "the kernel refused a rule (an option it does not take, or a "
				"target used in the wrong table or chain; dmesg has x_tables' reason)"
			      : "the kernel refused the request";
	case ENOMEM:
		return "the table is too large for the kernel (legacy xtables stops at 512 MiB) "
		       "or memory is short";
	case ELOOP:
		return "the chains would form a loop";
	case ENOPROTOOPT:
	case EAFNOSUPPORT:
	case ENOSYS:
		return "this kernel has no legacy iptables (ip_tables) support; try --backend=restore";
	case EMLINK:
		return "the chain is still referenced by a rule";
	default:
		return NULL;
	}
}

int backend_check_plan_targets(const struct ruleset *rs, enum rs_table t, struct diag_list *d)
{
	const struct rs_chains *cs = &rs->t[t];

	for (size_t i = 0; i < cs->n; i++) {
		const struct rs_chain *c = cs->chains[i];

		for (size_t j = 0; j < c->n_rules; j++) {
			const struct rs_target *tg = &c->rules[j].t;
			const struct rs_chain *dst;

			if (tg->kind != RS_T_JUMP && tg->kind != RS_T_GOTO)
				continue;
			dst = tg->u.chain ? ruleset_find_chain(rs, t, tg->u.chain) : NULL;
			if (!dst || dst->builtin) {
				diag_add(d, DIAG_ERROR, "plan", rs_table_name(t), c->name,
					 "rule %zu jumps to '%s', which is not a planned chain", j + 1,
					 tg->u.chain ? tg->u.chain : "");
				return -EINVAL;
			}
		}
	}
	return 0;
}

int backend_rule_copy_strings(struct ruleset *rs, struct rs_rule *r)
{
	for (size_t i = 0; i < r->n_matches; i++) {
		struct rs_match *m = &r->m[i];
		const char **sp = m->kind == RS_M_COMMENT  ? &m->u.comment
				  : m->kind == RS_M_RECENT ? &m->u.recent.name
							   : NULL;

		if (sp && *sp && !(*sp = ruleset_strdup(rs, *sp)))
			return -ENOMEM;
	}
	if ((r->t.kind == RS_T_JUMP || r->t.kind == RS_T_GOTO) &&
	    !(r->t.u.chain = ruleset_strdup(rs, r->t.u.chain)))
		return -ENOMEM;
	if (r->in_iface && !(r->in_iface = ruleset_strdup(rs, r->in_iface)))
		return -ENOMEM;
	return 0;
}

int backend_jumps_match(size_t nl, size_t np, bool (*same)(void *ctx, size_t i, size_t j),
			void *ctx, long *match, long *kept)
{
	_cleanup_free_ bool *used = calloc(np + 1, sizeof(*used));
	bool in_order = true, change = false;
	long last = -1;

	if (!used)
		return -ENOMEM;
	for (size_t i = 0; i < nl; i++) {
		match[i] = -1;
		for (size_t j = 0; j < np; j++) {
			if (!used[j] && same(ctx, i, j)) {
				used[j] = true;
				match[i] = (long)j;
				break;
			}
		}
		if (match[i] >= 0) {
			if (match[i] < last)
				in_order = false;
			last = match[i];
		}
	}
	for (size_t j = 0; j < np; j++)
		kept[j] = -1;
	for (size_t i = 0; i < nl; i++) {
		if (match[i] < 0 || !in_order) {
			match[i] = -1;
			change = true;
		} else {
			kept[match[i]] = (long)i;
		}
	}
	for (size_t j = 0; j < np; j++)
		if (kept[j] < 0)
			change = true;
	return change;
}

/* --- the xtables lock --- */

/* Who holds an flock on (dev, ino), from /proc/locks; 0 if unknown. */
static pid_t lock_holder(dev_t dev, ino_t ino)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	pid_t pid = 0;
	FILE *f = fopen("/proc/locks", "re");

	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		unsigned long long in;
		char type[16], mode[16];
		int p;

		/* "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF" */
		if (sscanf(line, "%*[^:]: %15s %*s %15s %d %x:%x:%llu", type, mode, &p, &maj, &min,
			   &in) != 6)
			continue;
		if (streq(type, "FLOCK") && maj == major(dev) && min == minor(dev) &&
		    in == (unsigned long long)ino && p > 0) {
			pid = p;
			break;
		}
	}
	fclose(f);
	return pid;
}

int backend_xtables_lock(const char *path, unsigned wait_ms, int *ret_fd, struct diag_list *d)
{
	_cleanup_close_ int fd = -1;
	double deadline = backend_now() + wait_ms / 1000.0;
	struct stat st;

	/* As iptables' xtables_lock(): O_CREAT, mode 0600, flock(LOCK_EX). */
	fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		int err = errno;

		diag_add(d, DIAG_ERROR, "xtables lock", path, NULL, "cannot open the lock file: %s",
			 strerror(err));
		return -err;
	}
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			int err = errno;

			diag_add(d, DIAG_ERROR, "xtables lock", path, NULL, "flock failed: %s",
				 strerror(err));
			return -err;
		}
		if (backend_now() >= deadline) {
			pid_t holder = fstat(fd, &st) == 0 ? lock_holder(st.st_dev, st.st_ino) : 0;
			char comm[64] = "";

			if (holder > 0) {
				char p[64];
				FILE *f;

				snprintf(p, sizeof(p), "/proc/%d/comm", (int)holder);
				f = fopen(p, "re");
				if (f) {
					if (fgets(comm, sizeof(comm), f))
						comm[strcspn(comm, "\n")] = '\0';
					fclose(f);
				}
			}
			if (holder > 0)
				diag_add(d, DIAG_ERROR, "xtables lock", path, NULL,
					 "still held by pid %d (%s) after waiting %u ms; "
					 "not writing the tables",
					 (int)holder, comm[0] ? comm : "?", wait_ms);
			else
				diag_add(d, DIAG_ERROR, "xtables lock", path, NULL,
					 "still held by another process after waiting %u ms; "
					 "not writing the tables",
					 wait_ms);
			return -EBUSY;
		}
		/* iptables polls once a second; a daemon can afford finer. */
		usleep(20 * 1000);
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* --- backend objects --- */

static int detect_kind(enum backend_kind *ret);

int backend_new(const struct backend_options *o, struct backend **ret, struct diag_list *d)
{
	struct backend *b = calloc(1, sizeof(*b));
	enum backend_kind kind = o ? o->kind : BACKEND_AUTO;
	int r;

	if (!b)
		return -ENOMEM;
	if (o)
		b->o = *o;
	b->lock_path = strdup(o && o->lock_path ? o->lock_path : DEFAULT_LOCK_PATH);
	b->restore_cmd = o && o->restore_cmd ? strdup(o->restore_cmd) : NULL;
	if (!b->lock_path || (o && o->restore_cmd && !b->restore_cmd)) {
		backend_free(b);
		return -ENOMEM;
	}
	b->o.lock_path = b->lock_path;
	b->o.restore_cmd = b->restore_cmd;
	if (!b->o.lock_wait_ms)
		b->o.lock_wait_ms = DEFAULT_LOCK_WAIT_MS;
	if (!o || !o->commit_retries)
		b->o.commit_retries = DEFAULT_COMMIT_RETRIES;

	if (kind == BACKEND_AUTO) {
		r = detect_kind(&kind);
		if (r < 0) {
			diag_add(d, DIAG_ERROR, "backend", NULL, NULL,
				 "cannot tell which iptables this host uses: %s", strerror(-r));
			backend_free(b);
			return r;
		}
	}
	b->kind = kind;
	b->o.kind = kind;
	r = kind == BACKEND_LIBIPTC  ? backend_iptc_init(b, d)
	    : kind == BACKEND_DIRECT ? backend_direct_init(b, d)
				     : backend_restore_init(b, d);
	if (r < 0) {
		backend_free(b);
		return r;
	}
	*ret = b;
	return 0;
}

void backend_free(struct backend *b)
{
	if (!b)
		return;
	if (b->ops && b->ops->done)
		b->ops->done(b);
	free(b->lock_path);
	free(b->restore_cmd);
	free(b->save_cmd);
	free(b);
}

enum backend_kind backend_kind_of(const struct backend *b)
{
	return b->kind;
}

int backend_apply(struct backend *b, const struct ruleset *rs, struct apply_result *res,
		  struct diag_list *d)
{
	struct apply_result tmp;

	if (!b || !rs)
		return -EINVAL;
	return b->ops->apply(b, rs, res ? res : &tmp, d);
}

int backend_cleanup(struct backend *b, struct diag_list *d)
{
	struct ruleset *empty;
	struct apply_result res;
	int r;

	if (!b)
		return -EINVAL;
	empty = ruleset_new();
	if (!empty)
		return -ENOMEM;
	/* Syncing to an empty plan removes every owned chain and jump rule
	 * and nothing else. */
	r = b->ops->apply(b, empty, &res, d);
	ruleset_free(empty);
	return r;
}

/* --- --diff --- */

struct diff_out {
	FILE *f;
	const char *table;
	bool header;
	bool differs;
	char *buf;
	size_t cap;
};

static int diff_line(struct diff_out *o, char sign, const char *chain, const struct rs_rule *r)
{
	int n;

	if (!o->header) {
		fprintf(o->f, "*%s\n", o->table);
		o->header = true;
	}
	o->differs = true;
	if (!r) {
		fprintf(o->f, "%c:%s - [0:0]\n", sign, chain);
		return 0;
	}
	if (r->t.kind == BACKEND_T_FOREIGN) {
		fprintf(o->f, "%c-A %s (a rule svcnat does not write: %s)\n", sign, chain,
			r->n_matches && r->m[0].u.comment ? r->m[0].u.comment : "?");
		return 0;
	}
	n = render_rule(r, o->buf, o->cap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= o->cap) {
		char *nb = realloc(o->buf, (size_t)n + 1);

		if (!nb)
			return -ENOMEM;
		o->buf = nb;
		o->cap = (size_t)n + 1;
		render_rule(r, o->buf, o->cap);
	}
	fprintf(o->f, "%c-A %s %s\n", sign, chain, o->buf);
	return 0;
}

static int diff_rules(struct diff_out *o, const char *chain, const struct rs_rule *live, size_t nl,
		      const struct rs_rule *plan, size_t np)
{
	size_t p = 0, s = 0;
	int r;

	while (p < nl && p < np && backend_rule_same(&live[p], &plan[p]))
		p++;
	while (s < nl - p && s < np - p && backend_rule_same(&live[nl - 1 - s], &plan[np - 1 - s]))
		s++;
	for (size_t i = p; i < nl - s; i++)
		if ((r = diff_line(o, '-', chain, &live[i])) < 0)
			return r;
	for (size_t i = p; i < np - s; i++)
		if ((r = diff_line(o, '+', chain, &plan[i])) < 0)
			return r;
	return 0;
}

struct chain_pair {
	const struct rs_chain *live, *plan;
};

static bool pair_same(void *ctx, size_t i, size_t j)
{
	const struct chain_pair *p = ctx;

	return backend_rule_same(&p->live->rules[i], &p->plan->rules[j]);
}

/* Built-in chains: the jump rules, each planned one once and in order. */
static int diff_jumps(struct diff_out *o, const char *chain, const struct rs_chain *live,
		      const struct rs_chain *plan)
{
	size_t nl = live ? live->n_rules : 0, np = plan ? plan->n_rules : 0;
	_cleanup_free_ long *match = calloc(nl + 1, sizeof(long));
	_cleanup_free_ long *kept = calloc(np + 1, sizeof(long));
	struct chain_pair cp = { live, plan };
	int r;

	if (!match || !kept)
		return -ENOMEM;
	r = backend_jumps_match(nl, np, pair_same, &cp, match, kept);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nl; i++)
		if (match[i] < 0 && (r = diff_line(o, '-', chain, &live->rules[i])) < 0)
			return r;
	for (size_t j = 0; j < np; j++)
		if (kept[j] < 0 && (r = diff_line(o, '+', chain, &plan->rules[j])) < 0)
			return r;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int diff_table(struct diff_out *o, enum rs_table t, const struct ruleset *live,
		      const struct ruleset *plan)
{
	const struct rs_chains *lc = &live->t[t], *pc = &plan->t[t];
	_cleanup_free_ const char **names = calloc(lc->n + pc->n + 1, sizeof(char *));
	size_t n = 0;
	int r = 0;

	if (!names)
		return -ENOMEM;
	for (size_t i = 0; i < pc->n; i++)
		names[n++] = pc->chains[i]->name;
	for (size_t i = 0; i < lc->n; i++)
		if (!ruleset_find_chain(plan, t, lc->chains[i]->name) &&
		    (lc->chains[i]->builtin || backend_chain_owned(t, lc->chains[i]->name)))
			names[n++] = lc->chains[i]->name;
	if (n > 1)
		qsort(names, n, sizeof(*names), name_cmp);

	/* Built-in chains first, then user chains by name. */
	for (int pass = 0; pass < 2 && r >= 0; pass++) {
		for (size_t i = 0; i < n && r >= 0; i++) {
			const struct rs_chain *l = ruleset_find_chain(live, t, names[i]);
			const struct rs_chain *p = ruleset_find_chain(plan, t, names[i]);
			bool builtin = rs_chain_is_builtin(t, names[i]);

			if (builtin != (pass == 0))
				continue;
			if (builtin) {
				r = diff_jumps(o, names[i], l, p);
			} else if (!l) {
				r = diff_line(o, '+', names[i], NULL);
				for (size_t k = 0; r >= 0 && k < p->n_rules; k++)
					r = diff_line(o, '+', names[i], &p->rules[k]);
			} else if (!p) {
				for (size_t k = 0; r >= 0 && k < l->n_rules; k++)
					r = diff_line(o, '-', names[i], &l->rules[k]);
				if (r >= 0)
					r = diff_line(o, '-', names[i], NULL);
			} else {
				r = diff_rules(o, names[i], l->rules, l->n_rules, p->rules,
					       p->n_rules);
			}
		}
	}
	return r;
}

int backend_diff(struct backend *b, const struct ruleset *rs, FILE *out, struct diag_list *d)
{
	struct ruleset *live = NULL;
	struct diff_out o = { .f = out };
	int r;

	if (!b || !rs || !out)
		return -EINVAL;
	r = b->ops->read(b, rs, &live, d);
	if (r < 0)
		return r;
	o.cap = 512;
	o.buf = malloc(o.cap);
	if (!o.buf) {
		ruleset_free(live);
		return -ENOMEM;
	}
	for (int t = 0; t < RS_NTABLES && r >= 0; t++) {
		o.table = rs_table_name((enum rs_table)t);
		o.header = false;
		r = diff_table(&o, (enum rs_table)t, live, rs);
	}
	free(o.buf);
	ruleset_free(live);
	if (r < 0)
		return r;
	if (fflush(out) != 0)
		return -errno;
	return o.differs ? 1 : 0;
}

/* --- running iptables commands --- */

int backend_run(const char *const argv[], const char *in, size_t inlen, char **ret_out,
		char **ret_err, int *ret_status)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	char *bufs[2] = { NULL, NULL };
	size_t lens[2] = { 0, 0 }, caps[2] = { 0, 0 };
	size_t written = 0;
	int status = 0, r = 0;
	pid_t pid;

	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
		r = -errno;
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	if (pid == 0) {
		if (dup2(pin[0], 0) < 0 || dup2(pout[1], 1) < 0 || dup2(perr[1], 2) < 0)
			_exit(127);
		execvp(argv[0], (char *const *)argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	pin[0] = pout[1] = perr[1] = -1;
	if (!in || !inlen) {
		close(pin[1]);
		pin[1] = -1;
	} else {
		fcntl(pin[1], F_SETFL, O_NONBLOCK);
	}
	{
		/* A child that dies early must not kill us with SIGPIPE. */
		struct sigaction ign = { .sa_handler = SIG_IGN }, old;

		sigaction(SIGPIPE, &ign, &old);
		while (pout[0] >= 0 || perr[0] >= 0 || pin[1] >= 0) {
			struct pollfd pfd[3] = {
				{ .fd = pout[0], .events = POLLIN },
				{ .fd = perr[0], .events = POLLIN },
				{ .fd = pin[1], .events = POLLOUT },
			};

			if (poll(pfd, 3, -1) < 0) {
				if (errno == EINTR)
					continue;
				r = -errno;
				break;
			}
			for (int k = 0; k < 2; k++) {
				int *fd = k == 0 ? &pout[0] : &perr[0];
				ssize_t n;

				if (*fd < 0 || !(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				if (GROW(bufs[k], caps[k], lens[k] + 65536 + 1) < 0) {
					r = -ENOMEM;
					break;
				}
				n = read(*fd, bufs[k] + lens[k], 65536);
				if (n > 0) {
					lens[k] += (size_t)n;
				} else if (n == 0 || errno != EINTR) {
					close(*fd);
					*fd = -1;
				}
			}
			if (r < 0)
				break;
			if (pin[1] >= 0 && (pfd[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
				ssize_t n = write(pin[1], in + written, inlen - written);

				if (n > 0)
					written += (size_t)n;
				if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == inlen) {
					close(pin[1]);
					pin[1] = -1;
				}
			}
		}
		sigaction(SIGPIPE, &old, NULL);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r < 0)
		goto out;
	for (int k = 0; k < 2; k++) {
		if (GROW(bufs[k], caps[k], lens[k] + 1) < 0) {
			r = -ENOMEM;
			goto out;
		}
		bufs[k][lens[k]] = '\0';
	}
	*ret_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (ret_out)
		*ret_out = TAKE_PTR(bufs[0]);
	if (ret_err)
		*ret_err = TAKE_PTR(bufs[1]);
out:
	for (int k = 0; k < 2; k++) {
		if (pin[k] >= 0)
			close(pin[k]);
		if (pout[k] >= 0)
			close(pout[k]);
		if (perr[k] >= 0)
			close(perr[k]);
	}
	free(bufs[0]);
	free(bufs[1]);
	return r;
}

static size_t count_rule_lines(const char *text)
{
	size_t n = 0;

	for (const char *p = text; p && *p;) {
		if (strncmp(p, "-A ", 3) == 0)
			n++;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

static int save_rule_count(const char *cmd, size_t *ret)
{
	const char *argv[] = { cmd, NULL };
	_cleanup_free_ char *out = NULL;
	int status, r;

	r = backend_run(argv, NULL, 0, &out, NULL, &status);
	if (r < 0)
		return r;
	if (status != 0)
		return -ENOENT;
	*ret = count_rule_lines(out);
	return 0;
}

/*
 * direct when the host's iptables is legacy; restore when it is nft,
 * unless nft holds no rules and legacy does (a legacy host that merely has
 * the nft variant as its default command).
 */
static int detect_kind(enum backend_kind *ret)
{
	const char *argv[] = { "iptables", "--version", NULL };
	_cleanup_free_ char *out = NULL;
	size_t nft = 0, legacy = 0;
	int status, r;

	r = backend_run(argv, NULL, 0, &out, NULL, &status);
	if (r < 0)
		return r;
	if (status == 127) {
		/* No iptables command at all: only the in-process writers can. */
		*ret = BACKEND_DIRECT;
		return 0;
	}
	if (strstr(out, "(legacy)")) {
		*ret = BACKEND_DIRECT;
		return 0;
	}
	if (save_rule_count("iptables-nft-save", &nft) == 0 &&
	    save_rule_count("iptables-legacy-save", &legacy) == 0 && nft == 0 && legacy > 0) {
		*ret = BACKEND_DIRECT;
		return 0;
	}
	*ret = BACKEND_RESTORE;
	return 0;
}
