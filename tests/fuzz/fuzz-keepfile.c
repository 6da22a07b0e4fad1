/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness for the state svcnat keeps across restarts
 * (src/backend/keepfile.c, src/backend/nft/nftkeep.c): the file a
 * previous process left in the runtime directory, which a damaged disk or
 * another program may have changed.
 *
 *  - The input as a whole file: its header and checksum are checked
 *    (refused, never misread or read past its end).
 *  - The input as the nf_tables writer's payload: it decodes to a state or
 *    is refused (its chains left as bytes too, when decoded); a state
 *    decoded encodes again, and that decodes and encodes to the same bytes
 *    (nothing decoded is lost or invented).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/keepfile.h"
#include "backend/nft/nftkeep.h"

static const struct keepkey key = { .cookie = 1, .ino = 2, .dev = 3 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nftread_state *st = NULL, *again = NULL;
	struct keepbuf b1 = { 0 }, b2 = { 0 };
	const char *why = NULL;
	uint8_t *copy;
	size_t off, len;
	uint32_t gen;

	if (keepfile_parse(data, size, "nft", &key, &gen, &off, &len, &why) == 0 &&
	    (off + len != size || off < KEEPFILE_HEADER_SIZE))
		abort();
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (nftkeep_decode(copy, 0, size, &st) < 0)
		return 0;
	/* The chains left as bytes are checked when decoded. */
	if (nftkeep_materialize(st) < 0) {
		nftread_state_free(st);
		return 0;
	}
	if (nftkeep_encode(st, &b1) < 0)
		abort(); /* everything decoded must encode */
	if (nftkeep_decode(b1.p, 0, b1.n, &again) < 0 || nftkeep_materialize(again) < 0)
		abort();
	/* Packed back into bytes of their own (as after a sync), the chains
	 * encode to the same file. */
	nftkeep_pack(again);
	if (nftkeep_encode(again, &b2) < 0)
		abort();
	if (b1.n != b2.n || memcmp(b1.p, b2.p, b1.n) != 0)
		abort();
	keepbuf_done(&b2);
	nftread_state_free(st);
	nftread_state_free(again);
	return 0;
}
