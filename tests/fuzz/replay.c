/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Runs a libFuzzer harness's LLVMFuzzerTestOneInput() over files, without
 * libFuzzer: `make check` replays every seed and kept regression input of
 * tests/fuzz/<name>/ with the normal compiler and sanitizers (and under
 * valgrind in contrib/run-tests).  Usage: replay-NAME FILE|DIR...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		perror(path);
		return -1;
	}
	do {
		if (len + 65536 > cap) {
			unsigned char *nb = realloc(buf, cap = len + 65536);

			if (!nb) {
				fclose(f);
				free(buf);
				return -1;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	/* An exact-size copy, so that ASan sees reads past the input. */
	{
		unsigned char *exact = malloc(len ? len : 1);

		if (!exact) {
			free(buf);
			return -1;
		}
		memcpy(exact, buf, len);
		free(buf);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i, runs = 0;

	for (i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *de;

		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]) < 0)
				return 1;
			runs++;
			continue;
		}
		d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			return 1;
		}
		while ((de = readdir(d))) {
			char path[4096];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (replay_file(path) < 0) {
				closedir(d);
				return 1;
			}
			runs++;
		}
		closedir(d);
	}
	printf("%s: %d inputs replayed\n", argv[0], runs);
	return 0;
}
