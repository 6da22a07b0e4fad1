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

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBECONFIG_MAX_SIZE (4u << 20)  /* bytes of a kubeconfig */
#define KUBE_TOKEN_MAX_SIZE (64u << 10) /* bytes of a token file */

/* PEM material: a file name or the bytes themselves (from a -data field). */
struct kube_pem {
	char *file; /* absolute or relative to the process's cwd; NULL if data */
	char *data; /* decoded bytes (NUL-terminated for convenience); NULL if file */
	size_t len;
};

struct kube_config {
	char *origin;         /* "kc.yaml", "in-cluster" or "--master": names it in messages */
	char *server;         /* "https://host:port[/path]", no trailing '/' */
	char *context;        /* the context used, or NULL */
	struct kube_pem ca;   /* empty: the system's CAs */
	struct kube_pem cert; /* client certificate; empty: none */
	struct kube_pem key;  /* its key */
	bool insecure;        /* insecure-skip-tls-verify */
	char *token;          /* bearer token in use (from token, or tokenFile's content) */
	char *token_file;     /* re-read by kube_config_refresh_token(); NULL if none */
	time_t token_mtime;   /* of the token file when last read */
	long token_mtime_nsec;
};

void kube_config_done(struct kube_config *c);

/*
 * Read a kubeconfig.  master (may be NULL) overrides the server.  0, or
 * -EINVAL (a wrong file: one DIAG_ERROR naming path and field), -ENOENT /
 * -EACCES (cannot read it or a file it names: diag), -ENOMEM.
 */
int kube_config_load(const char *path, const char *master, struct kube_config *ret, struct diag_list *d);

/*
 * In-cluster configuration: host and port from the environment, token and
 * ca.crt under sa_dir (NULL = KUBE_SA_DIR).  -ENOENT when
 * KUBERNETES_SERVICE_HOST/_PORT are not set (diag), -EINVAL / -errno with a
 * diag when the token or the CA cannot be read.
 */
int kube_config_in_cluster(const char *sa_dir, struct kube_config *ret, struct diag_list *d);

/* Only a server (--master without --kubeconfig).  0, -EINVAL, -ENOMEM. */
int kube_config_master(const char *master, struct kube_config *ret, struct diag_list *d);

/*
 * Re-read the token file if it changed since the last read (bound service
 * account tokens rotate).  Returns 1 if the token changed, 0 if not (or no
 * token file), -errno (the old token is kept) with a diag.
 */
int kube_config_refresh_token(struct kube_config *c, struct diag_list *d);

/* Whether s is an http:// or https:// URL with a host. */
bool kube_url_ok(const char *s);

#endif
