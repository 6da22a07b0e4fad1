/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Kubernetes' protobuf wire (Accept: application/vnd.kubernetes.protobuf),
 * read into the JSON text the JSON half (kubewire.h) reads, so that both
 * wires give the same items by construction:
 *
 *  - an object or a list page: the 4 bytes "k8s\0", then a runtime.Unknown
 *    whose typeMeta names the kind ("ServiceList", "Node", "Status", ...)
 *    and whose raw bytes are that message;
 *  - a watch stream (";stream=watch"): frames of a 4-byte big-endian length
 *    and a meta/v1 WatchEvent (no magic, no envelope), whose object.raw is
 *    an enveloped object as above.
 *
 * Only the fields of src/sources/kube/proto/k8s.proto are read (those the
 * decoders look at); others are skipped.  Field names in the JSON are the
 * API's; a targetPort comes out as a number or a string, a Time as RFC 3339.
 */
#ifndef SVCNAT_SOURCES_KUBEPB_H
#define SVCNAT_SOURCES_KUBEPB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sources/kube/kubewire.h"

#define KUBEPB_CONTENT_TYPE "application/vnd.kubernetes.protobuf"
/* What the source sends with --kube-api-content-type protobuf (client-go's). */
#define KUBEPB_ACCEPT "application/vnd.kubernetes.protobuf, application/json"

/* True if buf starts with the "k8s\0" magic. */
bool kubepb_is(const void *buf, size_t len);

/* True if a Content-Type header value (NULL: none) is the protobuf one,
 * with or without parameters (";stream=watch"). */
bool kubepb_content_type(const char *ct);

/*
 * Read one enveloped object or list (magic + runtime.Unknown) into a new
 * NUL-terminated JSON text in *ret_json (length in *ret_len; the caller
 * frees it).  0, -EINVAL (not one, or a kind svcnat does not read: the
 * reason in why), -ENOMEM.
 */
int kubepb_to_json(const void *buf, size_t len, char **ret_json, size_t *ret_len, char *why,
		   size_t whylen);

/*
 * Read one watch frame's WatchEvent (without its length) into a JSON event
 * line {"type": ..., "object": {...}} (no newline), as kubepb_to_json().
 * kind is the resource's kind ("Service"), used when object.raw carries
 * no envelope.
 */
int kubepb_event_to_json(const void *buf, size_t len, const char *kind, char **ret_json,
			 size_t *ret_len, char *why, size_t whylen);

/* The length-delimited frames of one protobuf watch stream. */
struct kubepb_watch {
	uint8_t *buf; /* bytes of the frame being read */
	size_t len, cap;
};

void kubepb_watch_init(struct kubepb_watch *w);
void kubepb_watch_done(struct kubepb_watch *w);
/* Start a new stream (drops a partial frame of the last one). */
void kubepb_watch_reset(struct kubepb_watch *w);

/*
 * kube_sink_watch_feed() for a protobuf stream: every complete frame is
 * read into its JSON event and applied to s exactly as a JSON stream's
 * line would be.  A frame longer than KUBE_MAX_EVENT, or one that does
 * not read, ends the stream (KUBE_WATCH_BROKEN, reason in why).
 */
enum kube_watch_verdict kubepb_watch_feed(struct kubepb_watch *w, struct kube_sink *s,
					  const char *data, size_t n, char *why, size_t whylen);

#endif
