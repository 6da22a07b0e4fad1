/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * svcnat: parse the command line (cli/options.c), then run its mode
 * (cli/modes.c).  Exit codes: sys/exitcode.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/config.h"
#include "cli/modes.h"
#include "cli/options.h"
#include "sys/exitcode.h"
#include "sys/log.h"
#include "util.h"

/*
 * glibc (2.35 and later) backs malloc's heap with transparent huge pages
 * when the tunable glibc.malloc.hugetlb=1 is set.  A sync of 10,000
 * services touches a few hundred MB of fresh heap, and the faults of 4 KiB
 * pages were about 40% of a --dry-run (2.4 s against 1.5 s) on a VM.  The
 * tunable is read at process start only, so svcnat runs itself once more
 * with it set; not when GLIBC_TUNABLES is set already (the user's choice
 * stands) or SVCNAT_NO_REEXEC is.  Other libcs ignore the variable.
 * Returns true in the process that runs with the tunable.
 */
#define HUGE_TUNABLE "glibc.malloc.hugetlb=1"

static bool heap_hugepages(char **argv)
{
	const char *mark = getenv("SVCNAT_REEXECED");

	if (mark) {
		/* Applied at our start: do not hand it on to child processes. */
		const char *t = getenv("GLIBC_TUNABLES");
		bool ours = t && streq(t, HUGE_TUNABLE);

		if (ours)
			unsetenv("GLIBC_TUNABLES");
		unsetenv("SVCNAT_REEXECED");
		return ours;
	}
	if (getenv("GLIBC_TUNABLES") || getenv("SVCNAT_NO_REEXEC"))
		return false;
	if (setenv("GLIBC_TUNABLES", HUGE_TUNABLE, 1) < 0 ||
	    setenv("SVCNAT_REEXECED", "1", 1) < 0)
		return false;
	execv("/proc/self/exe", argv);
	/* No /proc: go on as we are. */
	unsetenv("GLIBC_TUNABLES");
	unsetenv("SVCNAT_REEXECED");
	return false;
}

/*
 * The daemon logs as kube-proxy does: klog's text lines unless
 * --logging-format=json.  A one-shot mode is a command: its errors are
 * plain "error: ..." lines (as its diagnostics are), in klog's or JSON form
 * only when --logging-format asks, and it stays quiet but for warnings and
 * errors unless -v is given.  So does a command line that cannot be used.
 */
static void setup_logging(const struct svcnat_options *o, bool parse_failed)
{
	bool daemon = o->mode == MODE_DAEMON && !parse_failed;
	enum log_format f = o->log_format == LOG_FORMAT_OPT_JSON ? LOG_FORMAT_JSON
			    : o->log_format == LOG_FORMAT_OPT_TEXT || daemon ? LOG_FORMAT_TEXT
									       : LOG_FORMAT_PLAIN;
	bool quiet = o->mode != MODE_DAEMON && !o->verbose;

	log_setup(f, o->log_verbosity, quiet ? LOG_LEVEL_WARNING : LOG_LEVEL_INFO);
	/* checked while parsing: cannot fail here */
	(void)log_set_vmodule(o->vmodule);
}

/*
 * klog's --log-file: used only with --logtostderr=false (else a warning,
 * as klog ignores it); opened before any other side effect.  0, or -errno
 * from log_open_file (the caller names the flag and exits 2).
 */
static int setup_log_file(const struct svcnat_options *o)
{
	int fd;

	if (!o->log_file || o->logtostderr)
		return 0;
	fd = log_open_file(o->log_file);
	if (fd < 0)
		return fd;
	log_set_file(fd, o->alsologtostderr);
	return 0;
}

/*
 * What the command line's reading prints on stderr (warnings about flags
 * and fields, the error that ends it) is held in a memfd until the log
 * format is known, which a KubeProxyConfiguration read on the way may set:
 * then it is written as it is (plain) or line by line as log lines of its
 * level.  Returns the memfd, or -errno (then nothing is held); *ret_saved is
 * the real stderr.
 */
static int stderr_hold(int *ret_saved)
{
	int mfd, saved;

	fflush(stderr);
	mfd = memfd_create("svcnat-stderr", MFD_CLOEXEC);
	if (mfd < 0)
		return -errno;
	saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (saved < 0 || dup2(mfd, STDERR_FILENO) < 0) {
		int r = -errno;

		if (saved >= 0)
			close(saved);
		close(mfd);
		return r;
	}
	*ret_saved = saved;
	return mfd;
}

/* One held line as a log line: "svcnat: warning: X" is a warning, and so on. */
static void replay_line(char *line)
{
	static const struct {
		const char *prefix;
		int level;
	} kinds[] = {
		{ "svcnat: warning: ", LOG_LEVEL_WARNING },
		{ "warning: ", LOG_LEVEL_WARNING },
		{ "svcnat: error: ", LOG_LEVEL_ERR },
		{ "error: ", LOG_LEVEL_ERR },
		{ "note: ", LOG_LEVEL_INFO },
		{ "svcnat: ", LOG_LEVEL_ERR },
	};

	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (strncmp(line, kinds[i].prefix, strlen(kinds[i].prefix)) == 0) {
			log_msg(kinds[i].level, "%s", line + strlen(kinds[i].prefix));
			return;
		}
	log_err("%s", line);
}

static void stderr_replay(int mfd, int saved)
{
	_cleanup_close_ int fd = mfd;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;

	if (fd < 0)
		return;
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap + 65536);

			if (!nb)
				break;
			buf = nb;
			cap += 65536;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if (!buf || !len)
		return;
	buf[len] = '\0';
	if (log_get_format() == LOG_FORMAT_PLAIN) {
		fputs(buf, stderr);
	} else {
		char *save = NULL;

		for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			replay_line(l);
	}
}

int main(int argc, char **argv)
{
	_cleanup_(options_done) struct svcnat_options o;
	bool diff = false, done = false, huge;
	int code, held, saved_fd = -1, file_err = 0;

	huge = heap_hugepages(argv);
	options_init(&o);
	held = stderr_hold(&saved_fd);
	code = options_parse(argc, argv, &o, &diff, &done);
	setup_logging(&o, code != 0);
	if (!code && !done)
		code = config_check_modes(&o);
	if (!code && !done)
		file_err = setup_log_file(&o);
	stderr_replay(held, saved_fd);
	if (file_err) {
		log_err("--log-file %s: %s", o.log_file,
			file_err == -EINVAL ? "not a regular file" : strerror(-file_err));
		return EXIT_USAGE;
	}
	if (!code && o.log_file && o.logtostderr)
		log_warn("--log-file %s has no effect with --logtostderr=true (klog's default): "
			 "logging to standard error", o.log_file);
	if (code || done)
		return code;
	if (huge)
		log_debug("malloc's heap on transparent huge pages (GLIBC_TUNABLES=%s)",
			  HUGE_TUNABLE);
	return modes_run(&o);
}
