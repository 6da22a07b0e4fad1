/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/progtime.h"
#include "util.h"

void progtime_init(struct progtime *pt, double start)
{
	*pt = (struct progtime){ .start = start };
}

static void marks_free(struct progtime_mark *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].ns);
		free(m[i].service);
	}
	free(m);
}

void progtime_done(struct progtime *pt)
{
	marks_free(pt->pending, pt->n_pending);
	marks_free(pt->carried, pt->n_carried);
	*pt = (struct progtime){ 0 };
}

/* n decimal digits at *s (advanced); -1 when not digits. */
static int digits(const char **s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if ((*s)[i] < '0' || (*s)[i] > '9')
			return -1;
		v = v * 10 + ((*s)[i] - '0');
	}
	*s += n;
	return v;
}

static bool expect(const char **s, char c)
{
	if (**s != c)
		return false;
	(*s)++;
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static long days_from_civil(int y, int m, int d)
{
	long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int month_days(int y, int m)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : days[m - 1];
}

int progtime_parse(const char *s, double *ret)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	double frac = 0, scale = 0.1, t;

	if (!s)
		return -EINVAL;
	y = digits(&s, 4);
	if (y < 1970 || !expect(&s, '-') || (mo = digits(&s, 2)) < 1 || mo > 12 ||
	    !expect(&s, '-') || (d = digits(&s, 2)) < 1 || d > month_days(y, mo) ||
	    !expect(&s, 'T') || (h = digits(&s, 2)) < 0 || h > 23 || !expect(&s, ':') ||
	    (mi = digits(&s, 2)) < 0 || mi > 59 || !expect(&s, ':') ||
	    (sec = digits(&s, 2)) < 0 || sec > 59)
		return -EINVAL;
	if (expect(&s, '.')) {
		/* Go reads any number of digits after the point. */
		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9'; s++, scale /= 10)
			frac += (*s - '0') * scale;
	}
	if (expect(&s, 'Z')) {
		sign = 0;
	} else if (*s == '+' || *s == '-') {
		sign = *s++ == '+' ? 1 : -1;
		if ((oh = digits(&s, 2)) < 0 || oh > 23 || !expect(&s, ':') ||
		    (om = digits(&s, 2)) < 0 || om > 59)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*s)
		return -EINVAL;
	t = (double)days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec + frac;
	/* +01:00 is an hour ahead of UTC: UTC is that much earlier. */
	t -= sign * (oh * 3600 + om * 60);
	if (t < 0)
		return -EINVAL;
	*ret = t;
	return 0;
}

static bool family_in(int families, uint8_t family)
{
	return families == AF_UNSPEC || families == family;
}

static int mark_add(struct progtime *pt, const struct epslice *e)
{
	struct progtime_mark *m;

	if (pt->n_pending + pt->n_carried >= PROGTIME_MAX) {
		pt->dropped++;
		return 0;
	}
	if (pt->n_pending == pt->cap_pending) {
		size_t cap = pt->cap_pending ? pt->cap_pending * 2 : 8;
		struct progtime_mark *n = realloc(pt->pending, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		pt->pending = n;
		pt->cap_pending = cap;
	}
	m = &pt->pending[pt->n_pending];
	*m = (struct progtime_mark){ .t = e->trigger_time, .family = e->family };
	m->ns = strdup(e->ns);
	m->service = strdup(e->service_name ? e->service_name : "");
	if (!m->ns || !m->service) {
		free(m->ns);
		free(m->service);
		return -ENOMEM;
	}
	pt->n_pending++;
	return 0;
}

/* kube-proxy deletes the service's pending times when one of its slices
 * goes (the annotation of a deletion says nothing about the change). */
static void marks_forget(struct progtime *pt, const struct epslice *e)
{
	const char *svc = e->service_name ? e->service_name : "";
	size_t i, j = 0;

	for (i = 0; i < pt->n_pending; i++) {
		struct progtime_mark *m = &pt->pending[i];

		if (m->family == e->family && streq(m->ns, e->ns) && streq(m->service, svc)) {
			free(m->ns);
			free(m->service);
			continue;
		}
		pt->pending[j++] = *m;
	}
	pt->n_pending = j;
}

static int key_cmp(const struct epslice *a, const struct epslice *b)
{
	int c = strcmp(a->ns, b->ns);

	return c ? c : strcmp(a->name, b->name);
}

static int note_one(struct progtime *pt, const struct epslice *e, int families)
{
	if (!family_in(families, e->family) || e->trigger_time <= pt->start)
		return 0;
	return mark_add(pt, e);
}

int progtime_note(struct progtime *pt, const struct merge_snapshot *old,
		  const struct merge_snapshot *new, int families)
{
	size_t i = 0, j = 0, no = old ? old->n_slices : 0, nn = new->n_slices;
	int r = 0;

	/* Both arrays are sorted by (ns, name): a merge walk. */
	while (r >= 0 && (i < no || j < nn)) {
		int c = i == no ? 1 : j == nn ? -1 : key_cmp(old->slices[i], new->slices[j]);

		if (c < 0) {
			if (family_in(families, old->slices[i]->family))
				marks_forget(pt, old->slices[i]);
			i++;
		} else if (c > 0) {
			r = note_one(pt, new->slices[j++], families);
		} else {
			if (old->slices[i] != new->slices[j])
				r = note_one(pt, new->slices[j], families);
			i++;
			j++;
		}
	}
	return r;
}

void progtime_sync_start(struct progtime *pt)
{
	struct progtime_mark *n;

	if (!pt->n_pending)
		return;
	if (!pt->n_carried) {
		free(pt->carried);
		pt->carried = TAKE_PTR(pt->pending);
		pt->n_carried = pt->n_pending;
		pt->n_pending = pt->cap_pending = 0;
		return;
	}
	/* After a failed sync: the new times join those still carried. */
	n = realloc(pt->carried, (pt->n_carried + pt->n_pending) * sizeof(*n));
	if (!n)
		return; /* they stay pending: the next sync takes them */
	memcpy(n + pt->n_carried, pt->pending, pt->n_pending * sizeof(*n));
	pt->carried = n;
	pt->n_carried += pt->n_pending;
	free(pt->pending);
	pt->pending = NULL;
	pt->n_pending = pt->cap_pending = 0;
}

size_t progtime_sync_done(struct progtime *pt, bool ok, double now, progtime_observe_fn observe,
			  void *userdata)
{
	size_t n = pt->n_carried;

	if (!ok)
		return 0;
	for (size_t i = 0; i < n; i++)
		observe(pt->carried[i].family, now - pt->carried[i].t, userdata);
	marks_free(pt->carried, n);
	pt->carried = NULL;
	pt->n_carried = 0;
	return n;
}
