/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Placeholder until the daemon lands (issue 5): says so and fails. */
#include <stdio.h>

#include "daemon.h"

int daemon_main(struct svcnat_options *o)
{
	(void)o;
	fputs("svcnat: daemon mode is not built yet: use --once or --dry-run\n", stderr);
	return 1;
}
