/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * When to sync: kube-proxy's sync semantics (its BoundedFrequencyRunner in
 * pkg/proxy/runner), as a pure state machine with the clock injected: every
 * function takes `now` (CLOCK_MONOTONIC microseconds in the daemon, any
 * monotonic counter in tests) and nothing here reads a clock.
 *
 *  - --min-sync-period: at least min_sync between the *end* of one sync and
 *    the start of the next; changes arriving meanwhile are batched into the
 *    one sync that runs when the interval is over.  No bursts (kube-proxy
 *    dropped its token bucket for this).
 *  - --sync-period: a sync runs at the latest sync_period after the end of
 *    the previous one, even with no change (the periodic full check that
 *    repairs drift in the kernel).
 *  - a failed sync is retried after a capped exponential backoff
 *    (retry_min, 2*retry_min, ... up to retry_max); a change or the period
 *    may trigger it sooner (still not before min_sync).  A success resets
 *    the backoff.
 *  - the first sync is due at once.
 *
 * Health follows kube-proxy's proxier health server: unhealthy when a
 * change (or a failed sync: the kernel may now differ from the plan) has
 * waited longer than the health timeout without a successful sync.
 */
#ifndef SVCNAT_CORE_SYNCPOLICY_H
#define SVCNAT_CORE_SYNCPOLICY_H

#include <stdbool.h>
#include <stdint.h>

struct syncpolicy_config {
	uint64_t min_sync_usec;    /* --min-sync-period, default 1s */
	uint64_t sync_period_usec; /* --sync-period, default 30s; > 0 */
	uint64_t retry_min_usec;   /* first retry delay, default 1s; > 0 */
	uint64_t retry_max_usec;   /* backoff cap, default = sync_period */
};

enum sync_reason {
	SYNC_INITIAL,  /* no sync attempted yet */
	SYNC_CHANGE,   /* the desired state (or the node's addresses) changed */
	SYNC_RETRY,    /* the previous sync failed */
	SYNC_PERIODIC, /* sync_period elapsed: full check of the kernel */
};

struct syncpolicy {
	struct syncpolicy_config cfg;
	uint64_t start_time;    /* syncpolicy_init()'s now */
	bool attempted;         /* a sync has completed (ok or not) */
	uint64_t last_end;      /* end of the last sync */
	uint64_t last_ok;       /* end of the last successful sync (0: none) */
	bool changed;           /* a change since the last sync attempt */
	uint64_t changed_since; /* oldest such change */
	bool pending;           /* a change or failure not yet followed by a successful sync */
	uint64_t pending_since; /* oldest such event */
	unsigned failures;      /* consecutive failed syncs */
	bool running;           /* between syncpolicy_sync_start() and _done() */
	bool changed_during;    /* a change while running: the sync did not read it */
	uint64_t changed_during_since;
	uint64_t retry_at;      /* when failures > 0 */
};

/* kube-proxy's defaults: 1s, 30s; retries 1s .. 30s. */
void syncpolicy_config_default(struct syncpolicy_config *c);

/*
 * Check a configuration: sync_period > 0, sync_period >= min_sync (as
 * kube-proxy's runner requires), retry_min > 0, retry_max >= retry_min.
 * A retry_max of 0 means "= sync_period" and is filled in.  0 or -EINVAL.
 */
int syncpolicy_config_check(struct syncpolicy_config *c);

/*
 * The daemon's policy for --min-sync-period and --sync-period: the
 * defaults, retries from 1s (at most the period) up to the period, then
 * syncpolicy_config_check().  0 or -EINVAL.
 */
int syncpolicy_config_periods(struct syncpolicy_config *c, uint64_t min_sync_usec,
			      uint64_t sync_period_usec);

void syncpolicy_init(struct syncpolicy *p, const struct syncpolicy_config *c, uint64_t now);

/* Something the plan depends on changed at now. */
void syncpolicy_change(struct syncpolicy *p, uint64_t now);

/*
 * A sync starts reading the state at now (optional: a caller that syncs
 * synchronously calls only _done).  Changes from here to _done were not
 * read by it: they stay due for the next sync, and pending.
 */
void syncpolicy_sync_start(struct syncpolicy *p, uint64_t now);

/* A sync finished at now; ok says whether it succeeded. */
void syncpolicy_sync_done(struct syncpolicy *p, uint64_t now, bool ok);

/*
 * When the next sync is due (absolute, same clock as now; may be in the
 * past: due at once) and why (ret_reason may be NULL).  Always a finite
 * deadline: the period guarantees one.
 */
uint64_t syncpolicy_next(const struct syncpolicy *p, enum sync_reason *ret_reason);

/* Whether a sync is due at now. */
bool syncpolicy_due(const struct syncpolicy *p, uint64_t now, enum sync_reason *ret_reason);

/* The delay before retry number `failures` (1-based), capped. */
uint64_t syncpolicy_backoff(const struct syncpolicy_config *c, unsigned failures);

/*
 * The oldest change (or failed sync) not yet followed by a successful sync,
 * for "change to commit" timing; false when none is pending.
 */
bool syncpolicy_pending_since(const struct syncpolicy *p, uint64_t *ret_since);

/* kube-proxy's health rule with the given timeout (it uses 2 * sync_period). */
bool syncpolicy_healthy(const struct syncpolicy *p, uint64_t now, uint64_t timeout_usec);

const char *sync_reason_name(enum sync_reason r);

#endif
