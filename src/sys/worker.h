/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One job at a time off the loop thread.  The daemon's kernel write may
 * wait seconds for the xtables lock or take seconds on a big table; run
 * here, it leaves the loop free to answer /healthz and /metrics and to
 * follow its sources meanwhile.  The job runs on a thread of its own
 * (created for it, every signal blocked); when it returns, `done` is called
 * on the loop thread, from the loop's dispatch, so the job's results are
 * read there without locks.  The caller keeps whatever the job touches out
 * of the loop thread's hands until `done`.
 */
#ifndef SVCNAT_SYS_WORKER_H
#define SVCNAT_SYS_WORKER_H

#include <stdbool.h>

#include "sys/loop.h"

struct worker;

typedef void (*worker_fn)(void *userdata);

/* A worker delivering completions on l.  0 or -errno. */
int worker_new(struct loop *l, struct worker **ret);
/* Waits for a running job to return (its done is not called).  NULL is a no-op. */
void worker_free(struct worker *w);

/*
 * Run fn(userdata) on a new thread, then done(userdata) on the loop thread.
 * 0, -EBUSY (a job is running), or -errno (the thread could not be
 * created: nothing runs).
 */
int worker_start(struct worker *w, worker_fn fn, worker_fn done, void *userdata);

/* Whether a job has started and its done has not been called yet. */
bool worker_busy(const struct worker *w);

#endif
