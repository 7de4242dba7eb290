/*
 * cxltrack-swap-mapper internals shared by the mapper (associations from
 * disk reads) and its memory manager (eviction and fault-in)
 *
 * Copyright (c) 2026 The cxltrack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_MEM_CXLTRACK_SWAP_MAPPER_INT_H
#define HW_MEM_CXLTRACK_SWAP_MAPPER_INT_H

#include <linux/cxltrack.h>
#include "qemu/thread.h"
#include "qemu/units.h"
#include "system/hostmem.h"
#include "hw/mem/cxltrack-swap-mapper.h"

#define BLOCK_SIZE (4 * KiB)

typedef struct CxltrackMemoryManager CxltrackMemoryManager;

/* What the memory manager did (read-only properties of the mapper) */
typedef struct CxltrackMmStats {
    uint64_t resident;          /* pages */
    uint64_t evicted_clean;     /* dropped, equal to their block */
    uint64_t evicted_zero;      /* dropped, all zeroes */
    uint64_t evicted_compared;  /* dropped clean, found so by comparing */
    uint64_t swap_writes;
    uint64_t silent_writes;     /* swap writes of a page equal to its block */
    uint64_t faults_block;      /* fault-ins from the disk image */
    uint64_t faults_swap;       /* ... from swap */
    uint64_t faults_zero;       /* ... of zeroes */
    uint64_t readahead_pages;   /* pages read with another's fault */
    uint64_t readahead_hits;    /* fault-ins served by them (no read) */
    uint64_t readahead_unused;  /* read ahead, pushed out unused */
    uint64_t host_reads;        /* reads of image or swap */
    uint64_t host_read_pages;   /* pages they read */
    uint64_t stale_reads;       /* brought back for a disk read to overwrite */
    uint64_t stale_reads_avoided;
    uint64_t double_paging;     /* brought back for a disk write to read */
    uint64_t double_paging_avoided; /* a disk write took them from storage */
    uint64_t copied_in;         /* brought back before their block changed */
    uint64_t errors;
    uint64_t periods;
    /* the False Reads Preventer (prevent=on) */
    uint64_t prevent_flagged;   /* evicted pages flagged in KVM */
    uint64_t prevent_unflagged;
    uint64_t prevent_full;      /* unflagged written whole: no read */
    uint64_t false_reads_avoided; /* of those, pages on disk or swap */
    uint64_t prevent_fetches;   /* read before unflagging (partial) */
    uint64_t prevent_exits;     /* vCPU exits that needed the page */
    uint64_t prevent_timeouts;  /* pages fetched for a SLOT_TIMEOUT, */
    uint64_t prevent_nonseq;    /* ... for scattered stores (NONSEQ), */
    uint64_t prevent_lost;      /* ... for a device reset (LOST) */
    uint64_t prevent_early_wakes; /* vCPU faults woken before the merge */
} CxltrackMmStats;

struct CxltrackSwapMapper {
    Object parent_obj;

    HostMemoryBackend *memdev;
    char *tracker;
    uint32_t disk;
    Object *user;               /* the disk device that claimed the mapper */

    int fd;
    uint8_t *ram;               /* the memdev's host mapping */
    uint64_t ram_size;
    QemuMutex lock;             /* the maps, the counters, the batch, mm */
    uint64_t writes_begun;
    uint64_t writes_ended;
    GHashTable *pages_of_block; /* block -> GArray of page addresses */
    GHashTable *block_of_page;  /* page address -> block */
    struct cxlt_bat_addr *batch;

    uint64_t associated;        /* pages given an association */
    uint64_t unassociated;      /* pages of reads that raced a write */
    uint64_t dropped;           /* associations taken away for a write */
    uint64_t errors;            /* failed set or discard calls */
    uint64_t failed_writes;     /* writes failed for an association kept */
    bool fail_drops;            /* x-fail-drops: tests of that path */

    /* the memory manager: on when swap-file is set (memory-manager.c) */
    char *swap_file;
    char *image;
    bool offload;
    uint64_t resident_limit;    /* bytes; 0: no limit */
    uint32_t period_ms;
    uint32_t readahead;         /* pages read per fault-in, at most */
    bool prevent;               /* flag evicted pages in KVM (issue 14) */
    uint32_t prevent_max;       /* pages flagged at once, at most */
    uint32_t prevent_timeout;   /* SLOT_TIMEOUT ticks to set; 0: keep */
    CxltrackMemoryManager *mm;
    CxltrackMmStats mms;
};

void cxltrack_swap_mapper_forget_page(CxltrackSwapMapper *s, uint64_t addr);
void cxltrack_swap_mapper_set_batch(CxltrackSwapMapper *s, uint32_t count);
/*
 * @fn for every block in [@first, @last) that is a key of @table (a map
 * from block to something), until one returns false; false if one did.
 */
typedef bool CxltrackBlockFn(CxltrackSwapMapper *s, uint64_t block);
bool cxltrack_swap_mapper_each_block(CxltrackSwapMapper *s, GHashTable *table,
                                     uint64_t first, uint64_t last,
                                     CxltrackBlockFn *fn);
/* every whole page of @s->ram that @qiov, at disk @offset, covers */
typedef void CxltrackPageFn(CxltrackSwapMapper *s, uint8_t *page,
                            uint64_t block, void *opaque);
void cxltrack_swap_mapper_for_each_page(CxltrackSwapMapper *s,
                                        QEMUIOVector *qiov, uint64_t offset,
                                        CxltrackPageFn *fn, void *opaque);

/*
 * The memory manager (cxltrack-memory-manager.c). Every call but start,
 * stop and add_properties is made with s->lock held.
 */
bool cxltrack_mm_start(CxltrackSwapMapper *s, Error **errp);
void cxltrack_mm_stop(CxltrackSwapMapper *s);
void cxltrack_mm_add_properties(Object *obj);
/* true if the page at @addr is resident (the mapper may touch it) */
bool cxltrack_mm_resident(CxltrackSwapMapper *s, uint64_t addr);
/* a disk read into these pages is about to be submitted */
void cxltrack_mm_read_begin(CxltrackSwapMapper *s, QEMUIOVector *qiov,
                            uint64_t offset);
/* ... completed (or failed) */
void cxltrack_mm_read_end(CxltrackSwapMapper *s, QEMUIOVector *qiov,
                          uint64_t offset);
/*
 * a disk write of blocks [first, last) from @qiov (NULL: no data); *@copy
 * (set when @qiov is not NULL): the data to write instead, or NULL
 */
bool cxltrack_mm_write_begin(CxltrackSwapMapper *s, uint64_t first,
                             uint64_t last, QEMUIOVector *qiov,
                             QEMUIOVector **copy);
/* frees a *@copy of cxltrack_mm_write_begin (no lock needed) */
void cxltrack_mm_write_copy_free(QEMUIOVector *copy);

#endif
