// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack CPU-cache maintenance for callers in user space (spec section 9).
 *
 * The device sees memory requests, not stores: a line still dirty in a CPU
 * cache is invisible to it. In-kernel callers pass a kernel mapping of the
 * page; a user-space caller passes the address of its own mapping, whose
 * pages are pinned and written back through the kernel's mapping of them
 * (x86 caches are physically tagged: flushing one alias flushes them all).
 * A whole-cache write-back (WBINVD on every CPU) serves the final round of
 * a migration.
 */
#include <linux/highmem.h>
#include <linux/mm.h>
#include <asm/cacheflush.h>
#include <asm/smp.h>

#include "cxltrack_core.h"

/**
 * cxlt_flush_user_page() - write back and invalidate one device page's lines
 * @cd: tracker
 * @uaddr: the calling process's mapping of the page, aligned to the device
 *         page size
 *
 * Return: 0, -EINVAL (misaligned) or -EFAULT (not mapped).
 */
int cxlt_flush_user_page(struct cxlt_dev *cd, u64 uaddr)
{
	size_t psize = 1UL << cd->caps.page_shift;
	struct page *pages[16];
	size_t off = 0;

	if (uaddr % psize)
		return -EINVAL;
	while (off < psize) {
		int n = min_t(size_t, ARRAY_SIZE(pages), (psize - off) >> PAGE_SHIFT);
		int got, i;

		got = pin_user_pages_fast(uaddr + off, n, 0, pages);
		if (got != n) {
			if (got > 0)
				unpin_user_pages(pages, got);
			return -EFAULT;
		}
		for (i = 0; i < n; i++) {
			void *k = kmap_local_page(pages[i]);

			clflush_cache_range(k, PAGE_SIZE);
			kunmap_local(k);
		}
		unpin_user_pages(pages, n);
		off += (size_t)n << PAGE_SHIFT;
	}
	return 0;
}

/* Write back every CPU cache (the final round of a migration). */
void cxlt_writeback_all(struct cxlt_dev *cd)
{
	wbinvd_on_all_cpus();
}
