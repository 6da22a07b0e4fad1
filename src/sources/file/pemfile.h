/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A CA bundle, client certificate or client key held as bytes: read with
 * the rule of sources/file/cfgfile.h (a regular file, never a blocking
 * open, a size cap, config safety) and read again when it changes on disk
 * (certificates rotate).  Its users hand the bytes to libcurl
 * (CURLOPT_*_BLOB), so libcurl never opens a path itself: a FIFO swapped
 * in would block the loop, a huge file would be read whole.  Shared by
 * the API server source (kubeconfig.c) and the etcd source.  Nothing here
 * logs.
 */
#ifndef SVCNAT_SOURCES_PEMFILE_H
#define SVCNAT_SOURCES_PEMFILE_H

#include <stddef.h>

#include "core/diag.h"
#include "sources/file/cfgfile.h"

#define PEMFILE_MAX_SIZE (1u << 20) /* bytes of a CA, certificate or key file */

/* Embedded in its owner; zeroed = no file, no bytes. */
struct pemfile {
	char *file; /* the path (owned); NULL: the bytes came from elsewhere */
	char *data; /* the bytes, NUL-terminated; NULL: none */
	size_t len;
	struct cfgfile_stamp stamp; /* of the file when read */
};

/* Free the path and the bytes (wiped: a key is a secret); p is zeroed. */
void pemfile_done(struct pemfile *p);

/*
 * Read p->file now, with cfgfile_read() (mode, who as there) and at most
 * PEMFILE_MAX_SIZE bytes; an empty file or one holding a NUL is refused.
 * On success the bytes replace p's; on failure p keeps what it held.
 * Returns 1 when the bytes differ from what p held, 0 when not, or
 * -errno with one DIAG_ERROR (cfgfile_read()'s, -EINVAL for the content);
 * -ENOMEM without a diag.
 */
int pemfile_read(struct pemfile *p, enum file_mode_check mode, const struct cfgfile_who *who,
		 struct diag_list *d);

/*
 * pemfile_read() when the file changed since it was read (or was never
 * read): only a stat() when it did not, so a file swapped for a FIFO
 * costs no open.  0 also when p has no file.
 */
int pemfile_refresh(struct pemfile *p, enum file_mode_check mode, const struct cfgfile_who *who,
		    struct diag_list *d);

#endif
