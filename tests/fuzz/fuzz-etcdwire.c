/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness for the etcd wire codec (src/sources/etcd/etcdwire.c): the
 * input is read as a range answer, a watch-stream line, a stream fed to the
 * framer in pieces, base64 and an etcd key.  Oracles: base64 encode/decode
 * round trips both ways; a key that parses formats back to itself and
 * parses to the same fields; the framer hands on exactly the non-blank
 * lines of what it was fed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/etcd/etcdwire.h"
#include "sources/net/base64.h"
#include "sources/net/framer.h"

struct lines {
	size_t n, bytes;
};

static int on_line(const char *line, size_t len, void *userdata)
{
	struct lines *l = userdata;

	if (!len || memchr(line, '\n', len))
		abort();
	l->n++;
	l->bytes += len;
	return 0;
}

static void framing(const char *data, size_t size)
{
	struct framer f;
	struct lines l = { 0 };
	size_t off = 0, step = size ? (unsigned char)data[0] % 17 + 1 : 1;
	size_t want = 0, want_bytes = 0, start = 0, i;
	int r = 0;

	framer_init(&f, 4096);
	while (off < size && r == 0) {
		size_t n = size - off < step ? size - off : step;

		r = framer_feed(&f, data + off, n, on_line, &l);
		off += n;
	}
	framer_done(&f);
	if (r == -EFBIG || r == -ENOMEM)
		return;
	if (r < 0)
		abort();
	/* Complete lines that are not all blank ("\r", spaces and tabs count
	 * as blank). */
	for (i = 0; i < size; i++) {
		if (data[i] != '\n')
			continue;
		for (size_t k = start; k < i; k++) {
			if (!strchr(" \t\r", data[k]) || !data[k]) {
				want++;
				want_bytes += i - start;
				break;
			}
		}
		start = i + 1;
	}
	if (l.n != want || l.bytes != want_bytes)
		fprintf(stderr, "framer: %zu lines (%zu bytes), want %zu (%zu)\n", l.n, l.bytes,
			want, want_bytes), abort();
}

static void base64(const char *data, size_t size)
{
	char *enc, *dec = NULL, *dec2 = NULL;
	size_t n, n2;

	enc = base64_encode(data, size);
	if (!enc)
		abort();
	if (base64_decode(enc, strlen(enc), &dec, &n) < 0 || n != size ||
	    memcmp(dec, data, size) != 0)
		abort();
	free(enc);
	free(dec);
	dec = NULL;
	if (base64_decode(data, size, &dec, &n) == 0) {
		enc = base64_encode(dec, n);
		if (!enc || base64_decode(enc, strlen(enc), &dec2, &n2) < 0 || n2 != n ||
		    memcmp(dec, dec2, n) != 0)
			abort();
		free(enc);
		free(dec2);
	}
	free(dec);
}

static void keys(const char *data, size_t size)
{
	struct etcd_key k, k2;
	char *s;

	if (etcd_key_parse("/registry", data, size, &k) != 0)
		return;
	s = etcd_key_format("/registry", k.kind, k.ns[0] ? k.ns : NULL, k.name);
	if (!s)
		return;
	if (etcd_key_parse("/registry", s, strlen(s), &k2) != 0 || k2.kind != k.kind ||
	    strcmp(k2.ns, k.ns) || strcmp(k2.name, k.name))
		fprintf(stderr, "key %s does not parse back\n", s), abort();
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct etcd_range_resp rr;
	struct etcd_watch_resp w;

	if (etcd_range_resp_parse(buf, size, &rr) == 0)
		etcd_range_resp_done(&rr);
	if (etcd_watch_resp_parse(buf, size, &w) == 0) {
		(void)etcd_error_is_compacted(w.error ? w.error : "");
		etcd_watch_resp_done(&w);
	}
	framing(buf, size);
	base64(buf, size);
	keys(buf, size);
	return 0;
}
