/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cxltrack driver core: the state of one tracker and the operations on it.
 * The PCI binding (cxltrack_main.c) creates the two user-facing leaves, the
 * character device (cxltrack_cdev.c) and sysfs (cxltrack_sysfs.c); both call
 * only into the core, and nothing in the core calls into them.
 *
 * Lifetime
 * --------
 * struct cxlt_dev embeds the class device (/dev/cxltrackN) and is freed by
 * its release callback when the last reference goes: the probe's, one per
 * open file, one per in-kernel cxlt_get_*() user. remove() (unbind, or
 * "echo 1 > .../remove") first deletes the char device and sysfs files
 * (which waits for running sysfs callbacks), then takes @life for writing,
 * sets @dead and wakes every waiter. From then on every file operation and
 * every API call returns -ENODEV (poll: EPOLLHUP | EPOLLERR) without
 * touching the device; the BAR is unmapped only after that.
 *
 * Locking (outer to inner)
 * ------------------------
 *   f->view_sem  rw_semaphore per file: its views (CXLT_IOC_VIEW) stay while
 *             a harvest uses them (read); opened and closed under write.
 *   klog->lock  the kernel dirty log (cxltrack_dirtylog.c).
 *   view_lock mutex. A harvest command with CLEAR of a bitmap and its
 *             fan-out to the views (cxltrack_view.c), view list changes.
 *   life      rw_semaphore. Read: any path that touches the device on behalf
 *             of a caller (ioctls, sysfs, API), through cxlt_life_get(),
 *             which also waits while the device is suspended. Write:
 *             remove() and PCI reset (reset_prepare .. reset_done, one
 *             task), so nothing touches the device while it is reset or
 *             after it is gone; suspend and resume take it each for their
 *             own work only (they may run in different tasks).
 *   cmd_lock  mutex. The command engine (CMD_ARG*, CMD_OP, CMD_STATUS,
 *             CMD_RESULT*, RESULT window), slot windows, slot ownership,
 *             CTRL/SLOT_TIMEOUT shadows, raw mode ownership.
 *   evq_mutex mutex. Draining the event queue (IRQ thread, raw-mode exit,
 *             reset_done) and the notifier chain is called under it.
 *   evq_lock  spinlock. The list of open files, their event rings and
 *             event scope; the IRQ thread reads slot owners under it to
 *             route events (merge and release clear an owner under it,
 *             after draining the queue).
 *   view_list_lock  spinlock, innermost: the view lists, for the loss
 *             marking, which runs under cmd_lock or with life held.
 *   f->read_lock  mutex per file, taken alone: one reader copies out at a
 *             time, so a record leaves the ring only after it was copied.
 * The IRQ thread takes only evq_mutex and evq_lock; remove() frees the IRQ
 * (waiting for the thread) before the BAR goes away.
 */
#ifndef CXLTRACK_CORE_H
#define CXLTRACK_CORE_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/io.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/pci.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/atomic.h>

#include "cxltrack_regs.h"
#include <linux/cxltrack.h>

#define CXLT_NAME		"cxltrack"
#define CXLT_MASK_BYTES		512	/* SLOT_QUERY byte-valid mask */
#define CXLT_FILE_RING		256	/* event records per open file */

extern unsigned int cxlt_cmd_timeout_ms;
extern bool cxlt_allow_raw;
extern unsigned int cxlt_tenant_slots;
extern bool cxlt_harvest_dma;
extern bool cxlt_harvest_list;
extern unsigned int cxlt_dma_min_bytes;

struct cxlt_caps {
	u32 hw_version;
	u64 pages;
	u32 page_shift;
	u32 num_slots;
	u32 hot_bits;
	u32 evq_depth_log2;
	u32 chunk_shift;
	u32 num_chunks;
	u32 disk_bits;
	u32 block_bits;
	u32 tick_ns;
};

struct cxlt_counters {
	atomic64_t commands;
	atomic64_t cmd_errors;
	atomic64_t cmd_timeouts;
	atomic64_t irqs;
	atomic64_t events;
	atomic64_t events_lost;
	atomic64_t dma_commands;
	/* dirty/accessed DMA harvests by list and by bitmap (cxlt_do_harvest()) */
	atomic64_t harvests_list;
	atomic64_t harvests_bitmap;
};

struct cxlt_file;
struct cxlt_klog;

/*
 * A consumer's view of the dirty or accessed bits (cxltrack_view.c): the
 * bits other consumers' CLEAR harvests took from the device over its range.
 */
#define CXLT_VIEW_KINDS		2	/* CXLT_HARVEST_DIRTY, _ACCESSED */

struct cxlt_pview {
	struct list_head node;		/* cd->views[kind] */
	u64 start, count;		/* pages, harvest-aligned */
	unsigned long *pending;		/* bit i: page start + i */
	bool kernel;			/* the kernel dirty log's shadow */
};

static_assert(BITS_PER_LONG == 64 && CXLT_HARVEST_ALIGN_PAGES % 64 == 0);

struct cxlt_chunk_bind {
	struct cxlt_file *file;
	u32 owner;
	/* the file that released the chunk, for its SCRUB_DONE; under evq_lock */
	struct cxlt_file *scrub_for;
	u32 scrub_owner;
	/*
	 * The file closed while another held raw mode, so the chunk could
	 * not be released then; owner is kept and cxlt_chunks_recheck()
	 * releases it when raw mode ends. Under cmd_lock.
	 */
	bool orphan;
};

struct cxlt_dev {
	struct device dev;
	struct cdev cdev;
	int id;
	struct list_head node;		/* cxlt_devices, under cxlt_devices_lock */

	struct pci_dev *pdev;		/* function 1; NULL once removed */
	struct pci_dev *memdev;		/* function 0, referenced */
	bool barwin;			/* memdev is a PCIe BAR window, enabled by us */
	void __iomem *regs;
	int irq;
	struct cxlt_caps caps;
	/*
	 * DMA harvests (spec 5.3): a coherent buffer the device writes
	 * results into, used only under cmd_lock (one command at a time);
	 * dma_buf NULL: RESULT window only. Device-managed: freed after
	 * remove(), when no command can run any more.
	 */
	void *dma_buf;
	dma_addr_t dma_addr;
	size_t dma_len;
	u32 dma_bits;			/* CAP_DMA.ADDR_BITS, 0 without DMA */
	bool dma_list;			/* CAP_DMA.LIST: list harvests (spec 5.4) */
	/*
	 * Per kind (dirty, accessed): the share of non-zero 64-page words the
	 * last DMA harvest saw, in 1/CXLT_DENSITY_ONE; 0 before the first.
	 * It picks list or bitmap for the next one (cxlt_do_harvest()).
	 * Lockless: READ_ONCE/WRITE_ONCE of one u32, a hint that only ever
	 * changes the cost of a harvest, never its bits.
	 */
	u32 harvest_density[CXLT_VIEW_KINDS];
#define CXLT_DENSITY_ONE	65536U		/* every word non-zero */
	/*
	 * CHUNK_COPY (spec 7.1): a coherent buffer of one chunk the device
	 * copies into, NULL without CAP_DMA.COPY (or memory). copy_lock
	 * keeps it from the command until its bytes are copied out (taken
	 * before cmd_lock, never held by a page fault's path). Device-managed.
	 */
	void *copy_buf;
	dma_addr_t copy_addr;
	struct mutex copy_lock;		/* copy_buf, see above */

	struct rw_semaphore life;	/* see "Locking" above */
	bool dead;

	struct mutex cmd_lock;		/* command engine, slots, raw mode */
	u16 cmd_seq;			/* CMD_STATUS.SEQ of the last command */
	bool cmd_seq_valid;
	u32 ctrl;			/* CTRL shadow */
	u32 slot_timeout;		/* SLOT_TIMEOUT shadow */
	struct cxlt_file *slot_owner[CXLT_SLOT_COUNT];
	u64 slot_tag[CXLT_SLOT_COUNT];	/* tag of an owned slot */
	/*
	 * Slots whose file closed while another file held raw mode: released
	 * by cxlt_slots_recheck() when raw mode ends (slot_tag kept).
	 */
	DECLARE_BITMAP(slot_orphan, CXLT_SLOT_COUNT);
	struct cxlt_file *raw_owner;
	/*
	 * Chunks that may hold data of an earlier owner although the device
	 * calls them FREE: every chunk after a reset (which frees chunks
	 * without scrubbing them) and at probe. Under cmd_lock.
	 */
	unsigned long *unscrubbed;
	/*
	 * The file each chunk is bound to (CXLT_CHUNK_ASSIGN without
	 * CXLT_CHUNK_F_DETACH) and its owner then, or { NULL, 0 }. Under
	 * cmd_lock; see cxltrack_chunk.c.
	 */
	struct cxlt_chunk_bind *chunk_bind;
	bool suspended;			/* suspend to resume, under life; see cxlt_life_get() */

	struct mutex evq_mutex;		/* draining the event queue */
	u32 evt_seq;			/* SEQ of the last popped event */
	bool evt_seq_valid;
	u32 evt_flags;			/* CXLT_EVENT_F_* for the next record */
	struct blocking_notifier_head notifier;

	spinlock_t evq_lock;		/* files and their event rings */
	struct list_head files;
	wait_queue_head_t wq;

	struct cxlt_counters cnt;
	struct cxlt_klog *klog;		/* kernel dirty log, cxltrack_dirtylog.c */

	/* consumer views, cxltrack_view.c */
	struct mutex view_lock;		/* CLEAR harvests of bitmaps + fan-out */
	spinlock_t view_list_lock;	/* the lists, also for cxlt_bits_lost() */
	struct list_head views[CXLT_VIEW_KINDS];
	unsigned int nr_views;
};

struct cxlt_file {
	struct cxlt_dev *cd;
	struct list_head node;		/* cd->files */
	struct mutex read_lock;		/* see "Locking" above */
	bool all_events;		/* CXLT_EVENTS_ALL, under evq_lock */
	/* event ring, under cd->evq_lock */
	struct cxlt_event ring[CXLT_FILE_RING];
	unsigned int head, tail;	/* free-running */
	bool overrun;
	/* views (CXLT_IOC_VIEW); view_sem: harvests read, open/close write */
	struct rw_semaphore view_sem;
	struct cxlt_pview *view[CXLT_VIEW_KINDS];
	/* page ranges granted to the file (CXLT_IOC_GRANT), under grant_lock */
	spinlock_t grant_lock;
	unsigned int nr_grants;
	struct { u64 start, count; } grants[CXLT_GRANTS_MAX];
	/*
	 * A reset found chunks bound to this file (it gets a CXLT_EV_RESET
	 * record) and how many of them could not be given back to it. Under
	 * cmd_lock; see cxlt_chunks_reset().
	 */
	bool reset_note;
	u32 reset_lost;
};

struct cxlt_cmd_res {
	u8 code;
	u64 r0, r1;
};

/* cxltrack_dev.c: lifetime, configuration, counters, control, open files */
void cxlt_dev_get(struct cxlt_dev *cd);
void cxlt_dev_put(struct cxlt_dev *cd);
void cxlt_fill_info(struct cxlt_dev *cd, struct cxlt_info *info);
int cxlt_read_stats(struct cxlt_dev *cd, struct cxlt_stats *s);
int cxlt_set_ctrl(struct cxlt_dev *cd, struct cxlt_ctrl *c);
void cxlt_write_ctrl(struct cxlt_dev *cd);
int cxlt_file_open(struct cxlt_dev *cd, struct cxlt_file *f);
void cxlt_file_release(struct cxlt_dev *cd, struct cxlt_file *f);
void cxlt_state_lost(struct cxlt_dev *cd);

/* cxltrack_barwin.c */
bool cxlt_barwin_is(struct pci_dev *mem);
int cxlt_barwin_enable(struct cxlt_dev *cd);
void cxlt_barwin_disable(struct cxlt_dev *cd);

/* cxltrack_cmd.c */
int cxlt_life_get(struct cxlt_dev *cd, bool intr);
int cxlt_enter(struct cxlt_dev *cd, struct cxlt_file *f);
void cxlt_leave(struct cxlt_dev *cd);
int cxlt_cmd(struct cxlt_dev *cd, u8 op, u32 opflags, u64 a0, u64 a1, u64 a2,
	     struct cxlt_cmd_res *res);
void cxlt_read_window(struct cxlt_dev *cd, void *dst, size_t len);
int cxlt_raw(struct cxlt_dev *cd, struct cxlt_file *f, struct cxlt_raw *r);
void cxlt_raw_release(struct cxlt_dev *cd, struct cxlt_file *f);
void cxlt_resync(struct cxlt_dev *cd, bool lost);

/* cxltrack_cache.c: CPU-cache maintenance for user-space callers */
int cxlt_flush_user_page(struct cxlt_dev *cd, u64 uaddr);
void cxlt_writeback_all(struct cxlt_dev *cd);

/* cxltrack_track.c */
int cxlt_harvest_check(struct cxlt_dev *cd, u32 kind, u64 start, u64 count,
		       u32 flags);
int cxlt_do_harvest(struct cxlt_dev *cd, struct cxlt_file *f,
		    struct cxlt_pview *self, u32 kind, u64 start, u64 count,
		    u32 flags, void *kbuf, void __user *ubuf, u64 *nr_set,
		    u64 *done);

/* cxltrack_view.c */
void cxlt_views_init(struct cxlt_dev *cd);
int cxlt_view_open(struct cxlt_dev *cd, struct cxlt_file *f, u32 kind,
		   u64 start, u64 count);
int cxlt_view_close(struct cxlt_dev *cd, struct cxlt_file *f, u32 kind);
void cxlt_views_release_file(struct cxlt_dev *cd, struct cxlt_file *f);
void cxlt_view_add_kernel(struct cxlt_dev *cd, struct cxlt_pview *v);
void cxlt_view_del_kernel(struct cxlt_dev *cd, struct cxlt_pview *v);
void cxlt_views_fanout(struct cxlt_dev *cd, u32 kind, struct cxlt_pview *self,
		       u64 s, u64 n, const __le64 *bits);
u64 cxlt_view_merge(struct cxlt_pview *v, u64 s, u64 n, __le64 *bits,
		    bool take);
void cxlt_bits_lost(struct cxlt_dev *cd);
int cxlt_do_bat(struct cxlt_dev *cd, struct cxlt_file *f, struct cxlt_bat *b,
		const void *kaddr);

/* cxltrack_dirtylog.c */
extern const struct attribute_group cxlt_klog_group;
void cxlt_klog_free(struct cxlt_dev *cd);
void cxlt_klog_lost(struct cxlt_dev *cd);
bool cxlt_dpa_in_system_ram(struct cxlt_dev *cd, u64 dpa, u64 len);
int cxlt_user_addr_page(struct cxlt_dev *cd, u64 uaddr, u64 *page);
bool cxlt_user_maps_page(struct cxlt_dev *cd, u64 uaddr, u64 page);

/* cxltrack_slot.c */
int cxlt_do_slot_alloc(struct cxlt_dev *cd, struct cxlt_file *f, u64 tag,
		       u32 flags, u32 *slot);
int cxlt_do_slot_write(struct cxlt_dev *cd, struct cxlt_file *f, u32 slot,
		       u32 offset, const void *buf, u32 len);
int cxlt_do_slot_merge(struct cxlt_dev *cd, struct cxlt_file *f, u32 slot,
		       u64 page, void *kaddr, u64 *valid);
int cxlt_do_slot_release(struct cxlt_dev *cd, struct cxlt_file *f, u32 slot);
int cxlt_do_slot_query(struct cxlt_dev *cd, struct cxlt_file *f,
		       struct cxlt_slot_query *q, u8 *mask);
void cxlt_slots_release_file(struct cxlt_dev *cd, struct cxlt_file *f);
void cxlt_slots_recheck(struct cxlt_dev *cd);

/* cxltrack_chunk.c */
int cxlt_do_chunk(struct cxlt_dev *cd, struct cxlt_file *f,
		  struct cxlt_chunk *c);
int cxlt_do_chunk_copy(struct cxlt_dev *cd, struct cxlt_file *f, u32 chunk,
		       u32 owner, void __user *dst);
int cxlt_do_chunk_list(struct cxlt_dev *cd, struct cxlt_file *f, u32 owner,
		       u8 *bitmap, u64 *count);
void cxlt_chunks_release_file(struct cxlt_dev *cd, struct cxlt_file *f);
void cxlt_chunks_reset(struct cxlt_dev *cd, bool restore);
void cxlt_chunks_recheck(struct cxlt_dev *cd);

/* cxltrack_evq.c */
int cxlt_irq_setup(struct cxlt_dev *cd);
void cxlt_irq_teardown(struct cxlt_dev *cd);
void cxlt_evq_drain(struct cxlt_dev *cd);
void cxlt_evq_add_file(struct cxlt_dev *cd, struct cxlt_file *f);
void cxlt_evq_del_file(struct cxlt_dev *cd, struct cxlt_file *f);
void cxlt_evq_reset_records(struct cxlt_dev *cd);
void cxlt_evq_scrub_for(struct cxlt_dev *cd, u32 chunk, u32 owner,
			struct cxlt_file *f);
bool cxlt_evq_pending(struct cxlt_dev *cd, struct cxlt_file *f);
int cxlt_evq_peek(struct cxlt_dev *cd, struct cxlt_file *f,
		  struct cxlt_event *out, int max);
void cxlt_evq_consume(struct cxlt_dev *cd, struct cxlt_file *f, int n);
void cxlt_evq_set_scope(struct cxlt_dev *cd, struct cxlt_file *f, bool all);
void cxlt_int_enable(struct cxlt_dev *cd, bool on);

/* The leaves, used only by the PCI binding (cxltrack_main.c). */
extern const struct file_operations cxlt_fops;
extern const struct attribute_group *cxlt_groups[];
void cxlt_sysfs_init(void);

static inline u32 cxlt_rd(struct cxlt_dev *cd, u32 off)
{
	return readl(cd->regs + off);
}

static inline void cxlt_wr(struct cxlt_dev *cd, u32 off, u32 val)
{
	writel(val, cd->regs + off);
}

static inline u64 cxlt_rd64(struct cxlt_dev *cd, u32 lo)
{
	u64 l = cxlt_rd(cd, lo);

	return l | (u64)cxlt_rd(cd, lo + 4) << 32;
}

#endif /* CXLTRACK_CORE_H */
