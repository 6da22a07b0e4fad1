/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which iptables the host runs, for --backend auto and --cleanup: the
 * iptables command's own answer, the rules each flavour holds, the legacy
 * tables the kernel has, and whether a command is installed.  A PATH search
 * and fork/exec through backend/run.h; never a shell.
 */
#ifndef SVCNAT_BACKEND_DETECT_H
#define SVCNAT_BACKEND_DETECT_H

#include <stdbool.h>

#include "backend/backend.h"

/*
 * The writer the host wants: direct when its iptables is legacy (or there
 * is no iptables command at all); nft when it is nft, unless nft holds no
 * rules and legacy does (a legacy host that merely has the nft variant as
 * its default command).  Returns 0 and sets *ret, or -errno when
 * `iptables --version` could not be run.
 */
int detect_backend_kind(enum backend_kind *ret);

/*
 * Whether cmd (a name without '/') is an executable regular file in a
 * directory of path, ':'-separated, an empty entry meaning the current
 * directory, as the shell's `command -v` finds it.  path NULL: $PATH, or the
 * system's default path when it is unset.
 */
bool detect_command(const char *cmd, const char *path);

/*
 * Whether the legacy xtables has a nat or filter table in this namespace,
 * from names files listing table names one a line (the kernel's
 * /proc/net/ip_tables_names and ip6_tables_names); no module is loaded by
 * looking.  A file that cannot be read has none.
 */
bool detect_legacy_tables(const char *const names[], size_t n_names);

#endif
