/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Diagnostics: bad user input is data, not a log line.  Decoders, resolve
 * and the planner append records; main prints them, one line each:
 *
 *   FILE: OBJECT: FIELD: MESSAGE
 *   e.g. "a.json: default/web: spec.ports[1].port: 70000 is not a valid port"
 *
 * Any part may be empty and is then left out of the line.
 */
#ifndef SVCNAT_CORE_DIAG_H
#define SVCNAT_CORE_DIAG_H

#include <stddef.h>
#include <stdio.h>

enum diag_level {
	DIAG_ERROR,   /* object rejected (skipped) or file rejected */
	DIAG_WARNING, /* accepted, but something was ignored or overridden */
	DIAG_NOTE,    /* informational (e.g. IPv6 entry ignored in an IPv4 run) */
};

struct diag {
	enum diag_level level;
	char *source; /* file name or source name; may be NULL */
	char *object; /* "namespace/name" (or "Kind namespace/name"); may be NULL */
	char *field;  /* JSON path, "spec.ports[1].port"; may be NULL */
	char *msg;    /* the message; never NULL */
};

struct diag_list {
	struct diag *items;
	size_t n;
	size_t cap;
	size_t max;     /* 0 = unlimited; past it records are counted, not kept */
	size_t dropped; /* records not kept because of max */
};

void diag_list_init(struct diag_list *l);
void diag_list_done(struct diag_list *l);
/* Append a record; strings are copied.  Returns 0 or -ENOMEM. */
int diag_add(struct diag_list *l, enum diag_level level, const char *source,
	     const char *object, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* Move all records of src to the end of dst (src is left empty). */
int diag_list_move(struct diag_list *dst, struct diag_list *src);
/*
 * diag_list_move() for all records of src but those equal (level, source,
 * object, field, message) to one of dst's from index `from` on, which are
 * dropped: a second plan's records that the first one gave already.
 */
int diag_list_move_new(struct diag_list *dst, struct diag_list *src, size_t from);
/* Count records at level `level` or worse. */
size_t diag_count(const struct diag_list *l, enum diag_level level);
/* Format one record as its one-line text (no newline) into a new string. */
char *diag_format(const struct diag *d);
/* Call fn with each record's diag_format() line, in order (a record that
 * cannot be formatted, out of memory, is skipped). */
void diag_list_each_line(const struct diag_list *l, void (*fn)(const char *line, void *userdata),
			 void *userdata);
/* Print every record, one per line, prefixed "error: "/"warning: "/"note: ". */
void diag_list_print(const struct diag_list *l, FILE *f);

#endif
