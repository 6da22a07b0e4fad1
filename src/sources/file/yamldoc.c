/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "sources/file/yamldoc.h"
#include "util.h"

static int fail(struct yamldoc_error *err, bool syntax, const yaml_mark_t *m, const char *fmt, ...)
	_printf_(4, 5);

static int fail(struct yamldoc_error *err, bool syntax, const yaml_mark_t *m, const char *fmt, ...)
{
	va_list ap;

	err->syntax = syntax;
	err->line = m ? (unsigned long)m->line + 1 : 0;
	err->column = m ? (unsigned long)m->column + 1 : 0;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int parser_fail(yaml_parser_t *p, struct yamldoc_error *err)
{
	if (p->error == YAML_MEMORY_ERROR)
		return -ENOMEM;
	return fail(err, true, &p->problem_mark, "%s", p->problem ? p->problem : "syntax error");
}

static void parser_deletep(yaml_parser_t *p)
{
	yaml_parser_delete(p);
}

/* The checks of yamldoc.h on the event stream, without building anything. */
static int check_events(const char *text, size_t len, struct yamldoc_error *err)
{
	_cleanup_(parser_deletep) yaml_parser_t p = { 0 };
	unsigned depth = 0, docs = 0;
	size_t nodes = 0;
	bool done = false;

	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (!done) {
		yaml_event_t ev;
		int r = 0;

		if (!yaml_parser_parse(&p, &ev))
			return parser_fail(&p, err);
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			docs++;
			break;
		case YAML_ALIAS_EVENT:
			r = fail(err, false, &ev.start_mark,
				 "an alias (*%.64s): svcnat does not expand YAML aliases",
				 (const char *)ev.data.alias.anchor);
			break;
		case YAML_SCALAR_EVENT:
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			/* A document after the first may be empty (a trailing
			 * "---" gives one whose root is an empty plain scalar). */
			if (docs > 1 &&
			    !(ev.type == YAML_SCALAR_EVENT && depth == 0 && !ev.data.scalar.length &&
			      ev.data.scalar.plain_implicit))
				r = fail(err, false, &ev.start_mark,
					 "a second YAML document: svcnat reads one document per file");
			else if (++nodes > YAMLDOC_MAX_NODES)
				r = fail(err, false, &ev.start_mark, "more than %u YAML nodes",
					 YAMLDOC_MAX_NODES);
			else if (ev.type != YAML_SCALAR_EVENT && ++depth > YAMLDOC_MAX_DEPTH)
				r = fail(err, false, &ev.start_mark,
					 "nested deeper than %u levels", YAMLDOC_MAX_DEPTH);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
		if (r < 0)
			return r;
	}
	return 0;
}

int yamldoc_load(const char *text, size_t len, yaml_document_t *ret, struct yamldoc_error *err)
{
	_cleanup_(parser_deletep) yaml_parser_t p = { 0 };
	const char *nul = memchr(text, '\0', len);
	int r;

	if (nul) {
		yaml_mark_t m = { .index = (size_t)(nul - text) };

		for (const char *c = text; c < nul; c++) {
			if (*c == '\n') {
				m.line++;
				m.column = 0;
			} else {
				m.column++;
			}
		}
		return fail(err, false, &m, "a NUL byte");
	}
	r = check_events(text, len, err);
	if (r < 0)
		return r;
	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, ret))
		return parser_fail(&p, err);
	return 0;
}
