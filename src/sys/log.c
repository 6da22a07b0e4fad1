/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * klog's text format (k8s.io/klog/v2, internal/buffer/buffer.go FormatHeader
 * and internal/serialize/keyvalues.go) and component-base's JSON logger
 * (k8s.io/component-base/logs/json/json.go, zap's JSON encoder).
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sys/log.h"

struct vmodule {
	char pattern[64];
	int v;
	bool full; /* holds a '/': matched against the path from "src/" */
};

static struct {
	enum log_format format;
	int verbosity;
	int min_level;  /* the least severe level written */
	int journal;    /* -1 = not checked yet */
	struct vmodule vmodule[LOG_VMODULE_MAX];
	size_t n_vmodule;
	int vmodule_max; /* the highest level any pattern gives */
	int file_fd;     /* --log-file, or -1 */
	bool file_also_stderr;
} log_state = { LOG_FORMAT_PLAIN, 0, LOG_LEVEL_INFO, -1, { { "", 0, false } }, 0, 0, -1, false };

/* A bounded line buffer: what does not fit is cut, never overrun. */
struct lbuf {
	char *p;
	size_t size, len; /* len may pass size: the length it would have */
};

static void put(struct lbuf *b, const char *s, size_t n)
{
	if (b->len < b->size) {
		size_t room = b->size - b->len;

		memcpy(b->p + b->len, s, n < room ? n : room);
	}
	b->len += n;
}

static void puts_(struct lbuf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void putc_(struct lbuf *b, char c)
{
	put(b, &c, 1);
}

static void __attribute__((format(printf, 2, 3))) putf(struct lbuf *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/*
 * The length of the valid UTF-8 sequence at s (at most n bytes) and its
 * code point, or 0 when it is not valid UTF-8 (overlong, a surrogate,
 * beyond U+10FFFF, cut short).
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *ret_cp)
{
	uint32_t cp, min;
	size_t len;

	if (s[0] < 0x80) {
		*ret_cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, cp = s[0] & 0x1f, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, cp = s[0] & 0x0f, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*ret_cp = cp;
	return len;
}

/*
 * Runes Go's unicode.IsPrint refuses that a log line may well meet: the C1
 * controls, format characters (soft hyphen, zero-width and bidi marks, the
 * BOM), the line and paragraph separators and private use.  Unassigned code
 * points are not tracked (they print as they are).
 */
static bool rune_unprintable(uint32_t r)
{
	return (r >= 0x80 && r <= 0x9f) || r == 0xad || r == 0x61c || (r >= 0x200b && r <= 0x200f) ||
	       (r >= 0x2028 && r <= 0x202e) || (r >= 0x2060 && r <= 0x206f) || r == 0xfeff ||
	       (r >= 0xfff9 && r <= 0xfffb) || (r >= 0xe000 && r <= 0xf8ff) || r >= 0xf0000 ||
	       r == 0xfffe || r == 0xffff;
}

/* s escaped as Go's strconv.Quote does, without the quotes. */
static void put_go_escaped(struct lbuf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;

	for (size_t i = 0; i < n;) {
		uint32_t r;
		size_t len = utf8_decode(s + i, n - i, &r);

		if (!len) {
			putf(b, "\\x%02x", s[i]);
			i++;
			continue;
		}
		if (len == 1) {
			switch (r) {
			case '"': puts_(b, "\\\""); break;
			case '\\': puts_(b, "\\\\"); break;
			case '\a': puts_(b, "\\a"); break;
			case '\b': puts_(b, "\\b"); break;
			case '\f': puts_(b, "\\f"); break;
			case '\n': puts_(b, "\\n"); break;
			case '\r': puts_(b, "\\r"); break;
			case '\t': puts_(b, "\\t"); break;
			case '\v': puts_(b, "\\v"); break;
			default:
				if (r < 0x20 || r == 0x7f)
					putf(b, "\\x%02x", r);
				else
					putc_(b, (char)r);
			}
		} else if (rune_unprintable(r)) {
			if (r < 0x10000)
				putf(b, "\\u%04x", r);
			else
				putf(b, "\\U%08x", r);
		} else {
			put(b, str + i, len);
		}
		i += len;
	}
}

static void put_go_quoted(struct lbuf *b, const char *s)
{
	putc_(b, '"');
	put_go_escaped(b, s, strlen(s));
	putc_(b, '"');
}

/*
 * A free-text (printf) message in the text formats: klog writes it as it
 * is; svcnat escapes the control bytes but the tab (as strconv.Quote
 * would), so that a name from a source cannot start a line of its own.
 */
static void put_text_n(struct lbuf *b, const char *msg, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)msg[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			put_go_escaped(b, msg + i, 1);
		else
			putc_(b, (char)c);
	}
}

static void put_text_msg(struct lbuf *b, const char *msg)
{
	put_text_n(b, msg, strlen(msg));
}

/* s as zap's JSON encoder writes a string (safeAddString), without quotes. */
static void put_json_escaped(struct lbuf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str);

	for (size_t i = 0; i < n;) {
		uint32_t r;
		size_t len = utf8_decode(s + i, n - i, &r);

		if (!len) {
			puts_(b, "\\ufffd");
			i++;
			continue;
		}
		if (len == 1) {
			switch (r) {
			case '"': puts_(b, "\\\""); break;
			case '\\': puts_(b, "\\\\"); break;
			case '\n': puts_(b, "\\n"); break;
			case '\r': puts_(b, "\\r"); break;
			case '\t': puts_(b, "\\t"); break;
			default:
				if (r < 0x20)
					putf(b, "\\u%04x", r);
				else
					putc_(b, (char)r);
			}
		} else {
			put(b, str + i, len);
		}
		i += len;
	}
}

static void put_json_string(struct lbuf *b, const char *s)
{
	putc_(b, '"');
	put_json_escaped(b, s);
	putc_(b, '"');
}

/* The shortest %g that reads back as d (Go's 'g'/-1 in spirit). */
static void put_float(struct lbuf *b, double d, bool json)
{
	char tmp[40];

	if (isnan(d) || isinf(d)) {
		const char *s = isnan(d) ? "NaN" : d > 0 ? "+Inf" : "-Inf";

		/* JSON has no such numbers: zap writes them as strings. */
		if (json)
			putc_(b, '"');
		puts_(b, s);
		if (json)
			putc_(b, '"');
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	puts_(b, tmp);
}

/* A fraction's digits without trailing zeros ("5" of 500), or nothing. */
static void put_fraction(struct lbuf *b, unsigned long long frac, int digits)
{
	char tmp[16];
	int n;

	if (!frac)
		return;
	n = snprintf(tmp, sizeof(tmp), ".%0*llu", digits, frac);
	while (n > 1 && tmp[n - 1] == '0')
		n--;
	put(b, tmp, (size_t)n);
}

/* seconds as Go's time.Duration.String() writes it: 1h2m3.5s, 38.805737ms. */
static void put_duration(struct lbuf *b, double secs)
{
	unsigned long long ns;

	if (isnan(secs)) {
		puts_(b, "0s");
		return;
	}
	if (secs < 0) {
		putc_(b, '-');
		secs = -secs;
	}
	ns = secs >= 9.2e9 ? 9200000000000000000ULL : (unsigned long long)llround(secs * 1e9);
	if (ns == 0) {
		puts_(b, "0s");
	} else if (ns < 1000ULL) {
		putf(b, "%lluns", ns);
	} else if (ns < 1000000ULL) {
		putf(b, "%llu", ns / 1000);
		put_fraction(b, ns % 1000, 3);
		puts_(b, "\xc2\xb5s"); /* µs, U+00B5 as Go writes it */
	} else if (ns < 1000000000ULL) {
		putf(b, "%llu", ns / 1000000);
		put_fraction(b, ns % 1000000, 6);
		puts_(b, "ms");
	} else {
		unsigned long long s = ns / 1000000000ULL;

		if (s >= 3600)
			putf(b, "%lluh", s / 3600);
		if (s >= 60)
			putf(b, "%llum", s / 60 % 60);
		putf(b, "%llu", s % 60);
		put_fraction(b, ns % 1000000000ULL, 9);
		putc_(b, 's');
	}
}

/*
 * A value as klog's text format writes it (writeStringValue, formatAsJSON),
 * but for a string with a line break: klog writes it as a block of
 * tab-indented lines, svcnat quotes it like any other (one line per
 * message, always).
 */
static void put_text_value(struct lbuf *b, const struct log_field *f)
{
	switch (f->kind) {
	case LOG_KV_STR:
		if (!f->s) {
			puts_(b, "=\"<nil>\"");
		} else {
			putc_(b, '=');
			put_go_quoted(b, f->s);
		}
		return;
	case LOG_KV_INT:
		putf(b, "=%lld", f->i);
		return;
	case LOG_KV_UINT:
		putf(b, "=%llu", f->u);
		return;
	case LOG_KV_FLOAT:
		putc_(b, '=');
		put_float(b, f->d, false);
		return;
	case LOG_KV_DURATION:
		puts_(b, "=\"");
		put_duration(b, f->d);
		putc_(b, '"');
		return;
	case LOG_KV_BOOL:
		puts_(b, f->b ? "=true" : "=false");
		return;
	}
}

static void put_json_value(struct lbuf *b, const struct log_field *f)
{
	switch (f->kind) {
	case LOG_KV_STR:
		if (f->s)
			put_json_string(b, f->s);
		else
			puts_(b, "null");
		return;
	case LOG_KV_INT:
		putf(b, "%lld", f->i);
		return;
	case LOG_KV_UINT:
		putf(b, "%llu", f->u);
		return;
	case LOG_KV_FLOAT:
		put_float(b, f->d, true);
		return;
	case LOG_KV_DURATION:
		putc_(b, '"');
		put_duration(b, f->d);
		putc_(b, '"');
		return;
	case LOG_KV_BOOL:
		puts_(b, f->b ? "true" : "false");
		return;
	}
}

/* A key as it may stand in a line: keys are svcnat's own constants. */
static const char *key_of(const struct log_field *f)
{
	return f->key && *f->key ? f->key : "<nokey>";
}

static char severity_char(int level)
{
	return level <= LOG_LEVEL_ERR ? 'E' : level == LOG_LEVEL_WARNING ? 'W' : 'I';
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
		return level < LOG_LEVEL_ERR ? "error" : "debug";
	}
}

/* klog prints the file's name, zap's ShortCallerEncoder its last directory too. */
static const char *caller_file(const char *file, bool with_dir)
{
	const char *base = strrchr(file, '/');

	if (!base)
		return file;
	if (with_dir)
		for (const char *p = base - 1; p >= file; p--)
			if (*p == '/')
				return p + 1;
	return with_dir ? file : base + 1;
}

static void format_text_header(struct lbuf *b, int level, double now, int pid, const char *file,
			       int line)
{
	time_t sec = (time_t)floor(now);
	long usec = (long)llround((now - floor(now)) * 1e6);
	struct tm tm;

	/* (rounded: a double holds today's seconds to about 0.2 us) */
	if (usec > 999999)
		usec = 999999;
	/* klog uses the local time zone (time.Now()), as kube-proxy does. */
	if (!localtime_r(&sec, &tm))
		memset(&tm, 0, sizeof(tm));
	putf(b, "%c%02d%02d %02d:%02d:%02d.%06ld %7d ", severity_char(level), tm.tm_mon + 1,
	     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, usec, pid);
	putf(b, "%s:%d] ", caller_file(file, false), line < 0 ? 0 : line);
}

size_t log_format_line(char *out, size_t size, enum log_format format, int level, int v,
		       double now, int pid, const char *file, int line, const char *err,
		       const char *msg, bool quote_msg, const struct log_field *f, size_t n)
{
	struct lbuf b = { out, size ? size - 1 : 0, 0 };

	if (!file)
		file = "???";
	if (!msg)
		msg = "";
	if (format == LOG_FORMAT_JSON) {
		double ms = now * 1e3;
		char ts[40];
		int k;

		/* component-base: epoch milliseconds as a float. */
		k = snprintf(ts, sizeof(ts), "%.3f", ms);
		while (k > 0 && ts[k - 1] == '0')
			ts[--k] = '\0';
		if (k > 0 && ts[k - 1] == '.')
			ts[--k] = '\0';
		puts_(&b, "{\"ts\":");
		puts_(&b, ts);
		puts_(&b, ",\"caller\":");
		putc_(&b, '"');
		put_json_escaped(&b, caller_file(file, true));
		putf(&b, ":%d\"", line < 0 ? 0 : line);
		puts_(&b, ",\"msg\":");
		put_json_string(&b, msg);
		/* zapr: info (and klog's warnings) carry "v", errors do not. */
		if (level > LOG_LEVEL_ERR)
			putf(&b, ",\"v\":%d", v < 0 ? 0 : v);
		for (size_t i = 0; i < n; i++) {
			putc_(&b, ',');
			put_json_string(&b, key_of(&f[i]));
			putc_(&b, ':');
			put_json_value(&b, &f[i]);
		}
		if (err) {
			puts_(&b, ",\"err\":");
			put_json_string(&b, err);
		}
		putc_(&b, '}');
	} else {
		if (format == LOG_FORMAT_TEXT) {
			format_text_header(&b, level, now, pid, file, line);
		} else {
			puts_(&b, level_word(level));
			puts_(&b, ": ");
		}
		if (quote_msg && format == LOG_FORMAT_TEXT)
			put_go_quoted(&b, msg);
		else
			put_text_msg(&b, msg);
		/* klog's ErrorS puts err before the other pairs. */
		if (err) {
			struct log_field e = LOG_STR("err", err);

			puts_(&b, " err");
			put_text_value(&b, &e);
		}
		for (size_t i = 0; i < n; i++) {
			putc_(&b, ' ');
			puts_(&b, key_of(&f[i]));
			put_text_value(&b, &f[i]);
		}
	}
	if (size) {
		size_t end = b.len < b.size ? b.len : b.size;

		out[end] = '\0';
	}
	return b.len;
}

/*
 * JOURNAL_STREAM names the device and inode of the stream journald gave
 * the service (systemd.exec(5)); only when stderr is that stream does a
 * "<N>" prefix mean something.
 */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_setup(enum log_format format, int verbosity, int min_level)
{
	log_state.format = format;
	log_state.verbosity = verbosity < 0 ? 0 : verbosity;
	log_state.min_level = min_level;
	log_state.journal = stderr_is_journal();
}

void log_init(const char *ident, int max_level)
{
	(void)ident;
	log_setup(log_state.format, max_level >= LOG_LEVEL_DEBUG ? LOG_V_DEBUG : 0,
		  max_level < LOG_LEVEL_INFO ? max_level : LOG_LEVEL_INFO);
}

int log_get_verbosity(void)
{
	return log_state.verbosity;
}

enum log_format log_get_format(void)
{
	return log_state.format;
}

bool log_enabled(int level, int v)
{
	if (level <= LOG_LEVEL_WARNING)
		return level <= log_state.min_level;
	return log_state.min_level >= LOG_LEVEL_INFO && v <= log_state.verbosity;
}

/* k8s.io/klog/v2 klog.go, moduleSpec.Set: split at ',' and '='. */
static int vmodule_parse(const char *spec, struct vmodule *out, size_t *ret_n)
{
	size_t n = 0;

	for (const char *p = spec ? spec : ""; *p;) {
		size_t len = strcspn(p, ","), plen;
		const char *eq = memchr(p, '=', len);
		char level[16], *end;
		long v;

		if (len == 0) { /* an empty item, as a trailing comma leaves */
			p++;
			continue;
		}
		if (!eq || eq == p || (size_t)(eq - p) + 1 == len || memchr(eq + 1, '=', len - (size_t)(eq - p) - 1))
			return -EINVAL;
		plen = (size_t)(eq - p);
		if (len - plen - 1 >= sizeof(level))
			return -EINVAL;
		memcpy(level, eq + 1, len - plen - 1);
		level[len - plen - 1] = '\0';
		errno = 0;
		v = strtol(level, &end, 10);
		if (*end || errno || v < 0 || v > INT32_MAX)
			return -EINVAL;
		if (v > 0) {
			if (n == LOG_VMODULE_MAX || plen >= sizeof(out[0].pattern))
				return -E2BIG;
			memcpy(out[n].pattern, p, plen);
			out[n].pattern[plen] = '\0';
			out[n].v = (int)v;
			out[n].full = memchr(p, '/', plen) != NULL;
			n++;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	*ret_n = n;
	return 0;
}

int log_vmodule_check(const char *spec)
{
	struct vmodule tmp[LOG_VMODULE_MAX];
	size_t n;

	return vmodule_parse(spec, tmp, &n);
}

int log_set_vmodule(const char *spec)
{
	struct vmodule tmp[LOG_VMODULE_MAX];
	size_t n;
	int r = vmodule_parse(spec, tmp, &n);

	if (r < 0)
		return r;
	memcpy(log_state.vmodule, tmp, n * sizeof(tmp[0]));
	log_state.n_vmodule = n;
	log_state.vmodule_max = 0;
	for (size_t i = 0; i < n; i++)
		if (tmp[i].v > log_state.vmodule_max)
			log_state.vmodule_max = tmp[i].v;
	return 0;
}

/* The level the first matching pattern gives file, or 0. */
static int vmodule_level(const char *file)
{
	const char *src, *base = strrchr(file, '/');
	char name[256], full[256];
	size_t len;

	base = base ? base + 1 : file;
	/* __FILE__ is the path the compiler was given ("../src/sys/log.c"
	 * in a separate build directory): the tree's part starts at src/. */
	src = strstr(file, "src/");
	snprintf(full, sizeof(full), "%s", src ? src : file);
	snprintf(name, sizeof(name), "%s", base);
	len = strlen(full);
	if (len > 2 && strcmp(full + len - 2, ".c") == 0)
		full[len - 2] = '\0';
	len = strlen(name);
	if (len > 2 && strcmp(name + len - 2, ".c") == 0)
		name[len - 2] = '\0';
	for (size_t i = 0; i < log_state.n_vmodule; i++) {
		const struct vmodule *m = &log_state.vmodule[i];

		if (fnmatch(m->pattern, m->full ? full : name, m->full ? FNM_PATHNAME : 0) == 0)
			return m->v;
	}
	return 0;
}

bool log_enabled_file(int level, int v, const char *file)
{
	if (log_enabled(level, v))
		return true;
	if (level <= LOG_LEVEL_WARNING || log_state.min_level < LOG_LEVEL_INFO ||
	    v > log_state.vmodule_max || !file)
		return false;
	return v <= vmodule_level(file);
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_all(int fd, const char *buf, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
}

/* The line, a newline and the journal's prefix, in one write(2). */
static void emit(int level, int v, const char *file, int line, const char *err, const char *msg,
		 bool quote, const struct log_field *f, size_t n)
{
	char stackbuf[4096];
	char *buf = stackbuf, *heap = NULL;
	size_t size = sizeof(stackbuf), pre = 0, len;
	int saved = errno;

	if (log_state.journal < 0)
		log_state.journal = stderr_is_journal();
	for (;;) {
		if (log_state.journal && log_state.format != LOG_FORMAT_JSON)
			pre = (size_t)snprintf(buf, size, "<%d>", level > 7 ? 7 : level);
		len = log_format_line(buf + pre, size - pre - 1, log_state.format, level, v,
				      now_seconds(), (int)getpid(), file, line, err, msg, quote, f, n);
		if (len < size - pre - 2 || buf != stackbuf)
			break;
		/* Long lines (a diagnostic naming many objects): up to 64 KiB. */
		size = len + pre + 2 > 65536 ? 65536 : len + pre + 2;
		heap = malloc(size);
		if (!heap)
			break;
		buf = heap;
	}
	len = strlen(buf);
	buf[len++] = '\n';
	if (log_state.file_fd < 0) {
		write_all(STDERR_FILENO, buf, len);
	} else {
		/* klog's output(): the file, and stderr from -stderrthreshold on */
		write_all(log_state.file_fd, buf + pre, len - pre);
		if (log_state.file_also_stderr || level <= LOG_LEVEL_ERR)
			write_all(STDERR_FILENO, buf, len);
	}
	free(heap);
	errno = saved;
}

void log_set_file(int fd, bool also_stderr)
{
	if (log_state.file_fd >= 0 && log_state.file_fd != fd)
		close(log_state.file_fd);
	log_state.file_fd = fd;
	log_state.file_also_stderr = also_stderr;
}

int log_open_file(const char *path)
{
	struct stat st;
	int fd;

	/* O_NONBLOCK: a FIFO without a reader must not hang the start */
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int r = -EINVAL;

		close(fd);
		return r;
	}
	if (fcntl(fd, F_SETFL, O_APPEND) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

void log_vfull(int level, int v, const char *file, int line, const char *fmt, va_list ap)
{
	char stackmsg[2048];
	char *msg = stackmsg, *heap = NULL;
	va_list aq;
	int n;

	if (!log_enabled_file(level, v, file))
		return;
	va_copy(aq, ap);
	n = vsnprintf(stackmsg, sizeof(stackmsg), fmt, ap);
	if (n >= (int)sizeof(stackmsg) && (heap = malloc((size_t)n + 1))) {
		vsnprintf(heap, (size_t)n + 1, fmt, aq);
		msg = heap;
	}
	va_end(aq);
	if (n < 0)
		msg = (char *)fmt;
	emit(level, v, file, line, NULL, msg, false, NULL, 0);
	free(heap);
}

void log_full(int level, int v, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vfull(level, v, file, line, fmt, ap);
	va_end(ap);
}

void log_fields(int level, int v, const char *file, int line, const char *err, const char *msg,
		const struct log_field *f, size_t n)
{
	if (!log_enabled_file(level, v, file))
		return;
	emit(level, v, file, line, err, msg, true, f, n);
}
