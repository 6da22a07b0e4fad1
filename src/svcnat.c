/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * svcnat: parse the command line (cli/options.c), then run its mode
 * (cli/modes.c).  Exit codes: sys/exitcode.h.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/modes.h"
#include "cli/options.h"
#include "sys/log.h"
#include "util.h"

/*
 * glibc (2.35 and later) backs malloc's heap with transparent huge pages
 * when the tunable glibc.malloc.hugetlb=1 is set.  A sync of 10,000
 * services touches a few hundred MB of fresh heap, and the faults of 4 KiB
 * pages were about 40% of a --dry-run (2.4 s against 1.5 s) on a VM.  The
 * tunable is read at process start only, so svcnat runs itself once more
 * with it set; not when GLIBC_TUNABLES is set already (the user's choice
 * stands) or SVCNAT_NO_REEXEC is.  Other libcs ignore the variable.
 * Returns true in the process that runs with the tunable.
 */
#define HUGE_TUNABLE "glibc.malloc.hugetlb=1"

static bool heap_hugepages(char **argv)
{
	const char *mark = getenv("SVCNAT_REEXECED");

	if (mark) {
		/* Applied at our start: do not hand it on to child processes. */
		const char *t = getenv("GLIBC_TUNABLES");
		bool ours = t && streq(t, HUGE_TUNABLE);

		if (ours)
			unsetenv("GLIBC_TUNABLES");
		unsetenv("SVCNAT_REEXECED");
		return ours;
	}
	if (getenv("GLIBC_TUNABLES") || getenv("SVCNAT_NO_REEXEC"))
		return false;
	if (setenv("GLIBC_TUNABLES", HUGE_TUNABLE, 1) < 0 ||
	    setenv("SVCNAT_REEXECED", "1", 1) < 0)
		return false;
	execv("/proc/self/exe", argv);
	/* No /proc: go on as we are. */
	unsetenv("GLIBC_TUNABLES");
	unsetenv("SVCNAT_REEXECED");
	return false;
}

int main(int argc, char **argv)
{
	struct svcnat_options o;
	bool diff = false, done = false, huge;
	int code;

	huge = heap_hugepages(argv);
	options_init(&o);
	code = options_parse(argc, argv, &o, &diff, &done);
	if (code || done)
		goto out;
	log_init("svcnat", o.verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	if (huge)
		log_debug("malloc's heap on transparent huge pages (GLIBC_TUNABLES=%s)",
			  HUGE_TUNABLE);
	/* One-shot modes stay quiet unless asked; the daemon logs at info. */
	if (o.mode != MODE_DAEMON && !o.verbose)
		log_set_max_level(LOG_LEVEL_WARNING);
	code = modes_run(&o);
out:
	options_done(&o);
	return code;
}
