/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One interface for every live source (a --config path, etcd, the
 * Kubernetes API), as kube-proxy's ServiceHandler/EndpointSliceHandler with
 * one isInitialized() gate.  A source feeds the merge engine itself and
 * only marks it dirty; its owner (a sourceset, sources/sourceset.h) asks it
 * whether it was read once, reads it again, and writes its state into
 * /healthz and /metrics.
 *
 * A source never logs.  What it has to say goes out as events carrying a
 * diag record (source = the source's name) and a severity, to the
 * callback its sourceset set; the owner logs them.
 *
 * An implementation embeds struct source as its first member and gives it
 * a const struct source_ops.
 */
#ifndef SVCNAT_SOURCES_SOURCE_H
#define SVCNAT_SOURCES_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/diag.h"

/* How loudly the owner should say an event. */
enum source_severity {
	SOURCE_DEBUG,
	SOURCE_INFO,
	SOURCE_WARNING,
	SOURCE_ERROR,
};

struct source_event {
	enum source_severity severity;
	const struct diag *diag; /* what happened; NULL: nothing to say, only errors counted */
	double errors;           /* to add to svcnat_source_errors_total{source=name} */
};

struct source;

typedef void (*source_event_fn)(const struct source *s, const struct source_event *ev,
				void *userdata);

struct source_ops {
	const char *kind; /* "file", "etcd", "api" */
	/*
	 * Whether /healthz answers 503 and a warning repeats while the source
	 * was never read (a --config path: the operator's own input).  Every
	 * source holds the first kernel write back until it is read.
	 */
	bool gates_health;
	/* Begin following (the first list, the first read).  Optional; 0 or -errno. */
	int (*start)(struct source *s);
	/*
	 * SIGHUP: read everything again.  A network source starts its relist
	 * and returns false; true asks for a load (below) reading every file.
	 */
	bool (*reread)(struct source *s);
	/*
	 * Optional, for a source read off the loop thread: load() runs on the
	 * worker (the source is the worker's until commit() runs; all: every
	 * file, changed or not) and returns its result; commit() hands what was
	 * read to the merge engine on the loop thread, given load()'s result
	 * and diags (it may empty d; the sourceset then sends what is left as
	 * events).  commit() returns load()'s result, or what replaced it.
	 */
	int (*load)(struct source *s, bool all, struct diag_list *d);
	int (*commit)(struct source *s, int r, struct diag_list *d);
	/* Read completely once: the merged state holds what the source says. */
	bool (*ready)(const struct source *s);
	/* Optional: a JSON member ("\"etcd\": {...}") for /healthz into buf;
	 * the number of bytes written (0 for none). */
	size_t (*health)(const struct source *s, char *buf, size_t len);
	/* Optional: refresh the source's gauges before /metrics is written. */
	void (*metrics)(struct source *s);
	/* Free the implementation (after its sourceset is done with it). */
	void (*free)(struct source *s);
};

struct source {
	const struct source_ops *ops;
	const char *name; /* the implementation's: a path, "etcd", "api" */
	source_event_fn fn; /* set by the sourceset */
	void *userdata;
	/* The sourceset's bookkeeping (sources/sourceset.h). */
	bool dirty;      /* to be loaded at the next chance */
	bool reread_all; /* that load reads every file (SIGHUP) */
	bool loading;    /* the worker is loading it */
	int load_result; /* of load(), until commit() */
	struct diag_list load_diags;
};

/* Set up the embedded part; name is borrowed (it must outlive s). */
void source_init(struct source *s, const struct source_ops *ops, const char *name);

/*
 * Send an event: a diag record {source = s->name, msg} at the severity,
 * counting errors.  fmt NULL sends no record (only the count).  Without a
 * callback nothing happens.
 */
void source_emit(const struct source *s, enum source_severity sev, double errors,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Send a record made elsewhere (a decoder's), as is; its level gives the
 * severity (DIAG_ERROR -> SOURCE_ERROR, ...). */
void source_emit_diag(const struct source *s, const struct diag *d, double errors);

#endif
