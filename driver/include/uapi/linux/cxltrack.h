/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * cxltrack: user-space interface of the CXL memory tracker driver.
 *
 * One character device /dev/cxltrackN per tracker (PCI function 1 of a CXL
 * type-3 memory device, see docs/spec.md). Pages are tracking pages of the
 * device (CXLT_INFO.page_shift), indexed by device physical address (DPA).
 *
 * Versioning: CXLT_UAPI_VERSION is reported by CXLT_IOC_INFO. Every argument
 * structure has a flags word and reserved space; unknown flags and non-zero
 * reserved fields are rejected with -EINVAL, so they can be given meaning
 * later without breaking old binaries.
 *
 * Errors common to all ioctls:
 *   -ENOTTY  unknown ioctl number
 *   -EFAULT  a user pointer (the argument or a buffer in it) is not accessible
 *   -EINVAL  unknown flag, non-zero reserved field, misaligned value
 *   -ERANGE  page/slot/chunk/owner/block/disk outside the device's limits
 *   -ENODEV  the device was removed (the file stays open but is dead)
 *   -EIO     the device did not answer in time or gave an impossible answer
 *   -EBUSY   raw mode is active on another file (or the state forbids it)
 *   -EINTR   interrupted while waiting for the command engine
 * Device status codes map to: ALIGN/FLAGS -> -EINVAL, RANGE -> -ERANGE,
 * BUSY -> -EBUSY, STATE -> -ENOENT, NO_RESOURCE -> -ENOSPC, PERM -> -EPERM,
 * UNKNOWN_OP -> -EOPNOTSUPP, DMA_ERROR -> -EIO.
 *
 * Version 8: DMA harvests (docs/spec.md section 5.3): cxlt_info.dma_addr_bits,
 * CXLT_HARVEST_F_MMIO, cxlt_stats.dma_commands.
 *
 * Version 9: CXLT_IOC_CHUNK_COPY (docs/spec.md section 7.1, device interface
 * 1.3), cxlt_info.chunk_copy.
 *
 * Events: read() returns whole struct cxlt_event records (a buffer smaller
 * than one record gives -EINVAL); poll() reports EPOLLIN when one is queued
 * and EPOLLHUP|EPOLLERR after removal. Every open file gets every event
 * produced after it was opened.
 */
#ifndef _UAPI_LINUX_CXLTRACK_H
#define _UAPI_LINUX_CXLTRACK_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define CXLT_UAPI_VERSION		9

#define CXLT_IOC_MAGIC			0xC7

/* CXLT_IOC_INFO: the device's configuration, from its CAP_* registers. */
struct cxlt_info {
	__u32 uapi_version;	/* CXLT_UAPI_VERSION of the driver */
	__u32 hw_version;	/* VERSION register: major << 16 | minor */
	__u64 pages;		/* tracked pages */
	__u32 page_shift;	/* log2 tracking page size */
	__u32 num_slots;
	__u32 hot_bits;
	__u32 evq_depth_log2;
	__u32 chunk_shift;
	__u32 num_chunks;
	__u32 disk_bits;
	__u32 block_bits;
	__u32 tick_ns;
	__u32 harvest_align;	/* start/count of a harvest: multiples of this */
	__u32 id;		/* N of /dev/cxltrackN */
	__u32 memdev_devfn;	/* devfn of the paired CXL memdev (function 0) */
	__u32 memdev_bus;	/* its PCI domain << 8 | bus number */
	/*
	 * dma_addr_bits: CAP_DMA.ADDR_BITS when the driver harvests by DMA
	 * (the device writes results into a driver buffer, spec 5.3); 0 when
	 * every harvest reads the RESULT window (no CAP_DMA, no usable DMA
	 * mask or buffer, or module parameter harvest_dma=0).
	 */
	__u32 dma_addr_bits;
	/*
	 * chunk_copy: 1 when CXLT_IOC_CHUNK_COPY works (the device has
	 * CAP_DMA.COPY and the driver a bounce buffer of one chunk); 0: it
	 * answers -EOPNOTSUPP. Since version 9.
	 */
	__u32 chunk_copy;
	__u32 reserved[5];
};

/* CXLT_IOC_HARVEST: dirty/accessed bitmaps or hotness counters of a range. */
#define CXLT_HARVEST_DIRTY		0
#define CXLT_HARVEST_ACCESSED		1
#define CXLT_HARVEST_HOTNESS		2

#define CXLT_HARVEST_F_CLEAR		(1U << 0)	/* clear what was read */
#define CXLT_HARVEST_F_DECAY		(1U << 1)	/* hotness: halve counters */
/*
 * WRITEBACK: write back every CPU cache (WBINVD on every CPU) before the
 * first command: the final round of a migration, after every writer was
 * stopped (docs/spec.md section 9 rule 1). CAP_SYS_ADMIN.
 */
#define CXLT_HARVEST_F_WRITEBACK	(1U << 2)
/*
 * MMIO: read every command's result through the RESULT window even where
 * the driver harvests by DMA (info.dma_addr_bits != 0). The results are the
 * same; the cost differs (A/B comparisons, tests of both paths).
 */
#define CXLT_HARVEST_F_MMIO		(1U << 3)
#define CXLT_HARVEST_F_ALL		(CXLT_HARVEST_F_CLEAR | CXLT_HARVEST_F_DECAY | \
					 CXLT_HARVEST_F_WRITEBACK | CXLT_HARVEST_F_MMIO)

struct cxlt_harvest {
	__u32 kind;		/* CXLT_HARVEST_* */
	__u32 flags;		/* CXLT_HARVEST_F_*; CLEAR and DECAY exclusive */
	__u64 start;		/* first page, multiple of info.harvest_align */
	__u64 count;		/* pages, multiple of info.harvest_align, > 0 */
	/*
	 * buf: user pointer to the output, either a bitmap (count / 8 bytes,
	 * bit i % 8 of byte i / 8 = page start + i) or hotness counters
	 * (count bytes, one per page).
	 */
	__u64 buf;
	__u64 buf_len;		/* bytes at buf; must cover the output */
	__u64 nr_set;		/* out: pages with a set bit / non-zero counter */
	/*
	 * out: pages harvested from start on; buf holds the result for
	 * [start, start + done), nr_set counts within them. The call is split
	 * into device commands of up to 32768 pages (4096 for HOTNESS) read
	 * through the RESULT window, or, where the driver harvests by DMA and
	 * the output is at least the module parameter dma_min_bytes (default
	 * 128), into DMA commands of up to the driver's DMA buffer (whole
	 * devices of up to 128 GiB in one bitmap command). It
	 * returns 0 with done == count, or 0 with 0 < done < count when it was
	 * cut short after some commands (a signal, raw mode entered, the device
	 * removed, a fault in buf): the pages past done were not touched (with
	 * CLEAR: not cleared), repeat the call for them. An error before the
	 * first command returns the errno with done == 0, and buf untouched.
	 * -EIO: the device failed a command; done is still valid, and with
	 * CLEAR every page of the failed command counts as set (reported set
	 * in buf and included in done): its state on the device is unknown.
	 * A DMA command that could not write its result (DMA_ERROR, e.g. bus
	 * mastering turned off) is such a failure; the device has set the
	 * range's bits again, so the next harvest reports them too.
	 */
	__u64 done;
	__u64 reserved;
};

/* CXLT_IOC_BAT: block-association table of one page. */
#define CXLT_BAT_SET			0
#define CXLT_BAT_GET			1
#define CXLT_BAT_CLEAR			2
#define CXLT_BAT_DISCARD		3	/* atomic read-and-clear */

/*
 * ADDR (SET, DISCARD): addr is the caller's mapping of the page (aligned to
 * the device page size); the driver writes back the page's CPU cache lines
 * through it before the command (docs/spec.md section 9 rules 2 and 3).
 * Without it that write-back is the caller's duty (CLFLUSHOPT over its
 * mapping + SFENCE). Removing every writable mapping of the page before
 * DISCARD stays the caller's duty either way. A DISCARD whose addr is the
 * caller's own writable mapping of @page is allowed without privileges and
 * on a page onlined as System RAM (it changes no data).
 */
#define CXLT_BAT_F_ADDR			(1U << 0)

struct cxlt_bat {
	__u32 op;		/* CXLT_BAT_* */
	__u32 flags;		/* CXLT_BAT_F_ADDR */
	__u64 page;
	__u64 block;		/* in for SET; out for GET/DISCARD */
	__u32 disk;		/* in for SET; out for GET/DISCARD */
	/* valid: out for GET/DISCARD: 1 = the association was valid (DISCARD: clean) */
	__u32 valid;
	__u64 addr;		/* with CXLT_BAT_F_ADDR, else 0 */
	__u64 reserved;
};

/* Write-buffer merge slots. */
#define CXLT_SLOTST_FREE		0
#define CXLT_SLOTST_OPEN		1
#define CXLT_SLOTST_MERGING		2

/*
 * By default a slot belongs to the file that allocated it: other files get
 * -EPERM on it, and it is released when that file is closed. A file without
 * CAP_SYS_ADMIN holds at most the module parameter tenant_slots (default 2)
 * slots (-ENOSPC). KEEP makes it
 * a device-wide slot that outlives the file (any opener may use it).
 */
#define CXLT_SLOT_F_KEEP		(1U << 0)

struct cxlt_slot_alloc {
	__u64 tag;		/* in: stored with the slot, reported in events */
	__u32 flags;		/* CXLT_SLOT_F_KEEP */
	__u32 slot;		/* out: slot index */
	__u64 reserved[2];
};

#define CXLT_SLOT_BYTES			4096

struct cxlt_slot_write {
	__u32 slot;
	__u32 flags;		/* none defined */
	__u32 offset;		/* byte offset in the slot page */
	__u32 len;		/* offset + len <= CXLT_SLOT_BYTES, len > 0 */
	__u64 buf;		/* user pointer to len bytes */
	__u64 reserved[2];
};

/*
 * ADDR: addr is the caller's mapping of the destination page; the driver
 * writes back its lines before the merge and invalidates them after it
 * (docs/spec.md section 9 rule 6). Without it both are the caller's duty.
 */
#define CXLT_SLOT_MERGE_F_ADDR		(1U << 0)

struct cxlt_slot_merge {
	__u32 slot;
	__u32 flags;		/* CXLT_SLOT_MERGE_F_ADDR */
	__u64 page;		/* destination page (DPA page index) */
	__u64 valid_bytes;	/* out: bytes the merge wrote */
	__u64 addr;		/* with CXLT_SLOT_MERGE_F_ADDR, else 0 */
	__u64 reserved;
};

struct cxlt_slot_release {
	__u32 slot;
	__u32 flags;		/* none defined */
	__u64 reserved[2];
};

struct cxlt_slot_query {
	__u32 slot;
	__u32 flags;		/* none defined */
	__u32 state;		/* out: CXLT_SLOTST_* */
	__u32 full;		/* out: every byte valid */
	__u32 valid_bytes;	/* out */
	__u32 owned;		/* out: 1 if this file owns the slot */
	__u64 tag;		/* out */
	__u64 mask;		/* user pointer for the 512-byte valid mask, or 0 */
	__u64 reserved[2];
};

/* Chunks of the shared swap tier. */
#define CXLT_CHUNK_ASSIGN		0
#define CXLT_CHUNK_RELEASE		1
#define CXLT_CHUNK_QUERY		2

/*
 * ASSIGN binds the chunk, and its owner id, to the calling file: only that
 * file may release it (no CAP_SYS_ADMIN needed for that), no other file may
 * assign chunks to the same owner while it holds one, and closing the file
 * releases the chunk (the device scrubs it). CXLT_CHUNK_F_DETACH assigns a
 * chunk that outlives the file (an administrator's CLI): releasing it needs
 * CAP_SYS_ADMIN. Since UAPI version 3.
 */
#define CXLT_CHUNK_F_DETACH		(1U << 0)

#define CXLT_CHUNKST_FREE		0
#define CXLT_CHUNKST_OWNED		1
#define CXLT_CHUNKST_SCRUBBING	2

struct cxlt_chunk {
	__u32 op;		/* CXLT_CHUNK_* */
	__u32 flags;		/* CXLT_CHUNK_F_* (ASSIGN only) */
	__u32 chunk;
	__u32 owner;		/* in for ASSIGN/RELEASE (1..65535); out for QUERY */
	__u32 state;		/* out for QUERY: CXLT_CHUNKST_* */
	__u32 reserved0;
	__u64 reserved[2];
};

struct cxlt_chunk_list {
	__u32 owner;		/* 0: the free pool */
	__u32 flags;		/* none defined */
	__u64 buf;		/* user pointer: bitmap over chunks */
	__u64 buf_len;		/* >= ceil(num_chunks / 8) */
	__u64 count;		/* out: chunks in the set */
	__u64 reserved[2];
};

/* CXLT_IOC_STATS: device counters and driver counters. */
struct cxlt_stats {
	__u64 reads;		/* STAT_READS */
	__u64 writes;		/* STAT_WRITES */
	__u64 decerr;		/* STAT_DECERR */
	__u64 bat_inv;		/* STAT_BAT_INV */
	__u64 evq_dropped;	/* EVQ_DROPPED: events the device dropped */
	__u64 err_status;	/* ERR_STATUS */
	__u64 err_addr;		/* ERR_ADDR */
	__u64 err_count;	/* ERR_COUNT */
	__u64 commands;		/* driver: commands launched */
	__u64 cmd_errors;	/* driver: commands with a non-OK status */
	__u64 cmd_timeouts;	/* driver: commands that timed out */
	__u64 irqs;		/* driver: interrupts handled */
	__u64 events;		/* driver: events popped from the device */
	__u64 events_lost;	/* driver: SEQ gaps seen (device-side drops) */
	__u64 dma_commands;	/* driver: harvest commands launched with DMA */
	__u64 reserved[7];
};

/* CXLT_IOC_SET_CTRL: tracking control. */
#define CXLT_CTRL_F_TRACK_EN		(1U << 0)	/* CTRL.TRACK_EN */
#define CXLT_CTRL_F_BAT_INV_EVT		(1U << 1)	/* CTRL.BAT_INV_EVT_EN */

struct cxlt_ctrl {
	__u32 set;		/* CXLT_CTRL_F_* bits to set */
	__u32 clear;		/* CXLT_CTRL_F_* bits to clear */
	__u32 slot_timeout;	/* SLOT_TIMEOUT.TICKS, used with CXLT_CTRL_TIMEOUT */
	__u32 flags;		/* CXLT_CTRL_TIMEOUT: write slot_timeout */
	__u32 ctrl;		/* out: CXLT_CTRL_F_* now in effect */
	__u32 cur_timeout;	/* out: SLOT_TIMEOUT.TICKS now in effect */
	__u64 reserved[2];
};

#define CXLT_CTRL_TIMEOUT		(1U << 0)

/*
 * CXLT_IOC_EVENT_SCOPE: which events read() on this file returns. OWN (the
 * default): the events of the slots this file owns (SLOT_FULL, SLOT_TIMEOUT,
 * MERGE_DONE) and the SCRUB_DONE of the chunks it released. ALL
 * (CAP_SYS_ADMIN): every event of the device, for a monitor. Records
 * already queued on the file stay.
 */
#define CXLT_EVENTS_OWN			0
#define CXLT_EVENTS_ALL			1

struct cxlt_event_scope {
	__u32 scope;		/* CXLT_EVENTS_* */
	__u32 flags;		/* none defined */
	__u64 reserved[2];
};

/*
 * CXLT_IOC_ADDR_PAGE: the device page that a page of the caller's address
 * space maps (e.g. a mapping of /dev/daxX.Y), so that a user of the tracker
 * need not be told where its memory is on the device, and cannot be told
 * wrongly. @addr is aligned to the tracking page size. -EFAULT: not mapped;
 * -ENXIO: not memory of this device, or the driver does not know where the
 * device's memory is mapped (no dirty_log/hpa_map entry covers it).
 */
struct cxlt_addr_page {
	__u64 addr;		/* in: user virtual address */
	__u64 page;		/* out: device page (DPA >> page_shift) */
	__u32 flags;		/* none defined */
	__u32 reserved0;
	__u64 reserved[2];
};

/*
 * CXLT_IOC_BAT_SET_ADDRS: associate the device pages behind pages of the
 * caller's address space with disk blocks, a batch per call (a hypervisor
 * after its VM read them from a virtual disk: VSwapper's Swap Mapper). For
 * each entry in order the driver finds the device page @addr maps, as
 * CXLT_IOC_ADDR_PAGE does (-EFAULT, -ENXIO), writes back the caller's cached
 * copy of it (spec section 9 rule 3) and sets the association, as
 * CXLT_BAT_SET with CXLT_BAT_F_ADDR does. The page may be System RAM (the
 * caller's memory on a kmem node): it is the caller's own page. On return
 * @done is the number of entries set: @count on success; on an error the
 * entry at @done failed, or (-EINTR) a signal stopped the call before it.
 * Needs CAP_SYS_ADMIN, as CXLT_BAT_SET.
 */
#define CXLT_BAT_ADDRS_MAX		1024

struct cxlt_bat_addr {
	__u64 addr;		/* the page in the caller's mapping, page aligned */
	__u64 block;
	__u32 disk;
	__u32 reserved;
};

struct cxlt_bat_set_addrs {
	__u64 entries;		/* user pointer to @count struct cxlt_bat_addr */
	__u32 count;		/* 1..CXLT_BAT_ADDRS_MAX */
	__u32 flags;		/* none defined */
	__u32 done;		/* out: entries set */
	__u32 reserved0;
	__u64 reserved[2];
};

/*
 * CXLT_IOC_VIEW (version 6): this file's own view of the dirty or accessed
 * bits of a page range, so that its harvests with CLEAR take no other
 * consumer's bits and no other consumer's take its. While a view is open,
 * every harvest with CLEAR of that kind, by any file or in-kernel user, adds
 * the bits it took from the device to every other view covering them, and a
 * harvest of that kind through this file reports the device's bits plus the
 * view's pending ones (taking them with CLEAR). So a harvest with CLEAR
 * through a view reports every page written (accessed) since the view's
 * previous harvest of it, or since the view was opened, whoever cleared the
 * device meanwhile; it needs no capability. While a file holds a view of a
 * kind, its harvests of that kind must lie inside the view (-ERANGE).
 * A device reset, a TRACK_EN change, raw mode or state lost over suspend
 * make every page of every view pending: reported once as written.
 * OPEN: @start, @count aligned like a harvest; -EBUSY if the file has a view
 * of @kind, -ENOSPC when the tracker has CXLT_VIEWS_MAX views. CLOSE:
 * -ENOENT without one. Closing the file closes its views.
 */
#define CXLT_VIEW_OPEN			0
#define CXLT_VIEW_CLOSE			1
#define CXLT_VIEWS_MAX			64	/* per tracker */

struct cxlt_view {
	__u32 op;		/* CXLT_VIEW_* */
	__u32 kind;		/* CXLT_HARVEST_DIRTY or CXLT_HARVEST_ACCESSED */
	__u64 start;		/* OPEN: first page */
	__u64 count;		/* OPEN: pages; CLOSE: start and count 0 */
	__u32 flags;		/* none defined */
	__u32 reserved0;
	__u64 reserved[2];
};

/*
 * CXLT_IOC_GRANT (version 6, CAP_SYS_ADMIN): let this file change the pages
 * [@start, @start + @count) as a caller changes a page it maps writable
 * itself (SLOT_MERGE into them, BAT_DISCARD of their associations) without
 * naming a mapping: a privileged owner grants a tenant a range of the device
 * before it hands the file over. Pages onlined as System RAM stay refused.
 * At most CXLT_GRANTS_MAX ranges per file (-ENOSPC), for as long as the file
 * is open. REVOKE takes back a range granted with the same start and count
 * (-ENOENT if there is none).
 */
#define CXLT_GRANT_ADD			0
#define CXLT_GRANT_REVOKE		1
#define CXLT_GRANTS_MAX			16

struct cxlt_grant {
	__u32 op;		/* CXLT_GRANT_* */
	__u32 flags;		/* none defined */
	__u64 start;		/* first page */
	__u64 count;		/* pages, > 0 */
	__u64 reserved[2];
};

/* An event record, as read() returns it. */
#define CXLT_EV_SLOT_FULL		1
#define CXLT_EV_SLOT_TIMEOUT		2
#define CXLT_EV_MERGE_DONE		3
#define CXLT_EV_SCRUB_DONE		4
#define CXLT_EV_BAT_INVALIDATED	5
#define CXLT_EV_ERROR		6
/*
 * From the driver, not the device (SEQ 0): the device was reset (or lost its
 * state over suspend) while chunks were bound to this file, or while it
 * waited for the SCRUB_DONE of a chunk it released (that SCRUB_DONE will not
 * come: the chunk is FREE, and is scrubbed before its next assignment). The
 * driver gave each bound chunk back to its owner (OWNED again, bound,
 * content kept); ARG is the number it could not, which are no longer this
 * file's (CHUNK_LIST of the owner shows which remain). Flags include
 * CXLT_EVENT_F_RESET.
 */
#define CXLT_EV_RESET		0x80

#define CXLT_EVENT_F_GAP	(1U << 0)	/* device SEQ gap before this record */
#define CXLT_EVENT_F_OVERRUN	(1U << 1)	/* this file's queue overflowed before it */
#define CXLT_EVENT_F_RESET	(1U << 2)	/* the device was reset before it */

struct cxlt_event {
	__u8 type;		/* CXLT_EV_* */
	__u8 reserved0;
	__u16 index;
	__u32 seq;		/* device sequence number */
	__u64 arg;
	__u64 timestamp_ns;	/* CLOCK_MONOTONIC when the driver popped it */
	__u32 flags;		/* CXLT_EVENT_F_* */
	__u32 reserved1;
};

/*
 * CXLT_IOC_CHUNK_COPY: the device copies one whole chunk by DMA (spec 7.1)
 * into a driver buffer, which is copied to buf: a tier read at memory speed
 * instead of one CXL.mem read per load. Only the file the chunk is bound to
 * may copy it (an unbound chunk: CAP_SYS_ADMIN), and owner must be its
 * owner. The copy changes no tracking bit (a concurrent write stays dirty).
 * Errors: -EOPNOTSUPP without CAP_DMA.COPY or a buffer of one chunk; -EINVAL
 * flags/reserved or buf_len < chunk size; -ERANGE chunk/owner; -ENOENT the
 * chunk is not OWNED; -EPERM another owner's or another file's chunk; -EIO
 * the DMA failed (buf untouched). Since version 9.
 */
struct cxlt_chunk_copy {
	__u32 chunk;
	__u32 owner;		/* 1..65535 */
	__u32 flags;		/* none defined */
	__u32 reserved0;
	__u64 buf;		/* user pointer, buf_len bytes */
	__u64 buf_len;		/* >= 1 << chunk_shift; that many are written */
	__u64 reserved[2];
};

/*
 * Raw register access for test and debug (shared-vector replay). Needs
 * CAP_SYS_RAWIO and the module parameter allow_raw=1. CXLT_RAW_ENTER gives
 * this file exclusive use of the device: interrupts are masked, the driver
 * stops draining the event queue and every other ioctl of every file gets
 * -EBUSY until CXLT_RAW_EXIT or close. READ/WRITE access BAR0 at offset
 * with size 1, 2, 4 or 8 (inside the BAR; misaligned offsets are passed to
 * the device, which must refuse them as spec section 4.2 says). RESET is a
 * PCI function reset. Leaving raw mode resynchronises the driver's state.
 */
#define CXLT_RAW_ENTER			0
#define CXLT_RAW_EXIT			1
#define CXLT_RAW_READ			2
#define CXLT_RAW_WRITE			3
#define CXLT_RAW_RESET			4

struct cxlt_raw {
	__u32 op;		/* CXLT_RAW_* */
	__u32 size;		/* access size in bytes */
	__u32 offset;		/* BAR0 offset */
	__u32 flags;		/* none defined */
	__u64 value;		/* in for WRITE, out for READ */
	__u64 reserved[2];
};

#define CXLT_IOC_INFO		_IOR(CXLT_IOC_MAGIC, 0x00, struct cxlt_info)
#define CXLT_IOC_HARVEST	_IOWR(CXLT_IOC_MAGIC, 0x01, struct cxlt_harvest)
#define CXLT_IOC_BAT		_IOWR(CXLT_IOC_MAGIC, 0x02, struct cxlt_bat)
#define CXLT_IOC_SLOT_ALLOC	_IOWR(CXLT_IOC_MAGIC, 0x03, struct cxlt_slot_alloc)
#define CXLT_IOC_SLOT_WRITE	_IOW(CXLT_IOC_MAGIC, 0x04, struct cxlt_slot_write)
#define CXLT_IOC_SLOT_MERGE	_IOWR(CXLT_IOC_MAGIC, 0x05, struct cxlt_slot_merge)
#define CXLT_IOC_SLOT_RELEASE	_IOW(CXLT_IOC_MAGIC, 0x06, struct cxlt_slot_release)
#define CXLT_IOC_SLOT_QUERY	_IOWR(CXLT_IOC_MAGIC, 0x07, struct cxlt_slot_query)
#define CXLT_IOC_CHUNK		_IOWR(CXLT_IOC_MAGIC, 0x08, struct cxlt_chunk)
#define CXLT_IOC_CHUNK_LIST	_IOWR(CXLT_IOC_MAGIC, 0x09, struct cxlt_chunk_list)
#define CXLT_IOC_STATS		_IOR(CXLT_IOC_MAGIC, 0x0a, struct cxlt_stats)
#define CXLT_IOC_CTRL		_IOWR(CXLT_IOC_MAGIC, 0x0b, struct cxlt_ctrl)
#define CXLT_IOC_EVENT_SCOPE	_IOW(CXLT_IOC_MAGIC, 0x0c, struct cxlt_event_scope)
#define CXLT_IOC_ADDR_PAGE	_IOWR(CXLT_IOC_MAGIC, 0x0d, struct cxlt_addr_page)
#define CXLT_IOC_BAT_SET_ADDRS	_IOWR(CXLT_IOC_MAGIC, 0x0e, struct cxlt_bat_set_addrs)
#define CXLT_IOC_VIEW		_IOW(CXLT_IOC_MAGIC, 0x0f, struct cxlt_view)
#define CXLT_IOC_GRANT		_IOW(CXLT_IOC_MAGIC, 0x10, struct cxlt_grant)
#define CXLT_IOC_CHUNK_COPY	_IOW(CXLT_IOC_MAGIC, 0x11, struct cxlt_chunk_copy)
#define CXLT_IOC_RAW		_IOWR(CXLT_IOC_MAGIC, 0x20, struct cxlt_raw)

#endif /* _UAPI_LINUX_CXLTRACK_H */
