/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * namesrv: the end-to-end tests' name server and client.
 *
 *   namesrv serve --name NAME --port PORT [--port PORT ...] [--timeout SEC]
 *                 [--ready FILE] [--daemon]
 *       Serves TCP and UDP on every PORT (all addresses).  A UDP datagram is
 *       answered with one line "NAME PEER-IP"; a TCP connection gets that
 *       line for every line it sends, so a held connection can exchange data
 *       later.  Exits after --timeout seconds (default 60) or on SIGTERM.
 *       FILE is created once every socket listens.  With --daemon, the
 *       command returns (status 0) once every socket listens, and the
 *       server goes on in the background, still bounded by --timeout.
 *
 *   namesrv client --addr IP --port PORT [--udp] [--count N]
 *                  [--timeout-ms MS] [--source IP] [--max-fail K]
 *       N attempts (default 1), each a new connection (or UDP socket) with
 *       its own deadline (default 1000 ms).  Prints one line per attempt:
 *       "ok NAME PEER-IP" (what the server saw), "refused", "timeout",
 *       "unreach", "reset", "eof" or "error ERRNO-TEXT".  With --max-fail,
 *       stops after K failed attempts (fewer lines then).
 *
 *   namesrv hold --addr IP --port PORT --wait-file FILE [--timeout SEC]
 *                [--timeout-ms MS]
 *       Opens one TCP connection, exchanges one line and prints the reply,
 *       waits (at most --timeout s, default 30) until FILE exists, exchanges
 *       a second line on the same connection and prints that reply.
 *
 * Exit status: 0 when the work was done (the per-attempt outcome is in the
 * output), 1 on a failure of the program itself (hold: the connection broke),
 * 2 on bad usage.  Every wait is bounded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PORTS 8
#define MAX_CONNS 256
#define LINE_MAX_LEN 256
#define MAX_COUNT 100000

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int remaining_ms(int64_t deadline)
{
	int64_t left = deadline - now_ms();

	if (left < 0)
		return 0;
	if (left > 1000000)
		return 1000000;
	return (int)left;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* An IPv4 or IPv6 address (port 0) into *ret. */
static int parse_addr(const char *s, struct sockaddr_storage *ret)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ret;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ret;

	memset(ret, 0, sizeof(*ret));
	if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

static socklen_t sa_len(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static void sa_set_port(struct sockaddr_storage *a, uint16_t port)
{
	if (a->ss_family == AF_INET6)
		((struct sockaddr_in6 *)a)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)a)->sin_port = htons(port);
}

/* The address of a peer as text (IPv6 without brackets). */
static void peer_str(const struct sockaddr_storage *a, char *buf, size_t len)
{
	if (a->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, buf, (socklen_t)len);
}

static const char *errno_word(int err)
{
	switch (err) {
	case ECONNREFUSED:
		return "refused";
	case ETIMEDOUT:
		return "timeout";
	case EHOSTUNREACH:
	case ENETUNREACH:
		return "unreach";
	case ECONNRESET:
	case EPIPE:
		return "reset";
	default:
		return NULL;
	}
}

/* Print the outcome of a failed attempt. */
static void print_failure(int err)
{
	const char *w = errno_word(err);

	if (w)
		printf("%s\n", w);
	else
		printf("error %s\n", strerror(err));
}

/* --- server --- */

struct conn {
	int fd;
	char peer[INET6_ADDRSTRLEN];
	char buf[LINE_MAX_LEN];
	size_t len;
};

/* A listening socket of one family (IPv6: IPv6 only, beside the IPv4 one). */
static int listen_on(int family, int type, uint16_t port)
{
	struct sockaddr_storage sa = { .ss_family = (sa_family_t)family };
	int one = 1;
	int fd;

	sa_set_port(&sa, port);
	fd = socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	if (family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		goto fail;
	if (type == SOCK_DGRAM &&
	    (family == AF_INET6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one))
				: setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one))) < 0)
		goto fail;
	if (bind(fd, (struct sockaddr *)&sa, sa_len(&sa)) < 0)
		goto fail;
	if (type == SOCK_STREAM && listen(fd, 128) < 0)
		goto fail;
	return fd;
fail:
	one = -errno;
	close(fd);
	return one;
}

/* Answer one datagram from the address it was sent to. */
static void serve_udp(int fd, const char *name)
{
	char buf[LINE_MAX_LEN], reply[LINE_MAX_LEN + INET6_ADDRSTRLEN + 2];
	char cbuf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
	struct sockaddr_storage peer;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = {
		.msg_name = &peer, .msg_namelen = sizeof(peer),
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct in_pktinfo *pi = NULL;
	struct in6_pktinfo *pi6 = NULL;
	struct cmsghdr *c;
	char pstr[INET6_ADDRSTRLEN];
	socklen_t plen;
	int n;

	if (recvmsg(fd, &mh, 0) < 0)
		return;
	plen = mh.msg_namelen;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
			pi = (struct in_pktinfo *)CMSG_DATA(c);
		if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO)
			pi6 = (struct in6_pktinfo *)CMSG_DATA(c);
	}
	peer_str(&peer, pstr, sizeof(pstr));
	n = snprintf(reply, sizeof(reply), "%s %s\n", name, pstr);

	iov.iov_base = reply;
	iov.iov_len = (size_t)n;
	mh.msg_namelen = plen;
	if (pi6) {
		/* Answer from the address it was sent to (the service's, after
		 * conntrack's reverse NAT). */
		struct in6_pktinfo out = { .ipi6_addr = pi6->ipi6_addr };

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_controllen = CMSG_SPACE(sizeof(out));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = IPPROTO_IPV6;
		c->cmsg_type = IPV6_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(out));
		memcpy(CMSG_DATA(c), &out, sizeof(out));
	} else if (pi) {
		struct in_pktinfo out = { .ipi_spec_dst = pi->ipi_addr };

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(out));
		memcpy(CMSG_DATA(c), &out, sizeof(out));
	} else {
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
	}
	(void)sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	c->len = 0;
}

/* Read what is there; answer every complete line; false when closed. */
static bool serve_tcp(struct conn *c, const char *name)
{
	char reply[LINE_MAX_LEN + INET6_ADDRSTRLEN + 2];
	ssize_t n;
	size_t i, start;
	int len;

	n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return false;
	if (n < 0)
		return true;
	c->len += (size_t)n;
	start = 0;
	for (i = 0; i < c->len; i++) {
		if (c->buf[i] != '\n')
			continue;
		len = snprintf(reply, sizeof(reply), "%s %s\n", name, c->peer);
		/* A line is tiny; a full socket buffer means a broken peer. */
		if (write(c->fd, reply, (size_t)len) != len)
			return false;
		start = i + 1;
	}
	memmove(c->buf, c->buf + start, c->len - start);
	c->len -= start;
	/* A line longer than the buffer: not our protocol. */
	return c->len < sizeof(c->buf);
}

static int cmd_serve(const char *name, const uint16_t *ports, size_t n_ports, unsigned timeout,
		     const char *ready, bool daemon)
{
	struct pollfd pfd[4 * MAX_PORTS + MAX_CONNS];
	struct conn conns[MAX_CONNS];
	int lfd[4 * MAX_PORTS];
	size_t n_l = 0, i;
	int64_t deadline = now_ms() + (int64_t)timeout * 1000;
	struct sigaction sa = { .sa_handler = on_signal };
	int r = 0;

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	for (i = 0; i < MAX_CONNS; i++)
		conns[i].fd = -1;
	/* TCP and UDP of each family: even indexes TCP, odd ones UDP.  A
	 * namespace without IPv6 serves IPv4 only. */
	for (i = 0; i < 2 * n_ports; i++) {
		int fam = i < n_ports ? AF_INET : AF_INET6;
		uint16_t port = ports[i % n_ports];
		int t = listen_on(fam, SOCK_STREAM, port);
		int u = t >= 0 ? listen_on(fam, SOCK_DGRAM, port) : t;

		if (fam == AF_INET6 && (t == -EAFNOSUPPORT || u == -EAFNOSUPPORT ||
					t == -EADDRNOTAVAIL || u == -EADDRNOTAVAIL)) {
			if (t >= 0)
				close(t);
			continue;
		}
		if (t < 0 || u < 0) {
			fprintf(stderr, "namesrv %s: cannot listen on port %u: %s\n", name, port,
				strerror(-(t < 0 ? t : u)));
			if (t >= 0)
				close(t);
			r = 1;
			goto out;
		}
		lfd[n_l++] = t;
		lfd[n_l++] = u;
	}
	if (ready) {
		int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0) {
			fprintf(stderr, "namesrv %s: cannot create '%s': %m\n", name, ready);
			r = 1;
			goto out;
		}
		close(fd);
	}
	if (daemon) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("namesrv: fork");
			r = 1;
			goto out;
		}
		if (pid > 0) {
			/* The parent's copies; the child serves. */
			for (i = 0; i < n_l; i++)
				close(lfd[i]);
			return 0;
		}
		setsid();
	}

	while (!stop_requested) {
		size_t np = 0;
		int left = remaining_ms(deadline), n;

		if (left == 0)
			break;
		for (i = 0; i < n_l; i++)
			pfd[np++] = (struct pollfd){ .fd = lfd[i], .events = POLLIN };
		for (i = 0; i < MAX_CONNS; i++)
			pfd[np++] = (struct pollfd){ .fd = conns[i].fd, .events = POLLIN };
		n = poll(pfd, np, left);
		if (n < 0 && errno != EINTR) {
			perror("namesrv: poll");
			r = 1;
			break;
		}
		if (n <= 0)
			continue;
		for (i = 0; i < n_l; i++) {
			struct sockaddr_storage peer;
			socklen_t pl = sizeof(peer);
			size_t k;
			int fd;

			if (!(pfd[i].revents & POLLIN))
				continue;
			if (i % 2) {
				serve_udp(lfd[i], name);
				continue;
			}
			fd = accept4(lfd[i], (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (fd < 0)
				continue;
			for (k = 0; k < MAX_CONNS && conns[k].fd >= 0; k++)
				;
			if (k == MAX_CONNS) {
				close(fd);
				continue;
			}
			conns[k].fd = fd;
			conns[k].len = 0;
			peer_str(&peer, conns[k].peer, sizeof(conns[k].peer));
		}
		for (i = 0; i < MAX_CONNS; i++) {
			short ev = pfd[n_l + i].revents;

			if (conns[i].fd < 0 || !ev)
				continue;
			if (!serve_tcp(&conns[i], name))
				conn_close(&conns[i]);
		}
	}
out:
	for (i = 0; i < MAX_CONNS; i++)
		if (conns[i].fd >= 0)
			close(conns[i].fd);
	for (i = 0; i < n_l; i++)
		close(lfd[i]);
	return r;
}

/* --- client --- */

/* Connect with a deadline: the socket fd, or -errno (-ETIMEDOUT at the deadline). */
static int connect_to(int type, const struct sockaddr_storage *dst,
		      const struct sockaddr_storage *src, int64_t deadline)
{
	int fd, err = 0;
	socklen_t el = sizeof(err);
	struct pollfd p;

	fd = socket(dst->ss_family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (src && bind(fd, (const struct sockaddr *)src, sa_len(src)) < 0)
		goto fail;
	if (connect(fd, (const struct sockaddr *)dst, sa_len(dst)) == 0)
		return fd;
	if (errno != EINPROGRESS)
		goto fail;
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	for (;;) {
		int n = poll(&p, 1, remaining_ms(deadline));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0) {
			close(fd);
			return -ETIMEDOUT;
		}
		break;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		goto fail;
	if (err) {
		close(fd);
		return -err;
	}
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

/*
 * Send one line and read one reply line into buf (NUL-terminated, without
 * the newline).  0, -ETIMEDOUT, -ENODATA on EOF, or -errno.
 */
static int exchange(int fd, bool udp, int64_t deadline, char *buf, size_t size)
{
	size_t len = 0;

	/* A locally generated datagram that netfilter REJECTs fails with
	 * EPERM, and the ICMP error REJECT sent follows on the socket: wait
	 * for it, as a DROP gives no such error and ends in a timeout. */
	if (send(fd, "?\n", 2, MSG_NOSIGNAL) != 2 && !(udp && errno == EPERM))
		return -errno;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		char *nl;
		int k = poll(&p, 1, remaining_ms(deadline));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -ETIMEDOUT;
		n = recv(fd, buf + len, size - 1 - len, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		len += (size_t)n;
		buf[len] = '\0';
		nl = strchr(buf, '\n');
		if (nl) {
			*nl = '\0';
			return 0;
		}
		if (udp || len == size - 1)
			return -EPROTO;
	}
}

static void print_exchange(int r, const char *reply)
{
	if (r == 0)
		printf("ok %s\n", reply);
	else if (r == -ENODATA)
		printf("eof\n");
	else
		print_failure(-r);
}

static int cmd_client(const struct sockaddr_storage *dst, const struct sockaddr_storage *src,
		      bool udp,
		      unsigned long count, unsigned timeout_ms, unsigned long max_fail)
{
	char reply[LINE_MAX_LEN];
	unsigned long i, failed = 0;

	for (i = 0; i < count && (!max_fail || failed < max_fail); i++) {
		int64_t deadline = now_ms() + timeout_ms;
		int fd, r;

		fd = connect_to(udp ? SOCK_DGRAM : SOCK_STREAM, dst, src, deadline);
		if (fd < 0) {
			print_failure(-fd);
			failed++;
			continue;
		}
		r = exchange(fd, udp, deadline, reply, sizeof(reply));
		close(fd);
		print_exchange(r, reply);
		if (r < 0)
			failed++;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}

static int cmd_hold(const struct sockaddr_storage *dst, const char *wait_file, unsigned timeout,
		    unsigned timeout_ms)
{
	char reply[LINE_MAX_LEN];
	int64_t deadline = now_ms() + (int64_t)timeout * 1000;
	struct stat st;
	int fd, r;

	fd = connect_to(SOCK_STREAM, dst, NULL, now_ms() + timeout_ms);
	if (fd < 0) {
		print_failure(-fd);
		return 1;
	}
	r = exchange(fd, false, now_ms() + timeout_ms, reply, sizeof(reply));
	print_exchange(r, reply);
	fflush(stdout);
	if (r < 0)
		goto out;
	while (stat(wait_file, &st) < 0) {
		if (remaining_ms(deadline) == 0) {
			printf("error wait-file never appeared\n");
			r = -ETIMEDOUT;
			goto out;
		}
		usleep(20000);
	}
	r = exchange(fd, false, now_ms() + timeout_ms, reply, sizeof(reply));
	print_exchange(r, reply);
out:
	close(fd);
	fflush(stdout);
	return r < 0 ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: namesrv serve --name NAME --port PORT [--port PORT...] [--timeout SEC] [--ready FILE]\n"
		"                     [--daemon]\n"
		"       namesrv client --addr IP --port PORT [--udp] [--count N] [--timeout-ms MS]\n"
		"                      [--source IP] [--max-fail K]\n"
		"       namesrv hold --addr IP --port PORT --wait-file FILE [--timeout SEC] [--timeout-ms MS]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "port", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "ready", required_argument, NULL, 'r' },
		{ "addr", required_argument, NULL, 'a' },
		{ "source", required_argument, NULL, 's' },
		{ "udp", no_argument, NULL, 'u' },
		{ "count", required_argument, NULL, 'c' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "wait-file", required_argument, NULL, 'w' },
		{ "max-fail", required_argument, NULL, 'm' },
		{ "daemon", no_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd, *name = NULL, *ready = NULL, *wait_file = NULL;
	uint16_t ports[MAX_PORTS];
	size_t n_ports = 0;
	unsigned long timeout = 0, count = 1, timeout_ms = 1000, max_fail = 0, v;
	struct sockaddr_storage dst, src;
	bool have_addr = false, have_src = false, udp = false, daemon = false;
	int c;

	if (argc < 2) {
		usage();
		return 2;
	}
	/* Lines reach the output file as they happen, also when killed. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	cmd = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			name = optarg;
			if (strlen(name) > 64 || strpbrk(name, " \n")) {
				fprintf(stderr, "namesrv: --name: '%s' is not a short word\n", name);
				return 2;
			}
			break;
		case 'p':
			if (parse_uint(optarg, 65535, &v) < 0 || v == 0 || n_ports == MAX_PORTS) {
				fprintf(stderr, "namesrv: --port: bad or too many: '%s'\n", optarg);
				return 2;
			}
			ports[n_ports++] = (uint16_t)v;
			break;
		case 't':
			if (parse_uint(optarg, 3600, &timeout) < 0 || timeout == 0) {
				fprintf(stderr, "namesrv: --timeout: want 1..3600 seconds: '%s'\n", optarg);
				return 2;
			}
			break;
		case 'r':
			ready = optarg;
			break;
		case 'a':
			if (parse_addr(optarg, &dst) < 0) {
				fprintf(stderr, "namesrv: --addr: not an IP address: '%s'\n", optarg);
				return 2;
			}
			have_addr = true;
			break;
		case 's':
			if (parse_addr(optarg, &src) < 0) {
				fprintf(stderr, "namesrv: --source: not an IP address: '%s'\n", optarg);
				return 2;
			}
			have_src = true;
			break;
		case 'u':
			udp = true;
			break;
		case 'c':
			if (parse_uint(optarg, MAX_COUNT, &count) < 0 || count == 0) {
				fprintf(stderr, "namesrv: --count: want 1..%d: '%s'\n", MAX_COUNT, optarg);
				return 2;
			}
			break;
		case 'T':
			if (parse_uint(optarg, 60000, &timeout_ms) < 0 || timeout_ms == 0) {
				fprintf(stderr, "namesrv: --timeout-ms: want 1..60000: '%s'\n", optarg);
				return 2;
			}
			break;
		case 'w':
			wait_file = optarg;
			break;
		case 'd':
			daemon = true;
			break;
		case 'm':
			if (parse_uint(optarg, MAX_COUNT, &max_fail) < 0) {
				fprintf(stderr, "namesrv: --max-fail: want 0..%d: '%s'\n", MAX_COUNT, optarg);
				return 2;
			}
			break;
		default:
			usage();
			return 2;
		}
	}
	if (optind != argc) {
		usage();
		return 2;
	}

	if (!strcmp(cmd, "serve")) {
		if (!name || !n_ports) {
			fprintf(stderr, "namesrv serve: --name and --port are required\n");
			return 2;
		}
		return cmd_serve(name, ports, n_ports, timeout ? (unsigned)timeout : 60, ready,
				 daemon);
	}
	if (!strcmp(cmd, "client") || !strcmp(cmd, "hold")) {
		if (!have_addr || n_ports != 1) {
			fprintf(stderr, "namesrv %s: --addr and one --port are required\n", cmd);
			return 2;
		}
		if (have_src && src.ss_family != dst.ss_family) {
			fprintf(stderr, "namesrv %s: --source and --addr of different families\n", cmd);
			return 2;
		}
		sa_set_port(&dst, ports[0]);
		if (!strcmp(cmd, "client"))
			return cmd_client(&dst, have_src ? &src : NULL, udp, count,
					  (unsigned)timeout_ms, max_fail);
		if (!wait_file || udp) {
			fprintf(stderr, "namesrv hold: --wait-file is required, TCP only\n");
			return 2;
		}
		return cmd_hold(&dst, wait_file, timeout ? (unsigned)timeout : 30,
				(unsigned)timeout_ms);
	}
	usage();
	return 2;
}
