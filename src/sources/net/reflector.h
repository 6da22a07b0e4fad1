/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The skeleton both watch sources share (etcd's range read then watch, the
 * API's list then watch per resource; client-go's Reflector): which request
 * comes next, how long to back off after a failure, when a relist comes
 * too soon, and what counts as progress.  Pure (tests/unit/test-reflector.c):
 * the caller sends the requests, arms its timer and says what happened.
 *
 *   IDLE -> LISTING -> WATCHING -> (the watch ends) -> WATCHING ...
 *   any -> BACKOFF (failed) -> LISTING or WATCHING (the timer)
 *   any -> LISTING (relist: expired, compacted, resync)
 *
 * Progress resets the failure count, so a server that fails every request,
 * or answers each watch and ends it at once, meets a growing backoff: a
 * watch progressed when it was established, delivered something and lasted
 * watch_short_usec; a list applied is progress only where the source says
 * so (list_is_progress).  Relists closer than relist_min_usec count a
 * streak, and the failure count is raised to it: a server that expires
 * every version at once does not get a list storm.
 */
#ifndef SVCNAT_SOURCES_NET_REFLECTOR_H
#define SVCNAT_SOURCES_NET_REFLECTOR_H

#include <stdbool.h>
#include <stdint.h>

/* The most a server's Retry-After is honoured for, in seconds. */
#define REFLECTOR_RETRY_AFTER_MAX_S 60
/* Failure counts stop growing here (the backoff is capped long before). */
#define REFLECTOR_MAX_ATTEMPT 64

struct reflector_config {
	uint64_t backoff_base_usec; /* sources/net/backoff.h; > 0 */
	uint64_t backoff_cap_usec;
	uint64_t relist_min_usec;   /* relists closer than this back off */
	uint64_t watch_short_usec;  /* a watch that ended sooner made no progress */
	bool list_is_progress;      /* a list applied resets the failure count */
};

enum reflector_state {
	REFLECTOR_IDLE,     /* not started */
	REFLECTOR_LISTING,  /* a list (all its pages) in flight */
	REFLECTOR_WATCHING, /* a watch in flight */
	REFLECTOR_BACKOFF,  /* waiting for the retry timer */
	REFLECTOR_DONE,     /* a one-shot list is complete */
};

struct reflector {
	const struct reflector_config *cfg; /* borrowed */
	enum reflector_state state;
	bool need_list;         /* the next connection lists first */
	bool connected;         /* a watch is established */
	unsigned attempt;       /* failures since the last progress */
	uint64_t last_relist;   /* when the last relist started (0: none yet) */
	unsigned relist_streak; /* relists in a row that came too soon */
};

/* IDLE, a list first; c is borrowed. */
void reflector_init(struct reflector *r, const struct reflector_config *c);

/* Whether the next connection starts with a list (else it resumes the
 * watch).  The caller sets state as it sends the list or the watch. */
bool reflector_next_is_list(const struct reflector *r);

/*
 * A request failed: BACKOFF, not connected.  Returns the delay before the
 * next try: the server's retry_after_s when > 0 (capped at
 * REFLECTOR_RETRY_AFTER_MAX_S), else the backoff for the failure count
 * (jittered by rnd), which then grows.  *ret_first (may be NULL): the first
 * failure since progress (the owner says "disconnected", else "retrying").
 */
uint64_t reflector_failed(struct reflector *r, uint64_t rnd, unsigned retry_after_s,
			  bool *ret_first);

/*
 * Everything must be listed again at now (an expired version, a compacted
 * revision, a resync): need_list, not connected.  Returns true when it came
 * within relist_min_usec of the last one: the failure count is raised to
 * the streak and the caller fails instead of listing at once.
 */
bool reflector_relist(struct reflector *r, uint64_t now);

/* The next relist is the operator's (SIGHUP): never too soon. */
void reflector_forget_relist(struct reflector *r);

/* The list was applied: the watch comes next. */
void reflector_listed(struct reflector *r);

/*
 * A watch ended, however: was it established, did it deliver (events,
 * bookmarks, progress notifications), how long did it last.  Returns
 * whether that was progress (the failure count starts again).
 */
bool reflector_watch_ended(struct reflector *r, bool established, bool delivered,
			   uint64_t lasted_usec);

#endif
