/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Kubernetes API source's pure half: the JSON member scanner, list
 * pages -> one MERGE_SET, the watch stream's framing (an event split across
 * reads, several in one read) and events -> ADD/REMOVE with the
 * resourceVersion bookkeeping, bookmarks, 410, garbage, an object that does
 * not decode, the Node object, query escaping.
 */
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
#include "sources/kube/kubewire.h"
#include "util.h"

#define SVC(ns, name, port)                                                                         \
	"{\"metadata\":{\"namespace\":\"" ns "\",\"name\":\"" name "\",\"resourceVersion\":\"7\"}," \
	"\"spec\":{\"clusterIP\":\"10.0.0.1\",\"ports\":[{\"port\":" port ",\"protocol\":\"TCP\"}]}}"

#define EV(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"

/* A Service event object with kind, at resourceVersion rv. */
#define SVCO(name, port, rv)                                                                   \
	"{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"namespace\":\"default\"," \
	"\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"},\"spec\":{\"clusterIP\":"       \
	"\"10.0.0.2\",\"ports\":[{\"port\":" port "}]}}"

struct fix {
	struct merge *m;
	int sid;
	struct kube_sink s;
};

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->m = merge_new();
	assert_non_null(f->m);
	f->sid = merge_source_register(f->m, "api:services");
	assert_true(f->sid >= 0);
	kube_sink_init(&f->s, KUBE_RES_SERVICES, f->m, f->sid);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	kube_sink_done(&f->s);
	merge_free(f->m);
	free(f);
	return 0;
}

/* "ns/name:port ..." of the merged services. */
static void services(struct merge *m, char *buf, size_t len)
{
	struct merge_snapshot *snap = merge_snapshot_get(m);
	size_t o = 0;

	assert_non_null(snap);
	buf[0] = '\0';
	for (size_t i = 0; i < snap->n_services; i++) {
		const struct service *s = snap->services[i];

		o += (size_t)snprintf(buf + o, len - o, "%s%s/%s:%u", i ? " " : "", s->ns, s->name,
				      s->n_ports ? s->ports[0].port : 0);
	}
	merge_snapshot_unref(snap);
}

static void test_members(void **state)
{
	static const char *const keys[] = { "a", "b", "c" };
	struct kube_span sp[3];
	const char *j = " {\"x\": {\"a\": 1}, \"a\" : [1, {\"s\": \"}\\\"]\"}], \"b\":\"q\\\"\", "
			"\"c\": -1.5e3 } \n";

	assert_int_equal(kube_json_members(j, strlen(j), keys, 3, sp), 0);
	assert_int_equal(sp[0].len, strlen("[1, {\"s\": \"}\\\"]\"}]"));
	assert_memory_equal(sp[0].p, "[1, {", 5);
	assert_int_equal(sp[1].len, 5);
	assert_memory_equal(sp[2].p, "-1.5e3", 6);
	assert_int_equal(kube_json_members("{}", 2, keys, 3, sp), 0);
	assert_null(sp[0].p);
	assert_int_equal(kube_json_members("{\"a\":[}", 7, keys, 3, sp), -EINVAL);
	assert_int_equal(kube_json_members("{\"a\":1", 6, keys, 3, sp), -EINVAL);
	assert_int_equal(kube_json_members("{\"a\":1} x", 9, keys, 3, sp), -EINVAL);
	assert_int_equal(kube_json_members("[1]", 3, keys, 3, sp), -EINVAL);
	assert_int_equal(kube_json_members("garbage", 7, keys, 3, sp), -EINVAL);
}

static void test_list_pages(void **state)
{
	struct fix *f = *state;
	const char *p1 = "{\"kind\":\"ServiceList\",\"apiVersion\":\"v1\",\"metadata\":"
			 "{\"resourceVersion\":\"100\",\"continue\":\"tok1\"},\"items\":[" SVC(
				 "default", "a", "80") "," SVC("ns1", "b", "81") "]}";
	const char *p2 = "{\"kind\":\"ServiceList\",\"apiVersion\":\"v1\",\"metadata\":"
			 "{\"resourceVersion\":\"100\"},\"items\":[" SVC("default", "c", "70000") "]}";
	struct kube_list_meta m1, m2;
	char buf[512];

	assert_int_equal(kube_list_meta_parse(p1, strlen(p1), &m1), 0);
	assert_string_equal(m1.kind, "ServiceList");
	assert_string_equal(m1.rv, "100");
	assert_string_equal(m1.cont, "tok1");
	assert_int_equal(kube_list_meta_parse(p2, strlen(p2), &m2), 0);
	assert_null(m2.cont);

	kube_sink_list_begin(&f->s);
	assert_int_equal(kube_sink_list_page(&f->s, p1, strlen(p1), &m1), 0);
	services(f->m, buf, sizeof(buf));
	assert_string_equal(buf, ""); /* nothing until the last page */
	assert_int_equal(kube_sink_list_page(&f->s, p2, strlen(p2), &m2), 0);
	assert_int_equal(kube_sink_list_commit(&f->s, m2.rv), 0);
	services(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "default/a:80 ns1/b:81");
	assert_string_equal(f->s.rv, "100");
	assert_int_equal(f->s.lists, 1);
	/* The bad port: one diag naming the object as api:<Kind>/<ns>/<name>. */
	assert_int_equal(f->s.diags.n, 1);
	assert_string_equal(f->s.diags.items[0].source, "api:Service/default/c");
	assert_int_equal(f->s.rejected, 1);
	kube_list_meta_done(&m1);
	kube_list_meta_done(&m2);

	/* A relist replaces everything. */
	p1 = "{\"kind\":\"ServiceList\",\"metadata\":{\"resourceVersion\":\"200\"},\"items\":[" SVC(
		"ns1", "b", "82") "]}";
	assert_int_equal(kube_list_meta_parse(p1, strlen(p1), &m1), 0);
	kube_sink_list_begin(&f->s);
	assert_int_equal(kube_sink_list_page(&f->s, p1, strlen(p1), &m1), 0);
	assert_int_equal(kube_sink_list_commit(&f->s, m1.rv), 0);
	services(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "ns1/b:82");
	kube_list_meta_done(&m1);

	/* A list of the wrong kind is refused. */
	p1 = "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"3\"},\"items\":[]}";
	assert_int_equal(kube_list_meta_parse(p1, strlen(p1), &m1), 0);
	kube_sink_list_begin(&f->s);
	assert_int_equal(kube_sink_list_page(&f->s, p1, strlen(p1), &m1), -EINVAL);
	kube_sink_list_abort(&f->s);
	services(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "ns1/b:82");
	assert_int_equal(kube_list_meta_parse("nope", 4, &m1), -EINVAL);
}

static void list_empty(struct fix *f, const char *rv)
{
	struct kube_list_meta m;
	char page[128];

	snprintf(page, sizeof(page),
		 "{\"kind\":\"ServiceList\",\"metadata\":{\"resourceVersion\":\"%s\"},\"items\":[]}",
		 rv);
	assert_int_equal(kube_list_meta_parse(page, strlen(page), &m), 0);
	kube_sink_list_begin(&f->s);
	assert_int_equal(kube_sink_list_page(&f->s, page, strlen(page), &m), 0);
	assert_int_equal(kube_sink_list_commit(&f->s, m.rv), 0);
	kube_list_meta_done(&m);
}

static enum kube_watch_verdict feed(struct fix *f, const char *s, char *why)
{
	return kube_sink_watch_feed(&f->s, s, strlen(s), why, 256);
}

static void test_framing(void **state)
{
	struct fix *f = *state;
	const char *stream = EV("ADDED", SVCO("a", "80", "11")) EV("ADDED", SVCO("b", "81", "12"))
		EV("MODIFIED", SVCO("a", "90", "13"));
	char why[256], buf[256];
	size_t n = strlen(stream);

	list_empty(f, "10");
	kube_sink_watch_begin(&f->s);
	/* Split everywhere: one byte at a time up to the middle of the second event. */
	for (size_t i = 0; i < n / 2; i++)
		assert_int_equal(kube_sink_watch_feed(&f->s, stream + i, 1, why, sizeof(why)),
				 KUBE_WATCH_OK);
	services(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "default/a:80");
	assert_string_equal(f->s.rv, "11");
	/* The rest (the end of one event and another whole one) in one read. */
	assert_int_equal(kube_sink_watch_feed(&f->s, stream + n / 2, n - n / 2, why, sizeof(why)),
			 KUBE_WATCH_OK);
	services(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "default/a:90 default/b:81");
	assert_string_equal(f->s.rv, "13");
	assert_int_equal(f->s.events, 3);

	/* Several in one read, with a blank line and CRLF. */
	assert_int_equal(feed(f,
			      EV("DELETED", SVCO("b", "81", "14")) "\n"
								   "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Service\",\"metadata\":"
								   "{\"resourceVersion\":\"20\"}}}\r\n",
			      why),
			 KUBE_WATCH_OK);
	services(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "default/a:90");
	assert_string_equal(f->s.rv, "20");
	assert_int_equal(f->s.bookmarks, 1);
	assert_int_equal(f->s.events, 4);

	/* A partial line is dropped by a new stream. */
	assert_int_equal(feed(f, "{\"type\":\"ADDED\",\"obj", why), KUBE_WATCH_OK);
	kube_sink_watch_begin(&f->s);
	assert_int_equal(feed(f, EV("ADDED", SVCO("c", "82", "21")), why), KUBE_WATCH_OK);
	services(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "default/a:90 default/c:82");
}

static void test_watch_faults(void **state)
{
	struct fix *f = *state;
	char why[256], buf[256];

	list_empty(f, "10");
	kube_sink_watch_begin(&f->s);
	/* An object that does not decode: a diag, its key removed, the stream goes on. */
	assert_int_equal(feed(f, EV("ADDED", SVCO("a", "80", "11")), why), KUBE_WATCH_OK);
	assert_int_equal(
		feed(f, EV("MODIFIED", SVCO("a", "0", "12")) EV("ADDED", SVCO("b", "81", "13")), why),
		KUBE_WATCH_OK);
	services(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "default/b:81");
	assert_string_equal(f->s.rv, "13");
	assert_int_equal(f->s.rejected, 1);
	assert_int_equal(f->s.diags.n, 1);
	assert_string_equal(f->s.diags.items[0].source, "api:Service/default/a");
	assert_non_null(strstr(f->s.diags.items[0].field, "port"));

	/* A garbage line: events before it applied, none after. */
	assert_int_equal(feed(f,
			      EV("ADDED", SVCO("c", "82", "14")) "this is not json\n" EV(
				      "ADDED", SVCO("d", "83", "15")),
			      why),
			 KUBE_WATCH_BROKEN);
	assert_non_null(strstr(why, "not a JSON object"));
	services(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "default/b:81 default/c:82");
	assert_string_equal(f->s.rv, "14");

	/* An ERROR event: 410 expires the version, another code breaks the stream. */
	kube_sink_watch_begin(&f->s);
	assert_int_equal(feed(f,
			      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":"
			      "\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old "
			      "resource version: 14 (30)\",\"reason\":\"Expired\",\"code\":410}}\n",
			      why),
			 KUBE_WATCH_EXPIRED);
	assert_non_null(strstr(why, "410 Expired"));
	kube_sink_watch_begin(&f->s);
	assert_int_equal(feed(f,
			      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500,"
			      "\"message\":\"boom\"}}\n",
			      why),
			 KUBE_WATCH_BROKEN);
	/* Events without what an event needs. */
	kube_sink_watch_begin(&f->s);
	assert_int_equal(feed(f, "{\"type\":\"SPLIT\",\"object\":{}}\n", why), KUBE_WATCH_BROKEN);
	kube_sink_watch_begin(&f->s);
	assert_int_equal(feed(f, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}}\n", why),
			 KUBE_WATCH_BROKEN);
	assert_non_null(strstr(why, "resourceVersion"));
	assert_string_equal(f->s.rv, "14");
}

static void test_status_node(void **state)
{
	const char *st = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
			 "\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\","
			 "\"code\":401}";
	const char *node = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":{"
			   "\"topology.kubernetes.io/zone\":\"z1\"}},\"status\":{\"addresses\":["
			   "{\"type\":\"Hostname\",\"address\":\"n1\"},{\"type\":\"ExternalIP\","
			   "\"address\":\"198.19.0.1\"},{\"type\":\"InternalIP\",\"address\":"
			   "\"198.18.0.5\"}]}}";
	struct kube_status s;
	struct kube_node n;
	char buf[64];

	assert_int_equal(kube_status_parse(st, strlen(st), &s), 0);
	assert_int_equal(s.code, 401);
	assert_string_equal(s.reason, "Unauthorized");
	assert_string_equal(s.message, "Unauthorized");
	assert_int_equal(kube_status_parse(node, strlen(node), &s), -EINVAL);
	assert_int_equal(kube_node_parse(node, strlen(node), &n), 0);
	assert_string_equal(n.name, "n1");
	assert_string_equal(n.zone, "z1");
	assert_int_equal(n.n_addrs, 2);
	assert_string_equal(ipaddr_fmt(&n.addrs[0], buf, sizeof(buf)), "198.18.0.5");
	assert_string_equal(ipaddr_fmt(&n.addrs[1], buf, sizeof(buf)), "198.19.0.1");
	assert_int_equal(n.n_pod_cidrs, 0);
	/* spec.podCIDRs for --detect-local-mode=NodeCIDR; spec.podCIDR alone too */
	node = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"spec\":{\"podCIDR\":"
	       "\"198.18.65.0/24\",\"podCIDRs\":[\"198.18.65.0/24\",\"2001:2::/64\"]}}";
	assert_int_equal(kube_node_parse(node, strlen(node), &n), 0);
	assert_int_equal(n.n_pod_cidrs, 2);
	assert_string_equal(ipaddr_fmt(&n.pod_cidrs[0].addr, buf, sizeof(buf)), "198.18.65.0");
	assert_int_equal(n.pod_cidrs[0].plen, 24);
	node = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"spec\":{\"podCIDR\":"
	       "\"198.18.66.0/24\"}}";
	assert_int_equal(kube_node_parse(node, strlen(node), &n), 0);
	assert_int_equal(n.n_pod_cidrs, 1);
	assert_int_equal(n.pod_cidrs[0].plen, 24);
}

/* kube-proxy's SyncNode: deletionTimestamp or the autoscaler's taint. */
static void test_node_eligible(void **state)
{
	static const struct {
		const char *json;
		bool eligible;
	} cases[] = {
		{ "{\"metadata\":{\"name\":\"n1\"}}", true },
		{ "{\"metadata\":{\"name\":\"n1\",\"deletionTimestamp\":\"2026-12-01T21:00:00Z\"}}",
		  false },
		{ "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":\"a\","
		  "\"effect\":\"NoSchedule\"},{\"key\":\"ToBeDeletedByClusterAutoscaler\","
		  "\"value\":\"1764622800\",\"effect\":\"NoSchedule\"}]}}",
		  false },
		{ "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":"
		  "\"node.kubernetes.io/unschedulable\",\"effect\":\"NoSchedule\"},{\"key\":"
		  "\"DeletionCandidateOfClusterAutoscaler\",\"effect\":\"PreferNoSchedule\"}]}}",
		  true },
		{ "{\"metadata\":{\"name\":\"n1\",\"deletionTimestamp\":null},\"spec\":{\"taints\":null}}",
		  true },
	};
	const char *tainted = EV("MODIFIED",
				 "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"2\"},\"spec\":"
				 "{\"taints\":[{\"key\":\"ToBeDeletedByClusterAutoscaler\"}]}}");
	const char *untainted = EV("MODIFIED", "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"3\"}}");
	struct kube_sink s;
	struct kube_node n;
	char why[256];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_int_equal(kube_node_parse(cases[i].json, strlen(cases[i].json), &n), 0);
		if (n.eligible != cases[i].eligible)
			fail_msg("case %zu: eligible %d", i, n.eligible);
	}
	/* a taint arriving over the watch is a change of the node */
	kube_sink_init(&s, KUBE_RES_NODE, NULL, -1);
	kube_sink_watch_begin(&s);
	assert_int_equal(kube_sink_watch_feed(&s, untainted, strlen(untainted), why, sizeof(why)),
			 KUBE_WATCH_OK);
	assert_true(s.have_node && s.node.eligible);
	s.node_changed = false;
	assert_int_equal(kube_sink_watch_feed(&s, tainted, strlen(tainted), why, sizeof(why)),
			 KUBE_WATCH_OK);
	assert_true(s.node_changed);
	assert_false(s.node.eligible);
	kube_sink_done(&s);
}

static void test_node_sink(void **state)
{
	const char *page = "{\"kind\":\"NodeList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":"
			   "[{\"metadata\":{\"name\":\"n1\",\"labels\":{\"topology.kubernetes.io/"
			   "zone\":\"z1\"}},\"status\":{}}]}";
	struct kube_list_meta m;
	struct kube_sink s;
	char why[256];

	kube_sink_init(&s, KUBE_RES_NODE, NULL, -1);
	assert_int_equal(kube_list_meta_parse(page, strlen(page), &m), 0);
	kube_sink_list_begin(&s);
	assert_int_equal(kube_sink_list_page(&s, page, strlen(page), &m), 0);
	assert_int_equal(kube_sink_list_commit(&s, m.rv), 0);
	kube_list_meta_done(&m);
	assert_true(s.have_node);
	assert_true(s.node_changed);
	assert_string_equal(s.node.zone, "z1");
	s.node_changed = false;
	page = EV("MODIFIED",
		  "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"6\",\"labels\":{"
		  "\"topology.kubernetes.io/zone\":\"z1\"}},\"status\":{}}");
	kube_sink_watch_begin(&s);
	assert_int_equal(kube_sink_watch_feed(&s, page, strlen(page), why, sizeof(why)), KUBE_WATCH_OK);
	assert_false(s.node_changed); /* nothing that matters changed */
	page = EV("MODIFIED",
		  "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"7\",\"labels\":{"
		  "\"topology.kubernetes.io/zone\":\"z2\"}},\"status\":{}}");
	assert_int_equal(kube_sink_watch_feed(&s, page, strlen(page), why, sizeof(why)), KUBE_WATCH_OK);
	assert_true(s.node_changed);
	assert_string_equal(s.node.zone, "z2");
	assert_string_equal(s.rv, "7");
	kube_sink_done(&s);
}

/* A page that is not a list of the resource says which field and why. */
static void test_list_refused(void **state)
{
	struct fix *f = *state;
	const char *items_obj = "{\"kind\":\"ServiceList\",\"metadata\":{\"resourceVersion\":\"3\"},"
				"\"items\":{\"a\":{}}}";
	const char *pod = "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"3\"},\"items\":[]}";
	struct kube_list_meta m;
	char deep[2 * 1001 + 128];
	int o;

	assert_int_equal(kube_list_meta_parse(items_obj, strlen(items_obj), &m), 0);
	kube_sink_list_begin(&f->s);
	assert_int_equal(kube_sink_list_page(&f->s, items_obj, strlen(items_obj), &m), -EINVAL);
	assert_string_equal(f->s.list_why, "items: a JSON object, not an array");
	kube_sink_list_abort(&f->s);
	kube_list_meta_done(&m);
	assert_int_equal(kube_list_meta_parse(pod, strlen(pod), &m), 0);
	kube_sink_list_begin(&f->s);
	assert_int_equal(kube_sink_list_page(&f->s, pod, strlen(pod), &m), -EINVAL);
	assert_string_equal(f->s.list_why, "kind: the answer is a 'PodList', not a ServiceList");
	kube_sink_list_abort(&f->s);
	kube_list_meta_done(&m);

	/* Too deep is said as such: 1,000 levels are taken (cJSON's limit), 1,001 not. */
	for (int depth = 999; depth <= 1000; depth++) {
		o = snprintf(deep, sizeof(deep),
			     "{\"kind\":\"ServiceList\",\"metadata\":{},\"items\":");
		for (int i = 0; i < depth; i++)
			deep[o++] = '[';
		for (int i = 0; i < depth; i++)
			deep[o++] = ']';
		deep[o++] = '}';
		deep[o] = '\0';
		assert_int_equal(kube_list_meta_parse(deep, (size_t)o, &m), depth == 999 ? 0 : -ELOOP);
		kube_list_meta_done(&m);
	}
}

/* Pages with one key twice: one item, one diag, at the commit. */
static void test_list_dedup_pages(void **state)
{
	struct fix *f = *state;
	const char *p1 = "{\"kind\":\"ServiceList\",\"metadata\":{\"resourceVersion\":\"5\","
			 "\"continue\":\"x\"},\"items\":[" SVC("default", "a", "80") "]}";
	const char *p2 = "{\"kind\":\"ServiceList\",\"metadata\":{\"resourceVersion\":\"5\"},"
			 "\"items\":[" SVC("default", "a", "81") "," SVC("default", "b", "82") "]}";
	struct kube_list_meta m1, m2;
	char buf[256];

	assert_int_equal(kube_list_meta_parse(p1, strlen(p1), &m1), 0);
	assert_int_equal(kube_list_meta_parse(p2, strlen(p2), &m2), 0);
	kube_sink_list_begin(&f->s);
	assert_int_equal(kube_sink_list_page(&f->s, p1, strlen(p1), &m1), 0);
	assert_int_equal(kube_sink_list_page(&f->s, p2, strlen(p2), &m2), 0);
	assert_int_equal(f->s.diags.n, 0);
	assert_int_equal(kube_sink_list_commit(&f->s, "5"), 0);
	services(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "default/a:80 default/b:82");
	assert_int_equal(f->s.diags.n, 1);
	assert_non_null(strstr(f->s.diags.items[0].msg, "defined more than once"));
	kube_list_meta_done(&m1);
	kube_list_meta_done(&m2);
}

/* A watch that would take the resource past its cap ends, the item not kept. */
static void test_watch_cap(void **state)
{
	struct fix *f = *state;
	char why[256], buf[256];

	list_empty(f, "10");
	f->s.max_items = 2;
	kube_sink_watch_begin(&f->s);
	assert_int_equal(feed(f, EV("ADDED", SVCO("a", "80", "11")) EV("ADDED", SVCO("b", "81", "12")),
			      why),
			 KUBE_WATCH_OK);
	assert_int_equal(feed(f, EV("MODIFIED", SVCO("a", "90", "13")), why), KUBE_WATCH_OK);
	assert_int_equal(feed(f, EV("ADDED", SVCO("c", "82", "14")), why), KUBE_WATCH_BROKEN);
	assert_string_equal(why, "a watch event for default/c: more than 2 services, the limit (as "
				 "for a list)");
	services(f->m, buf, sizeof(buf));
	assert_string_equal(buf, "default/a:90 default/b:81");
	assert_string_equal(f->s.rv, "13");

	/* A watch event nested too deep says so. */
	kube_sink_watch_begin(&f->s);
	{
		char ev[2 * 1001 + 128];
		int o = snprintf(ev, sizeof(ev), "{\"type\":\"ADDED\",\"object\":");

		for (int i = 0; i < 1000; i++)
			ev[o++] = '[';
		for (int i = 0; i < 1000; i++)
			ev[o++] = ']';
		ev[o++] = '}';
		ev[o++] = '\n';
		ev[o] = '\0';
		assert_int_equal(feed(f, ev, why), KUBE_WATCH_BROKEN);
		assert_string_equal(why, "a watch event with arrays and objects nested deeper than "
					 "1000 levels");
	}
}

static void test_escape(void **state)
{
	char *e;

	e = kube_query_escape(KUBE_PROXY_SELECTOR);
	assert_string_equal(e,
			    "%21service.kubernetes.io%2Fheadless%2C%21service.kubernetes.io%2F"
			    "service-proxy-name");
	free(e);
	e = kube_query_escape("metadata.name=node-1");
	assert_string_equal(e, "metadata.name%3Dnode-1");
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_members),
		cmocka_unit_test_setup_teardown(test_list_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_framing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch_faults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_dedup_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch_cap, setup, teardown),
		cmocka_unit_test(test_status_node),
		cmocka_unit_test(test_node_eligible),
		cmocka_unit_test(test_node_sink),
		cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
