/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kube-proxy's configuration file: a KubeProxyConfiguration
 * (kubeproxy.config.k8s.io/v1alpha1) in YAML or JSON, read with libyaml
 * into a flat list of fields ("iptables.masqueradeBit" = "14"), which the
 * command line (options.c) applies as the flags of the same meaning.
 */
#ifndef SVCNAT_SOURCES_KPCONFIG_H
#define SVCNAT_SOURCES_KPCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/diag.h"
#include "sources/file/cfgfile.h"
#include "util.h"

/* Larger files are never taken for a KubeProxyConfiguration. */
#define KPCONFIG_MAX_BYTES (1024 * 1024)

struct kpfield {
	char *path;   /* mapping keys joined by '.', e.g. "conntrack.maxPerCore" */
	char *value;  /* the scalar; a sequence of scalars joined by ','; "" for null */
	bool null;    /* null, ~ or an empty sequence/mapping */
	unsigned line;/* 1-based line of the value */
};

struct kpconfig {
	char *path;        /* the file */
	char *api_version;
	struct kpfield *fields; /* in file order, apiVersion and kind left out */
	size_t n_fields;
};

/*
 * Read path if it is a KubeProxyConfiguration: a regular file
 * (sources/file/cfgfile.h) of at most KPCONFIG_MAX_BYTES whose top-level
 * mapping has kind: KubeProxyConfiguration.  Returns 1 and *ret (the
 * caller's, kpconfig_free) when it is one; 0 when it is not (anything
 * else, a file that cannot be read, a FIFO or a device: a service source,
 * which the file source judges); -EINVAL with a diagnostic (file, line,
 * field) when it names that kind but is not valid YAML, breaks a limit of
 * sources/file/yamldoc.h, holds a NUL byte in a key or value, has a sequence of
 * mappings where a value belongs, or is larger than KPCONFIG_MAX_BYTES
 * with the kind at its start; -EPERM with a diagnostic when mode refuses
 * it (writable by others); -ENOMEM.
 */
int kpconfig_read(const char *path, enum file_mode_check mode, struct kpconfig **ret,
		  struct diag_list *d);

/* The same from a buffer (name is used in diagnostics), without the mode
 * check and the size limit. */
int kpconfig_parse(const char *name, const char *text, size_t len, struct kpconfig **ret,
		   struct diag_list *d);

void kpconfig_free(struct kpconfig *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kpconfig *, kpconfig_free)

#endif
