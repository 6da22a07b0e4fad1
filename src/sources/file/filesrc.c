/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "sources/file/filesrc.h"
#include "util.h"

struct filesrc {
	const char *path;
	struct merge *merge;
	int sid;                /* its merge source */
	struct file_source *fs; /* its files' last good content */
};

int filesrc_new(struct merge *m, const char *path, enum file_mode_check mode,
		struct diag_list *d, struct filesrc **ret)
{
	struct filesrc *f;
	int r;

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->path = path;
	f->merge = m;
	r = merge_source_register(m, path);
	if (r < 0) {
		if (r == -EEXIST)
			diag_add(d, DIAG_ERROR, path, NULL, NULL, "given twice with --config");
		free(f);
		return r;
	}
	f->sid = r;
	r = file_source_new(path, mode, &f->fs);
	if (r < 0) {
		free(f);
		return r;
	}
	*ret = f;
	return 0;
}

void filesrc_free(struct filesrc *f)
{
	if (!f)
		return;
	file_source_free(f->fs);
	free(f);
}

void filesrc_read_once(struct filesrc *f)
{
	file_source_read_once(f->fs);
}

int filesrc_load(struct filesrc *f, bool all, struct diag_list *d)
{
	if (all)
		file_source_reread_all(f->fs);
	return file_source_reload(f->fs, d);
}

int filesrc_commit(struct filesrc *f)
{
	struct file_delta fd = { 0 };
	bool all;
	int r;

	/* Only what changed (the objects of the files read again that
	 * differ, those of files gone), unless the engine has nothing of
	 * this source yet. */
	r = file_source_delta(f->fs, &fd, &all);
	if (r < 0)
		return r;
	r = merge_update(f->merge, f->sid, all ? MERGE_SET : MERGE_ADD, fd.put_services,
			 fd.n_put_services, fd.put_slices, fd.n_put_slices);
	if (r >= 0 && !all)
		r = merge_update(f->merge, f->sid, MERGE_REMOVE, fd.del_services, fd.n_del_services,
				 fd.del_slices, fd.n_del_slices);
	if (r >= 0)
		file_source_accept(f->fs, all);
	file_delta_done(&fd);
	return r;
}

int filesrc_read(struct filesrc *f, struct diag_list *d)
{
	int r, rejected;

	rejected = filesrc_load(f, false, d);
	if (rejected < 0)
		return rejected;
	r = filesrc_commit(f);
	return r < 0 ? r : rejected;
}

/* Its services go away: the engine forgets the source. */
static int filesrc_clear(struct filesrc *f)
{
	file_source_forget_handed(f->fs);
	return merge_update(f->merge, f->sid, MERGE_SET, NULL, 0, NULL, 0);
}

/* ---- the live source ---- */

struct filelive {
	struct source base; /* first */
	struct filesrc *f;  /* borrowed */
	struct metrics *m;
	bool stdin;         /* "-": read once, never again */
	bool ready;         /* read completely once */
};

static int live_load(struct source *s, bool all, struct diag_list *d)
{
	struct filelive *l = (struct filelive *)s;

	return filesrc_load(l->f, all, d);
}

static void live_count_reads(struct filelive *l, int r)
{
	const struct file_source_stats *fs = file_source_stats(l->f->fs);
	const char *path = l->f->path;
	char lbl[512];

	if (fs->files_read && metrics_label(lbl, sizeof(lbl), "source", path))
		metrics_counter_add(l->m, "svcnat_source_files_read_total", lbl,
				    (double)fs->files_read);
	if (r >= 0 && fs->objects_reused)
		source_emit(&l->base, SOURCE_DEBUG, 0,
			    "%zu of %zu file%s read (%zu objects), %zu of them unchanged and not "
			    "decoded again", fs->files_read, fs->files, fs->files == 1 ? "" : "s",
			    fs->objects_read, fs->objects_reused);
	else if (r >= 0)
		source_emit(&l->base, SOURCE_DEBUG, 0, "%zu of %zu file%s read (%zu objects)",
			    fs->files_read, fs->files, fs->files == 1 ? "" : "s", fs->objects_read);
}

static int live_commit(struct source *s, int r, struct diag_list *d)
{
	struct filelive *l = (struct filelive *)s;

	live_count_reads(l, r);
	if (r >= 0) {
		int c = filesrc_commit(l->f);

		if (c < 0)
			r = c;
	}
	if (r == -ENOENT && l->ready) {
		/* Deleted: its services go away. */
		int c = filesrc_clear(l->f);

		diag_list_done(d);
		diag_list_init(d);
		source_emit(s, SOURCE_INFO, 0, "not there (deleted?): its services are removed");
		return c < 0 ? c : -ENOENT;
	}
	if (r < 0 && l->ready) {
		source_emit(s, SOURCE_ERROR, 1, "rejected, keeping its last good content");
		return r;
	}
	if (r < 0) {
		source_emit(s, SOURCE_WARNING, 1, "not read yet: no rules are written until it is");
		return r;
	}
	if (r > 0)
		source_emit(s, SOURCE_ERROR, (double)r + (double)diag_count(d, DIAG_ERROR),
			    "%d file%s rejected, each keeping its last good content", r,
			    r == 1 ? "" : "s");
	else
		source_emit(s, SOURCE_DEBUG, (double)diag_count(d, DIAG_ERROR), NULL);
	if (file_source_complete(l->f->fs))
		l->ready = true;
	return r;
}

static bool live_reread(struct source *s)
{
	return !((struct filelive *)s)->stdin;
}

static bool live_ready(const struct source *s)
{
	return ((const struct filelive *)s)->ready;
}

static void live_free(struct source *s)
{
	free(s);
}

static const struct source_ops filelive_ops = {
	.kind = "file",
	.gates_health = true,
	.reread = live_reread,
	.load = live_load,
	.commit = live_commit,
	.ready = live_ready,
	.free = live_free,
};

int filesrc_live_new(struct filesrc *f, struct metrics *m, struct source **ret)
{
	struct filelive *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	source_init(&l->base, &filelive_ops, f->path);
	l->f = f;
	l->m = m;
	l->stdin = streq(f->path, "-");
	*ret = &l->base;
	return 0;
}
