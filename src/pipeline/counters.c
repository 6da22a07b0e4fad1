/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>

#include "core/plan.h"
#include "pipeline/counters.h"
#include "sys/nfacct.h"
#include "util.h"

static const struct {
	unsigned bit;
	const char *name;
} all[] = {
	{ PLAN_NFACCT_CT_INVALID, PLAN_NFACCT_CT_INVALID_NAME },
	{ PLAN_NFACCT_LOCALHOST_NP, PLAN_NFACCT_LOCALHOST_NP_NAME },
};

const char *counters_name(unsigned bit)
{
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		if (all[i].bit == bit)
			return all[i].name;
	return NULL;
}

unsigned counters_ensure(struct counters *c, struct diag_list *d)
{
	unsigned made = 0;

	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		unsigned bit = all[i].bit;
		int r;

		if (!(c->want & bit))
			continue;
		r = nfacct_ensure(all[i].name);
		if (r >= 0) {
			if (c->failing & bit)
				diag_add(d, DIAG_NOTE, NULL, NULL, "--nfacct",
					 "the nfacct counter '%s' is made again: its -m nfacct "
					 "match is planned", all[i].name);
			c->failing &= ~bit;
			made |= bit;
			continue;
		}
		if (!(c->failing & bit))
			diag_add(d, c->required ? DIAG_ERROR : DIAG_WARNING, NULL, NULL, "--nfacct",
				 "cannot make the nfacct counter '%s': %s%s", all[i].name,
				 strerror(-r),
				 c->required ? ""
					     : "; its -m nfacct match is left out and its metric "
					       "not reported (as kube-proxy)");
		c->failing |= bit;
	}
	return c->required ? c->want : made;
}

unsigned counters_probe(unsigned want, unsigned *ret_unknown, int *ret_err)
{
	unsigned ok = 0, unknown = 0;
	int err = 0;

	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		struct nfacct_counter v;
		int r;

		if (!(want & all[i].bit))
			continue;
		r = nfacct_get(all[i].name, &v);
		if (r >= 0 || r == -ENOENT) {
			ok |= all[i].bit;
			continue;
		}
		unknown |= all[i].bit;
		if (!err)
			err = r;
	}
	if (ret_unknown)
		*ret_unknown = unknown;
	if (ret_err)
		*ret_err = err;
	return ok;
}
