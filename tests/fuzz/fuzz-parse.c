/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness for the iptables-save parser (src/core/parse.c), with a
 * render/parse round-trip oracle: whatever the parser accepts, rendered
 * (render_save) and parsed again, must parse, and render to the same text.
 * Both parse modes (all rules; PARSE_OWNED_ONLY, as --diff reads live
 * tables) are run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parse.h"
#include "core/render.h"

static char *render_text(const struct ruleset *rs, size_t *ret_len)
{
	char *t = NULL;
	FILE *f = open_memstream(&t, ret_len);

	if (!f || render_save(rs, RENDER_ALL, f) < 0)
		abort();
	fclose(f);
	return t;
}

static void round_trip(const char *text, size_t len, unsigned flags)
{
	struct ruleset *rs = NULL, *rs2 = NULL, *rs3 = NULL;
	struct diag_list d;
	char *t1, *t2, *t3;
	size_t n1, n2, n3;

	diag_list_init(&d);
	if (ruleset_parse(text, len, flags, &rs, &d) < 0) {
		diag_list_done(&d);
		return;
	}
	t1 = render_text(rs, &n1);
	if (ruleset_parse(t1, n1, 0, &rs2, &d) < 0) {
		fprintf(stderr, "rendered text does not parse:\n%s", t1);
		diag_list_print(&d, stderr);
		abort();
	}
	t2 = render_text(rs2, &n2);
	/* The first rendering may normalise (order, defaults); the second must
	 * be a fixed point. */
	if (ruleset_parse(t2, n2, 0, &rs3, &d) < 0)
		abort();
	t3 = render_text(rs3, &n3);
	if (n2 != n3 || memcmp(t2, t3, n2) != 0) {
		fprintf(stderr, "render/parse is not a fixed point:\n--- once\n%s--- twice\n%s", t2,
			t3);
		abort();
	}
	free(t1);
	free(t2);
	free(t3);
	ruleset_free(rs);
	ruleset_free(rs2);
	ruleset_free(rs3);
	diag_list_done(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	round_trip((const char *)data, size, 0);
	round_trip((const char *)data, size, PARSE_OWNED_ONLY);
	return 0;
}
