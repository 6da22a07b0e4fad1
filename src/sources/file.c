/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
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
static int read_all(int fd, const char *path, size_t budget, struct diag_list *diags,
		    char **ret, size_t *ret_len)
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
static int list_dir(int fd, const char *path, struct diag_list *diags, char ***ret,
		    size_t *ret_n)
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

/*
 * Every file of the directory is decoded, so all their diags are reported;
 * a file rejected whole fails the whole read (the first such error is
 * returned) so that the source keeps its last good content.
 */
static int read_dir(int dfd, const char *path, struct decoded *out, struct diag_list *diags)
{
	char **names = NULL;
	size_t n = 0, i, used = 0;
	int r, ret = 0;

	r = list_dir(dfd, path, diags, &names, &n);
	if (r < 0)
		return r;
	if (n == 0)
		r = diag_add(diags, DIAG_WARNING, path, NULL, NULL, "no *.json files");
	for (i = 0; r >= 0 && i < n; i++) {
		_cleanup_free_ char *file = NULL;
		_cleanup_close_ int fd = -1;
		struct stat st;

		if (asprintf(&file, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/",
			     names[i]) < 0) {
			file = NULL;
			r = -ENOMEM;
			break;
		}
		fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0) {
			r = io_error(diags, file, "cannot open", errno);
		} else if (fstat(fd, &st) < 0) {
			r = io_error(diags, file, "cannot stat", errno);
		} else if (!S_ISREG(st.st_mode)) {
			r = diag_add(diags, DIAG_WARNING, file, NULL, NULL,
				     "not a regular file; ignored");
			continue;
		} else {
			r = read_fd(fd, file, DECODE_MAX_FILE_SIZE - used, out, diags, &used);
		}
		if (r == -ENOMEM)
			break;
		if (r < 0 && ret == 0)
			ret = r;
		/* Past the directory's total, the other files cannot be read. */
		if (r == -EFBIG && used > 0)
			break;
		r = 0;
	}
	names_free(names, n);
	if (r < 0)
		return r;
	return ret;
}

int file_source_read(const char *path, struct decoded *out, struct diag_list *diags)
{
	_cleanup_(decoded_done) struct decoded tmp = { 0 };
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t used = 0, i;
	int r;

	if (streq(path, "-")) {
		r = read_fd(STDIN_FILENO, "stdin", DECODE_MAX_FILE_SIZE, &tmp, diags, &used);
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return io_error(diags, path, "cannot open", errno);
		if (fstat(fd, &st) < 0)
			return io_error(diags, path, "cannot stat", errno);
		if (S_ISDIR(st.st_mode))
			r = read_dir(TAKE_FD(fd), path, &tmp, diags);
		else
			r = read_fd(fd, path, DECODE_MAX_FILE_SIZE, &tmp, diags, &used);
	}
	if (r < 0)
		return r;

	/* Hand the items over only now: a failed read leaves *out as it was. */
	if (GROW(out->services, out->cap_services, out->n_services + tmp.n_services) < 0 ||
	    GROW(out->slices, out->cap_slices, out->n_slices + tmp.n_slices) < 0)
		return -ENOMEM;
	for (i = 0; i < tmp.n_services; i++)
		out->services[out->n_services++] = tmp.services[i];
	for (i = 0; i < tmp.n_slices; i++)
		out->slices[out->n_slices++] = tmp.slices[i];
	tmp.n_services = tmp.n_slices = 0;
	return 0;
}
