/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "core/syncpolicy.h"

#define USEC_PER_SEC 1000000ULL

void syncpolicy_config_default(struct syncpolicy_config *c)
{
	c->min_sync_usec = 1 * USEC_PER_SEC;
	c->sync_period_usec = 30 * USEC_PER_SEC;
	c->retry_min_usec = 1 * USEC_PER_SEC;
	c->retry_max_usec = 30 * USEC_PER_SEC;
}

int syncpolicy_config_periods(struct syncpolicy_config *c, uint64_t min_sync_usec,
			      uint64_t sync_period_usec)
{
	syncpolicy_config_default(c);
	c->min_sync_usec = min_sync_usec;
	c->sync_period_usec = sync_period_usec;
	c->retry_max_usec = 0; /* = the sync period */
	if (c->retry_min_usec > sync_period_usec)
		c->retry_min_usec = sync_period_usec;
	return syncpolicy_config_check(c);
}

int syncpolicy_config_check(struct syncpolicy_config *c)
{
	if (c->sync_period_usec == 0 || c->sync_period_usec < c->min_sync_usec)
		return -EINVAL;
	if (c->retry_min_usec == 0)
		return -EINVAL;
	if (c->retry_max_usec == 0)
		c->retry_max_usec = c->sync_period_usec;
	if (c->retry_max_usec < c->retry_min_usec)
		return -EINVAL;
	return 0;
}

void syncpolicy_init(struct syncpolicy *p, const struct syncpolicy_config *c, uint64_t now)
{
	*p = (struct syncpolicy){ .cfg = *c, .start_time = now };
}

static void mark_pending(struct syncpolicy *p, uint64_t now)
{
	if (!p->pending) {
		p->pending = true;
		p->pending_since = now;
	}
}

void syncpolicy_change(struct syncpolicy *p, uint64_t now)
{
	if (p->running && !p->changed_during) {
		p->changed_during = true;
		p->changed_during_since = now;
	}
	if (!p->changed) {
		p->changed = true;
		p->changed_since = now;
	}
	mark_pending(p, now);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t syncpolicy_backoff(const struct syncpolicy_config *c, unsigned failures)
{
	uint64_t d = c->retry_min_usec;
	unsigned i;

	for (i = 1; i < failures && d < c->retry_max_usec; i++)
		d = d > UINT64_MAX / 2 ? UINT64_MAX : d * 2;
	return d < c->retry_max_usec ? d : c->retry_max_usec;
}

void syncpolicy_sync_start(struct syncpolicy *p, uint64_t now)
{
	p->running = true;
	p->changed_during = false;
}

void syncpolicy_sync_done(struct syncpolicy *p, uint64_t now, bool ok)
{
	bool during = p->running && p->changed_during;

	p->attempted = true;
	p->last_end = now;
	p->running = false;
	/* The attempt read every change up to its start; a failure is retried
	 * by the backoff, not by the change that preceded it. */
	p->changed = during;
	p->changed_since = p->changed_during_since;
	p->changed_during = false;
	if (ok) {
		p->last_ok = now;
		p->pending = during;
		p->pending_since = p->changed_during_since;
		p->failures = 0;
		return;
	}
	if (p->failures < UINT32_MAX)
		p->failures++;
	p->retry_at = add_sat(now, syncpolicy_backoff(&p->cfg, p->failures));
	mark_pending(p, now);
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

uint64_t syncpolicy_next(const struct syncpolicy *p, enum sync_reason *ret_reason)
{
	enum sync_reason reason;
	uint64_t earliest, next;

	if (!p->attempted) {
		if (ret_reason)
			*ret_reason = SYNC_INITIAL;
		return p->start_time;
	}
	earliest = add_sat(p->last_end, p->cfg.min_sync_usec);
	next = add_sat(p->last_end, p->cfg.sync_period_usec);
	reason = SYNC_PERIODIC;
	if (p->failures > 0 && max_u64(earliest, p->retry_at) <= next) {
		next = max_u64(earliest, p->retry_at);
		reason = SYNC_RETRY;
	}
	if (p->changed && max_u64(earliest, p->changed_since) < next) {
		next = max_u64(earliest, p->changed_since);
		reason = SYNC_CHANGE;
	}
	if (ret_reason)
		*ret_reason = reason;
	return next;
}

bool syncpolicy_due(const struct syncpolicy *p, uint64_t now, enum sync_reason *ret_reason)
{
	enum sync_reason r;
	uint64_t next = syncpolicy_next(p, &r);

	if (next > now)
		return false;
	if (ret_reason)
		*ret_reason = r;
	return true;
}

bool syncpolicy_pending_since(const struct syncpolicy *p, uint64_t *ret_since)
{
	if (!p->pending)
		return false;
	*ret_since = p->pending_since;
	return true;
}

bool syncpolicy_healthy(const struct syncpolicy *p, uint64_t now, uint64_t timeout_usec)
{
	if (!p->pending)
		return true;
	return now < p->pending_since || now - p->pending_since < timeout_usec;
}

const char *sync_reason_name(enum sync_reason r)
{
	switch (r) {
	case SYNC_INITIAL:
		return "initial";
	case SYNC_CHANGE:
		return "change";
	case SYNC_RETRY:
		return "retry";
	case SYNC_PERIODIC:
		return "periodic";
	}
	return "unknown";
}
