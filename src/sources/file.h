/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File source: a JSON file, "-" for stdin, or a directory (every *.json in
 * it, in name order).  Reading yields the decoded items, to be sent to the
 * merge engine as one MERGE_SET.
 */
#ifndef SVCNAT_SOURCES_FILE_H
#define SVCNAT_SOURCES_FILE_H

#include "core/diag.h"
#include "sources/decode.h"

/*
 * Read path into *out.  Returns 0 (object errors, if any, in diags),
 * -EINVAL / -EFBIG (a file rejected whole: the source keeps its last good
 * content), -ENOENT, -errno for I/O errors (with a diag naming the path).
 */
int file_source_read(const char *path, struct decoded *out, struct diag_list *diags);

#endif
