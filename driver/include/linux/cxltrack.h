/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cxltrack: in-kernel interface of the CXL memory tracker driver, for
 * hypervisor-side users (KVM dirty logging, a swap tier, VSwapper-style
 * block association).
 *
 * All functions may sleep and must be called from process context. A
 * struct cxlt_dev pointer stays valid until cxlt_put(); after the device is
 * unbound or removed every call returns -ENODEV. Calls are serialised on
 * the device's command engine; they return -EBUSY while a user holds the
 * device in raw (debug) mode.
 *
 * CPU caches (docs/spec.md section 9): the device sees memory requests,
 * not CPU stores. The functions below that take a kernel virtual address
 * of a page write back / invalidate that page's cache lines themselves
 * (CLFLUSHOPT + fence via clflush_cache_range()); removing writable
 * mappings and shooting down TLBs stays the caller's job.
 */
#ifndef _LINUX_CXLTRACK_H
#define _LINUX_CXLTRACK_H

#include <linux/bits.h>
#include <linux/types.h>
#include <uapi/linux/cxltrack.h>

struct cxlt_dev;
struct notifier_block;
struct pci_dev;

/**
 * cxlt_get_by_memdev() - find the tracker paired with a CXL memory device
 * @memdev: PCI function 0 (the CXL type-3 memdev)
 *
 * Return: a referenced tracker, or NULL if none is bound. Release it with
 * cxlt_put().
 */
struct cxlt_dev *cxlt_get_by_memdev(struct pci_dev *memdev);

/**
 * cxlt_get_by_id() - find a tracker by the N of /dev/cxltrackN
 * @id: tracker number
 *
 * Return: a referenced tracker, or NULL.
 */
struct cxlt_dev *cxlt_get_by_id(int id);

/**
 * cxlt_put() - drop a reference taken by cxlt_get_by_memdev() or cxlt_get_by_id()
 * @cd: tracker (NULL is allowed)
 */
void cxlt_put(struct cxlt_dev *cd);

/**
 * cxlt_info() - the tracker's configuration, from its CAP_* registers
 * @cd: tracker
 * @info: filled in
 *
 * Return: 0 or -ENODEV.
 */
int cxlt_info(struct cxlt_dev *cd, struct cxlt_info *info);

/* cxlt_harvest() flags besides CXLT_HARVEST_F_CLEAR / _DECAY */
#define CXLT_KHARVEST_WBINVD	BIT(16)

/**
 * cxlt_harvest() - read (and optionally clear) dirty/accessed bits or hotness
 * @cd: tracker
 * @kind: CXLT_HARVEST_DIRTY, _ACCESSED or _HOTNESS
 * @start: first page, a multiple of CXLT_HARVEST_ALIGN_PAGES
 * @count: pages, a multiple of CXLT_HARVEST_ALIGN_PAGES; any size (split
 *         into device commands here)
 * @out: bitmap (@count bits, little-endian bytes) or @count hotness bytes
 * @flags: CXLT_HARVEST_F_CLEAR or _DECAY, plus CXLT_KHARVEST_WBINVD
 * @nr_set: optional; set to the number of set bits / non-zero counters
 *
 * For the final round of a migration (spec section 9 rule 1) the caller
 * stops every writer first and passes CXLT_KHARVEST_WBINVD: the function
 * then writes back all CPU caches (wbinvd on every CPU) before harvesting,
 * so no store still sitting in a cache is lost.
 *
 * Return: 0, -EINVAL, -ERANGE, -EIO, -ENODEV, -EBUSY or -EINTR.
 */
int cxlt_harvest(struct cxlt_dev *cd, u32 kind, u64 start, u64 count,
		 void *out, u32 flags, u64 *nr_set);

/**
 * cxlt_bat_set() - associate a page with a disk block
 * @cd: tracker
 * @page: DPA page index
 * @block: block number (< 2^block_bits)
 * @disk: disk id (< 2^disk_bits)
 * @kaddr: kernel mapping of the page if the CPU filled it with cached
 *         stores (its lines are written back first, spec section 9 rule 3),
 *         or NULL if it was filled by DMA or non-temporal stores
 *
 * Return: 0 or a negative errno.
 */
int cxlt_bat_set(struct cxlt_dev *cd, u64 page, u64 block, u32 disk,
		 const void *kaddr);

/**
 * cxlt_bat_get() - read a page's association without changing it
 * @cd: tracker
 * @page: DPA page index
 * @block: out
 * @disk: out
 *
 * Return: 1 if valid, 0 if not, or a negative errno.
 */
int cxlt_bat_get(struct cxlt_dev *cd, u64 page, u64 *block, u32 *disk);

/**
 * cxlt_bat_discard_if_clean() - atomically read and clear a page's association
 * @cd: tracker
 * @page: DPA page index
 * @kaddr: kernel mapping of the page, or NULL if no CPU mapping of the page
 *         can hold dirty lines
 * @block: out, valid if the function returns 1
 * @disk: out, valid if the function returns 1
 *
 * The caller must already have removed every writable mapping of the page
 * and completed the TLB shootdown (spec section 9 rule 2 (i)). This
 * function writes back the page's cache lines through @kaddr (rule 2 (ii))
 * and only then asks the device, so a "clean" answer is final: the page
 * still holds exactly @block of @disk and may be dropped without I/O.
 *
 * Return: 1 if the page was clean (association returned and cleared),
 * 0 if it was written since the association was set, or a negative errno.
 */
int cxlt_bat_discard_if_clean(struct cxlt_dev *cd, u64 page, const void *kaddr,
			      u64 *block, u32 *disk);

/**
 * cxlt_slot_alloc() - take a write-buffer slot
 * @cd: tracker
 * @tag: stored with the slot and reported in its events
 *
 * The slot is device-wide (not tied to any file).
 *
 * Return: the slot index, or -ENOSPC when every slot is in use, or another
 * negative errno.
 */
int cxlt_slot_alloc(struct cxlt_dev *cd, u64 tag);

/**
 * cxlt_slot_write() - store bytes into an OPEN slot through the UC mapping
 * @cd: tracker
 * @slot: slot index
 * @offset: byte offset in the page
 * @buf: bytes
 * @len: length, @offset + @len <= CXLT_SLOT_BYTES
 *
 * Return: 0, -ENOENT if the slot is not OPEN, or another negative errno.
 */
int cxlt_slot_write(struct cxlt_dev *cd, u32 slot, u32 offset,
		    const void *buf, u32 len);

/**
 * cxlt_slot_read() - read bytes that were written into an OPEN slot
 * @cd: tracker
 * @slot: slot index
 * @offset: byte offset in the page
 * @buf: out
 * @len: length, @offset + @len <= CXLT_SLOT_BYTES
 *
 * For serving a load from the slot: succeeds only if every byte of the
 * range was written since SLOT_ALLOC, so no byte that nobody wrote is ever
 * returned as data.
 *
 * Return: 0, -ENODATA if some byte of the range was not written (@buf is
 * then undefined), -ENOENT if the slot is not OPEN, or another negative
 * errno.
 */
int cxlt_slot_read(struct cxlt_dev *cd, u32 slot, u32 offset, void *buf,
		   u32 len);

/**
 * cxlt_slot_state() - a slot's state and how many of its bytes were written
 * @cd: tracker
 * @slot: slot index
 * @state: out: CXLT_SLOTST_FREE, _OPEN or _MERGING
 * @valid_bytes: out: bytes written since SLOT_ALLOC (CXLT_SLOT_BYTES: full)
 *
 * Return: 0 or a negative errno.
 */
int cxlt_slot_state(struct cxlt_dev *cd, u32 slot, u32 *state,
		    u32 *valid_bytes);

/**
 * cxlt_slot_merge() - write a slot's valid bytes into a page and free it
 * @cd: tracker
 * @slot: slot index
 * @page: destination DPA page index
 * @kaddr: kernel mapping of the destination, or NULL; its lines are
 *         written back before the merge (old contents must have reached
 *         the device, spec section 9 rule 6) and invalidated after it
 *         (the merge wrote memory under the cache)
 * @valid_bytes: optional out: bytes written
 *
 * Return: 0 or a negative errno (-ENOENT: slot not OPEN).
 */
int cxlt_slot_merge(struct cxlt_dev *cd, u32 slot, u64 page, void *kaddr,
		    u64 *valid_bytes);

/**
 * cxlt_slot_release() - free an OPEN slot without merging
 * @cd: tracker
 * @slot: slot index
 *
 * Return: 0 or a negative errno.
 */
int cxlt_slot_release(struct cxlt_dev *cd, u32 slot);

/**
 * cxlt_chunk_assign() - give a FREE chunk to an owner
 * @cd: tracker
 * @chunk: chunk index
 * @owner: 1..65535
 *
 * Return: 0, -EBUSY if the chunk is not FREE, or another negative errno.
 */
int cxlt_chunk_assign(struct cxlt_dev *cd, u32 chunk, u32 owner);

/**
 * cxlt_chunk_release() - release an owned chunk; the device scrubs it
 * @cd: tracker
 * @chunk: chunk index
 * @owner: its owner
 *
 * Return: 0, -EPERM (other owner), -ENOENT (not OWNED) or another errno.
 */
int cxlt_chunk_release(struct cxlt_dev *cd, u32 chunk, u32 owner);

/**
 * cxlt_register_notifier() - receive device events
 * @cd: tracker
 * @nb: notifier; called with action = event type and data = a
 *      const struct cxlt_event *, in process context (the IRQ thread);
 *      or with action = CXLT_NOTIFY_RESET and data = NULL after the
 *      device was reset (every slot and chunk of every user is gone, its
 *      tables are cleared: treat every page as dirty and every association
 *      as invalid). It must not call back into cxlt_* functions.
 *
 * Return: 0 or a negative errno.
 */
int cxlt_register_notifier(struct cxlt_dev *cd, struct notifier_block *nb);

/* Notifier action after a device reset (event types are 1..6). */
#define CXLT_NOTIFY_RESET	0x100

/**
 * cxlt_unregister_notifier() - stop receiving events
 * @cd: tracker
 * @nb: notifier passed to cxlt_register_notifier()
 *
 * Return: 0 or -ENOENT.
 */
int cxlt_unregister_notifier(struct cxlt_dev *cd, struct notifier_block *nb);

/**
 * cxlt_get_by_pfn() - find the tracker of a host page frame
 * @pfn: host page frame number
 * @page: out: the tracking page (DPA page index) that holds the frame
 *
 * Uses the host-physical maps that user space registered in
 * /sys/class/cxltrack/cxltrackN/dirty_log/hpa_map.
 *
 * Return: a referenced tracker (release it with cxlt_put()), or NULL.
 */
struct cxlt_dev *cxlt_get_by_pfn(unsigned long pfn, u64 *page);

struct cxlt_dirty_log;

/**
 * cxlt_dirty_log_open() - start a kernel dirty log over the mapped trackers
 *
 * A log covers every tracker with a host-physical map (hpa_map), tracking
 * enabled and PAGE_SIZE tracking pages. From the first open until the last
 * close the tracker's harvested dirty bits are kept in a shadow bitmap that
 * all logs share; user space cannot harvest dirty bits with CLEAR meanwhile
 * (-EBUSY).
 *
 * Return: a log, NULL if no tracker qualifies, or ERR_PTR(-ENOMEM).
 */
struct cxlt_dirty_log *cxlt_dirty_log_open(void);

/**
 * cxlt_dirty_log_close() - end a kernel dirty log
 * @log: log from cxlt_dirty_log_open(); NULL and error pointers are ignored
 */
void cxlt_dirty_log_close(struct cxlt_dirty_log *log);

/**
 * cxlt_dirty_log_pfn() - is a host page frame on a tracker of the log?
 * @log: log
 * @pfn: host page frame number
 * @cookie: out: the page's handle for cxlt_dirty_log_test_and_clear(),
 *          below BIT_ULL(63)
 *
 * May be called in any context (no locks, no sleeping). The page is added
 * to the range that cxlt_dirty_log_sync() harvests.
 *
 * Return: true if the frame is tracked by the log.
 */
bool cxlt_dirty_log_pfn(struct cxlt_dirty_log *log, unsigned long pfn,
			u64 *cookie);

/**
 * cxlt_dirty_log_sync() - harvest the device's dirty bits into the log
 * @log: log
 * @flags: 0, or CXLT_KHARVEST_WBINVD for a final round (every writer
 *         stopped): write back all CPU caches first (spec section 9 rule 1)
 *
 * Harvests (and clears on the device) the dirty bits of every page looked up
 * with cxlt_dirty_log_pfn() so far and adds them to the shadow bitmap.
 * Process context.
 *
 * Return: 0, or a negative errno if dirty bits may have been lost since the
 * previous sync (-ESTALE: PCI reset, tracking disabled or raw mode; -EIO,
 * -ENODEV, -ENOMEM, -EINTR: a harvest failed). The caller must then treat
 * every page of the log as dirty.
 */
int cxlt_dirty_log_sync(struct cxlt_dirty_log *log, u32 flags);

/**
 * cxlt_dirty_log_test_and_clear() - take one page's dirty bit
 * @log: log
 * @cookie: from cxlt_dirty_log_pfn()
 *
 * Any context.
 *
 * Return: true if the page was written (the bit is cleared).
 */
bool cxlt_dirty_log_test_and_clear(struct cxlt_dirty_log *log, u64 cookie);

/**
 * cxlt_dirty_log_set() - give a dirty bit back
 * @log: log
 * @cookie: from cxlt_dirty_log_pfn()
 *
 * For a caller that took a bit for a page it no longer maps. Any context.
 */
void cxlt_dirty_log_set(struct cxlt_dirty_log *log, u64 cookie);

#endif /* _LINUX_CXLTRACK_H */
