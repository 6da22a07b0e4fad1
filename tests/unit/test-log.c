/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The log line formats: klog's text header and InfoS pairs, component-base's
 * JSON lines, the one-shot modes' plain lines; escaping of odd bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "sys/log.h"
#include "util.h"

/* 2025-12-01 18:00:00.25 UTC */
#define NOW 1764612000.25
#define FILE_ "../src/daemon/daemon.c"

static char line[8192];

static const char *fmt_line(enum log_format f, int level, int v, const char *err, const char *msg,
			    bool quote, const struct log_field *kv, size_t n)
{
	size_t len = log_format_line(line, sizeof(line), f, level, v, NOW, 4711, FILE_, 610, err,
				     msg, quote, kv, n);

	assert_true(len < sizeof(line));
	assert_int_equal(strlen(line), len);
	return line;
}

static int setup(void **state)
{
	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	return 0;
}

static void test_text_header(void **state)
{
	(void)state;
	/* klog: Lmmdd hh:mm:ss.uuuuuu, the pid in 7 columns, file:line] */
	assert_string_equal(fmt_line(LOG_FORMAT_TEXT, LOG_LEVEL_INFO, 0, NULL, "svcnat running",
				     false, NULL, 0),
			    "I1201 18:00:00.250000    4711 daemon.c:610] svcnat running");
	assert_string_equal(fmt_line(LOG_FORMAT_TEXT, LOG_LEVEL_WARNING, 0, NULL, "w", false, NULL, 0),
			    "W1201 18:00:00.250000    4711 daemon.c:610] w");
	assert_string_equal(fmt_line(LOG_FORMAT_TEXT, LOG_LEVEL_ERR, 0, NULL, "e", false, NULL, 0),
			    "E1201 18:00:00.250000    4711 daemon.c:610] e");
	/* debug is info of a verbosity: klog has no D */
	assert_string_equal(fmt_line(LOG_FORMAT_TEXT, LOG_LEVEL_DEBUG, 4, NULL, "d", false, NULL, 0),
			    "I1201 18:00:00.250000    4711 daemon.c:610] d");
	/* a pid wider than 7 columns pushes the rest right, as klog's does */
	log_format_line(line, sizeof(line), LOG_FORMAT_TEXT, LOG_LEVEL_INFO, 0, 1e9 + 0.000001,
			12345678, "log.c", 7, NULL, "x", false, NULL, 0);
	assert_string_equal(line, "I0909 01:46:40.000001 12345678 log.c:7] x");
}

static void test_text_structured(void **state)
{
	const struct log_field kv[] = {
		LOG_STR("ipFamily", "IPv4"),     LOG_DURATION("elapsed", 0.038805737),
		LOG_INT("numServices", -4),      LOG_UINT("numEndpoints", 7),
		LOG_BOOL("full", true),          LOG_FLOAT("ratio", 0.25),
		LOG_STR("name", "a \"b\" \\ c"), LOG_STR("none", NULL),
	};

	(void)state;
	/* InfoS: the message quoted, strings quoted, numbers and bools bare */
	assert_string_equal(fmt_line(LOG_FORMAT_TEXT, LOG_LEVEL_INFO, 2, NULL,
				     "SyncProxyRules complete", true, kv, ARRAY_SIZE(kv)),
			    "I1201 18:00:00.250000    4711 daemon.c:610] \"SyncProxyRules complete\" "
			    "ipFamily=\"IPv4\" elapsed=\"38.805737ms\" numServices=-4 numEndpoints=7 "
			    "full=true ratio=0.25 name=\"a \\\"b\\\" \\\\ c\" none=\"<nil>\"");
	/* ErrorS: err comes before the other pairs */
	assert_string_equal(fmt_line(LOG_FORMAT_TEXT, LOG_LEVEL_ERR, 0, "exit status 1",
				     "Failed to execute iptables-restore", true, kv, 1),
			    "E1201 18:00:00.250000    4711 daemon.c:610] \"Failed to execute "
			    "iptables-restore\" err=\"exit status 1\" ipFamily=\"IPv4\"");
	/* a line break in a value is quoted too: one line per message */
	{
		const struct log_field ml[] = { LOG_STR("rules", "line 1\nline 2") };

		assert_string_equal(fmt_line(LOG_FORMAT_TEXT, LOG_LEVEL_INFO, 0, NULL, "m", true, ml, 1),
				    "I1201 18:00:00.250000    4711 daemon.c:610] \"m\" rules=\"line 1\\nline 2\"");
	}
}

static void test_go_quote(void **state)
{
	const struct log_field kv[] = {
		/* ASCII controls, DEL, an invalid byte, é, U+0085 (C1), U+2028, U+E000, U+1F600 */
		LOG_STR("s", "q\"b\\n\n\t\x01\x7f\xff\xc3\xa9\xc2\x85\xe2\x80\xa8\xee\x80\x80"
			     "\xf0\x9f\x98\x80"),
	};

	(void)state;
	assert_string_equal(fmt_line(LOG_FORMAT_TEXT, LOG_LEVEL_INFO, 0, NULL, "m", true, kv, 1),
			    "I1201 18:00:00.250000    4711 daemon.c:610] \"m\" s=\"q\\\"b\\\\n\\n\\t"
			    "\\x01\\x7f\\xff\xc3\xa9\\u0085\\u2028\\ue000\xf0\x9f\x98\x80\"");
	/* overlong, surrogate and cut-short sequences are bytes, each \xNN */
	{
		const struct log_field bad[] = { LOG_STR("s", "\xc0\xaf\xed\xa0\x80\xe2\x82") };

		assert_string_equal(
			fmt_line(LOG_FORMAT_TEXT, LOG_LEVEL_INFO, 0, NULL, "m", true, bad, 1),
			"I1201 18:00:00.250000    4711 daemon.c:610] \"m\" "
			"s=\"\\xc0\\xaf\\xed\\xa0\\x80\\xe2\\x82\"");
	}
	/* a printf message is not quoted, but its control bytes are escaped:
	 * a name cannot start a log line of its own */
	assert_string_equal(fmt_line(LOG_FORMAT_TEXT, LOG_LEVEL_INFO, 0, NULL,
				     "a.json\nE1201 forged\ttab \"q\"", false, NULL, 0),
			    "I1201 18:00:00.250000    4711 daemon.c:610] a.json\\nE1201 forged\ttab "
			    "\"q\"");
}

static void test_durations(void **state)
{
	static const struct {
		double secs;
		const char *want;
	} t[] = {
		{ 0, "0s" },         { 0.0000005, "500ns" },        { 0.0000015, "1.5\xc2\xb5s" },
		{ 0.001, "1ms" },    { 0.038805737, "38.805737ms" }, { 1.5, "1.5s" },
		{ 60, "1m0s" },      { 3600, "1h0m0s" },            { 3723.5, "1h2m3.5s" },
		{ -2, "-2s" },       { 86400, "24h0m0s" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		const struct log_field kv[] = { LOG_DURATION("d", t[i].secs) };
		char want[128];

		snprintf(want, sizeof(want), "{\"ts\":1764612000250,\"caller\":\"daemon/daemon.c:610\","
			 "\"msg\":\"m\",\"v\":0,\"d\":\"%s\"}", t[i].want);
		assert_string_equal(fmt_line(LOG_FORMAT_JSON, LOG_LEVEL_INFO, 0, NULL, "m", true, kv, 1),
				    want);
	}
}

static void test_json(void **state)
{
	const struct log_field kv[] = {
		LOG_STR("ipFamily", "IPv4"),
		LOG_DURATION("elapsed", 0.038805737),
		LOG_INT("numServices", 4),
	};

	(void)state;
	/* component-base: ts (epoch ms), caller (dir/file:line), msg, v, pairs */
	assert_string_equal(fmt_line(LOG_FORMAT_JSON, LOG_LEVEL_INFO, 2, NULL,
				     "SyncProxyRules complete", true, kv, ARRAY_SIZE(kv)),
			    "{\"ts\":1764612000250,\"caller\":\"daemon/daemon.c:610\",\"msg\":"
			    "\"SyncProxyRules complete\",\"v\":2,\"ipFamily\":\"IPv4\",\"elapsed\":"
			    "\"38.805737ms\",\"numServices\":4}");
	/* warnings are info at v 0; errors have no v and err last */
	assert_string_equal(fmt_line(LOG_FORMAT_JSON, LOG_LEVEL_WARNING, 0, NULL, "w", false, NULL, 0),
			    "{\"ts\":1764612000250,\"caller\":\"daemon/daemon.c:610\",\"msg\":\"w\","
			    "\"v\":0}");
	assert_string_equal(fmt_line(LOG_FORMAT_JSON, LOG_LEVEL_ERR, 0, "fail", "test", true, kv + 2, 1),
			    "{\"ts\":1764612000250,\"caller\":\"daemon/daemon.c:610\",\"msg\":\"test\","
			    "\"numServices\":4,\"err\":\"fail\"}");
	/* the fraction of a millisecond, trailing zeros dropped */
	log_format_line(line, sizeof(line), LOG_FORMAT_JSON, LOG_LEVEL_INFO, 0, 1764612000.1234565,
			1, "log.c", 1, NULL, "m", false, NULL, 0);
	assert_non_null(strstr(line, "{\"ts\":1764612000123.45"));
	/* zap's escapes: \" \\ \n \r \t, other controls \u00XX, bad bytes U+FFFD */
	assert_string_equal(fmt_line(LOG_FORMAT_JSON, LOG_LEVEL_INFO, 0, NULL,
				     "a\"\\\n\r\t\x01\x1f\x7f\xff\xc3\xa9", true, NULL, 0),
			    "{\"ts\":1764612000250,\"caller\":\"daemon/daemon.c:610\",\"msg\":"
			    "\"a\\\"\\\\\\n\\r\\t\\u0001\\u001f\x7f\\ufffd\xc3\xa9\",\"v\":0}");
	/* NaN has no JSON number: a string */
	{
		const struct log_field nan_[] = { LOG_FLOAT("x", 0.0 / 0.0), LOG_STR("n", NULL) };

		assert_non_null(strstr(fmt_line(LOG_FORMAT_JSON, LOG_LEVEL_INFO, 0, NULL, "m", true,
						nan_, 2),
				       "\"x\":\"NaN\",\"n\":null}"));
	}
}

static void test_plain(void **state)
{
	const struct log_field kv[] = { LOG_STR("k", "v") };

	(void)state;
	assert_string_equal(fmt_line(LOG_FORMAT_PLAIN, LOG_LEVEL_ERR, 0, NULL, "a.json: bad", false,
				     NULL, 0),
			    "error: a.json: bad");
	assert_string_equal(fmt_line(LOG_FORMAT_PLAIN, LOG_LEVEL_WARNING, 0, NULL, "w", false, NULL, 0),
			    "warning: w");
	assert_string_equal(fmt_line(LOG_FORMAT_PLAIN, LOG_LEVEL_INFO, 0, NULL, "i", true, kv, 1),
			    "info: i k=\"v\"");
	assert_string_equal(fmt_line(LOG_FORMAT_PLAIN, LOG_LEVEL_DEBUG, 4, NULL, "d", false, NULL, 0),
			    "debug: d");
}

static void test_truncation(void **state)
{
	char small[16];
	size_t n;

	(void)state;
	memset(small, 'x', sizeof(small));
	n = log_format_line(small, sizeof(small), LOG_FORMAT_PLAIN, LOG_LEVEL_ERR, 0, NOW, 1, "f.c",
			    1, NULL, "a rather long message", false, NULL, 0);
	assert_int_equal(n, strlen("error: a rather long message"));
	assert_string_equal(small, "error: a rather");
	/* size 0 writes nothing */
	n = log_format_line(NULL, 0, LOG_FORMAT_JSON, LOG_LEVEL_ERR, 0, NOW, 1, "f.c", 1, NULL, "m",
			    false, NULL, 0);
	assert_true(n > 10);
}

static void test_verbosity(void **state)
{
	(void)state;
	log_setup(LOG_FORMAT_TEXT, 0, LOG_LEVEL_INFO);
	assert_true(log_enabled(LOG_LEVEL_ERR, 0));
	assert_true(log_enabled(LOG_LEVEL_INFO, 0));
	assert_false(log_enabled(LOG_LEVEL_INFO, 2));
	assert_false(log_enabled(LOG_LEVEL_DEBUG, 4));
	log_setup(LOG_FORMAT_JSON, 2, LOG_LEVEL_INFO);
	assert_true(log_enabled(LOG_LEVEL_INFO, 2));
	assert_false(log_enabled(LOG_LEVEL_DEBUG, 4));
	assert_int_equal(log_get_format(), LOG_FORMAT_JSON);
	log_setup(LOG_FORMAT_TEXT, 4, LOG_LEVEL_INFO);
	assert_true(log_enabled(LOG_LEVEL_DEBUG, 4));
	assert_false(log_enabled(LOG_LEVEL_INFO, 6));
	/* a quiet one-shot mode: warnings and errors only, whatever -v */
	log_setup(LOG_FORMAT_PLAIN, 9, LOG_LEVEL_WARNING);
	assert_true(log_enabled(LOG_LEVEL_WARNING, 0));
	assert_false(log_enabled(LOG_LEVEL_INFO, 0));
	assert_false(log_enabled(LOG_LEVEL_DEBUG, 4));
	assert_int_equal(log_get_verbosity(), 9);
	/* errors only (a fuzzer's setting) */
	log_init("t", LOG_LEVEL_ERR);
	assert_true(log_enabled(LOG_LEVEL_ERR, 0));
	assert_false(log_enabled(LOG_LEVEL_WARNING, 0));
	assert_false(log_enabled(LOG_LEVEL_INFO, 0));
}

/* klog's --vmodule: per-file verbosity over -v, never below it. */
static void test_vmodule(void **state)
{
	static const char *const bad[] = { "sync", "=3", "sync=", "sync=-1", "sync=x", "a=1=2",
					   "sync=4x" };
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (log_vmodule_check(bad[i]) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
	assert_int_equal(log_vmodule_check("sync=4,,kube*=5,"), 0);
	assert_int_equal(log_set_vmodule("nope"), -EINVAL);

	log_setup(LOG_FORMAT_TEXT, 0, LOG_LEVEL_INFO);
	assert_int_equal(log_set_vmodule("sync=4,src/daemon/tele*=2,log=0"), 0);
	/* by name without .c, wherever the build puts the tree */
	assert_true(log_enabled_file(LOG_LEVEL_DEBUG, 4, "../src/daemon/sync.c"));
	assert_true(log_enabled_file(LOG_LEVEL_INFO, 4, "src/daemon/sync.c"));
	assert_false(log_enabled_file(LOG_LEVEL_INFO, 5, "src/daemon/sync.c"));
	assert_false(log_enabled_file(LOG_LEVEL_INFO, 2, "src/daemon/daemon.c"));
	assert_false(log_enabled_file(LOG_LEVEL_INFO, 1, "src/sys/synchro.c"));
	/* a slash: the path from src/, '*' within one directory */
	assert_true(log_enabled_file(LOG_LEVEL_INFO, 2, "/build/x/../src/daemon/telemetry.c"));
	assert_false(log_enabled_file(LOG_LEVEL_INFO, 3, "src/daemon/telemetry.c"));
	assert_false(log_enabled_file(LOG_LEVEL_INFO, 2, "src/sys/telemetry.c"));
	/* log=0 is skipped, as klog's: -v still counts for log.c */
	assert_true(log_enabled_file(LOG_LEVEL_INFO, 0, "src/sys/log.c"));
	assert_false(log_enabled_file(LOG_LEVEL_INFO, 1, "src/sys/log.c"));
	/* never below -v; a quiet one-shot mode stays quiet */
	log_setup(LOG_FORMAT_TEXT, 3, LOG_LEVEL_INFO);
	assert_true(log_enabled_file(LOG_LEVEL_INFO, 3, "src/daemon/daemon.c"));
	log_setup(LOG_FORMAT_PLAIN, 0, LOG_LEVEL_WARNING);
	assert_false(log_enabled_file(LOG_LEVEL_INFO, 2, "src/daemon/sync.c"));
	assert_true(log_enabled_file(LOG_LEVEL_WARNING, 0, "src/daemon/sync.c"));
	/* cleared */
	log_setup(LOG_FORMAT_TEXT, 0, LOG_LEVEL_INFO);
	assert_int_equal(log_set_vmodule(NULL), 0);
	assert_false(log_enabled_file(LOG_LEVEL_INFO, 2, "src/daemon/sync.c"));
}

/* The whole of a file, NUL-terminated, into buf ("" when it is absent). */
static const char *slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, size - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* klog's --log-file, --logtostderr=false and --alsologtostderr. */
static void test_log_file(void **state)
{
	char dir[] = "/tmp/svcnat-test-log.XXXXXX";
	char path[128], errpath[128], fifo[128], buf[8192];
	int saved_err, errfd, fd;
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/svcnat.log", dir);
	snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);

	/* Standard error goes to a file of ours for the test's time. */
	fflush(stderr);
	saved_err = dup(STDERR_FILENO);
	errfd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(saved_err >= 0 && errfd >= 0);
	assert_true(dup2(errfd, STDERR_FILENO) >= 0);
	close(errfd);
	unsetenv("JOURNAL_STREAM");
	log_setup(LOG_FORMAT_TEXT, 0, LOG_LEVEL_INFO);

	/* Created 0600, and written: info to the file only, an error to
	 * both (klog's -stderrthreshold=ERROR). */
	fd = log_open_file(path);
	assert_true(fd >= 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	log_set_file(fd, false);
	log_info("first line %d", 1);
	log_err("an error %d", 2);
	slurp(path, buf, sizeof(buf));
	assert_int_equal(count(buf, "] first line 1\n"), 1);
	assert_int_equal(count(buf, "] an error 2\n"), 1);
	assert_int_equal(buf[0], 'I'); /* klog's header, as on stderr */
	slurp(errpath, buf, sizeof(buf));
	assert_int_equal(count(buf, "first line 1"), 0);
	assert_int_equal(count(buf, "] an error 2\n"), 1);

	/* Opened again (a restart): appended, the first lines kept;
	 * --alsologtostderr: info goes to stderr too. */
	fd = log_open_file(path);
	assert_true(fd >= 0);
	log_set_file(fd, true);
	log_info("second line");
	slurp(path, buf, sizeof(buf));
	assert_int_equal(count(buf, "first line 1"), 1);
	assert_int_equal(count(buf, "] second line\n"), 1);
	assert_true(strstr(buf, "first line 1") < strstr(buf, "second line"));
	slurp(errpath, buf, sizeof(buf));
	assert_int_equal(count(buf, "] second line\n"), 1);

	/* Back to standard error only: the file is left as it is. */
	log_set_file(-1, false);
	log_info("third line");
	slurp(path, buf, sizeof(buf));
	assert_int_equal(count(buf, "third line"), 0);
	slurp(errpath, buf, sizeof(buf));
	assert_int_equal(count(buf, "] third line\n"), 1);

	/* Bad paths: no such directory, a directory, a FIFO (without a
	 * reader: refused at once rather than hanging the start), a device. */
	snprintf(buf, sizeof(buf), "%s/nope/svcnat.log", dir);
	assert_int_equal(log_open_file(buf), -ENOENT);
	assert_int_equal(log_open_file(dir), -EISDIR);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	fd = log_open_file(fifo);
	assert_true(fd == -EINVAL || fd == -ENXIO);
	assert_int_equal(unlink(fifo), 0);
	/* a device opens, but is no log file */
	assert_int_equal(log_open_file("/dev/null"), -EINVAL);

	fflush(stderr);
	assert_true(dup2(saved_err, STDERR_FILENO) >= 0);
	close(saved_err);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(unlink(errpath), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* xorshift: the same odd strings every run */
static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static bool valid_utf8(const unsigned char *s, size_t n)
{
	char tmp[4096];
	const struct log_field kv[] = { LOG_STR("s", (const char *)s) };

	/* the text formatter's \x escapes mark exactly the bytes it found invalid */
	(void)n;
	log_format_line(tmp, sizeof(tmp), LOG_FORMAT_JSON, LOG_LEVEL_INFO, 0, NOW, 1, "f.c", 1, NULL,
			"m", true, kv, 1);
	return !strstr(tmp, "\\ufffd");
}

/*
 * Random strings of odd bytes (controls, quotes, backslashes, UTF-8 lead
 * and continuation bytes, valid runes): every JSON line parses and gives the
 * string back when it was valid UTF-8; no line of either format holds a
 * control byte (one line per message, always).
 */
static void test_escaping_random(void **state)
{
	static const unsigned char alphabet[] = { 0x00, 0x01, 0x09, 0x0a, 0x0d, 0x1b, 0x1f, '"',
						  '\\', '/', 'a', ' ', 0x7f, 0x80, 0xbf, 0xc2,
						  0xc3, 0xa9, 0xe2, 0x80, 0xa8, 0xed, 0xf0, 0x9f,
						  0xf4, 0x90, 0xff, 0xfe, '<', '>', '&', '=' };
	uint32_t seed = 0x5eed1234;

	(void)state;
	for (int iter = 0; iter < 20000; iter++) {
		unsigned char s[64];
		size_t n = rnd(&seed) % (sizeof(s) - 1) + 1;
		cJSON *j;

		for (size_t i = 0; i < n; i++)
			s[i] = alphabet[rnd(&seed) % sizeof(alphabet)];
		/* NUL ends the C string; keep the rest as a shorter case */
		s[n] = '\0';
		n = strlen((char *)s);
		{
			const struct log_field kv[] = { LOG_STR("s", (const char *)s) };

			fmt_line(LOG_FORMAT_JSON, LOG_LEVEL_ERR, 0, (const char *)s, (const char *)s,
				 true, kv, 1);
			for (const char *p = line; *p; p++)
				assert_true((unsigned char)*p >= 0x20);
			j = cJSON_Parse(line);
			assert_non_null(j);
			if (valid_utf8(s, n)) {
				assert_string_equal(cJSON_GetObjectItem(j, "msg")->valuestring, s);
				assert_string_equal(cJSON_GetObjectItem(j, "s")->valuestring, s);
				assert_string_equal(cJSON_GetObjectItem(j, "err")->valuestring, s);
			}
			cJSON_Delete(j);

			fmt_line(LOG_FORMAT_TEXT, LOG_LEVEL_INFO, 0, NULL, (const char *)s, true, kv, 1);
			for (const char *p = line; *p; p++)
				assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p != 0x7f);
			fmt_line(LOG_FORMAT_TEXT, LOG_LEVEL_INFO, 0, NULL, (const char *)s, false, NULL, 0);
			for (const char *p = line; *p; p++)
				assert_true(*p == '\t' || ((unsigned char)*p >= 0x20 &&
							   (unsigned char)*p != 0x7f));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_header),
		cmocka_unit_test(test_text_structured),
		cmocka_unit_test(test_go_quote),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_verbosity),
		cmocka_unit_test(test_vmodule),
		cmocka_unit_test(test_log_file),
		cmocka_unit_test(test_escaping_random),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
