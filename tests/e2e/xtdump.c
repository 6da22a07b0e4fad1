/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * xtdump 4|6 TABLE: the legacy xtables table's entries as the kernel
 * returns them (IPT_SO_GET_ENTRIES / IP6T_SO_GET_ENTRIES), one line per
 * entry: its chain, its number in the chain (from 0; "-" for a chain head)
 * and its bytes in hex, with the per-entry fields the kernel itself keeps
 * (packet and byte counters, comefrom) zeroed; the hook offsets first.  Two writers
 * that put the same bytes into the kernel print the same text: the e2e
 * tests compare svcnat's direct writer with iptables-legacy-restore and
 * ip6tables-legacy-restore so, and record the codec's reference entries.
 */
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>

static const char *const hooks[NF_INET_NUMHOOKS] = {
	"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING",
};

int main(int argc, char **argv)
{
	struct ipt_getinfo info = { 0 };
	struct ipt_get_entries *ge;
	socklen_t len = sizeof(info);
	bool v6 = argc == 3 && !strcmp(argv[1], "6");
	int level = v6 ? SOL_IPV6 : SOL_IP;
	size_t hdr = v6 ? sizeof(struct ip6t_entry) : sizeof(struct ipt_entry);
	size_t cnt = v6 ? offsetof(struct ip6t_entry, counters) : offsetof(struct ipt_entry, counters);
	size_t from = v6 ? offsetof(struct ip6t_entry, comefrom) : offsetof(struct ipt_entry, comefrom);
	size_t nxt = v6 ? offsetof(struct ip6t_entry, next_offset)
			: offsetof(struct ipt_entry, next_offset);
	const char *chain = "-";
	int fd, n = 0;

	if (argc != 3 || (!v6 && strcmp(argv[1], "4"))) {
		fprintf(stderr, "usage: xtdump 4|6 TABLE\n");
		return 2;
	}
	fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0) {
		perror("xtdump: socket");
		return 1;
	}
	snprintf(info.name, sizeof(info.name), "%s", argv[2]);
	/* IPT_SO_GET_INFO and IP6T_SO_GET_INFO share value and layout. */
	if (getsockopt(fd, level, IPT_SO_GET_INFO, &info, &len) < 0) {
		fprintf(stderr, "xtdump: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	len = (socklen_t)(sizeof(*ge) + info.size);
	ge = calloc(1, len);
	if (!ge)
		return 1;
	snprintf(ge->name, sizeof(ge->name), "%s", argv[2]);
	ge->size = info.size;
	if (getsockopt(fd, level, IPT_SO_GET_ENTRIES, ge, &len) < 0) {
		fprintf(stderr, "xtdump: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	printf("hooks %#x", info.valid_hooks);
	for (int h = 0; h < NF_INET_NUMHOOKS; h++)
		if (info.valid_hooks & (1u << h))
			printf(" %u/%u", info.hook_entry[h], info.underflow[h]);
	printf(" entries %u size %u\n", info.num_entries, info.size);
	for (size_t off = 0; off + hdr <= info.size;) {
		unsigned char *e = (unsigned char *)ge->entrytable + off;
		uint16_t next;

		const struct xt_entry_target *t;
		uint16_t to;

		memcpy(&next, e + nxt, sizeof(next));
		memcpy(&to, e + nxt - sizeof(to), sizeof(to));
		if (next < hdr || off + next > info.size || to + sizeof(*t) > next)
			return 1;
		t = (const void *)(e + to);
		for (int h = 0; h < NF_INET_NUMHOOKS; h++)
			if ((info.valid_hooks & (1u << h)) && info.hook_entry[h] == off)
				chain = hooks[h], n = 0;
		memset(e + cnt, 0, sizeof(struct xt_counters));
		memset(e + from, 0, sizeof(unsigned int));
		if (!strcmp(t->u.user.name, XT_ERROR_TARGET)) {
			chain = ((const struct xt_error_target *)t)->errorname;
			printf("- - ");
			n = 0;
		} else {
			printf("%s %d ", chain, n++);
		}
		for (size_t i = 0; i < next; i++)
			printf("%02x", e[i]);
		printf("\n");
		off += next;
	}
	free(ge);
	close(fd);
	return 0;
}
