/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The protobuf wire (sources/kube/kubepb.c) against the JSON one: every
 * Service and EndpointSlice of the JSON fixtures and fuzz corpora that
 * protobuf can carry, written as protobuf by a second encoder
 * (tests/kubeapi/kubepb.py, fixtures in tests/data/kubepb/), decodes to
 * the same items; the same watch stream in both wires leaves the same
 * merged state, verdict and resourceVersion, fed whole or byte by byte;
 * and what is not a protobuf answer is refused with a reason.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/merge.h"
#include "sources/decode/decode.h"
#include "sources/kube/kubepb.h"
#include "sources/kube/kubewire.h"
#include "util.h"
#include "slurp.h"

#define DATA SRCDIR "/tests/data/kubepb"

/* Decode a protobuf list through its JSON into d. */
static void decode_pb(const char *path, struct decoded *d)
{
	_cleanup_free_ char *pb = NULL, *json = NULL;
	struct diag_list diags;
	size_t n, jn;
	char why[256] = "";

	pb = slurp(path, &n);
	assert_true(kubepb_is(pb, n));
	if (kubepb_to_json(pb, n, &json, &jn, why, sizeof(why)) < 0)
		fail_msg("%s: %s", path, why);
	diag_list_init(&diags);
	assert_int_equal(decode_buffer(json, jn, "api", d, &diags), 0);
	diag_list_done(&diags);
}

static size_t n_files, n_items;

static void differential_one(const char *stem)
{
	_cleanup_(decoded_done) struct decoded a = { 0 }, b = { 0 };
	_cleanup_free_ char *json = NULL;
	struct diag_list diags;
	char path[512];
	size_t n;

	snprintf(path, sizeof(path), "%s/%s.json", DATA, stem);
	json = slurp(path, &n);
	diag_list_init(&diags);
	assert_int_equal(decode_buffer(json, n, "api", &a, &diags), 0);
	diag_list_done(&diags);
	snprintf(path, sizeof(path), "%s/%s.svc.pb", DATA, stem);
	decode_pb(path, &b);
	snprintf(path, sizeof(path), "%s/%s.eps.pb", DATA, stem);
	decode_pb(path, &b);
	if (a.n_services != b.n_services || a.n_slices != b.n_slices)
		fail_msg("%s: JSON %zu services %zu slices, protobuf %zu and %zu", stem,
			 a.n_services, a.n_slices, b.n_services, b.n_slices);
	for (size_t i = 0; i < a.n_services; i++)
		if (!service_equal(a.services[i], b.services[i]))
			fail_msg("%s: service %s/%s differs", stem, a.services[i]->ns,
				 a.services[i]->name);
	for (size_t i = 0; i < a.n_slices; i++)
		if (!epslice_equal(a.slices[i], b.slices[i]))
			fail_msg("%s: slice %zu differs", stem, i);
	n_files++;
	n_items += a.n_services + a.n_slices;
}

static void test_differential(void **state)
{
	DIR *d = opendir(DATA);
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		char stem[256];

		if (l < 6 || l >= sizeof(stem) || strcmp(e->d_name + l - 5, ".json") ||
		    !strncmp(e->d_name, "watch.", 6) || strstr(e->d_name, ".node."))
			continue;
		memcpy(stem, e->d_name, l - 5);
		stem[l - 5] = '\0';
		differential_one(stem);
	}
	closedir(d);
	print_message("kubepb: %zu fixtures, %zu items decoded the same\n", n_files, n_items);
	/* every fixture was read, and they hold real objects */
	assert_true(n_files >= 60);
	assert_true(n_items >= 100);
}

/* A Node (this node's addresses, zone, pod CIDRs, eligibility) reads the same. */
static void test_node(void **state)
{
	for (int i = 0; i < 3; i++) {
		_cleanup_free_ char *json = NULL, *pb = NULL, *pj = NULL;
		struct kube_node a, b;
		char path[512], why[256];
		size_t n, pn, pjn;

		snprintf(path, sizeof(path), "%s/node%d.node.json", DATA, i);
		json = slurp(path, &n);
		snprintf(path, sizeof(path), "%s/node%d.node.pb", DATA, i);
		pb = slurp(path, &pn);
		assert_int_equal(kubepb_to_json(pb, pn, &pj, &pjn, why, sizeof(why)), 0);
		assert_int_equal(kube_node_parse(json, n, &a), 0);
		assert_int_equal(kube_node_parse(pj, pjn, &b), 0);
		assert_string_equal(a.name, b.name);
		assert_string_equal(a.zone, b.zone);
		assert_int_equal(a.n_addrs, b.n_addrs);
		for (size_t k = 0; k < a.n_addrs; k++)
			assert_int_equal(ipaddr_cmp(&a.addrs[k], &b.addrs[k]), 0);
		assert_int_equal(a.n_pod_cidrs, b.n_pod_cidrs);
		for (size_t k = 0; k < a.n_pod_cidrs; k++) {
			assert_int_equal(ipaddr_cmp(&a.pod_cidrs[k].addr, &b.pod_cidrs[k].addr), 0);
			assert_int_equal(a.pod_cidrs[k].plen, b.pod_cidrs[k].plen);
		}
		assert_int_equal(a.eligible, b.eligible);
		/* the variants: as given, being deleted, tainted by the autoscaler */
		assert_int_equal(a.eligible, i == 0);
		assert_int_equal(a.n_pod_cidrs, i == 2);
	}
}

struct side {
	struct merge *m;
	struct kube_sink s;
	struct kubepb_watch w;
	enum kube_watch_verdict v;
	char why[256];
};

static void side_init(struct side *x)
{
	x->m = merge_new();
	assert_non_null(x->m);
	kube_sink_init(&x->s, KUBE_RES_SERVICES, x->m, merge_source_register(x->m, "api:services"));
	kube_sink_list_begin(&x->s);
	assert_int_equal(kube_sink_list_commit(&x->s, "1"), 0);
	kube_sink_watch_begin(&x->s);
	kubepb_watch_init(&x->w);
	x->v = KUBE_WATCH_OK;
}

static void side_done(struct side *x)
{
	kubepb_watch_done(&x->w);
	kube_sink_done(&x->s);
	merge_free(x->m);
}

static void same_state(struct side *a, struct side *b)
{
	struct merge_snapshot *sa = merge_snapshot_get(a->m), *sb = merge_snapshot_get(b->m);

	assert_non_null(sa);
	assert_non_null(sb);
	assert_int_equal(a->v, b->v);
	assert_string_equal(a->why, b->why);
	assert_string_equal(a->s.rv, b->s.rv);
	assert_int_equal(a->s.events, b->s.events);
	assert_int_equal(a->s.bookmarks, b->s.bookmarks);
	assert_int_equal(a->s.rejected, b->s.rejected);
	assert_int_equal(sa->n_services, sb->n_services);
	for (size_t i = 0; i < sa->n_services; i++)
		assert_true(service_equal(sa->services[i], sb->services[i]));
	merge_snapshot_unref(sa);
	merge_snapshot_unref(sb);
}

static void test_watch(void **state)
{
	_cleanup_free_ char *json = NULL, *pb = NULL;
	struct side j, whole, bytes;
	size_t jn, pn;

	json = slurp(DATA "/watch.svc.json", &jn);
	pb = slurp(DATA "/watch.svc.pb", &pn);
	side_init(&j);
	side_init(&whole);
	side_init(&bytes);
	j.v = kube_sink_watch_feed(&j.s, json, jn, j.why, sizeof(j.why));
	whole.v = kubepb_watch_feed(&whole.w, &whole.s, pb, pn, whole.why, sizeof(whole.why));
	for (size_t i = 0; i < pn && bytes.v == KUBE_WATCH_OK; i++)
		bytes.v = kubepb_watch_feed(&bytes.w, &bytes.s, pb + i, 1, bytes.why,
					    sizeof(bytes.why));
	/* the stream ends in the 410 after every other event applied */
	assert_int_equal(j.v, KUBE_WATCH_EXPIRED);
	assert_string_equal(j.s.rv, "999");
	assert_true(j.s.events >= 50);
	same_state(&j, &whole);
	same_state(&j, &bytes);
	side_done(&j);
	side_done(&whole);
	side_done(&bytes);
}

static void test_refused(void **state)
{
	static const char unknown_kind[] = "k8s\0\x0a\x0c\x0a\x02v1\x12\x06Secret\x12\x00";
	static const char bad_envelope[] = "k8s\0\x0a\xff";
	/* a Service whose spec.clusterIP is "1\0x" */
	static const char nul[] = "k8s\0\x0a\x0d\x0a\x02v1\x12\x07Service"
				  "\x12\x07\x12\x05\x1a\x03" "1\0x";
	/* spec.ports[1].port as a string (wire type 2): the error names it */
	static const char badport[] = "k8s\0\x0a\x0d\x0a\x02v1\x12\x07Service\x12\x0b"
				      "\x12\x09\x0a\x02\x18\x50\x0a\x03\x1a\x01x";
	/* a truncated length inside metadata.name */
	static const char cut[] = "k8s\0\x0a\x0d\x0a\x02v1\x12\x07Service\x12\x04"
				  "\x0a\x02\x0a\x05";
	struct side x;
	char *json = NULL, why[256];
	size_t n;

	assert_false(kubepb_is("{\"kind\":1}", 10));
	assert_int_equal(kubepb_to_json("{}", 2, &json, &n, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "a protobuf answer without the k8s magic");
	assert_int_equal(kubepb_to_json(bad_envelope, sizeof(bad_envelope) - 1, &json, &n, why,
					sizeof(why)),
			 -EINVAL);
	assert_string_equal(why, "a protobuf answer whose envelope does not decode");
	assert_int_equal(kubepb_to_json(unknown_kind, sizeof(unknown_kind) - 1, &json, &n, why,
					sizeof(why)),
			 -EINVAL);
	assert_string_equal(why, "a protobuf object of kind 'Secret', which svcnat does not read");
	/* protobuf-c would read "1": refused, as the JSON decoder refuses it */
	assert_int_equal(kubepb_to_json(nul, sizeof(nul) - 1, &json, &n, why, sizeof(why)),
			 -EINVAL);
	assert_string_equal(why, "a protobuf Service with a NUL byte in a string");
	assert_int_equal(kubepb_to_json(badport, sizeof(badport) - 1, &json, &n, why, sizeof(why)),
			 -EINVAL);
	assert_string_equal(why, "a protobuf Service that does not decode at spec.ports[1].port");
	assert_int_equal(kubepb_to_json(cut, sizeof(cut) - 1, &json, &n, why, sizeof(why)),
			 -EINVAL);
	assert_string_equal(why, "a protobuf Service that does not decode at metadata.name");
	assert_null(json);
	assert_true(kubepb_content_type("application/vnd.kubernetes.protobuf;stream=watch"));
	assert_true(kubepb_content_type("application/vnd.kubernetes.protobuf"));
	assert_false(kubepb_content_type("application/json"));
	assert_false(kubepb_content_type("application/vnd.kubernetes.protobufx"));
	assert_false(kubepb_content_type(NULL));

	/* a frame longer than the limit ends the stream before it is read */
	side_init(&x);
	assert_int_equal(kubepb_watch_feed(&x.w, &x.s, "\x7f\xff\xff\xff", 4, why, sizeof(why)),
			 KUBE_WATCH_BROKEN);
	assert_non_null(strstr(why, "longer than"));
	/* garbage in a frame: broken, with the reason */
	kubepb_watch_reset(&x.w);
	assert_int_equal(kubepb_watch_feed(&x.w, &x.s, "\0\0\0\2\x0a\xff", 6, why, sizeof(why)),
			 KUBE_WATCH_BROKEN);
	assert_string_equal(why, "a protobuf watch event that does not decode at type");
	/* an event without a type: refused as the JSON one is */
	kubepb_watch_reset(&x.w);
	assert_int_equal(kubepb_watch_feed(&x.w, &x.s, "\0\0\0\0", 4, why, sizeof(why)),
			 KUBE_WATCH_BROKEN);
	assert_string_equal(why, "a watch event without a type");
	side_done(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_differential),
		cmocka_unit_test(test_node),
		cmocka_unit_test(test_watch),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
