/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The etcd source (sources/etcd/etcd.h) as a live source (sources/source.h):
 * its events at the level the daemon logs them, /healthz's "etcd" member,
 * the svcnat_etcd_* gauges; read once when the first full read is applied.
 */
#ifndef SVCNAT_SOURCES_ETCD_ETCDSRC_H
#define SVCNAT_SOURCES_ETCD_ETCDSRC_H

#include "sources/etcd/etcd.h"
#include "sources/source.h"
#include "sys/loop.h"
#include "sys/metrics.h"

/*
 * Check the options (diags in d), create the etcd source on l feeding m
 * (registers merge source "etcd") and declare its gauges in metrics.
 * Nothing is sent before sourceset_start().  0, -EINVAL (bad options),
 * -EEXIST, -ENOMEM, -EIO (libcurl; a diag says so).
 */
int etcdsrc_new(struct loop *l, struct merge *m, struct metrics *metrics,
		const struct etcd_options *o, struct diag_list *d, struct source **ret);

#endif
