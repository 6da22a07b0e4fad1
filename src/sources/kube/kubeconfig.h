/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where the Kubernetes API server is and how to authenticate to it, as
 * kube-proxy finds out (clientcmd.BuildConfigFromFlags, rest.InClusterConfig):
 *
 *  - a kubeconfig file (--kubeconfig; YAML or JSON, read with libyaml):
 *    current-context -> contexts[name].context.{cluster,user};
 *    clusters[name].cluster: server, certificate-authority(-data),
 *    insecure-skip-tls-verify; users[name].user: client-certificate(-data),
 *    client-key(-data), token, tokenFile.  Relative file names are relative
 *    to the kubeconfig's directory, as kubectl resolves them.  Unknown
 *    fields are ignored; auth methods svcnat does not implement (exec,
 *    auth-provider, username/password) are refused;
 *  - --master URL: overrides the server (alone: no authentication);
 *  - in-cluster: KUBERNETES_SERVICE_HOST and _PORT, the service account's
 *    token and ca.crt in /var/run/secrets/kubernetes.io/serviceaccount/.
 *
 * A file that is wrong gets one diag naming the file and the field
 * ("kc.yaml: users[0].user.client-certificate-data: not valid base64").
 * No I/O but reading the named files; nothing here logs.
 */
#ifndef SVCNAT_SOURCES_KUBECONFIG_H
#define SVCNAT_SOURCES_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "core/diag.h"
#include "sources/file/cfgfile.h"
#include "sources/file/pemfile.h"

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBECONFIG_MAX_SIZE (4u << 20)  /* bytes of a kubeconfig */
#define KUBE_TOKEN_MAX_SIZE (64u << 10) /* bytes of a token file */

struct kube_config {
	char *origin;         /* "kc.yaml", "in-cluster" or "--master": names it in messages */
	char *server;         /* "https://host:port[/path]", no trailing '/' */
	char *context;        /* the context used, or NULL */
	/* PEM material, always as bytes (sources/file/pemfile.h): from a -data
	 * field (no file), or read from a file and read again when it changes. */
	struct pemfile ca;    /* empty: the system's CAs */
	struct pemfile cert;  /* client certificate; empty: none */
	struct pemfile key;   /* its key */
	bool insecure;        /* insecure-skip-tls-verify */
	char *token;          /* bearer token in use (from token, or tokenFile's content) */
	char *token_file;     /* re-read by kube_config_refresh_token(); NULL if none */
	struct cfgfile_stamp token_stamp; /* of the token file when last read */
	enum file_mode_check mode; /* the config-safety rule for every file read */
};

void kube_config_done(struct kube_config *c);

/*
 * Read a kubeconfig, and the files it names, with the config-safety rule
 * `mode` (sources/file/cfgfile.h), as one YAML document within the limits of
 * sources/file/yamldoc.h.  A key given twice in a mapping: the last one counts
 * (client-go's YAML to JSON conversion); a name given twice in clusters,
 * users or contexts is an error (client-go's conversion refuses it too).
 * master (may be NULL) overrides the server.  0, or -EINVAL (a wrong file,
 * or one it names that is not a regular file or too large: one DIAG_ERROR
 * naming path and field), -ENOENT / -EACCES (cannot read it or a file it
 * names: diag), -EPERM (writable by others, refused by mode: diag),
 * -ENOMEM.
 */
int kube_config_load(const char *path, const char *master, enum file_mode_check mode,
		     struct kube_config *ret, struct diag_list *d);

/*
 * In-cluster configuration: host and port from the environment, token and
 * ca.crt under sa_dir (NULL = KUBE_SA_DIR), read with mode.  -ENOENT when
 * KUBERNETES_SERVICE_HOST/_PORT are not set (diag), -EINVAL / -errno with a
 * diag when the token or the CA cannot be read.
 */
int kube_config_in_cluster(const char *sa_dir, enum file_mode_check mode, struct kube_config *ret,
			   struct diag_list *d);

/* Only a server (--master without --kubeconfig).  0, -EINVAL, -ENOMEM. */
int kube_config_master(const char *master, struct kube_config *ret, struct diag_list *d);

/*
 * Re-read the token file if it changed since the last read (bound service
 * account tokens rotate).  Only a stat() when it did not: no open, so a
 * FIFO swapped in cannot block.  Returns 1 if the token changed, 0 if not
 * (or no token file), -errno (the old token is kept) with a diag naming
 * the file.
 */
int kube_config_refresh_token(struct kube_config *c, struct diag_list *d);

/*
 * The same for the token and the CA, certificate and key files (each
 * rotates on its own).  1 if any changed, 0 if none, or the first -errno
 * (what failed keeps its old content; a diag for each failure).
 */
int kube_config_refresh(struct kube_config *c, struct diag_list *d);

/* Whether s is an http:// or https:// URL with a host. */
bool kube_url_ok(const char *s);

#endif
