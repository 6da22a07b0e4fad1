/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sources/file/cfgfile.h"
#include "util.h"

void cfgfile_stamp_set(struct cfgfile_stamp *s, const struct stat *st)
{
	*s = (struct cfgfile_stamp){ .dev = st->st_dev, .ino = st->st_ino, .size = st->st_size,
				     .mtim = st->st_mtim };
}

bool cfgfile_stamp_eq(const struct cfgfile_stamp *s, const struct stat *st)
{
	return s->dev == st->st_dev && s->ino == st->st_ino && s->size == st->st_size &&
	       s->mtim.tv_sec == st->st_mtim.tv_sec && s->mtim.tv_nsec == st->st_mtim.tv_nsec;
}

bool cfgfile_mode_insecure(const struct stat *st)
{
	return (st->st_mode & S_IWOTH) || ((st->st_mode & S_IWGRP) && st->st_gid != 0);
}

static int report(const char *path, const struct cfgfile_who *who, enum diag_level level,
		  struct diag_list *d, const char *fmt, ...) _printf_(5, 6);

static int report(const char *path, const struct cfgfile_who *who, enum diag_level level,
		  struct diag_list *d, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (who && who->source)
		return diag_add(d, level, who->source, NULL, who->field, "%s: %s", path, msg);
	return diag_add(d, level, path, NULL, who ? who->field : NULL, "%s", msg);
}

int cfgfile_content_error(const char *path, const struct cfgfile_who *who, struct diag_list *d,
			  const char *msg)
{
	int r = report(path, who, DIAG_ERROR, d, "%s", msg);

	return r < 0 ? r : -EINVAL;
}

int cfgfile_check_mode(const char *path, const struct stat *st, enum file_mode_check mode,
		       const struct cfgfile_who *who, struct diag_list *d)
{
	bool refuse = mode == FILE_MODE_REFUSE;

	if (mode == FILE_MODE_IGNORE || !cfgfile_mode_insecure(st))
		return 0;
	if (report(path, who, refuse ? DIAG_ERROR : DIAG_WARNING, d,
		   "writable by users other than its owner (mode %04o): %s "
		   "(chmod go-w, or --allow-insecure-config)",
		   (unsigned)(st->st_mode & 07777),
		   refuse ? "refusing it" : "svcnat would refuse it when writing rules") < 0)
		return -ENOMEM;
	return refuse ? -EPERM : 0;
}

static int not_regular(mode_t m)
{
	return S_ISDIR(m) ? -EISDIR : -ENODEV;
}

int cfgfile_open(const char *path, struct stat *ret_st)
{
	struct stat st;
	int fd;

	/* Nothing but a regular file is opened: opening a device can do
	 * things (a tape rewinds), and a FIFO's open blocks without
	 * O_NONBLOCK. */
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		*ret_st = st;
		return not_regular(st.st_mode);
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	*ret_st = st;
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return not_regular(st.st_mode);
	}
	return fd;
}

const char *cfgfile_strerror(int r, const struct stat *st)
{
	if (r == -EISDIR)
		return "not a regular file (a directory)";
	if (r != -ENODEV || !st)
		return strerror(-r);
	if (S_ISFIFO(st->st_mode))
		return "not a regular file (a FIFO)";
	if (S_ISCHR(st->st_mode))
		return "not a regular file (a character device)";
	if (S_ISBLK(st->st_mode))
		return "not a regular file (a block device)";
	if (S_ISSOCK(st->st_mode))
		return "not a regular file (a socket)";
	return "not a regular file";
}

static int too_big(const char *path, size_t max, const struct cfgfile_who *who,
		   struct diag_list *d)
{
	if (report(path, who, DIAG_ERROR, d, "larger than the limit of %zu bytes", max) < 0)
		return -ENOMEM;
	return -EFBIG;
}

int cfgfile_read_fd(int fd, size_t size_hint, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap;

	cap = size_hint > 0 ? size_hint + 1 : 65536;
	if (cap > max + 1)
		cap = max + 1;
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
			char *nb = realloc(buf, ncap + 1);

			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return -EFBIG;
	}
	buf[len] = '\0';
	*ret_len = len;
	*ret = TAKE_PTR(buf);
	return 0;
}

int cfgfile_read(const char *path, size_t max, enum file_mode_check mode, const struct cfgfile_who *who,
		 char **ret, size_t *ret_len, struct stat *ret_st, struct diag_list *d)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat st = { 0 };
	size_t len = 0;
	int r;

	fd = cfgfile_open(path, &st);
	if (fd < 0) {
		r = report(path, who, DIAG_ERROR, d, "%s", cfgfile_strerror(fd, &st));
		return r < 0 ? r : fd;
	}
	r = cfgfile_check_mode(path, &st, mode, who, d);
	if (r < 0)
		return r;
	if ((uint64_t)st.st_size > max)
		return too_big(path, max, who, d);
	r = cfgfile_read_fd(fd, (size_t)st.st_size, max, &buf, &len);
	if (r == -EFBIG)
		return too_big(path, max, who, d);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		if (report(path, who, DIAG_ERROR, d, "cannot read: %s", strerror(-r)) < 0)
			return -ENOMEM;
		return r;
	}
	if (ret_st)
		*ret_st = st;
	*ret_len = len;
	*ret = TAKE_PTR(buf);
	return 0;
}
