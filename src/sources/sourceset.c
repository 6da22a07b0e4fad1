/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "sources/sourceset.h"
#include "util.h"

struct sourceset {
	struct source **v;
	size_t n, cap;
	source_event_fn fn;
	void *userdata;
	double load_seconds, commit_seconds; /* since sourceset_take_times() */
};

void source_init(struct source *s, const struct source_ops *ops, const char *name)
{
	*s = (struct source){ .ops = ops, .name = name };
	diag_list_init(&s->load_diags);
}

static enum source_severity severity_of(enum diag_level l)
{
	return l == DIAG_ERROR ? SOURCE_ERROR : l == DIAG_WARNING ? SOURCE_WARNING : SOURCE_INFO;
}

void source_emit_diag(const struct source *s, const struct diag *d, double errors)
{
	struct source_event ev = {
		.severity = d ? severity_of(d->level) : SOURCE_DEBUG,
		.diag = d,
		.errors = errors,
	};

	if (s->fn)
		s->fn(s, &ev, s->userdata);
}

void source_emit(const struct source *s, enum source_severity sev, double errors,
		 const char *fmt, ...)
{
	struct source_event ev = { .severity = sev, .errors = errors };
	_cleanup_free_ char *msg = NULL;
	struct diag d;
	va_list ap;
	int r = 0;

	if (!s->fn)
		return;
	if (fmt) {
		va_start(ap, fmt);
		r = vasprintf(&msg, fmt, ap);
		va_end(ap);
		if (r < 0)
			msg = NULL;
		d = (struct diag){
			.level = sev == SOURCE_ERROR ? DIAG_ERROR
				 : sev == SOURCE_WARNING ? DIAG_WARNING : DIAG_NOTE,
			.source = (char *)s->name,
			.msg = msg ? msg : (char *)"(out of memory formatting the message)",
		};
		ev.diag = &d;
	}
	s->fn(s, &ev, s->userdata);
}

int sourceset_new(source_event_fn fn, void *userdata, struct sourceset **ret)
{
	struct sourceset *ss = calloc(1, sizeof(*ss));

	if (!ss)
		return -ENOMEM;
	ss->fn = fn;
	ss->userdata = userdata;
	*ret = ss;
	return 0;
}

static void source_free(struct source *s)
{
	diag_list_done(&s->load_diags);
	s->ops->free(s);
}

void sourceset_free(struct sourceset *ss)
{
	if (!ss)
		return;
	for (size_t i = 0; i < ss->n; i++)
		source_free(ss->v[i]);
	free(ss->v);
	free(ss);
}

int sourceset_add(struct sourceset *ss, struct source *s)
{
	if (GROW(ss->v, ss->cap, ss->n + 1) < 0) {
		source_free(s);
		return -ENOMEM;
	}
	s->fn = ss->fn;
	s->userdata = ss->userdata;
	ss->v[ss->n++] = s;
	return 0;
}

size_t sourceset_size(const struct sourceset *ss)
{
	return ss->n;
}

struct source *sourceset_get(const struct sourceset *ss, size_t i)
{
	return i < ss->n ? ss->v[i] : NULL;
}

int sourceset_start(struct sourceset *ss)
{
	int first = 0;

	for (size_t i = 0; i < ss->n; i++) {
		int r = ss->v[i]->ops->start ? ss->v[i]->ops->start(ss->v[i]) : 0;

		if (r < 0 && first == 0)
			first = r;
	}
	return first;
}

/* The load's diags as events, in order; the list is emptied. */
static void send_diags(struct source *s)
{
	struct diag_list *d = &s->load_diags;

	for (size_t i = 0; i < d->n; i++)
		source_emit_diag(s, &d->items[i], 0);
	if (d->dropped)
		source_emit(s, SOURCE_WARNING, 0, "%zu more diagnostics not shown", d->dropped);
	diag_list_done(d);
	diag_list_init(d);
}

static int commit_one(struct sourceset *ss, struct source *s)
{
	double t0 = monotonic_seconds();
	int r = s->ops->commit(s, s->load_result, &s->load_diags);

	ss->commit_seconds += monotonic_seconds() - t0;
	send_diags(s);
	return r;
}

static void load_one(struct source *s, double *seconds)
{
	double t0 = monotonic_seconds();

	s->load_result = s->ops->load(s, s->reread_all, &s->load_diags);
	*seconds += monotonic_seconds() - t0;
}

int sourceset_read(struct sourceset *ss, struct source *s)
{
	if (!s->ops->load)
		return 0;
	load_one(s, &ss->load_seconds);
	return commit_one(ss, s);
}

void sourceset_mark_dirty(struct source *s)
{
	s->dirty = true;
}

void sourceset_reread(struct sourceset *ss)
{
	for (size_t i = 0; i < ss->n; i++) {
		struct source *s = ss->v[i];

		if (s->ops->reread && s->ops->reread(s) && s->ops->load)
			s->dirty = s->reread_all = true;
	}
}

bool sourceset_dirty(const struct sourceset *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		if (ss->v[i]->dirty)
			return true;
	return false;
}

size_t sourceset_loads_begin(struct sourceset *ss)
{
	size_t n = 0;

	for (size_t i = 0; i < ss->n; i++) {
		struct source *s = ss->v[i];

		s->loading = s->dirty && s->ops->load;
		s->dirty = false;
		n += s->loading;
	}
	return n;
}

void sourceset_loads_run(struct sourceset *ss)
{
	for (size_t i = 0; i < ss->n; i++) {
		struct source *s = ss->v[i];

		if (s->loading)
			load_one(s, &ss->load_seconds);
	}
}

void sourceset_loads_finish(struct sourceset *ss)
{
	for (size_t i = 0; i < ss->n; i++) {
		struct source *s = ss->v[i];

		if (!s->loading)
			continue;
		s->loading = false;
		s->reread_all = false;
		(void)commit_one(ss, s);
	}
}

bool sourceset_ready(const struct sourceset *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		if (!ss->v[i]->ops->ready(ss->v[i]))
			return false;
	return true;
}

const struct source *sourceset_waiting(const struct sourceset *ss, size_t *ret_n)
{
	const struct source *first = NULL;
	size_t n = 0;

	for (size_t i = 0; i < ss->n; i++) {
		const struct source *s = ss->v[i];

		if (!s->ops->gates_health || s->ops->ready(s))
			continue;
		if (!first)
			first = s;
		n++;
	}
	if (ret_n)
		*ret_n = n;
	return first;
}

void sourceset_health(const struct sourceset *ss, char *buf, size_t len)
{
	size_t used = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < ss->n; i++) {
		const struct source *s = ss->v[i];
		size_t w;

		if (!s->ops->health || used + 3 >= len)
			continue;
		w = s->ops->health(s, buf + used + (used ? 2 : 0), len - used - (used ? 2 : 0));
		if (!w) {
			buf[used] = '\0';
			continue;
		}
		if (used) {
			buf[used] = ',';
			buf[used + 1] = ' ';
			w += 2;
		}
		used += w;
		if (used >= len)
			used = len - 1;
		buf[used] = '\0';
	}
}

void sourceset_metrics(struct sourceset *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		if (ss->v[i]->ops->metrics)
			ss->v[i]->ops->metrics(ss->v[i]);
}

void sourceset_take_times(struct sourceset *ss, double *ret_load, double *ret_commit)
{
	*ret_load = ss->load_seconds;
	*ret_commit = ss->commit_seconds;
	ss->load_seconds = ss->commit_seconds = 0;
}
