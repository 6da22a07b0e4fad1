/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Framing of a stream of newline-separated records (the watch streams of
 * etcd's JSON gateway and of the API server).  Bytes are fed as the
 * transport delivers them, split anywhere; every complete non-blank line is
 * handed to a callback.  Pure: no I/O (tests/unit/test-net.c).
 */
#ifndef SVCNAT_SOURCES_NET_FRAMER_H
#define SVCNAT_SOURCES_NET_FRAMER_H

#include <stddef.h>

#define FRAMER_MAX_DEFAULT (256u << 20) /* bytes of a line when init is given 0 */

/*
 * A complete line (without its '\n'), len bytes, not NUL-terminated; valid
 * only during the call.  A negative return stops the feed and is returned.
 */
typedef int (*framer_line_fn)(const char *line, size_t len, void *userdata);

/* Embedded in its owner; framer_init() before use, framer_done() after. */
struct framer {
	char *buf; /* the partial line so far */
	size_t len;
	size_t cap;
	size_t max; /* bytes of one line */
};

/* An empty framer for lines of at most max bytes (0: FRAMER_MAX_DEFAULT). */
void framer_init(struct framer *f, size_t max);
/* Drop a partial line (a new connection starts a new stream). */
void framer_reset(struct framer *f);
/* Free the buffer; the framer is empty again, with the same max. */
void framer_done(struct framer *f);
/*
 * Feed n bytes.  Lines that are empty or only blanks (' ', '\t', '\r') are
 * skipped.  Returns 0, the first negative value fn returned (feeding stops
 * there), -EFBIG (a line longer than max) or -ENOMEM.
 */
int framer_feed(struct framer *f, const char *data, size_t n, framer_line_fn fn, void *userdata);

#endif
