/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sys/log.h"

static struct {
	const char *ident;
	int max_level;
	int tty; /* -1 = not checked yet */
} log_state = { "svcnat", LOG_LEVEL_INFO, -1 };

void log_init(const char *ident, int max_level)
{
	log_state.ident = ident;
	log_state.max_level = max_level;
	log_state.tty = isatty(STDERR_FILENO);
}

void log_set_max_level(int max_level)
{
	log_state.max_level = max_level;
}

int log_get_max_level(void)
{
	return log_state.max_level;
}

static const char *level_word(int level)
{
	switch (level) {
	case LOG_LEVEL_ERR:
		return "error";
	case LOG_LEVEL_WARNING:
		return "warning";
	case LOG_LEVEL_INFO:
		return "info";
	default:
		return "debug";
	}
}

void log_vmsg(int level, const char *fmt, va_list ap)
{
	char buf[2048];

	if (level > log_state.max_level)
		return;
	if (log_state.tty < 0)
		log_state.tty = isatty(STDERR_FILENO);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (log_state.tty) {
		struct timespec ts;
		struct tm tm;
		char tbuf[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld %s: %s: %s\n", tbuf, ts.tv_nsec / 1000000,
			log_state.ident, level_word(level), buf);
	} else {
		/* sd-daemon(3) priority prefix: journald stores the level,
		 * syslog-style collectors keep the line as it is. */
		fprintf(stderr, "<%d>%s: %s\n", level, level_word(level), buf);
	}
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}
