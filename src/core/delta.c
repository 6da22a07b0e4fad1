/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/delta.h"
#include "util.h"

/* resolve.c's order of service ports: key, then protocol. */
static int port_cmp(const struct svc_port *x, const struct svc_port *y)
{
	int r = strcmp(x->key, y->key);

	if (!r)
		r = x->protocol < y->protocol ? -1 : x->protocol > y->protocol;
	return r;
}

int delta_resolve(struct desired *prev, const struct merge_snapshot *snap,
		  const struct merge_changes *ch, const struct resolve_opts *opts,
		  struct desired *ret, size_t *ret_rebuilt, struct diag_list *diags)
{
	struct merge_snapshot sub = { .refcnt = 1 };
	struct desired part = { 0 }, out = { 0 };
	_cleanup_free_ struct service **svcs = NULL;
	_cleanup_free_ struct epslice **eps = NULL;
	_cleanup_free_ bool *keep = NULL;
	size_t i, j, n_keep = 0;
	int r;

	if (!prev || !snap || !ch || !ret)
		return -EINVAL;
	if (ch->all) {
		r = resolve_build(snap, opts, ret, diags);
		if (r >= 0 && ret_rebuilt)
			*ret_rebuilt = ret->n_ports;
		return r;
	}
	/* The view of the affected services alone, in the snapshot's order. */
	svcs = reallocarray_z(NULL, snap->n_services, sizeof(*svcs));
	eps = reallocarray_z(NULL, snap->n_slices, sizeof(*eps));
	keep = reallocarray_z(NULL, prev->n_ports, sizeof(*keep));
	if ((!svcs && snap->n_services) || (!eps && snap->n_slices) || (!keep && prev->n_ports))
		return -ENOMEM;
	sub.services = svcs;
	sub.slices = eps;
	sub.generation = snap->generation;
	for (i = 0; i < snap->n_services; i++)
		if (merge_changes_affects(ch, snap->services[i]->ns, snap->services[i]->name))
			svcs[sub.n_services++] = snap->services[i];
	for (i = 0; i < snap->n_slices; i++) {
		const struct epslice *e = snap->slices[i];

		if (e->service_name && *e->service_name &&
		    merge_changes_affects(ch, e->ns, e->service_name))
			eps[sub.n_slices++] = snap->slices[i];
	}
	for (i = 0; i < prev->n_ports; i++) {
		keep[i] = !merge_changes_affects(ch, prev->ports[i].ns, prev->ports[i].name);
		n_keep += keep[i];
	}
	r = resolve_build(&sub, opts, &part, diags);
	if (r < 0)
		return r;
	if (n_keep + part.n_ports) {
		out.ports = reallocarray_z(NULL, n_keep + part.n_ports, sizeof(*out.ports));
		if (!out.ports) {
			desired_free(&part);
			return -ENOMEM;
		}
	}
	/* Nothing fails from here on: merge the two sorted lists, moving. */
	for (i = 0, j = 0;;) {
		while (i < prev->n_ports && !keep[i])
			i++;
		if (i == prev->n_ports && j == part.n_ports)
			break;
		if (j == part.n_ports ||
		    (i < prev->n_ports && port_cmp(&prev->ports[i], &part.ports[j]) < 0)) {
			out.ports[out.n_ports++] = prev->ports[i];
			memset(&prev->ports[i], 0, sizeof(prev->ports[i]));
			i++;
		} else {
			out.ports[out.n_ports++] = part.ports[j++];
		}
	}
	free(part.ports);
	if (ret_rebuilt)
		*ret_rebuilt = part.n_ports;
	*ret = out;
	return 0;
}
