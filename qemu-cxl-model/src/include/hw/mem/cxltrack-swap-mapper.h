/*
 * cxltrack-swap-mapper: associations of guest pages on a cxltrack device
 * with the virtual disk blocks read into them
 *
 * Copyright (c) 2026 The cxltrack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_MEM_CXLTRACK_SWAP_MAPPER_H
#define HW_MEM_CXLTRACK_SWAP_MAPPER_H

#include "qemu/iov.h"
#include "qom/object.h"

#define TYPE_CXLTRACK_SWAP_MAPPER "cxltrack-swap-mapper"
OBJECT_DECLARE_SIMPLE_TYPE(CxltrackSwapMapper, CXLTRACK_SWAP_MAPPER)

/* A read's token when a disk write was in flight as it was submitted. */
#define CXLTRACK_SWAP_MAPPER_NO_TOKEN UINT64_MAX

/*
 * The disk's user (virtio-blk) calls, in this order per request:
 * read_begin before submitting a read into @qiov from @offset, read_done
 * after it completed (@ok: successfully) and before the guest is told;
 * write_begin before submitting a write (from @qiov), discard or
 * write-zeroes (@qiov and @copy NULL) of @bytes at @offset, write_end
 * when it completed, failed or not. write_begin returns false when a page
 * could keep claiming a block the write changes: the disk fails the write
 * with an I/O error instead of submitting it (and still calls write_end).
 * For a write, *@copy is set to NULL or to the data the disk must write
 * instead of @qiov's (the memory manager's copy of pages it evicted; not
 * in registered RAM), which write_end(@copy) frees.
 */
uint64_t cxltrack_swap_mapper_read_begin(CxltrackSwapMapper *s,
                                         QEMUIOVector *qiov, uint64_t offset);
void cxltrack_swap_mapper_read_done(CxltrackSwapMapper *s, QEMUIOVector *qiov,
                                    uint64_t offset, uint64_t token, bool ok);
bool cxltrack_swap_mapper_write_begin(CxltrackSwapMapper *s, uint64_t offset,
                                      uint64_t bytes, QEMUIOVector *qiov,
                                      QEMUIOVector **copy);
void cxltrack_swap_mapper_write_end(CxltrackSwapMapper *s, QEMUIOVector *copy);

/*
 * One disk per mapper: can_claim (false with @errp if another disk has it
 * or the mapper is not open) early in the disk's realize, claim at its end.
 */
bool cxltrack_swap_mapper_can_claim(CxltrackSwapMapper *s, Object *disk,
                                    Error **errp);
void cxltrack_swap_mapper_claim(CxltrackSwapMapper *s, Object *disk);
/* The disk goes away: the mapper may serve another. */
void cxltrack_swap_mapper_unclaim(CxltrackSwapMapper *s, Object *disk);

#endif
