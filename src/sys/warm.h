/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Memory faulted in ahead of its first write, on a thread of its own.
 *
 * A first sync writes a few hundred MiB the process has never touched:
 * the decoded input, the merged state, the plan.  On a VM whose balloon
 * hands free pages back to the host (free page reporting), the first write
 * of each page costs the host's fault and zeroing, 2.5-5 ms of CPU per MiB:
 * the largest part of svcnat's own share of a 10,000-service sync.  Those
 * steps run on one thread while the other cores idle; warm puts one of
 * them to faulting in what the sync is about to write, with
 * MADV_POPULATE_WRITE (Linux 5.14), which never changes a page's contents
 * and so may run beside the writes it is ahead of:
 *  - malloc's heap: while warm runs, glibc grows it in WARM_HEAP_STEP steps
 *    (M_TOP_PAD) and warm follows the program break;
 *  - regions a caller maps for itself and names with warm_region().
 * warm_stop() ends it before a step that keeps every core busy (the
 * writer's encode).  Every call but warm_start() is a no-op while warm is
 * not running; warm_start() starts nothing where the kernel lacks
 * MADV_POPULATE_WRITE.  Under ASan or valgrind, whose allocators do not
 * use the break, only the named regions are faulted in.
 */
#ifndef SVCNAT_SYS_WARM_H
#define SVCNAT_SYS_WARM_H

#include <stdbool.h>
#include <stddef.h>

/* How far past its need malloc's heap grows while warm runs. */
#define WARM_HEAP_STEP ((size_t)64 << 20)

/* The longest warm runs unless stopped (a daemon whose sources are slow
 * to answer has little to gain from following its heap for longer). */
#define WARM_MAX_SECONDS 120

/*
 * Start the thread.  false when it is running already, cannot be
 * started, or the kernel cannot populate (then nothing was changed).
 */
bool warm_start(void);

/* Fault in [p, p + len) too, a mapping the caller made and writes next. */
void warm_region(void *p, size_t len);

/*
 * The caller unmaps [p, p + len) next: when this returns warm neither
 * holds nor touches any of it.
 */
void warm_forget(const void *p, size_t len);

/* Wait until warm has nothing left to do (for tests). */
void warm_drain(void);

/*
 * Stop the thread and put malloc's settings back.  Returns the bytes warm
 * faulted in (pages already there count too); 0 when it was not running.
 */
size_t warm_stop(void);

/* Whether the thread is running. */
bool warm_running(void);

#endif
