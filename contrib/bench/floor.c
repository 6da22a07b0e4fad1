// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The libiptc floor: what any libiptc writer pays per sync on legacy
 * xtables.  iptc_init() reads the whole table from the kernel; a dummy
 * chain created and deleted again marks the handle changed without
 * changing the table (libiptc skips the kernel write of an unchanged
 * handle); iptc_commit() then writes the whole table back.
 *
 * Usage: floor [TABLE]   (default nat); prints one JSON line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <libiptc/libiptc.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *table = argc > 1 ? argv[1] : "nat";
	static const xt_chainlabel dummy = "SVCNAT-FLOOR-DUMMY";
	struct xtc_handle *h;
	struct rusage ru;
	double t0, t1, t2;

	t0 = now();
	h = iptc_init(table);
	if (!h) {
		fprintf(stderr, "floor: iptc_init(%s): %s\n", table, iptc_strerror(errno));
		return 1;
	}
	t1 = now();
	if (!iptc_create_chain(dummy, h) || !iptc_delete_chain(dummy, h)) {
		fprintf(stderr, "floor: marking the handle changed: %s\n", iptc_strerror(errno));
		iptc_free(h);
		return 1;
	}
	if (!iptc_commit(h)) {
		fprintf(stderr, "floor: iptc_commit(%s): %s\n", table, iptc_strerror(errno));
		iptc_free(h);
		return 1;
	}
	t2 = now();
	iptc_free(h);
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"table\":\"%s\",\"init_s\":%.4f,\"commit_s\":%.4f,\"total_s\":%.4f,"
	       "\"maxrss_kb\":%ld}\n",
	       table, t1 - t0, t2 - t1, t2 - t0, ru.ru_maxrss);
	return 0;
}
