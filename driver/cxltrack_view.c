// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack consumer views: one consumer's CLEAR harvests never take another
 * consumer's dirty or accessed bits (driver/README.md "Consumer views").
 *
 * The device has one dirty and one accessed bitmap, and a harvest with
 * CLEAR empties what it reads. With several consumers (a migration's dirty
 * log, a memory manager per VM, a monitor) the first to clear would take the
 * bits from the others. A view is a consumer's pending bitmap over a page
 * range: every harvest with CLEAR of that kind, by any file, the kernel API
 * or the kernel dirty log, ORs the bits it took from the device into every
 * other view that covers them, in the same step as the device command (under
 * @view_lock, so no harvest of a view can fall between the two), and a
 * harvest through a view reports the device's bits plus its own pending ones,
 * taking the pending ones when it clears. So each view reports every page
 * written (accessed) since its own previous harvest, whoever cleared the
 * device meanwhile, which is why a CLEAR through a view needs no capability.
 *
 * The kernel dirty log's shadow bitmap (cxltrack_dirtylog.c) is a view too:
 * user space's CLEAR harvests feed it rather than failing while it is open.
 * Its users take its bits one by one (test-and-clear), so its bits are only
 * ever ORed in, atomically, never taken here.
 *
 * When the device's bits are lost or unknown (a reset, a TRACK_EN change,
 * raw mode, state lost over suspend), every page of every user view becomes
 * pending: never report a page clean that may have been written.
 *
 * Locking: @view_lock (mutex) is taken before cmd_lock and serialises CLEAR
 * harvests of the bitmaps with their fan-out and with view list changes;
 * @view_list_lock (spinlock) also guards the lists, for cxlt_views_lost(),
 * which runs under cmd_lock or with @life held for writing.
 */
#include <linux/bitmap.h>
#include <linux/list.h>
#include <linux/slab.h>

#include "cxltrack_core.h"

void cxlt_views_init(struct cxlt_dev *cd)
{
	unsigned int k;

	mutex_init(&cd->view_lock);
	spin_lock_init(&cd->view_list_lock);
	for (k = 0; k < CXLT_VIEW_KINDS; k++)
		INIT_LIST_HEAD(&cd->views[k]);
}

/* Overlap of a command's pages [s, s + n) with view @v, in 64-page words. */
static bool cxlt_view_overlap(const struct cxlt_pview *v, u64 s, u64 n,
			      u64 *lo, u64 *hi)
{
	*lo = max(s, v->start);
	*hi = min(s + n, v->start + v->count);
	return *lo < *hi;
}

/*
 * OR a command's result into every view of @kind but @self. Caller holds
 * @view_lock. @bits: bit i = page @s + i (little-endian 64-bit words, as
 * the device's RESULT window); @s and @n are multiples of 64.
 */
void cxlt_views_fanout(struct cxlt_dev *cd, u32 kind, struct cxlt_pview *self,
		       u64 s, u64 n, const __le64 *bits)
{
	struct cxlt_pview *v;
	u64 lo, hi, p;

	lockdep_assert_held(&cd->view_lock);
	list_for_each_entry(v, &cd->views[kind], node) {
		if (v == self || !cxlt_view_overlap(v, s, n, &lo, &hi))
			continue;
		for (p = lo; p < hi; p += 64) {
			u64 w = le64_to_cpu(bits[(p - s) / 64]);
			unsigned long *word = &v->pending[(p - v->start) / 64];

			if (w)
				atomic_long_or(w, (atomic_long_t *)word);
		}
	}
}

/*
 * Add the view's pending bits for [@s, @s + @n) to @bits, and with @take
 * remove them from the view (a CLEAR harvest through it; caller holds
 * @view_lock). Returns how many bits it added that @bits did not have.
 */
u64 cxlt_view_merge(struct cxlt_pview *v, u64 s, u64 n, __le64 *bits, bool take)
{
	u64 lo, hi, p, added = 0;

	if (!cxlt_view_overlap(v, s, n, &lo, &hi))
		return 0;
	for (p = lo; p < hi; p += 64) {
		atomic_long_t *word = (atomic_long_t *)&v->pending[(p - v->start) / 64];
		u64 w = take ? atomic_long_xchg(word, 0) : atomic_long_read(word);
		u64 had = le64_to_cpu(bits[(p - s) / 64]);

		added += hweight64(w & ~had);
		bits[(p - s) / 64] = cpu_to_le64(had | w);
	}
	return added;
}

static void cxlt_view_link(struct cxlt_dev *cd, u32 kind, struct cxlt_pview *v)
{
	lockdep_assert_held(&cd->view_lock);
	spin_lock(&cd->view_list_lock);
	list_add_tail(&v->node, &cd->views[kind]);
	cd->nr_views++;
	spin_unlock(&cd->view_list_lock);
}

static void cxlt_view_unlink(struct cxlt_dev *cd, struct cxlt_pview *v)
{
	lockdep_assert_held(&cd->view_lock);
	spin_lock(&cd->view_list_lock);
	list_del(&v->node);
	cd->nr_views--;
	spin_unlock(&cd->view_list_lock);
}

/**
 * cxlt_view_open() - open a file's view of one kind of bits over a range
 * @cd: tracker
 * @f: the file
 * @kind: CXLT_HARVEST_DIRTY or CXLT_HARVEST_ACCESSED
 * @start: first page, harvest-aligned
 * @count: pages, harvest-aligned, > 0
 *
 * Return: 0; -EINVAL (kind, alignment), -ERANGE, -EBUSY (the file has a
 * view of @kind), -ENOSPC (CXLT_VIEWS_MAX views on the tracker), -ENOMEM,
 * -EINTR.
 */
int cxlt_view_open(struct cxlt_dev *cd, struct cxlt_file *f, u32 kind,
		   u64 start, u64 count)
{
	struct cxlt_pview *v;
	int ret;

	if (kind >= CXLT_VIEW_KINDS)
		return -EINVAL;
	ret = cxlt_harvest_check(cd, kind, start, count, 0);
	if (ret)
		return ret;
	v = kzalloc(sizeof(*v), GFP_KERNEL);
	if (!v)
		return -ENOMEM;
	v->start = start;
	v->count = count;
	v->pending = kvcalloc(BITS_TO_LONGS(count), sizeof(unsigned long), GFP_KERNEL);
	if (!v->pending) {
		kfree(v);
		return -ENOMEM;
	}
	if (mutex_lock_interruptible(&cd->view_lock)) {
		ret = -EINTR;
		goto free;
	}
	if (f->view[kind])
		ret = -EBUSY;
	else if (cd->nr_views >= CXLT_VIEWS_MAX)
		ret = -ENOSPC;
	if (!ret) {
		cxlt_view_link(cd, kind, v);
		f->view[kind] = v;
	}
	mutex_unlock(&cd->view_lock);
	if (!ret)
		return 0;
free:
	kvfree(v->pending);
	kfree(v);
	return ret;
}

/* Close the file's view of @kind: -ENOENT if it has none. Not interruptible. */
int cxlt_view_close(struct cxlt_dev *cd, struct cxlt_file *f, u32 kind)
{
	struct cxlt_pview *v;

	if (kind >= CXLT_VIEW_KINDS)
		return -EINVAL;
	mutex_lock(&cd->view_lock);
	v = f->view[kind];
	if (v) {
		cxlt_view_unlink(cd, v);
		f->view[kind] = NULL;
	}
	mutex_unlock(&cd->view_lock);
	if (!v)
		return -ENOENT;
	kvfree(v->pending);
	kfree(v);
	return 0;
}

void cxlt_views_release_file(struct cxlt_dev *cd, struct cxlt_file *f)
{
	u32 k;

	for (k = 0; k < CXLT_VIEW_KINDS; k++)
		if (f->view[k])
			cxlt_view_close(cd, f, k);
}

/* The kernel dirty log's shadow joins (leaves) the dirty views. */
void cxlt_view_add_kernel(struct cxlt_dev *cd, struct cxlt_pview *v)
{
	mutex_lock(&cd->view_lock);
	v->kernel = true;
	cxlt_view_link(cd, CXLT_HARVEST_DIRTY, v);
	mutex_unlock(&cd->view_lock);
}

void cxlt_view_del_kernel(struct cxlt_dev *cd, struct cxlt_pview *v)
{
	mutex_lock(&cd->view_lock);
	cxlt_view_unlink(cd, v);
	mutex_unlock(&cd->view_lock);
}

/*
 * Every page of every user view is pending from now on. The kernel dirty
 * log learns of a loss through cxlt_klog_lost() (-ESTALE) instead.
 */
static void cxlt_views_lost(struct cxlt_dev *cd)
{
	struct cxlt_pview *v;
	u64 i;
	u32 k;

	spin_lock(&cd->view_list_lock);
	for (k = 0; k < CXLT_VIEW_KINDS; k++)
		list_for_each_entry(v, &cd->views[k], node) {
			if (v->kernel)
				continue;
			for (i = 0; i < BITS_TO_LONGS(v->count); i++)
				atomic_long_set((atomic_long_t *)&v->pending[i], ~0UL);
		}
	spin_unlock(&cd->view_list_lock);
}

/**
 * cxlt_bits_lost() - the device's dirty and accessed bits are about to be
 * lost, or writes to go unrecorded (PCI reset, TRACK_EN switched either way,
 * raw mode entered or left, state lost over suspend)
 * @cd: tracker
 *
 * Called before the device is touched, and where writes may go unrecorded
 * for a while (tracking off, raw mode) again when that ends, so that no
 * consumer's harvest in between reports a page clean that was written:
 * the kernel dirty logs see a loss at their next sync, every page of every
 * view is pending.
 */
void cxlt_bits_lost(struct cxlt_dev *cd)
{
	cxlt_klog_lost(cd);
	cxlt_views_lost(cd);
}
