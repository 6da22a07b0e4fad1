/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sources/net/backoff.h"
#include "sources/net/reflector.h"

void reflector_init(struct reflector *r, const struct reflector_config *c)
{
	*r = (struct reflector){ .cfg = c, .state = REFLECTOR_IDLE, .need_list = true };
}

bool reflector_next_is_list(const struct reflector *r)
{
	return r->need_list;
}

uint64_t reflector_failed(struct reflector *r, uint64_t rnd, unsigned retry_after_s,
			  bool *ret_first)
{
	uint64_t delay;

	if (ret_first)
		*ret_first = r->attempt == 0;
	if (retry_after_s > 0)
		delay = (uint64_t)(retry_after_s < REFLECTOR_RETRY_AFTER_MAX_S
					   ? retry_after_s
					   : REFLECTOR_RETRY_AFTER_MAX_S) * 1000000ull;
	else
		delay = backoff_usec(r->cfg->backoff_base_usec, r->cfg->backoff_cap_usec, r->attempt,
				     rnd);
	if (r->attempt < REFLECTOR_MAX_ATTEMPT)
		r->attempt++;
	r->connected = false;
	r->state = REFLECTOR_BACKOFF;
	return delay;
}

bool reflector_relist(struct reflector *r, uint64_t now)
{
	/* The window slides: relists back off while they keep coming. */
	bool soon = r->last_relist && now - r->last_relist < r->cfg->relist_min_usec;

	r->need_list = true;
	r->connected = false;
	r->last_relist = now;
	if (!soon) {
		r->relist_streak = 0;
		return false;
	}
	/* A list applied may reset the failure count: the streak must not. */
	if (r->relist_streak < REFLECTOR_MAX_ATTEMPT)
		r->relist_streak++;
	if (r->attempt < r->relist_streak)
		r->attempt = r->relist_streak;
	return true;
}

void reflector_forget_relist(struct reflector *r)
{
	r->last_relist = 0;
}

void reflector_listed(struct reflector *r)
{
	r->need_list = false;
	if (r->cfg->list_is_progress)
		r->attempt = 0;
}

bool reflector_watch_ended(struct reflector *r, bool established, bool delivered,
			   uint64_t lasted_usec)
{
	bool progress = established && delivered && lasted_usec >= r->cfg->watch_short_usec;

	if (progress)
		r->attempt = 0;
	return progress;
}
