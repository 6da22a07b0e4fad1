/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The options as the layers below the command line take them: the
 * pipeline's and the daemon's configurations.  They borrow o's strings and
 * arrays: o must outlive them.
 */
#ifndef SVCNAT_CLI_CONFIG_H
#define SVCNAT_CLI_CONFIG_H

#include "cli/options.h"
#include "daemon/daemon.h"

/*
 * The config-safety rule for every file that decides what svcnat programs
 * or whom it trusts (services files, kubeconfig and the files it names):
 * refused where svcnat writes rules (the daemon, --once), warned about in
 * the other modes, taken with --allow-insecure-config.
 */
enum file_mode_check config_file_mode(const struct svcnat_options *o);

/* A --config file that the modes writing rules would refuse (writable by
 * others) is an option error, logged (one error line) before anything
 * is done: 2.  Else 0; a path that cannot be stat()ed is left to the
 * read, which says why or waits for it. */
int config_check_modes(const struct svcnat_options *o);

/* The pipeline's configuration for o's mode. */
void config_pipeline(const struct svcnat_options *o, struct pipeline_config *ret);

/* The host's sysctls as o asks for them; global6 is the caller's to fill
 * once the node's addresses are known. */
void config_sysctls(const struct svcnat_options *o, struct host_sysctls *ret);

/* The daemon's, with kube-proxy's defaults for what o leaves unset. */
void config_daemon(const struct svcnat_options *o, struct daemon_config *ret);

#endif
