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

int backend_run(const char *const argv[], const char *in, size_t inlen, char **ret_out,
		char **ret_err, int *ret_status)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	char *bufs[2] = { NULL, NULL };
	size_t lens[2] = { 0, 0 }, caps[2] = { 0, 0 };
	size_t written = 0;
	int status = 0, r = 0;
	pid_t pid;

	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
		r = -errno;
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	if (pid == 0) {
		if (dup2(pin[0], 0) < 0 || dup2(pout[1], 1) < 0 || dup2(perr[1], 2) < 0)
			_exit(127);
		execvp(argv[0], (char *const *)argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	pin[0] = pout[1] = perr[1] = -1;
	if (!in || !inlen) {
		close(pin[1]);
		pin[1] = -1;
	} else {
		fcntl(pin[1], F_SETFL, O_NONBLOCK);
	}
	{
		/* A child that dies early must not kill us with SIGPIPE. */
		struct sigaction ign = { .sa_handler = SIG_IGN }, old;

		sigaction(SIGPIPE, &ign, &old);
		while (pout[0] >= 0 || perr[0] >= 0 || pin[1] >= 0) {
			struct pollfd pfd[3] = {
				{ .fd = pout[0], .events = POLLIN },
				{ .fd = perr[0], .events = POLLIN },
				{ .fd = pin[1], .events = POLLOUT },
			};

			if (poll(pfd, 3, -1) < 0) {
				if (errno == EINTR)
					continue;
				r = -errno;
				break;
			}
			for (int k = 0; k < 2; k++) {
				int *fd = k == 0 ? &pout[0] : &perr[0];
				ssize_t n;

				if (*fd < 0 || !(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				if (GROW(bufs[k], caps[k], lens[k] + 65536 + 1) < 0) {
					r = -ENOMEM;
					break;
				}
				n = read(*fd, bufs[k] + lens[k], 65536);
				if (n > 0) {
					lens[k] += (size_t)n;
				} else if (n == 0 || errno != EINTR) {
					close(*fd);
					*fd = -1;
				}
			}
			if (r < 0)
				break;
			if (pin[1] >= 0 && (pfd[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
				ssize_t n = write(pin[1], in + written, inlen - written);

				if (n > 0)
					written += (size_t)n;
				if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == inlen) {
					close(pin[1]);
					pin[1] = -1;
				}
			}
		}
		sigaction(SIGPIPE, &old, NULL);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r < 0)
		goto out;
	for (int k = 0; k < 2; k++) {
		if (GROW(bufs[k], caps[k], lens[k] + 1) < 0) {
			r = -ENOMEM;
			goto out;
		}
		bufs[k][lens[k]] = '\0';
	}
	*ret_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (ret_out)
		*ret_out = TAKE_PTR(bufs[0]);
	if (ret_err)
		*ret_err = TAKE_PTR(bufs[1]);
out:
	for (int k = 0; k < 2; k++) {
		if (pin[k] >= 0)
			close(pin[k]);
		if (pout[k] >= 0)
			close(pout[k]);
		if (perr[k] >= 0)
			close(perr[k]);
	}
	free(bufs[0]);
	free(bufs[1]);
	return r;
}
