/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Logging for main-level code.  The core, sources and backends do not log
 * above debug: they return codes and diagnostics.
 *
 * To stderr: with a timestamp when stderr is a terminal; otherwise in the
 * form journald and syslog keep well ("<N>message", sd-daemon(3) prefixes).
 */
#ifndef SVCNAT_SYS_LOG_H
#define SVCNAT_SYS_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_LEVEL_ERR = 3,
	LOG_LEVEL_WARNING = 4,
	LOG_LEVEL_INFO = 6,
	LOG_LEVEL_DEBUG = 7,
};

void log_init(const char *ident, int max_level);
void log_set_max_level(int max_level);
int log_get_max_level(void);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(int level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#define log_err(...) log_msg(LOG_LEVEL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
