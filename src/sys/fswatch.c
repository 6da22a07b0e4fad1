/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/fswatch.h"
#include "util.h"

/* One mask for every watch: inotify_add_watch() on an inode watched
 * already replaces its mask, and watches are shared between entries. */
#define WATCH_MASK                                                             \
	(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE |  \
	 IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

struct wentry {
	char *path;
	char *dir;      /* parent directory */
	char *base;     /* name within dir */
	void *tag;
	int parent_wd;
	int self_wd;    /* the path itself (followed if a symlink), -1 if none */
	bool self_is_dir;
	bool dirty;
};

struct fswatch {
	struct loop *loop;
	int fd;
	fswatch_fn fn;
	void *userdata;
	struct wentry *e;
	size_t n, cap;
};

static bool wd_in_use(const struct fswatch *w, int wd, const struct wentry *except)
{
	size_t i;

	for (i = 0; i < w->n; i++) {
		if (&w->e[i] == except)
			continue;
		if (w->e[i].parent_wd == wd || w->e[i].self_wd == wd)
			return true;
	}
	return false;
}

/*
 * (Re)attach the watch on the path itself: after a rename over it or a
 * re-creation the path names a new inode, which needs its own watch.
 */
static void refresh_self(struct fswatch *w, struct wentry *e)
{
	struct stat st;
	int wd = -1;

	if (stat(e->path, &st) == 0) {
		wd = inotify_add_watch(w->fd, e->path, WATCH_MASK);
		if (wd < 0)
			wd = -1;
	}
	if (e->self_wd >= 0 && e->self_wd != wd && !wd_in_use(w, e->self_wd, e))
		(void)inotify_rm_watch(w->fd, e->self_wd);
	e->self_wd = wd;
	e->self_is_dir = wd >= 0 && S_ISDIR(st.st_mode);
}

static bool is_json_name(const char *name)
{
	size_t n = strlen(name);

	return n > 5 && streq(name + n - 5, ".json");
}

/* A regular file being created: wait for its writer's close. */
static bool created_regular_file(const char *dir, const char *name)
{
	char p[PATH_MAX];
	struct stat st;

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p))
		return false;
	return lstat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static void handle_event(struct fswatch *w, const struct inotify_event *ev)
{
	const char *name = ev->len ? ev->name : "";
	size_t i;

	if (ev->mask & IN_Q_OVERFLOW) {
		for (i = 0; i < w->n; i++)
			w->e[i].dirty = true;
		return;
	}
	for (i = 0; i < w->n; i++) {
		struct wentry *e = &w->e[i];

		if (ev->wd == e->parent_wd && streq(name, e->base)) {
			if ((ev->mask & IN_CREATE) && !(ev->mask & IN_ISDIR) &&
			    created_regular_file(e->dir, name))
				continue;
			e->dirty = true;
		}
		if (ev->wd != e->self_wd)
			continue;
		if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
			e->dirty = true;
			continue;
		}
		if (!e->self_is_dir) {
			/* The file (or a symlink's target) itself. */
			if (ev->mask & (IN_CLOSE_WRITE | IN_ATTRIB))
				e->dirty = true;
			continue;
		}
		if (!*name) {
			if (ev->mask & IN_ATTRIB)
				e->dirty = true;
			continue;
		}
		if (!is_json_name(name))
			continue;
		if ((ev->mask & IN_CREATE) && created_regular_file(e->path, name))
			continue;
		e->dirty = true;
	}
}

static int on_inotify(struct loop *l, int fd, uint32_t events, void *userdata)
{
	struct fswatch *w = userdata;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	size_t i;

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		size_t off = 0;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			return -errno;
		}
		if (n == 0)
			break;
		while (off + sizeof(struct inotify_event) <= (size_t)n) {
			const struct inotify_event *ev = (const void *)(buf + off);

			if (off + sizeof(*ev) + ev->len > (size_t)n)
				break;
			handle_event(w, ev);
			off += sizeof(*ev) + ev->len;
		}
	}
	for (i = 0; i < w->n; i++) {
		struct wentry *e = &w->e[i];

		if (!e->dirty)
			continue;
		e->dirty = false;
		refresh_self(w, e);
		w->fn(w, e->path, e->tag, w->userdata);
	}
	return 0;
}

int fswatch_new(struct loop *l, fswatch_fn fn, void *userdata,
		      struct fswatch **ret)
{
	struct fswatch *w;
	int r;

	if (!fn)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->loop = l;
	w->fn = fn;
	w->userdata = userdata;
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0) {
		r = -errno;
		free(w);
		return r;
	}
	r = loop_add_io(l, w->fd, EPOLLIN, on_inotify, w);
	if (r < 0) {
		close(w->fd);
		free(w);
		return r;
	}
	*ret = w;
	return 0;
}

void fswatch_free(struct fswatch *w)
{
	size_t i;

	if (!w)
		return;
	loop_del_io(w->loop, w->fd);
	close(w->fd);
	for (i = 0; i < w->n; i++) {
		free(w->e[i].path);
		free(w->e[i].dir);
		free(w->e[i].base);
	}
	free(w->e);
	free(w);
}

static int split_path(const char *path, char **ret_dir, char **ret_base)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_free_ char *base = NULL;
	const char *slash;
	size_t len = strlen(path);

	/* "dir/" names the directory itself. */
	while (len > 1 && path[len - 1] == '/')
		len--;
	slash = memrchr(path, '/', len);
	if (!slash) {
		dir = strdup(".");
		base = strndup(path, len);
	} else {
		dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
		base = strndup(slash + 1, len - (size_t)(slash + 1 - path));
	}
	if (!dir || !base)
		return -ENOMEM;
	if (!*base || streq(base, ".") || streq(base, ".."))
		return -EINVAL;
	*ret_dir = TAKE_PTR(dir);
	*ret_base = TAKE_PTR(base);
	return 0;
}

int fswatch_add(struct fswatch *w, const char *path, void *tag)
{
	_cleanup_free_ char *p = NULL;
	_cleanup_free_ char *dir = NULL;
	_cleanup_free_ char *base = NULL;
	struct wentry *e;
	int r, wd;

	if (!path || !*path)
		return -EINVAL;
	p = strdup(path);
	if (!p)
		return -ENOMEM;
	r = split_path(path, &dir, &base);
	if (r < 0)
		return r;
	r = GROW(w->e, w->cap, w->n + 1);
	if (r < 0)
		return r;
	wd = inotify_add_watch(w->fd, dir, WATCH_MASK | IN_ONLYDIR);
	if (wd < 0)
		return -errno;
	e = &w->e[w->n++];
	*e = (struct wentry){
		.path = TAKE_PTR(p),
		.dir = TAKE_PTR(dir),
		.base = TAKE_PTR(base),
		.tag = tag,
		.parent_wd = wd,
		.self_wd = -1,
	};
	refresh_self(w, e);
	return 0;
}
