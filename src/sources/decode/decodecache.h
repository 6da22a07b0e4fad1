/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The items of a kubectl List kept from one decode of a file to the next:
 * each item's text and the objects it decoded to.  An item of
 * the next version whose text is byte for byte one kept is not parsed or
 * decoded again; its objects are taken as they were (the same pointers, so
 * downstream they are unchanged by identity).  Only items that decoded
 * without any diagnostic are kept, so a reused item reports nothing, as
 * its decode would not.  Of the text only its length and SHA-256 digest
 * are kept (the text itself is about the file's size, 15 MB at 10,000
 * services, kept for nothing else): two texts of one digest are taken as
 * equal, which neither chance nor a file's author can bring about.
 *
 * One decode uses it as a transaction: decode_cache_begin(), lookups and
 * adds, then _commit() (what was looked up or added is the new content,
 * the rest is dropped) or _abort() (the content stays as it was).
 */
#ifndef SVCNAT_SOURCES_DECODECACHE_H
#define SVCNAT_SOURCES_DECODECACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"

struct decode_cache;

int decode_cache_new(struct decode_cache **ret);
void decode_cache_free(struct decode_cache *c);

void decode_cache_begin(struct decode_cache *c);
/*
 * The item whose text is [p, p + len), if kept: its objects appended to
 * *out (new references), and it stays for the next version.  1 found, 0
 * not, -ENOMEM.
 */
struct decoded;
int decode_cache_take(struct decode_cache *c, const char *p, size_t len, struct decoded *out);
/* Keep the item [p, p + len) that decoded to these objects (references
 * taken).  0 or -ENOMEM (the item is then simply not kept). */
int decode_cache_add(struct decode_cache *c, const char *p, size_t len,
		     struct service *const *svcs, size_t n_svcs, struct epslice *const *eps,
		     size_t n_eps);
void decode_cache_commit(struct decode_cache *c);
void decode_cache_abort(struct decode_cache *c);

/* Items taken in the last decode (for the -v line and tests). */
size_t decode_cache_hits(const struct decode_cache *c);

/*
 * The end of the JSON value at p (an object or array, strings with their
 * escapes skipped), or NULL: no check that it is valid JSON.  For finding
 * a kept item's text: valid JSON of the same bytes ends at the same place.
 */
const char *decode_cache_skip(const char *p, const char *end);

#endif
