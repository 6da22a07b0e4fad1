/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pipeline's own state, shared by its two halves: pipeline.c (the
 * sources, this node, merge and resolve) and apply.c (plan, backend,
 * sync).  Nothing outside src/pipeline/ includes this header.
 */
#ifndef SVCNAT_PIPELINE_STATE_H
#define SVCNAT_PIPELINE_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/chainname.h"
#include "core/planstore.h"
#include "core/resolve.h"
#include "pipeline/node.h"
#include "pipeline/pipeline.h"

struct pipeline {
	const struct pipeline_config *c;
	struct plan_settings settings; /* c->plan with this node's facts (node) filled in */
	struct node_given node_given;  /* what c says of this node */
	struct node node;              /* keeps settings' node fields */
	struct merge *merge;
	struct filesrc **files;        /* per --config: its merge source and files */
	struct backend *backend;       /* created on first apply */
	struct desired desired;        /* last resolved state */
	unsigned long desired_generation;
	struct merge_snapshot *resolved; /* the view `desired` was resolved from */
	struct chain_hasher *hasher;   /* the daemon's, for its IPv4 plans (no memo) */
	bool full_next;                /* the next resolve is a full one, checking the delta */
	/* The daemon's: each family's plan kept between syncs (core/planstore.h). */
	struct plan_store *store[PLAN_NFAMILIES];
	struct merge_snapshot *planned[PLAN_NFAMILIES]; /* the view each store's plan is of */
	bool plan_check_next;          /* the next plans are checked against full ones */
	bool synced;                   /* a sync succeeded: the stores plan from then on */
	bool warm;                     /* sys/warm.h runs for the first sync */
	bool store_pending;            /* that sync planned without the stores */
	/* A one-shot's plans once written: freed by pipeline_free(), or left
	 * to the process's exit by pipeline_leave(). */
	struct ruleset *spent[PLAN_NFAMILIES];
	double resolve_seconds;        /* of the last pipeline_resolve() that resolved */
	size_t ports_resolved;         /* service ports it built anew */
	size_t ports_planned[PLAN_NFAMILIES]; /* service ports the last plans planned anew */
};

#endif
