// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack_apitest: exercises the exported in-kernel API of cxltrack.ko
 * (driver/include/linux/cxltrack.h) from another module, the way a KVM or
 * swap-tier user would, on one page of the tracked memory mapped write-back
 * with memremap(). Loading it runs the checks; it prints
 * "cxltrack_apitest: PASS <n> checks" and stays loaded, or fails the load
 * with -EINVAL after printing what went wrong.
 *
 *   insmod cxltrack_apitest.ko page=<DPA page> hpa=<host physical address of it>
 *   insmod cxltrack_apitest.ko watch_reset=1
 *
 * With watch_reset=1 it runs no checks: it stays registered for tracker 0's
 * notifications until unloaded and counts CXLT_NOTIFY_RESET calls in the
 * read-only parameter "resets" (a function reset must reach in-kernel users).
 *
 * TCG has no cache model, so the cache maintenance the API performs is
 * exercised here (it runs) but cannot be shown necessary.
 */
#include <linux/completion.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/slab.h>
#include <linux/cxltrack.h>

static ulong page;
module_param(page, ulong, 0444);
MODULE_PARM_DESC(page, "DPA page index to use");
static ulong hpa;
module_param(hpa, ulong, 0444);
MODULE_PARM_DESC(hpa, "host physical address of that page");
static bool watch_reset;
module_param(watch_reset, bool, 0444);
MODULE_PARM_DESC(watch_reset, "only count reset notifications until unloaded");
static atomic_t resets = ATOMIC_INIT(0);
module_param_named(resets, resets.counter, int, 0444);
MODULE_PARM_DESC(resets, "CXLT_NOTIFY_RESET calls seen (watch_reset)");
static struct cxlt_dev *watched;

static DECLARE_COMPLETION(merge_done);
static DECLARE_COMPLETION(scrub_done);
static int want_slot = -1;
static u32 want_chunk;

static int apitest_event(struct notifier_block *nb, unsigned long type, void *data)
{
	const struct cxlt_event *ev = data;

	if (type == CXLT_EV_MERGE_DONE && ev->index == want_slot && ev->arg == page)
		complete(&merge_done);
	if (type == CXLT_EV_SCRUB_DONE && ev->index == want_chunk && ev->arg == 77)
		complete(&scrub_done);
	return NOTIFY_OK;
}

static struct notifier_block apitest_nb = { .notifier_call = apitest_event };

static int apitest_reset(struct notifier_block *nb, unsigned long type, void *data)
{
	if (type == CXLT_NOTIFY_RESET && !data)
		atomic_inc(&resets);
	return NOTIFY_OK;
}

static struct notifier_block reset_nb = { .notifier_call = apitest_reset };

static unsigned int checks;

static __printf(2, 3) bool apitest_check(bool ok, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	checks++;
	if (ok)
		return true;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_err("cxltrack_apitest: FAIL: %pV\n", &vaf);
	va_end(args);
	return false;
}

#define CHECK(cond, fmt, ...) apitest_check(!!(cond), fmt, ##__VA_ARGS__)

static int __init apitest_init(void)
{
	struct cxlt_info info;
	struct cxlt_dev *cd;
	u8 *kaddr, *pattern = NULL, *bitmap = NULL;
	u64 block, nr, start, valid;
	u32 disk;
	int ret = 0, r, slot, i;

	cd = cxlt_get_by_id(0);
	if (!cd) {
		pr_err("cxltrack_apitest: FAIL: no tracker 0\n");
		return -ENODEV;
	}
	if (watch_reset) {
		ret = cxlt_register_notifier(cd, &reset_nb);
		if (ret) {
			cxlt_put(cd);
			return ret;
		}
		watched = cd;	/* its reference goes at unload */
		pr_info("cxltrack_apitest: watching tracker 0 for resets\n");
		return 0;
	}
	kaddr = memremap(hpa, PAGE_SIZE, MEMREMAP_WB);
	if (!kaddr) {
		cxlt_put(cd);
		pr_err("cxltrack_apitest: FAIL: memremap %#lx\n", hpa);
		return -ENOMEM;
	}
	pattern = kmalloc(PAGE_SIZE, GFP_KERNEL);
	bitmap = kzalloc(64 / 8, GFP_KERNEL);
	r = cxlt_register_notifier(cd, &apitest_nb);
	if (!CHECK(pattern && bitmap && !r, "setup"))
		goto fail;
	if (!CHECK(!cxlt_info(cd, &info), "info"))
		goto fail;
	if (!CHECK(info.page_shift == PAGE_SHIFT && page < info.pages, "page %lu in range", page))
		goto fail;

	/* Discard-if-clean with the page untouched: clean, association returned. */
	if (!CHECK(!cxlt_bat_set(cd, page, 42, 1, NULL), "bat set"))
		goto fail;
	r = cxlt_bat_discard_if_clean(cd, page, kaddr, &block, &disk);
	if (!CHECK(r == 1 && block == 42 && disk == 1, "clean discard: %d %llu %u", r, block, disk))
		goto fail;
	r = cxlt_bat_get(cd, page, &block, &disk);
	if (!CHECK(r == 0, "association survived a discard (%d)", r))
		goto fail;

	/* A store through the write-back mapping: the flush makes it reach the device. */
	if (!CHECK(!cxlt_bat_set(cd, page, 43, 1, NULL), "bat set"))
		goto fail;
	WRITE_ONCE(kaddr[100], kaddr[100] + 1);
	r = cxlt_bat_discard_if_clean(cd, page, kaddr, &block, &disk);
	if (!CHECK(r == 0, "discard after a store said %d", r))
		goto fail;

	/* rule 3: a page filled by the CPU, then associated with kaddr given. */
	memset(kaddr, 0x3c, PAGE_SIZE);
	if (!CHECK(!cxlt_bat_set(cd, page, 44, 1, kaddr), "bat set after fill"))
		goto fail;
	r = cxlt_bat_get(cd, page, &block, &disk);
	if (!CHECK(r == 1 && block == 44, "association after fill: %d", r))
		goto fail;
	if (!CHECK(!cxlt_bat_set(cd, page, 0, 0, NULL), "bat reset"))
		goto fail;
	r = cxlt_bat_discard_if_clean(cd, page, NULL, &block, &disk);
	if (!CHECK(r == 1, "discard %d", r))
		goto fail;

	/* Harvest, final-round style: writers stopped, caches written back. */
	start = round_down(page, 64);
	r = cxlt_harvest(cd, CXLT_HARVEST_DIRTY, start, 64, bitmap, CXLT_HARVEST_F_CLEAR, &nr);
	if (!CHECK(!r, "harvest clear: %d", r))
		goto fail;
	WRITE_ONCE(kaddr[0], 1);
	r = cxlt_harvest(cd, CXLT_HARVEST_DIRTY, start, 64, bitmap,
			 CXLT_HARVEST_F_CLEAR | CXLT_KHARVEST_WBINVD, &nr);
	if (!CHECK(!r, "harvest wbinvd: %d", r))
		goto fail;
	r = test_bit(page - start, (unsigned long *)bitmap);
	if (!CHECK(nr == 1 && r, "harvest after a store: %llu pages", nr))
		goto fail;
	r = cxlt_harvest(cd, CXLT_HARVEST_DIRTY, start + 1, 64, bitmap, 0, &nr);
	if (!CHECK(r == -EINVAL, "misaligned harvest: %d", r))
		goto fail;
	r = cxlt_harvest(cd, CXLT_HARVEST_DIRTY, info.pages, 64, bitmap, 0, &nr);
	if (!CHECK(r == -ERANGE, "harvest beyond the device: %d", r))
		goto fail;

	/* Slot: full page through the UC window, merged into the mapped page. */
	for (i = 0; i < PAGE_SIZE; i++)
		pattern[i] = (u8)(i * 7 + 3);
	slot = cxlt_slot_alloc(cd, 0x5150);
	if (!CHECK(slot >= 0, "slot alloc %d", slot))
		goto fail;
	want_slot = slot;
	if (!CHECK(!cxlt_slot_write(cd, slot, 0, pattern, PAGE_SIZE), "slot write"))
		goto fail;
	r = cxlt_slot_write(cd, slot, 4000, pattern, 200);
	if (!CHECK(r == -EINVAL, "slot write past the end: %d", r))
		goto fail;
	if (!CHECK(!cxlt_slot_merge(cd, slot, page, kaddr, &valid), "slot merge"))
		goto fail;
	if (!CHECK(valid == PAGE_SIZE, "merged %llu bytes", valid))
		goto fail;
	if (!CHECK(!memcmp(kaddr, pattern, PAGE_SIZE), "merged page differs from the slot"))
		goto fail;
	if (!CHECK(wait_for_completion_timeout(&merge_done, 5 * HZ), "no MERGE_DONE notification"))
		goto fail;
	if (!CHECK(cxlt_slot_release(cd, slot) == -ENOENT, "release of a merged slot"))
		goto fail;

	/* Chunk: assign, release, scrubbed notification. */
	want_chunk = info.num_chunks - 1;
	if (!CHECK(!cxlt_chunk_assign(cd, want_chunk, 77), "chunk assign"))
		goto fail;
	if (!CHECK(cxlt_chunk_assign(cd, want_chunk, 78) == -EBUSY, "double assign"))
		goto fail;
	if (!CHECK(cxlt_chunk_release(cd, want_chunk, 78) == -EPERM, "release by another owner"))
		goto fail;
	if (!CHECK(!cxlt_chunk_release(cd, want_chunk, 77), "chunk release"))
		goto fail;
	if (!CHECK(wait_for_completion_timeout(&scrub_done, 10 * HZ), "no SCRUB_DONE notification"))
		goto fail;

	pr_info("cxltrack_apitest: PASS %u checks\n", checks);
	goto out;
fail:
	ret = -EINVAL;
out:
	cxlt_unregister_notifier(cd, &apitest_nb);
	kfree(pattern);
	kfree(bitmap);
	memunmap(kaddr);
	cxlt_put(cd);
	return ret;
}

static void __exit apitest_exit(void)
{
	if (watched) {
		cxlt_unregister_notifier(watched, &reset_nb);
		cxlt_put(watched);
	}
}

module_init(apitest_init);
module_exit(apitest_exit);
MODULE_DESCRIPTION("cxltrack in-kernel API test");
MODULE_LICENSE("GPL");
