/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

#include "sys/host.h"
#include "sys/par.h"

struct part {
	par_part_fn fn;
	void *arg;
	unsigned i;
	pthread_t th;
	bool started;
};

static void *part_main(void *p)
{
	struct part *pt = p;

	pt->fn(pt->arg, pt->i);
	return NULL;
}

void par_run(unsigned n, par_part_fn fn, void *arg)
{
	struct part parts[PAR_MAX];
	sigset_t all, old;

	if (n > PAR_MAX)
		n = PAR_MAX;
	if (n <= 1) {
		if (n == 1)
			fn(arg, 0);
		return;
	}
	/* The parts' threads take no signals: the daemon's loop thread
	 * reads them from its signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 1; i < n; i++) {
		parts[i] = (struct part){ .fn = fn, .arg = arg, .i = i };
		parts[i].started = pthread_create(&parts[i].th, NULL, part_main, &parts[i]) == 0;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	fn(arg, 0);
	for (unsigned i = 1; i < n; i++) {
		if (parts[i].started)
			pthread_join(parts[i].th, NULL);
		else
			fn(arg, i);
	}
}

unsigned par_threads(void)
{
	const char *e = getenv("SVCNAT_THREADS");
	long n;

	if (e && *e) {
		char *end;

		n = strtol(e, &end, 10);
		if (!*end && n >= 1 && n <= PAR_MAX)
			return (unsigned)n;
	}
	n = host_cpus();
	return n < 1 ? 1 : n > PAR_MAX ? PAR_MAX : (unsigned)n;
}
