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
 *
 * A directory: "*.json" regular files not starting with '.', in strcmp
 * order, each decoded with its path as the diag source.  Every file is
 * checked, but if any is rejected whole the read returns the first such
 * error and hands over nothing.  The files' total size is bounded by
 * DECODE_MAX_FILE_SIZE too.  stdin is named "stdin" in diags.  On failure
 * *out is left as it was.
 */
int file_source_read(const char *path, struct decoded *out, struct diag_list *diags);

#endif
