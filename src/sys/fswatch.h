/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Watching file sources with inotify, on the daemon's loop.  (Named
 * fswatch: a header sys/inotify.h here would shadow glibc's.)
 *
 * A watched path is a file or a directory, and need not exist yet (its
 * parent directory must).  "path X changed" is reported when:
 *  - the file is rewritten in place (reported when the writer closes it),
 *    replaced by a rename over it (how editors and config management
 *    write), deleted, renamed away, created later, or its mode/owner
 *    changes;
 *  - for a directory: a *.json file in it is written, renamed in or out,
 *    deleted, or changes mode; the directory itself is created, deleted or
 *    replaced;
 *  - a symlinked path's target is rewritten (the path itself is watched
 *    too, following the link), and a symlink is swapped by rename, as a
 *    Kubernetes ConfigMap volume does.
 * Events are coalesced: all events read in one loop turn give at most one
 * report per watched path.  A regular file being created is reported when
 * its writer closes it, not at creation (so a half-written file is not
 * read).  On an inotify queue overflow every path is reported.
 */
#ifndef SVCNAT_SYS_FSWATCH_H
#define SVCNAT_SYS_FSWATCH_H

#include "sys/loop.h"

struct fswatch;

/* Called from the loop, once per changed path per loop turn. */
typedef void (*fswatch_fn)(struct fswatch *w, const char *path, void *tag,
				 void *userdata);

/* Create the inotify instance and register it on the loop.  0 or -errno. */
int fswatch_new(struct loop *l, fswatch_fn fn, void *userdata,
		      struct fswatch **ret);
/* Unregister from the loop and free (NULL is a no-op). */
void fswatch_free(struct fswatch *w);

/*
 * Watch path (copied); tag is handed back to the callback.  Returns 0,
 * -ENOENT when the parent directory does not exist, -ENOSPC when the
 * inotify watch limit is reached, other -errno.
 */
int fswatch_add(struct fswatch *w, const char *path, void *tag);

#endif
