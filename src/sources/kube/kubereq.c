/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sources/kube/kubereq.h"
#include "sources/kube/kubewire.h"
#include "util.h"

bool kube_content_type_valid(const char *ct)
{
	return ct && (streq(ct, KUBE_CT_JSON) || streq(ct, KUBE_CT_PROTOBUF));
}

int kube_accept_header(const char *content_type, const char *accept, char *buf, size_t len)
{
	int n;

	if (accept && *accept)
		n = snprintf(buf, len, "%s", accept);
	else
		n = snprintf(buf, len, "%s, */*", content_type ? content_type : KUBE_CT_DEFAULT);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Whether the media range at mt (up to a ',', ';', blank or the end) is
 * one whose answer svcnat reads.  A wildcard gets the server's default,
 * JSON. */
static bool accept_readable(const char *mt)
{
	static const char *const readable[] = { KUBE_CT_JSON, KUBE_CT_PROTOBUF, "application/*",
						"*/*" };
	size_t n = strcspn(mt, ",; \t");

	for (size_t i = 0; i < ARRAY_SIZE(readable); i++)
		if (n == strlen(readable[i]) && !strncasecmp(mt, readable[i], n))
			return true;
	return false;
}

bool kube_accept_valid(const char *accept, const char **ret_why)
{
	const char *why = NULL, *p;
	bool readable = false;

	if (!accept || strlen(accept) > KUBE_ACCEPT_MAX)
		why = "at most 200 bytes long";
	for (p = accept; !why && *p; p++)
		if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
			why = "free of control characters (an HTTP header's value)";
	for (p = accept; !why && p; p = strchr(p, ',')) {
		p += strspn(p, ", \t");
		readable = readable || accept_readable(p);
	}
	if (!why && !readable)
		why = "a list naming " KUBE_CT_JSON " or " KUBE_CT_PROTOBUF
		      " (the answers svcnat reads)";
	if (why && ret_why)
		*ret_why = why;
	return !why;
}

/* Whether media type mt (then parameters, blanks or the end) is want. */
static bool media_is(const char *mt, const char *want)
{
	size_t n = strlen(want);

	while (*mt == ' ' || *mt == '\t')
		mt++;
	return !strncasecmp(mt, want, n) &&
	       (mt[n] == '\0' || mt[n] == ';' || mt[n] == ' ' || mt[n] == '\t');
}

enum kube_wire kube_wire_of(const char *content_type_header, const char *configured)
{
	const char *ct = content_type_header;

	while (ct && (*ct == ' ' || *ct == '\t'))
		ct++;
	if (!ct || !*ct)
		ct = configured ? configured : KUBE_CT_DEFAULT;
	if (media_is(ct, KUBE_CT_PROTOBUF))
		return KUBE_WIRE_PROTOBUF;
	if (media_is(ct, KUBE_CT_JSON))
		return KUBE_WIRE_JSON;
	return KUBE_WIRE_OTHER;
}

void kube_list_plan(const char *last_rv, const struct kube_relist *st, unsigned page,
		    struct kube_list_plan *ret)
{
	struct kube_list_plan p = { .limit = page };

	/* relistResourceVersion() */
	if (st->rv_unavailable)
		p.rv[0] = '\0';
	else if (!last_rv || !*last_rv)
		snprintf(p.rv, sizeof(p.rv), "0");
	else
		snprintf(p.rv, sizeof(p.rv), "%s", last_rv);
	/* The pager's size: a list at a version other than "0" is asked
	 * whole, so that the watch cache can answer it, unless the cache was
	 * seen not to (a paged answer at "0"). */
	if (st->full_list || (p.rv[0] && !streq(p.rv, "0") && !st->paginated))
		p.limit = 0;
	*ret = p;
}

int kube_list_query(const struct kube_list_plan *p, const char *cont, const char *sel,
		    char **ret)
{
	_cleanup_free_ char *rv = kube_query_escape(p->rv);
	char limit[32] = "";
	int n;

	if (!rv)
		return -ENOMEM;
	if (p->limit)
		snprintf(limit, sizeof(limit), "limit=%u&", p->limit);
	if (cont)
		n = asprintf(ret, "%scontinue=%s&%s", limit, cont, sel);
	else if (p->rv[0])
		n = asprintf(ret, "%sresourceVersion=%s&%s", limit, rv, sel);
	else
		n = asprintf(ret, "%s%s", limit, sel);
	return n < 0 ? -ENOMEM : 0;
}

int kube_watch_query(const char *rv, unsigned timeout_s, bool stream, const char *sel,
		     char **ret)
{
	_cleanup_free_ char *esc = kube_query_escape(rv ? rv : "");
	int n;

	if (!esc)
		return -ENOMEM;
	n = asprintf(ret, "watch=1&allowWatchBookmarks=true%s%s%s&timeoutSeconds=%u&%s",
		     stream ? "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan" : "",
		     *esc ? "&resourceVersion=" : "", esc, timeout_s, sel);
	return n < 0 ? -ENOMEM : 0;
}

const char *kube_stream_rv(const char *last_rv, const struct kube_relist *st)
{
	return st->rv_unavailable || !last_rv ? "" : last_rv;
}

bool kube_stream_refused(long http)
{
	return http >= 400 && http < 500 && http != 410 && http != 429;
}

bool kube_list_rv_gone(long http, const char *msg)
{
	return http == 410 || (http == 504 && msg && strstr(msg, "Too large resource version"));
}
