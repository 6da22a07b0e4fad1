/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Running a command (iptables-restore, iptables-save, iptables --version)
 * with a buffer on its stdin and its output collected.
 */
#ifndef SVCNAT_BACKEND_RUN_H
#define SVCNAT_BACKEND_RUN_H

#include <stddef.h>

/*
 * Run argv (PATH lookup) with `in` on its stdin; collect stdout and stderr
 * (NUL-terminated, caller frees; either ret may be NULL).  *ret_status is
 * the exit code, 127 when the command could not be run, 128+N on signal N.
 * Returns 0 or -errno for a failure to run it at all.
 */
int backend_run(const char *const argv[], const char *in, size_t inlen, char **ret_out,
		char **ret_err, int *ret_status);

#endif
