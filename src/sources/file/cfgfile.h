/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading a file that decides what svcnat programs or whom it trusts: a
 * services file, a KubeProxyConfiguration, a kubeconfig and the token,
 * certificate authority, client certificate and key it names.  One rule
 * for all of them:
 *
 *  - only a regular file is read.  A FIFO, a device or a socket is refused
 *    at once: the path is looked at with stat() before it is opened, and
 *    opened with O_NONBLOCK, so neither the open nor a read can block (the
 *    daemon re-reads a token file on its loop thread).  A symlink is
 *    followed (Kubernetes mounts secrets and ConfigMaps through symlinks);
 *    what it points to is what is checked;
 *  - at most a given number of bytes;
 *  - config safety: a file that users other than its owner (or root's
 *    group) can write is refused (FILE_MODE_REFUSE), warned about
 *    (FILE_MODE_WARN) or taken (FILE_MODE_IGNORE, --allow-insecure-config).
 *
 * Every failure is one diag, with the caller's source and field when the
 * file is named by another ("kc.yaml: users[0].user.tokenFile: /t: ...")
 * or the path itself as the source.  Nothing here logs.
 */
#ifndef SVCNAT_SOURCES_CFGFILE_H
#define SVCNAT_SOURCES_CFGFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "core/diag.h"

/* What to do with a file or directory writable by users other than its
 * owner (and root's group): mode & S_IWOTH, or S_IWGRP with a group other
 * than 0.  Checked on what is opened, so on a symlink's target. */
enum file_mode_check {
	FILE_MODE_IGNORE,
	FILE_MODE_WARN,   /* a warning, the file is read */
	FILE_MODE_REFUSE, /* an error, the file is rejected whole */
};

/* Where a failure is reported: source NULL = the path itself (then field
 * is usually NULL too); otherwise the message starts with the path. */
struct cfgfile_who {
	const char *source;
	const char *field;
};

/* What a file was read from: a change of any is a new content. */
struct cfgfile_stamp {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim;
};

void cfgfile_stamp_set(struct cfgfile_stamp *s, const struct stat *st);
bool cfgfile_stamp_eq(const struct cfgfile_stamp *s, const struct stat *st);

/* Whether users other than the owner (or root's group) can write it. */
bool cfgfile_mode_insecure(const struct stat *st);

/*
 * The config-safety rule on st (of path).  0: safe, or let pass by mode
 * (FILE_MODE_WARN adds a DIAG_WARNING); -EPERM with a DIAG_ERROR
 * (FILE_MODE_REFUSE); -ENOMEM.
 */
int cfgfile_check_mode(const char *path, const struct stat *st, enum file_mode_check mode,
		       const struct cfgfile_who *who, struct diag_list *d);

/*
 * Open path for reading when it is a regular file, never blocking: a
 * stat() first, then open(O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
 * and fstat() (the file may have been swapped in between).  Returns the
 * fd and *ret_st, or -errno: the open's or stat's (-ENOENT, -EACCES,
 * -ELOOP ...), -EISDIR for a directory, -ENODEV for anything else that is
 * not a regular file.  No diag (cfgfile_strerror() says why).
 */
int cfgfile_open(const char *path, struct stat *ret_st);

/* The reason for cfgfile_open()'s or cfgfile_read()'s r, for messages:
 * "not a regular file (a FIFO)" etc.  st: of the file, or NULL. */
const char *cfgfile_strerror(int r, const struct stat *st);

/*
 * Read fd to its end, at most max bytes, into a new NUL-terminated buffer
 * (*ret, the caller's to free(); *ret_len its length).  size_hint: the
 * file's size when known (the first allocation), else 0.  The bound is on
 * what is read: a file may grow while it is read, and pipes and /proc
 * files report no size.  0, -EFBIG when fd holds more than max bytes,
 * the -errno of a failed read (EINTR is retried), or -ENOMEM; no diag.
 * For a caller that opened fd itself (cfgfile_open(), or stdin).
 */
int cfgfile_read_fd(int fd, size_t size_hint, size_t max, char **ret, size_t *ret_len);

/*
 * Read path whole: cfgfile_open(), cfgfile_check_mode(), then at most max
 * bytes (the file may grow while read: the bound is on what is read).
 * *ret is NUL-terminated (the caller's, free()), *ret_len its length
 * (NULs inside are the caller's to judge), *ret_st (may be NULL) its
 * stat.  0, or -errno with one DIAG_ERROR: cfgfile_open()'s, -EFBIG
 * larger than max, -EPERM writable by others, -EIO a read error; -ENOMEM
 * without a diag.
 */
int cfgfile_read(const char *path, size_t max, enum file_mode_check mode,
		 const struct cfgfile_who *who, char **ret, size_t *ret_len, struct stat *ret_st,
		 struct diag_list *d);

/*
 * One DIAG_ERROR about what path holds ("the token file is empty"), placed
 * as cfgfile_read() places its own (who).  -EINVAL, or -ENOMEM.
 */
int cfgfile_content_error(const char *path, const struct cfgfile_who *who, struct diag_list *d,
			  const char *msg);

#endif
