// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The first touch of new memory: what writing memory the process has never
 * touched costs, on one thread and on several at once.  svcnat's first sync
 * writes a few hundred MiB it has never touched (the decoded input, the
 * plan, the table it hands the kernel), and on a VM whose balloon reports
 * free pages to its host that first write is most of the cost of a page.
 *
 * Usage: touch MIB [THREADS]   (default: 1 thread)
 * Each thread maps its share of MIB MiB (anonymous, private, huge pages
 * asked for, as svcnat's table and arenas are), writes one byte in every
 * 4 KiB page, and the threads run at once.  Then the same again in pages
 * just freed (the first round's, unmapped at once), which costs a fraction.
 * Prints one JSON line: the wall time and CPU time (all threads) of each
 * round, and the MiB per second of wall time.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_THREADS 64

static size_t share;

static double now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct job {
	pthread_t th;
	char *map;
	double cpu;
	int err;
};

static void *touch(void *arg)
{
	struct job *j = arg;
	double c = now(CLOCK_THREAD_CPUTIME_ID);

	j->map = mmap(NULL, share, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (j->map == MAP_FAILED) {
		j->map = NULL;
		j->err = 1;
		return NULL;
	}
	(void)madvise(j->map, share, MADV_HUGEPAGE);
	for (size_t i = 0; i < share; i += 4096)
		((volatile char *)j->map)[i] = 1;
	j->cpu = now(CLOCK_THREAD_CPUTIME_ID) - c;
	return NULL;
}

/* One round on n threads: its wall time, *ret_cpu the threads' CPU time. */
static int round_run(struct job *jobs, int n, double *ret_wall, double *ret_cpu)
{
	double w = now(CLOCK_MONOTONIC), cpu = 0;
	int i, err = 0;

	for (i = 0; i < n; i++) {
		memset(&jobs[i], 0, sizeof(jobs[i]));
		if (pthread_create(&jobs[i].th, NULL, touch, &jobs[i]) != 0) {
			fprintf(stderr, "touch: cannot start a thread\n");
			exit(1);
		}
	}
	for (i = 0; i < n; i++) {
		pthread_join(jobs[i].th, NULL);
		cpu += jobs[i].cpu;
		err |= jobs[i].err;
	}
	*ret_wall = now(CLOCK_MONOTONIC) - w;
	*ret_cpu = cpu;
	for (i = 0; i < n; i++)
		if (jobs[i].map)
			munmap(jobs[i].map, share);
	return err ? -1 : 0;
}

int main(int argc, char **argv)
{
	static struct job jobs[MAX_THREADS];
	double w1, c1, w2, c2;
	long mib, n = 1;
	char *end;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: touch MIB [THREADS]\n");
		return 2;
	}
	mib = strtol(argv[1], &end, 10);
	if (*end || mib < 1 || mib > (1L << 20)) {
		fprintf(stderr, "touch: MIB: a number from 1 to %ld\n", 1L << 20);
		return 2;
	}
	if (argc == 3) {
		n = strtol(argv[2], &end, 10);
		if (*end || n < 1 || n > MAX_THREADS) {
			fprintf(stderr, "touch: THREADS: a number from 1 to %d\n", MAX_THREADS);
			return 2;
		}
	}
	share = ((size_t)mib << 20) / (size_t)n / 4096 * 4096;
	if (round_run(jobs, (int)n, &w1, &c1) < 0 || round_run(jobs, (int)n, &w2, &c2) < 0) {
		fprintf(stderr, "touch: cannot map %ld MiB\n", mib);
		return 1;
	}
	printf("{\"mib\":%ld,\"threads\":%ld,\"fresh_wall\":%.6f,\"fresh_cpu\":%.6f,"
	       "\"fresh_mib_per_s\":%.1f,\"again_wall\":%.6f,\"again_cpu\":%.6f,"
	       "\"again_mib_per_s\":%.1f}\n",
	       mib, n, w1, c1, (double)mib / w1, w2, c2, (double)mib / w2);
	return 0;
}
