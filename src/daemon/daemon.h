/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon: `svcnat` without --once/--dry-run.  Runs the pipeline from
 * one epoll loop until SIGTERM/SIGINT, leaving the rules in place.
 */
#ifndef SVCNAT_DAEMON_H
#define SVCNAT_DAEMON_H

#include "pipeline/pipeline.h"

/* Run the daemon (MODE_DAEMON); returns the process exit code. */
int daemon_main(struct svcnat_options *o);

#endif
