/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness for the KubeProxyConfiguration reader
 * (src/cli/kpconfig.c, YAML through libyaml and sources/file/yamldoc.c):
 * the input is the file's text, parsed from memory and read from a memfd.
 * Oracles: both ways agree; a KubeProxyConfiguration has fields with
 * non-empty paths and values, and no diag; "not one" has no diag; a
 * refusal has diags naming the file only.  Aliases, deep nesting and many
 * nodes must end fast (libFuzzer's -timeout and -rss_limit_mb catch a
 * bomb that gets through).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/kpconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int r, const struct kpconfig *c, const struct diag_list *d, const char *name)
{
	if (r == 1) {
		if (!c || d->n)
			abort();
		for (size_t i = 0; i < c->n_fields; i++)
			if (!c->fields[i].path[0] || !c->fields[i].value)
				abort();
	} else if (r == 0) {
		if (d->n)
			abort();
	} else if (r != -ENOMEM) {
		if (r != -EINVAL || !d->n)
			abort();
		for (size_t i = 0; i < d->n; i++)
			if (!d->items[i].source || strcmp(d->items[i].source, name) != 0)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kpconfig *a = NULL, *b = NULL;
	struct diag_list da, db;
	char path[64];
	int fd, ra, rb;

	diag_list_init(&da);
	ra = kpconfig_parse("x", (const char *)data, size, &a, &da);
	check(ra, a, &da, "x");

	fd = memfd_create("kpconfig", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	diag_list_init(&db);
	rb = kpconfig_read(path, FILE_MODE_IGNORE, &b, &db);
	check(rb, b, &db, path);
	if (ra != rb && ra != -ENOMEM && rb != -ENOMEM) {
		fprintf(stderr, "parse %d, read %d\n", ra, rb);
		abort();
	}
	if (ra == 1 && rb == 1 && a->n_fields != b->n_fields)
		abort();
	kpconfig_free(a);
	kpconfig_free(b);
	diag_list_done(&da);
	diag_list_done(&db);
	close(fd);
	return 0;
}
