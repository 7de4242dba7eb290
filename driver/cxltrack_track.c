// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack tracking tables: dirty/accessed bitmaps, hotness counters
 * (spec sections 3, 5.1) and the block-association table (5.2).
 */
#include <linux/bitops.h>
#include <linux/highmem.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/unaligned.h>
#include <linux/vmalloc.h>
#include <asm/cacheflush.h>
#include <asm/smp.h>

#include "cxltrack_core.h"

/*
 * Set bits of a bitmap and, in @words, its non-zero 64-page words: one pass
 * for the RESULT0 check and the density (cxlt_use_list()). @buf is a bounce
 * buffer (kmalloc()/vmalloc(): u64-aligned); a tail of under 8 bytes counts
 * bits only.
 */
static u64 cxlt_popcount(const u8 *buf, size_t len, u64 *words)
{
	const u64 *w = (const u64 *)buf;
	u64 n = 0, nz = 0;
	size_t i;

	for (i = 0; i < len / 8; i++) {
		n += hweight64(w[i]);
		nz += !!w[i];
	}
	for (i = len & ~(size_t)7; i < len; i++)
		n += hweight8(buf[i]);
	*words = nz;
	return n;
}

static u64 cxlt_nonzero(const u8 *buf, size_t len, u8 max, bool *bad)
{
	u64 n = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (buf[i] > max)
			*bad = true;
		n += !!buf[i];
	}
	return n;
}

/**
 * cxlt_harvest_check() - validate a harvest request before anything is done
 * @cd: tracker
 * @kind: CXLT_HARVEST_*
 * @start: first page
 * @count: pages
 * @flags: CXLT_HARVEST_F_*
 *
 * Return: 0, -EINVAL or -ERANGE.
 */
int cxlt_harvest_check(struct cxlt_dev *cd, u32 kind, u64 start, u64 count,
		       u32 flags)
{
	if (kind > CXLT_HARVEST_HOTNESS || flags & ~CXLT_HARVEST_F_ALL)
		return -EINVAL;
	if ((flags & CXLT_HARVEST_F_CLEAR) && (flags & CXLT_HARVEST_F_DECAY))
		return -EINVAL;
	if (kind != CXLT_HARVEST_HOTNESS && flags & CXLT_HARVEST_F_DECAY)
		return -EINVAL;
	if (start % CXLT_HARVEST_ALIGN_PAGES || count % CXLT_HARVEST_ALIGN_PAGES)
		return -EINVAL;
	if (!count || start >= cd->caps.pages || count > cd->caps.pages - start)
		return -ERANGE;
	return 0;
}

/*
 * The user pages under one command's output, pinned for writing before the
 * command runs: a command with CLEAR must never have its output lost to a
 * fault (munmap, mprotect by another thread) after the device cleared it.
 * A RESULT-window command's output spans at most two pages; a DMA command's
 * up to the driver's DMA buffer.
 */
struct cxlt_upin {
	struct page **pages;
	struct page *two[2];
	int n;
	size_t off;
};

static_assert(CXLT_HARVEST_MAX_BITMAP_PAGES / 8 <= PAGE_SIZE &&
	      CXLT_HARVEST_MAX_HOTNESS_PAGES <= PAGE_SIZE);

static void cxlt_upin_free(struct cxlt_upin *u)
{
	if (u->pages != u->two)
		kvfree(u->pages);
}

static int cxlt_upin_get(struct cxlt_upin *u, void __user *p, size_t len)
{
	unsigned long addr = (unsigned long)p;
	unsigned long first = addr & PAGE_MASK;
	int got = 0, ret;

	u->n = (((addr + len - 1) & PAGE_MASK) - first) / PAGE_SIZE + 1;
	u->off = addr - first;
	u->pages = u->n <= ARRAY_SIZE(u->two) ? u->two :
		   kvmalloc_array(u->n, sizeof(*u->pages), GFP_KERNEL);
	if (!u->pages)
		return -ENOMEM;
	/* The fast path may pin fewer pages than asked without a fault. */
	while (got < u->n) {
		ret = pin_user_pages_fast(first + (unsigned long)got * PAGE_SIZE,
					  u->n - got, FOLL_WRITE, u->pages + got);
		if (ret <= 0)
			break;
		got += ret;
	}
	if (got == u->n)
		return 0;
	if (got > 0)
		unpin_user_pages(u->pages, got);
	cxlt_upin_free(u);
	return -EFAULT;
}

/* Copy @len bytes of @src to the pinned pages and unpin them. */
static void cxlt_upin_put(struct cxlt_upin *u, const u8 *src, size_t len)
{
	size_t off = u->off, done = 0;
	int i;

	for (i = 0; i < u->n && done < len; i++) {
		size_t part = min_t(size_t, len - done, PAGE_SIZE - off);

		memcpy_to_page(u->pages[i], off, src + done, part);
		done += part;
		off = 0;
	}
	unpin_user_pages_dirty_lock(u->pages, u->n, true);
	cxlt_upin_free(u);
}

static void cxlt_upin_drop(struct cxlt_upin *u)
{
	unpin_user_pages(u->pages, u->n);
	cxlt_upin_free(u);
}

/*
 * Harvest by DMA (spec 5.3) when the device can and the output is big
 * enough for one DMA command to beat reading it through the RESULT window
 * with uncached 8-byte loads; small ranges keep the MMIO path.
 */
static bool cxlt_use_dma(struct cxlt_dev *cd, u32 flags, u64 out_bytes)
{
	return cd->dma_buf && READ_ONCE(cxlt_harvest_dma) &&
	       !(flags & CXLT_HARVEST_F_MMIO) &&
	       out_bytes >= READ_ONCE(cxlt_dma_min_bytes);
}

/*
 * List or bitmap (spec 5.4) for a dirty or accessed DMA harvest: chosen by
 * the density the previous DMA harvest of the kind saw, the share of its
 * 64-page words that were non-zero, on the bet that rounds look alike. By
 * bytes alone a list (16 bytes per non-zero word) beats the bitmap (8 bytes
 * per word) below 1/2. The device pays more than the bytes, though: a dense
 * list took 185 us against the bitmap's 82 us at 64 GiB (12 % above the
 * bitmap's byte rate for twice the bytes), a list steps every 512-page row
 * with a change (1 % of the pages spread evenly: 47 % of the words non-zero,
 * 145 us), and a list command covers half the pages of a bitmap one per DMA
 * buffer. So the list is taken below 1/4: there it moves at most half the
 * bitmap's bytes, margin for those costs. Between 1/4 and 1/2 a clustered
 * round might still gain a little by list, a spread one loses; the bitmap's
 * cost is fixed. A harvest with no history (density 0) takes the list; every
 * DMA harvest, list or bitmap, measures the density again, so the choice
 * follows the rounds one round late.
 */
#define CXLT_DENSITY_LIST_BELOW	(CXLT_DENSITY_ONE / 4)

static bool cxlt_use_list(struct cxlt_dev *cd, u32 kind)
{
	return cd->dma_list && READ_ONCE(cxlt_harvest_list) &&
	       READ_ONCE(cd->harvest_density[kind]) < CXLT_DENSITY_LIST_BELOW;
}

/*
 * A list harvest's records (spec 5.4) in the DMA buffer back into the bitmap
 * of the command's @n pages from @start: each record must name a word of the
 * range, in ascending order, with a bit set, and there must be as many as
 * the device counted (@records, RESULT1). Anything else is a device failure
 * (-EIO): the caller then reports a CLEAR's range set, never clean.
 */
static int cxlt_list_to_bitmap(struct cxlt_dev *cd, u64 start, u64 n,
			       u64 records, u8 *bitmap)
{
	const __le64 *rec = cd->dma_buf;
	u64 i, prev = 0;

	if (records > n / 64)
		return -EIO;
	memset(bitmap, 0, n / 8);
	for (i = 0; i < records; i++) {
		u64 page = le64_to_cpu(rec[2 * i]);
		u64 bits = le64_to_cpu(rec[2 * i + 1]);

		if (page % 64 || page < start || page - start >= n || !bits ||
		    (i && page <= prev))
			return -EIO;
		put_unaligned_le64(bits, bitmap + (page - start) / 8);
		prev = page;
	}
	return 0;
}

/**
 * cxlt_do_harvest() - harvest a page range, split into device commands
 * @cd: tracker
 * @f: calling file or NULL
 * @self: the caller's view of @kind (cxltrack_view.c), or NULL: a dirty or
 *        accessed command with CLEAR gives what it took from the device to
 *        every other view; a user view's pending bits are added to the
 *        result (and taken, with CLEAR); the kernel dirty log's are not.
 * @kind: CXLT_HARVEST_*
 * @start: first page
 * @count: pages
 * @flags: CXLT_HARVEST_F_* (validated here)
 * @kbuf: kernel destination, or NULL if @ubuf is used
 * @ubuf: user destination; each command's part is pinned before it runs
 * @nr_set: out: set bits / non-zero counters in the pages harvested
 * @done: out: pages harvested from @start on (their result is in the
 *        destination)
 *
 * Large ranges take DMA commands (cxlt_use_dma()) of up to the DMA buffer:
 * the device writes the result into cd->dma_buf, which is copied out under
 * cmd_lock; others read the RESULT window. A dirty or accessed DMA harvest
 * on a device with CAP_DMA.LIST (module parameter harvest_list=1) asks for
 * the list of non-zero words (spec 5.4), which the device writes in
 * proportion to what changed, and expands it into the bitmap (the buffer
 * holds the worst case: 16 bytes per 64 pages, so such a command covers half
 * the pages of a bitmap one), when the last DMA harvest of @kind found fewer
 * than 1/4 of its words non-zero (or there was none); otherwise it fetches
 * the bitmap (cxlt_use_list()). Each such harvest records the density it
 * saw (list: the record count, RESULT1; bitmap: the non-zero words) for the
 * next, and counts itself in stats harvests_list or harvests_bitmap.
 * Either way the result passes through a bounce buffer, so the checks and
 * the view fan-out are the same.
 * Each command's output is checked against the device's own count
 * (RESULT0) and, for hotness, against 2^hot_bits - 1 before it is trusted.
 * A dirty/accessed command with CLEAR that fails with -EIO may have cleared
 * its pages: they are reported set (and counted in @done), never clean.
 *
 * Return: 0 when every page was harvested; for a user destination also 0
 * when it stopped after some (@done < @count) on a signal, raw mode,
 * removal or a fault in @ubuf; -EIO whenever the device failed; otherwise
 * the errno.
 */
int cxlt_do_harvest(struct cxlt_dev *cd, struct cxlt_file *f,
		    struct cxlt_pview *self, u32 kind, u64 start, u64 count,
		    u32 flags, void *kbuf, void __user *ubuf, u64 *nr_set,
		    u64 *done)
{
	bool hot = kind == CXLT_HARVEST_HOTNESS;
	bool clear = flags & CXLT_HARVEST_F_CLEAR;
	/* The command and its fan-out are one step for every other view. */
	bool fanout = clear && !hot;
	bool merge = self && !self->kernel && !hot;
	bool dma = cxlt_use_dma(cd, flags, hot ? count : count / 8);
	bool list;
	u64 max = hot ? CXLT_HARVEST_MAX_HOTNESS_PAGES : CXLT_HARVEST_MAX_BITMAP_PAGES;
	size_t bounce_len = CXLT_RESULT_SIZE;
	u8 op = kind == CXLT_HARVEST_DIRTY ? CXLT_OP_HARVEST_DIRTY :
		kind == CXLT_HARVEST_ACCESSED ? CXLT_OP_HARVEST_ACCESSED :
		CXLT_OP_HARVEST_HOTNESS;
	u8 hot_max = (1U << cd->caps.hot_bits) - 1;
	u32 opflags = 0;
	u64 total = 0, words = 0, words_set = 0;
	u8 *bounce;
	int ret;

	*nr_set = 0;
	*done = 0;
	ret = cxlt_harvest_check(cd, kind, start, count, flags);
	if (ret)
		return ret;
	list = dma && !hot && cxlt_use_list(cd, kind);
	if (clear)
		opflags |= CXLT_CMD_OP_CLEAR_MASK;
	if (flags & CXLT_HARVEST_F_DECAY)
		opflags |= CXLT_CMD_OP_DECAY_MASK;
	if (dma) {
		opflags |= CXLT_CMD_OP_DMA_MASK;
		/* dma_len is a multiple of PAGE_SIZE: max stays 64-page aligned */
		max = hot ? cd->dma_len : (u64)cd->dma_len * 8;
		bounce_len = min_t(u64, cd->dma_len, hot ? count : count / 8);
	}
	if (list) {
		opflags |= CXLT_CMD_OP_LIST_MASK;
		max = (u64)cd->dma_len / CXLT_DMA_LIST_RECORD_BYTES * 64;
		bounce_len = min_t(u64, max, count) / 8;
	}

	/*
	 * Not kvmalloc(): for a DMA command's hundreds of KiB its kmalloc()
	 * attempt may compact memory on every call (a fragmented guest: ms).
	 */
	bounce = bounce_len > PAGE_SIZE ? vmalloc(bounce_len) :
		 kmalloc(bounce_len, GFP_KERNEL);
	if (!bounce)
		return -ENOMEM;
	if (dma && !hot)
		atomic64_inc(list ? &cd->cnt.harvests_list : &cd->cnt.harvests_bitmap);
	if (flags & CXLT_HARVEST_F_WRITEBACK)
		cxlt_writeback_all(cd);

	while (*done < count) {
		u64 n = min(count - *done, max);
		size_t len = hot ? n : n / 8;
		size_t out_off = hot ? *done : *done / 8;
		struct cxlt_cmd_res res;
		struct cxlt_upin pin;
		bool bad = false;
		u64 got, nz = 0;

		if (ubuf) {
			ret = cxlt_upin_get(&pin, (u8 __user *)ubuf + out_off, len);
			if (ret)
				break;
		}
		if (fanout && mutex_lock_interruptible(&cd->view_lock)) {
			if (ubuf)
				cxlt_upin_drop(&pin);
			ret = -EINTR;
			break;
		}
		ret = cxlt_enter(cd, f);
		if (ret) {
			if (fanout)
				mutex_unlock(&cd->view_lock);
			if (ubuf)
				cxlt_upin_drop(&pin);
			break;
		}
		/*
		 * A DMA command completes after its writes (spec 5.3) and the
		 * readl() of CMD_STATUS that saw it done is ordered before the
		 * loads from the buffer; the next command may reuse the buffer,
		 * so it is copied before cmd_lock goes.
		 */
		ret = cxlt_cmd(cd, op, opflags, start + *done, n,
			       dma ? cd->dma_addr : 0, &res);
		if (!ret && list)
			ret = cxlt_list_to_bitmap(cd, start + *done, n, res.r1,
						  bounce);
		else if (!ret && dma)
			memcpy(bounce, cd->dma_buf, len);
		else if (!ret)
			cxlt_read_window(cd, bounce, len);
		cxlt_leave(cd);

		if (!ret) {
			got = hot ? cxlt_nonzero(bounce, len, hot_max, &bad) :
				    cxlt_popcount(bounce, len, &nz);
			if (bad || got != res.r0) {
				dev_err_ratelimited(&cd->dev,
						    "harvest %u @%llu+%llu: device says %llu set, window has %llu%s\n",
						    kind, start + *done, n, res.r0, got,
						    bad ? " (counter too large)" : "");
				ret = -EIO;
			} else if (dma && !hot) {
				/* the device's words, before any view's bits */
				words += n / 64;
				words_set += list ? res.r1 : nz;
			}
		}
		if (ret == -EIO && clear && !hot) {
			/* Unknown state after a CLEAR: report every page set. */
			memset(bounce, 0xff, len);
			got = n;
		} else if (ret) {
			if (fanout)
				mutex_unlock(&cd->view_lock);
			if (ubuf)
				cxlt_upin_drop(&pin);
			break;
		}
		if (fanout)
			cxlt_views_fanout(cd, kind, self, start + *done, n,
					  (const __le64 *)bounce);
		if (merge)
			got += cxlt_view_merge(self, start + *done, n,
					       (__le64 *)bounce, clear);
		if (fanout)
			mutex_unlock(&cd->view_lock);
		total += got;
		if (ubuf)
			cxlt_upin_put(&pin, bounce, len);
		else
			memcpy((u8 *)kbuf + out_off, bounce, len);
		*done += n;
		if (ret)
			break;
	}
	kvfree(bounce);
	/*
	 * Lockless: a concurrent harvest of the same kind may store its own
	 * density first or last; either is one some harvest saw, one aligned
	 * u32 store, and it only picks list or bitmap, which give the same bits
	 * (both checked against RESULT0 above). words_set <= words: a list has
	 * at most n / 64 records (cxlt_list_to_bitmap()).
	 */
	if (words)
		WRITE_ONCE(cd->harvest_density[kind],
			   div64_u64(words_set * CXLT_DENSITY_ONE, words));
	*nr_set = total;
	/*
	 * User space: progress made and no device failure is a short result,
	 * not an error. In-kernel callers get the errno (and @done).
	 */
	if (ubuf && *done && ret != -EIO)
		ret = 0;
	return ret;
}

/**
 * cxlt_do_bat() - one block-association command
 * @cd: tracker
 * @f: calling file or NULL
 * @b: request; results written back
 * @kaddr: for SET and DISCARD from the kernel API: the page's mapping whose
 *         lines are written back before the command (spec section 9), or NULL
 *
 * Return: 0 or a negative errno.
 */
int cxlt_do_bat(struct cxlt_dev *cd, struct cxlt_file *f, struct cxlt_bat *b,
		const void *kaddr)
{
	static const u8 ops[] = {
		[CXLT_BAT_SET] = CXLT_OP_BAT_SET,
		[CXLT_BAT_GET] = CXLT_OP_BAT_GET,
		[CXLT_BAT_CLEAR] = CXLT_OP_BAT_CLEAR,
		[CXLT_BAT_DISCARD] = CXLT_OP_BAT_DISCARD,
	};
	struct cxlt_cmd_res res;
	int ret;

	if (b->op > CXLT_BAT_DISCARD || b->flags & ~CXLT_BAT_F_ADDR || b->reserved ||
	    (b->flags & CXLT_BAT_F_ADDR) != !!b->addr)
		return -EINVAL;
	if (b->flags & CXLT_BAT_F_ADDR && b->op != CXLT_BAT_SET && b->op != CXLT_BAT_DISCARD)
		return -EINVAL;
	if (b->page >= cd->caps.pages)
		return -ERANGE;
	if (b->op == CXLT_BAT_SET &&
	    (b->block >> cd->caps.block_bits || (u64)b->disk >> cd->caps.disk_bits))
		return -ERANGE;

	/* Rule 2 (ii) / rule 3: the page's stores must have reached the device. */
	if (kaddr && (b->op == CXLT_BAT_SET || b->op == CXLT_BAT_DISCARD))
		clflush_cache_range((void *)kaddr, 1U << cd->caps.page_shift);
	if (b->flags & CXLT_BAT_F_ADDR) {
		ret = cxlt_flush_user_page(cd, b->addr);
		if (ret)
			return ret;
	}

	ret = cxlt_enter(cd, f);
	if (ret)
		return ret;
	ret = cxlt_cmd(cd, ops[b->op], 0, b->page,
		       b->op == CXLT_BAT_SET ? b->block : 0,
		       b->op == CXLT_BAT_SET ? b->disk : 0, &res);
	cxlt_leave(cd);
	if (ret)
		return ret;
	if (b->op == CXLT_BAT_GET || b->op == CXLT_BAT_DISCARD) {
		u64 disk = (res.r1 & CXLT_LAYOUT_BAT_RESULT1_DISK_MASK) >>
			   CXLT_LAYOUT_BAT_RESULT1_DISK_SHIFT;
		bool valid = res.r1 & CXLT_LAYOUT_BAT_RESULT1_VALID_MASK;

		if (res.r0 >> cd->caps.block_bits || disk >> cd->caps.disk_bits ||
		    (!valid && (res.r0 || res.r1))) {
			dev_err_ratelimited(&cd->dev,
					    "BAT page %llu: impossible answer %#llx %#llx\n",
					    b->page, res.r0, res.r1);
			return -EIO;
		}
		b->valid = valid;
		b->block = valid ? res.r0 : 0;
		b->disk = valid ? disk : 0;
	}
	return 0;
}

int cxlt_harvest(struct cxlt_dev *cd, u32 kind, u64 start, u64 count,
		 void *out, u32 flags, u64 *nr_set)
{
	u64 n, done;
	int ret;

	if (flags & CXLT_KHARVEST_WBINVD)
		wbinvd_on_all_cpus();
	ret = cxlt_do_harvest(cd, NULL, NULL, kind, start, count,
			      flags & ~CXLT_KHARVEST_WBINVD, out, NULL, &n, &done);
	if (nr_set)
		*nr_set = n;
	return ret;
}
EXPORT_SYMBOL_GPL(cxlt_harvest);

int cxlt_bat_set(struct cxlt_dev *cd, u64 page, u64 block, u32 disk,
		 const void *kaddr)
{
	struct cxlt_bat b = { .op = CXLT_BAT_SET, .page = page,
			      .block = block, .disk = disk };

	return cxlt_do_bat(cd, NULL, &b, kaddr);
}
EXPORT_SYMBOL_GPL(cxlt_bat_set);

int cxlt_bat_get(struct cxlt_dev *cd, u64 page, u64 *block, u32 *disk)
{
	struct cxlt_bat b = { .op = CXLT_BAT_GET, .page = page };
	int ret = cxlt_do_bat(cd, NULL, &b, NULL);

	if (ret)
		return ret;
	*block = b.block;
	*disk = b.disk;
	return b.valid;
}
EXPORT_SYMBOL_GPL(cxlt_bat_get);

int cxlt_bat_discard_if_clean(struct cxlt_dev *cd, u64 page, const void *kaddr,
			      u64 *block, u32 *disk)
{
	struct cxlt_bat b = { .op = CXLT_BAT_DISCARD, .page = page };
	int ret = cxlt_do_bat(cd, NULL, &b, kaddr);

	if (ret)
		return ret;
	*block = b.block;
	*disk = b.disk;
	return b.valid;
}
EXPORT_SYMBOL_GPL(cxlt_bat_discard_if_clean);
