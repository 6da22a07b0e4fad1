/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File source: a JSON file, "-" for stdin, or a directory (every *.json in
 * it, in name order).  A file source remembers the last good content of
 * every file it reads, so a file rejected whole (invalid JSON, too large,
 * unreadable, writable by others) keeps its previous items while the other
 * files of its directory go on being read.
 *
 * Deltas: a directory's reload reads again only the files whose
 * stat (device, inode, size, mtime, ctime) differs from what their content
 * was read from -- a file renamed over another is another inode, a
 * ConfigMap's symlink swap another target -- and those rejected last time.
 * A single file or stdin is read whole every time, but a kubectl List's
 * items that are byte for byte as last read are not decoded again
 * (sources/decodecache.h).  What changed since the
 * last hand-over to the merge engine is file_source_delta(): the objects of
 * the files read again that differ, and those of removed files.
 */
#ifndef SVCNAT_SOURCES_FILE_H
#define SVCNAT_SOURCES_FILE_H

#include <stdbool.h>

#include "core/diag.h"
#include "sources/decode/decode.h"
#include "sources/file/cfgfile.h"
#include "sources/file/fileindex.h"

/* enum file_mode_check: the rule of sources/file/cfgfile.h, on every file and
 * directory read. */

struct file_source;

/* A source for path ("-" = stdin).  Reads nothing yet.  0 or -ENOMEM. */
int file_source_new(const char *path, enum file_mode_check mode, struct file_source **ret);
void file_source_free(struct file_source *s);

/*
 * s is read once (a one-shot run): no item is kept for a later reload to
 * take unchanged (the keeping digests each item's text and holds its
 * objects: a fifth of the samples of a 10,000-service decode, and nothing
 * reads it).
 */
void file_source_read_once(struct file_source *s);

/*
 * Read the path again (a directory: the files that changed, see above).
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
 * files: the earlier file's wins, the later gets a DIAG_ERROR (when a file
 * defining that key was read again).  Object-level errors are those of the
 * files read.
 */
int file_source_reload(struct file_source *s, struct diag_list *diags);

/* The next reload reads every file, changed or not (SIGHUP). */
void file_source_reread_all(struct file_source *s);

/* What the last reload did. */
struct file_source_stats {
	size_t files;        /* files listed (1 for a single file) */
	size_t files_read;   /* of them read and decoded again */
	size_t objects_read; /* objects those files hold */
	size_t objects_reused; /* a single file's: of them taken as they were,
				* their List items not decoded again */
};

const struct file_source_stats *file_source_stats(const struct file_source *s);

/* The current content, in file order, later duplicates left out (new
 * references in *out, the caller's).  0 or -ENOMEM. */
int file_source_content(struct file_source *s, struct decoded *out);

/*
 * What changed since the last file_source_accept() (borrowed pointers,
 * valid until the next reload; file_delta_done() frees the arrays).  With
 * *ret_all, the source was never handed over (or forgotten since): put
 * holds the whole content, to be set rather than added.  0 or -ENOMEM.
 */
int file_source_delta(struct file_source *s, struct file_delta *ret, bool *ret_all);
/* That delta is the merge engine's now (all as file_source_delta() said). */
void file_source_accept(struct file_source *s, bool all);
/* The merge engine forgot the source (its path went away): the next delta
 * is the whole content. */
void file_source_forget_handed(struct file_source *s);

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
