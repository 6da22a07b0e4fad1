/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SVCNAT_KPFLAGS_H
#define SVCNAT_KPFLAGS_H

/*
 * kube-proxy's side of the command line: the flags svcnat accepts and
 * ignores, and a KubeProxyConfiguration given as a --config file, whose
 * fields are applied as the flags of the same meaning.
 */
#include <getopt.h>

#include "cli/optval.h"

/*
 * own (n entries, no terminator) followed by kube-proxy's ignored flags
 * (val OPT_IGNORED + i) and the all-zero terminator, for getopt_long().
 * Returns a calloc'ed table the caller frees, or NULL (out of memory).
 */
struct option *kpflags_all_options(const struct option *own, size_t n);

/*
 * An ignored flag c (OPT_IGNORED + i) with its value arg (NULL: none):
 * warns why it is ignored unless the value asks for nothing (0, 0s, false,
 * empty).  --feature-gates is checked instead: PreferSameTrafficDistribution
 * may only be true (locked on, as in kube-proxy 1.35), other gates are
 * ignored with a warning.  Returns 0, -ENOMEM, or -EINVAL (printed) for a
 * malformed or refused gate or a c that is no ignored flag.
 */
int kpflags_ignore(struct pstate *ps, int c, const char *arg);

/*
 * Find the --config that is a KubeProxyConfiguration (at most one), take it
 * out of ps->o's service sources (o->kp_config names it) and apply its
 * fields, a flag given on the command line (ps->o->given) winning over its
 * field.  all: the table from kpflags_all_options().  Returns 0, or an exit
 * code (EXIT_USAGE, EXIT_RUNTIME) after printing why.
 */
int kpflags_apply_config(struct pstate *ps, const struct option *all);

#endif
