/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness for the kubeconfig reader (src/sources/kube/kubeconfig.c,
 * YAML through libyaml): the input is the kubeconfig, handed over as a
 * memfd.  Oracles: a load succeeds with no diag and a server that is an
 * http(s) URL without trailing '/', or fails with exactly one diag naming
 * the file.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sources/kube/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_config c;
	struct diag_list d;
	char path[64];
	int fd, r;

	fd = memfd_create("kubeconfig", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	diag_list_init(&d);
	r = kube_config_load(path, NULL, FILE_MODE_IGNORE, &c, &d);
	if (r == 0) {
		size_t n = strlen(c.server);

		if (d.n || !kube_url_ok(c.server) || c.server[n - 1] == '/' || !c.origin)
			abort();
		kube_config_done(&c);
	} else if (r != -ENOMEM && (d.n != 1 || !d.items[0].source ||
				     strcmp(d.items[0].source, path) != 0)) {
		fprintf(stderr, "r=%d with %zu diags\n", r, d.n);
		abort();
	}
	diag_list_done(&d);
	close(fd);
	return 0;
}
