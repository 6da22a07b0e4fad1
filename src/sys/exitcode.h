/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * svcnat's exit status, for main and the daemon alike: 0 ok, EXIT_RUNTIME
 * for a runtime failure, EXIT_USAGE for a usage error or bad configuration
 * (README, svcnat(8)).  --diff uses diff(1)'s: 0 equal, 1 different, 2 could
 * not compare.
 */
#ifndef SVCNAT_SYS_EXITCODE_H
#define SVCNAT_SYS_EXITCODE_H

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

#endif
