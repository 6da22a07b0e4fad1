/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "sources/file.h"
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

/*
 * Read all of fd, at most `budget` bytes: pipes and /proc files report no
 * size, and a regular file may grow while being read, so the bound is on
 * what is read, not on what fstat said.
 */
static int read_all(int fd, const char *path, size_t budget, struct diag_list *diags, char **ret,
		    size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap;
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return io_error(diags, path, "cannot stat", errno);
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > budget)
		return too_big(diags, path, budget);
	cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 65536;
	if (cap > budget + 1)
		cap = budget + 1;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			size_t ncap = cap > budget / 2 ? budget + 1 : cap * 2;
			char *nb;

			nb = realloc(buf, ncap);
			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return io_error(diags, path, "cannot read", errno);
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > budget)
			return too_big(diags, path, budget);
	}
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/* Reads fd and decodes it into *out (appended; unchanged on failure). */
static int read_fd(int fd, const char *path, size_t budget, struct decoded *out,
		   struct diag_list *diags, size_t *used)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = read_all(fd, path, budget, diags, &buf, &len);
	if (r < 0)
		return r;
	*used += len;
	return decode_buffer(buf, len, path, out, diags);
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

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

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

/* One file's last good content. */
struct file_entry {
	char *path;          /* the file's path (the directory's path + "/" + name) */
	struct decoded good; /* its items as last read successfully */
	bool has_good;
};

struct file_source {
	char *path;
	enum file_mode_check mode;
	struct file_entry *files; /* sorted by path (= by name within a directory) */
	size_t n_files;
	struct decoded content; /* every file's good items, deduplicated */
	bool complete;
	int first_error; /* of the last reload's rejected files */
};

static void entry_done(struct file_entry *e)
{
	free(e->path);
	decoded_done(&e->good);
}

static void entries_free(struct file_entry *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		entry_done(&v[i]);
	free(v);
}

int file_source_new(const char *path, enum file_mode_check mode, struct file_source **ret)
{
	struct file_source *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->path = strdup(path);
	if (!s->path) {
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
	entries_free(s->files, s->n_files);
	decoded_done(&s->content);
	free(s->path);
	free(s);
}

const struct decoded *file_source_content(const struct file_source *s)
{
	return &s->content;
}

bool file_source_complete(const struct file_source *s)
{
	return s->complete;
}

/*
 * A config decides where the node's traffic goes: one that users other than
 * its owner (or root's group) can write is refused, or warned about.
 * Returns 0 or -EPERM with a diag.
 */
static int check_mode(const struct file_source *s, const char *path, const struct stat *st,
		      struct diag_list *diags)
{
	bool refuse = s->mode == FILE_MODE_REFUSE;

	if (s->mode == FILE_MODE_IGNORE ||
	    !((st->st_mode & S_IWOTH) || ((st->st_mode & S_IWGRP) && st->st_gid != 0)))
		return 0;
	if (diag_add(diags, refuse ? DIAG_ERROR : DIAG_WARNING, path, NULL, NULL,
		     "writable by users other than its owner (mode %04o): %s "
		     "(chmod go-w, or --allow-insecure-config)",
		     (unsigned)(st->st_mode & 07777),
		     refuse ? "refusing it" : "svcnat would refuse it when writing rules") < 0)
		return -ENOMEM;
	return refuse ? -EPERM : 0;
}

static int entry_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct file_entry *)elem)->path);
}

static struct file_entry *entry_find(struct file_source *s, const char *path)
{
	if (!s->n_files)
		return NULL;
	return bsearch(path, s->files, s->n_files, sizeof(*s->files), entry_cmp);
}

/* A file rejected whole keeps its last good content, if it had one. */
static void keep_old(struct file_source *s, struct file_entry *e, struct file_entry *old, int err)
{
	if (s->first_error == 0)
		s->first_error = err;
	if (old && old->has_good) {
		e->good = old->good;
		e->has_good = true;
		old->good = (struct decoded){ 0 };
		old->has_good = false;
	}
}

/*
 * Read one file of a directory (open at fd, or fd < 0 with errno set) into
 * e.  Returns 0, 1 if it is rejected whole (e keeps old's content), 2 if it
 * is no regular file (ignored, e stays empty), -ENOMEM.
 */
static int read_entry(struct file_source *s, int fd, struct file_entry *e, struct file_entry *old,
		      size_t *used, struct diag_list *diags)
{
	struct decoded tmp = { 0 };
	struct stat st;
	int r;

	if (fd < 0)
		r = io_error(diags, e->path, "cannot open", errno);
	else if (fstat(fd, &st) < 0)
		r = io_error(diags, e->path, "cannot stat", errno);
	else if (!S_ISREG(st.st_mode)) {
		r = diag_add(diags, DIAG_WARNING, e->path, NULL, NULL, "not a regular file; ignored");
		return r < 0 ? r : 2;
	} else
		r = check_mode(s, e->path, &st, diags);
	if (r >= 0)
		r = read_fd(fd, e->path, DECODE_MAX_FILE_SIZE - *used, &tmp, diags, used);
	if (r < 0) {
		decoded_done(&tmp);
		if (r == -ENOMEM)
			return r;
		keep_old(s, e, old, r);
		return 1;
	}
	e->good = tmp;
	e->has_good = true;
	return 0;
}

/* Read every file of the directory open at dfd (taken over) into *ret.
 * Returns the number of files rejected whole, or -errno. */
static int read_dir(struct file_source *s, int dfd, struct file_entry **ret, size_t *ret_n,
		    struct diag_list *diags)
{
	struct file_entry *v = NULL;
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
		const char *sep = s->path[strlen(s->path) - 1] == '/' ? "" : "/";
		struct file_entry *e = &v[nv];
		_cleanup_close_ int fd = -1;

		if (asprintf(&e->path, "%s%s%s", s->path, sep, names[i]) < 0) {
			e->path = NULL;
			r = -ENOMEM;
			break;
		}
		/* O_NONBLOCK: a FIFO must not block the open. */
		fd = open(e->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		r = read_entry(s, fd, e, entry_find(s, e->path), &used, diags);
		if (r == 2) {
			free(e->path);
			e->path = NULL;
			r = 0;
			continue;
		}
		nv++;
		if (r > 0)
			rejected++;
	}
	names_free(names, n);
	if (r < 0) {
		entries_free(v, nv);
		return r;
	}
	*ret = v;
	*ret_n = nv;
	return rejected;
}

/*
 * Mark in drop[] the later of two items with one key (items of different
 * files: each file is deduplicated by its decoder already), with a diag
 * naming the file that loses.  src[i] is item i's file.
 */
static int find_dups(struct decode_key *k, size_t n, bool *drop, const char *const *src, struct diag_list *diags)
{
	size_t i;

	qsort_safe(k, n, sizeof(*k), decode_key_cmp);
	for (i = 1; i < n; i++) {
		char obj[600];

		if (strcmp(k[i].ns, k[i - 1].ns) || strcmp(k[i].name, k[i - 1].name))
			continue;
		drop[k[i].idx] = true;
		snprintf(obj, sizeof(obj), "%s%s/%s", k[i].what, k[i].ns, k[i].name);
		if (diag_add(diags, DIAG_ERROR, src[k[i].idx], obj, NULL,
			     "defined more than once; the later definition is ignored") < 0)
			return -ENOMEM;
	}
	return 0;
}

static const char *nz(const char *s)
{
	return s ? s : "";
}

/* content = every entry's good items in file order, later duplicates dropped. */
static int build_content(struct file_source *s, struct diag_list *diags)
{
	struct decoded c = { 0 };
	_cleanup_free_ struct decode_key *k = NULL;
	_cleanup_free_ const char **src = NULL;
	_cleanup_free_ bool *drop = NULL;
	size_t ns = 0, ne = 0, i, j, n, max;
	int r = 0;

	for (i = 0; i < s->n_files; i++) {
		ns += s->files[i].good.n_services;
		ne += s->files[i].good.n_slices;
	}
	max = ns > ne ? ns : ne;
	if (ns && !(c.services = calloc(ns, sizeof(*c.services))))
		return -ENOMEM;
	if (ne && !(c.slices = calloc(ne, sizeof(*c.slices)))) {
		free(c.services);
		return -ENOMEM;
	}
	c.cap_services = ns;
	c.cap_slices = ne;
	if (max && s->n_files > 1) {
		k = calloc(max, sizeof(*k));
		src = calloc(max, sizeof(*src));
		drop = calloc(max, sizeof(*drop));
		if (!k || !src || !drop) {
			decoded_done(&c);
			return -ENOMEM;
		}
	}
	/* services */
	for (i = 0, n = 0; i < s->n_files; i++)
		for (j = 0; j < s->files[i].good.n_services; j++, n++) {
			const struct service *v = s->files[i].good.services[j];

			if (k) {
				k[n] = (struct decode_key){ nz(v->ns), nz(v->name), "", n };
				src[n] = s->files[i].path;
			}
		}
	if (k)
		r = find_dups(k, ns, drop, src, diags);
	for (i = 0, n = 0; r >= 0 && i < s->n_files; i++)
		for (j = 0; j < s->files[i].good.n_services; j++, n++)
			if (!drop || !drop[n])
				c.services[c.n_services++] = service_ref(s->files[i].good.services[j]);
	/* slices */
	if (drop)
		memset(drop, 0, max * sizeof(*drop));
	for (i = 0, n = 0; r >= 0 && i < s->n_files; i++)
		for (j = 0; j < s->files[i].good.n_slices; j++, n++) {
			const struct epslice *v = s->files[i].good.slices[j];

			if (k) {
				k[n] = (struct decode_key){ nz(v->ns), nz(v->name), decode_slice_kind(v), n };
				src[n] = s->files[i].path;
			}
		}
	if (k && r >= 0)
		r = find_dups(k, ne, drop, src, diags);
	for (i = 0, n = 0; r >= 0 && i < s->n_files; i++)
		for (j = 0; j < s->files[i].good.n_slices; j++, n++)
			if (!drop || !drop[n])
				c.slices[c.n_slices++] = epslice_ref(s->files[i].good.slices[j]);
	if (r < 0) {
		decoded_done(&c);
		return r;
	}
	decoded_done(&s->content);
	s->content = c;
	return 0;
}

static void set_entries(struct file_source *s, struct file_entry *v, size_t n)
{
	size_t i;

	entries_free(s->files, s->n_files);
	s->files = v;
	s->n_files = n;
	s->complete = true;
	for (i = 0; i < n; i++)
		if (!v[i].has_good)
			s->complete = false;
}

/* A single file (or stdin) at fd: rejected whole, the source keeps its content. */
static int read_single(struct file_source *s, int fd, const char *name, struct file_entry **ret,
		       struct diag_list *diags)
{
	struct file_entry *v;
	size_t used = 0;
	int r;

	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->path = strdup(name);
	if (!v->path) {
		free(v);
		return -ENOMEM;
	}
	r = read_fd(fd, name, DECODE_MAX_FILE_SIZE, &v->good, diags, &used);
	if (r < 0) {
		entries_free(v, 1);
		return r;
	}
	v->has_good = true;
	*ret = v;
	return 0;
}

int file_source_reload(struct file_source *s, struct diag_list *diags)
{
	_cleanup_close_ int fd = -1;
	struct file_entry *v = NULL;
	struct stat st;
	size_t n = 1;
	int r, rejected = 0;

	s->first_error = 0;
	if (streq(s->path, "-")) {
		r = read_single(s, STDIN_FILENO, "stdin", &v, diags);
		if (r < 0)
			return r;
	} else {
		/* O_NONBLOCK: a FIFO named by --config must not block the open. */
		fd = open(s->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0)
			return io_error(diags, s->path, "cannot open", errno);
		if (fstat(fd, &st) < 0)
			return io_error(diags, s->path, "cannot stat", errno);
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
			if (diag_add(diags, DIAG_ERROR, s->path, NULL, NULL,
				     "not a regular file or a directory") < 0)
				return -ENOMEM;
			return -EINVAL;
		}
		r = check_mode(s, s->path, &st, diags);
		if (r < 0)
			return r;
		if (S_ISDIR(st.st_mode))
			rejected = read_dir(s, TAKE_FD(fd), &v, &n, diags);
		else
			rejected = read_single(s, fd, s->path, &v, diags);
		if (rejected < 0)
			return rejected;
	}
	set_entries(s, v, n);
	r = build_content(s, diags);
	if (r < 0)
		return r;
	return rejected;
}

int file_source_read(const char *path, struct decoded *out, struct diag_list *diags)
{
	struct file_source *s = NULL;
	const struct decoded *c;
	size_t i;
	int r;

	r = file_source_new(path, FILE_MODE_IGNORE, &s);
	if (r < 0)
		return r;
	r = file_source_reload(s, diags);
	if (r > 0)
		r = s->first_error;
	if (r < 0)
		goto out;
	c = &s->content;
	if (GROW(out->services, out->cap_services, out->n_services + c->n_services) < 0 ||
	    GROW(out->slices, out->cap_slices, out->n_slices + c->n_slices) < 0) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < c->n_services; i++)
		out->services[out->n_services++] = service_ref(c->services[i]);
	for (i = 0; i < c->n_slices; i++)
		out->slices[out->n_slices++] = epslice_ref(c->slices[i]);
	r = 0;
out:
	file_source_free(s);
	return r;
}
