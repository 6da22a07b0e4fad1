/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The state a writer keeps for the next process (src/backend/keepfile.c)
 * and the nf_tables writer's state as bytes (src/backend/nft/nftkeep.c),
 * in a private directory, without a kernel:
 *   - a file round trip: generation and payload back, mode 0600, the
 *     directory created 0700;
 *   - never taken, with one warning naming the file: another namespace's
 *     key (cookie, inode, boot), another writer's name, truncated (at
 *     every length), one byte flipped, group/other access to the file or
 *     the directory, another owner, a symlink, larger than the limit;
 *   - a state of every match and target kind, both families, handles and
 *     stale chains, refs and other programs' chains: decoded equal, the
 *     chain svcnat deleted and the stamps left out; svcnat's own chains
 *     left as bytes until needed, found the same as a plan chain of the
 *     same rules and not as one that differs, encoded again unchanged;
 *   - every truncation and every single-byte change of the payload decodes
 *     to a state or to -EINVAL, never anything else (ASan watches).
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/keepfile.h"
#include "backend/nft/nftkeep.h"
#include "core/owned.h"
#include "core/parse.h"
#include "util.h"

static const struct keepkey key = {
	.cookie = 0x1122334455667788ull, .ino = 4026531840ull, .dev = 4,
	.boot = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 },
};

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-keepfile.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void path_of(const char *d, char *buf, size_t n)
{
	assert_int_equal(keepfile_path(d, "nft", &key, buf, n), 0);
}

/* Read back expecting failure r, with exactly one warning naming the file
 * and containing `why`. */
static void refused(const char *d, int r, const char *why)
{
	struct diag_list dl;
	void *buf = NULL;
	size_t off = 0, len = 0;
	uint32_t gen = 0;
	char path[256];

	path_of(d, path, sizeof(path));
	diag_list_init(&dl);
	assert_int_equal(keepfile_read(d, "nft", &key, &gen, &buf, &off, &len, &dl), r);
	assert_null(buf);
	assert_int_equal(dl.n, 1);
	assert_int_equal(dl.items[0].level, DIAG_WARNING);
	assert_string_equal(dl.items[0].source, path);
	if (!strstr(dl.items[0].msg, why))
		fail_msg("'%s' does not say '%s'", dl.items[0].msg, why);
	diag_list_done(&dl);
}

static void write_payload(const char *d, uint32_t gen, const char *payload)
{
	struct diag_list dl;

	diag_list_init(&dl);
	assert_int_equal(keepfile_write(d, "nft", &key, gen, payload, strlen(payload), &dl), 0);
	assert_int_equal(dl.n, 0);
	diag_list_done(&dl);
}

static void test_round_trip(void **state)
{
	char sub[128], path[256];
	struct diag_list dl;
	_cleanup_free_ void *buf = NULL;
	size_t off, len;
	uint32_t gen = 0;
	struct stat st;

	(void)state;
	snprintf(sub, sizeof(sub), "%s/run", dir);
	write_payload(sub, 42, "hello, kernel");
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	path_of(sub, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal((size_t)st.st_size, KEEPFILE_HEADER_SIZE + 13);
	diag_list_init(&dl);
	assert_int_equal(keepfile_read(sub, "nft", &key, &gen, &buf, &off, &len, &dl), 0);
	assert_int_equal(dl.n, 0);
	assert_int_equal(gen, 42);
	assert_int_equal(len, 13);
	assert_memory_equal((char *)buf + off, "hello, kernel", 13);
	/* Written again: replaced whole (rename), no temporary left. */
	write_payload(sub, 43, "x");
	free(buf);
	buf = NULL;
	assert_int_equal(keepfile_read(sub, "nft", &key, &gen, &buf, &off, &len, &dl), 0);
	assert_int_equal(gen, 43);
	assert_int_equal(len, 1);
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "test $(ls -A '%s' | wc -l) = 1", sub);
		assert_int_equal(system(cmd), 0);
	}
	/* Removed: no file is no warning. */
	assert_int_equal(keepfile_remove(sub, "nft", &key), 0);
	assert_int_equal(keepfile_read(sub, "nft", &key, &gen, &buf, &off, &len, &dl), -ENOENT);
	assert_int_equal(dl.n, 0);
	diag_list_done(&dl);
}

static void test_dir_default(void **state)
{
	(void)state;
	unsetenv("SVCNAT_RUNTIME_DIR");
	assert_string_equal(keepfile_dir(NULL), KEEPFILE_DEFAULT_DIR);
	setenv("SVCNAT_RUNTIME_DIR", "/tmp/x", 1);
	assert_string_equal(keepfile_dir(NULL), "/tmp/x");
	assert_string_equal(keepfile_dir("/given"), "/given");
	setenv("SVCNAT_RUNTIME_DIR", "", 1);
	assert_null(keepfile_dir(NULL));
	assert_null(keepfile_dir(""));
	unsetenv("SVCNAT_RUNTIME_DIR");
}

static void test_other_key(void **state)
{
	struct keepkey k = key;
	const char *why = NULL;
	uint32_t gen;
	size_t off, len;
	uint8_t buf[KEEPFILE_HEADER_SIZE + 1];

	(void)state;
	write_payload(dir, 7, "p");
	/* The same inode (the file's name) but another namespace's cookie:
	 * a namespace that reused the inode. */
	{
		struct diag_list dl;
		void *b = NULL;

		diag_list_init(&dl);
		k.cookie++;
		assert_int_equal(keepfile_read(dir, "nft", &k, &gen, &b, &off, &len, &dl), -ESTALE);
		assert_int_equal(dl.n, 1);
		assert_non_null(strstr(dl.items[0].msg, "another network namespace or boot"));
		diag_list_done(&dl);
	}
	/* Field by field, through the parser. */
	{
		int fd;
		char path[256];

		path_of(dir, path, sizeof(path));
		fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(read(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
		close(fd);
	}
	assert_int_equal(keepfile_parse(buf, sizeof(buf), "nft", &key, &gen, &off, &len, &why), 0);
	assert_int_equal(gen, 7);
	k = key;
	k.ino++;
	assert_int_equal(keepfile_parse(buf, sizeof(buf), "nft", &k, &gen, &off, &len, &why), -ESTALE);
	k = key;
	k.dev++;
	assert_int_equal(keepfile_parse(buf, sizeof(buf), "nft", &k, &gen, &off, &len, &why), -ESTALE);
	k = key;
	k.boot[15] ^= 1;
	assert_int_equal(keepfile_parse(buf, sizeof(buf), "nft", &k, &gen, &off, &len, &why), -ESTALE);
	assert_int_equal(keepfile_parse(buf, sizeof(buf), "xt", &key, &gen, &off, &len, &why), -ESTALE);
	assert_string_equal(why, "written by another writer");
	buf[8] = 2; /* another format version */
	assert_int_equal(keepfile_parse(buf, sizeof(buf), "nft", &key, &gen, &off, &len, &why), -ESTALE);
}

static void test_damaged(void **state)
{
	char path[256];
	uint8_t buf[KEEPFILE_HEADER_SIZE + 64];
	const char *why;
	uint32_t gen;
	size_t off, len, n;
	int fd;

	(void)state;
	write_payload(dir, 9, "0123456789012345678901234567890123456789");
	path_of(dir, path, sizeof(path));
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	n = (size_t)read(fd, buf, sizeof(buf));
	close(fd);
	assert_int_equal(n, KEEPFILE_HEADER_SIZE + 40);
	/* Every truncation: refused, never read past the end (ASan). */
	for (size_t k = 0; k < n; k++) {
		uint8_t *cut = malloc(k ? k : 1);

		memcpy(cut, buf, k);
		assert_int_equal(keepfile_parse(cut, k, "nft", &key, &gen, &off, &len, &why), -EINVAL);
		free(cut);
	}
	/* Every flipped bit of the checksummed part: refused. */
	for (size_t k = KEEPFILE_HEADER_SIZE; k < n; k++) {
		buf[k] ^= 0x10;
		assert_int_equal(keepfile_parse(buf, n, "nft", &key, &gen, &off, &len, &why), -EINVAL);
		assert_string_equal(why, "damaged (its checksum does not match)");
		buf[k] ^= 0x10;
	}
	assert_int_equal(keepfile_parse(buf, n, "nft", &key, &gen, &off, &len, &why), 0);
	/* The file itself cut short: one warning. */
	assert_int_equal(truncate(path, (off_t)n - 1), 0);
	refused(dir, -EINVAL, "truncated");
	assert_int_equal(truncate(path, 10), 0);
	refused(dir, -EINVAL, "not a svcnat state file");
	/* Larger than the limit: refused without reading it (a sparse file). */
	assert_int_equal(truncate(path, (off_t)KEEPFILE_MAX_SIZE + 1), 0);
	refused(dir, -EFBIG, "larger than the limit");
	unlink(path);
}

static void test_unsafe(void **state)
{
	char path[256], other[256];
	struct diag_list dl;

	(void)state;
	write_payload(dir, 1, "p");
	path_of(dir, path, sizeof(path));
	assert_int_equal(chmod(path, 0644), 0);
	refused(dir, -EPERM, "readable or writable by group or others");
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	refused(dir, -EPERM, "writable by group or others");
	/* Nor written there. */
	diag_list_init(&dl);
	assert_int_equal(keepfile_write(dir, "nft", &key, 2, "q", 1, &dl), -EPERM);
	assert_int_equal(dl.n, 1);
	assert_string_equal(dl.items[0].source, dir);
	diag_list_done(&dl);
	assert_int_equal(chmod(dir, 0700), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		refused(dir, -EPERM, "owned by another user");
		assert_int_equal(chown(path, 0, 0), 0);
		assert_int_equal(chown(dir, 65534, 65534), 0);
		refused(dir, -EPERM, "owned by another user");
		assert_int_equal(chown(dir, 0, 0), 0);
	}
	/* A symlink is not followed. */
	snprintf(other, sizeof(other), "%s/elsewhere", dir);
	assert_int_equal(rename(path, other), 0);
	assert_int_equal(symlink(other, path), 0);
	refused(dir, -ELOOP, "");
	unlink(path);
	unlink(other);
}

/* --- nftkeep --- */

static const char nat4[] =
	"*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n"
	":KUBE-MARK-MASQ - [0:0]\n:KUBE-POSTROUTING - [0:0]\n:KUBE-SEP-A - [0:0]\n"
	":KUBE-SERVICES - [0:0]\n:KUBE-SVC-A - [0:0]\n:KUBE-GONE - [0:0]\n:KUBE-NODEPORTS - [0:0]\n"
	"-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
	"-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n"
	"-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000\n"
	"-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n"
	"-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000\n"
	"-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully\n"
	"-A KUBE-SEP-A -s 198.18.65.10/32 -m comment --comment \"e2e/web:http\" -j KUBE-MARK-MASQ\n"
	"-A KUBE-SEP-A -p tcp -m comment --comment \"e2e/web:http\" -m recent --set --name KUBE-SEP-A --mask 255.255.255.255 --rsource -m tcp -j DNAT --to-destination 198.18.65.10:8080\n"
	"-A KUBE-SERVICES -d 198.19.0.10/32 -p tcp -m comment --comment \"e2e/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-A\n"
	"-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n"
	"-A KUBE-SVC-A ! -s 198.18.64.0/18 -d 198.19.0.10/32 -p tcp -m comment --comment \"e2e/web:http cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
	"-A KUBE-SVC-A -m comment --comment \"e2e/web:http\" -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-A --mask 255.255.255.255 --rsource -j KUBE-SEP-A\n"
	"-A KUBE-SVC-A -m comment --comment \"e2e/web:http\" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-A\n"
	"-A KUBE-SVC-A -i eth+ -p udp -m udp --dport 30000:30010 -g KUBE-SEP-A\n"
	"-A KUBE-GONE -j RETURN\n"
	"COMMIT\n";

static const char filter6[] =
	"*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n"
	":KUBE-FORWARD - [0:0]\n:KUBE-SERVICES - [0:0]\n"
	"-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n"
	"-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name  ct_state_invalid_dropped_pkts -j DROP\n"
	"-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT\n"
	"-A KUBE-FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n"
	"-A KUBE-SERVICES -d 2001:2::10/128 -p tcp -m comment --comment \"e2e/none has no endpoints\" -m tcp --dport 80 -j REJECT --reject-with icmp6-port-unreachable\n"
	"COMMIT\n";

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct nftread_chain *)a)->c->name,
		      ((const struct nftread_chain *)b)->c->name);
}

/* Family f's tables of st from iptables-save text, as a read leaves them:
 * built-in chains with hooks, handles 100, 101, ... (none for KUBE-SVC-A:
 * stale), a stamp on every chain. */
static void family_from(struct nftread_state *st, enum writer_family f, const char *text,
			unsigned flags)
{
	struct ruleset *rs = NULL;
	struct diag_list dl;
	struct nftread_family *fam = &st->f[f];
	uint64_t h = 100;

	diag_list_init(&dl);
	if (ruleset_parse(text, strlen(text), flags, &rs, &dl) != 0)
		fail_msg("%s", dl.n ? dl.items[0].msg : "parse");
	diag_list_done(&dl);
	fam->rs = ruleset_new();
	assert_non_null(fam->rs);
	for (int t = 0; t < RS_NTABLES; t++) {
		struct nftread_table *tb = &fam->t[t];

		for (size_t i = 0; i < rs->t[t].n; i++) {
			const struct rs_chain *pc = rs->t[t].chains[i];
			struct nftread_chain *ch;

			assert_int_equal(GROW(tb->chains, tb->cap, tb->n + 1), 0);
			ch = &tb->chains[tb->n++];
			memset(ch, 0, sizeof(*ch));
			ch->c = ruleset_copy_chain(fam->rs, pc);
			assert_non_null(ch->c);
			ch->c->stamp = 77;
			ch->stamp = 77;
			ch->handle = h++;
			ch->base = ch->hook_ok = pc->builtin;
			ch->stale = streq(pc->name, "KUBE-SVC-A");
			ch->gone = streq(pc->name, "KUBE-GONE");
			if (!ch->stale && pc->n_rules) {
				ch->handles = calloc(pc->n_rules, sizeof(*ch->handles));
				ch->cap_handles = pc->n_rules;
				for (size_t j = 0; j < pc->n_rules; j++)
					ch->handles[j] = h++;
			}
		}
		if (tb->n)
			qsort(tb->chains, tb->n, sizeof(*tb->chains), name_cmp);
		tb->exists = tb->n > 0;
	}
	fam->read = true;
	ruleset_free(rs);
}

static struct nftread_state *sample_state(void)
{
	struct nftread_state *st = nftread_state_new();
	struct nftread_table *tb;
	struct rs_rule *r;

	assert_non_null(st);
	family_from(st, WRITER_IPV4, nat4, 0);
	family_from(st, WRITER_IPV6, filter6, PARSE_IPV6);
	tb = &st->f[WRITER_IPV4].t[RS_NAT];
	/* Another program's rule found in one of svcnat's chains. */
	r = rs_chain_append(nftread_find(st, WRITER_IPV4, RS_NAT, "KUBE-SERVICES")->c);
	r->t.kind = OWNED_T_FOREIGN;
	r->n_matches = 1;
	r->m[0].kind = RS_M_COMMENT;
	r->m[0].u.comment = ruleset_strdup(st->f[WRITER_IPV4].rs, "an nft comment");
	nftread_find(st, WRITER_IPV4, RS_NAT, "KUBE-SERVICES")->stale = true;
	/* Whom other programs' rules jump to (twice), and their chains. */
	tb->refs = calloc(3, sizeof(*tb->refs));
	tb->refs[tb->n_refs++] = "KUBE-MARK-MASQ";
	tb->refs[tb->n_refs++] = "KUBE-SVC-A";
	tb->refs[tb->n_refs++] = "KUBE-SVC-A";
	tb->cap_refs = 3;
	tb->others = calloc(2, sizeof(*tb->others));
	tb->others[tb->n_others++] = "CNI-HOSTPORT";
	tb->others[tb->n_others++] = "DOCKER";
	tb->cap_others = 2;
	st->genid = 5;
	return st;
}

static void assert_same_state(const struct nftread_state *a, const struct nftread_state *b)
{
	for (int f = 0; f < 2; f++) {
		assert_int_equal(a->f[f].read, b->f[f].read);
		for (int t = 0; t < RS_NTABLES; t++) {
			const struct nftread_table *ta = &a->f[f].t[t], *tb = &b->f[f].t[t];
			size_t j = 0;

			assert_int_equal(ta->exists, tb->exists);
			for (size_t i = 0; i < ta->n; i++) {
				const struct nftread_chain *x = &ta->chains[i], *y;

				if (x->gone)
					continue; /* left out */
				assert_true(j < tb->n);
				y = &tb->chains[j++];
				assert_string_equal(x->c->name, y->c->name);
				assert_int_equal(x->c->builtin, y->c->builtin);
				assert_int_equal(x->base, y->base);
				assert_int_equal(x->hook_ok, y->hook_ok);
				assert_int_equal(x->handle, y->handle);
				assert_int_equal(x->stale, y->stale);
				assert_int_equal(y->stamp, 0);
				assert_int_equal(y->c->stamp, 0);
				assert_false(y->gone);
				assert_int_equal(x->c->n_rules, y->c->n_rules);
				for (size_t k = 0; k < x->c->n_rules; k++) {
					const struct rs_rule *p = &x->c->rules[k], *q = &y->c->rules[k];

					if (p->t.kind == OWNED_T_FOREIGN) {
						assert_int_equal(q->t.kind, OWNED_T_FOREIGN);
						assert_string_equal(p->m[0].u.comment, q->m[0].u.comment);
					} else {
						assert_true(rs_rule_equal(p, q));
						assert_true(owned_rule_same(p, q));
					}
					if (!x->stale)
						assert_int_equal(x->handles[k], y->handles[k]);
				}
			}
			assert_int_equal(j, tb->n);
			assert_int_equal(ta->n_refs, tb->n_refs);
			for (size_t i = 0; i < ta->n_refs; i++)
				assert_string_equal(ta->refs[i], tb->refs[i]);
			assert_int_equal(ta->n_others, tb->n_others);
			for (size_t i = 0; i < ta->n_others; i++)
				assert_string_equal(ta->others[i], tb->others[i]);
		}
	}
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nftread_state *, nftread_state_free)

/* nftkeep_decode() of a copy of the n bytes at p (it takes its buffer). */
static int decode_copy(const void *p, size_t n, struct nftread_state **ret)
{
	void *copy = malloc(n ? n : 1);

	assert_non_null(copy);
	memcpy(copy, p, n);
	return nftkeep_decode(copy, 0, n, ret);
}

static void test_nft_round_trip(void **state)
{
	_cleanup_(nftread_state_freep) struct nftread_state *st = sample_state();
	_cleanup_(nftread_state_freep) struct nftread_state *back = NULL;
	struct keepbuf b = { 0 };

	(void)state;
	assert_non_null(nftread_find(st, WRITER_IPV4, RS_NAT, "KUBE-GONE"));
	assert_int_equal(nftkeep_encode(st, &b), 0);
	assert_int_equal(decode_copy(b.p, b.n, &back), 0);
	/* svcnat's own chains stay bytes until a sync needs their rules;
	 * the built-in ones are decoded at once. */
	{
		struct nftread_chain *svc = nftread_find(back, WRITER_IPV4, RS_NAT, "KUBE-SVC-A");
		struct nftread_chain *pre = nftread_find(back, WRITER_IPV4, RS_NAT, "PREROUTING");
		const struct rs_chain *orig = nftread_find(st, WRITER_IPV4, RS_NAT, "KUBE-SVC-A")->c;
		struct rs_chain other = *orig;
		struct keepbuf scratch = { 0 };

		assert_non_null(svc->lazy);
		assert_int_equal(svc->n_lazy, 4);
		assert_int_equal(svc->c->n_rules, 0);
		/* So do their handles (decoded with the rules), where known. */
		assert_false(svc->handles_lazy);
		assert_true(svc->stale);
		{
			struct nftread_chain *sep = nftread_find(back, WRITER_IPV4, RS_NAT, "KUBE-SEP-A");

			assert_true(sep->handles_lazy);
			assert_null(sep->handles);
			assert_false(sep->stale);
			assert_int_equal(nftkeep_chain_rules(back, WRITER_IPV4, sep), 0);
			assert_false(sep->handles_lazy);
			assert_non_null(sep->handles);
			assert_int_equal(sep->c->n_rules, 2);
			assert_int_equal(sep->handles[1],
					 nftread_find(st, WRITER_IPV4, RS_NAT, "KUBE-SEP-A")->handles[1]);
		}
		assert_null(pre->lazy);
		assert_int_equal(pre->c->n_rules, 1);
		/* The plan's chain as the same bytes: the same. */
		assert_int_equal(nftkeep_chain_same(svc, orig, &scratch), 1);
		other.n_rules = 3;
		assert_int_equal(nftkeep_chain_same(svc, &other, &scratch), 0);
		other = *orig;
		other.rules = calloc(orig->n_rules, sizeof(*other.rules));
		memcpy(other.rules, orig->rules, orig->n_rules * sizeof(*other.rules));
		other.rules[2].m[1].u.stat.probability = 0.25;
		assert_int_equal(nftkeep_chain_same(svc, &other, &scratch), 0);
		free(other.rules);
		keepbuf_done(&scratch);
		/* Kept as bytes, encoded again as they were. */
		{
			struct keepbuf again = { 0 };

			assert_int_equal(nftkeep_encode(back, &again), 0);
			assert_int_equal(again.n, b.n);
			assert_memory_equal(again.p, b.p, b.n);
			keepbuf_done(&again);
		}
	}
	assert_int_equal(nftkeep_materialize(back), 0);
	assert_null(nftread_find(back, WRITER_IPV4, RS_NAT, "KUBE-SVC-A")->lazy);
	assert_same_state(st, back);
	assert_null(nftread_find(back, WRITER_IPV4, RS_NAT, "KUBE-GONE"));
	assert_true(nftread_referenced(back, WRITER_IPV4, RS_NAT, "KUBE-SVC-A"));
	assert_true(nftread_other(back, WRITER_IPV4, RS_NAT, "DOCKER"));
	assert_non_null(nftread_find(back, WRITER_IPV6, RS_FILTER, "KUBE-FORWARD"));
	assert_int_equal(back->genid, 0);
	/* Only one family read: the other stays unread. */
	{
		_cleanup_(nftread_state_freep) struct nftread_state *one = nftread_state_new();
		_cleanup_(nftread_state_freep) struct nftread_state *back1 = NULL;
		struct keepbuf b1 = { 0 };

		family_from(one, WRITER_IPV6, filter6, PARSE_IPV6);
		assert_int_equal(nftkeep_encode(one, &b1), 0);
		assert_int_equal(decode_copy(b1.p, b1.n, &back1), 0);
		assert_int_equal(nftkeep_materialize(back1), 0);
		assert_false(back1->f[WRITER_IPV4].read);
		assert_same_state(one, back1);
		keepbuf_done(&b1);
	}
	keepbuf_done(&b);
}

/* a and b, built alike, hold the same chains and rules. */
static void assert_same_rules(const struct nftread_state *a, const struct nftread_state *b)
{
	for (int f = 0; f < 2; f++)
		for (int t = 0; t < RS_NTABLES; t++) {
			const struct nftread_table *ta = &a->f[f].t[t], *tb = &b->f[f].t[t];

			assert_int_equal(ta->n, tb->n);
			for (size_t i = 0; i < ta->n; i++) {
				const struct rs_chain *x = ta->chains[i].c, *y = tb->chains[i].c;

				assert_string_equal(x->name, y->name);
				assert_int_equal(x->n_rules, y->n_rules);
				for (size_t k = 0; k < x->n_rules; k++)
					assert_true(x->rules[k].t.kind == OWNED_T_FOREIGN
							    ? y->rules[k].t.kind == OWNED_T_FOREIGN
							    : rs_rule_equal(&x->rules[k], &y->rules[k]));
			}
		}
}

/* Between syncs svcnat's own chains wait as bytes of their own: the same
 * bytes a kept file holds, fewer than the decoded rules, decoded again to
 * the same rules. */
static void test_nft_pack(void **state)
{
	_cleanup_(nftread_state_freep) struct nftread_state *st = sample_state();
	_cleanup_(nftread_state_freep) struct nftread_state *ref = sample_state();
	_cleanup_(nftread_state_freep) struct nftread_state *back = NULL;
	struct keepbuf b0 = { 0 }, b1 = { 0 }, scratch = { 0 };
	struct nftread_chain *svc = nftread_find(st, WRITER_IPV4, RS_NAT, "KUBE-SVC-A");
	struct nftread_chain *pre = nftread_find(st, WRITER_IPV4, RS_NAT, "PREROUTING");
	const struct rs_chain *orig = nftread_find(ref, WRITER_IPV4, RS_NAT, "KUBE-SVC-A")->c;
	size_t before = nftread_state_bytes(st);

	(void)state;
	assert_int_equal(nftkeep_encode(st, &b0), 0);
	/* Nothing decoded since the last pack: nothing to do. */
	nftkeep_pack(st);
	assert_null(svc->lazy);
	st->unpacked = true;
	nftkeep_pack(st);
	assert_false(st->unpacked);
	assert_non_null(svc->lazy);
	assert_non_null(svc->lazy_own);
	assert_int_equal(svc->n_lazy, 4);
	assert_int_equal(svc->c->n_rules, 0);
	assert_null(svc->c->rules);
	assert_null(pre->lazy); /* built-in chains stay decoded */
	assert_int_equal(pre->c->n_rules, 1);
	assert_true(nftread_state_bytes(st) < before);
	assert_int_equal(nftkeep_chain_same(svc, orig, &scratch), 1);
	/* The kept file is byte for byte the same. */
	assert_int_equal(nftkeep_encode(st, &b1), 0);
	assert_int_equal(b1.n, b0.n);
	assert_memory_equal(b1.p, b0.p, b0.n);
	assert_int_equal(nftkeep_materialize(st), 0);
	assert_true(st->unpacked);
	assert_null(svc->lazy);
	assert_null(svc->lazy_own);
	assert_same_rules(ref, st);
	/* A plan's chain taken as bytes, none decoded, handles untouched. */
	assert_int_equal(nftkeep_chain_take(svc, orig, &scratch), 0);
	assert_int_equal(svc->n_lazy, 4);
	assert_int_equal(svc->c->n_rules, 0);
	assert_int_equal(nftkeep_chain_same(svc, orig, &scratch), 1);
	assert_int_equal(nftkeep_chain_take(pre, orig, &scratch), -ENOTSUP);
	assert_int_equal(pre->c->n_rules, 1);
	assert_int_equal(nftkeep_chain_rules(st, WRITER_IPV4, svc), 0);
	assert_int_equal(svc->c->n_rules, 4);
	for (size_t k = 0; k < 4; k++)
		assert_true(rs_rule_equal(&svc->c->rules[k], &orig->rules[k]));
	/* A packed state kept and taken back. */
	st->unpacked = true;
	nftkeep_pack(st);
	keepbuf_done(&b1);
	assert_int_equal(nftkeep_encode(st, &b1), 0);
	assert_int_equal(decode_copy(b1.p, b1.n, &back), 0);
	assert_int_equal(nftkeep_materialize(back), 0);
	assert_int_equal(nftkeep_materialize(st), 0);
	assert_same_state(st, back);
	keepbuf_done(&b0);
	keepbuf_done(&b1);
	keepbuf_done(&scratch);
}

/* The arena's garbage (strings of rules since packed) goes, what is still
 * used stays. */
static void test_nft_compact(void **state)
{
	_cleanup_(nftread_state_freep) struct nftread_state *st = sample_state();
	_cleanup_(nftread_state_freep) struct nftread_state *ref = sample_state();
	struct ruleset *old;
	char junk[1000];
	size_t used;

	(void)state;
	memset(junk, 'x', sizeof(junk) - 1);
	junk[sizeof(junk) - 1] = '\0';
	st->unpacked = true;
	nftkeep_pack(st);
	old = st->f[WRITER_IPV4].rs;
	/* Below the slack: nothing moves. */
	assert_int_equal(nftread_compact(st), 0);
	assert_ptr_equal(st->f[WRITER_IPV4].rs, old);
	for (int i = 0; i < 5000; i++)
		assert_non_null(ruleset_strdup(old, junk));
	used = ruleset_arena_bytes(old);
	assert_true(used > (4u << 20));
	assert_int_equal(nftread_compact(st), 0);
	assert_ptr_not_equal(st->f[WRITER_IPV4].rs, old);
	assert_true(ruleset_arena_bytes(st->f[WRITER_IPV4].rs) < 64 * 1024);
	assert_int_equal(st->f[WRITER_IPV4].arena_kept, ruleset_arena_bytes(st->f[WRITER_IPV4].rs));
	assert_true(nftread_referenced(st, WRITER_IPV4, RS_NAT, "KUBE-SVC-A"));
	assert_true(nftread_other(st, WRITER_IPV4, RS_NAT, "DOCKER"));
	assert_int_equal(nftread_find(st, WRITER_IPV4, RS_NAT, "KUBE-SERVICES")->c->stamp, 77);
	assert_int_equal(nftkeep_materialize(st), 0);
	assert_same_rules(ref, st);
}

static void test_nft_unknown_kind(void **state)
{
	_cleanup_(nftread_state_freep) struct nftread_state *st = sample_state();
	struct keepbuf b = { 0 };
	struct rs_rule *r = &nftread_find(st, WRITER_IPV4, RS_NAT, "KUBE-MARK-MASQ")->c->rules[0];

	(void)state;
	/* A match this format does not know: nothing kept rather than a
	 * state that drops it. */
	r->m[r->n_matches++].kind = 0x7e;
	assert_int_equal(nftkeep_encode(st, &b), -ENOTSUP);
	keepbuf_done(&b);
	r->n_matches--;
	r->t.kind = 0x7e;
	assert_int_equal(nftkeep_encode(st, &b), -ENOTSUP);
	keepbuf_done(&b);
}

static void test_nft_damaged(void **state)
{
	_cleanup_(nftread_state_freep) struct nftread_state *st = sample_state();
	struct keepbuf b = { 0 };
	size_t ok = 0;

	(void)state;
	assert_int_equal(nftkeep_encode(st, &b), 0);
	/* Every truncation, and one byte more. */
	for (size_t k = 0; k < b.n; k++) {
		struct nftread_state *x = NULL;
		assert_int_equal(decode_copy(b.p, k, &x), -EINVAL);
		assert_null(x);
	}
	{
		struct nftread_state *x = NULL;
		uint8_t *more = malloc(b.n + 1);

		memcpy(more, b.p, b.n);
		more[b.n] = 0;
		assert_int_equal(nftkeep_decode(more, 0, b.n + 1, &x), -EINVAL);
	}
	/* Every byte set to a few values: a state (the byte was data) or
	 * -EINVAL, never a crash or a leak. */
	for (size_t k = 0; k < b.n; k++) {
		static const uint8_t v[] = { 0x00, 0x01, 0x7f, 0xff };
		uint8_t keep = b.p[k];

		for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
			struct nftread_state *x = NULL;
			int r;

			b.p[k] = v[i];
			r = decode_copy(b.p, b.n, &x);
			/* Chains kept as bytes are checked when decoded. */
			if (r == 0)
				r = nftkeep_materialize(x);
			assert_true(r == 0 || r == -EINVAL);
			ok += r == 0;
			nftread_state_free(x);
		}
		b.p[k] = keep;
	}
	assert_true(ok > 0);
	keepbuf_done(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test(test_dir_default),
		cmocka_unit_test_setup_teardown(test_other_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsafe, setup, teardown),
		cmocka_unit_test(test_nft_round_trip),
		cmocka_unit_test(test_nft_pack),
		cmocka_unit_test(test_nft_compact),
		cmocka_unit_test(test_nft_unknown_kind),
		cmocka_unit_test(test_nft_damaged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
