/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Durations written as kube-proxy's flags take them (Go's
 * time.ParseDuration): a sequence of decimal numbers, each with an optional
 * fraction and a unit, e.g. "500ms", "1s", "2m", "1h30m", "1.5s", "0".
 * Units: ns, us (µs, μs), ms, s, m, h.  A leading '+' is accepted; negative
 * durations are refused (no svcnat setting takes one).  Pure.
 */
#ifndef SVCNAT_CORE_DURATION_H
#define SVCNAT_CORE_DURATION_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parse s into microseconds (fractions below 1us are truncated).
 * Returns 0, -EINVAL (syntax: empty, missing or unknown unit, no digits,
 * negative) or -ERANGE (more than 2^63-1 ns, as Go refuses).
 * *ret_usec is written only on success.
 */
int duration_parse(const char *s, uint64_t *ret_usec);

/*
 * Format usec the way Go prints a time.Duration ("1m30s", "500ms", "1.5s",
 * "0s") into buf; returns buf.  32 bytes are always enough.
 */
const char *duration_fmt(uint64_t usec, char *buf, size_t len);

#endif
