/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/diag.h"
#include "util.h"

void diag_list_init(struct diag_list *l)
{
	memset(l, 0, sizeof(*l));
}

static void diag_done(struct diag *d)
{
	free(d->source);
	free(d->object);
	free(d->field);
	free(d->msg);
}

void diag_list_done(struct diag_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		diag_done(&l->items[i]);
	free(l->items);
	l->items = NULL;
	l->n = l->cap = l->dropped = 0;
}

static int dup_opt(const char *s, char **ret)
{
	*ret = NULL;
	if (!s || !*s)
		return 0;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

int diag_add(struct diag_list *l, enum diag_level level, const char *source,
	     const char *object, const char *field, const char *fmt, ...)
{
	struct diag d = { .level = level };
	va_list ap;
	int r;

	if (!l)
		return 0;
	if (l->max && l->n >= l->max) {
		l->dropped++;
		return 0;
	}
	if (GROW(l->items, l->cap, l->n + 1) < 0)
		return -ENOMEM;
	va_start(ap, fmt);
	r = vasprintf(&d.msg, fmt, ap);
	va_end(ap);
	if (r < 0) {
		d.msg = NULL;
		return -ENOMEM;
	}
	if (dup_opt(source, &d.source) < 0 || dup_opt(object, &d.object) < 0 ||
	    dup_opt(field, &d.field) < 0) {
		diag_done(&d);
		return -ENOMEM;
	}
	l->items[l->n++] = d;
	return 0;
}

int diag_list_move(struct diag_list *dst, struct diag_list *src)
{
	size_t i;

	if (GROW(dst->items, dst->cap, dst->n + src->n) < 0)
		return -ENOMEM;
	for (i = 0; i < src->n; i++) {
		if (dst->max && dst->n >= dst->max) {
			diag_done(&src->items[i]);
			dst->dropped++;
			continue;
		}
		dst->items[dst->n++] = src->items[i];
	}
	dst->dropped += src->dropped;
	src->n = 0;
	src->dropped = 0;
	return 0;
}

static int nstrcmp(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int diag_cmp(const void *x, const void *y)
{
	const struct diag *a = *(const struct diag *const *)x, *b = *(const struct diag *const *)y;
	int r = (int)a->level - (int)b->level;

	if (!r)
		r = nstrcmp(a->msg, b->msg);
	if (!r)
		r = nstrcmp(a->object, b->object);
	if (!r)
		r = nstrcmp(a->field, b->field);
	if (!r)
		r = nstrcmp(a->source, b->source);
	return r;
}

int diag_list_move_new(struct diag_list *dst, struct diag_list *src, size_t from)
{
	_cleanup_free_ const struct diag **seen = NULL;
	size_t n_seen = dst->n > from ? dst->n - from : 0, i, w = 0;

	if (n_seen) {
		seen = malloc(n_seen * sizeof(*seen));
		if (!seen)
			return -ENOMEM;
		for (i = 0; i < n_seen; i++)
			seen[i] = &dst->items[from + i];
		qsort(seen, n_seen, sizeof(*seen), diag_cmp);
	}
	for (i = 0; i < src->n; i++) {
		const struct diag *d = &src->items[i];

		if (n_seen && bsearch(&d, seen, n_seen, sizeof(*seen), diag_cmp))
			diag_done(&src->items[i]);
		else
			src->items[w++] = src->items[i];
	}
	src->n = w;
	return diag_list_move(dst, src);
}

size_t diag_count(const struct diag_list *l, enum diag_level level)
{
	size_t i, c = 0;

	for (i = 0; i < l->n; i++)
		if (l->items[i].level <= level)
			c++;
	return c;
}

char *diag_format(const struct diag *d)
{
	char *s = NULL;
	int r;

	r = asprintf(&s, "%s%s%s%s%s%s%s", d->source ? d->source : "", d->source ? ": " : "",
		     d->object ? d->object : "", d->object ? ": " : "", d->field ? d->field : "",
		     d->field ? ": " : "", d->msg);
	return r < 0 ? NULL : s;
}

void diag_list_each_line(const struct diag_list *l, void (*fn)(const char *line, void *userdata),
			 void *userdata)
{
	for (size_t i = 0; i < l->n; i++) {
		_cleanup_free_ char *line = diag_format(&l->items[i]);

		if (line)
			fn(line, userdata);
	}
}

static const char *level_prefix(enum diag_level level)
{
	switch (level) {
	case DIAG_ERROR:
		return "error";
	case DIAG_WARNING:
		return "warning";
	default:
		return "note";
	}
}

void diag_list_print(const struct diag_list *l, FILE *f)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		_cleanup_free_ char *s = diag_format(&l->items[i]);

		fprintf(f, "%s: %s\n", level_prefix(l->items[i].level), s ? s : l->items[i].msg);
	}
	if (l->dropped)
		fprintf(f, "note: %zu more messages not shown\n", l->dropped);
}
