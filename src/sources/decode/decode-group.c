/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sources/decode/decode-group.h"
#include "sources/decode/decode-item.h"

void epgroups_done(struct epgroups *gs)
{
	size_t i;

	for (i = 0; i < gs->n; i++)
		epslice_unref(gs->g[i].e);
	free(gs->g);
	*gs = (struct epgroups){ 0 };
}

int epgroup_port_cmp(const void *a, const void *b)
{
	const struct epslice_port *x = a, *y = b;
	int r = strcmp(x->name, y->name);

	if (r)
		return r;
	if (x->protocol != y->protocol)
		return x->protocol < y->protocol ? -1 : 1;
	return x->port < y->port ? -1 : x->port > y->port;
}

static bool ports_same(const struct epslice *e, const struct epslice_port *p, size_t n)
{
	size_t i;

	if (e->n_ports != n)
		return false;
	for (i = 0; i < n; i++)
		if (epgroup_port_cmp(&e->ports[i], &p[i]) != 0)
			return false;
	return true;
}

/* The group for (ports, family), created if needed.  ports must be sorted;
 * their names are copied. */
int epgroup_get(struct epgroups *gs, enum item_origin origin, const char *ns,
		const char *svc, const struct epslice_port *ports, size_t n_ports,
		uint8_t family, struct epgroup **ret)
{
	struct epslice *e;
	struct epgroup *g;
	char name[300];
	size_t i;

	for (i = 0; i < gs->n; i++) {
		if (gs->g[i].e->family == family && ports_same(gs->g[i].e, ports, n_ports)) {
			*ret = &gs->g[i];
			return 0;
		}
	}
	if (GROW(gs->g, gs->cap, gs->n + 1) < 0)
		return -ENOMEM;
	e = dec_epslice_new(origin);
	if (!e)
		return -ENOMEM;
	g = &gs->g[gs->n++];
	*g = (struct epgroup){ .e = e };
	if (gs->n == 1)
		snprintf(name, sizeof(name), "%s", svc);
	else
		snprintf(name, sizeof(name), "%s#%zu", svc, gs->n - 1);
	e->family = family;
	e->ns = strdup(ns);
	e->name = strdup(name);
	e->service_name = strdup(svc);
	if (!e->ns || !e->name || !e->service_name)
		return -ENOMEM;
	if (n_ports) {
		e->ports = calloc(n_ports, sizeof(*e->ports));
		if (!e->ports)
			return -ENOMEM;
	}
	for (i = 0; i < n_ports; i++) {
		e->ports[i] = ports[i];
		e->ports[i].name = strdup(ports[i].name);
		if (!e->ports[i].name)
			return -ENOMEM;
		e->n_ports = i + 1;
	}
	*ret = g;
	return 0;
}

/* Append an endpoint (strings are taken over by the group). */
int epgroup_add(struct epgroup *g, struct epslice_endpoint *ep)
{
	struct epslice *e = g->e;

	if (GROW(e->endpoints, g->cap_endpoints, e->n_endpoints + 1) < 0)
		return -ENOMEM;
	e->endpoints[e->n_endpoints++] = *ep;
	*ep = (struct epslice_endpoint){ 0 };
	return 0;
}

/* Hand the groups to out; with none, one empty epslice (the service has an
 * endpoints object, with no endpoints). */
int epgroups_emit(struct epgroups *gs, enum item_origin origin, const char *ns,
		  const char *svc, struct decoded *out)
{
	struct epgroup *g;
	size_t i;
	int r;

	if (gs->n == 0) {
		r = epgroup_get(gs, origin, ns, svc, NULL, 0, AF_INET, &g);
		if (r < 0)
			return r;
	}
	for (i = 0; i < gs->n; i++) {
		r = dec_add_slice(out, gs->g[i].e);
		gs->g[i].e = NULL;
		if (r < 0)
			return r;
	}
	gs->n = 0;
	return 0;
}
