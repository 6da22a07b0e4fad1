/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/run.h"
#include "util.h"

/* The child's three pipes and what it wrote. */
struct child_io {
	int pin[2], pout[2], perr[2];
	const char *in; /* its stdin */
	size_t inlen, written;
	char *bufs[2]; /* its stdout and stderr */
	size_t lens[2], caps[2];
};

static void closefd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void child_io_done(struct child_io *io)
{
	for (int k = 0; k < 2; k++) {
		closefd(&io->pin[k]);
		closefd(&io->pout[k]);
		closefd(&io->perr[k]);
		free(io->bufs[k]);
	}
}

/* Fork and exec argv with the pipes as its stdin, stdout and stderr. */
static int spawn(struct child_io *io, const char *const argv[], pid_t *ret_pid)
{
	pid_t pid;

	if (pipe2(io->pin, O_CLOEXEC) < 0 || pipe2(io->pout, O_CLOEXEC) < 0 ||
	    pipe2(io->perr, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (dup2(io->pin[0], 0) < 0 || dup2(io->pout[1], 1) < 0 || dup2(io->perr[1], 2) < 0)
			_exit(127);
		execvp(argv[0], (char *const *)argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	closefd(&io->pin[0]);
	closefd(&io->pout[1]);
	closefd(&io->perr[1]);
	if (!io->in || !io->inlen)
		closefd(&io->pin[1]);
	else
		fcntl(io->pin[1], F_SETFL, O_NONBLOCK);
	*ret_pid = pid;
	return 0;
}

/* Read what stdout (k 0) or stderr (k 1) holds; closed at its end. */
static int read_output(struct child_io *io, int k)
{
	int *fd = k == 0 ? &io->pout[0] : &io->perr[0];
	ssize_t n;

	if (GROW(io->bufs[k], io->caps[k], io->lens[k] + 65536 + 1) < 0)
		return -ENOMEM;
	n = read(*fd, io->bufs[k] + io->lens[k], 65536);
	if (n > 0)
		io->lens[k] += (size_t)n;
	else if (n == 0 || errno != EINTR)
		closefd(fd);
	return 0;
}

/* Write what the pipe takes of stdin; closed once all is written or the
 * child stopped reading. */
static void write_input(struct child_io *io)
{
	ssize_t n = write(io->pin[1], io->in + io->written, io->inlen - io->written);

	if (n > 0)
		io->written += (size_t)n;
	if ((n < 0 && errno != EAGAIN && errno != EINTR) || io->written == io->inlen)
		closefd(&io->pin[1]);
}

/* Feed stdin and collect stdout and stderr until all three are closed. */
static int pump(struct child_io *io)
{
	while (io->pout[0] >= 0 || io->perr[0] >= 0 || io->pin[1] >= 0) {
		struct pollfd pfd[3] = {
			{ .fd = io->pout[0], .events = POLLIN },
			{ .fd = io->perr[0], .events = POLLIN },
			{ .fd = io->pin[1], .events = POLLOUT },
		};
		int r;

		if (poll(pfd, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int k = 0; k < 2; k++) {
			if ((k == 0 ? io->pout[0] : io->perr[0]) < 0 ||
			    !(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read_output(io, k);
			if (r < 0)
				return r;
		}
		if (io->pin[1] >= 0 && (pfd[2].revents & (POLLOUT | POLLERR | POLLHUP)))
			write_input(io);
	}
	return 0;
}

int backend_run(const char *const argv[], const char *in, size_t inlen, char **ret_out,
		char **ret_err, int *ret_status)
{
	_cleanup_(child_io_done) struct child_io io = {
		.pin = { -1, -1 },
		.pout = { -1, -1 },
		.perr = { -1, -1 },
		.in = in,
		.inlen = inlen,
	};
	/* A child that dies early must not kill us with SIGPIPE. */
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	int status = 0, r;
	pid_t pid;

	r = spawn(&io, argv, &pid);
	if (r < 0)
		return r;
	sigaction(SIGPIPE, &ign, &old);
	r = pump(&io);
	sigaction(SIGPIPE, &old, NULL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r < 0)
		return r;
	for (int k = 0; k < 2; k++) {
		if (GROW(io.bufs[k], io.caps[k], io.lens[k] + 1) < 0)
			return -ENOMEM;
		io.bufs[k][io.lens[k]] = '\0';
	}
	*ret_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (ret_out)
		*ret_out = TAKE_PTR(io.bufs[0]);
	if (ret_err)
		*ret_err = TAKE_PTR(io.bufs[1]);
	return 0;
}
