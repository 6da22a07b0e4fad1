/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a writer knew of the kernel's tables when the previous svcnat
 * process ended, kept in a file so that a restart that finds the kernel
 * exactly so need not read and compare everything again.
 *
 * One file per network namespace and writer, in the runtime directory
 * (/run/svcnat, or $SVCNAT_RUNTIME_DIR; /run is shared by every network
 * namespace of the machine): named by the namespace's inode, and holding
 * the namespace's cookie (SO_NETNS_COOKIE, never reused while the machine
 * runs, unlike the inode) and the boot id, so that a file of another
 * namespace or boot is never taken.  The payload is the writer's; with it
 * a 32-bit generation: the ruleset generation of nf_tables, or whatever
 * the writer checks its payload against.  Written atomically (a temporary
 * file renamed), mode 0600 in a directory of mode 0700; a file or
 * directory owned by another user or writable by group or others is not
 * read; a file larger than KEEPFILE_MAX_SIZE, truncated, or whose
 * checksum or header does not match is ignored.  The file is never
 * trusted by itself: the writer checks the kernel against what it says.
 */
#ifndef SVCNAT_BACKEND_KEEPFILE_H
#define SVCNAT_BACKEND_KEEPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"

/* Largest file read (and written). */
#define KEEPFILE_MAX_SIZE ((size_t)512 << 20)
/* The runtime directory when $SVCNAT_RUNTIME_DIR is not set. */
#define KEEPFILE_DEFAULT_DIR "/run/svcnat"
/* Bytes of the header before the payload. */
#define KEEPFILE_HEADER_SIZE 96

/* Which network namespace (and boot) a file belongs to. */
struct keepkey {
	uint64_t cookie;  /* SO_NETNS_COOKIE of the namespace */
	uint64_t ino;     /* /proc/self/ns/net: inode and device (the file's name) */
	uint64_t dev;
	uint8_t boot[16]; /* /proc/sys/kernel/random/boot_id, as bytes */
};

/*
 * The key of the calling thread's network namespace.  0, or -errno:
 * -ENOPROTOOPT where the kernel has no network namespace cookie (before
 * Linux 5.14; no file is then read or written).
 */
int keepfile_key(struct keepkey *ret);

/*
 * The runtime directory to use: dir when not NULL, else $SVCNAT_RUNTIME_DIR
 * when set, else KEEPFILE_DEFAULT_DIR.  NULL when that is the empty string
 * (nothing is kept).  Borrowed (static storage, the environment or dir).
 */
const char *keepfile_dir(const char *dir);

/*
 * The file's path for writer `name` ("nft", ...): DIR/NAME-DEV-INO.keep
 * into buf (size bytes).  0 or -ENAMETOOLONG.
 */
int keepfile_path(const char *dir, const char *name, const struct keepkey *k, char *buf,
		  size_t size);

/*
 * Write payload (len bytes) with generation gen as writer name's file of
 * namespace k in dir, creating dir (mode 0700) when it is missing.  0, or
 * -errno with a diag naming the path (-EPERM: dir is another user's or
 * writable by others; -EFBIG: too large).
 */
int keepfile_write(const char *dir, const char *name, const struct keepkey *k, uint32_t gen,
		   const void *payload, size_t len, struct diag_list *d);

/*
 * Read writer name's file of namespace k from dir.  On success *ret_buf
 * (malloc'ed, the caller frees it) holds the whole file, the payload at
 * *ret_off for *ret_len bytes, and *ret_gen the generation.  -ENOENT
 * (without a diag) when there is none; any other failure (unsafe
 * ownership or mode, too large, not this namespace's, damaged) -errno
 * with one warning naming the file and saying why it is ignored.
 */
int keepfile_read(const char *dir, const char *name, const struct keepkey *k, uint32_t *ret_gen,
		  void **ret_buf, size_t *ret_off, size_t *ret_len, struct diag_list *d);

/*
 * Check the bytes of a file (len bytes at buf) as keepfile_read() does
 * after reading them.  0 with *ret_gen, *ret_off and *ret_len; or -EINVAL
 * (damaged, not a file of this format) or -ESTALE (another writer,
 * namespace or boot), with *ret_why saying why (static storage).
 */
int keepfile_parse(const void *buf, size_t len, const char *name, const struct keepkey *k,
		   uint32_t *ret_gen, size_t *ret_off, size_t *ret_len, const char **ret_why);

/* Remove writer name's file of namespace k from dir, if any.  0 or -errno. */
int keepfile_remove(const char *dir, const char *name, const struct keepkey *k);

/*
 * A growing byte buffer for a writer's payload: put_* append in little
 * endian; the first allocation failure sticks in err (-ENOMEM) and
 * further puts do nothing.
 */
struct keepbuf {
	uint8_t *p;
	size_t n, cap;
	int err;
};

void keepbuf_done(struct keepbuf *b);
void keepbuf_put(struct keepbuf *b, const void *data, size_t len);
void keepbuf_u8(struct keepbuf *b, uint8_t v);
void keepbuf_u16(struct keepbuf *b, uint16_t v);
void keepbuf_u32(struct keepbuf *b, uint32_t v);
void keepbuf_u64(struct keepbuf *b, uint64_t v);
/* A string of at most 65535 bytes (longer: err = -EINVAL): length, bytes. */
void keepbuf_str(struct keepbuf *b, const char *s);

/*
 * Reading a payload back: every get_* past the end (or of a string with
 * a NUL in it) sets bad and yields zeros; check bad once at the end.
 */
struct keepread {
	const uint8_t *p;
	size_t n, at;
	bool bad;
};

uint8_t keepread_u8(struct keepread *r);
uint16_t keepread_u16(struct keepread *r);
uint32_t keepread_u32(struct keepread *r);
uint64_t keepread_u64(struct keepread *r);
void keepread_bytes(struct keepread *r, void *out, size_t len);
/* A string as keepbuf_str() wrote it: its bytes in the payload (not
 * NUL-terminated) and *ret_len; NULL (and bad) past the end. */
const char *keepread_str(struct keepread *r, size_t *ret_len);

/* The checksum of the payload (64 bits). */
uint64_t keepfile_checksum(const void *data, size_t len);

#endif
