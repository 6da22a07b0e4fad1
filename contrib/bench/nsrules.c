// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Watches the legacy nat table of many network namespaces at once, for the
 * fleet benchmark (contrib/bench/fleet): when did each node's kernel get a
 * rule naming an IPv4 address?
 *
 * Usage: nsrules [-i POLL_MS] NETNS_PATH...   (e.g. /run/netns/NAME)
 * One raw socket is opened in each namespace at start; a socket stays in the
 * namespace it was made in, so every later read is one getsockopt() pair
 * (IPT_SO_GET_INFO, IPT_SO_GET_ENTRIES) and no fork or setns.  Read only.
 *
 * Commands on stdin, one a line:
 *   wait ADDR SECONDS   poll every namespace not yet done until its nat
 *                       table names ADDR; "gone ADDR SECONDS" until it no
 *                       longer does.  Prints "seen I T" per namespace (I its
 *                       index in the arguments, T CLOCK_MONOTONIC seconds of
 *                       the read that saw it), then "end DONE TOTAL ROUNDS
 *                       ROUND_MS" (DONE < TOTAL when SECONDS ran out).
 *   has ADDR            one read of each: "has I 0|1" per namespace, "end".
 * A rule names ADDR when its source or destination is ADDR/32 or its
 * target's data holds the address (DNAT --to-destination ADDR:PORT): svcnat
 * writes a whole table with one IPT_SO_SET_REPLACE, so one rule of a sync
 * there means the whole sync is there.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/netfilter_ipv4/ip_tables.h>

struct node {
	int fd;		/* raw socket in the node's namespace */
	void *buf;	/* struct ipt_get_entries + the table */
	size_t cap;
	bool done;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int open_in(const char *path, int home)
{
	int ns, fd, e;

	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		return -errno;
	if (setns(ns, CLONE_NEWNET) < 0) {
		e = -errno;
		close(ns);
		return e;
	}
	close(ns);
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	e = fd < 0 ? -errno : 0;
	if (setns(home, CLONE_NEWNET) < 0) {
		perror("nsrules: back to our own namespace");
		exit(1);
	}
	return fd < 0 ? e : fd;
}

static bool entry_names(const struct ipt_entry *e, uint32_t a)
{
	const struct xt_entry_target *t;
	size_t len;

	if ((e->ip.src.s_addr == a && e->ip.smsk.s_addr == 0xffffffffU) ||
	    (e->ip.dst.s_addr == a && e->ip.dmsk.s_addr == 0xffffffffU))
		return true;
	if (e->target_offset + sizeof(*t) > e->next_offset)
		return false;
	t = (const void *)((const char *)e + e->target_offset);
	if (t->u.target_size < sizeof(*t) || e->target_offset + t->u.target_size > e->next_offset)
		return false;
	len = t->u.target_size - sizeof(*t);
	return memmem(t->data, len, &a, sizeof(a)) != NULL;
}

/* 1 if the node's nat table names a, 0 if not, -errno when unreadable. */
static int node_has(struct node *n, uint32_t a)
{
	struct ipt_getinfo info;
	struct ipt_get_entries *ge;
	socklen_t len;
	size_t need, off;
	int tries;

	for (tries = 0; tries < 10; tries++) {
		memset(&info, 0, sizeof(info));
		strcpy(info.name, "nat");
		len = sizeof(info);
		if (getsockopt(n->fd, IPPROTO_IP, IPT_SO_GET_INFO, &info, &len) < 0)
			return -errno;
		need = sizeof(*ge) + info.size;
		if (need > n->cap) {
			void *b = realloc(n->buf, need);

			if (!b)
				return -ENOMEM;
			n->buf = b;
			n->cap = need;
		}
		ge = n->buf;
		memset(ge, 0, sizeof(*ge));
		strcpy(ge->name, "nat");
		ge->size = info.size;
		len = need;
		if (getsockopt(n->fd, IPPROTO_IP, IPT_SO_GET_ENTRIES, ge, &len) < 0) {
			/* The table was replaced between the two reads: its size moved. */
			if (errno == EAGAIN)
				continue;
			return -errno;
		}
		for (off = 0; off + sizeof(struct ipt_entry) <= ge->size;) {
			const struct ipt_entry *e = (const void *)((const char *)ge->entrytable + off);

			if (e->next_offset < sizeof(*e))
				break;
			if (entry_names(e, a))
				return 1;
			off += e->next_offset;
		}
		return 0;
	}
	return -EAGAIN;
}

static void cmd_wait(struct node *nodes, int n, uint32_t a, double secs, bool gone, long poll_ms)
{
	double t0 = now(), deadline = t0 + secs, t;
	long rounds = 0;
	int done = 0, i, r;
	struct timespec pause = { poll_ms / 1000, (poll_ms % 1000) * 1000000L };

	for (i = 0; i < n; i++)
		nodes[i].done = false;
	for (;;) {
		for (i = 0; i < n; i++) {
			if (nodes[i].done)
				continue;
			r = node_has(&nodes[i], a);
			t = now();
			if (r >= 0 && (r == 1) != gone) {
				nodes[i].done = true;
				done++;
				printf("seen %d %.6f\n", i, t);
			}
		}
		rounds++;
		if (done == n || now() > deadline)
			break;
		if (poll_ms > 0)
			nanosleep(&pause, NULL);
	}
	printf("end %d %d %ld %.3f\n", done, n, rounds, (now() - t0) * 1000 / (double)rounds);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct node *nodes;
	char line[256], verb[16], addr[64];
	double secs;
	long poll_ms = 2;
	int home, n, i, first = 1;

	if (argc > 2 && strcmp(argv[1], "-i") == 0) {
		poll_ms = atol(argv[2]);
		first = 3;
	}
	n = argc - first;
	if (n < 1) {
		fprintf(stderr, "usage: nsrules [-i POLL_MS] NETNS_PATH...\n");
		return 2;
	}
	home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home < 0) {
		perror("nsrules: /proc/self/ns/net");
		return 1;
	}
	nodes = calloc((size_t)n, sizeof(*nodes));
	if (!nodes)
		return 1;
	for (i = 0; i < n; i++) {
		nodes[i].fd = open_in(argv[first + i], home);
		if (nodes[i].fd < 0) {
			fprintf(stderr, "nsrules: %s: %s\n", argv[first + i], strerror(-nodes[i].fd));
			return 1;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		struct in_addr a;

		secs = 0;
		if (sscanf(line, "%15s %63s %lf", verb, addr, &secs) < 2 || inet_pton(AF_INET, addr, &a) != 1) {
			printf("error bad command\n");
			continue;
		}
		if (strcmp(verb, "has") == 0) {
			for (i = 0; i < n; i++)
				printf("has %d %d\n", i, node_has(&nodes[i], a.s_addr) == 1);
			printf("end\n");
		} else if (strcmp(verb, "wait") == 0 || strcmp(verb, "gone") == 0) {
			cmd_wait(nodes, n, a.s_addr, secs, verb[0] == 'g', poll_ms);
		} else {
			printf("error bad command\n");
		}
	}
	for (i = 0; i < n; i++) {
		close(nodes[i].fd);
		free(nodes[i].buf);
	}
	free(nodes);
	return 0;
}
