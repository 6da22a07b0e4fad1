/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Network programming latency, as kube-proxy measures it
 * (pkg/proxy/endpointschangetracker.go, EndpointSliceUpdate, and the
 * iptables proxier's syncProxyRules): every EndpointSlice added or changed
 * carries the EndpointSlice controller's last-change-trigger-time; once a
 * sync that holds the change is in the kernel, now minus that time is one
 * observation of kubeproxy_network_programming_duration_seconds, in the
 * slice's own address family.
 *
 * As kube-proxy: trigger times from before the tracker started are ignored
 * (the first list holds objects changed hours ago), a removed slice drops
 * the pending times of its service in its family, and a slice whose content
 * did not change (the merge engine keeps the old item) adds nothing.  Unlike
 * kube-proxy, the times a failed sync carried stay until a sync succeeds,
 * so a change is measured to when it really reached the kernel.
 *
 * Pure: wall-clock times are passed in (unix seconds).
 */
#ifndef SVCNAT_CORE_PROGTIME_H
#define SVCNAT_CORE_PROGTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/merge.h"

/* The annotation the EndpointSlice controller writes (RFC 3339, UTC). */
#define PROGTIME_ANNOTATION "endpoints.kubernetes.io/last-change-trigger-time"

/* At most this many trigger times wait (pending plus carried); more are
 * not recorded. */
#define PROGTIME_MAX 100000

struct progtime_mark {
	double t;        /* the trigger time, unix seconds */
	uint8_t family;  /* AF_INET or AF_INET6: the slice's addressType */
	char *ns;        /* the slice's service, for a removal */
	char *service;
};

struct progtime {
	double start;                  /* trigger times before this are ignored */
	struct progtime_mark *pending; /* noted since the last sync started */
	size_t n_pending;
	size_t cap_pending;
	struct progtime_mark *carried; /* in the syncs started since the last success */
	size_t n_carried;
	size_t dropped;                /* not recorded: PROGTIME_MAX reached */
};

/* start: the daemon's start (wall clock). */
void progtime_init(struct progtime *pt, double start);
void progtime_done(struct progtime *pt);

/*
 * Parse an RFC 3339 time as Go's time.RFC3339Nano writes and reads it
 * ("2026-12-01T22:00:00.123456Z", "...+01:00") into unix seconds.  0 or
 * -EINVAL (anything else, and years before 1970).
 */
int progtime_parse(const char *s, double *ret);

/*
 * Note the slices that differ between two merged views (old may be NULL):
 * the trigger times of slices added or replaced whose family is in
 * `families` (AF_INET, AF_INET6, or AF_UNSPEC for both); for a slice
 * removed, forget the pending times of its service in its family.  0 or
 * -ENOMEM (what was noted stays).
 */
int progtime_note(struct progtime *pt, const struct merge_snapshot *old,
		  const struct merge_snapshot *new, int families);

/* A sync starts with the state merged so far: the pending times go with it. */
void progtime_sync_start(struct progtime *pt);

typedef void (*progtime_observe_fn)(uint8_t family, double seconds, void *userdata);

/*
 * The sync ended.  ok: observe(family, now - t) for every time it carried,
 * then forget them; returns how many.  !ok: they stay for the next sync;
 * returns 0.
 */
size_t progtime_sync_done(struct progtime *pt, bool ok, double now, progtime_observe_fn observe,
			  void *userdata);

#endif
