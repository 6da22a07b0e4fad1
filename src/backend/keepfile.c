/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/keepfile.h"
#include "util.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

#define MAGIC "svcnatK\n"
#define FORMAT_VERSION 1
#define NAME_MAX_LEN 16

/*
 * The header, little endian:
 *   0 magic[8]  8 version u32  12 header size u32  16 name[16] (NUL-padded)
 *  32 cookie u64  40 ino u64  48 dev u64  56 boot[16]  72 gen u32
 *  76 zero u32  80 payload length u64  88 checksum u64  96 payload
 */

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

uint64_t keepfile_checksum(const void *data, size_t len)
{
	/* A multiply-xorshift over 8-byte words: damage, not malice, is what
	 * it catches (the file is root's, mode 0600). */
	const uint8_t *p = data;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ len;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		h ^= get_le(p + i, 8);
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	if (i < len) {
		h ^= get_le(p + i, (int)(len - i)) ^ 0x80;
		h *= 0xc4ceb9fe1a85ec53ull;
	}
	h ^= h >> 29;
	h *= 0xff51afd7ed558ccdull;
	return h ^ h >> 32;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int read_boot_id(uint8_t boot[16])
{
	char s[64];
	size_t k = 0;
	ssize_t n;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, s, sizeof(s) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	for (ssize_t i = 0; i < n && k < 32; i++) {
		int v = hexval(s[i]);

		if (v < 0)
			continue;
		boot[k / 2] = (uint8_t)(k % 2 ? boot[k / 2] | v : v << 4);
		k++;
	}
	return k == 32 ? 0 : -EIO;
}

int keepfile_key(struct keepkey *ret)
{
	struct keepkey k = { 0 };
	socklen_t len = sizeof(k.cookie);
	struct stat st;
	int fd, r;

	if (stat("/proc/self/ns/net", &st) < 0)
		return -errno;
	k.ino = st.st_ino;
	k.dev = st.st_dev;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &k.cookie, &len) < 0 ? -errno : 0;
	close(fd);
	if (r == -EINVAL || r == -ENOPROTOOPT)
		return -ENOPROTOOPT;
	if (r < 0)
		return r;
	r = read_boot_id(k.boot);
	if (r < 0)
		return r;
	*ret = k;
	return 0;
}

const char *keepfile_dir(const char *dir)
{
	if (!dir)
		dir = getenv("SVCNAT_RUNTIME_DIR");
	if (!dir)
		dir = KEEPFILE_DEFAULT_DIR;
	return *dir ? dir : NULL;
}

int keepfile_path(const char *dir, const char *name, const struct keepkey *k, char *buf,
		  size_t size)
{
	int n = snprintf(buf, size, "%s/%s-%llu-%llu.keep", dir, name, (unsigned long long)k->dev,
			 (unsigned long long)k->ino);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* A directory svcnat may keep files in: ours, not writable by others. */
static int dir_safe(const char *dir, const char **ret_why)
{
	struct stat st;

	if (lstat(dir, &st) < 0) {
		*ret_why = "cannot be read";
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		*ret_why = "is not a directory";
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		*ret_why = "is owned by another user";
		return -EPERM;
	}
	if (st.st_mode & 0022) {
		*ret_why = "is writable by group or others";
		return -EPERM;
	}
	return 0;
}

static void header_build(uint8_t *h, const char *name, const struct keepkey *k, uint32_t gen,
			 const void *payload, size_t len)
{
	memset(h, 0, KEEPFILE_HEADER_SIZE);
	memcpy(h, MAGIC, 8);
	put_le(h + 8, FORMAT_VERSION, 4);
	put_le(h + 12, KEEPFILE_HEADER_SIZE, 4);
	memcpy(h + 16, name, strnlen(name, NAME_MAX_LEN));
	put_le(h + 32, k->cookie, 8);
	put_le(h + 40, k->ino, 8);
	put_le(h + 48, k->dev, 8);
	memcpy(h + 56, k->boot, 16);
	put_le(h + 72, gen, 4);
	put_le(h + 80, len, 8);
	put_le(h + 88, keepfile_checksum(payload, len), 8);
}

static int write_all(int fd, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int keepfile_write(const char *dir, const char *name, const struct keepkey *k, uint32_t gen,
		   const void *payload, size_t len, struct diag_list *d)
{
	char path[4096], tmp[4096 + 16];
	uint8_t h[KEEPFILE_HEADER_SIZE];
	const char *why = NULL;
	_cleanup_close_ int fd = -1;
	int r;

	if (strlen(name) > NAME_MAX_LEN || keepfile_path(dir, name, k, path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	if (len > KEEPFILE_MAX_SIZE - KEEPFILE_HEADER_SIZE) {
		diag_add(d, DIAG_WARNING, path, NULL, NULL,
			 "not written: the state is larger than %zu MiB", KEEPFILE_MAX_SIZE >> 20);
		return -EFBIG;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		diag_add(d, DIAG_WARNING, dir, NULL, NULL, "cannot create the directory: %s",
			 strerror(-r));
		return r;
	}
	r = dir_safe(dir, &why);
	if (r < 0) {
		diag_add(d, DIAG_WARNING, dir, NULL, NULL, "not used to keep state: it %s", why);
		return r;
	}
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		diag_add(d, DIAG_WARNING, path, NULL, NULL, "cannot be written: %s", strerror(-r));
		return r;
	}
	header_build(h, name, k, gen, payload, len);
	r = fchmod(fd, 0600) < 0 ? -errno : 0;
	if (r >= 0)
		r = write_all(fd, h, sizeof(h));
	if (r >= 0)
		r = write_all(fd, payload, len);
	if (r >= 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		diag_add(d, DIAG_WARNING, path, NULL, NULL, "cannot be written: %s", strerror(-r));
	}
	return r;
}

int keepfile_parse(const void *buf, size_t len, const char *name, const struct keepkey *k,
		   uint32_t *ret_gen, size_t *ret_off, size_t *ret_len, const char **ret_why)
{
	const uint8_t *h = buf;
	char hname[NAME_MAX_LEN] = { 0 };
	uint64_t plen;

	if (len < KEEPFILE_HEADER_SIZE || memcmp(h, MAGIC, 8) != 0) {
		*ret_why = "not a svcnat state file (or truncated)";
		return -EINVAL;
	}
	if (get_le(h + 8, 4) != FORMAT_VERSION || get_le(h + 12, 4) != KEEPFILE_HEADER_SIZE) {
		*ret_why = "written by another version of svcnat";
		return -ESTALE;
	}
	memcpy(hname, name, strnlen(name, NAME_MAX_LEN));
	if (memcmp(h + 16, hname, NAME_MAX_LEN) != 0) {
		*ret_why = "written by another writer";
		return -ESTALE;
	}
	if (get_le(h + 32, 8) != k->cookie || get_le(h + 40, 8) != k->ino ||
	    get_le(h + 48, 8) != k->dev || memcmp(h + 56, k->boot, 16) != 0) {
		*ret_why = "written in another network namespace or boot";
		return -ESTALE;
	}
	plen = get_le(h + 80, 8);
	if (plen != len - KEEPFILE_HEADER_SIZE) {
		*ret_why = "truncated (its length does not match)";
		return -EINVAL;
	}
	if (get_le(h + 88, 8) != keepfile_checksum(h + KEEPFILE_HEADER_SIZE, (size_t)plen)) {
		*ret_why = "damaged (its checksum does not match)";
		return -EINVAL;
	}
	*ret_gen = (uint32_t)get_le(h + 72, 4);
	*ret_off = KEEPFILE_HEADER_SIZE;
	*ret_len = (size_t)plen;
	return 0;
}

static int read_whole(int fd, size_t size, void **ret)
{
	_cleanup_free_ uint8_t *buf = malloc(size ? size : 1);
	size_t at = 0;

	if (!buf)
		return -ENOMEM;
	while (at < size) {
		ssize_t n = read(fd, buf + at, size - at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* shrank under us */
		at += (size_t)n;
	}
	*ret = TAKE_PTR(buf);
	return 0;
}

int keepfile_read(const char *dir, const char *name, const struct keepkey *k, uint32_t *ret_gen,
		  void **ret_buf, size_t *ret_off, size_t *ret_len, struct diag_list *d)
{
	char path[4096];
	const char *why = NULL;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ void *buf = NULL;
	struct stat st;
	int r;

	if (keepfile_path(dir, name, k, path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	if (fd < 0) {
		r = -errno;
		why = strerror(-r);
	} else if (fstat(fd, &st) < 0) {
		r = -errno;
		why = strerror(-r);
	} else if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		why = "not a regular file";
	} else if (st.st_uid != geteuid()) {
		r = -EPERM;
		why = "owned by another user";
	} else if (st.st_mode & 0077) {
		r = -EPERM;
		why = "readable or writable by group or others";
	} else if ((uint64_t)st.st_size > KEEPFILE_MAX_SIZE) {
		r = -EFBIG;
		why = "larger than the limit";
	} else if ((r = dir_safe(dir, &why)) < 0) {
		/* why says what of the directory */
	} else if ((r = read_whole(fd, (size_t)st.st_size, &buf)) < 0) {
		why = strerror(-r);
	} else {
		r = keepfile_parse(buf, (size_t)st.st_size, name, k, ret_gen, ret_off, ret_len, &why);
	}
	if (r < 0) {
		diag_add(d, DIAG_WARNING, path, NULL, NULL,
			 "the state kept by the previous run is ignored: %s", why);
		return r;
	}
	*ret_buf = TAKE_PTR(buf);
	return 0;
}

int keepfile_remove(const char *dir, const char *name, const struct keepkey *k)
{
	char path[4096];

	if (keepfile_path(dir, name, k, path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

/* --- payload buffers --- */

void keepbuf_done(struct keepbuf *b)
{
	free(b->p);
	*b = (struct keepbuf){ 0 };
}

void keepbuf_put(struct keepbuf *b, const void *data, size_t len)
{
	if (b->err)
		return;
	if (b->n + len > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *p;

		while (cap < b->n + len)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, len);
	b->n += len;
}

void keepbuf_u8(struct keepbuf *b, uint8_t v)
{
	keepbuf_put(b, &v, 1);
}

void keepbuf_u16(struct keepbuf *b, uint16_t v)
{
	uint8_t p[2];

	put_le(p, v, 2);
	keepbuf_put(b, p, 2);
}

void keepbuf_u32(struct keepbuf *b, uint32_t v)
{
	uint8_t p[4];

	put_le(p, v, 4);
	keepbuf_put(b, p, 4);
}

void keepbuf_u64(struct keepbuf *b, uint64_t v)
{
	uint8_t p[8];

	put_le(p, v, 8);
	keepbuf_put(b, p, 8);
}

void keepbuf_str(struct keepbuf *b, const char *s)
{
	size_t len = strlen(s);

	if (len > UINT16_MAX) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	keepbuf_u16(b, (uint16_t)len);
	keepbuf_put(b, s, len);
}

static const uint8_t *take(struct keepread *r, size_t len)
{
	const uint8_t *p;

	if (r->bad || len > r->n - r->at) {
		r->bad = true;
		return NULL;
	}
	p = r->p + r->at;
	r->at += len;
	return p;
}

uint8_t keepread_u8(struct keepread *r)
{
	const uint8_t *p = take(r, 1);

	return p ? *p : 0;
}

uint16_t keepread_u16(struct keepread *r)
{
	const uint8_t *p = take(r, 2);

	return p ? (uint16_t)get_le(p, 2) : 0;
}

uint32_t keepread_u32(struct keepread *r)
{
	const uint8_t *p = take(r, 4);

	return p ? (uint32_t)get_le(p, 4) : 0;
}

uint64_t keepread_u64(struct keepread *r)
{
	const uint8_t *p = take(r, 8);

	return p ? get_le(p, 8) : 0;
}

void keepread_bytes(struct keepread *r, void *out, size_t len)
{
	const uint8_t *p = take(r, len);

	if (p)
		memcpy(out, p, len);
	else
		memset(out, 0, len);
}

const char *keepread_str(struct keepread *r, size_t *ret_len)
{
	size_t len = keepread_u16(r);
	const uint8_t *p = take(r, len);

	if (p && memchr(p, '\0', len)) {
		r->bad = true;
		p = NULL;
	}
	*ret_len = p ? len : 0;
	return (const char *)p;
}
