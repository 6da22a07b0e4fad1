/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the API source asks, as client-go does (sources/kube/kubereq.h):
 * the Accept header per content type, the decoder per answer Content-Type,
 * each list's and watch's query through the reflector's resourceVersion
 * rules (first list, relist, version gone, continue expired, paged cache),
 * the refusals that turn a streaming list into a list; and the sink's
 * streaming list (ADDED events as a list, committed at the
 * initial-events-end bookmark, a server that does not stream refused).
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
#include "sources/kube/kubereq.h"
#include "sources/kube/kubewire.h"
#include "util.h"

static void test_accept(void **state)
{
	char buf[128];

	(void)state;
	assert_int_equal(kube_accept_header(NULL, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "application/vnd.kubernetes.protobuf, */*");
	assert_int_equal(kube_accept_header(KUBE_CT_JSON, "", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "application/json, */*");
	/* acceptContentTypes wins, as given */
	assert_int_equal(kube_accept_header(KUBE_CT_JSON, "application/vnd.kubernetes.protobuf,"
							  "application/json",
					    buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, "application/vnd.kubernetes.protobuf,application/json");
	assert_int_equal(kube_accept_header(NULL, NULL, buf, 10), -ENAMETOOLONG);
	assert_true(kube_content_type_valid(KUBE_CT_JSON));
	assert_true(kube_content_type_valid("application/vnd.kubernetes.protobuf"));
	assert_false(kube_content_type_valid("application/cbor"));
	assert_false(kube_content_type_valid("application/json;charset=utf-8"));
	assert_false(kube_content_type_valid(NULL));
}

/* clientConnection.acceptContentTypes: sent as given when svcnat can
 * read one of the answers it allows and it is a valid header value. */
static void test_accept_valid(void **state)
{
	static const struct {
		const char *v;
		bool ok;
	} cases[] = {
		{ "application/json", true },
		{ "application/vnd.kubernetes.protobuf,application/json", true },
		{ "application/cbor, Application/JSON;q=0.9", true },
		{ "application/cbor,\t*/*;q=0.1", true },
		{ "application/*", true },
		{ "application/cbor", false },
		{ "application/json-patch+json", false },
		{ "application/jsonx", false },
		{ "text/*", false },
		{ ",", false },
		{ "application/json\r\nX-Evil: 1", false },
		{ "application/json\x7f", false },
	};
	char big[KUBE_ACCEPT_MAX + 2];
	const char *why;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		why = NULL;
		if (kube_accept_valid(cases[i].v, &why) != cases[i].ok)
			fail_msg("'%s': want %s", cases[i].v, cases[i].ok ? "valid" : "refused");
		assert_true(cases[i].ok == !why);
	}
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "*/*,", 4);
	assert_false(kube_accept_valid(big, &why));
	assert_string_equal(why, "at most 200 bytes long");
	big[KUBE_ACCEPT_MAX] = '\0';
	assert_true(kube_accept_valid(big, NULL));
	assert_false(kube_accept_valid(NULL, NULL));
}

static void test_wire_of(void **state)
{
	static const struct {
		const char *ct, *configured;
		enum kube_wire want;
	} rows[] = {
		{ "application/vnd.kubernetes.protobuf", KUBE_CT_JSON, KUBE_WIRE_PROTOBUF },
		{ "application/vnd.kubernetes.protobuf;stream=watch", NULL, KUBE_WIRE_PROTOBUF },
		{ " Application/VND.kubernetes.protobuf ; stream=watch", NULL, KUBE_WIRE_PROTOBUF },
		{ "application/json", KUBE_CT_PROTOBUF, KUBE_WIRE_JSON },
		{ "application/json;charset=utf-8", NULL, KUBE_WIRE_JSON },
		{ "application/jsonx", NULL, KUBE_WIRE_OTHER },
		{ "application/vnd.kubernetes.protobufx", NULL, KUBE_WIRE_OTHER },
		{ "application/yaml", NULL, KUBE_WIRE_OTHER },
		{ "text/html", KUBE_CT_JSON, KUBE_WIRE_OTHER },
		/* none: the configured type (client-go's transformResponse) */
		{ NULL, KUBE_CT_JSON, KUBE_WIRE_JSON },
		{ "", NULL, KUBE_WIRE_PROTOBUF },
		{ "  ", KUBE_CT_PROTOBUF, KUBE_WIRE_PROTOBUF },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		print_message("row %zu: %s\n", i, rows[i].ct ? rows[i].ct : "(null)");
		assert_int_equal(kube_wire_of(rows[i].ct, rows[i].configured), rows[i].want);
	}
}

/* One list's query from the reflector's state. */
static void list_one(const char *last_rv, struct kube_relist st, const char *cont,
		     const char *want)
{
	struct kube_list_plan p;
	char *q = NULL;

	kube_list_plan(last_rv, &st, 500, &p);
	assert_int_equal(kube_list_query(&p, cont, "labelSelector=x", &q), 0);
	print_message("last '%s' unavailable %d paginated %d full %d -> %s\n", last_rv,
		      st.rv_unavailable, st.paginated, st.full_list, q);
	assert_string_equal(q, want);
	free(q);
}

static void test_list_query(void **state)
{
	(void)state;
	/* the first list: from the watch cache, paged */
	list_one("", (struct kube_relist){ 0 }, NULL,
		 "limit=500&resourceVersion=0&labelSelector=x");
	/* continue pages: no version */
	list_one("", (struct kube_relist){ 0 }, "tok%2B1", "limit=500&continue=tok%2B1&labelSelector=x");
	/* a relist (410 on the watch): the last version, whole */
	list_one("1234", (struct kube_relist){ 0 }, NULL, "resourceVersion=1234&labelSelector=x");
	/* ... unless a list at "0" came in pages (no watch cache) */
	list_one("1234", (struct kube_relist){ .paginated = true }, NULL,
		 "limit=500&resourceVersion=1234&labelSelector=x");
	/* the version is gone: a consistent read, paged */
	list_one("1234", (struct kube_relist){ .rv_unavailable = true }, NULL,
		 "limit=500&labelSelector=x");
	list_one("", (struct kube_relist){ .rv_unavailable = true }, NULL,
		 "limit=500&labelSelector=x");
	/* an expired continue token: whole, at the version first asked */
	list_one("", (struct kube_relist){ .full_list = true }, NULL,
		 "resourceVersion=0&labelSelector=x");
	/* versions are escaped */
	list_one("a&b", (struct kube_relist){ 0 }, NULL, "resourceVersion=a%26b&labelSelector=x");
}

static void test_watch_query(void **state)
{
	struct kube_relist st = { 0 };
	char *q = NULL;

	(void)state;
	assert_int_equal(kube_watch_query("77", 400, false, "fieldSelector=f", &q), 0);
	assert_string_equal(q, "watch=1&allowWatchBookmarks=true&resourceVersion=77&"
			       "timeoutSeconds=400&fieldSelector=f");
	free(q);
	/* a streaming list: the first from no version (consistent, from the cache) */
	assert_string_equal(kube_stream_rv("", &st), "");
	assert_int_equal(kube_watch_query(kube_stream_rv("", &st), 300, true, "labelSelector=x", &q),
			 0);
	assert_string_equal(q, "watch=1&allowWatchBookmarks=true&sendInitialEvents=true&"
			       "resourceVersionMatch=NotOlderThan&timeoutSeconds=300&labelSelector=x");
	free(q);
	/* later from the last version, or none when it is gone */
	assert_string_equal(kube_stream_rv("55", &st), "55");
	st.rv_unavailable = true;
	assert_string_equal(kube_stream_rv("55", &st), "");
}

static void test_refusals(void **state)
{
	(void)state;
	/* an older server (422 Invalid, 400), a proxy's 403/404/405: list instead */
	assert_true(kube_stream_refused(400));
	assert_true(kube_stream_refused(422));
	assert_true(kube_stream_refused(403));
	assert_true(kube_stream_refused(404));
	/* expired, throttled, the server's own trouble: not a refusal */
	assert_false(kube_stream_refused(410));
	assert_false(kube_stream_refused(429));
	assert_false(kube_stream_refused(500));
	assert_false(kube_stream_refused(503));
	assert_false(kube_stream_refused(200));
	assert_true(kube_list_rv_gone(410, ""));
	assert_true(kube_list_rv_gone(504, "Too large resource version: 9, current: 3"));
	assert_false(kube_list_rv_gone(504, "Timeout: request did not complete"));
	assert_false(kube_list_rv_gone(500, ""));
	assert_false(kube_list_rv_gone(200, NULL));
}

#define SVCO(name, rv)                                                                         \
	"{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"namespace\":\"default\"," \
	"\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"},\"spec\":{\"clusterIP\":"       \
	"\"10.0.0.2\",\"ports\":[{\"port\":80}]}}"
#define EV(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"
#define END(rv)                                                                                \
	"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Service\",\"apiVersion\":\"v1\","      \
	"\"metadata\":{\"resourceVersion\":\"" rv "\",\"annotations\":{"                      \
	"\"k8s.io/initial-events-end\":\"true\"}}}}\n"

static size_t merged(struct merge *m)
{
	struct merge_snapshot *snap = merge_snapshot_get(m);
	size_t n;

	assert_non_null(snap);
	n = snap->n_services;
	merge_snapshot_unref(snap);
	return n;
}

static void test_stream_sink(void **state)
{
	struct merge *m = merge_new();
	struct kube_sink s;
	char why[256] = "";
	const char *a = EV("ADDED", SVCO("a", "5")) EV("ADDED", SVCO("b", "6"));
	int sid;

	(void)state;
	assert_non_null(m);
	sid = merge_source_register(m, "api:services");
	kube_sink_init(&s, KUBE_RES_SERVICES, m, sid);
	kube_sink_stream_begin(&s);
	assert_int_equal(kube_sink_watch_feed(&s, a, strlen(a), why, sizeof(why)), KUBE_WATCH_OK);
	/* nothing applied, no version before the bookmark */
	assert_int_equal(merged(m), 0);
	assert_string_equal(s.rv, "");
	assert_false(s.listed);
	assert_int_equal(kube_sink_watch_feed(&s, END("9"), strlen(END("9")), why, sizeof(why)),
			 KUBE_WATCH_OK);
	assert_true(s.stream_synced);
	assert_true(s.listed);
	assert_false(s.streaming);
	assert_string_equal(s.rv, "9");
	assert_int_equal(merged(m), 2);
	/* then the same stream is a watch */
	a = EV("DELETED", SVCO("a", "10"));
	assert_int_equal(kube_sink_watch_feed(&s, a, strlen(a), why, sizeof(why)), KUBE_WATCH_OK);
	assert_int_equal(merged(m), 1);
	assert_string_equal(s.rv, "10");

	/* a server that ignored sendInitialEvents: a plain bookmark or a
	 * MODIFIED before the end; what was streamed is not applied */
	s.stream_synced = false;
	kube_sink_stream_begin(&s);
	a = EV("ADDED", SVCO("c", "11"))
		"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"12\"}}}\n";
	assert_int_equal(kube_sink_watch_feed(&s, a, strlen(a), why, sizeof(why)),
			 KUBE_WATCH_NOSTREAM);
	assert_non_null(strstr(why, "did not stream the initial state"));
	kube_sink_list_abort(&s);
	assert_false(s.streaming);
	assert_int_equal(merged(m), 1);
	assert_string_equal(s.rv, "10");
	kube_sink_stream_begin(&s);
	a = EV("MODIFIED", SVCO("b", "13"));
	assert_int_equal(kube_sink_watch_feed(&s, a, strlen(a), why, sizeof(why)),
			 KUBE_WATCH_NOSTREAM);
	kube_sink_list_abort(&s);
	/* an expired version during the stream: a 410 as any watch's */
	kube_sink_stream_begin(&s);
	a = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":"
	    "\"Expired\",\"message\":\"too old\"}}\n";
	assert_int_equal(kube_sink_watch_feed(&s, a, strlen(a), why, sizeof(why)),
			 KUBE_WATCH_EXPIRED);
	kube_sink_list_abort(&s);
	/* the stream is capped as a list is */
	s.max_items = 1;
	kube_sink_stream_begin(&s);
	a = EV("ADDED", SVCO("a", "5")) EV("ADDED", SVCO("b", "6"));
	assert_int_equal(kube_sink_watch_feed(&s, a, strlen(a), why, sizeof(why)),
			 KUBE_WATCH_BROKEN);
	kube_sink_list_abort(&s);
	assert_int_equal(merged(m), 1);
	kube_sink_done(&s);
	merge_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accept),      cmocka_unit_test(test_accept_valid),
		cmocka_unit_test(test_wire_of),
		cmocka_unit_test(test_list_query),  cmocka_unit_test(test_watch_query),
		cmocka_unit_test(test_refusals),    cmocka_unit_test(test_stream_sink),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
