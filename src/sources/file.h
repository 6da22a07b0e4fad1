/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File source: a JSON file, "-" for stdin, or a directory (every *.json in
 * it, in name order).  A file source remembers the last good content of
 * every file it reads, so a file rejected whole (invalid JSON, too large,
 * unreadable, writable by others) keeps its previous items while the other
 * files of its directory go on being read.
 */
#ifndef SVCNAT_SOURCES_FILE_H
#define SVCNAT_SOURCES_FILE_H

#include <stdbool.h>

#include "core/diag.h"
#include "sources/decode.h"

/* What to do with a file or directory writable by users other than its
 * owner (and root's group): mode & S_IWOTH, or S_IWGRP with a group other
 * than 0.  Checked on what is opened, so on a symlink's target. */
enum file_mode_check {
	FILE_MODE_IGNORE,
	FILE_MODE_WARN,   /* a warning, the file is read */
	FILE_MODE_REFUSE, /* an error, the file is rejected whole */
};

struct file_source;

/* A source for path ("-" = stdin).  Reads nothing yet.  0 or -ENOMEM. */
int file_source_new(const char *path, enum file_mode_check mode, struct file_source **ret);
void file_source_free(struct file_source *s);

/*
 * Read the path again.
 *
 * < 0: the path itself is rejected (-ENOENT missing, -EACCES, -ELOOP,
 *      -EINVAL invalid or not a regular file or directory, -EFBIG, -EPERM
 *      writable by others, -ENOMEM ...; a diag names the path): the content
 *      is unchanged.
 * >= 0: the content is updated; the value is the number of files rejected
 *      whole (a directory's: each keeps its last good content, or none if it
 *      never had one).  Object-level errors are in diags either way.
 *
 * A directory: "*.json" regular files not starting with '.', in strcmp
 * order, each decoded with its path as the diag source; their total size is
 * bounded by DECODE_MAX_FILE_SIZE.  Two items with one key in different
 * files: the earlier file's wins, the later gets a DIAG_ERROR.
 */
int file_source_reload(struct file_source *s, struct diag_list *diags);

/* The current content (borrowed; valid until the next reload or free). */
const struct decoded *file_source_content(const struct file_source *s);

/* True when every file last listed has content (none rejected without a
 * last good version): the source says what the operator wrote. */
bool file_source_complete(const struct file_source *s);

/*
 * One-shot read of path into *out (items appended), without a mode check:
 * 0, or the first error (a directory with any file rejected whole fails as
 * a whole, every file's diags reported).  On failure *out is unchanged.
 */
int file_source_read(const char *path, struct decoded *out, struct diag_list *diags);

#endif
