/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kube-proxy's /configz body: the configuration the daemon runs with, as
 * component-base's configz package serves a component's config
 * (cmd/kube-proxy/app/server.go registers its internal
 * KubeProxyConfiguration under "kubeproxy.config.k8s.io").  The internal
 * type has no JSON tags, so its keys are the Go field names ("HealthzBindAddress",
 * "IPTables": {"MasqueradeBit": 14}), durations are Go's text ("30s",
 * "15m0s"); only Logging (logsapi) has lower-case keys.
 */
#ifndef SVCNAT_CLI_CONFIGZ_H
#define SVCNAT_CLI_CONFIGZ_H

#include "cli/options.h"

/* The name kube-proxy registers its configz under. */
#define CONFIGZ_NAME "kubeproxy.config.k8s.io"

/*
 * Render o (parsed, defaults not yet applied: NULL means kube-proxy's
 * default) as the /configz JSON object into *ret_json (malloc'd, the
 * caller frees).  Settings svcnat accepts but does not use carry
 * kube-proxy's defaults.  0 or -ENOMEM.
 */
int configz_render(const struct svcnat_options *o, char **ret_json);

#endif
