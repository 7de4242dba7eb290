/*
 * cxltrack memory manager: a VM's RAM on a cxltrack device kept within a
 * resident limit with the device's books (VSwapper on the device)
 *
 * The swap mapper's memory manager, on when its swap-file is set:
 *
 *   -object memory-backend-ram,id=m1,size=128M,host-nodes=1,policy=bind
 *   -object cxltrack-swap-mapper,id=sm0,memdev=m1,tracker=/dev/cxltrack0,\
 *           disk=1,image=/vm/disk.img,swap-file=/vm/swap,resident-limit=32M
 *
 * Victims: every period-ms the manager harvests the device's accessed
 * bitmap with CLEAR (the accesses of every CPU and device, with no page
 * table scan); a resident page's age is the number of periods since its
 * device page was last accessed, and the oldest go first.
 *
 * Eviction of a page: write-protect it (userfaultfd), so that nobody
 * writes it until it is gone; with offload, discard-if-clean by address
 * (CXLT_BAT_DISCARD): a page that still holds the disk block read into it
 * is dropped with no swap write, and remembered as (disk, block). Else a
 * page of zeroes is dropped and remembered as such, and any other page is
 * written to the swap file. Then the page is dropped.
 *
 * Fault-in (userfaultfd MISSING, in a thread that takes no BQL): from its
 * block, installed write-protected, associated again, then opened, with
 * the following blocks of the image read in the same read (read-ahead
 * along the disk, VSwapper's answer to decayed swap sequentiality); from
 * swap, with the following slots. Those that hold other evicted pages
 * wait in a small cache, as in the kernel's swap cache, until the VM
 * faults on them (a hit: no read) or newer ones push them out (unused).
 * With offload, a disk read that covers an evicted page whole gets
 * a fresh page instead of the old copy (no stale swap read); a disk write
 * to a block an evicted page is remembered by first brings that page back
 * (VSwapper's data consistency); a disk write from evicted pages takes
 * their bytes from where they lie, a copy of the write's data with those
 * bytes read from the image or swap, and the pages stay evicted
 * (Tesseract's fix of double paging).
 *
 * Without offload the manager is the baseline: the same victims, every
 * page that is not zero written to swap, disk reads into evicted pages
 * faulted in first. The counters measure VSwapper's problems in both:
 * silent-writes (swap writes of a page equal to the disk block last read
 * into it, compared byte by byte), stale-reads (pages brought back from
 * swap or disk while a disk read that overwrites them whole was in
 * flight), double-paging (pages brought back because a disk write reads
 * them; double-paging-avoided: evicted pages a write took from storage),
 * host-reads (fault-ins that read image or swap) and readahead-hits
 * (fault-ins the read-ahead cache served): pages the VM needed per read,
 * the useful run length of the manager's reads (the copies for disk
 * writes are not counted there).
 *
 * With prevent (VSwapper's False Reads Preventer, KVM's
 * KVM_SET_PREVENT_READS): an evicted page is flagged in KVM first, so that
 * the guest's stores to it go into a write-buffer slot of the device
 * instead of faulting the old contents in. A page the guest wrote whole
 * (SLOT_FULL) is unflagged with no read: KVM merges the slot into a fresh
 * page. A page the guest reads, writes here and there (NONSEQ) or leaves
 * half written (SLOT_TIMEOUT) is read back first, then unflagged (the slot's
 * bytes win). See "The False Reads Preventer" below.
 *
 * Locking: everything under the mapper's lock. Nothing done under it
 * touches a page that is not resident (that would fault into the thread
 * that needs the lock), and no KVM ioctl of the Preventer is made under it:
 * flagging and unflagging wait for every vCPU to leave KVM's SRCU read side,
 * and a vCPU may be inside it waiting for the fault thread, which waits for
 * the lock.
 *
 * Copyright (c) 2026 The cxltrack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <poll.h>
#include <linux/userfaultfd.h>
#include <linux/kvm.h>
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qemu/madvise.h"
#include "qemu/memalign.h"
#include "qemu/userfaultfd.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "exec/memory.h"
#include "exec/cpu-common.h"
#include "exec/address-spaces.h"
#include "hw/core/cpu.h"
#include "system/kvm.h"
#include "cxltrack-swap-mapper-int.h"

/*
 * KVM_SET_PREVENT_READS and KVM_GET_PREVENT_READS are out of tree (the
 * cxltrack KVM series, kvm/patches/0004); linux-headers has no copy.
 */
#ifndef KVM_SET_PREVENT_READS
#define KVM_CAP_PREVENT_READS 1024
#define KVM_SET_PREVENT_READS _IOW(KVMIO, 0xd8, struct kvm_prevent_reads)
#define KVM_PREVENT_READS_SET (1ULL << 0)
#define KVM_PREVENT_READS_EVENTFD (1ULL << 1)
struct kvm_prevent_reads {
    __u64 gpa;
    __u64 size;
    __u64 flags;
    __s32 eventfd;
    __u32 pad;
};
#define KVM_GET_PREVENT_READS _IOW(KVMIO, 0xd9, struct kvm_prevent_query)
struct kvm_prevent_query {
    __u64 gpa;
    __u64 npages;
    __u64 pages;
    __u64 flags;
};
#define KVM_PREVENT_PAGE_NONE 0
#define KVM_PREVENT_PAGE_EMPTY 1
#define KVM_PREVENT_PAGE_PARTIAL 2
#define KVM_PREVENT_PAGE_FULL 3
#define KVM_PREVENT_EV_FULL (1U << 0)
#define KVM_PREVENT_EV_TIMEOUT (1U << 1)
#define KVM_PREVENT_EV_LOST (1U << 2)
#define KVM_PREVENT_EV_NONSEQ (1U << 3)
struct kvm_prevent_page_state {
    __u32 state;
    __u32 valid_bytes;
    __s32 slot;
    __u32 tracker;
    __u64 dpa_page;
    __u32 events;
    __u32 pad;
};
#endif

enum {
    PG_ABSENT,      /* never present: a fault gets zeroes */
    PG_RESIDENT,
    PG_ZERO,        /* evicted, was all zeroes */
    PG_BLOCK,       /* evicted, equal to disk block where[] */
    PG_SWAP,        /* evicted, in swap slot where[] */
};

#define F_STALE 1   /* a disk read that covers it whole is in flight */
#define F_SOURCE 2  /* a disk write reads it */
#define F_MERGING 4 /* flagged, its content in place, being unflagged */
/*
 * Brought back for a vCPU's access: not evicted again before the guest
 * touched it (or WANTED_PERIODS passed), else the vCPU's access could find
 * it flagged once more and fail (a memory-fault exit then stops the VM)
 */
#define F_WANTED 8
#define F_FLAGGING 16 /* being flagged: KVM may flag it before flagged[] */
#define WANTED_PERIODS 4
#define NO_DPA UINT64_MAX
#define NO_PAGE UINT32_MAX
#define NO_BLOCK UINT64_MAX
#define READAHEAD_MAX 64
#define RA_CACHE 64         /* read-ahead pages kept until faulted on */
#define EVICT_BATCH 64      /* pages evicted per lock hold */
#define REFRESH_PAGES 256   /* device pages looked up again per period */

struct CxltrackMemoryManager {
    uint64_t npages;
    uint8_t *state;
    uint8_t *flags;
    uint8_t *age;
    uint64_t *where;
    uint64_t *dpa;              /* device page of a resident page */
    GHashTable *evicted_of_block; /* block -> first PG_BLOCK page + 1 */
    uint32_t *next_of_block;    /* the next PG_BLOCK page of that block */
    uint32_t *page_of_slot;
    uint64_t slot_cursor;
    RAMBlock *rb;
    int uffd;
    int swap_fd;
    int image_fd;
    uint64_t image_blocks;
    int stop_fd;
    bool stop;
    QemuSemaphore wake;
    QemuThread fault_thread;
    QemuThread scan_thread;
    uint64_t harvest_count;
    uint8_t *bitmap;
    uint8_t *buf;               /* READAHEAD_MAX pages */
    uint8_t *zero;
    uint8_t *tmp;
    uint32_t *victims;
    uint64_t refresh_cursor;
    uint32_t ra_page[RA_CACHE]; /* the evicted page a cache entry holds */
    uint8_t *ra_buf;            /* RA_CACHE pages */
    uint32_t ra_next;           /* the entry filled next (oldest first) */
    /* the Preventer (prevent=on) */
    uint8_t *flagged;           /* flagged in KVM */
    uint32_t *flag_gen;         /* flaggings of the page: KVM's answers */
    uint32_t *query_gen;        /* flag_gen when KVM was asked */
    struct kvm_prevent_page_state *pstate; /* KVM's answers */
    uint64_t nflagged;
    uint64_t gpa;               /* of the memdev, or NO_DPA: not mapped */
    int event_fd;               /* KVM signals slot events here */
    int queue_fd;               /* pages queued to be unflagged */
    uint32_t *queue;            /* npages: a ring of F_MERGING pages */
    uint64_t queue_head, queue_tail;
    QemuCond merged;            /* an unflag ended */
    QemuThread prevent_thread;
};

static uint8_t *page_addr(CxltrackSwapMapper *s, uint64_t p)
{
    return s->ram + p * BLOCK_SIZE;
}

static uint64_t addr_dpa(CxltrackSwapMapper *s, uint8_t *addr)
{
    struct cxlt_addr_page ap = { .addr = (uintptr_t)addr };

    return ioctl(s->fd, CXLT_IOC_ADDR_PAGE, &ap) ? NO_DPA : ap.page;
}

static uint32_t first_of_block(CxltrackMemoryManager *mm, uint64_t block)
{
    gpointer v = g_hash_table_lookup(mm->evicted_of_block, &block);

    return v ? GPOINTER_TO_UINT(v) - 1 : NO_PAGE;
}

static void block_link(CxltrackMemoryManager *mm, uint32_t p, uint64_t block)
{
    uint64_t *key = g_new(uint64_t, 1);

    *key = block;
    mm->next_of_block[p] = first_of_block(mm, block);
    g_hash_table_replace(mm->evicted_of_block, key, GUINT_TO_POINTER(p + 1));
}

static void block_unlink(CxltrackMemoryManager *mm, uint32_t p,
                         uint64_t block)
{
    uint32_t q = first_of_block(mm, block);

    if (q == p) {
        if (mm->next_of_block[p] == NO_PAGE) {
            g_hash_table_remove(mm->evicted_of_block, &block);
        } else {
            uint64_t *key = g_new(uint64_t, 1);

            *key = block;
            g_hash_table_replace(mm->evicted_of_block, key,
                                 GUINT_TO_POINTER(mm->next_of_block[p] + 1));
        }
        return;
    }
    while (q != NO_PAGE && mm->next_of_block[q] != p) {
        q = mm->next_of_block[q];
    }
    if (q != NO_PAGE) {
        mm->next_of_block[q] = mm->next_of_block[p];
    }
}

static int ra_find(CxltrackMemoryManager *mm, uint32_t p)
{
    int i;

    for (i = 0; i < RA_CACHE; i++) {
        if (mm->ra_page[i] == p) {
            return i;
        }
    }
    return -1;
}

/* Keep a read-ahead copy of evicted page @p, pushing out the oldest. */
static void ra_put(CxltrackSwapMapper *s, uint32_t p, uint8_t *data)
{
    CxltrackMemoryManager *mm = s->mm;
    int i = ra_find(mm, p);

    if (i < 0) {
        i = mm->ra_next;
        mm->ra_next = (mm->ra_next + 1) % RA_CACHE;
        s->mms.readahead_unused += mm->ra_page[i] != NO_PAGE;
        mm->ra_page[i] = p;
    }
    memcpy(mm->ra_buf + i * BLOCK_SIZE, data, BLOCK_SIZE);
}

/*
 * Forget where evicted page @p was kept (and a read-ahead copy: the slot
 * or block it was read from may hold other data from now on).
 */
static void unrecord(CxltrackMemoryManager *mm, uint32_t p)
{
    int i = ra_find(mm, p);

    if (i >= 0) {
        mm->ra_page[i] = NO_PAGE;
    }
    if (mm->state[p] == PG_BLOCK) {
        block_unlink(mm, p, mm->where[p]);
    } else if (mm->state[p] == PG_SWAP) {
        mm->page_of_slot[mm->where[p]] = NO_PAGE;
    }
}

/*
 * Make @p resident with the content at @data. With @block (not NO_BLOCK)
 * and offload, the page is associated with its block again before anyone
 * can write it: installed write-protected, set, then opened. Counts what
 * the bring-back of a page from storage (@fetched) cost.
 */
static bool install(CxltrackSwapMapper *s, uint32_t p, uint8_t *data,
                    uint64_t block, bool fetched)
{
    CxltrackMemoryManager *mm = s->mm;
    uint8_t *addr = page_addr(s, p);
    bool assoc = block != NO_BLOCK && s->offload;
    struct uffdio_copy copy = {
        .dst = (uintptr_t)addr,
        .src = (uintptr_t)data,
        .len = BLOCK_SIZE,
        .mode = assoc ? UFFDIO_COPY_MODE_WP : 0,
    };

    if (ioctl(mm->uffd, UFFDIO_COPY, &copy) < 0 && errno != EEXIST) {
        warn_report_once("cxltrack memory manager: cannot install page %p:"
                         " %s", addr, strerror(errno));
        s->mms.errors++;
        return false;
    }
    unrecord(mm, p);
    if (fetched) {
        s->mms.stale_reads += !!(mm->flags[p] & F_STALE);
        s->mms.double_paging += !!(mm->flags[p] & F_SOURCE);
    }
    mm->flags[p] = 0;
    mm->state[p] = PG_RESIDENT;
    mm->age[p] = 0;
    s->mms.resident++;
    if (assoc) {
        s->batch[0] = (struct cxlt_bat_addr) {
            .addr = (uintptr_t)addr,
            .block = block,
            .disk = s->disk,
        };
        cxltrack_swap_mapper_set_batch(s, 1);
        uffd_change_protection(mm->uffd, addr, BLOCK_SIZE, false, false);
    }
    mm->dpa[p] = addr_dpa(s, addr);
    return true;
}

static bool read_full(int fd, uint8_t *buf, size_t len, uint64_t offset)
{
    ssize_t n = pread(fd, buf, len, offset);

    return n == (ssize_t)len;
}

/* The file evicted page @p lies in (image or swap), or -1 (zeroes). */
static int store_fd(CxltrackMemoryManager *mm, uint32_t p)
{
    return mm->state[p] == PG_BLOCK ? mm->image_fd :
           mm->state[p] == PG_SWAP ? mm->swap_fd : -1;
}

/*
 * Bring @p (PG_BLOCK or PG_SWAP) back from its block or slot, with the
 * following ones in the same read (the read-ahead window: a read of a few
 * pages costs about what a read of one does). Of those, the ones that hold
 * another evicted page go to the read-ahead cache.
 */
static void fetch(CxltrackSwapMapper *s, uint32_t p)
{
    CxltrackMemoryManager *mm = s->mm;
    bool from_image = mm->state[p] == PG_BLOCK;
    uint64_t first = mm->where[p];
    uint64_t blocks = from_image ? mm->image_blocks : mm->npages;
    uint64_t n = MIN(MAX(s->readahead, 1), READAHEAD_MAX), i;
    int fd = store_fd(mm, p);

    n = MAX(MIN(n, blocks > first ? blocks - first : 0), 1);
    if (!read_full(fd, mm->buf, n * BLOCK_SIZE, first * BLOCK_SIZE)) {
        warn_report_once("cxltrack memory manager: %s: cannot read %s"
                         " %" PRIu64, from_image ? s->image : s->swap_file,
                         from_image ? "block" : "slot", first);
        s->mms.errors++;
        uffd_wakeup(mm->uffd, page_addr(s, p), BLOCK_SIZE); /* retries */
        return;
    }
    s->mms.host_reads++;
    s->mms.host_read_pages += n;
    if (from_image) {
        s->mms.faults_block++;
    } else {
        s->mms.faults_swap++;
    }
    for (i = 1; i < n; i++) {
        uint32_t q = from_image ? first_of_block(mm, first + i) :
                     mm->page_of_slot[first + i];

        if (q != NO_PAGE && q != p) {
            ra_put(s, q, mm->buf + i * BLOCK_SIZE);
            s->mms.readahead_pages++;
        }
    }
    install(s, p, mm->buf, from_image ? first : NO_BLOCK, true);
}

static void fault_in(CxltrackSwapMapper *s, uint32_t p)
{
    CxltrackMemoryManager *mm = s->mm;
    int i = ra_find(mm, p);

    if (i >= 0) {
        /* read ahead with an earlier fault: no read */
        s->mms.readahead_hits++;
        install(s, p, mm->ra_buf + i * BLOCK_SIZE,
                mm->state[p] == PG_BLOCK ? mm->where[p] : NO_BLOCK, true);
        return;
    }
    switch (mm->state[p]) {
    case PG_RESIDENT:   /* brought back since it faulted */
        uffd_wakeup(mm->uffd, page_addr(s, p), BLOCK_SIZE);
        break;
    case PG_ABSENT:
    case PG_ZERO:
        s->mms.faults_zero++;
        install(s, p, mm->zero, NO_BLOCK, false);
        break;
    case PG_BLOCK:
    case PG_SWAP:
        fetch(s, p);
        break;
    }
}

/*
 * The False Reads Preventer (prevent=on, issue 14)
 *
 * A flagged page is an evicted page (PG_ZERO, PG_BLOCK or PG_SWAP, absent
 * from the memdev) that KVM handles as MMIO: the guest's stores go into a
 * write-buffer slot of the device, loads of bytes it stored are served from
 * there, anything else exits to QEMU. To unflag it, its content is put in
 * place first (the old content read back, or zeroes when the slot is full:
 * KVM's merge overwrites every byte), it becomes F_MERGING, and the prevent
 * thread unflags it outside the lock (KVM merges the slot into the page,
 * the slot's bytes win), then wakes whoever waits for it. KVM merges into
 * the frame the page has then, so the page must be present and writable:
 * it is installed without write protection and without an association
 * (after the merge it no longer equals its block).
 *
 * Who reads a flagged page: a vCPU exit (KVM_EXIT_MMIO of bytes the slot
 * does not hold, no free slot, or KVM_EXIT_MEMORY_FAULT for an instruction
 * fetch or a guest page-table walk) reaches cxltrack_mm_guest_access()
 * before QEMU touches the memory; a disk request reaches the hooks below;
 * any other thread of QEMU faults on the absent page and waits for the
 * merge (installed with UFFDIO_COPY_MODE_DONTWAKE). A vCPU that faults on
 * it inside KVM (KVM's own reads of guest memory) is woken at once, as
 * unflagging waits for it to leave KVM: it reads the old content.
 */

static bool vcpu_thread(uint32_t tid)
{
    CPUState *cpu;
    bool found = false;

    WITH_RCU_READ_LOCK_GUARD() {
        CPU_FOREACH(cpu) {
            if (cpu->thread_id == (int)tid) {
                found = true;
                break;
            }
        }
    }
    return found;
}

/* KVM_SET_PREVENT_READS for page @p: flag it, or unflag it (merge). */
static int prevent_ioctl(CxltrackSwapMapper *s, uint32_t p, bool set)
{
    CxltrackMemoryManager *mm = s->mm;
    struct kvm_prevent_reads pr = {
        .gpa = mm->gpa + (uint64_t)p * BLOCK_SIZE,
        .size = BLOCK_SIZE,
        .flags = set ? KVM_PREVENT_READS_SET | KVM_PREVENT_READS_EVENTFD : 0,
        .eventfd = set ? mm->event_fd : -1,
    };

    return kvm_vm_ioctl_arg(KVM_SET_PREVENT_READS, &pr);
}

static void prevent_queue(CxltrackSwapMapper *s, uint32_t p)
{
    CxltrackMemoryManager *mm = s->mm;
    uint64_t one = 1;

    mm->flags[p] |= F_MERGING;
    mm->queue[mm->queue_tail++ % mm->npages] = p;
    if (write(mm->queue_fd, &one, sizeof(one)) != sizeof(one)) {
        s->mms.errors++;    /* cannot happen below 2^64 - 1 pages */
    }
}

/*
 * Put flagged page @p's content in place and queue it to be unflagged:
 * with @full nothing is read (the guest wrote it whole), otherwise the old
 * content. Threads that faulted on it sleep until the merge, unless @wake.
 */
static bool prevent_bring_back(CxltrackSwapMapper *s, uint32_t p, bool full,
                               bool wake)
{
    CxltrackMemoryManager *mm = s->mm;
    uint8_t *addr = page_addr(s, p);
    uint8_t *data = mm->zero;
    int fd = store_fd(mm, p), i = ra_find(mm, p);
    struct uffdio_copy copy = {
        .dst = (uintptr_t)addr,
        .len = BLOCK_SIZE,
        .mode = wake ? 0 : UFFDIO_COPY_MODE_DONTWAKE,
    };

    if (mm->flags[p] & F_MERGING) {
        return true;
    }
    if (full) {
        s->mms.prevent_full++;
        s->mms.false_reads_avoided += fd >= 0;
    } else if (i >= 0) {
        s->mms.readahead_hits++;
        data = mm->ra_buf + i * BLOCK_SIZE;
    } else if (fd >= 0) {
        if (!read_full(fd, mm->tmp, BLOCK_SIZE, mm->where[p] * BLOCK_SIZE)) {
            warn_report_once("cxltrack memory manager: cannot read back"
                             " flagged page %p", addr);
            s->mms.errors++;
            return false;
        }
        data = mm->tmp;
        s->mms.host_reads++;
        s->mms.host_read_pages++;
        s->mms.prevent_fetches++;
    }
    copy.src = (uintptr_t)data;
    if (ioctl(mm->uffd, UFFDIO_COPY, &copy) < 0 && errno != EEXIST) {
        warn_report_once("cxltrack memory manager: cannot install flagged"
                         " page %p: %s", addr, strerror(errno));
        s->mms.errors++;
        return false;
    }
    unrecord(mm, p);
    mm->flags[p] = 0;
    mm->state[p] = PG_RESIDENT;
    mm->age[p] = 0;
    s->mms.resident++;
    mm->dpa[p] = addr_dpa(s, addr);
    prevent_queue(s, p);
    return true;
}

/*
 * Flagged page @p for QEMU to read or write: its old content in place and
 * the slot merged into it. Caller holds the lock (released while waiting).
 */
static bool prevent_resolve(CxltrackSwapMapper *s, uint32_t p)
{
    CxltrackMemoryManager *mm = s->mm;

    while (mm->flags[p] & F_FLAGGING) {
        qemu_cond_wait(&mm->merged, &s->lock);
    }
    /*
     * A loop: the scan thread may have flagged and evicted the page again
     * between its merge and this thread's wake-up (it was a victim picked
     * before the access); F_WANTED keeps it from doing so a second time.
     */
    while (mm->flagged[p]) {
        if (!(mm->flags[p] & F_MERGING)) {
            if (mm->state[p] == PG_RESIDENT) {
                prevent_queue(s, p);    /* an unflag that failed: again */
            } else if (!prevent_bring_back(s, p, false, false)) {
                return false;
            }
        }
        mm->flags[p] |= F_WANTED;
        while (mm->flags[p] & F_MERGING) {
            qemu_cond_wait(&mm->merged, &s->lock);
        }
        if (mm->flagged[p] && mm->state[p] == PG_RESIDENT) {
            return false;   /* the unflag failed: the next exit tries again */
        }
    }
    mm->flags[p] |= F_WANTED;
    return true;
}

/*
 * Flag resident page @p before it is evicted. The page must be present and
 * writable (KVM takes a reference on its frame), and KVM waits for every
 * vCPU to leave its SRCU read side, so the lock is released meanwhile.
 */
static bool prevent_flag(CxltrackSwapMapper *s, uint32_t p)
{
    CxltrackMemoryManager *mm = s->mm;
    int ret;

    if (!s->prevent || mm->gpa == NO_DPA || mm->flagged[p] ||
        mm->state[p] != PG_RESIDENT || mm->nflagged >= s->prevent_max) {
        return false;
    }
    mm->nflagged++;
    mm->flags[p] |= F_FLAGGING;
    qemu_mutex_unlock(&s->lock);
    ret = prevent_ioctl(s, p, true);
    qemu_mutex_lock(&s->lock);
    /* a vCPU exit on it waits for this, not spins through KVM meanwhile */
    mm->flags[p] &= ~F_FLAGGING;
    qemu_cond_broadcast(&mm->merged);
    if (ret < 0) {
        mm->nflagged--;
        warn_report_once("cxltrack memory manager: cannot flag gpa 0x%"
                         PRIx64 ": %s", mm->gpa + (uint64_t)p * BLOCK_SIZE,
                         strerror(-ret));
        s->mms.errors++;
        return false;
    }
    mm->flagged[p] = 1;
    mm->flag_gen[p]++;
    s->mms.prevent_flagged++;
    return true;
}

/*
 * The slot events KVM signalled: what to bring back now. KVM is asked for
 * the whole memdev in one call per KVM_PREVENT_MAX_PAGES (no lock held: it
 * takes KVM's slots_lock), so that a burst of full slots is merged fast: a
 * slot waiting for its merge is a slot the guest's next page cannot have.
 */
#define QUERY_PAGES 65536

static void prevent_events(CxltrackSwapMapper *s)
{
    CxltrackMemoryManager *mm = s->mm;
    struct kvm_prevent_page_state *st = mm->pstate;
    uint64_t p, first;

    qemu_mutex_lock(&s->lock);
    memcpy(mm->query_gen, mm->flag_gen, mm->npages * sizeof(uint32_t));
    qemu_mutex_unlock(&s->lock);
    for (first = 0; first < mm->npages; first += QUERY_PAGES) {
        struct kvm_prevent_query q = {
            .gpa = mm->gpa + first * BLOCK_SIZE,
            .npages = MIN(QUERY_PAGES, mm->npages - first),
            .pages = (uintptr_t)&st[first],
        };

        if (kvm_vm_ioctl_arg(KVM_GET_PREVENT_READS, &q) < 0) {
            memset(&st[first], 0, q.npages * sizeof(*st));  /* NONE */
        }
    }
    qemu_mutex_lock(&s->lock);
    for (p = 0; p < mm->npages; p++) {
        /*
         * Asked about before the lock: a page unflagged and flagged again
         * since has a new slot, which the answer is not about; a NONE
         * answer also covers a page flagged after the call.
         */
        if (!mm->flagged[p] || (mm->flags[p] & F_MERGING) ||
            mm->state[p] == PG_RESIDENT ||
            st[p].state == KVM_PREVENT_PAGE_NONE ||
            mm->flag_gen[p] != mm->query_gen[p]) {
            continue;
        }
        if (st[p].events & KVM_PREVENT_EV_LOST) {
            /* a device reset lost the guest's stores to it (spec 11) */
            warn_report("cxltrack memory manager: a device reset lost the"
                        " guest's stores to gpa 0x%" PRIx64,
                        mm->gpa + p * BLOCK_SIZE);
        }
        if (st[p].state == KVM_PREVENT_PAGE_FULL &&
            !(st[p].events & KVM_PREVENT_EV_LOST)) {
            prevent_bring_back(s, p, true, false);
        } else if (st[p].events & (KVM_PREVENT_EV_TIMEOUT |
                                   KVM_PREVENT_EV_NONSEQ |
                                   KVM_PREVENT_EV_LOST)) {
            s->mms.prevent_timeouts += !!(st[p].events &
                                          KVM_PREVENT_EV_TIMEOUT);
            s->mms.prevent_nonseq += !!(st[p].events & KVM_PREVENT_EV_NONSEQ);
            s->mms.prevent_lost += !!(st[p].events & KVM_PREVENT_EV_LOST);
            prevent_bring_back(s, p, false, false);
        }
    }
    qemu_mutex_unlock(&s->lock);
}

/* Unflag the queued pages: KVM merges their slots. */
static void prevent_unflag_queued(CxltrackSwapMapper *s)
{
    CxltrackMemoryManager *mm = s->mm;

    qemu_mutex_lock(&s->lock);
    while (mm->queue_head != mm->queue_tail) {
        uint32_t p = mm->queue[mm->queue_head++ % mm->npages];
        int ret;

        qemu_mutex_unlock(&s->lock);
        ret = prevent_ioctl(s, p, false);
        qemu_mutex_lock(&s->lock);
        if (ret < 0) {
            /* still flagged: the next access that needs it tries again */
            warn_report_once("cxltrack memory manager: cannot unflag gpa"
                             " 0x%" PRIx64 ": %s",
                             mm->gpa + (uint64_t)p * BLOCK_SIZE,
                             strerror(-ret));
            s->mms.errors++;
        } else {
            mm->flagged[p] = 0;
            mm->nflagged--;
            s->mms.prevent_unflagged++;
        }
        mm->flags[p] &= ~F_MERGING;
        uffd_wakeup(mm->uffd, page_addr(s, p), BLOCK_SIZE);
        qemu_cond_broadcast(&mm->merged);
    }
    qemu_mutex_unlock(&s->lock);
}

static void *prevent_thread(void *opaque)
{
    CxltrackSwapMapper *s = opaque;
    CxltrackMemoryManager *mm = s->mm;
    uint64_t n;

    for (;;) {
        struct pollfd pfd[3] = {
            { .fd = mm->event_fd, .events = POLLIN },
            { .fd = mm->queue_fd, .events = POLLIN },
            { .fd = mm->stop_fd, .events = POLLIN },
        };

        if (poll(pfd, 3, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            error_report("cxltrack memory manager: poll: %s",
                         strerror(errno));
            break;
        }
        if (pfd[2].revents) {
            break;
        }
        if (pfd[0].revents && read(mm->event_fd, &n, sizeof(n)) > 0) {
            prevent_events(s);
        }
        if (pfd[1].revents && read(mm->queue_fd, &n, sizeof(n)) > 0) {
            /* the queue is read below whatever woke us */
        }
        prevent_unflag_queued(s);
    }
    return NULL;
}

/*
 * A vCPU exit for @size bytes at @gpa (KVM_EXIT_MMIO or
 * KVM_EXIT_MEMORY_FAULT): the flagged pages there, fetched and merged
 * before QEMU completes the access on memory or the vCPU runs again.
 */
static bool guest_access(void *opaque, uint64_t gpa, uint64_t size)
{
    CxltrackSwapMapper *s = opaque;
    CxltrackMemoryManager *mm = s->mm;
    uint64_t first, last, p;
    bool ok = true;

    if (!mm || mm->gpa == NO_DPA || gpa < mm->gpa || !size ||
        gpa - mm->gpa >= s->ram_size) {
        return false;
    }
    first = (gpa - mm->gpa) / BLOCK_SIZE;
    last = MIN(gpa - mm->gpa + size - 1, s->ram_size - 1) / BLOCK_SIZE;
    for (p = first; p <= last; p++) {
        struct kvm_prevent_page_state st = { 0 };
        struct kvm_prevent_query q = {
            .gpa = mm->gpa + p * BLOCK_SIZE,
            .npages = 1,
            .pages = (uintptr_t)&st,
        };
        uint32_t gen = qatomic_read(&mm->flag_gen[p]);
        bool full;

        if (!qatomic_read(&mm->flagged[p]) &&
            !(qatomic_read(&mm->flags[p]) & F_FLAGGING)) {
            continue;
        }
        /*
         * A page the guest wrote whole needs no read even when the vCPU
         * exits on it (an AVX store the emulator cannot run, code on it):
         * asked outside the lock, like every Preventer ioctl.
         */
        full = kvm_vm_ioctl_arg(KVM_GET_PREVENT_READS, &q) >= 0 &&
               st.state == KVM_PREVENT_PAGE_FULL &&
               !(st.events & KVM_PREVENT_EV_LOST);
        qemu_mutex_lock(&s->lock);
        if (mm->flagged[p] || (mm->flags[p] & F_FLAGGING)) {
            s->mms.prevent_exits++;
            /* (unflagged and flagged again meanwhile: the answer is old) */
            if (full && mm->flag_gen[p] == gen &&
                !(mm->flags[p] & F_MERGING) && mm->state[p] != PG_RESIDENT) {
                prevent_bring_back(s, p, true, false);
            }
            ok &= prevent_resolve(s, p);
        }
        qemu_mutex_unlock(&s->lock);
    }
    return ok;
}

static void handle_fault(CxltrackSwapMapper *s, struct uffd_msg *msg)
{
    CxltrackMemoryManager *mm = s->mm;
    uint64_t addr = msg->arg.pagefault.address & ~(uint64_t)(BLOCK_SIZE - 1);
    uint32_t p;

    if (addr < (uintptr_t)s->ram || addr >= (uintptr_t)s->ram + s->ram_size) {
        return;
    }
    p = (addr - (uintptr_t)s->ram) / BLOCK_SIZE;
    if (msg->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
        /*
         * A write to a page that was being evicted: it is gone now (the
         * retry faults it in) or the eviction gave up (open it again).
         */
        if (mm->state[p] == PG_RESIDENT) {
            uffd_change_protection(mm->uffd, (void *)addr, BLOCK_SIZE, false,
                                   false);
        } else {
            uffd_wakeup(mm->uffd, (void *)addr, BLOCK_SIZE);
        }
        return;
    }
    if (mm->flagged[p]) {
        /* after the merge, or at once for a vCPU inside KVM (above) */
        bool wake = vcpu_thread(msg->arg.pagefault.feat.ptid);

        if (!(mm->flags[p] & F_MERGING) && mm->state[p] != PG_RESIDENT) {
            s->mms.prevent_early_wakes += wake;
            if (!prevent_bring_back(s, p, false, wake)) {
                uffd_wakeup(mm->uffd, (void *)addr, BLOCK_SIZE); /* retry */
            }
        } else if (wake) {
            uffd_wakeup(mm->uffd, (void *)addr, BLOCK_SIZE);
        }
        return;
    }
    fault_in(s, p);
}

static void *fault_thread(void *opaque)
{
    CxltrackSwapMapper *s = opaque;
    CxltrackMemoryManager *mm = s->mm;
    struct uffd_msg msg[16];

    for (;;) {
        struct pollfd pfd[2] = {
            { .fd = mm->uffd, .events = POLLIN },
            { .fd = mm->stop_fd, .events = POLLIN },
        };
        int n, i;

        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            error_report("cxltrack memory manager: poll: %s",
                         strerror(errno));
            break;
        }
        if (pfd[1].revents) {
            break;
        }
        n = uffd_read_events(mm->uffd, msg, ARRAY_SIZE(msg));
        if (n < 0) {
            break;
        }
        qemu_mutex_lock(&s->lock);
        for (i = 0; i < n; i++) {
            if (msg[i].event == UFFD_EVENT_PAGEFAULT) {
                handle_fault(s, &msg[i]);
            }
        }
        qemu_mutex_unlock(&s->lock);
    }
    return NULL;
}

static uint64_t alloc_slot(CxltrackMemoryManager *mm)
{
    uint64_t i;

    /* next fit from the last one, as the kernel's swap clusters do */
    for (i = 0; i < mm->npages; i++) {
        uint64_t slot = (mm->slot_cursor + i) % mm->npages;

        if (mm->page_of_slot[slot] == NO_PAGE) {
            mm->slot_cursor = slot + 1;
            return slot;
        }
    }
    return NO_BLOCK;
}

/*
 * The block last read into the page if the page still equals it, compared
 * byte by byte (the mapper's maps, not the device's); NO_BLOCK otherwise.
 */
static uint64_t equal_block(CxltrackSwapMapper *s, uint8_t *addr)
{
    CxltrackMemoryManager *mm = s->mm;
    uint64_t key = (uintptr_t)addr;
    uint64_t *block = g_hash_table_lookup(s->block_of_page, &key);

    return block && mm->image_fd >= 0 &&
           read_full(mm->image_fd, mm->tmp, BLOCK_SIZE,
                     *block * BLOCK_SIZE) &&
           !memcmp(mm->tmp, addr, BLOCK_SIZE) ? *block : NO_BLOCK;
}

static bool evict(CxltrackSwapMapper *s, uint32_t p)
{
    CxltrackMemoryManager *mm = s->mm;
    uint8_t *addr = page_addr(s, p);
    uint64_t same = NO_BLOCK;
    bool compared = false;

    if (mm->state[p] != PG_RESIDENT) {
        return false;
    }
    /* nobody writes it from here until it is gone */
    if (uffd_change_protection(mm->uffd, addr, BLOCK_SIZE, true, false)) {
        s->mms.errors++;
        return false;
    }
    if (s->offload) {
        struct cxlt_addr_page ap = { .addr = (uintptr_t)addr };
        struct cxlt_bat bat = {
            .op = CXLT_BAT_DISCARD,
            .flags = CXLT_BAT_F_ADDR,
            .addr = (uintptr_t)addr,
        };

        if (!ioctl(s->fd, CXLT_IOC_ADDR_PAGE, &ap)) {
            bat.page = ap.page;
            if (!ioctl(s->fd, CXLT_IOC_BAT, &bat) && bat.valid &&
                bat.disk == s->disk) {
                /* it equals the block: no swap write */
                mm->state[p] = PG_BLOCK;
                mm->where[p] = bat.block;
                block_link(mm, p, bat.block);
            }
        }
    }
    if (s->offload && mm->state[p] == PG_RESIDENT) {
        /*
         * The device knows no association, but the page was read from a
         * block: the host kernel moved it (compaction, migration), and the
         * copy, written by the kernel, has none. Write-protected, it is
         * compared with the block; the block cannot be changing, as a
         * write's begin forgets the pages of the blocks it writes.
         */
        same = equal_block(s, addr);
        compared = true;
        if (same != NO_BLOCK) {
            mm->state[p] = PG_BLOCK;
            mm->where[p] = same;
            block_link(mm, p, same);
            s->mms.evicted_compared++;
        }
    }
    if (mm->state[p] == PG_RESIDENT && buffer_is_zero(addr, BLOCK_SIZE)) {
        mm->state[p] = PG_ZERO;
    } else if (mm->state[p] == PG_RESIDENT) {
        uint64_t slot = alloc_slot(mm);

        if (slot == NO_BLOCK ||
            pwrite(mm->swap_fd, addr, BLOCK_SIZE, slot * BLOCK_SIZE) !=
            BLOCK_SIZE) {
            warn_report_once("cxltrack memory manager: %s: cannot write"
                             " swap: %s", s->swap_file,
                             slot == NO_BLOCK ? "full" : strerror(errno));
            s->mms.errors++;
            uffd_change_protection(mm->uffd, addr, BLOCK_SIZE, false, false);
            return false;
        }
        s->mms.swap_writes++;
        /* the same comparison as above: one image read per eviction */
        if (!compared) {
            same = equal_block(s, addr);
        }
        s->mms.silent_writes += same != NO_BLOCK;
        mm->state[p] = PG_SWAP;
        mm->where[p] = slot;
        mm->page_of_slot[slot] = p;
    }
    if (ram_block_discard_range(mm->rb, (uint64_t)p * BLOCK_SIZE,
                                BLOCK_SIZE)) {
        s->mms.errors++;
        unrecord(mm, p);
        mm->state[p] = PG_RESIDENT;
        uffd_change_protection(mm->uffd, addr, BLOCK_SIZE, false, false);
        return false;
    }
    s->mms.evicted_clean += mm->state[p] == PG_BLOCK;
    s->mms.evicted_zero += mm->state[p] == PG_ZERO;
    cxltrack_swap_mapper_forget_page(s, (uintptr_t)addr);
    mm->dpa[p] = NO_DPA;
    s->mms.resident--;
    return true;
}

/*
 * The guest-physical address of the memdev (a pc-dimm maps it in system
 * memory), or NO_DPA while it is not mapped.
 */
static uint64_t memdev_gpa(CxltrackSwapMapper *s)
{
    MemoryRegion *mr = host_memory_backend_get_memory(s->memdev);
    uint64_t gpa = 0;

    for (; mr->container; mr = mr->container) {
        gpa += mr->addr;
    }
    return mr == get_system_memory() ? gpa : NO_DPA;
}

/* Ages from the device's accessed bits; caller holds the lock. */
static void age_pages(CxltrackSwapMapper *s)
{
    CxltrackMemoryManager *mm = s->mm;
    uint64_t p, i;

    for (p = 0; p < mm->npages; p++) {
        uint64_t d = mm->dpa[p];

        if (mm->state[p] != PG_RESIDENT) {
            continue;
        }
        if (d < mm->harvest_count && (mm->bitmap[d / 8] >> (d % 8)) & 1) {
            mm->age[p] = 0;
            mm->flags[p] &= ~F_WANTED;  /* the guest has it */
        } else if (mm->age[p] < UINT8_MAX) {
            mm->age[p]++;
        }
        if (mm->age[p] >= WANTED_PERIODS) {
            mm->flags[p] &= ~F_WANTED;
        }
    }
    /* pages the kernel moved (compaction, NUMA) get their new device page */
    for (i = 0; i < REFRESH_PAGES; i++) {
        p = mm->refresh_cursor++ % mm->npages;
        if (mm->state[p] == PG_RESIDENT) {
            mm->dpa[p] = addr_dpa(s, page_addr(s, p));
        }
    }
}

/* A resident page the scan may evict now (see F_WANTED) */
static bool evictable(CxltrackMemoryManager *mm, uint64_t p)
{
    return mm->state[p] == PG_RESIDENT && !mm->flagged[p] &&
           !(mm->flags[p] & (F_WANTED | F_FLAGGING));
}

/* The @need oldest resident pages into mm->victims; how many. */
static uint64_t pick_victims(CxltrackSwapMapper *s, uint64_t need)
{
    CxltrackMemoryManager *mm = s->mm;
    uint64_t hist[UINT8_MAX + 1] = { 0 };
    uint64_t p, n = 0, above = 0;
    int t;

    for (p = 0; p < mm->npages; p++) {
        if (evictable(mm, p)) {
            hist[mm->age[p]]++;
        }
    }
    /* the lowest age t such that pages older than t are fewer than need */
    for (t = UINT8_MAX; t > 0 && above + hist[t] < need; t--) {
        above += hist[t];
    }
    for (p = 0; p < mm->npages && n < need; p++) {
        if (evictable(mm, p) && mm->age[p] > t) {
            mm->victims[n++] = p;
        }
    }
    for (p = 0; p < mm->npages && n < need; p++) {
        if (evictable(mm, p) && mm->age[p] == t) {
            mm->victims[n++] = p;
        }
    }
    return n;
}

static void *scan_thread(void *opaque)
{
    CxltrackSwapMapper *s = opaque;
    CxltrackMemoryManager *mm = s->mm;

    while (!qatomic_read(&mm->stop)) {
        struct cxlt_harvest h = {
            .kind = CXLT_HARVEST_ACCESSED,
            .flags = CXLT_HARVEST_F_CLEAR,
            .count = mm->harvest_count,
            .buf = (uintptr_t)mm->bitmap,
            .buf_len = mm->harvest_count / 8,
        };
        uint64_t limit, need, n, i;

        qemu_sem_timedwait(&mm->wake, MAX(s->period_ms, 1));
        if (qatomic_read(&mm->stop)) {
            break;
        }
        memset(mm->bitmap, 0, mm->harvest_count / 8);
        if (ioctl(s->fd, CXLT_IOC_HARVEST, &h) < 0) {
            warn_report_once("cxltrack memory manager: %s: harvest: %s",
                             s->tracker, strerror(errno));
            s->mms.errors++;
        }
        qemu_mutex_lock(&s->lock);
        s->mms.periods++;
        age_pages(s);
        limit = qatomic_read(&s->resident_limit) / BLOCK_SIZE;
        need = limit && s->mms.resident > limit ? s->mms.resident - limit : 0;
        n = need ? pick_victims(s, need) : 0;
        if (s->prevent && mm->gpa == NO_DPA) {
            mm->gpa = memdev_gpa(s);
        }
        for (i = 0; i < n; i++) {
            uint32_t p = mm->victims[i];
            bool flagged;

            if (!evictable(mm, p)) {
                continue;   /* changed while the lock was let go */
            }
            /* flagged first: KVM needs the page present to flag it */
            flagged = prevent_flag(s, p);
            if (!evict(s, p) && flagged && mm->state[p] == PG_RESIDENT) {
                prevent_queue(s, p);    /* kept: unflag it again */
            }
            if (i % EVICT_BATCH == EVICT_BATCH - 1) {
                /* let the faults and the disk through */
                qemu_mutex_unlock(&s->lock);
                qemu_mutex_lock(&s->lock);
            }
        }
        qemu_mutex_unlock(&s->lock);
    }
    return NULL;
}

bool cxltrack_mm_resident(CxltrackSwapMapper *s, uint64_t addr)
{
    uint64_t p = (addr - (uintptr_t)s->ram) / BLOCK_SIZE;

    return !s->mm ||
           (s->mm->state[p] == PG_RESIDENT && !s->mm->flagged[p]);
}

static void read_begin_page(CxltrackSwapMapper *s, uint8_t *page,
                            uint64_t block, void *opaque)
{
    CxltrackMemoryManager *mm = s->mm;
    uint32_t p = (page - s->ram) / BLOCK_SIZE;

    if (mm->flagged[p]) {
        /*
         * The guest's stores in its slot are older than the disk read:
         * merged first (with the old content: the slot may be partial),
         * then the read overwrites the page.
         */
        prevent_resolve(s, p);
        return;
    }
    if (mm->state[p] == PG_RESIDENT || mm->state[p] == PG_ABSENT) {
        return;
    }
    if (s->offload) {
        /* the read overwrites it whole: the old copy is not read back */
        if (install(s, p, mm->zero, NO_BLOCK, false)) {
            s->mms.stale_reads_avoided++;
        }
    } else {
        mm->flags[p] |= F_STALE;
    }
}

void cxltrack_mm_read_begin(CxltrackSwapMapper *s, QEMUIOVector *qiov,
                            uint64_t offset)
{
    cxltrack_swap_mapper_for_each_page(s, qiov, offset, read_begin_page, NULL);
}

static void read_end_page(CxltrackSwapMapper *s, uint8_t *page,
                          uint64_t block, void *opaque)
{
    s->mm->flags[(page - s->ram) / BLOCK_SIZE] &= ~F_STALE;
}

void cxltrack_mm_read_end(CxltrackSwapMapper *s, QEMUIOVector *qiov,
                          uint64_t offset)
{
    cxltrack_swap_mapper_for_each_page(s, qiov, offset, read_end_page, NULL);
}

static void write_source_page(CxltrackSwapMapper *s, uint8_t *page,
                              uint64_t block, void *opaque)
{
    CxltrackMemoryManager *mm = s->mm;
    uint32_t p = (page - s->ram) / BLOCK_SIZE;

    if (mm->state[p] == PG_BLOCK || mm->state[p] == PG_SWAP) {
        mm->flags[p] |= F_SOURCE;
    }
}

/*
 * Evicted pages that hold @block must keep its old content: bring them
 * back before the write changes it. False if one cannot be.
 */
static bool keep_old_block(CxltrackSwapMapper *s, uint64_t block)
{
    CxltrackMemoryManager *mm = s->mm;
    uint32_t p;

    while ((p = first_of_block(mm, block)) != NO_PAGE) {
        if (mm->flagged[p]) {
            /* the block's old content, and the guest's stores over it */
            if (!prevent_resolve(s, p)) {
                s->mms.errors++;
                return false;
            }
            s->mms.copied_in++;
            continue;
        }
        if (!read_full(mm->image_fd, mm->tmp, BLOCK_SIZE,
                       block * BLOCK_SIZE) ||
            !install(s, p, mm->tmp, NO_BLOCK, false)) {
            s->mms.errors++;
            return false;
        }
        s->mms.copied_in++;
    }
    return true;
}

/*
 * Calls @fn for each piece of @qiov that lies in one page of @s->ram (@p
 * its page, @off its offset in it) or outside it (@p NO_PAGE), in order,
 * until @fn returns false.
 */
typedef bool PieceFn(CxltrackSwapMapper *s, uint8_t *base, size_t len,
                     uint32_t p, size_t off, void *opaque);

static bool each_piece(CxltrackSwapMapper *s, QEMUIOVector *qiov, PieceFn *fn,
                       void *opaque)
{
    int i;

    for (i = 0; i < qiov->niov; i++) {
        uint8_t *base = qiov->iov[i].iov_base;
        uint8_t *lim = base + qiov->iov[i].iov_len;

        while (base < lim) {
            bool in_ram = base >= s->ram && base < s->ram + s->ram_size;
            uint64_t rel = base - s->ram;
            size_t off = in_ram ? rel % BLOCK_SIZE : 0;
            size_t len = in_ram ? MIN(lim - base, BLOCK_SIZE - off) :
                         lim - base;

            if (!in_ram && base < s->ram && lim > s->ram) {
                len = s->ram - base;
            }
            if (!fn(s, base, len, in_ram ? rel / BLOCK_SIZE : NO_PAGE, off,
                    opaque)) {
                return false;
            }
            base += len;
        }
    }
    return true;
}

static bool is_resident_piece(CxltrackSwapMapper *s, uint8_t *base, size_t len,
                             uint32_t p, size_t off, void *opaque)
{
    return p == NO_PAGE || s->mm->state[p] == PG_RESIDENT;
}

typedef struct WriteCopy {
    QEMUIOVector qiov;      /* first: what the disk writes */
    uint8_t *buf;
    size_t pos;
    uint32_t last_page;
    uint32_t pages;         /* evicted pages taken from image or swap */
} WriteCopy;

static bool copy_piece(CxltrackSwapMapper *s, uint8_t *base, size_t len,
                       uint32_t p, size_t off, void *opaque)
{
    CxltrackMemoryManager *mm = s->mm;
    WriteCopy *wc = opaque;
    uint8_t *dst = wc->buf + wc->pos;
    int fd;

    wc->pos += len;
    if (p == NO_PAGE || mm->state[p] == PG_RESIDENT) {
        /* resident: readable with no fault (an evicted one would fault) */
        memcpy(dst, base, len);
        return true;
    }
    fd = store_fd(mm, p);
    if (fd < 0) {   /* never present, or zeroes */
        memset(dst, 0, len);
        return true;
    }
    if (!read_full(fd, dst, len, mm->where[p] * BLOCK_SIZE + off)) {
        return false;
    }
    wc->pages += p != wc->last_page;
    wc->last_page = p;
    return true;
}

/*
 * Tesseract: with offload, a write from pages that are evicted gets a copy
 * of its data, with the bytes of those pages taken from where they lie;
 * the disk writes the copy, and they stay evicted. NULL when @qiov holds
 * no evicted page, or a read failed: then the write reads the pages, and
 * they come back (double paging, counted).
 */
static QEMUIOVector *copy_evicted(CxltrackSwapMapper *s, QEMUIOVector *qiov)
{
    WriteCopy *wc;

    if (!s->offload || each_piece(s, qiov, is_resident_piece, NULL)) {
        return NULL;
    }
    wc = g_new0(WriteCopy, 1);
    wc->buf = qemu_try_memalign(BLOCK_SIZE, qiov->size);
    wc->last_page = NO_PAGE;
    if (!wc->buf || !each_piece(s, qiov, copy_piece, wc)) {
        warn_report_once("cxltrack memory manager: cannot copy a disk"
                         " write's evicted pages: %s",
                         wc->buf ? strerror(errno) : "out of memory");
        s->mms.errors++;
        qemu_vfree(wc->buf);
        g_free(wc);
        return NULL;
    }
    qemu_iovec_init_buf(&wc->qiov, wc->buf, qiov->size);
    s->mms.double_paging_avoided += wc->pages;
    return &wc->qiov;
}

void cxltrack_mm_write_copy_free(QEMUIOVector *copy)
{
    WriteCopy *wc = container_of(copy, WriteCopy, qiov);

    qemu_vfree(wc->buf);
    g_free(wc);
}

static bool resolve_piece(CxltrackSwapMapper *s, uint8_t *base, size_t len,
                          uint32_t p, size_t off, void *opaque)
{
    return p == NO_PAGE || prevent_resolve(s, p);
}

bool cxltrack_mm_write_begin(CxltrackSwapMapper *s, uint64_t first,
                             uint64_t last, QEMUIOVector *qiov,
                             QEMUIOVector **copy)
{
    CxltrackMemoryManager *mm = s->mm;

    /*
     * A flagged page's bytes are partly in its slot: neither the page nor
     * its storage holds them (copy_evicted() would take the storage's).
     * The write reads it merged.
     */
    if (qiov && s->prevent && !each_piece(s, qiov, resolve_piece, NULL)) {
        return false;
    }
    if (qiov) {
        *copy = copy_evicted(s, qiov);
        if (!*copy) {
            cxltrack_swap_mapper_for_each_page(s, qiov, first * BLOCK_SIZE,
                                               write_source_page, NULL);
        }
    }
    /* after the copy: this brings back pages the copy may have read */
    if (!cxltrack_swap_mapper_each_block(s, mm->evicted_of_block, first,
                                         last, keep_old_block)) {
        if (qiov && *copy) {
            cxltrack_mm_write_copy_free(*copy);
            *copy = NULL;
        }
        return false;
    }
    return true;
}

static void mm_free(CxltrackMemoryManager *mm)
{
    if (mm->uffd >= 0) {
        close(mm->uffd);
    }
    if (mm->swap_fd >= 0) {
        close(mm->swap_fd);
    }
    if (mm->image_fd >= 0) {
        close(mm->image_fd);
    }
    if (mm->stop_fd >= 0) {
        close(mm->stop_fd);
    }
    if (mm->event_fd >= 0) {
        close(mm->event_fd);
    }
    if (mm->queue_fd >= 0) {
        close(mm->queue_fd);
    }
    qemu_cond_destroy(&mm->merged);
    g_free(mm->flagged);
    g_free(mm->flag_gen);
    g_free(mm->query_gen);
    g_free(mm->pstate);
    g_free(mm->queue);
    qemu_sem_destroy(&mm->wake);
    if (mm->evicted_of_block) {
        g_hash_table_destroy(mm->evicted_of_block);
    }
    g_free(mm->state);
    g_free(mm->flags);
    g_free(mm->age);
    g_free(mm->where);
    g_free(mm->dpa);
    g_free(mm->next_of_block);
    g_free(mm->page_of_slot);
    g_free(mm->bitmap);
    qemu_vfree(mm->buf);
    qemu_vfree(mm->zero);
    qemu_vfree(mm->tmp);
    qemu_vfree(mm->ra_buf);
    g_free(mm->victims);
    g_free(mm);
}

static bool mm_open(CxltrackSwapMapper *s, CxltrackMemoryManager *mm,
                    Error **errp)
{
    MemoryRegion *mr = host_memory_backend_get_memory(s->memdev);
    struct cxlt_info info = { 0 };
    struct cxlt_view view = { .op = CXLT_VIEW_OPEN,
                              .kind = CXLT_HARVEST_ACCESSED };
    uint64_t features, need = UFFD_FEATURE_PAGEFAULT_FLAG_WP |
                              (s->prevent ? UFFD_FEATURE_THREAD_ID : 0);
    uint64_t ioctls, want = BIT_ULL(_UFFDIO_COPY) | BIT_ULL(_UFFDIO_WAKE) |
                            BIT_ULL(_UFFDIO_WRITEPROTECT);

    if (memory_region_get_fd(mr) >= 0 || s->memdev->share ||
        qemu_ram_pagesize(mr->ram_block) != BLOCK_SIZE) {
        error_setg(errp, "cxltrack-swap-mapper: the memory manager needs"
                   " memdev to be anonymous memory of 4 KiB pages"
                   " (memory-backend-ram without share)");
        return false;
    }
    if (s->offload && !s->image) {
        error_setg(errp, "cxltrack-swap-mapper: offload needs image (the"
                   " disk image pages are read back from)");
        return false;
    }
    if (s->prevent &&
        (!kvm_enabled() ||
         kvm_vm_ioctl_arg(KVM_CHECK_EXTENSION,
                          (void *)(uintptr_t)KVM_CAP_PREVENT_READS) <= 0)) {
        error_setg(errp, "cxltrack-swap-mapper: prevent needs KVM with"
                   " KVM_CAP_PREVENT_READS (the cxltrack KVM series)");
        return false;
    }
    if (s->prevent && !s->prevent_max) {
        error_setg(errp, "cxltrack-swap-mapper: prevent-max must be at"
                   " least 1");
        return false;
    }
    if (!s->readahead || s->readahead > READAHEAD_MAX) {
        error_setg(errp, "cxltrack-swap-mapper: readahead must be 1 to %d",
                   READAHEAD_MAX);
        return false;
    }
    mm->rb = mr->ram_block;
    mm->swap_fd = qemu_create(s->swap_file, O_RDWR | O_TRUNC, 0600, errp);
    if (mm->swap_fd < 0) {
        return false;
    }
    if (ftruncate(mm->swap_fd, s->ram_size)) {
        error_setg_errno(errp, errno, "cxltrack-swap-mapper: %s",
                         s->swap_file);
        return false;
    }
    if (s->image) {
        off_t size;

        mm->image_fd = qemu_open(s->image, O_RDONLY, errp);
        if (mm->image_fd < 0) {
            return false;
        }
        size = lseek(mm->image_fd, 0, SEEK_END);
        if (size < 0) {
            error_setg_errno(errp, errno, "cxltrack-swap-mapper: %s",
                             s->image);
            return false;
        }
        /* the disk's size: its reads name no block past it */
        mm->image_blocks = size / BLOCK_SIZE;
    }
    if (ioctl(s->fd, CXLT_IOC_INFO, &info) < 0) {
        error_setg_errno(errp, errno, "cxltrack-swap-mapper: %s: INFO",
                         s->tracker);
        return false;
    }
    mm->harvest_count = QEMU_ALIGN_DOWN(info.pages,
                                        MAX(info.harvest_align, 8));
    mm->bitmap = g_malloc0(mm->harvest_count / 8 + 1);
    /*
     * A consumer view of the accessed bits (driver uapi 6): another VM's
     * manager on the same device clears them too, and without a view each
     * would take the other's. An older driver has none: harvest as before.
     */
    view.start = 0;
    view.count = mm->harvest_count;
    if (ioctl(s->fd, CXLT_IOC_VIEW, &view) < 0) {
        warn_report("cxltrack-swap-mapper: %s: no view of the accessed bits"
                    " (%s): another consumer's harvests take them",
                    s->tracker, strerror(errno));
    }
    if (uffd_query_features(&features) || (features & need) != need) {
        error_setg(errp, "cxltrack-swap-mapper: the memory manager needs"
                   " userfaultfd with write-protection (Linux 5.7)");
        return false;
    }
    mm->uffd = uffd_create_fd(need, true);
    if (mm->uffd < 0) {
        error_setg_errno(errp, errno, "cxltrack-swap-mapper: userfaultfd");
        return false;
    }
    /* whole-page eviction: no transparent huge pages in the range */
    qemu_madvise(s->ram, s->ram_size, QEMU_MADV_NOHUGEPAGE);
    if (uffd_register_memory(mm->uffd, s->ram, s->ram_size,
                             UFFDIO_REGISTER_MODE_MISSING |
                             UFFDIO_REGISTER_MODE_WP, &ioctls) ||
        (ioctls & want) != want) {
        error_setg_errno(errp, errno, "cxltrack-swap-mapper: cannot register"
                         " the memdev with userfaultfd");
        return false;
    }
    mm->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (mm->stop_fd < 0) {
        error_setg_errno(errp, errno, "cxltrack-swap-mapper: eventfd");
        return false;
    }
    if (s->prevent) {
        mm->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        mm->queue_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (mm->event_fd < 0 || mm->queue_fd < 0) {
            error_setg_errno(errp, errno, "cxltrack-swap-mapper: eventfd");
            return false;
        }
    }
    if (s->prevent && s->prevent_timeout) {
        /*
         * VSwapper's 1 ms: a page the guest leaves half written is read
         * back then (SLOT_TIMEOUT), not when it next needs it.
         */
        struct cxlt_ctrl ctrl = { .flags = CXLT_CTRL_TIMEOUT,
                                  .slot_timeout = s->prevent_timeout };

        if (ioctl(s->fd, CXLT_IOC_CTRL, &ctrl) < 0) {
            error_setg_errno(errp, errno, "cxltrack-swap-mapper: %s: cannot"
                             " set the slot timeout", s->tracker);
            return false;
        }
    }
    return true;
}

bool cxltrack_mm_start(CxltrackSwapMapper *s, Error **errp)
{
    CxltrackMemoryManager *mm = g_new0(CxltrackMemoryManager, 1);
    g_autofree unsigned char *vec = NULL;
    uint64_t p;

    mm->npages = s->ram_size / BLOCK_SIZE;
    mm->uffd = mm->swap_fd = mm->image_fd = mm->stop_fd = -1;
    mm->event_fd = mm->queue_fd = -1;
    mm->gpa = NO_DPA;
    qemu_sem_init(&mm->wake, 0);
    qemu_cond_init(&mm->merged);
    if (!mm_open(s, mm, errp)) {
        mm_free(mm);
        return false;
    }
    mm->state = g_new0(uint8_t, mm->npages);
    mm->flags = g_new0(uint8_t, mm->npages);
    mm->age = g_new0(uint8_t, mm->npages);
    mm->where = g_new0(uint64_t, mm->npages);
    mm->dpa = g_new(uint64_t, mm->npages);
    mm->next_of_block = g_new(uint32_t, mm->npages);
    mm->page_of_slot = g_new(uint32_t, mm->npages);
    mm->victims = g_new(uint32_t, mm->npages);
    mm->flagged = g_new0(uint8_t, mm->npages);
    mm->flag_gen = g_new0(uint32_t, mm->npages);
    mm->query_gen = g_new0(uint32_t, mm->npages);
    mm->pstate = g_new0(struct kvm_prevent_page_state, mm->npages);
    mm->queue = g_new(uint32_t, mm->npages);
    mm->evicted_of_block = g_hash_table_new_full(g_int64_hash, g_int64_equal,
                                                 g_free, NULL);
    mm->buf = qemu_memalign(BLOCK_SIZE, READAHEAD_MAX * BLOCK_SIZE);
    mm->zero = qemu_memalign(BLOCK_SIZE, BLOCK_SIZE);
    mm->tmp = qemu_memalign(BLOCK_SIZE, BLOCK_SIZE);
    mm->ra_buf = qemu_memalign(BLOCK_SIZE, RA_CACHE * BLOCK_SIZE);
    memset(mm->ra_page, 0xff, sizeof(mm->ra_page));    /* NO_PAGE */
    memset(mm->zero, 0, BLOCK_SIZE);
    for (p = 0; p < mm->npages; p++) {
        mm->dpa[p] = NO_DPA;
        mm->next_of_block[p] = NO_PAGE;
        mm->page_of_slot[p] = NO_PAGE;
    }
    /* the pages that are there already are resident; the rest absent */
    vec = g_malloc0(mm->npages);
    if (mincore(s->ram, s->ram_size, vec)) {
        error_setg_errno(errp, errno, "cxltrack-swap-mapper: mincore");
        mm_free(mm);
        return false;
    }
    s->mm = mm;
    for (p = 0; p < mm->npages; p++) {
        if (vec[p] & 1) {
            mm->state[p] = PG_RESIDENT;
            mm->dpa[p] = addr_dpa(s, page_addr(s, p));
            s->mms.resident++;
        }
    }
    qemu_thread_create(&mm->fault_thread, "cxlt-mm-fault", fault_thread, s,
                       QEMU_THREAD_JOINABLE);
    qemu_thread_create(&mm->scan_thread, "cxlt-mm-scan", scan_thread, s,
                       QEMU_THREAD_JOINABLE);
    if (s->prevent) {
        qemu_thread_create(&mm->prevent_thread, "cxlt-mm-prevent",
                           prevent_thread, s, QEMU_THREAD_JOINABLE);
        kvm_set_guest_access_handler(guest_access, s);
    }
    return true;
}

void cxltrack_mm_stop(CxltrackSwapMapper *s)
{
    CxltrackMemoryManager *mm = s->mm;
    uint64_t one = 1;

    if (!mm) {
        return;
    }
    qatomic_set(&mm->stop, true);
    qemu_sem_post(&mm->wake);
    if (write(mm->stop_fd, &one, sizeof(one)) != sizeof(one)) {
        error_report("cxltrack memory manager: cannot stop: %s",
                     strerror(errno));
    }
    qemu_thread_join(&mm->scan_thread);
    if (s->prevent) {
        /*
         * Pages still flagged stay so: KVM drops their slots with the VM
         * (this runs when the object goes, which is at QEMU's exit).
         */
        kvm_set_guest_access_handler(NULL, NULL);
        qemu_thread_join(&mm->prevent_thread);
    }
    qemu_thread_join(&mm->fault_thread);
    uffd_unregister_memory(mm->uffd, s->ram, s->ram_size);
    s->mm = NULL;
    mm_free(mm);
}

static void get_resident_limit(Object *obj, Visitor *v, const char *name,
                               void *opaque, Error **errp)
{
    CxltrackSwapMapper *s = CXLTRACK_SWAP_MAPPER(obj);
    uint64_t value = qatomic_read(&s->resident_limit);

    visit_type_size(v, name, &value, errp);
}

static void set_resident_limit(Object *obj, Visitor *v, const char *name,
                               void *opaque, Error **errp)
{
    CxltrackSwapMapper *s = CXLTRACK_SWAP_MAPPER(obj);
    uint64_t value;

    if (!visit_type_size(v, name, &value, errp)) {
        return;
    }
    if (value % BLOCK_SIZE) {
        error_setg(errp, "resident-limit must be a multiple of 4 KiB");
        return;
    }
    qatomic_set(&s->resident_limit, value);
    if (s->mm) {
        qemu_sem_post(&s->mm->wake);
    }
}

static char *get_swap_file(Object *obj, Error **errp)
{
    return g_strdup(CXLTRACK_SWAP_MAPPER(obj)->swap_file);
}

static void set_swap_file(Object *obj, const char *value, Error **errp)
{
    CxltrackSwapMapper *s = CXLTRACK_SWAP_MAPPER(obj);

    g_free(s->swap_file);
    s->swap_file = g_strdup(value);
}

static char *get_image(Object *obj, Error **errp)
{
    return g_strdup(CXLTRACK_SWAP_MAPPER(obj)->image);
}

static void set_image(Object *obj, const char *value, Error **errp)
{
    CxltrackSwapMapper *s = CXLTRACK_SWAP_MAPPER(obj);

    g_free(s->image);
    s->image = g_strdup(value);
}

static bool get_offload(Object *obj, Error **errp)
{
    return CXLTRACK_SWAP_MAPPER(obj)->offload;
}

static bool get_prevent(Object *obj, Error **errp)
{
    return CXLTRACK_SWAP_MAPPER(obj)->prevent;
}

static void set_prevent(Object *obj, bool value, Error **errp)
{
    CxltrackSwapMapper *s = CXLTRACK_SWAP_MAPPER(obj);

    if (s->mm) {
        error_setg(errp, "prevent is set before the manager starts");
        return;
    }
    s->prevent = value;
}

static void set_offload(Object *obj, bool value, Error **errp)
{
    CxltrackSwapMapper *s = CXLTRACK_SWAP_MAPPER(obj);

    if (s->mm) {
        error_setg(errp, "offload is set before the manager starts");
        return;
    }
    s->offload = value;
}

void cxltrack_mm_add_properties(Object *obj)
{
    CxltrackSwapMapper *s = CXLTRACK_SWAP_MAPPER(obj);
    static const struct {
        const char *name;
        size_t offset;
    } counters[] = {
        { "resident-pages", offsetof(CxltrackMmStats, resident) },
        { "evicted-clean", offsetof(CxltrackMmStats, evicted_clean) },
        { "evicted-zero", offsetof(CxltrackMmStats, evicted_zero) },
        { "swap-writes", offsetof(CxltrackMmStats, swap_writes) },
        { "silent-writes", offsetof(CxltrackMmStats, silent_writes) },
        { "faults-block", offsetof(CxltrackMmStats, faults_block) },
        { "faults-swap", offsetof(CxltrackMmStats, faults_swap) },
        { "faults-zero", offsetof(CxltrackMmStats, faults_zero) },
        { "readahead-pages", offsetof(CxltrackMmStats, readahead_pages) },
        { "readahead-hits", offsetof(CxltrackMmStats, readahead_hits) },
        { "readahead-unused", offsetof(CxltrackMmStats, readahead_unused) },
        { "host-reads", offsetof(CxltrackMmStats, host_reads) },
        { "host-read-pages", offsetof(CxltrackMmStats, host_read_pages) },
        { "stale-reads", offsetof(CxltrackMmStats, stale_reads) },
        { "stale-reads-avoided",
          offsetof(CxltrackMmStats, stale_reads_avoided) },
        { "double-paging", offsetof(CxltrackMmStats, double_paging) },
        { "double-paging-avoided",
          offsetof(CxltrackMmStats, double_paging_avoided) },
        { "evicted-compared", offsetof(CxltrackMmStats, evicted_compared) },
        { "copied-in", offsetof(CxltrackMmStats, copied_in) },
        { "mm-errors", offsetof(CxltrackMmStats, errors) },
        { "periods", offsetof(CxltrackMmStats, periods) },
        { "prevent-flagged", offsetof(CxltrackMmStats, prevent_flagged) },
        { "prevent-unflagged",
          offsetof(CxltrackMmStats, prevent_unflagged) },
        { "prevent-full", offsetof(CxltrackMmStats, prevent_full) },
        { "false-reads-avoided",
          offsetof(CxltrackMmStats, false_reads_avoided) },
        { "prevent-fetches", offsetof(CxltrackMmStats, prevent_fetches) },
        { "prevent-exits", offsetof(CxltrackMmStats, prevent_exits) },
        { "prevent-timeouts", offsetof(CxltrackMmStats, prevent_timeouts) },
        { "prevent-nonseq", offsetof(CxltrackMmStats, prevent_nonseq) },
        { "prevent-lost", offsetof(CxltrackMmStats, prevent_lost) },
        { "prevent-early-wakes",
          offsetof(CxltrackMmStats, prevent_early_wakes) },
    };
    size_t i;

    s->offload = true;
    s->period_ms = 100;
    s->readahead = 8;
    /* the MMIO bus holds 1000 devices, one per flagged page */
    s->prevent_max = 256;
    object_property_add_str(obj, "swap-file", get_swap_file, set_swap_file);
    object_property_add_str(obj, "image", get_image, set_image);
    object_property_add_bool(obj, "offload", get_offload, set_offload);
    object_property_add_bool(obj, "prevent", get_prevent, set_prevent);
    object_property_add_uint32_ptr(obj, "prevent-max", &s->prevent_max,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint32_ptr(obj, "prevent-timeout", &s->prevent_timeout,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add(obj, "resident-limit", "size", get_resident_limit,
                        set_resident_limit, NULL, NULL);
    object_property_add_uint32_ptr(obj, "period-ms", &s->period_ms,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint32_ptr(obj, "readahead", &s->readahead,
                                   OBJ_PROP_FLAG_READWRITE);
    for (i = 0; i < ARRAY_SIZE(counters); i++) {
        object_property_add_uint64_ptr(obj, counters[i].name,
                                       (uint64_t *)((uint8_t *)&s->mms +
                                                    counters[i].offset),
                                       OBJ_PROP_FLAG_READ);
    }
}
