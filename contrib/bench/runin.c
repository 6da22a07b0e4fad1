// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Run one command, optionally inside a named network namespace, bounded in
 * time, and report its wall time and its own peak RSS.
 *
 * Usage: runin [-n NETNS] [-l LOCKFILE] [-t SECONDS] -o JSONFILE -- COMMAND [ARG...]
 *
 * -l gives COMMAND a private xtables lock: in a mount namespace of its own,
 * LOCKFILE is bind-mounted over /run/xtables.lock, so the measured writers
 * (which work on namespaces of their own) never wait for the host's
 * iptables users, nor they for us.
 *
 * stdin, stdout and stderr pass through to COMMAND.  JSONFILE receives one
 * line: {"seconds":..,"maxrss_kb":..,"user_s":..,"sys_s":..,"exit":..,
 * "signal":..,"timed_out":..}.  The exit status is COMMAND's (128+signal
 * when killed).
 *
 * Why not time it from the driver script: a child's ru_maxrss includes the
 * high-water mark of the process it was forked from (exec keeps it), so a
 * Python driver's own size would leak into every small figure.  runin is
 * small, so the figure is the command's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t timed_out;
static volatile pid_t child;

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
	if (child > 0)
		kill(child, SIGKILL);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int enter_netns(const char *name)
{
	char path[PATH_MAX];
	int fd, r = 0;

	if (strchr(name, '/') || snprintf(path, sizeof(path), "/run/netns/%s", name) >= (int)sizeof(path))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (setns(fd, CLONE_NEWNET) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int private_lock(const char *lockfile)
{
	static const char *global = "/run/xtables.lock";
	int fd;

	fd = open(lockfile, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	/* iptables creates it too; a bind mount needs an existing target. */
	fd = open(global, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(lockfile, global, NULL, MS_BIND, NULL) < 0)
		return -errno;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: runin [-n NETNS] [-l LOCKFILE] [-t SECONDS] -o JSONFILE -- COMMAND [ARG...]\n");
}

int main(int argc, char **argv)
{
	const char *netns = NULL, *out = NULL, *lockfile = NULL;
	struct sigaction sa = { .sa_handler = on_alarm };
	double seconds = 600, t0, t1;
	struct itimerval itv = { { 0, 0 }, { 0, 0 } };
	struct rusage ru;
	int opt, status = 0, r;
	pid_t pid;
	FILE *f;

	while ((opt = getopt(argc, argv, "+n:l:t:o:")) != -1) {
		switch (opt) {
		case 'n':
			netns = optarg;
			break;
		case 'l':
			lockfile = optarg;
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'o':
			out = optarg;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (!out || optind >= argc || seconds <= 0) {
		usage();
		return 2;
	}
	if (netns) {
		r = enter_netns(netns);
		if (r < 0) {
			fprintf(stderr, "runin: network namespace '%s': %s\n", netns, strerror(-r));
			return 2;
		}
	}
	if (lockfile) {
		r = private_lock(lockfile);
		if (r < 0) {
			fprintf(stderr, "runin: private xtables lock %s: %s\n", lockfile, strerror(-r));
			return 2;
		}
	}
	sigaction(SIGALRM, &sa, NULL);
	t0 = now();
	pid = fork();
	if (pid < 0) {
		perror("runin: fork");
		return 2;
	}
	if (pid == 0) {
		/* Dies with us: a driver that kills runin leaves no writer behind. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
			_exit(127);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "runin: %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	child = pid;
	itv.it_value.tv_sec = (time_t)seconds;
	itv.it_value.tv_usec = (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6);
	setitimer(ITIMER_REAL, &itv, NULL);
	while ((r = (int)wait4(pid, &status, 0, &ru)) < 0 && errno == EINTR)
		;
	t1 = now();
	memset(&itv, 0, sizeof(itv));
	setitimer(ITIMER_REAL, &itv, NULL);
	if (r < 0) {
		perror("runin: wait4");
		return 2;
	}
	f = fopen(out, "w");
	if (!f) {
		fprintf(stderr, "runin: %s: %s\n", out, strerror(errno));
		return 2;
	}
	fprintf(f, "{\"seconds\":%.6f,\"maxrss_kb\":%ld,\"user_s\":%.6f,\"sys_s\":%.6f,"
		   "\"exit\":%d,\"signal\":%d,\"timed_out\":%s}\n",
		t1 - t0, ru.ru_maxrss, (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6,
		WIFEXITED(status) ? WEXITSTATUS(status) : -1, WIFSIGNALED(status) ? WTERMSIG(status) : 0,
		timed_out ? "true" : "false");
	if (fclose(f) != 0)
		return 2;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
