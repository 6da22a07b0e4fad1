/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Logging for main-level code.  The core, sources and backends do not log
 * above debug: they return codes and diagnostics.
 *
 * Every line goes to stderr in one write(2), in one of three formats:
 *   LOG_FORMAT_TEXT  klog's header and its InfoS key="value" pairs (the
 *                    daemon's default, as kube-proxy writes):
 *                    I1201 18:00:00.123456    4711 daemon.c:610] message k="v"
 *   LOG_FORMAT_JSON  component-base's JSON logger (--logging-format=json):
 *                    {"ts":1764612000123.456,"caller":"daemon/daemon.c:610",
 *                     "msg":"message","v":0,"k":"v"}
 *   LOG_FORMAT_PLAIN "error: message" (the one-shot modes' default).
 * When stderr is the journal's stream (JOURNAL_STREAM), the text formats
 * get an sd-daemon(3) "<N>" prefix so that journald keeps each line's
 * priority; JSON lines never do.
 *
 * Verbosity is klog's: a message of verbosity v (0 for errors, warnings
 * and plain info; 2 per-sync summaries; 4 details, log_debug) is written
 * when v <= the configured verbosity (-v N).
 */
#ifndef SVCNAT_SYS_LOG_H
#define SVCNAT_SYS_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum log_level {
	LOG_LEVEL_ERR = 3,
	LOG_LEVEL_WARNING = 4,
	LOG_LEVEL_INFO = 6,
	LOG_LEVEL_DEBUG = 7, /* info of verbosity LOG_V_DEBUG */
};

enum log_format {
	LOG_FORMAT_PLAIN,
	LOG_FORMAT_TEXT,
	LOG_FORMAT_JSON,
};

/* The verbosity of kube-proxy's per-sync summaries, and of its details. */
#define LOG_V_SYNC 2
#define LOG_V_DEBUG 4

enum log_kind { LOG_KV_STR, LOG_KV_INT, LOG_KV_UINT, LOG_KV_FLOAT, LOG_KV_DURATION, LOG_KV_BOOL };

/* One key/value pair of a structured message; values are borrowed. */
struct log_field {
	const char *key;
	enum log_kind kind;
	union {
		const char *s;      /* NULL prints as "<nil>" (text) or null (JSON) */
		long long i;
		unsigned long long u;
		double d;           /* LOG_KV_DURATION: seconds, printed as Go does */
		bool b;
	};
};

#define LOG_STR(k, v) ((struct log_field){ .key = (k), .kind = LOG_KV_STR, .s = (v) })
#define LOG_INT(k, v) ((struct log_field){ .key = (k), .kind = LOG_KV_INT, .i = (long long)(v) })
#define LOG_UINT(k, v) \
	((struct log_field){ .key = (k), .kind = LOG_KV_UINT, .u = (unsigned long long)(v) })
#define LOG_FLOAT(k, v) ((struct log_field){ .key = (k), .kind = LOG_KV_FLOAT, .d = (double)(v) })
#define LOG_DURATION(k, secs) \
	((struct log_field){ .key = (k), .kind = LOG_KV_DURATION, .d = (double)(secs) })
#define LOG_BOOL(k, v) ((struct log_field){ .key = (k), .kind = LOG_KV_BOOL, .b = (v) })

/*
 * Where and how to log.  format as above; verbosity klog's -v; min_level
 * the least severe level written at all (LOG_LEVEL_WARNING keeps a
 * one-shot mode quiet).  May be called again at any time.
 */
void log_setup(enum log_format format, int verbosity, int min_level);
/* log_setup in the current format: max_level the least severe level
 * written, LOG_LEVEL_DEBUG for the details too. */
void log_init(const char *ident, int max_level);

/*
 * klog's --log-file with --logtostderr=false: every line goes to fd (the
 * log takes it; -1 = back to standard error only), and to standard error
 * too when also_stderr (--alsologtostderr) or when it is an error (klog's
 * -stderrthreshold, default ERROR).
 */
void log_set_file(int fd, bool also_stderr);
/*
 * Opens path for log_set_file: O_APPEND, close-on-exec, created 0600; not
 * a directory, FIFO or other non-regular file.  The fd, or -errno
 * (-EISDIR, -EINVAL for a non-regular file, open(2)'s).
 */
int log_open_file(const char *path);
int log_get_verbosity(void);
enum log_format log_get_format(void);

/* Whether a message of this level and verbosity would be written. */
bool log_enabled(int level, int v);

/*
 * klog's --vmodule: "pattern=N,..." raises the verbosity of the source
 * files a pattern matches to N (never lowers it below -v).  A pattern is a
 * glob (fnmatch) over the file's name without ".c" ("sync", "kube*"), or,
 * when it holds a '/', over its path in the source tree from "src/"
 * ("src/daemon/sy*").  The first matching pattern counts; "=0" entries and
 * empty items are skipped, as klog's are.  log_vmodule_check: -EINVAL on
 * bad syntax (no '=', empty pattern, a level that is not a number >= 0),
 * -E2BIG past LOG_VMODULE_MAX patterns or a pattern over 63 bytes.
 * log_set_vmodule: the same, and on success replaces the setting (NULL or
 * "" clears it).
 */
#define LOG_VMODULE_MAX 32
int log_vmodule_check(const char *spec);
int log_set_vmodule(const char *spec);

/* log_enabled for a message from source file file (__FILE__). */
bool log_enabled_file(int level, int v, const char *file);

/*
 * Write one message; file and line are the caller's (__FILE__, __LINE__).
 * log_full formats printf-style (klog's Infof: the message unquoted in the
 * text format); log_fields takes a fixed message and n fields (klog's
 * InfoS/ErrorS: the message quoted), err an error text or NULL.
 */
void log_full(int level, int v, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void log_vfull(int level, int v, const char *file, int line, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));
void log_fields(int level, int v, const char *file, int line, const char *err, const char *msg,
		const struct log_field *f, size_t n);

/*
 * The line log_fields/log_full would write, formatted into out (for the
 * unit test and for anyone who needs it): now is seconds since the epoch,
 * pid the process's.  Returns the bytes written (truncated to size, as
 * snprintf; out is always terminated when size > 0).
 */
size_t log_format_line(char *out, size_t size, enum log_format format, int level, int v,
		       double now, int pid, const char *file, int line, const char *err,
		       const char *msg, bool quote_msg, const struct log_field *f, size_t n);

#define log_err(...) log_full(LOG_LEVEL_ERR, 0, __FILE__, __LINE__, __VA_ARGS__)
#define log_warn(...) log_full(LOG_LEVEL_WARNING, 0, __FILE__, __LINE__, __VA_ARGS__)
#define log_info(...) log_full(LOG_LEVEL_INFO, 0, __FILE__, __LINE__, __VA_ARGS__)
#define log_v(v, ...) log_full(LOG_LEVEL_INFO, (v), __FILE__, __LINE__, __VA_ARGS__)
#define log_debug(...) log_full(LOG_LEVEL_DEBUG, LOG_V_DEBUG, __FILE__, __LINE__, __VA_ARGS__)
#define log_msg(level, ...) \
	log_full((level), (level) >= LOG_LEVEL_DEBUG ? LOG_V_DEBUG : 0, __FILE__, __LINE__, \
		 __VA_ARGS__)

/* Structured messages: log_infos(2, "SyncProxyRules complete", LOG_DURATION("elapsed", s)). */
#define LOG_FIELDS_(...) \
	(const struct log_field[]){ __VA_ARGS__ }, \
		sizeof((const struct log_field[]){ __VA_ARGS__ }) / sizeof(struct log_field)
#define log_infos(v, msg, ...) \
	log_fields(LOG_LEVEL_INFO, (v), __FILE__, __LINE__, NULL, (msg), LOG_FIELDS_(__VA_ARGS__))
#define log_errors(err, msg, ...) \
	log_fields(LOG_LEVEL_ERR, 0, __FILE__, __LINE__, (err), (msg), LOG_FIELDS_(__VA_ARGS__))

#endif
