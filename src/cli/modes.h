/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Run the mode the options ask for: the daemon, --once, --cleanup,
 * --init-only, --dry-run [--diff], --dump-state or etcd-load.
 */
#ifndef SVCNAT_CLI_MODES_H
#define SVCNAT_CLI_MODES_H

#include "cli/options.h"

/* Run o's mode to its end.  Returns the process exit code
 * (sys/exitcode.h; --diff: diff(1)'s); diagnostics are printed. */
int modes_run(const struct svcnat_options *o);

#endif
