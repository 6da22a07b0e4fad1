/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Merge engine and resolve tests.  Allocation failures are injected through
 * -Wl,--wrap=malloc/calloc/realloc (see Makefile.am); strdup/asprintf
 * allocate inside libc and are not covered.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/merge.h"
#include "core/resolve.h"
#include "util.h"

/* --- allocation failure injection --- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t sz);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t sz);
void *__wrap_realloc(void *p, size_t n);

static long alloc_budget = -1; /* -1: unlimited; else allocations left before failing */
static unsigned long alloc_failures;

static bool alloc_fail(void)
{
	if (alloc_budget < 0)
		return false;
	if (alloc_budget == 0) {
		alloc_failures++;
		return true;
	}
	alloc_budget--;
	return false;
}

void *__wrap_malloc(size_t n)
{
	return alloc_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t sz)
{
	return alloc_fail() ? NULL : __real_calloc(n, sz);
}

void *__wrap_realloc(void *p, size_t n)
{
	return alloc_fail() ? NULL : __real_realloc(p, n);
}

/* --- item builders --- */

static char *xstrdup(const char *s)
{
	char *r = s ? strdup(s) : NULL;

	if (s)
		assert_non_null(r);
	return r;
}

#define XGROW(arr, n)                                                                          \
	do {                                                                                   \
		(arr) = realloc((arr), ((n) + 1) * sizeof(*(arr)));                            \
		assert_non_null(arr);                                                          \
		memset(&(arr)[(n)], 0, sizeof(*(arr)));                                        \
	} while (0)

static struct ipaddr ip(const char *s)
{
	struct ipaddr a;

	assert_int_equal(ipaddr_parse(s, &a), 0);
	return a;
}

static struct service *svc_new(const char *ns, const char *name, enum item_origin origin,
			       enum svc_type type)
{
	struct service *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->refcnt = 1;
	s->origin = origin;
	s->ns = xstrdup(ns);
	s->name = xstrdup(name);
	s->type = type;
	s->affinity_timeout = 10800;
	return s;
}

/* A ClusterIP service with one cluster IP and one named TCP port. */
static struct service *svc_simple(const char *ns, const char *name, const char *cip,
				  uint16_t port)
{
	struct service *s = svc_new(ns, name, ORIGIN_K8S, SVC_CLUSTER_IP);

	XGROW(s->cluster_ips, s->n_cluster_ips);
	s->cluster_ips[s->n_cluster_ips++] = ip(cip);
	XGROW(s->ports, s->n_ports);
	s->ports[0].name = xstrdup("http");
	s->ports[0].protocol = PROTO_TCP;
	s->ports[0].port = port;
	s->n_ports = 1;
	return s;
}

static void svc_cip(struct service *s, const char *a)
{
	XGROW(s->cluster_ips, s->n_cluster_ips);
	s->cluster_ips[s->n_cluster_ips++] = ip(a);
}

static void svc_extip(struct service *s, const char *a)
{
	XGROW(s->external_ips, s->n_external_ips);
	s->external_ips[s->n_external_ips++] = ip(a);
}

static void svc_lb(struct service *s, const char *a, bool proxy)
{
	XGROW(s->lb_ingress, s->n_lb_ingress);
	s->lb_ingress[s->n_lb_ingress].ip = ip(a);
	s->lb_ingress[s->n_lb_ingress++].ipmode_proxy = proxy;
}

static void svc_range(struct service *s, const char *cidr)
{
	XGROW(s->lb_source_ranges, s->n_lb_source_ranges);
	assert_int_equal(ipnet_parse(cidr, &s->lb_source_ranges[s->n_lb_source_ranges++]), 0);
}

static void svc_port(struct service *s, const char *name, uint8_t proto, uint16_t port,
		     uint16_t node_port, const char *target)
{
	XGROW(s->ports, s->n_ports);
	s->ports[s->n_ports].name = xstrdup(name);
	s->ports[s->n_ports].protocol = proto;
	s->ports[s->n_ports].port = port;
	s->ports[s->n_ports].node_port = node_port;
	s->ports[s->n_ports].target_port = xstrdup(target);
	s->n_ports++;
}

static struct epslice *eps_new(const char *ns, const char *name, const char *svc,
			       enum item_origin origin)
{
	struct epslice *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	e->refcnt = 1;
	e->origin = origin;
	e->ns = xstrdup(ns);
	e->name = xstrdup(name);
	e->service_name = xstrdup(svc);
	e->family = AF_INET;
	return e;
}

static void eps_port(struct epslice *e, const char *name, uint8_t proto, uint16_t port)
{
	XGROW(e->ports, e->n_ports);
	e->ports[e->n_ports].name = xstrdup(name);
	e->ports[e->n_ports].protocol = proto;
	e->ports[e->n_ports++].port = port;
}

enum { READY = 1, SERVING = 2, TERMINATING = 4 };

static struct epslice_endpoint *eps_ep(struct epslice *e, const char *a, unsigned cond,
				       const char *node, const char *zone)
{
	struct epslice_endpoint *ep;

	XGROW(e->endpoints, e->n_endpoints);
	ep = &e->endpoints[e->n_endpoints++];
	ep->addr = ip(a);
	ep->ready = cond & READY;
	ep->serving = cond & SERVING;
	ep->terminating = cond & TERMINATING;
	ep->node_name = xstrdup(node);
	ep->zone = xstrdup(zone);
	return ep;
}

/* A slice for service `svc` with one "http" TCP port and the given ready addresses. */
static struct epslice *eps_simple(const char *ns, const char *name, const char *svc,
				  uint16_t port, const char *a1, const char *a2)
{
	struct epslice *e = eps_new(ns, name, svc, ORIGIN_K8S);

	eps_port(e, "http", PROTO_TCP, port);
	if (a1)
		eps_ep(e, a1, READY | SERVING, "node-a", NULL);
	if (a2)
		eps_ep(e, a2, READY | SERVING, "node-b", NULL);
	return e;
}

/* --- handler recorder --- */

struct rec {
	int calls;
	unsigned changed;
	unsigned long generation;
	size_t n_services, n_slices;
	struct merge_snapshot *kept;
};

static void rec_handler(const struct merge_snapshot *snap, unsigned changed, void *userdata)
{
	struct rec *r = userdata;

	r->calls++;
	r->changed = changed;
	r->generation = snap->generation;
	r->n_services = snap->n_services;
	r->n_slices = snap->n_slices;
}

static void keep_handler(const struct merge_snapshot *snap, unsigned changed, void *userdata)
{
	struct rec *r = userdata;

	rec_handler(snap, changed, userdata);
	merge_snapshot_unref(r->kept);
	r->kept = merge_snapshot_ref((struct merge_snapshot *)snap);
}

static int update1(struct merge *m, int src, enum merge_op op, struct service *s)
{
	return merge_update(m, src, op, &s, 1, NULL, 0);
}

static int update_eps(struct merge *m, int src, enum merge_op op, struct epslice *e)
{
	return merge_update(m, src, op, NULL, 0, &e, 1);
}

/* "ns/name=port,..." of the current union, for compact assertions. */
static void union_str(struct merge *m, char *buf, size_t len)
{
	struct merge_snapshot *s = merge_snapshot_get(m);
	size_t i, off = 0;

	assert_non_null(s);
	buf[0] = '\0';
	for (i = 0; i < s->n_services; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s/%s=%u", i ? "," : "",
					s->services[i]->ns, s->services[i]->name,
					s->services[i]->n_ports ? s->services[i]->ports[0].port : 0);
	for (i = 0; i < s->n_slices; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s[%s/%s]", off ? "," : "",
					s->slices[i]->ns, s->slices[i]->name);
	assert_true(off < len);
	merge_snapshot_unref(s);
}

#define assert_union(m, expect)                                                                \
	do {                                                                                   \
		char _b[4096];                                                                 \
		union_str((m), _b, sizeof(_b));                                                \
		assert_string_equal(_b, (expect));                                             \
	} while (0)

/* --- merge tests --- */

static void test_register(void **state)
{
	struct merge *m = merge_new();
	struct rec r = { 0 };

	assert_non_null(m);
	assert_int_equal(merge_source_register(m, "a.json"), 0);
	assert_int_equal(merge_source_register(m, "b.json"), 1);
	assert_int_equal(merge_source_register(m, "a.json"), -EEXIST);
	assert_int_equal(merge_source_count(m), 2);
	assert_string_equal(merge_source_name(m, 1), "b.json");
	assert_null(merge_source_name(m, 2));
	assert_null(merge_source_name(m, -1));
	assert_int_equal(merge_update(m, 2, MERGE_SET, NULL, 0, NULL, 0), -ENOENT);
	assert_int_equal(merge_update(m, -1, MERGE_SET, NULL, 0, NULL, 0), -ENOENT);
	assert_int_equal(merge_handler_register(m, 0, rec_handler, &r), -EINVAL);
	assert_int_equal(merge_handler_register(m, 4, rec_handler, &r), -EINVAL);
	assert_int_equal(merge_handler_register(m, MERGE_HANDLE_ALL, NULL, &r), -EINVAL);
	/* An empty SET of an empty source changes nothing. */
	assert_int_equal(merge_update(m, 0, MERGE_SET, NULL, 0, NULL, 0), 0);
	assert_false(merge_dirty(m));
	assert_int_equal(merge_flush(m), 0);
	merge_free(m);
	merge_free(NULL);
}

static void test_set_add_remove(void **state)
{
	struct merge *m = merge_new();
	struct service *a = svc_simple("shop", "web", "198.19.0.10", 80);
	struct service *b = svc_simple("shop", "api", "198.19.0.11", 81);
	struct service *c = svc_simple("ops", "mon", "198.19.0.12", 82);
	struct service *gone = svc_simple("shop", "nope", "198.19.0.13", 83);
	struct service *set[] = { a, b };
	struct rec r = { 0 };
	int src;

	src = merge_source_register(m, "a.json");
	assert_int_equal(merge_handler_register(m, MERGE_HANDLE_ALL, rec_handler, &r), 0);

	assert_int_equal(merge_update(m, src, MERGE_SET, set, 2, NULL, 0), 0);
	assert_true(merge_dirty(m));
	assert_int_equal(merge_flush(m), 1);
	assert_false(merge_dirty(m));
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.changed, MERGE_HANDLE_SERVICES);
	assert_int_equal(r.generation, 1);
	assert_union(m, "shop/api=81,shop/web=80");

	assert_int_equal(update1(m, src, MERGE_ADD, c), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_union(m, "ops/mon=82,shop/api=81,shop/web=80");

	assert_int_equal(update1(m, src, MERGE_REMOVE, a), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_union(m, "ops/mon=82,shop/api=81");
	assert_int_equal(r.calls, 3);
	assert_int_equal(r.generation, 3);

	/* REMOVE of a key the source does not hold: nothing. */
	assert_int_equal(update1(m, src, MERGE_REMOVE, gone), 0);
	assert_int_equal(update1(m, src, MERGE_REMOVE, a), 0);
	assert_false(merge_dirty(m));
	assert_int_equal(merge_flush(m), 0);
	assert_int_equal(r.calls, 3);

	/* The engine took its own references: the caller's go away first. */
	service_unref(a);
	service_unref(b);
	service_unref(c);
	service_unref(gone);
	assert_union(m, "ops/mon=82,shop/api=81");
	merge_free(m);
}

static void test_set_replaces_and_drops(void **state)
{
	struct merge *m = merge_new();
	struct service *a = svc_simple("shop", "web", "198.19.0.10", 80);
	struct service *b = svc_simple("shop", "api", "198.19.0.11", 81);
	struct service *b2 = svc_simple("shop", "api", "198.19.0.11", 8081);
	struct service *c = svc_simple("shop", "cart", "198.19.0.12", 82);
	struct epslice *e = eps_simple("shop", "web-1", "web", 8080, "198.18.65.11", NULL);
	struct service *set1[] = { a, b }, *set2[] = { b2, c };
	int src = merge_source_register(m, "dir");

	assert_int_equal(merge_update(m, src, MERGE_SET, set1, 2, &e, 1), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_union(m, "shop/api=81,shop/web=80,[shop/web-1]");
	/* SET replaces b, drops a and the slice, adds c. */
	assert_int_equal(merge_update(m, src, MERGE_SET, set2, 2, NULL, 0), 0);
	assert_union(m, "shop/api=8081,shop/cart=82");
	/* Removal of all of a source's items: an empty SET. */
	assert_int_equal(merge_update(m, src, MERGE_SET, NULL, 0, NULL, 0), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_union(m, "");
	service_unref(a);
	service_unref(b);
	service_unref(b2);
	service_unref(c);
	epslice_unref(e);
	merge_free(m);
}

static void test_precedence_and_conflicts(void **state)
{
	struct merge *m = merge_new();
	struct service *from_a = svc_simple("shop", "web", "198.19.0.10", 80);
	struct service *from_b = svc_simple("shop", "web", "198.19.0.10", 9999);
	struct service *from_b2 = svc_simple("shop", "web", "198.19.0.10", 7777);
	struct diag_list *dl = merge_diags(m);
	struct merge_snapshot *snap;
	struct rec r = { 0 };
	int sa, sb;
	char *line;

	sa = merge_source_register(m, "a.json");
	sb = merge_source_register(m, "b.json");
	merge_handler_register(m, MERGE_HANDLE_ALL, rec_handler, &r);

	/* b reports first, but a was registered first: a wins once it reports. */
	assert_int_equal(update1(m, sb, MERGE_ADD, from_b), 0);
	assert_union(m, "shop/web=9999");
	assert_int_equal(dl->n, 0);
	assert_int_equal(update1(m, sa, MERGE_ADD, from_a), 0);
	assert_union(m, "shop/web=80");
	assert_int_equal(dl->n, 1);
	assert_int_equal(dl->items[0].level, DIAG_WARNING);
	line = diag_format(&dl->items[0]);
	assert_string_equal(line, "b.json: shop/web: service also defined by source 'a.json', "
				  "which takes precedence");
	free(line);
	assert_int_equal(merge_flush(m), 1);

	/* The loser changing its copy: no notification, no second warning. */
	assert_int_equal(update1(m, sb, MERGE_ADD, from_b2), 0);
	assert_false(merge_dirty(m));
	assert_int_equal(dl->n, 1);
	assert_int_equal(update1(m, sa, MERGE_ADD, from_a), 0);
	assert_int_equal(dl->n, 1);

	/* The winner leaves: b's copy takes over, the conflict is forgotten... */
	assert_int_equal(update1(m, sa, MERGE_REMOVE, from_a), 0);
	assert_true(merge_dirty(m));
	assert_union(m, "shop/web=7777");
	assert_int_equal(merge_flush(m), 1);
	assert_int_equal(dl->n, 1);
	/* ...so that it is reported again when it comes back. */
	assert_int_equal(update1(m, sa, MERGE_ADD, from_a), 0);
	assert_int_equal(dl->n, 2);
	assert_union(m, "shop/web=80");
	assert_int_equal(merge_flush(m), 1);
	assert_int_equal(r.changed, MERGE_HANDLE_SERVICES);

	/* Slices conflict the same way, with their own wording. */
	{
		struct epslice *ea = eps_simple("shop", "web-1", "web", 8080, "198.18.65.11", NULL);
		struct epslice *eb = eps_simple("shop", "web-1", "web", 8080, "198.18.65.12", NULL);

		assert_int_equal(update_eps(m, sb, MERGE_ADD, eb), 0);
		assert_int_equal(update_eps(m, sa, MERGE_ADD, ea), 0);
		assert_int_equal(dl->n, 3);
		assert_string_equal(dl->items[2].source, "b.json");
		assert_string_equal(dl->items[2].object, "shop/web-1");
		assert_non_null(strstr(dl->items[2].msg, "endpoint slice also defined by source 'a.json'"));
		assert_int_equal(merge_flush(m), 1);
		assert_int_equal(r.changed, MERGE_HANDLE_ENDPOINTS);
		snap = merge_snapshot_get(m);
		assert_int_equal(snap->n_slices, 1);
		assert_ptr_equal(snap->slices[0], ea);
		merge_snapshot_unref(snap);
		epslice_unref(ea);
		epslice_unref(eb);
	}
	service_unref(from_a);
	service_unref(from_b);
	service_unref(from_b2);
	merge_free(m);
}

static void test_coalescing(void **state)
{
	struct merge *m = merge_new();
	struct rec r = { 0 };
	char name[32];
	int i, src = merge_source_register(m, "etcd");

	merge_handler_register(m, MERGE_HANDLE_ALL, rec_handler, &r);
	for (i = 0; i < 50; i++) {
		struct service *s;
		struct epslice *e;

		snprintf(name, sizeof(name), "svc-%02d", i);
		s = svc_simple("default", name, "198.19.1.1", (uint16_t)(1000 + i));
		e = eps_simple("default", name, name, 8080, "198.18.65.1", NULL);
		assert_int_equal(update1(m, src, MERGE_ADD, s), 0);
		assert_int_equal(update_eps(m, src, MERGE_ADD, e), 0);
		service_unref(s);
		epslice_unref(e);
	}
	assert_int_equal(r.calls, 0);
	assert_int_equal(merge_flush(m), 1);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.changed, MERGE_HANDLE_ALL);
	assert_int_equal(r.generation, 1);
	assert_int_equal(r.n_services, 50);
	assert_int_equal(r.n_slices, 50);
	assert_int_equal(merge_flush(m), 0);
	assert_int_equal(r.calls, 1);
	merge_free(m);
}

static void test_noop_suppression(void **state)
{
	struct merge *m = merge_new();
	struct service *a = svc_simple("shop", "web", "198.19.0.10", 80);
	struct service *a_copy = svc_simple("shop", "web", "198.19.0.10", 80);
	struct epslice *e = eps_simple("shop", "web-1", "web", 8080, "198.18.65.11", "198.18.66.12");
	struct epslice *e_copy = eps_simple("shop", "web-1", "web", 8080, "198.18.65.11", "198.18.66.12");
	struct service *gone;
	struct merge_snapshot *snap;
	struct rec r = { 0 };
	int src = merge_source_register(m, "a.json");

	merge_handler_register(m, MERGE_HANDLE_ALL, rec_handler, &r);
	assert_int_equal(merge_update(m, src, MERGE_SET, &a, 1, &e, 1), 0);
	assert_int_equal(merge_flush(m), 1);

	/* The same pointers again, then new objects with identical content. */
	assert_int_equal(merge_update(m, src, MERGE_SET, &a, 1, &e, 1), 0);
	assert_false(merge_dirty(m));
	assert_int_equal(merge_update(m, src, MERGE_SET, &a_copy, 1, &e_copy, 1), 0);
	assert_int_equal(merge_update(m, src, MERGE_ADD, &a_copy, 1, &e_copy, 1), 0);
	assert_false(merge_dirty(m));
	assert_int_equal(merge_flush(m), 0);
	assert_int_equal(r.calls, 1);
	/* The engine kept the first pointer. */
	snap = merge_snapshot_get(m);
	assert_ptr_equal(snap->services[0], a);
	assert_ptr_equal(snap->slices[0], e);
	assert_int_equal(snap->generation, 1);
	merge_snapshot_unref(snap);

	/* Changes that cancel out before the flush notify nothing. */
	gone = svc_simple("shop", "tmp", "198.19.0.99", 99);
	assert_int_equal(update1(m, src, MERGE_ADD, gone), 0);
	assert_true(merge_dirty(m));
	assert_int_equal(update1(m, src, MERGE_REMOVE, gone), 0);
	assert_int_equal(merge_flush(m), 0);
	assert_false(merge_dirty(m));
	assert_int_equal(r.calls, 1);

	service_unref(a);
	service_unref(a_copy);
	service_unref(gone);
	epslice_unref(e);
	epslice_unref(e_copy);
	merge_free(m);
}

static void test_handler_kinds(void **state)
{
	struct merge *m = merge_new();
	struct rec rs = { 0 }, re = { 0 }, ra = { 0 };
	struct service *a = svc_simple("shop", "web", "198.19.0.10", 80);
	struct epslice *e = eps_simple("shop", "web-1", "web", 8080, "198.18.65.11", NULL);
	struct epslice *e2 = eps_simple("shop", "web-1", "web", 8080, "198.18.65.12", NULL);
	int src = merge_source_register(m, "a.json");

	merge_handler_register(m, MERGE_HANDLE_SERVICES, rec_handler, &rs);
	merge_handler_register(m, MERGE_HANDLE_ENDPOINTS, rec_handler, &re);
	merge_handler_register(m, MERGE_HANDLE_ALL, rec_handler, &ra);

	assert_int_equal(update_eps(m, src, MERGE_ADD, e), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_int_equal(rs.calls, 0);
	assert_int_equal(re.calls, 1);
	assert_int_equal(ra.calls, 1);
	assert_int_equal(re.changed, MERGE_HANDLE_ENDPOINTS);

	assert_int_equal(update1(m, src, MERGE_ADD, a), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_int_equal(rs.calls, 1);
	assert_int_equal(re.calls, 1);
	assert_int_equal(ra.calls, 2);
	assert_int_equal(rs.changed, MERGE_HANDLE_SERVICES);
	/* Both handlers see the full snapshot, whatever they registered for. */
	assert_int_equal(rs.n_slices, 1);

	assert_int_equal(update1(m, src, MERGE_REMOVE, a), 0);
	assert_int_equal(update_eps(m, src, MERGE_ADD, e2), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_int_equal(rs.calls, 2);
	assert_int_equal(re.calls, 2);
	assert_int_equal(ra.calls, 3);
	assert_int_equal(ra.changed, MERGE_HANDLE_ALL);
	assert_int_equal(ra.generation, 3);
	service_unref(a);
	epslice_unref(e);
	epslice_unref(e2);
	merge_free(m);
}

static void test_snapshot_lifetime(void **state)
{
	struct merge *m = merge_new();
	struct rec r = { 0 };
	struct service *a = svc_simple("shop", "web", "198.19.0.10", 80);
	struct service *a2 = svc_simple("shop", "web", "198.19.0.10", 81);
	struct merge_snapshot *before, *kept;
	int src = merge_source_register(m, "a.json");

	merge_handler_register(m, MERGE_HANDLE_ALL, keep_handler, &r);
	assert_int_equal(update1(m, src, MERGE_ADD, a), 0);
	/* Not dirty-checked: get returns the current union before any flush. */
	before = merge_snapshot_get(m);
	assert_int_equal(before->n_services, 1);
	assert_int_equal(before->generation, 0);
	assert_int_equal(merge_flush(m), 1);
	kept = merge_snapshot_ref(r.kept);
	service_unref(a);

	/* The engine moves on; the kept snapshot (and its items) stay valid. */
	assert_int_equal(update1(m, src, MERGE_ADD, a2), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_int_equal(update1(m, src, MERGE_REMOVE, a2), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_int_equal(r.n_services, 0);
	merge_snapshot_unref(r.kept);
	r.kept = NULL;
	service_unref(a2);
	merge_free(m);

	assert_int_equal(kept->generation, 1);
	assert_int_equal(kept->n_services, 1);
	assert_string_equal(kept->services[0]->name, "web");
	assert_int_equal(kept->services[0]->ports[0].port, 80);
	assert_int_equal(before->services[0]->ports[0].port, 80);
	merge_snapshot_unref(kept);
	merge_snapshot_unref(before);
	merge_snapshot_unref(NULL);
}

/*
 * Two sources of 10,000 services each, half the keys shared; then every
 * key updated one at a time as an etcd watch would.  Checks the union
 * against a straightforward model after each phase.
 */
#define BIG 10000
static void check_big(struct merge *m, const int *port_a, const int *port_b)
{
	struct merge_snapshot *s = merge_snapshot_get(m);
	size_t i, n = 0;
	char name[32];

	assert_non_null(s);
	for (i = 0; i < 3 * BIG; i++) {
		int want = port_a[i] ? port_a[i] : port_b[i];

		if (!want)
			continue;
		snprintf(name, sizeof(name), "svc-%05zu", i);
		assert_true(n < s->n_services);
		assert_string_equal(s->services[n]->name, name);
		assert_int_equal(s->services[n]->ports[0].port, want);
		n++;
	}
	assert_int_equal(n, s->n_services);
	merge_snapshot_unref(s);
}

static void test_large_single_item_updates(void **state)
{
	struct merge *m = merge_new();
	static struct service *items[BIG];
	static int port_a[3 * BIG], port_b[3 * BIG];
	struct rec r = { 0 };
	char name[32];
	int sa, sb;
	size_t i;

	sa = merge_source_register(m, "a");
	sb = merge_source_register(m, "etcd");
	merge_handler_register(m, MERGE_HANDLE_ALL, rec_handler, &r);
	memset(port_a, 0, sizeof(port_a));
	memset(port_b, 0, sizeof(port_b));
	/* etcd: keys 0..BIG-1 ; a: keys BIG/2..BIG/2+BIG-1 */
	for (i = 0; i < BIG; i++) {
		snprintf(name, sizeof(name), "svc-%05zu", i);
		items[i] = svc_simple("default", name, "198.19.0.1", 2000);
		port_b[i] = 2000;
	}
	assert_int_equal(merge_update(m, sb, MERGE_SET, items, BIG, NULL, 0), 0);
	for (i = 0; i < BIG; i++)
		service_unref(items[i]);
	for (i = 0; i < BIG; i++) {
		snprintf(name, sizeof(name), "svc-%05zu", i + BIG / 2);
		items[i] = svc_simple("default", name, "198.19.0.1", 1000);
		port_a[i + BIG / 2] = 1000;
	}
	assert_int_equal(merge_update(m, sa, MERGE_SET, items, BIG, NULL, 0), 0);
	for (i = 0; i < BIG; i++)
		service_unref(items[i]);
	assert_int_equal(merge_flush(m), 1);
	assert_int_equal(r.n_services, BIG + BIG / 2);
	assert_int_equal(merge_diags(m)->n, BIG / 2);
	check_big(m, port_a, port_b);

	/* Watch events: each etcd key changes, every 1000th event is flushed. */
	for (i = 0; i < BIG; i++) {
		struct service *s;

		snprintf(name, sizeof(name), "svc-%05zu", i);
		s = svc_simple("default", name, "198.19.0.1", 3000);
		assert_int_equal(update1(m, sb, MERGE_ADD, s), 0);
		port_b[i] = 3000;
		service_unref(s);
		if (i % 1000 == 999)
			merge_flush(m);
	}
	check_big(m, port_a, port_b);
	/* Half the etcd keys deleted, one event each, and new keys added. */
	for (i = 0; i < BIG; i += 2) {
		struct service *s;

		snprintf(name, sizeof(name), "svc-%05zu", i);
		s = svc_simple("default", name, "198.19.0.1", 1);
		assert_int_equal(update1(m, sb, MERGE_REMOVE, s), 0);
		port_b[i] = 0;
		service_unref(s);
		snprintf(name, sizeof(name), "svc-%05zu", i + BIG + BIG / 2);
		s = svc_simple("default", name, "198.19.0.1", 4000);
		assert_int_equal(update1(m, sb, MERGE_ADD, s), 0);
		port_b[i + BIG + BIG / 2] = 4000;
		service_unref(s);
	}
	assert_int_equal(merge_flush(m), 1);
	check_big(m, port_a, port_b);
	merge_free(m);
}

/*
 * Every allocation of an update / flush / get fails in turn: the call
 * reports -ENOMEM and the state is what it was, or it succeeds.
 */
/* "a,b|c|d": services | slices | affected services of a change set. */
static void changes_str(const struct merge_changes *c, char *buf, size_t len)
{
	size_t off = 0, i;

	buf[0] = '\0';
	if (c->all) {
		snprintf(buf, len, "all");
		return;
	}
	for (i = 0; i < c->n_services; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "," : "", c->services[i]);
	off += (size_t)snprintf(buf + off, len - off, "|");
	for (i = 0; i < c->n_slices; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "," : "", c->slices[i]);
	off += (size_t)snprintf(buf + off, len - off, "|");
	for (i = 0; i < c->n_affected; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "," : "", c->affected[i]);
	assert_true(off < len);
}

#define assert_changes(snap, expect)                                                           \
	do {                                                                                   \
		char _b[1024];                                                                 \
		changes_str(&(snap)->changes, _b, sizeof(_b));                                 \
		assert_string_equal(_b, (expect));                                             \
	} while (0)

static void test_changes(void **state)
{
	struct merge *m = merge_new();
	struct service *a = svc_simple("shop", "web", "198.19.0.10", 80);
	struct service *a2 = svc_simple("shop", "web", "198.19.0.10", 8080);
	struct service *a3 = svc_simple("shop", "web", "198.19.0.10", 8080); /* equal to a2 */
	struct service *b = svc_simple("shop", "api", "198.19.0.11", 81);
	struct epslice *e = eps_simple("shop", "web-1", "web", 8080, "198.18.1.1", NULL);
	struct epslice *e2 = eps_simple("shop", "web-1", "api", 8080, "198.18.1.1", NULL);
	struct epslice *f = eps_simple("shop", "web-2", "web", 8080, "198.18.1.2", NULL);
	struct service *set[] = { a, b };
	struct merge_snapshot *s1, *s2, *s3;
	struct merge_changes c;
	struct rec r = { 0 };
	int src;

	(void)state;
	src = merge_source_register(m, "a.json");
	assert_int_equal(merge_handler_register(m, MERGE_HANDLE_ALL, keep_handler, &r), 0);
	assert_int_equal(merge_update(m, src, MERGE_SET, set, 2, &e, 1), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_changes(r.kept, "all");
	assert_true(merge_changes_affects(&r.kept->changes, "any", "thing"));
	s1 = merge_snapshot_ref(r.kept);

	/* A changed service; an equal replacement is no change. */
	assert_int_equal(update1(m, src, MERGE_ADD, a2), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_changes(r.kept, "shop/web||shop/web");
	assert_true(merge_changes_affects(&r.kept->changes, "shop", "web"));
	assert_false(merge_changes_affects(&r.kept->changes, "shop", "api"));
	assert_int_equal(update1(m, src, MERGE_ADD, a3), 0);
	assert_int_equal(merge_flush(m), 0);

	/* A slice added: its service is affected, not the slice's own name. */
	assert_int_equal(update_eps(m, src, MERGE_ADD, f), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_changes(r.kept, "|shop/web-2|shop/web");
	s2 = merge_snapshot_ref(r.kept);

	/* A slice moved to another service: both are affected. */
	assert_int_equal(update_eps(m, src, MERGE_ADD, e2), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_changes(r.kept, "|shop/web-1|shop/api,shop/web");

	/* A service removed. */
	assert_int_equal(update1(m, src, MERGE_REMOVE, b), 0);
	assert_int_equal(merge_flush(m), 1);
	assert_changes(r.kept, "shop/api||shop/api");
	s3 = merge_snapshot_ref(r.kept);

	/* Across several flushes: the diff of any two views. */
	assert_int_equal(merge_snapshot_diff(s1, s3, &c), 0);
	{
		char b_[1024];

		changes_str(&c, b_, sizeof(b_));
		assert_string_equal(b_, "shop/api,shop/web|shop/web-1,shop/web-2|shop/api,shop/web");
	}
	merge_changes_done(&c);
	assert_int_equal(merge_snapshot_diff(s2, s2, &c), 0);
	assert_int_equal(c.n_services + c.n_slices + c.n_affected, 0);
	assert_false(c.all);
	assert_false(merge_changes_affects(&c, "shop", "web"));
	merge_changes_done(&c);
	assert_int_equal(merge_snapshot_diff(NULL, s2, &c), 0);
	assert_true(c.all);
	merge_changes_done(&c);

	merge_snapshot_unref(s1);
	merge_snapshot_unref(s2);
	merge_snapshot_unref(s3);
	merge_snapshot_unref(r.kept);
	service_unref(a);
	service_unref(a2);
	service_unref(a3);
	service_unref(b);
	epslice_unref(e);
	epslice_unref(e2);
	epslice_unref(f);
	merge_free(m);
}

static void test_alloc_failures(void **state)
{
	struct service *a = svc_simple("shop", "web", "198.19.0.10", 80);
	struct service *b = svc_simple("shop", "api", "198.19.0.11", 81);
	struct service *b2 = svc_simple("shop", "api", "198.19.0.11", 82);
	struct epslice *e = eps_simple("shop", "web-1", "web", 8080, "198.18.65.11", NULL);
	struct service *set1[] = { a, b }, *set2[] = { b2 };
	long budget;
	bool done = false;

	for (budget = 0; !done; budget++) {
		struct merge *m = merge_new();
		struct rec r = { 0 };
		struct merge_snapshot *s;
		int src, r1;

		assert_non_null(m);
		src = merge_source_register(m, "a.json");
		assert_int_equal(src, 0);
		merge_handler_register(m, MERGE_HANDLE_ALL, rec_handler, &r);
		assert_int_equal(merge_update(m, src, MERGE_SET, set1, 2, NULL, 0), 0);
		assert_int_equal(merge_flush(m), 1);
		alloc_failures = 0;
		alloc_budget = budget;

		r1 = merge_update(m, src, MERGE_SET, set2, 1, &e, 1);
		if (r1 < 0) {
			alloc_budget = -1;
			assert_int_equal(r1, -ENOMEM);
			assert_false(merge_dirty(m));
			assert_union(m, "shop/api=81,shop/web=80");
			merge_free(m);
			continue;
		}
		r1 = merge_flush(m);
		if (r1 < 0) {
			alloc_budget = -1;
			assert_int_equal(r1, -ENOMEM);
			assert_true(merge_dirty(m));
			assert_int_equal(r.calls, 1);
			assert_int_equal(merge_flush(m), 1);
		} else {
			assert_int_equal(r1, 1);
		}
		s = merge_snapshot_get(m);
		alloc_budget = -1;
		if (s)
			merge_snapshot_unref(s);
		assert_union(m, "shop/api=82,[shop/web-1]");
		assert_int_equal(r.calls, 2);
		done = alloc_failures == 0;
		merge_free(m);
	}
	assert_true(budget > 3);
	service_unref(a);
	service_unref(b);
	service_unref(b2);
	epslice_unref(e);
}

/* --- resolve --- */

struct rfix {
	struct service *svcs[16];
	size_t n_svcs;
	struct epslice *slices[16];
	size_t n_slices;
	struct desired d;
	struct diag_list diags;
	char *dump;
};

static void rfix_run(struct rfix *f, const char *hostname)
{
	struct merge *m = merge_new();
	struct merge_snapshot *snap;
	struct resolve_opts o = { .hostname = hostname, .family = AF_INET };
	size_t len, i;
	FILE *mf;

	assert_int_equal(merge_source_register(m, "t"), 0);
	assert_int_equal(merge_update(m, 0, MERGE_SET, f->svcs, f->n_svcs, f->slices, f->n_slices),
			 0);
	for (i = 0; i < f->n_svcs; i++)
		service_unref(f->svcs[i]);
	for (i = 0; i < f->n_slices; i++)
		epslice_unref(f->slices[i]);
	snap = merge_snapshot_get(m);
	assert_non_null(snap);
	diag_list_init(&f->diags);
	assert_int_equal(resolve_build(snap, &o, &f->d, &f->diags), 0);
	merge_snapshot_unref(snap);
	merge_free(m);
	mf = open_memstream(&f->dump, &len);
	assert_non_null(mf);
	resolve_dump(&f->d, mf);
	fclose(mf);
}

static void rfix_done(struct rfix *f)
{
	desired_free(&f->d);
	diag_list_done(&f->diags);
	free(f->dump);
}

static const struct svc_port *find_port(const struct desired *d, const char *key, uint8_t proto)
{
	size_t i;

	for (i = 0; i < d->n_ports; i++)
		if (streq(d->ports[i].key, key) && d->ports[i].protocol == proto)
			return &d->ports[i];
	fail_msg("no port %s", key);
	return NULL;
}

/* Endpoints of a port as "ip:port/c ..." with c = R(eady) T(erminating) N(ot ready) + L(ocal). */
static void eps_str(const struct svc_port *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < p->n_endpoints; i++) {
		const struct endpoint *e = &p->endpoints[i];

		off += (size_t)snprintf(buf + off, len - off, "%s%s:%u/%s%s", i ? " " : "",
					ipaddr_fmt(&e->addr, a, sizeof(a)), e->port,
					e->ready ? "R" : e->terminating ? "T" : "N",
					e->is_local ? "L" : "");
	}
	assert_true(off < len);
}

#define assert_eps(p, expect)                                                                  \
	do {                                                                                   \
		char _b[1024];                                                                 \
		eps_str((p), _b, sizeof(_b));                                                  \
		assert_string_equal(_b, (expect));                                             \
	} while (0)

/* Nothing left to program (the last config file was deleted): an empty
 * desired state, not undefined behaviour (UBSan aborts on qsort(NULL, 0)). */
static void test_resolve_empty(void **state)
{
	struct merge_snapshot empty = { .refcnt = 1 };
	struct resolve_opts o = { .hostname = "node-a", .family = AF_INET };
	struct desired d = { 0 };
	struct diag_list dl;

	(void)state;
	diag_list_init(&dl);
	assert_int_equal(resolve_build(&empty, &o, &d, &dl), 0);
	assert_int_equal(d.n_ports, 0);
	assert_int_equal(dl.n, 0);
	desired_free(&d);
	diag_list_done(&dl);
}

static void test_resolve_port_matching(void **state)
{
	struct rfix f = { 0 };
	struct service *s = svc_new("shop", "web", ORIGIN_K8S, SVC_CLUSTER_IP);
	struct epslice *e1 = eps_new("shop", "web-a", "web", ORIGIN_K8S);
	struct epslice *e2 = eps_new("shop", "web-b", "web", ORIGIN_K8S);
	struct epslice *other = eps_new("shop", "api-a", "api", ORIGIN_K8S);
	struct epslice *other_ns = eps_new("prod", "web-a", "web", ORIGIN_K8S);

	svc_cip(s, "198.19.0.10");
	svc_port(s, "http", PROTO_TCP, 80, 0, "8080");
	svc_port(s, "dns", PROTO_UDP, 53, 0, "5353");
	svc_port(s, "metrics", PROTO_TCP, 9090, 0, "9090");
	/* e1: http TCP, dns on TCP only (wrong protocol), a zero port (ignored). */
	eps_port(e1, "http", PROTO_TCP, 8080);
	eps_port(e1, "dns", PROTO_TCP, 5353);
	eps_port(e1, "metrics", PROTO_TCP, 0);
	eps_ep(e1, "198.18.65.11", READY | SERVING, "node-a", NULL);
	eps_ep(e1, "198.18.66.12", READY | SERVING, "node-b", NULL);
	/* e2: the same service, dns on UDP and http on another target port. */
	eps_port(e2, "dns", PROTO_UDP, 5353);
	eps_port(e2, "http", PROTO_TCP, 8081);
	eps_ep(e2, "198.18.65.13", READY | SERVING, "node-a", NULL);
	eps_port(other, "http", PROTO_TCP, 8080);
	eps_ep(other, "198.18.65.99", READY | SERVING, "node-a", NULL);
	eps_port(other_ns, "http", PROTO_TCP, 8080);
	eps_ep(other_ns, "198.18.65.98", READY | SERVING, "node-a", NULL);

	f.svcs[f.n_svcs++] = s;
	f.slices[f.n_slices++] = e1;
	f.slices[f.n_slices++] = e2;
	f.slices[f.n_slices++] = other;
	f.slices[f.n_slices++] = other_ns;
	rfix_run(&f, "node-a");

	assert_int_equal(f.d.n_ports, 3);
	/* Sorted by key: dns < http < metrics. */
	assert_string_equal(f.d.ports[0].key, "shop/web:dns");
	assert_string_equal(f.d.ports[1].key, "shop/web:http");
	assert_string_equal(f.d.ports[2].key, "shop/web:metrics");
	assert_eps(find_port(&f.d, "shop/web:http", PROTO_TCP),
		   "198.18.65.11:8080/RL 198.18.65.13:8081/RL 198.18.66.12:8080/R");
	assert_eps(find_port(&f.d, "shop/web:dns", PROTO_UDP), "198.18.65.13:5353/RL");
	assert_eps(find_port(&f.d, "shop/web:metrics", PROTO_TCP), "");
	assert_string_equal(find_port(&f.d, "shop/web:http", PROTO_TCP)->target_port, "8080");
	rfix_done(&f);
}

/*
 * Duplicates across slices: the first in slice-key order is kept, except
 * that a non-terminating copy replaces a terminating one (kube-proxy's
 * endpointSliceCache.addEndpoints).
 */
static void test_resolve_dedupe(void **state)
{
	struct rfix f = { 0 };
	struct service *s = svc_simple("shop", "web", "198.19.0.10", 80);
	struct epslice *a = eps_new("shop", "web-a", "web", ORIGIN_K8S);
	struct epslice *b = eps_new("shop", "web-b", "web", ORIGIN_K8S);
	const struct svc_port *p;

	eps_port(a, "http", PROTO_TCP, 8080);
	eps_ep(a, "198.18.65.12", TERMINATING | SERVING, "node-a", NULL);
	eps_ep(a, "198.18.65.11", READY | SERVING, "node-a", NULL);
	eps_ep(a, "198.18.65.13", READY | SERVING, "node-a", "zone-1");
	eps_ep(a, "198.18.65.14", TERMINATING, "node-a", NULL);
	eps_port(b, "http", PROTO_TCP, 8080);
	eps_ep(b, "198.18.65.12", READY | SERVING, "node-b", NULL);
	eps_ep(b, "198.18.65.13", 0, "node-b", "zone-2");
	eps_ep(b, "198.18.65.14", TERMINATING | SERVING, "node-b", NULL);
	eps_ep(b, "198.18.65.2", READY | SERVING, "node-b", NULL);

	f.svcs[f.n_svcs++] = s;
	f.slices[f.n_slices++] = b; /* registration order does not matter */
	f.slices[f.n_slices++] = a;
	rfix_run(&f, "node-a");
	p = find_port(&f.d, "shop/web:http", PROTO_TCP);
	/* Sorted by address (numerically), then port. */
	assert_eps(p, "198.18.65.2:8080/R 198.18.65.11:8080/RL 198.18.65.12:8080/R "
		      "198.18.65.13:8080/RL 198.18.65.14:8080/TL");
	assert_string_equal(p->endpoints[2].node_name, "node-b");
	assert_string_equal(p->endpoints[3].zone, "zone-1");
	assert_false(p->endpoints[4].serving);
	rfix_done(&f);
}

static void test_resolve_slices_win(void **state)
{
	struct rfix f = { 0 };
	struct service *both = svc_simple("shop", "web", "198.19.0.10", 80);
	struct service *eponly = svc_simple("shop", "api", "198.19.0.11", 80);
	struct service *empty_slice = svc_simple("shop", "cart", "198.19.0.12", 80);
	struct service *legacy = svc_new("default", "nodejs", ORIGIN_LEGACY, SVC_NODE_PORT);
	struct epslice *e;

	svc_port(legacy, "", PROTO_TCP, 10000, 10000, NULL);
	f.svcs[f.n_svcs++] = both;
	f.svcs[f.n_svcs++] = eponly;
	f.svcs[f.n_svcs++] = empty_slice;
	f.svcs[f.n_svcs++] = legacy;

	e = eps_simple("shop", "web-x1", "web", 8080, "198.18.65.11", NULL);
	f.slices[f.n_slices++] = e;
	e = eps_new("shop", "web", "web", ORIGIN_K8S_EP);
	eps_port(e, "http", PROTO_TCP, 8080);
	eps_ep(e, "198.18.65.50", READY | SERVING, NULL, NULL);
	f.slices[f.n_slices++] = e;
	e = eps_new("shop", "api", "api", ORIGIN_K8S_EP);
	eps_port(e, "http", PROTO_TCP, 8080);
	eps_ep(e, "198.18.65.51", READY | SERVING, NULL, NULL);
	eps_ep(e, "198.18.65.52", SERVING, NULL, NULL);
	f.slices[f.n_slices++] = e;
	/* A slice without ports or endpoints still hides the Endpoints object. */
	e = eps_new("shop", "cart-x1", "cart", ORIGIN_K8S);
	f.slices[f.n_slices++] = e;
	e = eps_new("shop", "cart", "cart", ORIGIN_K8S_EP);
	eps_port(e, "http", PROTO_TCP, 8080);
	eps_ep(e, "198.18.65.53", READY | SERVING, NULL, NULL);
	f.slices[f.n_slices++] = e;
	/* Legacy endpoints pair with the legacy service only. */
	e = eps_new("default", "nodejs", "nodejs", ORIGIN_LEGACY);
	eps_port(e, "", PROTO_TCP, 8000);
	eps_ep(e, "198.18.65.60", READY | SERVING, NULL, NULL);
	f.slices[f.n_slices++] = e;
	e = eps_new("default", "nodejs-k8s", "nodejs", ORIGIN_K8S);
	eps_port(e, "", PROTO_TCP, 8000);
	eps_ep(e, "198.18.65.61", READY | SERVING, NULL, NULL);
	f.slices[f.n_slices++] = e;

	rfix_run(&f, NULL);
	assert_eps(find_port(&f.d, "shop/web:http", PROTO_TCP), "198.18.65.11:8080/R");
	assert_eps(find_port(&f.d, "shop/api:http", PROTO_TCP),
		   "198.18.65.51:8080/R 198.18.65.52:8080/N");
	assert_eps(find_port(&f.d, "shop/cart:http", PROTO_TCP), "");
	assert_false(find_port(&f.d, "default/nodejs", PROTO_TCP)->skipped);
	assert_eps(find_port(&f.d, "default/nodejs", PROTO_TCP), "198.18.65.60:8000/R");
	rfix_done(&f);
}

static void test_resolve_family(void **state)
{
	struct rfix f = { 0 };
	struct service *s = svc_new("shop", "web", ORIGIN_K8S, SVC_LOAD_BALANCER);
	struct service *v6 = svc_new("shop", "v6only", ORIGIN_K8S, SVC_CLUSTER_IP);
	struct service *clean = svc_simple("shop", "clean", "198.19.0.12", 80);
	struct epslice *e = eps_simple("shop", "web-1", "web", 8080, "198.18.65.11", NULL);
	const struct svc_port *p;
	char a[INET6_ADDRSTRLEN];
	size_t i;

	svc_cip(s, "fd00::10");
	svc_cip(s, "198.19.0.10");
	svc_cip(s, "198.19.0.99");
	svc_extip(s, "198.18.200.1");
	svc_extip(s, "fd00::200");
	svc_lb(s, "198.18.200.10", false);
	svc_lb(s, "198.18.200.11", true);
	svc_lb(s, "fd00::210", false);
	svc_range(s, "198.18.1.0/25");
	svc_range(s, "fd00::/64");
	svc_port(s, "http", PROTO_TCP, 80, 30080, NULL);
	svc_cip(v6, "fd00::11");
	svc_port(v6, "http", PROTO_TCP, 80, 0, NULL);
	eps_ep(e, "fd00::1:11", READY | SERVING, "node-a", NULL);
	eps_ep(e, "fd00::1:12", READY | SERVING, "node-a", NULL);
	f.svcs[f.n_svcs++] = s;
	f.svcs[f.n_svcs++] = v6;
	f.svcs[f.n_svcs++] = clean;
	f.slices[f.n_slices++] = e;
	rfix_run(&f, NULL);

	p = find_port(&f.d, "shop/web:http", PROTO_TCP);
	assert_false(p->skipped);
	assert_int_equal(p->n_cluster_ips, 1);
	assert_string_equal(ipaddr_fmt(&p->cluster_ips[0], a, sizeof(a)), "198.19.0.10");
	assert_int_equal(p->n_external_ips, 1);
	assert_int_equal(p->n_lb_ips, 1); /* the ipMode Proxy one is left out */
	assert_string_equal(ipaddr_fmt(&p->lb_ips[0], a, sizeof(a)), "198.18.200.10");
	assert_int_equal(p->n_lb_source_ranges, 1);
	assert_eps(p, "198.18.65.11:8080/R");
	p = find_port(&f.d, "shop/v6only:http", PROTO_TCP);
	assert_true(p->skipped);
	assert_string_equal(p->skip_reason, "no IPv4 cluster IP");

	/* One note per object, naming the first ignored entry. */
	assert_int_equal(f.diags.n, 3);
	for (i = 0; i < f.diags.n; i++)
		assert_int_equal(f.diags.items[i].level, DIAG_NOTE);
	{
		char *l0 = diag_format(&f.diags.items[0]);
		char *l1 = diag_format(&f.diags.items[1]);
		char *l2 = diag_format(&f.diags.items[2]);

		assert_string_equal(l0, "EndpointSlice shop/web-1: endpoints: IPv6 address "
					"fd00::1:11 ignored in an IPv4 run (and 1 more)");
		assert_string_equal(l1, "shop/v6only: spec.clusterIPs: IPv6 address fd00::11 "
					"ignored in an IPv4 run");
		assert_string_equal(l2, "shop/web: spec.clusterIPs: IPv6 address fd00::10 ignored "
					"in an IPv4 run (and 3 more)");
		free(l0);
		free(l1);
		free(l2);
	}
	rfix_done(&f);
}

struct skip_case {
	const char *name;
	enum svc_type type;
	bool headless;
	const char *proxy_name;
	const char *cip;
	const char *reason; /* NULL = not skipped */
};

static void test_resolve_skips(void **state)
{
	static const struct skip_case cases[] = {
		{ "plain", SVC_CLUSTER_IP, false, NULL, "198.19.0.10", NULL },
		{ "nodeport-no-port", SVC_NODE_PORT, false, NULL, "198.19.0.11", NULL },
		{ "headless", SVC_CLUSTER_IP, true, NULL, NULL, "headless" },
		{ "external", SVC_EXTERNAL_NAME, false, NULL, "198.19.0.12",
		  "type ExternalName" },
		{ "proxied-elsewhere", SVC_CLUSTER_IP, false, "other", "198.19.0.13",
		  "has label service.kubernetes.io/service-proxy-name" },
		{ "no-ip", SVC_CLUSTER_IP, false, NULL, NULL, "no cluster IP" },
	};
	struct rfix f = { 0 };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct service *s = svc_new("ns", cases[i].name, ORIGIN_K8S, cases[i].type);

		s->headless = cases[i].headless;
		s->proxy_name = xstrdup(cases[i].proxy_name);
		if (cases[i].cip)
			svc_cip(s, cases[i].cip);
		svc_port(s, "p", PROTO_TCP, 80, 0, NULL);
		f.svcs[f.n_svcs++] = s;
	}
	rfix_run(&f, NULL);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		char key[64];
		const struct svc_port *p;

		snprintf(key, sizeof(key), "ns/%s:p", cases[i].name);
		p = find_port(&f.d, key, PROTO_TCP);
		assert_int_equal(p->skipped, cases[i].reason != NULL);
		if (cases[i].reason)
			assert_string_equal(p->skip_reason, cases[i].reason);
	}
	assert_int_equal(f.diags.n, 0);
	rfix_done(&f);
}

struct policy_case {
	enum svc_type type;
	bool ext_ips;
	enum traffic_policy etp;
	uint16_t hcnp_in;
	enum traffic_policy want_etp;
	uint16_t want_hcnp;
};

/* apiservice.ExternalPolicyLocal / NeedsHealthCheck. */
static void test_resolve_policies(void **state)
{
	static const struct policy_case cases[] = {
		{ SVC_CLUSTER_IP, false, POLICY_LOCAL, 0, POLICY_CLUSTER, 0 },
		{ SVC_CLUSTER_IP, true, POLICY_LOCAL, 0, POLICY_LOCAL, 0 },
		{ SVC_NODE_PORT, false, POLICY_LOCAL, 31000, POLICY_LOCAL, 0 },
		{ SVC_LOAD_BALANCER, false, POLICY_LOCAL, 31000, POLICY_LOCAL, 31000 },
		{ SVC_LOAD_BALANCER, false, POLICY_CLUSTER, 31000, POLICY_CLUSTER, 0 },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct rfix f = { 0 };
		struct service *s = svc_simple("ns", "svc", "198.19.0.10", 80);

		s->type = cases[i].type;
		s->ext_policy = cases[i].etp;
		s->int_policy = POLICY_LOCAL;
		s->health_check_node_port = cases[i].hcnp_in;
		s->affinity_client_ip = true;
		s->affinity_timeout = 300;
		if (cases[i].ext_ips)
			svc_extip(s, "198.18.200.1");
		f.svcs[f.n_svcs++] = s;
		rfix_run(&f, NULL);
		assert_int_equal(f.d.n_ports, 1);
		assert_int_equal(f.d.ports[0].ext_policy, cases[i].want_etp);
		assert_int_equal(f.d.ports[0].int_policy, POLICY_LOCAL);
		assert_int_equal(f.d.ports[0].health_check_node_port, cases[i].want_hcnp);
		assert_int_equal(f.d.ports[0].affinity_timeout, 300);
		rfix_done(&f);
	}
}

static void test_resolve_dump(void **state)
{
	struct rfix f = { 0 };
	struct service *web = svc_new("shop", "web", ORIGIN_K8S, SVC_NODE_PORT);
	struct service *lb = svc_new("shop", "lb", ORIGIN_K8S, SVC_LOAD_BALANCER);
	struct service *hl = svc_new("shop", "db", ORIGIN_K8S, SVC_CLUSTER_IP);
	struct service *legacy = svc_new("default", "nodejs", ORIGIN_LEGACY, SVC_NODE_PORT);
	struct epslice *e = eps_new("shop", "web-abc", "web", ORIGIN_K8S);
	struct epslice_endpoint *ep;

	svc_cip(web, "198.19.0.10");
	svc_port(web, "http", PROTO_TCP, 80, 30080, "8080");
	svc_port(web, "", PROTO_UDP, 53, 0, NULL);
	svc_cip(lb, "198.19.0.20");
	svc_extip(lb, "198.18.200.1");
	svc_lb(lb, "198.18.200.10", false);
	svc_range(lb, " 198.18.1.0/25 ");
	lb->ext_policy = POLICY_LOCAL;
	lb->health_check_node_port = 32000;
	lb->affinity_client_ip = true;
	svc_port(lb, "https", PROTO_TCP, 443, 30443, NULL);
	hl->headless = true;
	svc_port(hl, "pg", PROTO_TCP, 5432, 0, NULL);
	svc_port(legacy, "", PROTO_TCP, 10000, 10000, NULL);
	eps_port(e, "http", PROTO_TCP, 8080);
	eps_ep(e, "198.18.65.11", READY | SERVING, "node-a", NULL);
	ep = eps_ep(e, "198.18.66.12", TERMINATING | SERVING, "node-b", "zone-b");
	ep->hint_zones = calloc(2, sizeof(char *));
	assert_non_null(ep->hint_zones);
	ep->hint_zones[0] = xstrdup("zone-a");
	ep->hint_zones[1] = xstrdup("zone-b");
	ep->n_hint_zones = 2;
	ep->hint_nodes = calloc(1, sizeof(char *));
	assert_non_null(ep->hint_nodes);
	ep->hint_nodes[0] = xstrdup("node-b");
	ep->n_hint_nodes = 1;
	ep->has_hints = true;
	eps_ep(e, "198.18.66.13", 0, NULL, NULL);
	f.svcs[f.n_svcs++] = web;
	f.svcs[f.n_svcs++] = lb;
	f.svcs[f.n_svcs++] = hl;
	f.svcs[f.n_svcs++] = legacy;
	f.slices[f.n_slices++] = e;
	rfix_run(&f, "node-a");
	assert_string_equal(
		f.dump,
		"default/nodejs TCP NodePort port=10000 nodePort=10000 eTP=Cluster iTP=Cluster "
		"-> (none)\n"
		"shop/db:pg TCP ClusterIP skipped: headless\n"
		"shop/lb:https TCP LoadBalancer 198.19.0.20:443 nodePort=30443 "
		"externalIPs=198.18.200.1 lbIPs=198.18.200.10 sourceRanges=198.18.1.0/25 "
		"affinity=ClientIP/10800s healthCheckNodePort=32000 eTP=Local iTP=Cluster -> "
		"(none)\n"
		"shop/web UDP NodePort 198.19.0.10:53 eTP=Cluster iTP=Cluster -> (none)\n"
		"shop/web:http TCP NodePort 198.19.0.10:80 nodePort=30080 eTP=Cluster "
		"iTP=Cluster -> 198.18.65.11:8080 (ready,node-a,local) 198.18.66.12:8080 "
		"(terminating,serving,node-b,zone=zone-b,hints=zone-a+zone-b,nodehints=node-b) "
		"198.18.66.13:8080 (not-ready)\n");
	rfix_done(&f);
}

static void test_resolve_alloc_failures(void **state)
{
	long budget;
	bool done = false;

	for (budget = 0; !done; budget++) {
		struct merge *m = merge_new();
		struct service *s = svc_simple("shop", "web", "198.19.0.10", 80);
		struct epslice *e = eps_simple("shop", "web-1", "web", 8080, "198.18.65.11",
					       "198.18.66.12");
		struct resolve_opts o = { .hostname = "node-a", .family = AF_INET };
		struct desired d = { .n_ports = 12345 };
		struct merge_snapshot *snap;
		struct diag_list dl;
		int r;

		svc_extip(s, "198.18.200.1");
		eps_ep(e, "fd00::1", READY, NULL, NULL);
		merge_source_register(m, "t");
		merge_update(m, 0, MERGE_SET, &s, 1, &e, 1);
		snap = merge_snapshot_get(m);
		diag_list_init(&dl);
		alloc_failures = 0;
		alloc_budget = budget;
		r = resolve_build(snap, &o, &d, &dl);
		alloc_budget = -1;
		if (r < 0) {
			assert_int_equal(r, -ENOMEM);
			assert_int_equal(d.n_ports, 12345); /* untouched on failure */
		} else {
			assert_int_equal(d.n_ports, 1);
			assert_int_equal(d.ports[0].n_endpoints, 2);
			done = alloc_failures == 0;
			desired_free(&d);
		}
		diag_list_done(&dl);
		merge_snapshot_unref(snap);
		service_unref(s);
		epslice_unref(e);
		merge_free(m);
	}
	assert_true(budget > 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_set_add_remove),
		cmocka_unit_test(test_set_replaces_and_drops),
		cmocka_unit_test(test_precedence_and_conflicts),
		cmocka_unit_test(test_coalescing),
		cmocka_unit_test(test_noop_suppression),
		cmocka_unit_test(test_handler_kinds),
		cmocka_unit_test(test_snapshot_lifetime),
		cmocka_unit_test(test_large_single_item_updates),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test(test_changes),
		cmocka_unit_test(test_resolve_port_matching),
		cmocka_unit_test(test_resolve_dedupe),
		cmocka_unit_test(test_resolve_slices_win),
		cmocka_unit_test(test_resolve_family),
		cmocka_unit_test(test_resolve_skips),
		cmocka_unit_test(test_resolve_policies),
		cmocka_unit_test(test_resolve_dump),
		cmocka_unit_test(test_resolve_empty),
		cmocka_unit_test(test_resolve_alloc_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
