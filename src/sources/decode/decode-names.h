/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The API server's name rules (k8s.io/apimachinery/pkg/util/validation)
 * that the decoders apply: names end up in iptables comments and chain-name
 * hashes.  Each takes a NUL-terminated string and returns whether it passes.
 */
#ifndef SVCNAT_SOURCES_DECODE_NAMES_H
#define SVCNAT_SOURCES_DECODE_NAMES_H

#include <stdbool.h>

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 bytes: namespaces. */
bool dec_is_dns1123_label(const char *s);

/* A DNS-1123 label starting with a letter: service names. */
bool dec_is_dns1035_label(const char *s);

/* Dot-separated DNS-1123 labels, at most 253 bytes: slice and node names. */
bool dec_is_dns1123_subdomain(const char *s);

/* A port name: a DNS label, or "" for an unnamed port (EndpointSlice ports
 * print their unnamed ports as "name": "", the API's pointer to ""). */
bool dec_is_port_name_or_empty(const char *s);

/* (([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?, at most 63 bytes */
bool dec_is_label_value(const char *s);

/* IANA_SVC_NAME: 1-15 of [a-z0-9-], a letter somewhere, no "--", no edge '-' */
bool dec_is_port_name(const char *s);

/* Legacy (2014) names had no rules; keep what is safe in comments:
 * [A-Za-z0-9][-A-Za-z0-9_.]*, at most 253 bytes. */
bool dec_is_legacy_name(const char *s);

#endif
