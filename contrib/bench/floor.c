// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The libiptc floor: what any libiptc writer pays per sync on legacy
 * xtables.  For each table, iptc_init() reads the whole table from the
 * kernel; a dummy chain created and deleted again marks the handle changed
 * without changing the table (libiptc skips the kernel write of an
 * unchanged handle); iptc_commit() then writes the whole table back.
 *
 * Usage: floor [--info | --raw] [TABLE...]   (default: nat)
 * Refuses to commit in the initial network namespace (PID 1's).
 *   --info   only report each table's size (IPT_SO_GET_INFO), no commit.
 *   --raw    the raw kernel floor instead, below any writer: IPT_SO_GET_INFO
 *            and IPT_SO_GET_ENTRIES read the table, IPT_SO_SET_REPLACE writes
 *            the same bytes back (no change; the packet counters restart, as
 *            nothing adds them back).  init_s is the read, commit_s the write.
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

/* Read the table and replace it with itself, with the kernel's own calls. */
static int raw_table(const char *table, double *total)
{
	struct ipt_getinfo info;
	struct ipt_get_entries *ge = NULL;
	struct ipt_replace *rp = NULL;
	struct xt_counters *cnt = NULL;
	socklen_t len = sizeof(info);
	double t0, t1, t2;
	int fd, r = 1;

	memset(&info, 0, sizeof(info));
	if (strlen(table) >= sizeof(info.name))
		return 1;
	strcpy(info.name, table);
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (fd < 0) {
		fprintf(stderr, "floor: socket: %s\n", strerror(errno));
		return 1;
	}
	t0 = now();
	if (getsockopt(fd, IPPROTO_IP, IPT_SO_GET_INFO, &info, &len) < 0) {
		fprintf(stderr, "floor: IPT_SO_GET_INFO(%s): %s\n", table, strerror(errno));
		goto out;
	}
	ge = malloc(sizeof(*ge) + info.size);
	rp = malloc(sizeof(*rp) + info.size);
	cnt = calloc(info.num_entries ? info.num_entries : 1, sizeof(*cnt));
	if (!ge || !rp || !cnt) {
		fprintf(stderr, "floor: out of memory\n");
		goto out;
	}
	memset(ge, 0, sizeof(*ge));
	strcpy(ge->name, table);
	ge->size = info.size;
	len = (socklen_t)(sizeof(*ge) + info.size);
	if (getsockopt(fd, IPPROTO_IP, IPT_SO_GET_ENTRIES, ge, &len) < 0) {
		fprintf(stderr, "floor: IPT_SO_GET_ENTRIES(%s): %s\n", table, strerror(errno));
		goto out;
	}
	t1 = now();
	memset(rp, 0, sizeof(*rp));
	strcpy(rp->name, table);
	rp->valid_hooks = info.valid_hooks;
	rp->num_entries = info.num_entries;
	rp->size = info.size;
	memcpy(rp->hook_entry, info.hook_entry, sizeof(rp->hook_entry));
	memcpy(rp->underflow, info.underflow, sizeof(rp->underflow));
	rp->num_counters = info.num_entries;
	rp->counters = cnt;
	memcpy(rp->entries, ge->entrytable, info.size);
	if (setsockopt(fd, IPPROTO_IP, IPT_SO_SET_REPLACE, rp,
		       (socklen_t)(sizeof(*rp) + info.size)) < 0) {
		/* EAGAIN: someone changed the table meanwhile; nothing was written. */
		fprintf(stderr, "floor: IPT_SO_SET_REPLACE(%s): %s\n", table, strerror(errno));
		goto out;
	}
	t2 = now();
	*total += t2 - t0;
	printf("{\"table\":\"%s\",\"init_s\":%.4f,\"commit_s\":%.4f,\"total_s\":%.4f,"
	       "\"size_bytes\":%u,\"entries\":%u}",
	       table, t1 - t0, t2 - t1, t2 - t0, info.size, info.num_entries);
	r = 0;
out:
	free(ge);
	free(rp);
	free(cnt);
	close(fd);
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
	bool info_only = false, raw = false;
	char **tables = dflt;
	int ntables = 1, i, r = 0;
	double total = 0;
	struct rusage ru;

	if (argc > 1 && !strcmp(argv[1], "--info")) {
		info_only = true;
		argv++;
		argc--;
	} else if (argc > 1 && !strcmp(argv[1], "--raw")) {
		raw = true;
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
		r = raw ? raw_table(tables[i], &total) : one_table(tables[i], info_only, &total);
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("],\"total_s\":%.4f,\"maxrss_kb\":%ld,\"ok\":%s}\n", total, ru.ru_maxrss,
	       r ? "false" : "true");
	return r;
}
