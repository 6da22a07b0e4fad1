/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Base64 (RFC 4648 standard alphabet, '=' padding), as etcd's JSON gateway
 * writes keys and values and kubeconfig files carry certificates.  Pure
 * (tests/unit/test-net.c, tests/fuzz/fuzz-etcdwire.c).
 */
#ifndef SVCNAT_SOURCES_NET_BASE64_H
#define SVCNAT_SOURCES_NET_BASE64_H

#include <stddef.h>

/* Encode len bytes.  A new NUL-terminated string, or NULL (out of memory). */
char *base64_encode(const void *data, size_t len);

/*
 * Decode n chars of base64 (padding optional, no whitespace, unused bits
 * zero).  The result, owned by the caller, is NUL-terminated for
 * convenience (*ret_len excludes it).  0, -EINVAL, -ENOMEM.
 */
int base64_decode(const char *s, size_t n, char **ret, size_t *ret_len);

#endif
