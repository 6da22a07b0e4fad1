/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `svcnat etcd-load`: write the objects of a configuration file into etcd
 * under the layout of etcd.h, so a cluster store can be populated from
 * `kubectl get services,endpointslices -A -o json` output, the shipped
 * examples, or an original-format file.
 *
 *   Service        -> P/services/specs/<ns>/<name>
 *   EndpointSlice  -> P/services/endpointslices/<ns>/<name>
 *   Endpoints      -> P/services/endpoints/<ns>/<name>
 *   original {"Services": [{"Name", "Port", "Endpoints", ...}]}
 *                  -> P/services/specs/<Name> (the entry without Endpoints)
 *                     and P/services/endpoints/<Name>
 *                        {"Name": ..., "Endpoints": [...]}
 *
 * The file is walked as the file source decodes it (decode_walk(): the
 * same shapes, typed Lists such as "ServiceList" included, and the same
 * limits: a List over DECODE_MAX_ITEMS fails whole, nothing written).
 * Each value is the object's own JSON (unformatted).  An object the source's
 * decoder would reject is not written (one diag each); other kinds are
 * skipped with a note.  Writes are PUTs, batched in transactions of at most
 * ETCDLOAD_MAX_TXN_OPS objects; on a connection failure the next endpoint is
 * tried.  Blocking: this is a one-shot command, not for the daemon's loop.
 */
#ifndef SVCNAT_SOURCES_ETCDLOAD_H
#define SVCNAT_SOURCES_ETCDLOAD_H

#include "core/diag.h"
#include "sources/etcd/etcd.h"

#define ETCDLOAD_MAX_TXN_OPS 128           /* etcd's default --max-txn-ops */
#define ETCDLOAD_MAX_TXN_BYTES (1u << 20)  /* below etcd's 1.5 MiB request limit */

/*
 * Load path ("-" = stdin) into etcd.  Returns the number of objects written
 * (>= 0; rejected objects have diags), -EINVAL (bad options, or a file that
 * is not JSON or not a document svcnat knows: diag with line/column or the
 * reason), -EFBIG (too large, too many items), -ENOENT, -EIO (etcd
 * unreachable or refused: diag naming the endpoint and the error), -ENOMEM.
 */
int etcd_load_file(const struct etcd_options *o, const char *path, struct diag_list *d);

#endif
