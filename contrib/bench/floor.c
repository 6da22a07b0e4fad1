// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The libiptc floor: what any libiptc writer pays per sync on legacy
 * xtables.  For each table, iptc_init() reads the whole table from the
 * kernel; a dummy chain created and deleted again marks the handle changed
 * without changing the table (libiptc skips the kernel write of an
 * unchanged handle); iptc_commit() then writes the whole table back.
 *
 * Usage: floor [--info] [TABLE...]   (default: nat)
 * Refuses to commit in the initial network namespace (PID 1's).
 *   --info   only report each table's size (IPT_SO_GET_INFO), no commit.
 * Prints one JSON line: per table init/commit seconds, the kernel's table
 * size in bytes and its number of entries; the total; the peak RSS.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libiptc/libiptc.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * A benchmark has no business committing the host's own tables.  Recent
 * kernels give the initial network namespace a fixed inode (PROC_NET_INIT_INO);
 * where PID 1's namespace is readable, compare with it too.
 */
static bool in_initial_netns(void)
{
	struct stat self, init;

	if (stat("/proc/self/ns/net", &self) < 0)
		return false;
	if (self.st_ino == 0xEFFFFFF9U)
		return true;
	if (stat("/proc/1/ns/net", &init) < 0)
		return false;
	return self.st_ino == init.st_ino && self.st_dev == init.st_dev;
}

/* The kernel's own view of the table: blob size and rule count. */
static int table_info(const char *table, struct ipt_getinfo *ret)
{
	struct ipt_getinfo info;
	socklen_t len = sizeof(info);
	int fd, r = 0;

	memset(&info, 0, sizeof(info));
	if (strlen(table) >= sizeof(info.name))
		return -EINVAL;
	strcpy(info.name, table);
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (fd < 0)
		return -errno;
	if (getsockopt(fd, IPPROTO_IP, IPT_SO_GET_INFO, &info, &len) < 0)
		r = -errno;
	close(fd);
	if (r == 0)
		*ret = info;
	return r;
}

static int one_table(const char *table, bool info_only, double *total)
{
	static const xt_chainlabel dummy = "SVCNAT-FLOOR-DUMMY";
	struct ipt_getinfo info = { 0 };
	struct xtc_handle *h;
	double t0, t1, t2;
	int r;

	r = table_info(table, &info);
	if (r < 0) {
		fprintf(stderr, "floor: IPT_SO_GET_INFO(%s): %s\n", table, strerror(-r));
		return 1;
	}
	if (info_only) {
		printf("{\"table\":\"%s\",\"size_bytes\":%u,\"entries\":%u}", table, info.size,
		       info.num_entries);
		return 0;
	}
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
	*total += t2 - t0;
	printf("{\"table\":\"%s\",\"init_s\":%.4f,\"commit_s\":%.4f,\"total_s\":%.4f,"
	       "\"size_bytes\":%u,\"entries\":%u}",
	       table, t1 - t0, t2 - t1, t2 - t0, info.size, info.num_entries);
	return 0;
}

int main(int argc, char **argv)
{
	static char *dflt[] = { "nat" };
	bool info_only = false;
	char **tables = dflt;
	int ntables = 1, i, r = 0;
	double total = 0;
	struct rusage ru;

	if (argc > 1 && !strcmp(argv[1], "--info")) {
		info_only = true;
		argv++;
		argc--;
	}
	if (!info_only && in_initial_netns()) {
		fprintf(stderr, "floor: refusing to commit in the initial network namespace; "
				"run it under 'ip netns exec'\n");
		return 2;
	}
	if (argc > 1) {
		tables = argv + 1;
		ntables = argc - 1;
	}
	printf("{\"tables\":[");
	for (i = 0; i < ntables && !r; i++) {
		if (i)
			printf(",");
		r = one_table(tables[i], info_only, &total);
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("],\"total_s\":%.4f,\"maxrss_kb\":%ld,\"ok\":%s}\n", total, ru.ru_maxrss,
	       r ? "false" : "true");
	return r;
}
