// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack kernel dirty log: the tracker's dirty bits for in-kernel users
 * that log writes by host page frame (KVM's dirty log of guest memory on
 * the device).
 *
 * Host physical address map. The tracker indexes device physical addresses
 * (DPA); the CPU uses host physical addresses (HPA). User space that created
 * the CXL region tells the driver where it is mapped (sysfs
 * dirty_log/hpa_map: "HPA SIZE DPA"), which gives pfn -> (tracker, DPA page)
 * for every page of the region (spec section 10: 1-way regions only).
 *
 * Shadow bitmap. A harvest with CLEAR cannot be undone, and one tracker's
 * pages are shared by several users (VMs, memory slots, the host). While a
 * kernel dirty log is open, harvested bits go into a per-tracker shadow
 * bitmap, one bit per DPA page, and each user takes (test-and-clears) only
 * the bits of the pages it maps. A bit is never dropped: it stays in the
 * shadow until a user of that page takes it. The shadow is one of the
 * tracker's dirty views (cxltrack_view.c), so user space's harvests with
 * CLEAR add what they take to it instead of taking it from the logs. A PCI
 * reset (which clears the device's tables), a change
 * of TRACK_EN and raw mode (writes unrecorded, bits cleared behind the
 * driver's back) are reported to every open log as a loss.
 */
#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/ioport.h>
#include <linux/kstrtox.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pfn.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <asm/smp.h>

#include "cxltrack_core.h"

#define CXLT_KLOG_MAX_MAPS	8
#define CXLT_KLOG_DEVS		64	/* tracker ids looked at by cxlt_dirty_log_open() */
#define CXLT_COOKIE_IDX_SHIFT	48
#define CXLT_COOKIE_PAGE_MASK	GENMASK_ULL(CXLT_COOKIE_IDX_SHIFT - 1, 0)

struct cxlt_hpa_map {
	u64 hpa;
	u64 size;
	u64 dpa;
};

/* Per-tracker state, cd->klog; created on first use, freed with the device. */
struct cxlt_klog {
	struct mutex lock;		/* maps, users, shadow, harvests */
	struct cxlt_hpa_map maps[CXLT_KLOG_MAX_MAPS];
	unsigned int nr_maps;
	unsigned int users;		/* open log ranges on this tracker */
	unsigned long *shadow;		/* caps.pages bits while users > 0 */
	struct cxlt_pview view;		/* the shadow as a dirty view */
	atomic64_t losses;		/* resets and failed harvests */
	atomic64_t syncs;		/* harvests done for logs */
	atomic64_t pages;		/* pages those harvests covered */
	atomic64_t dirty;		/* dirty bits they returned */
};

struct cxlt_log_range {
	struct cxlt_dev *cd;		/* referenced */
	unsigned long pfn;
	unsigned long npages;
	u64 dpa_page;
	atomic64_t lo, hi;		/* DPA pages looked up; hi < lo: none */
	u64 losses;			/* klog->losses at the last sync */
};

struct cxlt_dirty_log {
	unsigned int nr;
	struct cxlt_log_range r[];
};

static DEFINE_MUTEX(cxlt_klog_create_lock);

static struct cxlt_klog *cxlt_klog_get(struct cxlt_dev *cd)
{
	struct cxlt_klog *kl;

	mutex_lock(&cxlt_klog_create_lock);
	kl = cd->klog;
	if (!kl) {
		kl = kzalloc(sizeof(*kl), GFP_KERNEL);
		if (kl) {
			mutex_init(&kl->lock);
			cd->klog = kl;
		}
	}
	mutex_unlock(&cxlt_klog_create_lock);
	return kl;
}

/* Called from the device's release: nothing references it any more. */
void cxlt_klog_free(struct cxlt_dev *cd)
{
	if (!cd->klog)
		return;
	WARN_ON(cd->klog->users);
	kvfree(cd->klog->shadow);
	mutex_destroy(&cd->klog->lock);
	kfree(cd->klog);
	cd->klog = NULL;
}

/*
 * The device's dirty bits are about to be cleared behind the logs' back, or
 * writes go unrecorded (PCI reset, TRACK_EN switched, raw mode entered or
 * left): every open log sees a loss at its next sync. Called before the
 * device is touched, so no sync can miss it.
 */
void cxlt_klog_lost(struct cxlt_dev *cd)
{
	if (cd->klog)
		atomic64_inc(&cd->klog->losses);
}

struct cxlt_window_arg {
	u64 start, end;
	bool inside;
};

static int cxlt_window_cb(struct resource *res, void *arg)
{
	struct cxlt_window_arg *w = arg;

	if (res->start <= w->start && res->end >= w->end)
		w->inside = true;
	return 0;
}

static int cxlt_map_check(struct cxlt_dev *cd, const struct cxlt_hpa_map *m)
{
	u64 align = max_t(u64, PAGE_SIZE, 1ULL << cd->caps.page_shift);
	u64 dev_bytes = cd->caps.pages << cd->caps.page_shift;
	struct cxlt_window_arg w = { .start = m->hpa, .end = m->hpa + m->size - 1 };

	if (!m->size || !IS_ALIGNED(m->hpa | m->size | m->dpa, align))
		return -EINVAL;
	if (m->hpa + m->size < m->hpa || m->dpa >= dev_bytes ||
	    m->size > dev_bytes - m->dpa)
		return -ERANGE;
	walk_iomem_res_desc(IORES_DESC_CXL, IORESOURCE_MEM, w.start, w.end,
			    &w, cxlt_window_cb);
	return w.inside ? 0 : -ERANGE;
}

static bool cxlt_maps_overlap(const struct cxlt_klog *kl, const struct cxlt_hpa_map *m)
{
	unsigned int i;

	for (i = 0; i < kl->nr_maps; i++) {
		const struct cxlt_hpa_map *o = &kl->maps[i];

		if (m->hpa < o->hpa + o->size && o->hpa < m->hpa + m->size)
			return true;
		if (m->dpa < o->dpa + o->size && o->dpa < m->dpa + m->size)
			return true;
	}
	return false;
}

/* Another tracker already maps part of this HPA range? */
static bool cxlt_hpa_taken(struct cxlt_dev *self, const struct cxlt_hpa_map *m)
{
	bool taken = false;
	int id;

	for (id = 0; id < CXLT_KLOG_DEVS && !taken; id++) {
		struct cxlt_dev *cd = cxlt_get_by_id(id);
		struct cxlt_hpa_map hpa_only = { .hpa = m->hpa, .size = m->size,
						 .dpa = U64_MAX / 2 };

		if (!cd)
			continue;
		if (cd != self && cd->klog) {
			mutex_lock(&cd->klog->lock);
			taken = cxlt_maps_overlap(cd->klog, &hpa_only);
			mutex_unlock(&cd->klog->lock);
		}
		cxlt_put(cd);
	}
	return taken;
}

static int cxlt_map_add(struct cxlt_dev *cd, const struct cxlt_hpa_map *m)
{
	struct cxlt_klog *kl;
	int ret;

	ret = cxlt_map_check(cd, m);
	if (ret)
		return ret;
	if (cxlt_hpa_taken(cd, m))
		return -EEXIST;
	kl = cxlt_klog_get(cd);
	if (!kl)
		return -ENOMEM;
	mutex_lock(&kl->lock);
	if (kl->users)
		ret = -EBUSY;
	else if (cxlt_maps_overlap(kl, m))
		ret = -EEXIST;
	else if (kl->nr_maps == CXLT_KLOG_MAX_MAPS)
		ret = -ENOSPC;
	else
		kl->maps[kl->nr_maps++] = *m;
	mutex_unlock(&kl->lock);
	return ret;
}

static int cxlt_map_clear(struct cxlt_dev *cd)
{
	struct cxlt_klog *kl = cd->klog;
	int ret = 0;

	if (!kl)
		return 0;
	mutex_lock(&kl->lock);
	if (kl->users)
		ret = -EBUSY;
	else
		kl->nr_maps = 0;
	mutex_unlock(&kl->lock);
	return ret;
}

/**
 * cxlt_dpa_in_system_ram() - is a device range onlined as System RAM?
 * @cd: tracker
 * @dpa: start of the range (device physical address)
 * @len: its length in bytes
 *
 * Looks the range up in the HPA maps (dirty_log/hpa_map) and asks the
 * resource tree whether any of its host addresses is System RAM (a region
 * onlined by kmem). A range no map covers is not known to be: the driver
 * learns where the region is mapped only from that map.
 *
 * Return: true if some byte of the range is System RAM.
 */
bool cxlt_dpa_in_system_ram(struct cxlt_dev *cd, u64 dpa, u64 len)
{
	struct cxlt_klog *kl = READ_ONCE(cd->klog);
	bool ram = false;
	unsigned int i;

	if (!kl)
		return false;
	mutex_lock(&kl->lock);
	for (i = 0; i < kl->nr_maps && !ram; i++) {
		const struct cxlt_hpa_map *m = &kl->maps[i];
		u64 lo = max(dpa, m->dpa), hi = min(dpa + len, m->dpa + m->size);

		if (lo < hi)
			ram = region_intersects(m->hpa + (lo - m->dpa), hi - lo,
						IORESOURCE_SYSTEM_RAM,
						IORES_DESC_NONE) != REGION_DISJOINT;
	}
	mutex_unlock(&kl->lock);
	return ram;
}

/* The page of @cd at host address @hpa, from its map; false if no map covers it. */
static bool cxlt_hpa_page(struct cxlt_dev *cd, u64 hpa, u64 *page)
{
	struct cxlt_klog *kl = READ_ONCE(cd->klog);
	bool found = false;
	unsigned int i;

	if (!kl)
		return false;
	mutex_lock(&kl->lock);
	for (i = 0; i < kl->nr_maps && !found; i++) {
		const struct cxlt_hpa_map *m = &kl->maps[i];

		found = hpa >= m->hpa && hpa - m->hpa < m->size;
		if (found)
			*page = (hpa - m->hpa + m->dpa) >> cd->caps.page_shift;
	}
	mutex_unlock(&kl->lock);
	return found;
}

struct cxlt_dev *cxlt_get_by_pfn(unsigned long pfn, u64 *page)
{
	int id;

	for (id = 0; id < CXLT_KLOG_DEVS; id++) {
		struct cxlt_dev *cd = cxlt_get_by_id(id);

		if (!cd)
			continue;
		if (cxlt_hpa_page(cd, PFN_PHYS(pfn), page))
			return cd;
		cxlt_put(cd);
	}
	return NULL;
}
EXPORT_SYMBOL_GPL(cxlt_get_by_pfn);

/*
 * Could the caller write this very page through its mapping at @uaddr? A
 * writable shared mapping, or a writable private one whose page is its own
 * anonymous copy (a write would not copy it first). Asked of the mapping,
 * not by pinning for write: a page its owner write-protected with
 * userfaultfd (a memory manager evicting it) is still the owner's to write,
 * and a write pin would fault into the owner's own handler, which may be
 * the thread waiting for this very call.
 */
static bool cxlt_user_may_write(u64 uaddr, struct page *pg)
{
	struct vm_area_struct *vma;
	bool ok;

	mmap_read_lock(current->mm);
	vma = vma_lookup(current->mm, uaddr);
	ok = vma && (vma->vm_flags & VM_WRITE) &&
	     ((vma->vm_flags & VM_SHARED) ||
	      (PageAnon(pg) && PageAnonExclusive(pg)));
	mmap_read_unlock(current->mm);
	return ok;
}

/* The host page frame behind one page of the calling process (writable if @write). */
static int cxlt_user_pfn(u64 uaddr, bool write, unsigned long *pfn)
{
	struct page *pg;
	int ret = 0;

	if (pin_user_pages_fast(uaddr, 1, 0, &pg) != 1)
		return -EFAULT;
	if (write && !cxlt_user_may_write(uaddr, pg))
		ret = -EFAULT;
	*pfn = page_to_pfn(pg);
	unpin_user_page(pg);
	return ret;
}

/**
 * cxlt_user_addr_page() - the device page a user address maps
 * @cd: tracker
 * @uaddr: address in the calling process, aligned to the tracking page size
 * @page: the device page, on success
 *
 * Where the page is now; a mapping the caller changes later is its own.
 *
 * Return: 0, -EINVAL (misaligned), -EFAULT (not mapped) or -ENXIO (not a page
 * of @cd as far as its host-physical map tells).
 */
int cxlt_user_addr_page(struct cxlt_dev *cd, u64 uaddr, u64 *page)
{
	unsigned long pfn;
	int ret;

	if (uaddr % (1ULL << cd->caps.page_shift))
		return -EINVAL;
	ret = cxlt_user_pfn(uaddr, false, &pfn);
	if (ret)
		return ret;
	return cxlt_hpa_page(cd, PFN_PHYS(pfn), page) ? 0 : -ENXIO;
}

/**
 * cxlt_user_maps_page() - does the caller map a whole device page writable?
 * @cd: tracker
 * @uaddr: the caller's address of the page, aligned to the tracking page size
 * @page: the device page
 *
 * Every host page of the tracking page must be mapped writable at @uaddr, in
 * order, and be memory of @cd at @page: then the caller could write every byte
 * of that page itself.
 *
 * Return: true if so.
 */
bool cxlt_user_maps_page(struct cxlt_dev *cd, u64 uaddr, u64 page)
{
	unsigned long n = 1UL << (cd->caps.page_shift - PAGE_SHIFT), i, pfn, pfn0 = 0;
	u64 at;

	if (uaddr % (1ULL << cd->caps.page_shift))
		return false;
	for (i = 0; i < n; i++) {
		if (cxlt_user_pfn(uaddr + (i << PAGE_SHIFT), true, &pfn) ||
		    !cxlt_hpa_page(cd, PFN_PHYS(pfn), &at) || at != page)
			return false;
		if (!i)
			pfn0 = pfn;
		else if (pfn != pfn0 + i)
			return false;
	}
	return true;
}

/* Add @cd's maps to @log, which has room for CXLT_KLOG_MAX_MAPS more. */
static void cxlt_log_take(struct cxlt_dev *cd, struct cxlt_dirty_log *log)
{
	struct cxlt_klog *kl = cd->klog;
	unsigned int i;

	/* Cookies are PAGE_SIZE pages: a larger tracking page is shared by several. */
	if (!kl || cd->caps.page_shift != PAGE_SHIFT ||
	    !(READ_ONCE(cd->ctrl) & CXLT_CTRL_TRACK_EN_MASK) || READ_ONCE(cd->dead))
		return;
	mutex_lock(&kl->lock);
	if (kl->nr_maps && !kl->shadow) {
		kl->shadow = kvcalloc(BITS_TO_LONGS(cd->caps.pages),
				      sizeof(unsigned long), GFP_KERNEL);
		if (kl->shadow) {
			kl->view.start = 0;
			kl->view.count = cd->caps.pages;
			kl->view.pending = kl->shadow;
			cxlt_view_add_kernel(cd, &kl->view);
		}
	}
	for (i = 0; kl->shadow && i < kl->nr_maps; i++) {
		struct cxlt_log_range *r = &log->r[log->nr++];

		cxlt_dev_get(cd);
		r->cd = cd;
		r->pfn = PHYS_PFN(kl->maps[i].hpa);
		r->npages = kl->maps[i].size >> PAGE_SHIFT;
		r->dpa_page = kl->maps[i].dpa >> PAGE_SHIFT;
		atomic64_set(&r->lo, S64_MAX);
		atomic64_set(&r->hi, -1);
		r->losses = atomic64_read(&kl->losses);
		kl->users++;
	}
	mutex_unlock(&kl->lock);
}

struct cxlt_dirty_log *cxlt_dirty_log_open(void)
{
	struct cxlt_dev *devs[CXLT_KLOG_DEVS];
	struct cxlt_dirty_log *log;
	int id, nr = 0;

	for (id = 0; id < CXLT_KLOG_DEVS; id++) {
		devs[nr] = cxlt_get_by_id(id);
		if (devs[nr])
			nr++;
	}
	log = kzalloc(struct_size(log, r, nr * CXLT_KLOG_MAX_MAPS), GFP_KERNEL);
	for (id = 0; id < nr; id++) {
		if (log)
			cxlt_log_take(devs[id], log);
		cxlt_put(devs[id]);
	}
	if (!log)
		return ERR_PTR(-ENOMEM);
	if (!log->nr) {
		kfree(log);
		return NULL;
	}
	return log;
}
EXPORT_SYMBOL_GPL(cxlt_dirty_log_open);

void cxlt_dirty_log_close(struct cxlt_dirty_log *log)
{
	unsigned int i;

	if (IS_ERR_OR_NULL(log))
		return;
	for (i = 0; i < log->nr; i++) {
		struct cxlt_dev *cd = log->r[i].cd;
		struct cxlt_klog *kl = cd->klog;

		mutex_lock(&kl->lock);
		if (!--kl->users) {
			cxlt_view_del_kernel(cd, &kl->view);
			kvfree(kl->shadow);
			kl->shadow = NULL;
		}
		mutex_unlock(&kl->lock);
		cxlt_dev_put(cd);
	}
	kfree(log);
}
EXPORT_SYMBOL_GPL(cxlt_dirty_log_close);

/* DPA page numbers are below 2^46, so they compare the same signed. */
static void cxlt_atomic64_min(atomic64_t *v, s64 x)
{
	s64 old = atomic64_read(v);

	while (old > x && !atomic64_try_cmpxchg(v, &old, x))
		;
}

static void cxlt_atomic64_max(atomic64_t *v, s64 x)
{
	s64 old = atomic64_read(v);

	while (old < x && !atomic64_try_cmpxchg(v, &old, x))
		;
}

bool cxlt_dirty_log_pfn(struct cxlt_dirty_log *log, unsigned long pfn,
			u64 *cookie)
{
	unsigned int i;

	for (i = 0; i < log->nr; i++) {
		struct cxlt_log_range *r = &log->r[i];
		u64 page;

		if (pfn < r->pfn || pfn - r->pfn >= r->npages)
			continue;
		page = r->dpa_page + (pfn - r->pfn);
		if (atomic64_read(&r->lo) > (s64)page)
			cxlt_atomic64_min(&r->lo, page);
		if (atomic64_read(&r->hi) < (s64)page)
			cxlt_atomic64_max(&r->hi, page);
		*cookie = (u64)i << CXLT_COOKIE_IDX_SHIFT | page;
		return true;
	}
	return false;
}
EXPORT_SYMBOL_GPL(cxlt_dirty_log_pfn);

/* Harvest one range's looked-up pages into the shadow. Caller holds kl->lock. */
static int cxlt_log_sync_range(struct cxlt_log_range *r)
{
	struct cxlt_dev *cd = r->cd;
	struct cxlt_klog *kl = cd->klog;
	s64 lo = atomic64_read(&r->lo), hi = atomic64_read(&r->hi);
	u64 start, end, nr_set = 0, done, i;
	__le64 *buf;
	int ret;

	if (hi < lo)
		return 0;
	start = round_down(lo, CXLT_HARVEST_ALIGN_PAGES);
	end = min_t(u64, round_up(hi + 1, CXLT_HARVEST_ALIGN_PAGES), cd->caps.pages);
	buf = kvzalloc((end - start) / 8, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	/* Every other view gets these bits; the shadow gets them below. */
	ret = cxlt_do_harvest(cd, NULL, &kl->view, CXLT_HARVEST_DIRTY, start,
			      end - start, CXLT_HARVEST_F_CLEAR, buf, NULL,
			      &nr_set, &done);
	/* Also after an error: what was harvested before it is in buf. */
	for (i = 0; i < (end - start) / 64; i++) {
		u64 w = le64_to_cpu(buf[i]);

		if (w)
			atomic_long_or(w, (atomic_long_t *)&kl->shadow[start / 64 + i]);
	}
	kvfree(buf);
	atomic64_inc(&kl->syncs);
	atomic64_add(end - start, &kl->pages);
	atomic64_add(nr_set, &kl->dirty);
	if (ret)	/* bits cleared on the device may not have reached buf */
		atomic64_inc(&kl->losses);
	return ret;
}

int cxlt_dirty_log_sync(struct cxlt_dirty_log *log, u32 flags)
{
	unsigned int i;
	int ret = 0;

	if (flags & ~CXLT_KHARVEST_WBINVD)
		return -EINVAL;
	if (flags & CXLT_KHARVEST_WBINVD)
		wbinvd_on_all_cpus();
	for (i = 0; i < log->nr; i++) {
		struct cxlt_log_range *r = &log->r[i];
		struct cxlt_klog *kl = r->cd->klog;
		u64 losses;
		int err;

		mutex_lock(&kl->lock);
		err = cxlt_log_sync_range(r);
		losses = atomic64_read(&kl->losses);
		if (!err && (losses != r->losses ||
			     !(READ_ONCE(r->cd->ctrl) & CXLT_CTRL_TRACK_EN_MASK)))
			err = -ESTALE;
		r->losses = losses;
		mutex_unlock(&kl->lock);
		if (err && !ret)
			ret = err;
	}
	return ret;
}
EXPORT_SYMBOL_GPL(cxlt_dirty_log_sync);

static unsigned long *cxlt_cookie_bit(struct cxlt_dirty_log *log, u64 cookie,
				      u64 *page)
{
	u64 i = cookie >> CXLT_COOKIE_IDX_SHIFT;

	if (WARN_ON_ONCE(i >= log->nr))
		return NULL;
	*page = cookie & CXLT_COOKIE_PAGE_MASK;
	return log->r[i].cd->klog->shadow;
}

bool cxlt_dirty_log_test_and_clear(struct cxlt_dirty_log *log, u64 cookie)
{
	u64 page;
	unsigned long *shadow = cxlt_cookie_bit(log, cookie, &page);

	return shadow && test_and_clear_bit(page, shadow);
}
EXPORT_SYMBOL_GPL(cxlt_dirty_log_test_and_clear);

void cxlt_dirty_log_set(struct cxlt_dirty_log *log, u64 cookie)
{
	u64 page;
	unsigned long *shadow = cxlt_cookie_bit(log, cookie, &page);

	if (shadow)
		set_bit(page, shadow);
}
EXPORT_SYMBOL_GPL(cxlt_dirty_log_set);

/* sysfs: /sys/class/cxltrack/cxltrackN/dirty_log/ */
#define to_cxlt(d) container_of(d, struct cxlt_dev, dev)

static ssize_t hpa_map_show(struct device *d, struct device_attribute *a,
			    char *buf)
{
	struct cxlt_klog *kl = to_cxlt(d)->klog;
	unsigned int i;
	int len = 0;

	if (!kl)
		return 0;
	mutex_lock(&kl->lock);
	for (i = 0; i < kl->nr_maps; i++)
		len += sysfs_emit_at(buf, len, "0x%llx 0x%llx 0x%llx\n", kl->maps[i].hpa,
				     kl->maps[i].size, kl->maps[i].dpa);
	mutex_unlock(&kl->lock);
	return len;
}

/* "HPA SIZE DPA" adds a map; "clear" removes them all. */
static ssize_t hpa_map_store(struct device *d, struct device_attribute *a,
			     const char *buf, size_t len)
{
	struct cxlt_dev *cd = to_cxlt(d);
	struct cxlt_hpa_map m;
	char tail;
	int ret;

	if (sysfs_streq(buf, "clear"))
		ret = cxlt_map_clear(cd);
	else if (sscanf(buf, "%llx %llx %llx %c", &m.hpa, &m.size, &m.dpa, &tail) == 3)
		ret = cxlt_map_add(cd, &m);
	else
		ret = -EINVAL;
	return ret ? ret : len;
}
static DEVICE_ATTR_RW(hpa_map);

static ssize_t cxlt_klog_show(struct device *d, char *buf, size_t off)
{
	struct cxlt_klog *kl = to_cxlt(d)->klog;

	return sysfs_emit(buf, "%lld\n", kl ? atomic64_read((atomic64_t *)((u8 *)kl + off)) : 0);
}

static ssize_t losses_show(struct device *d, struct device_attribute *a, char *buf)
{
	return cxlt_klog_show(d, buf, offsetof(struct cxlt_klog, losses));
}
static DEVICE_ATTR_RO(losses);

static ssize_t syncs_show(struct device *d, struct device_attribute *a, char *buf)
{
	return cxlt_klog_show(d, buf, offsetof(struct cxlt_klog, syncs));
}
static DEVICE_ATTR_RO(syncs);

static ssize_t pages_show(struct device *d, struct device_attribute *a, char *buf)
{
	return cxlt_klog_show(d, buf, offsetof(struct cxlt_klog, pages));
}
static DEVICE_ATTR_RO(pages);

static ssize_t dirty_show(struct device *d, struct device_attribute *a, char *buf)
{
	return cxlt_klog_show(d, buf, offsetof(struct cxlt_klog, dirty));
}
static DEVICE_ATTR_RO(dirty);

static ssize_t users_show(struct device *d, struct device_attribute *a,
			  char *buf)
{
	struct cxlt_klog *kl = to_cxlt(d)->klog;

	return sysfs_emit(buf, "%u\n", kl ? READ_ONCE(kl->users) : 0);
}
static DEVICE_ATTR_RO(users);

static struct attribute *cxlt_klog_attrs[] = {
	&dev_attr_hpa_map.attr,
	&dev_attr_users.attr,
	&dev_attr_losses.attr,
	&dev_attr_syncs.attr,
	&dev_attr_pages.attr,
	&dev_attr_dirty.attr,
	NULL,
};

const struct attribute_group cxlt_klog_group = {
	.name = "dirty_log",
	.attrs = cxlt_klog_attrs,
};
