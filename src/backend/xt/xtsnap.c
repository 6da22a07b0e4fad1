/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netfilter_ipv6/ip6_tables.h>

#include "backend/xt/xtentry.h"
#include "backend/xt/xtsnap.h"
#include "util.h"

/* ip_tables and ip6_tables take the same getinfo, get_entries and replace
 * headers (only the entries differ), so one set of structs serves both. */
_Static_assert(sizeof(struct ipt_getinfo) == sizeof(struct ip6t_getinfo), "getinfo");
_Static_assert(offsetof(struct ipt_get_entries, entrytable) ==
		       offsetof(struct ip6t_get_entries, entrytable),
	       "get_entries");
_Static_assert(sizeof(struct ipt_replace) == sizeof(struct ip6t_replace), "replace");
_Static_assert(IPT_SO_GET_INFO == IP6T_SO_GET_INFO && IPT_SO_GET_ENTRIES == IP6T_SO_GET_ENTRIES &&
		       IPT_SO_SET_REPLACE == IP6T_SO_SET_REPLACE &&
		       IPT_SO_SET_ADD_COUNTERS == IP6T_SO_SET_ADD_COUNTERS,
	       "socket options");

/* For messages: the socket options' prefix, and the table's name as the
 * driver says it ("ip6 nat"). */
static const char *so(int af)
{
	return af == AF_INET6 ? "IP6T" : "IPT";
}

static const char *table_name(int af, const char *table, char buf[48])
{
	if (af != AF_INET6)
		return table;
	snprintf(buf, 48, "ip6 %s", table);
	return buf;
}

static int sol(int af)
{
	return af == AF_INET6 ? SOL_IPV6 : SOL_IP;
}

/* An entry's counters and the offset of the next one, in either family. */
static struct xt_counters entry_counters(int af, const unsigned char *e)
{
	const struct xt_counters *c =
		(const void *)(e + (af == AF_INET6 ? offsetof(struct ip6t_entry, counters)
						   : offsetof(struct ipt_entry, counters)));

	return *c;
}

static size_t entry_next(int af, const unsigned char *e)
{
	if (af == AF_INET6)
		return ((const struct ip6t_entry *)(const void *)e)->next_offset;
	return ((const struct ipt_entry *)(const void *)e)->next_offset;
}

static size_t entry_min(int af)
{
	return af == AF_INET6 ? sizeof(struct ip6t_entry) : sizeof(struct ipt_entry);
}

static int xfail(struct diag_list *d, const char *who, const char *table, const char *what,
		 int err, bool commit)
{
	const char *mean = xt_errno_meaning(err, commit);

	if (!err)
		err = EIO;
	diag_add(d, DIAG_ERROR, who, table, NULL, "%s failed: errno %d (%s)%s%s", what, err,
		 strerror(err), mean ? ": " : "", mean ? mean : "");
	return -err;
}

int xt_socket(int af, const char *who, int *ret_fd, struct diag_list *d)
{
	int fd = socket(af, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);

	if (fd < 0)
		return xfail(d, who, NULL,
			     af == AF_INET6 ? "opening the raw IPv6 socket" : "opening the raw socket",
			     errno, false);
	*ret_fd = fd;
	return 0;
}

const char *xt_ip6_tables_missing(void)
{
	struct xt_get_revision rev = { .name = "comment", .revision = 0 };
	socklen_t len = sizeof(rev);
	int fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW), err;

	if (fd < 0)
		return errno == EAFNOSUPPORT ? "the kernel has no IPv6" : NULL;
	/* Asking for a match's revision creates no table (reading a table's
	 * info would instantiate it). */
	err = getsockopt(fd, SOL_IPV6, IP6T_SO_GET_REVISION_MATCH, &rev, &len) < 0 ? errno : 0;
	close(fd);
	return err == ENOPROTOOPT ? "the kernel has no ip6_tables (legacy ip6tables)" : NULL;
}

bool xt_ip6_tables_usable(const char *who, struct diag_list *d)
{
	const char *why = xt_ip6_tables_missing();

	if (why)
		diag_add(d, DIAG_NOTE, who, NULL, NULL,
			 "%s: svcnat writes the iptables tables only, IPv6 services are not "
			 "programmed",
			 why);
	return !why;
}

int xt_snap_read(int fd, int af, const char *table, struct xt_snap *snap, const char *who,
		 struct diag_list *d)
{
	socklen_t len = sizeof(snap->info);
	char tn[48], what[64];

	memset(snap, 0, sizeof(*snap));
	snap->af = af;
	snprintf(snap->info.name, sizeof(snap->info.name), "%s", table);
	if (getsockopt(fd, sol(af), IPT_SO_GET_INFO, &snap->info, &len) < 0) {
		int err = errno;

		snprintf(what, sizeof(what), "reading the table (%s_SO_GET_INFO)", so(af));
		return xfail(d, who, table_name(af, table, tn), what, err, false);
	}
	len = (socklen_t)(sizeof(*snap->ge) + snap->info.size);
	snap->ge = calloc(1, len);
	if (!snap->ge)
		return -ENOMEM;
	snprintf(snap->ge->name, sizeof(snap->ge->name), "%s", table);
	snap->ge->size = snap->info.size;
	if (getsockopt(fd, sol(af), IPT_SO_GET_ENTRIES, snap->ge, &len) < 0) {
		int err = errno;

		xt_snap_done(snap);
		/* EAGAIN: the table changed between the two calls. */
		if (err == EAGAIN)
			return -EAGAIN;
		snprintf(what, sizeof(what), "reading the table (%s_SO_GET_ENTRIES)", so(af));
		return xfail(d, who, table_name(af, table, tn), what, err, false);
	}
	return 0;
}

void xt_snap_done(struct xt_snap *snap)
{
	free(snap->ge);
	snap->ge = NULL;
}

int xt_put_back(int fd, int af, const struct ipt_getinfo *info, const void *entries,
		const struct xt_counters *counters, const char *who, struct diag_list *d)
{
	struct ipt_getinfo cur = { 0 };
	socklen_t len = sizeof(cur);
	size_t rlen = sizeof(struct ipt_replace) + info->size;
	size_t alen = sizeof(struct xt_counters_info) + info->num_entries * sizeof(struct xt_counters);
	_cleanup_free_ struct ipt_replace *repl = NULL;
	_cleanup_free_ struct xt_counters *oldc = NULL;
	_cleanup_free_ struct xt_counters_info *add = NULL;
	const unsigned char *p = entries;
	char tn[48], what[64];
	const char *name = table_name(af, info->name, tn);

	/* The replace names the number of entries it replaces: now, that of
	 * the table this transaction wrote. */
	snprintf(cur.name, sizeof(cur.name), "%s", info->name);
	if (getsockopt(fd, sol(af), IPT_SO_GET_INFO, &cur, &len) < 0) {
		int err = errno;

		snprintf(what, sizeof(what), "putting the table back (%s_SO_GET_INFO)", so(af));
		return xfail(d, who, name, what, err, false);
	}
	repl = malloc(rlen);
	oldc = calloc(cur.num_entries + 1, sizeof(*oldc));
	add = calloc(1, alen);
	if (!repl || !oldc || !add)
		return -ENOMEM;
	memset(repl, 0, sizeof(*repl));
	snprintf(repl->name, sizeof(repl->name), "%s", info->name);
	repl->valid_hooks = info->valid_hooks;
	repl->num_entries = info->num_entries;
	repl->size = info->size;
	memcpy(repl->hook_entry, info->hook_entry, sizeof(repl->hook_entry));
	memcpy(repl->underflow, info->underflow, sizeof(repl->underflow));
	repl->num_counters = cur.num_entries;
	repl->counters = oldc;
	memcpy(repl->entries, entries, info->size);
	if (setsockopt(fd, sol(af), IPT_SO_SET_REPLACE, repl, (socklen_t)rlen) < 0) {
		int err = errno;

		snprintf(what, sizeof(what), "putting the table back (%s_SO_SET_REPLACE)", so(af));
		return xfail(d, who, name, what, err, true);
	}

	/* The kernel zeroes the counters of a table it takes: add them back. */
	snprintf(add->name, sizeof(add->name), "%s", info->name);
	add->num_counters = info->num_entries;
	for (size_t i = 0, off = 0; i < info->num_entries && off < info->size; i++) {
		size_t next = entry_next(af, p + off);

		add->counters[i] = counters ? counters[i] : entry_counters(af, p + off);
		if (next < entry_min(af))
			break;
		off += next;
	}
	if (setsockopt(fd, sol(af), IPT_SO_SET_ADD_COUNTERS, add, (socklen_t)alen) < 0)
		diag_add(d, DIAG_WARNING, who, name, NULL,
			 "the rules are back, but their packet counters restart from 0: "
			 "%s_SO_SET_ADD_COUNTERS failed: %s", so(af), strerror(errno));
	return 0;
}
