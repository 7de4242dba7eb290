/*
 * cxltrack-dirty-log: migration dirty bits of guest RAM on a cxltrack device,
 * taken from the device
 *
 * A host whose CXL memory carries a cxltrack tracker (docs/spec.md: a page
 * tracker that sees every write to the memory) can give a VM RAM backed by
 * that memory (a memory backend on /dev/daxX.Y). While migration logs dirty
 * pages, this object harvests the tracker's dirty bitmap of the backend's
 * pages (with clear, through the host driver's /dev/cxltrackN) into QEMU's
 * migration bitmap, as VFIO device dirty tracking does for device memory.
 * The accelerator then does not log that RAM: KVM keeps it writable, with no
 * write-protect faults; TCG's own dirty marking is left alone (the bitmaps
 * are merged, so a page is sent if either saw it written).
 *
 *   -object memory-backend-file,id=m1,mem-path=/dev/dax0.0,share=on,size=128M
 *   -object cxltrack-dirty-log,id=dl1,memdev=m1,tracker=/dev/cxltrack0,dpa=N
 *
 * dpa is the device physical address of the backend's first byte (the
 * region's DPA plus the backend's offset in the dax device). Without it, the
 * driver tells (CXLT_IOC_ADDR_PAGE); with it, the driver's answer must agree:
 * bits of the wrong pages would lose the guest's writes. The driver is asked
 * at every 2 MiB of the backend, which must map the device linearly.
 * x-dpa-unchecked=on takes dpa as given (a test's negative control). The
 * read-only properties harvests and dirty-pages count the syncs and the pages
 * they reported dirty.
 *
 * zeroed=on: the backend read zero when the device's dirty bits of it were
 * last cleared, and nothing but this object clears them since (the host
 * zeroed it with the device's scrub, `cxltrack zero`, before QEMU started).
 * Then a page the device has not seen written is still zero, and a migration
 * leaves it out of its first round instead of reading it to find it zero
 * (the destination's RAM must read zero there: fresh memory, or device
 * memory zeroed the same way). Pages written later set their device bits and
 * go in a later round as any dirty page. At start the object checks that the
 * device saw no write to the range since its bits were cleared. The
 * read-only property skipped-pages tells how many pages the last migration's
 * first round left out.
 *
 * Never lose a dirty bit: when a harvest fails, every page of the range is
 * reported dirty. A harvest with clear that returned has cleared the device's
 * bits and delivered them here, so nothing is lost between two syncs.
 *
 * Copyright (c) 2026 The cxltrack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/ioctl.h>
#include <linux/cxltrack.h>
#include "qemu/bitmap.h"
#include "qemu/error-report.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "qom/object_interfaces.h"
#include "system/hostmem.h"
#include "system/runstate.h"
#include "exec/address-spaces.h"
#include "exec/memory.h"
#include "exec/ram_addr.h"
#include "migration/misc.h"

#define TYPE_CXLTRACK_DIRTY_LOG "cxltrack-dirty-log"
#define DPA_UNSET UINT64_MAX
#define LINEAR_STEP (2 * MiB)
OBJECT_DECLARE_SIMPLE_TYPE(CxltrackDirtyLog, CXLTRACK_DIRTY_LOG)

struct CxltrackDirtyLog {
    Object parent_obj;

    HostMemoryBackend *memdev;
    char *tracker;
    uint64_t dpa;           /* DPA_UNSET: ask the driver */
    bool dpa_unchecked;
    bool zeroed;

    int fd;
    uint64_t first_page;    /* tracker page of the backend's first byte */
    uint64_t npages;        /* backend size in tracker pages */
    unsigned long *bitmap;  /* one harvest's result, npages bits */
    unsigned long *written; /* zeroed: pages written since zeroed, so far */
    MemoryListener listener;
    bool listening;
    uint64_t harvests;      /* syncs that harvested the backend */
    uint64_t dirty_pages;   /* pages they reported dirty */
    uint64_t skipped_pages; /* zeroed: left out of the last first round */
    NotifierWithReturn precopy;
};

/*
 * Read the dirty bits of the backend's pages into s->bitmap (bit i = page i
 * of the backend) with @flags. A call the driver cut short (a signal) reports
 * how far it got and, with clear, left the rest uncleared: go on from there.
 * Returns the pages read: all of them, or fewer when an ioctl failed (errno).
 */
static uint64_t cxltrack_dirty_log_read(CxltrackDirtyLog *s, uint32_t flags)
{
    uint64_t count = s->npages, done = 0;

    bitmap_zero(s->bitmap, count);
    while (done < count) {
        struct cxlt_harvest h = {
            .kind = CXLT_HARVEST_DIRTY,
            .flags = flags,
            .start = s->first_page + done,
            .count = count - done,
            .buf = (uintptr_t)s->bitmap + done / 8,
            .buf_len = BITS_TO_LONGS(count) * sizeof(unsigned long) - done / 8,
        };

        if (ioctl(s->fd, CXLT_IOC_HARVEST, &h) < 0 || !h.done) {
            break;
        }
        done += h.done;
    }
    return done;
}

/*
 * Harvest with clear. On failure the rest of the range is all dirty: a
 * missed dirty page would be a lost write at the destination. With the vCPUs
 * stopped (the final round), the driver first writes back every CPU cache,
 * so that writes still in a cache reach the device and its bits (spec
 * section 9).
 */
static void cxltrack_dirty_log_harvest(CxltrackDirtyLog *s)
{
    uint32_t flags = CXLT_HARVEST_F_CLEAR;
    uint64_t done;

    if (!runstate_is_running()) {
        flags |= CXLT_HARVEST_F_WRITEBACK;
    }
    done = cxltrack_dirty_log_read(s, flags);
    if (done < s->npages) {
        error_report("cxltrack-dirty-log %s: harvest of pages 0x%" PRIx64
                     "+0x%" PRIx64 " failed (%s): reporting them all dirty",
                     s->tracker, s->first_page + done, s->npages - done,
                     strerror(errno));
        bitmap_set(s->bitmap, done, s->npages - done);
    }
    /* reported dirty, so written as far as a zeroed=on skip is concerned */
    if (s->written) {
        bitmap_or(s->written, s->written, s->bitmap, s->npages);
    }
}

static void cxltrack_dirty_log_sync(MemoryListener *listener,
                                    MemoryRegionSection *section)
{
    CxltrackDirtyLog *s = container_of(listener, CxltrackDirtyLog, listener);
    MemoryRegion *mr = section->mr;

    if (mr != host_memory_backend_get_memory(s->memdev)) {
        return;
    }
    /*
     * The harvest covers the whole backend (its size and DPA are multiples
     * of the harvest alignment) and its bits go to the RAM block as a whole:
     * a section that is only part of it still gets exact bits.
     */
    cxltrack_dirty_log_harvest(s);
    s->harvests++;
    s->dirty_pages += cpu_physical_memory_set_dirty_lebitmap(
        s->bitmap, memory_region_get_ram_addr(mr), s->npages);
}

static bool cxltrack_dirty_log_global_start(MemoryListener *listener,
                                            Error **errp)
{
    CxltrackDirtyLog *s = container_of(listener, CxltrackDirtyLog, listener);

    /*
     * Logging starts: migration's first pass sends every page, so bits
     * collected before now are dropped (the harvest clears them).
     */
    cxltrack_dirty_log_harvest(s);
    return true;
}

/*
 * Migration's setup has made its first sync (this object harvested): leave
 * out of the first round every page the device has not seen written since
 * the backend was zeroed, as free page hinting leaves out a guest's free
 * pages. A page written after that harvest has its device bit set and goes
 * in a later round. Only while migration logs dirty pages (a snapshot in the
 * background harvests nothing later) and without postcopy, whose
 * destination would ask for a left-out page and wait for it.
 */
static int cxltrack_dirty_log_precopy(NotifierWithReturn *n, void *data,
                                      Error **errp)
{
    CxltrackDirtyLog *s = container_of(n, CxltrackDirtyLog, precopy);
    PrecopyNotifyData *pnd = data;
    uint8_t *host;
    uint64_t start, end, skipped = 0;

    if (pnd->reason != PRECOPY_NOTIFY_SETUP ||
        !(global_dirty_tracking & GLOBAL_DIRTY_MIGRATION) ||
        migrate_postcopy_ram() || migration_in_bg_snapshot()) {
        return 0;
    }
    host = memory_region_get_ram_ptr(host_memory_backend_get_memory(s->memdev));
    for (start = find_first_zero_bit(s->written, s->npages); start < s->npages;
         start = find_next_zero_bit(s->written, s->npages, end)) {
        end = find_next_bit(s->written, s->npages, start);
        qemu_guest_free_page_hint(host + start * TARGET_PAGE_SIZE,
                                  (end - start) * TARGET_PAGE_SIZE);
        skipped += end - start;
    }
    s->skipped_pages = skipped;
    return 0;
}

/*
 * zeroed=on holds only if the device saw no write to the backend since its
 * bits were cleared: a harvest without clear must find none.
 */
static bool cxltrack_dirty_log_check_zeroed(CxltrackDirtyLog *s, Error **errp)
{
    uint64_t written;

    if (cxltrack_dirty_log_read(s, 0) < s->npages) {
        error_setg_errno(errp, errno, "cxltrack-dirty-log: zeroed=on: reading"
                         " the dirty bits of pages 0x%" PRIx64 "+0x%" PRIx64,
                         s->first_page, s->npages);
        return false;
    }
    written = bitmap_count_one(s->bitmap, s->npages);
    if (written) {
        error_setg(errp, "cxltrack-dirty-log: zeroed=on, but the device saw"
                   " %" PRIu64 " of the backend's pages written since their"
                   " dirty bits were cleared: zero the range first (cxltrack"
                   " zero 0x%" PRIx64 " 0x%" PRIx64 ")", written,
                   s->first_page, s->npages);
        return false;
    }
    s->written = bitmap_new(s->npages);
    return true;
}

/*
 * Where the backend is on the device, from the driver: the page of its first
 * byte, checked to go on linearly at every LINEAR_STEP and at its last page.
 * Returns false with errp set, or with *page UINT64_MAX and no error when the
 * driver predates CXLT_IOC_ADDR_PAGE.
 */
static bool cxltrack_dirty_log_find(CxltrackDirtyLog *s, MemoryRegion *mr,
                                    uint64_t page_size, uint64_t *page,
                                    Error **errp)
{
    uint8_t *host = memory_region_get_ram_ptr(mr);
    uint64_t last = memory_region_size(mr) - page_size, off;

    *page = UINT64_MAX;
    for (off = 0;; off = MIN(off + LINEAR_STEP, last)) {
        struct cxlt_addr_page ap = { .addr = (uintptr_t)(host + off) };

        if (ioctl(s->fd, CXLT_IOC_ADDR_PAGE, &ap) < 0) {
            if (errno == ENOTTY && !off) {
                return true;
            }
            error_setg_errno(errp, errno, "cxltrack-dirty-log: %s: the backend"
                             " at offset 0x%" PRIx64 " is not on this tracker",
                             s->tracker, off);
            return false;
        }
        if (!off) {
            *page = ap.page;
        } else if (ap.page != *page + off / page_size) {
            error_setg(errp, "cxltrack-dirty-log: the backend does not map the"
                       " device linearly (offset 0x%" PRIx64 " is at device"
                       " page 0x%" PRIx64 ", not 0x%" PRIx64 ")", off,
                       (uint64_t)ap.page, *page + off / page_size);
            return false;
        }
        if (off == last) {
            return true;
        }
    }
}

/*
 * Set s->dpa from the driver, or check the one given against it. Without the
 * driver's answer (x-dpa-unchecked, or a driver before CXLT_IOC_ADDR_PAGE) a
 * given dpa is taken as it is.
 */
static bool cxltrack_dirty_log_locate(CxltrackDirtyLog *s, MemoryRegion *mr,
                                      uint64_t page_size, Error **errp)
{
    uint64_t found = UINT64_MAX;

    if (!s->dpa_unchecked &&
        !cxltrack_dirty_log_find(s, mr, page_size, &found, errp)) {
        return false;
    }
    if (found == UINT64_MAX) {
        if (s->dpa == DPA_UNSET) {
            error_setg(errp, "cxltrack-dirty-log: %s", s->dpa_unchecked ?
                       "x-dpa-unchecked needs dpa" :
                       "the driver cannot tell where the backend is on the"
                       " device: give dpa");
            return false;
        }
        return true;
    }
    if (s->dpa != DPA_UNSET && s->dpa != found * page_size) {
        error_setg(errp, "cxltrack-dirty-log: dpa 0x%" PRIx64 ", but the"
                   " backend starts at DPA 0x%" PRIx64, s->dpa,
                   found * page_size);
        return false;
    }
    s->dpa = found * page_size;
    return true;
}

static void cxltrack_dirty_log_complete(UserCreatable *uc, Error **errp)
{
    CxltrackDirtyLog *s = CXLTRACK_DIRTY_LOG(uc);
    struct cxlt_info info = { 0 };
    MemoryRegion *mr;
    uint64_t page, size, align;

    if (!s->memdev || !s->tracker) {
        error_setg(errp, "cxltrack-dirty-log: memdev and tracker are required");
        return;
    }
    mr = host_memory_backend_get_memory(s->memdev);
    if (!memory_region_is_ram(mr) || !qemu_ram_is_shared(mr->ram_block)) {
        error_setg(errp, "cxltrack-dirty-log: memdev must be shared RAM "
                   "mapping the device (share=on)");
        return;
    }
    s->fd = qemu_open(s->tracker, O_RDWR, errp);
    if (s->fd < 0) {
        return;
    }
    if (ioctl(s->fd, CXLT_IOC_INFO, &info) < 0) {
        error_setg_errno(errp, errno, "cxltrack-dirty-log: %s: CXLT_IOC_INFO",
                         s->tracker);
        goto fail;
    }
    page = 1ULL << info.page_shift;
    if (page != TARGET_PAGE_SIZE || page != qemu_real_host_page_size()) {
        error_setg(errp, "cxltrack-dirty-log: tracker pages of %" PRIu64
                   " bytes, target and host pages of %d and %zu",
                   page, TARGET_PAGE_SIZE, qemu_real_host_page_size());
        goto fail;
    }
    size = memory_region_size(mr);
    align = page * MAX(info.harvest_align, 1);
    if (!size || size % align) {
        error_setg(errp, "cxltrack-dirty-log: the backend's size 0x%" PRIx64
                   " must be a multiple of 0x%" PRIx64, size, align);
        goto fail;
    }
    if (!cxltrack_dirty_log_locate(s, mr, page, errp)) {
        goto fail;
    }
    if (s->dpa % align) {
        error_setg(errp, "cxltrack-dirty-log: dpa 0x%" PRIx64 " must be a"
                   " multiple of 0x%" PRIx64, s->dpa, align);
        goto fail;
    }
    s->first_page = s->dpa / page;
    s->npages = size / page;
    if (s->first_page + s->npages > info.pages) {
        error_setg(errp, "cxltrack-dirty-log: pages 0x%" PRIx64 "+0x%" PRIx64
                   " beyond the tracker's 0x%" PRIx64, s->first_page,
                   s->npages, (uint64_t)info.pages);
        goto fail;
    }
    s->bitmap = bitmap_new(s->npages);
    if (s->zeroed && !cxltrack_dirty_log_check_zeroed(s, errp)) {
        goto fail;
    }
    /* the accelerator leaves this RAM to us (kvm_mem_flags) */
    mr->dirty_log_by_device = true;
    s->listener = (MemoryListener) {
        .name = "cxltrack-dirty-log",
        .log_global_start = cxltrack_dirty_log_global_start,
        .log_sync = cxltrack_dirty_log_sync,
        .priority = MEMORY_LISTENER_PRIORITY_DEV_BACKEND,
    };
    memory_listener_register(&s->listener, &address_space_memory);
    s->listening = true;
    if (s->written) {   /* zeroed=on */
        s->precopy.notify = cxltrack_dirty_log_precopy;
        precopy_add_notifier(&s->precopy);
    }
    return;

fail:
    close(s->fd);
    s->fd = -1;
}

static bool cxltrack_dirty_log_can_be_deleted(UserCreatable *uc)
{
    return false;   /* the RAM it logs stays unlogged by the accelerator */
}

static void cxltrack_dirty_log_set_tracker(Object *obj, const char *value,
                                           Error **errp)
{
    CxltrackDirtyLog *s = CXLTRACK_DIRTY_LOG(obj);

    g_free(s->tracker);
    s->tracker = g_strdup(value);
}

static char *cxltrack_dirty_log_get_tracker(Object *obj, Error **errp)
{
    return g_strdup(CXLTRACK_DIRTY_LOG(obj)->tracker);
}

static bool cxltrack_dirty_log_get_unchecked(Object *obj, Error **errp)
{
    return CXLTRACK_DIRTY_LOG(obj)->dpa_unchecked;
}

static void cxltrack_dirty_log_set_unchecked(Object *obj, bool value,
                                             Error **errp)
{
    CXLTRACK_DIRTY_LOG(obj)->dpa_unchecked = value;
}

static bool cxltrack_dirty_log_get_zeroed(Object *obj, Error **errp)
{
    return CXLTRACK_DIRTY_LOG(obj)->zeroed;
}

static void cxltrack_dirty_log_set_zeroed(Object *obj, bool value,
                                          Error **errp)
{
    CXLTRACK_DIRTY_LOG(obj)->zeroed = value;
}

static void cxltrack_dirty_log_init(Object *obj)
{
    CxltrackDirtyLog *s = CXLTRACK_DIRTY_LOG(obj);

    s->fd = -1;
    s->dpa = DPA_UNSET;
    object_property_add_link(obj, "memdev", TYPE_MEMORY_BACKEND,
                             (Object **)&s->memdev,
                             object_property_allow_set_link,
                             OBJ_PROP_LINK_STRONG);
    object_property_add_str(obj, "tracker", cxltrack_dirty_log_get_tracker,
                            cxltrack_dirty_log_set_tracker);
    object_property_add_uint64_ptr(obj, "dpa", &s->dpa,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_bool(obj, "x-dpa-unchecked",
                             cxltrack_dirty_log_get_unchecked,
                             cxltrack_dirty_log_set_unchecked);
    object_property_add_uint64_ptr(obj, "harvests", &s->harvests,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "dirty-pages", &s->dirty_pages,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_bool(obj, "zeroed", cxltrack_dirty_log_get_zeroed,
                             cxltrack_dirty_log_set_zeroed);
    object_property_add_uint64_ptr(obj, "skipped-pages", &s->skipped_pages,
                                   OBJ_PROP_FLAG_READ);
}

static void cxltrack_dirty_log_finalize(Object *obj)
{
    CxltrackDirtyLog *s = CXLTRACK_DIRTY_LOG(obj);

    if (s->listening) {
        if (s->written) {
            precopy_remove_notifier(&s->precopy);
        }
        memory_listener_unregister(&s->listener);
    }
    if (s->fd >= 0) {
        close(s->fd);
    }
    g_free(s->bitmap);
    g_free(s->written);
    g_free(s->tracker);
}

static void cxltrack_dirty_log_class_init(ObjectClass *oc, void *data)
{
    UserCreatableClass *ucc = USER_CREATABLE_CLASS(oc);

    ucc->complete = cxltrack_dirty_log_complete;
    ucc->can_be_deleted = cxltrack_dirty_log_can_be_deleted;
}

static const TypeInfo cxltrack_dirty_log_info = {
    .name = TYPE_CXLTRACK_DIRTY_LOG,
    .parent = TYPE_OBJECT,
    .instance_size = sizeof(CxltrackDirtyLog),
    .instance_init = cxltrack_dirty_log_init,
    .instance_finalize = cxltrack_dirty_log_finalize,
    .class_init = cxltrack_dirty_log_class_init,
    .interfaces = (InterfaceInfo[]) {
        { TYPE_USER_CREATABLE },
        { }
    },
};

static void cxltrack_dirty_log_register_types(void)
{
    type_register_static(&cxltrack_dirty_log_info);
}

type_init(cxltrack_dirty_log_register_types);
