/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sys/nslock.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* How often a contender looks again when the name is bound but refuses
 * connections (the holder between bind() and listen(), or just exiting). */
#define TAKE_TRIES 50
#define TAKE_PAUSE_NSEC (10 * 1000 * 1000)

static socklen_t lock_addr(struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* sun_path[0] = 0: the abstract namespace; the length ends the name. */
	memcpy(sa->sun_path + 1, NSLOCK_NAME, strlen(NSLOCK_NAME));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(NSLOCK_NAME));
}

int nslock_holder(struct nslock_holder *ret_holder)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa;
	socklen_t len = lock_addr(&sa), cl;
	struct ucred cred;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, len) < 0) {
		if (errno == ECONNREFUSED)
			return 0;
		/* A full backlog: held, by whom is not known. */
		if (errno == EAGAIN) {
			if (ret_holder)
				*ret_holder = (struct nslock_holder){ 0, (uid_t)-1 };
			return 1;
		}
		return -errno;
	}
	/* The listener's credentials, taken at its listen(). */
	cl = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		cred.pid = 0;
		cred.uid = (uid_t)-1;
	}
	if (ret_holder)
		*ret_holder = (struct nslock_holder){ cred.pid, cred.uid };
	return 1;
}

int nslock_take(int *ret_fd, struct nslock_holder *ret_holder)
{
	struct sockaddr_un sa;
	socklen_t len = lock_addr(&sa);
	struct nslock_holder holder = { 0, (uid_t)-1 };

	for (int i = 0; i < TAKE_TRIES; i++) {
		_cleanup_close_ int fd = -1;
		int r;

		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -errno;
		if (bind(fd, (struct sockaddr *)&sa, len) == 0) {
			if (listen(fd, 16) < 0)
				return -errno;
			*ret_fd = TAKE_FD(fd);
			return 0;
		}
		if (errno != EADDRINUSE)
			return -errno;
		r = nslock_holder(&holder);
		if (r < 0)
			return r;
		if (r > 0)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = TAKE_PAUSE_NSEC }, NULL);
	}
	if (ret_holder)
		*ret_holder = holder;
	return -EBUSY;
}

bool nslock_holder_is_peer(const struct nslock_holder *h)
{
	return h->uid != (uid_t)-1 && h->uid == geteuid();
}

int nslock_drain(int fd)
{
	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

		if (c >= 0) {
			close(c);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		return errno == EAGAIN ? 0 : -errno;
	}
}
