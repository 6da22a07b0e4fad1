/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the decoders (decode-*.c), not for use outside them.
 *
 * A struct dctx carries where a decoder is: the source (file) name, the
 * object label ("ns/name", or "items[3]" before the name is known) and the
 * field path ("spec.ports[0].port").  Every check_* / get_* helper below
 * reports a failure as one DIAG_ERROR at that place and returns -EINVAL
 * (the object is skipped), or -ENOMEM when the diag cannot be stored.
 * JSON null counts as absent everywhere, as in Go.  Returned strings point
 * into the cJSON tree: copy what is kept.
 */
#ifndef SVCNAT_SOURCES_DECODE_JSON_H
#define SVCNAT_SOURCES_DECODE_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/model.h"
#include "util.h"

struct dctx {
	const char *source;
	struct diag_list *diags;
	const char *where;   /* "items[3]" inside a List, "" otherwise */
	char object[512];    /* diag object label */
	char path[256];      /* diag field path */
	size_t plen;
};

/* --- diagnostics at the current object and path --- */

/* Record the object's one error; returns -EINVAL (object skipped) or -ENOMEM. */
_printf_(2, 3) int dec_fail(struct dctx *c, const char *fmt, ...);

/* dec_fail() with key added to the path for this one error (a field of
 * the object at the current path). */
_printf_(3, 4) int dec_fail_at(struct dctx *c, const char *key, const char *fmt, ...);

/* A diag of any level that does not skip the object; 0 or -ENOMEM. */
_printf_(3, 4) int dec_report(struct dctx *c, enum diag_level level, const char *fmt, ...);

/*
 * Extend the field path (printf-style, ".key" or "[i]" by the two
 * shorthands); each returns the old length for dec_path_pop().  A path
 * that would overflow is truncated, never an error.
 */
_printf_(2, 3) size_t dec_path_push(struct dctx *c, const char *fmt, ...);
size_t dec_path_key(struct dctx *c, const char *key);
size_t dec_path_idx(struct dctx *c, size_t i);
void dec_path_pop(struct dctx *c, size_t old);

/* Object label: "<kind> ns/name" when both are known, else "<kind> <where>". */
void dec_set_object(struct dctx *c, const char *kind, const char *ns, const char *name);

/* Quote a string for a message into buf (returned): at most 64 bytes,
 * non-printables escaped. */
const char *dec_quote(const char *s, char *buf, size_t len);

/* A number as JSON would print it (integral values without a fraction). */
void dec_fmt_number(double v, char *buf, size_t len);

/* Describe a JSON value for a message ("\"x\"", "42", "an array", ...). */
const char *dec_describe(const cJSON *j, char *buf, size_t len);

/* "expected <expected>, got <j>" as the object's error (-EINVAL). */
int dec_type_error(struct dctx *c, const cJSON *j, const char *expected);

/* --- NUL characters --- */

/*
 * cJSON decodes "\u0000" (and copies a raw NUL byte) into its C strings,
 * which then end there: "we\u0000b" would read as "we".  dec_mark_nuls()
 * finds every string of text (the exact span cJSON parsed into root) that
 * holds a NUL and flags its node: DEC_NUL_VALUE for a string value,
 * DEC_NUL_KEY for a member whose key holds one (bits of cJSON's type that
 * cJSON itself leaves alone).  Returns 0, 1 when a key holds a NUL (the
 * byte offset of the first such key in *ret_key_off), or -ENOMEM.  Costs a
 * memchr/memmem pass when text holds neither a NUL byte nor "u0000".
 */
#define DEC_NUL_VALUE (1 << 12)
#define DEC_NUL_KEY (1 << 13)
int dec_mark_nuls(cJSON *root, const char *text, size_t len, size_t *ret_key_off);

/* Whether string value j was cut short at a NUL (dec_check_str() refuses it). */
bool dec_has_nul(const cJSON *j);

/* How many arrays and objects are open at byte off of text (strings skipped). */
size_t dec_depth_at(const char *text, size_t off);

/* --- lookups (no diags) --- */

/* Member key of obj (obj may be NULL); NULL when absent or null.  Of
 * duplicate keys the last wins, as in Go's encoding/json and the API server. */
const cJSON *dec_get(const cJSON *obj, const char *key);

/* Go's encoding/json: keys match case-insensitively and the last one wins.
 * The _raw variant returns a null member as it is. */
const cJSON *dec_get_ci_raw(const cJSON *obj, const char *key);
const cJSON *dec_get_ci(const cJSON *obj, const char *key);

/* --- typed checks of j at the current path, and getters of obj.key --- */

/* A string within DECODE_MAX_STRING bytes, without a NUL. */
int dec_check_str(struct dctx *c, const cJSON *j, const char **ret);

/* *ret = string or NULL when absent. */
int dec_get_str(struct dctx *c, const cJSON *obj, const char *key, const char **ret);

int dec_check_object(struct dctx *c, const cJSON *j);

/* *ret = the object or NULL when absent. */
int dec_get_object(struct dctx *c, const cJSON *obj, const char *key, const cJSON **ret);

/* Array j with at most max entries; *n = its length. */
int dec_check_array(struct dctx *c, const cJSON *j, size_t max, size_t *n);

/* *ret = the array or NULL when absent, *n its length. */
int dec_get_array(struct dctx *c, const cJSON *obj, const char *key, size_t max,
		  const cJSON **ret, size_t *n);

/*
 * Each entry i of the array at key in obj (at most max; absent = empty):
 * fn(c, entry, i, ud), the path at key[i] during the call, in order, up to
 * the first failure.  With ret_v, *ret_v first gets calloc'ed room for the
 * n entries of sz bytes each (untouched when there are none).  Returns 0,
 * dec_get_array()'s error, -ENOMEM, or fn's first negative return.
 */
typedef int (*dec_entry_fn)(struct dctx *c, const cJSON *entry, size_t i, void *ud);
int dec_each(struct dctx *c, const cJSON *obj, const char *key, size_t max, void **ret_v,
	     size_t sz, dec_entry_fn fn, void *ud);

/* *ret = -1 absent, 0 false, 1 true. */
int dec_get_bool(struct dctx *c, const cJSON *obj, const char *key, int *ret);

/* An integer in min..max; `what` names it in errors ("... is not a valid port"). */
int dec_check_uint(struct dctx *c, const cJSON *j, uint32_t min, uint32_t max,
		   const char *what, uint32_t *ret);

/* *ret = value, or 0 when absent (0 itself is accepted only if min is 0). */
int dec_get_uint(struct dctx *c, const cJSON *obj, const char *key, uint32_t min,
		 uint32_t max, const char *what, uint32_t *ret);

/* Protocol at key (TCP, UDP, SCTP); absent or "" = TCP. */
int dec_get_proto(struct dctx *c, const cJSON *obj, const char *key, uint8_t *ret);

/* s checked by ok (one of decode-names.h); what names the rule in the error. */
int dec_check_name(struct dctx *c, const char *s, bool (*ok)(const char *), const char *what);

/* String at key, validated by ok (skipped when ok is NULL), copied (caller
 * frees); NULL if absent. */
int dec_dup_str(struct dctx *c, const cJSON *obj, const char *key,
		bool (*ok)(const char *), const char *what, char **ret);

/* IP address string j. */
int dec_check_ip(struct dctx *c, const cJSON *j, struct ipaddr *ret);

/* An array of at most DECODE_MAX_ADDRS IP strings at key into a new array
 * (caller frees; NULL and 0 when absent or empty). */
int dec_get_ip_list(struct dctx *c, const cJSON *obj, const char *key, struct ipaddr **ret,
		    size_t *ret_n);

#endif
