/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Chain names exactly as kube-proxy derives them:
 *   PREFIX + first 16 characters of base32(SHA-256(svcPortName + protocol [+ endpoint]))
 * where svcPortName is "ns/name:port" ("ns/name" when the port is unnamed),
 * protocol is lowercase ("tcp") and endpoint is "ip:port" ("[ip6]:port").
 */
#ifndef SVCNAT_CORE_CHAINNAME_H
#define SVCNAT_CORE_CHAINNAME_H

#include <stddef.h>
#include <stdint.h>

#include "core/ruleset.h"

#define CHAIN_HASH_LEN 16

/* out must hold CHAIN_HASH_LEN + 1 bytes.  If libcrypto fails (out of memory),
 * out is the empty string; chain_name() then also yields "". */
void chain_hash(const char *svc_port_name, const char *proto, const char *endpoint,
		char out[CHAIN_HASH_LEN + 1]);

/* prefix is "KUBE-SVC-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-" or "KUBE-SEP-";
 * endpoint only for KUBE-SEP-.  out holds RS_CHAIN_MAXLEN + 1 bytes. */
void chain_name(const char *prefix, const char *svc_port_name, const char *proto,
		const char *endpoint, char out[RS_CHAIN_MAXLEN + 1]);

/*
 * A reusable hasher for planning many names at once: it fetches SHA-256
 * and allocates its digest context once instead of per name (about 3x
 * faster with OpenSSL 3).  chain_hasher_new() returns NULL on ENOMEM.
 * chain_hasher_hash() yields the same as chain_hash(), "" on failure.
 */
struct chain_hasher;

struct chain_hasher *chain_hasher_new(void);
/*
 * A hasher that also remembers every name it hashed, so that planning the
 * same service ports again (the daemon's next sync) computes only the
 * names of new ones; chain_hasher_sweep() forgets those not hashed since
 * the previous sweep (the planner sweeps after each plan).  The memo is
 * only a cache: when it cannot grow (ENOMEM) names are computed anew.
 */
struct chain_hasher *chain_hasher_new_memo(void);
void chain_hasher_sweep(struct chain_hasher *h);
/* Names remembered (0 without a memo). */
size_t chain_hasher_remembered(const struct chain_hasher *h);
void chain_hasher_free(struct chain_hasher *h);
void chain_hasher_hash(struct chain_hasher *h, const char *svc_port_name, const char *proto,
		       const char *endpoint, char out[CHAIN_HASH_LEN + 1]);

#endif
