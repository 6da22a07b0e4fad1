/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/detect.h"
#include "backend/run.h"
#include "util.h"

static size_t count_rule_lines(const char *text)
{
	size_t n = 0;

	for (const char *p = text; p && *p;) {
		if (strncmp(p, "-A ", 3) == 0)
			n++;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

static int save_rule_count(const char *cmd, size_t *ret)
{
	const char *argv[] = { cmd, NULL };
	_cleanup_free_ char *out = NULL;
	int status, r;

	r = backend_run(argv, NULL, 0, &out, NULL, &status);
	if (r < 0)
		return r;
	if (status != 0)
		return -ENOENT;
	*ret = count_rule_lines(out);
	return 0;
}

int detect_backend_kind(enum backend_kind *ret)
{
	const char *argv[] = { "iptables", "--version", NULL };
	_cleanup_free_ char *out = NULL;
	size_t nft = 0, legacy = 0;
	int status, r;

	r = backend_run(argv, NULL, 0, &out, NULL, &status);
	if (r < 0)
		return r;
	if (status == 127) {
		/* No iptables command at all: only the in-process writers can. */
		*ret = BACKEND_DIRECT;
		return 0;
	}
	if (strstr(out, "(legacy)")) {
		*ret = BACKEND_DIRECT;
		return 0;
	}
	/* Legacy first: iptables-nft-save is slow on a large table (and
	 * crashes on a very large one), and needed only when legacy has rules. */
	if (save_rule_count("iptables-legacy-save", &legacy) == 0 && legacy > 0 &&
	    save_rule_count("iptables-nft-save", &nft) == 0 && nft == 0) {
		*ret = BACKEND_DIRECT;
		return 0;
	}
	*ret = BACKEND_NFT;
	return 0;
}

static bool executable_in(const char *dir, size_t dlen, const char *cmd)
{
	_cleanup_free_ char *p = NULL;
	struct stat st;

	if (dlen == 0) {
		dir = ".";
		dlen = 1;
	}
	if (asprintf(&p, "%.*s/%s", (int)dlen, dir, cmd) < 0)
		return false;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

bool detect_command(const char *cmd, const char *path)
{
	_cleanup_free_ char *def = NULL;

	if (!cmd || !*cmd || strchr(cmd, '/'))
		return false;
	if (!path)
		path = getenv("PATH");
	if (!path) {
		size_t n = confstr(_CS_PATH, NULL, 0);

		def = n ? malloc(n) : NULL;
		if (!def || confstr(_CS_PATH, def, n) == 0)
			return false;
		path = def;
	}
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');

		if (executable_in(p, (size_t)(end - p), cmd))
			return true;
		if (!*end)
			return false;
		p = end;
	}
}

static bool legacy_tables_in(const char *names)
{
	FILE *f = fopen(names, "re");
	char buf[64];
	bool any = false;

	if (!f)
		return false;
	while (fgets(buf, sizeof(buf), f))
		any = any || strncmp(buf, "nat", 3) == 0 || strncmp(buf, "filter", 6) == 0;
	fclose(f);
	return any;
}

bool detect_legacy_tables(const char *const names[], size_t n_names)
{
	for (size_t i = 0; i < n_names; i++)
		if (legacy_tables_in(names[i]))
			return true;
	return false;
}
