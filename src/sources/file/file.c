/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "sources/decode/decodecache.h"
#include "sources/file/file.h"
#include "util.h"

static int io_error(struct diag_list *diags, const char *path, const char *what, int err)
{
	if (diag_add(diags, DIAG_ERROR, path, NULL, NULL, "%s: %s", what, strerror(err)) < 0)
		return -ENOMEM;
	return -err;
}

static int too_big(struct diag_list *diags, const char *path, size_t budget)
{
	int r;

	if (budget < DECODE_MAX_FILE_SIZE)
		r = diag_add(diags, DIAG_ERROR, path, NULL, NULL,
			     "exceeds the %zu bytes left of the directory's %u-byte limit", budget,
			     DECODE_MAX_FILE_SIZE);
	else
		r = diag_add(diags, DIAG_ERROR, path, NULL, NULL,
			     "larger than the limit of %zu bytes", budget);
	return r < 0 ? r : -EFBIG;
}

/* Reads fd (st: its stat) and decodes it into *out (appended; unchanged
 * on failure); cache: the file's items kept from its last decode, or NULL.
 * At most budget bytes. */
static int read_fd(int fd, const struct stat *st, const char *path, size_t budget,
		   struct decode_cache *cache, struct decoded *out, struct diag_list *diags, size_t *used)
{
	_cleanup_free_ char *buf = NULL;
	bool regular = S_ISREG(st->st_mode);
	size_t len = 0;
	int r;

	if (regular && (uint64_t)st->st_size > budget)
		return too_big(diags, path, budget);
	r = cfgfile_read_fd(fd, regular ? (size_t)st->st_size : 0, budget, &buf, &len);
	if (r == -EFBIG)
		return too_big(diags, path, budget);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return io_error(diags, path, "cannot read", -r);
	*used += len;
	return decode_buffer_cached(buf, len, path, cache, out, diags);
}

static int has_json_suffix(const char *name)
{
	size_t n = strlen(name);

	/* Dot files are skipped as a shell's *.json would (editor lock files
	 * like ".#a.json" among them). */
	return name[0] != '.' && n > 5 && streq(name + n - 5, ".json");
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)

/* Sorted *.json names of the directory open at fd (fd is taken over). */
static int list_dir(int fd, const char *path, struct diag_list *diags, char ***ret, size_t *ret_n)
{
	_cleanup_(closedirp) DIR *d = NULL;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	d = fdopendir(fd);
	if (!d) {
		int err = errno;

		close(fd);
		return io_error(diags, path, "cannot read directory", err);
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (!has_json_suffix(de->d_name))
			continue;
		if (n >= DECODE_MAX_ITEMS) {
			names_free(names, n);
			if (diag_add(diags, DIAG_ERROR, path, NULL, NULL,
				     "more than %d *.json files", DECODE_MAX_ITEMS) < 0)
				return -ENOMEM;
			return -EFBIG;
		}
		if (GROW(names, cap, n + 1) < 0) {
			names_free(names, n);
			return -ENOMEM;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			names_free(names, n);
			return -ENOMEM;
		}
		n++;
	}
	if (errno) {
		names_free(names, n);
		return io_error(diags, path, "cannot read directory", errno);
	}
	if (n > 1)
		qsort_safe(names, n, sizeof(*names), name_cmp);
	*ret = names;
	*ret_n = n;
	return 0;
}

/* One file's last good content, and what it was read from. */
struct file_entry {
	char *path;          /* the file's path (the directory's path + "/" + name);
			      * the index's definitions point to it */
	struct decoded good; /* its items as last read successfully */
	bool has_good;
	bool known;          /* id below is what good was read from, and no
			      * write after the read can have kept it */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	size_t bytes;        /* read, for the directory's size limit */
	struct decode_cache *cache; /* a single file's items kept (decodecache.h) */
	bool seen;           /* in the listing being read (reload) */
	bool fresh;          /* created by the reload in progress */
};

struct file_source {
	char *path;
	enum file_mode_check mode;
	struct file_entry **files; /* sorted by path (= by name within a directory) */
	size_t n_files;
	struct file_index *index;  /* which file defines each object */
	bool index_stale;          /* an update failed (ENOMEM): rebuilt from files */
	bool handed;               /* the index's state was handed over (accept) */
	bool reread_all;           /* the next reload reads every file */
	bool complete;
	bool once;                 /* file_source_read_once(): no item caches */
	int first_error;           /* of the last reload's rejected files */
	struct file_source_stats stats;
};

static void entry_free(struct file_entry *e)
{
	if (!e)
		return;
	free(e->path);
	decoded_done(&e->good);
	decode_cache_free(e->cache);
	free(e);
}

int file_source_new(const char *path, enum file_mode_check mode, struct file_source **ret)
{
	struct file_source *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->path = strdup(path);
	if (!s->path || file_index_new(&s->index) < 0) {
		free(s->path);
		free(s);
		return -ENOMEM;
	}
	s->mode = mode;
	*ret = s;
	return 0;
}

void file_source_free(struct file_source *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_files; i++)
		entry_free(s->files[i]);
	free(s->files);
	file_index_free(s->index);
	free(s->path);
	free(s);
}

bool file_source_complete(const struct file_source *s)
{
	return s->complete;
}

const struct file_source_stats *file_source_stats(const struct file_source *s)
{
	return &s->stats;
}

void file_source_reread_all(struct file_source *s)
{
	s->reread_all = true;
}

/* A config decides where the node's traffic goes: the rule of
 * sources/file/cfgfile.h.  Returns 0 or -EPERM with a diag. */
static int check_mode(const struct file_source *s, const char *path, const struct stat *st,
		      struct diag_list *diags)
{
	return cfgfile_check_mode(path, st, s->mode, NULL, diags);
}

static int entry_cmp(const void *key, const void *elem)
{
	return strcmp(key, (*(struct file_entry *const *)elem)->path);
}

static struct file_entry **entry_find(struct file_source *s, const char *path)
{
	if (!s->n_files)
		return NULL;
	return bsearch(path, s->files, s->n_files, sizeof(*s->files), entry_cmp);
}

static bool ts_eq(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Whether st is the file e was read from. */
static bool entry_unchanged(const struct file_entry *e, const struct stat *st)
{
	return e->known && e->has_good && e->dev == st->st_dev && e->ino == st->st_ino &&
	       e->size == st->st_size && ts_eq(&e->mtime, &st->st_mtim) &&
	       ts_eq(&e->ctime, &st->st_ctim);
}

/*
 * A file's timestamps have the granularity of the kernel's coarse clock
 * (a few ms): a write in the same tick as the read would leave them as
 * they were.  A file changed less than this long before it was read is
 * read again next time, whatever its stat says.
 */
#define RACY_NSEC 100000000LL

/* read_at: the time taken just before the file was looked at (not after
 * the read and decode, which may take longer than RACY_NSEC themselves). */
static void entry_remember(struct file_entry *e, const struct stat *st,
			   const struct timespec *read_at)
{
	long long age;

	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->size = st->st_size;
	e->mtime = st->st_mtim;
	e->ctime = st->st_ctim;
	age = (long long)(read_at->tv_sec - st->st_ctim.tv_sec) * 1000000000LL +
	      (read_at->tv_nsec - st->st_ctim.tv_nsec);
	e->known = age >= RACY_NSEC;
}

/* The index said ENOMEM: it is rebuilt from the files at the next reload,
 * and handed over whole. */
static int index_failed(struct file_source *s)
{
	s->index_stale = true;
	return -ENOMEM;
}

static int index_rebuild(struct file_source *s)
{
	size_t i, j;
	int r = 0;

	if (!s->index_stale)
		return 0;
	file_index_clear(s->index);
	s->handed = false;
	for (i = 0; r >= 0 && i < s->n_files; i++) {
		const struct file_entry *e = s->files[i];

		for (j = 0; r >= 0 && j < e->good.n_services; j++)
			r = file_index_put(s->index, e->path, e->good.services[j], NULL);
		for (j = 0; r >= 0 && j < e->good.n_slices; j++)
			r = file_index_put(s->index, e->path, NULL, e->good.slices[j]);
	}
	if (r < 0)
		return -ENOMEM;
	s->index_stale = false;
	return 0;
}

/* e's items leave the index (and the entry keeps them). */
static int index_drop_entry(struct file_source *s, const struct file_entry *e)
{
	size_t j;
	int r = 0;

	for (j = 0; r >= 0 && j < e->good.n_services; j++)
		r = file_index_drop(s->index, e->path, e->good.services[j], NULL);
	for (j = 0; r >= 0 && j < e->good.n_slices; j++)
		r = file_index_drop(s->index, e->path, NULL, e->good.slices[j]);
	return r < 0 ? index_failed(s) : 0;
}

/*
 * Objects of a file read again that equal what the file held before are
 * the old objects again: downstream (the delta, the merge engine) they
 * are unchanged by identity.
 */
static void keep_equal(struct file_source *s, const struct file_entry *e, struct decoded *tmp)
{
	for (size_t j = 0; j < tmp->n_services; j++) {
		struct service *old = file_index_get(s->index, e->path, tmp->services[j], NULL);

		if (old && old != tmp->services[j] && service_equal(old, tmp->services[j])) {
			service_unref(tmp->services[j]);
			tmp->services[j] = service_ref(old);
		}
	}
	for (size_t j = 0; j < tmp->n_slices; j++) {
		struct epslice *old = file_index_get(s->index, e->path, NULL, tmp->slices[j]);

		if (old && old != tmp->slices[j] && epslice_equal(old, tmp->slices[j])) {
			epslice_unref(tmp->slices[j]);
			tmp->slices[j] = epslice_ref(old);
		}
	}
}

/* e's content becomes *tmp (taken over), in the index too. */
static int entry_replace(struct file_source *s, struct file_entry *e, struct decoded *tmp)
{
	size_t j;
	int r;

	if (!s->index_stale)
		keep_equal(s, e, tmp);
	r = s->index_stale ? 0 : index_drop_entry(s, e);
	for (j = 0; r >= 0 && !s->index_stale && j < tmp->n_services; j++)
		r = file_index_put(s->index, e->path, tmp->services[j], NULL);
	for (j = 0; r >= 0 && !s->index_stale && j < tmp->n_slices; j++)
		r = file_index_put(s->index, e->path, NULL, tmp->slices[j]);
	/* The content is the truth either way; a failed index is rebuilt
	 * from it. */
	decoded_done(&e->good);
	e->good = *tmp;
	*tmp = (struct decoded){ 0 };
	e->has_good = true;
	s->stats.files_read++;
	s->stats.objects_read += e->good.n_services + e->good.n_slices;
	return r < 0 ? index_failed(s) : 0;
}

/* A file rejected whole keeps its last good content, if it had one. */
static void reject(struct file_source *s, struct file_entry *e, int err)
{
	if (s->first_error == 0)
		s->first_error = err;
	e->known = false; /* tried again at every reload */
}

/*
 * Read one file into e: cfgfile_open()'s rule, so nothing but a regular
 * file is opened.  Returns 0, 1 if it is rejected whole (e keeps its
 * content), 2 if it is no regular file (ignored), -ENOMEM.  *used: the
 * bytes of the files before it.
 */
static int read_entry(struct file_source *s, struct file_entry *e, size_t *used, struct diag_list *diags)
{
	_cleanup_close_ int fd = -1;
	struct decoded tmp = { 0 };
	struct timespec read_at;
	struct stat st;
	size_t before = *used;
	int r;

	clock_gettime(CLOCK_REALTIME, &read_at);
	fd = cfgfile_open(e->path, &st);
	if (fd == -EISDIR || fd == -ENODEV) {
		r = diag_add(diags, DIAG_WARNING, e->path, NULL, NULL, "not a regular file; ignored");
		return r < 0 ? r : 2;
	}
	if (fd < 0)
		r = io_error(diags, e->path, "cannot open", -fd);
	else
		r = check_mode(s, e->path, &st, diags);
	if (r >= 0)
		r = read_fd(fd, &st, e->path, DECODE_MAX_FILE_SIZE - *used, NULL, &tmp, diags, used);
	if (r < 0) {
		decoded_done(&tmp);
		if (r == -ENOMEM)
			return r;
		/* What it had counts against the limit still. */
		*used = before + (e->has_good ? e->bytes : 0);
		reject(s, e, r);
		return 1;
	}
	e->bytes = *used - before;
	r = entry_replace(s, e, &tmp);
	if (r < 0)
		return r;
	entry_remember(e, &st, &read_at);
	return 0;
}

static struct file_entry *entry_new(const char *path)
{
	struct file_entry *e = calloc(1, sizeof(*e));

	if (e && !(e->path = strdup(path))) {
		free(e);
		e = NULL;
	}
	if (e)
		e->fresh = true;
	return e;
}

/* The entry of path for the new listing: the old listing's (marked seen)
 * or a new one (fresh).  NULL on ENOMEM. */
static struct file_entry *entry_take(struct file_source *s, const char *path)
{
	struct file_entry **old = entry_find(s, path);

	if (!old)
		return entry_new(path);
	(*old)->seen = true;
	return *old;
}

/*
 * One listed file of a directory: read again when its stat differs from
 * what its content was read from (or always, with reread_all).  Returns as
 * read_entry().
 */
static int dir_file(struct file_source *s, struct file_entry *e, size_t *used,
		    struct diag_list *diags)
{
	struct stat st;

	if (!s->reread_all && stat(e->path, &st) == 0 && S_ISREG(st.st_mode) &&
	    entry_unchanged(e, &st)) {
		if (e->bytes > DECODE_MAX_FILE_SIZE - *used) {
			int r = too_big(diags, e->path, DECODE_MAX_FILE_SIZE - *used);

			if (r == -ENOMEM)
				return r;
			reject(s, e, r);
			return 1;
		}
		*used += e->bytes;
		return 0;
	}
	return read_entry(s, e, used, diags);
}

/*
 * The new listing v replaces the old: old entries not seen in it (their
 * files are gone) leave the index and are freed.
 */
static int set_entries(struct file_source *s, struct file_entry **v, size_t n)
{
	int r = 0;

	for (size_t i = 0; i < s->n_files; i++) {
		struct file_entry *e = s->files[i];

		if (e->seen)
			continue;
		if (r >= 0 && !s->index_stale)
			r = index_drop_entry(s, e);
		entry_free(e);
	}
	free(s->files);
	s->files = v;
	s->n_files = n;
	s->complete = true;
	for (size_t i = 0; i < n; i++) {
		if (!v[i]->has_good)
			s->complete = false;
		v[i]->seen = v[i]->fresh = false;
	}
	return r;
}

/*
 * A reload failed half-way (ENOMEM): the old listing stays, holding the
 * content read meanwhile; the new entries go, and the index, which may
 * name them, is rebuilt from the listing.
 */
static void listing_abort(struct file_source *s, struct file_entry **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i]->fresh)
			entry_free(v[i]);
	for (size_t i = 0; i < s->n_files; i++)
		s->files[i]->seen = false;
	free(v);
	s->index_stale = true;
}

/*
 * Read the files of the directory open at dfd (taken over) that changed.
 * Returns the number of files rejected whole, or -errno.
 */
static int read_dir(struct file_source *s, int dfd, struct diag_list *diags)
{
	const char *sep = s->path[strlen(s->path) - 1] == '/' ? "" : "/";
	struct file_entry **v = NULL;
	char **names = NULL;
	size_t n = 0, i, used = 0, nv = 0;
	int r, rejected = 0;

	r = list_dir(dfd, s->path, diags, &names, &n);
	if (r < 0)
		return r;
	if (n == 0)
		r = diag_add(diags, DIAG_WARNING, s->path, NULL, NULL, "no *.json files");
	if (n && !(v = calloc(n, sizeof(*v))))
		r = -ENOMEM;
	for (i = 0; r >= 0 && i < n; i++) {
		_cleanup_free_ char *path = NULL;
		struct file_entry *e;

		if (asprintf(&path, "%s%s%s", s->path, sep, names[i]) < 0) {
			path = NULL;
			r = -ENOMEM;
			break;
		}
		e = entry_take(s, path);
		if (!e) {
			r = -ENOMEM;
			break;
		}
		r = dir_file(s, e, &used, diags);
		if (r == 2) {
			/* Not a regular file: ignored, as if it were not there
			 * (an old entry of it leaves with set_entries()). */
			e->seen = false;
			if (e->fresh)
				entry_free(e);
			r = 0;
			continue;
		}
		v[nv++] = e;
		if (r > 0)
			rejected++;
	}
	names_free(names, n);
	if (r < 0) {
		listing_abort(s, v, nv);
		return r;
	}
	r = set_entries(s, v, nv);
	return r < 0 ? r : rejected;
}

/* A single file (or stdin) at fd, st its stat: always read again (a file
 * is decoded whole); rejected whole, the source keeps its content. */
static int read_single(struct file_source *s, int fd, const struct stat *st, const char *name,
		       struct diag_list *diags)
{
	struct decoded tmp = { 0 };
	struct file_entry **v, *e;
	size_t used = 0;
	int r;

	v = calloc(1, sizeof(*v));
	e = v ? entry_take(s, name) : NULL;
	if (!e) {
		free(v);
		return -ENOMEM;
	}
	/* Its items are kept from one read to the next: an unchanged one is
	 * not decoded again.  Without the memory for it, decoded all. */
	if (!e->cache && !s->once)
		(void)decode_cache_new(&e->cache);
	r = read_fd(fd, st, name, DECODE_MAX_FILE_SIZE, e->cache, &tmp, diags, &used);
	if (r < 0) {
		decoded_done(&tmp);
		e->seen = false;
		if (e->fresh)
			entry_free(e);
		free(v);
		return r;
	}
	s->stats.objects_reused = e->cache ? decode_cache_hits(e->cache) : 0;
	v[0] = e;
	e->bytes = used;
	r = entry_replace(s, e, &tmp);
	if (set_entries(s, v, 1) < 0)
		r = -ENOMEM;
	return r;
}

/*
 * Open --config's path: a regular file as cfgfile_open() does, or a
 * directory; anything else is refused unopened (a FIFO's open would block,
 * a device's may act).  The fd, *ret_st its stat, or -errno with a diag.
 */
static int open_top(const char *path, struct stat *ret_st, struct diag_list *diags)
{
	int fd = cfgfile_open(path, ret_st);

	if (fd == -EISDIR) {
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0)
			return io_error(diags, path, "cannot open", errno);
		if (fstat(fd, ret_st) < 0) {
			int err = errno;

			close(fd);
			return io_error(diags, path, "cannot stat", err);
		}
		return fd;
	}
	if (fd == -ENODEV) {
		if (diag_add(diags, DIAG_ERROR, path, NULL, NULL, "not a regular file or a directory") < 0)
			return -ENOMEM;
		return -EINVAL;
	}
	if (fd < 0)
		return io_error(diags, path, "cannot open", -fd);
	return fd;
}

int file_source_reload(struct file_source *s, struct diag_list *diags)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r, rejected = 0;

	s->first_error = 0;
	s->stats = (struct file_source_stats){ 0 };
	r = index_rebuild(s);
	if (r < 0)
		return r;
	if (streq(s->path, "-")) {
		if (fstat(STDIN_FILENO, &st) < 0)
			return io_error(diags, "stdin", "cannot stat", errno);
		rejected = read_single(s, STDIN_FILENO, &st, "stdin", diags);
	} else {
		fd = open_top(s->path, &st, diags);
		if (fd < 0)
			return fd;
		r = check_mode(s, s->path, &st, diags);
		if (r < 0)
			return r;
		if (S_ISDIR(st.st_mode))
			rejected = read_dir(s, TAKE_FD(fd), diags);
		else
			rejected = read_single(s, fd, &st, s->path, diags);
	}
	if (rejected < 0)
		return rejected;
	s->reread_all = false;
	s->stats.files = s->n_files;
	if (!s->index_stale && file_index_report_dups(s->index, diags) < 0)
		return -ENOMEM;
	return rejected;
}

int file_source_content(struct file_source *s, struct decoded *out)
{
	struct decoded c = { 0 };
	size_t ns = 0, ne = 0, i, j;
	int r;

	r = index_rebuild(s);
	if (r < 0)
		return r;
	for (i = 0; i < s->n_files; i++) {
		ns += s->files[i]->good.n_services;
		ne += s->files[i]->good.n_slices;
	}
	if (GROW(c.services, c.cap_services, ns) < 0 || GROW(c.slices, c.cap_slices, ne) < 0) {
		decoded_done(&c);
		return -ENOMEM;
	}
	for (i = 0; i < s->n_files; i++) {
		const struct file_entry *e = s->files[i];

		for (j = 0; j < e->good.n_services; j++)
			if (file_index_wins(s->index, e->path, e->good.services[j], NULL))
				c.services[c.n_services++] = service_ref(e->good.services[j]);
		for (j = 0; j < e->good.n_slices; j++)
			if (file_index_wins(s->index, e->path, NULL, e->good.slices[j]))
				c.slices[c.n_slices++] = epslice_ref(e->good.slices[j]);
	}
	*out = c;
	return 0;
}

int file_source_delta(struct file_source *s, struct file_delta *ret, bool *ret_all)
{
	int r = index_rebuild(s);

	if (r < 0)
		return r;
	r = file_index_delta(s->index, !s->handed, ret);
	if (r < 0)
		return r;
	*ret_all = !s->handed;
	return 0;
}

void file_source_accept(struct file_source *s, bool all)
{
	file_index_accept(s->index, all);
	s->handed = true;
}

void file_source_forget_handed(struct file_source *s)
{
	s->handed = false;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct file_source *, file_source_free)

void file_source_read_once(struct file_source *s)
{
	s->once = true;
}

int file_source_read(const char *path, struct decoded *out, struct diag_list *diags)
{
	_cleanup_(file_source_freep) struct file_source *s = NULL;
	_cleanup_(decoded_done) struct decoded c = { 0 };
	int r;

	r = file_source_new(path, FILE_MODE_IGNORE, &s);
	if (r < 0)
		return r;
	file_source_read_once(s);
	r = file_source_reload(s, diags);
	if (r > 0)
		r = s->first_error;
	if (r >= 0)
		r = file_source_content(s, &c);
	if (r < 0)
		return r;
	if (GROW(out->services, out->cap_services, out->n_services + c.n_services) < 0 ||
	    GROW(out->slices, out->cap_slices, out->n_slices + c.n_slices) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < c.n_services; i++)
		out->services[out->n_services++] = service_ref(c.services[i]);
	for (size_t i = 0; i < c.n_slices; i++)
		out->slices[out->n_slices++] = epslice_ref(c.slices[i]);
	return 0;
}
