/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SVCNAT_OPTIONS_H
#define SVCNAT_OPTIONS_H

#include <stdbool.h>

#include "pipeline/pipeline.h"

/*
 * Parse argv into o (options_init() first).  Returns 0 to go on, or an exit
 * code (1 runtime, 2 usage) after printing why.  *ret_diff: --dry-run
 * --diff.  *ret_exit: --help or --version printed, exit with the returned
 * code (0).
 */
int options_parse(int argc, char **argv, struct svcnat_options *o, bool *ret_diff,
		  bool *ret_exit);

#endif
