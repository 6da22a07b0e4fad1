/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One YAML document from a buffer, with libyaml, in time and memory linear
 * in the input.  libyaml itself bounds nothing: its scanner does work
 * quadratic in the nesting depth (100,000 '[' took minutes), and a caller
 * that follows aliases expands "billion laughs" documents of a few hundred
 * bytes into gigabytes.  So the events are checked first, and the document
 * is loaded only when they pass:
 *
 *  - no NUL byte in the text;
 *  - no alias (*name): svcnat expands none (anchors alone are harmless);
 *  - collections nested at most max_depth levels;
 *  - at most max_nodes nodes (scalars, sequences, mappings);
 *  - one document: a second one that holds anything (kube-proxy and
 *    client-go would silently read the first only) is refused.  An empty
 *    one after a trailing "---" is not content.
 */
#ifndef SVCNAT_SOURCES_YAMLDOC_H
#define SVCNAT_SOURCES_YAMLDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#define YAMLDOC_MAX_DEPTH 64
#define YAMLDOC_MAX_NODES 200000

struct yamldoc_error {
	bool syntax;      /* libyaml could not parse it (else: a limit above) */
	unsigned long line, column; /* 1-based */
	char msg[200];
};

/*
 * Load the first document of text[0..len) into *ret (the caller's:
 * yaml_document_delete()).  0; -EINVAL with *err filled; -ENOMEM.
 * An empty text loads as a document without a root node.
 */
int yamldoc_load(const char *text, size_t len, yaml_document_t *ret, struct yamldoc_error *err);

#endif
