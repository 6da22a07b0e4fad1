/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Run one job split in n parts at once, one part per thread, for the
 * first sync's CPU-bound steps (planning, encoding a table).  Part 0 runs
 * on the calling thread, parts 1..n-1 on threads of their own; par_run()
 * returns when every part has.  A part whose thread cannot be created
 * runs on the calling thread after part 0, so the job always completes;
 * the caller's parts must therefore not wait for one another.
 */
#ifndef SVCNAT_SYS_PAR_H
#define SVCNAT_SYS_PAR_H

#include "util.h"

/* The most parts svcnat splits a job into. */
#define PAR_MAX 16

/* Run fn(arg, 0) .. fn(arg, n - 1) at once (n above PAR_MAX counts as
 * PAR_MAX); a par_runner. */
void par_run(unsigned n, par_part_fn fn, void *arg);


/*
 * The number of threads for the first sync's steps: SVCNAT_THREADS when it
 * is a number from 1 to PAR_MAX (1 forces one thread, the tests compare
 * the output of both), else the CPUs online, at most PAR_MAX.
 */
unsigned par_threads(void);

#endif
