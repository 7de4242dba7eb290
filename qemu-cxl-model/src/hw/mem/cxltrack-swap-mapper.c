/*
 * cxltrack-swap-mapper: associations of guest pages on a cxltrack device
 * with the virtual disk blocks read into them (VSwapper's Swap Mapper)
 *
 * A host whose VM keeps RAM on memory with a cxltrack tracker (docs/spec.md)
 * can let the device remember, for every page the VM read from its virtual
 * disk, which disk block the page holds. The device drops the association
 * at the first write to the page, whoever writes it (the guest, QEMU, the
 * host kernel), with no write-protect fault and no copy-on-write; a memory
 * manager's atomic discard-if-clean (CXLT_BAT_DISCARD) then answers whether
 * the page may be dropped and re-read from its block instead of written to
 * swap (docs/swap-design.md).
 *
 *   -object memory-backend-file,id=m1,mem-path=/dev/dax0.0,share=on,size=128M
 *   -object cxltrack-swap-mapper,id=sm0,memdev=m1,tracker=/dev/cxltrack0,disk=1
 *   -device virtio-blk-pci,drive=d0,logical_block_size=4096,swap-mapper=sm0
 *
 * One disk per mapper; disk is the id the associations carry. The disk's
 * blocks must be 4 KiB (the device's page), as VSwapper requires.
 *
 * Reads: when a read completed, before the guest is told, every page of
 * the memdev that the read filled whole, starting at a 4 KiB disk offset,
 * is associated with its block (CXLT_IOC_BAT_SET_ADDRS: the driver finds
 * the device page behind the address and writes back cached lines first).
 * The device saw the read's own writes to the page before the association,
 * and every write after it drops it. A guest store into a buffer whose read
 * is still in flight has an undefined result in virtio, as on hardware.
 *
 * Writes (VSwapper's data consistency): a disk write, discard or
 * write-zeroes changes blocks that resident pages may claim to equal.
 * Before it is submitted, the association of every page that holds one of
 * its blocks is taken away (CXLT_BAT_DISCARD by address: atomic, the data
 * stays). A read that ran while a write was in flight may have read either
 * content, so its pages are not associated (a counter says how many). An
 * association that cannot be taken away (the ioctl fails) would let a page
 * claim a block the write changes: the write is then failed with an I/O
 * error instead of submitted (x-fail-drops=on makes every drop fail, for
 * tests).
 *
 * Losing an association is always safe (the page is then written to swap
 * instead of dropped); keeping a wrong one would lose data, so every error
 * path drops or skips. The read-only properties count what was done.
 *
 * Copyright (c) 2026 The cxltrack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/ioctl.h>
#include <linux/cxltrack.h>
#include "qemu/error-report.h"
#include "qemu/iov.h"
#include "qemu/module.h"
#include "qemu/thread.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "qom/object_interfaces.h"
#include "system/hostmem.h"
#include "exec/memory.h"
#include "hw/mem/cxltrack-swap-mapper.h"
#include "cxltrack-swap-mapper-int.h"

static uint64_t *key_new(uint64_t v)
{
    uint64_t *k = g_new(uint64_t, 1);

    *k = v;
    return k;
}

static void garray_free(gpointer p)
{
    g_array_free(p, true);
}

/* Forget that @addr holds a block; caller holds the lock. */
void cxltrack_swap_mapper_forget_page(CxltrackSwapMapper *s, uint64_t addr)
{
    uint64_t *block = g_hash_table_lookup(s->block_of_page, &addr);
    GArray *pages;
    guint i;

    if (!block) {
        return;
    }
    pages = g_hash_table_lookup(s->pages_of_block, block);
    for (i = 0; pages && i < pages->len; i++) {
        if (g_array_index(pages, uint64_t, i) == addr) {
            g_array_remove_index_fast(pages, i);
            break;
        }
    }
    if (pages && !pages->len) {
        g_hash_table_remove(s->pages_of_block, block);
    }
    g_hash_table_remove(s->block_of_page, &addr);
}

static void remember_page(CxltrackSwapMapper *s, uint64_t addr,
                          uint64_t block)
{
    GArray *pages;

    /*
     * First: forgetting frees the block's array when @addr was its only
     * page, which it is when a page is read from the same block again.
     */
    cxltrack_swap_mapper_forget_page(s, addr);
    pages = g_hash_table_lookup(s->pages_of_block, &block);
    if (!pages) {
        pages = g_array_new(false, false, sizeof(uint64_t));
        g_hash_table_insert(s->pages_of_block, key_new(block), pages);
    }
    g_array_append_val(pages, addr);
    g_hash_table_insert(s->block_of_page, key_new(addr), key_new(block));
}

/*
 * Set the first @count entries of s->batch. The driver stops at a failed
 * entry: count it and go on after it. Remember the pages that were set.
 */
void cxltrack_swap_mapper_set_batch(CxltrackSwapMapper *s, uint32_t count)
{
    uint32_t from = 0, i;

    while (from < count) {
        struct cxlt_bat_set_addrs b = {
            .entries = (uintptr_t)(s->batch + from),
            .count = count - from,
        };
        int ret = ioctl(s->fd, CXLT_IOC_BAT_SET_ADDRS, &b);

        for (i = from; i < from + b.done; i++) {
            remember_page(s, s->batch[i].addr, s->batch[i].block);
        }
        s->associated += b.done;
        from += b.done;
        if (ret < 0) {
            if (errno != EINTR) {
                warn_report_once("cxltrack-swap-mapper %s: page %p: %s",
                                 s->tracker, (void *)s->batch[from].addr,
                                 strerror(errno));
                s->errors++;
                cxltrack_swap_mapper_forget_page(s, s->batch[from].addr);
                from++;
            }
        }
    }
}

void cxltrack_swap_mapper_for_each_page(CxltrackSwapMapper *s,
                                        QEMUIOVector *qiov, uint64_t offset,
                                        CxltrackPageFn *fn, void *opaque)
{
    uint8_t *end = s->ram + s->ram_size;
    int i;

    for (i = 0; i < qiov->niov; i++) {
        uint8_t *base = qiov->iov[i].iov_base;
        uint8_t *lim = base + qiov->iov[i].iov_len;
        /* the first page-aligned address of this piece at a block start */
        uint64_t skip = (-offset) & (BLOCK_SIZE - 1);
        uint8_t *p = base + skip;

        offset += qiov->iov[i].iov_len;
        if ((uintptr_t)p % BLOCK_SIZE) {
            continue;   /* block starts are not page starts here */
        }
        for (; p + BLOCK_SIZE <= lim; p += BLOCK_SIZE) {
            if (p >= s->ram && p + BLOCK_SIZE <= end) {
                fn(s, p, (offset - (lim - p)) / BLOCK_SIZE, opaque);
            }
        }
    }
}

uint64_t cxltrack_swap_mapper_read_begin(CxltrackSwapMapper *s,
                                         QEMUIOVector *qiov, uint64_t offset)
{
    uint64_t token;

    qemu_mutex_lock(&s->lock);
    token = s->writes_begun == s->writes_ended ? s->writes_begun :
            CXLTRACK_SWAP_MAPPER_NO_TOKEN;
    if (s->mm) {
        cxltrack_mm_read_begin(s, qiov, offset);
    }
    qemu_mutex_unlock(&s->lock);
    return token;
}

typedef struct ReadDone {
    uint64_t token;
    uint32_t n;
} ReadDone;

static void associate_page(CxltrackSwapMapper *s, uint8_t *p, uint64_t block,
                           void *opaque)
{
    ReadDone *rd = opaque;

    /*
     * The memory manager evicted it since: its pinning would fault into
     * the manager's thread, which waits for the lock held here.
     */
    if (!cxltrack_mm_resident(s, (uintptr_t)p)) {
        return;
    }
    if (rd->token == CXLTRACK_SWAP_MAPPER_NO_TOKEN ||
        rd->token != s->writes_begun) {
        s->unassociated++;
        return;
    }
    s->batch[rd->n++] = (struct cxlt_bat_addr) {
        .addr = (uintptr_t)p,
        .block = block,
        .disk = s->disk,
    };
    if (rd->n == CXLT_BAT_ADDRS_MAX) {
        cxltrack_swap_mapper_set_batch(s, rd->n);
        rd->n = 0;
    }
}

void cxltrack_swap_mapper_read_done(CxltrackSwapMapper *s, QEMUIOVector *qiov,
                                    uint64_t offset, uint64_t token, bool ok)
{
    ReadDone rd = { .token = token };

    qemu_mutex_lock(&s->lock);
    if (s->mm) {
        cxltrack_mm_read_end(s, qiov, offset);
    }
    if (ok) {
        cxltrack_swap_mapper_for_each_page(s, qiov, offset, associate_page,
                                           &rd);
        if (rd.n) {
            cxltrack_swap_mapper_set_batch(s, rd.n);
        }
    }
    qemu_mutex_unlock(&s->lock);
}

/*
 * Take the association away from every page that holds @block; false if
 * one could not be (its page may still claim the block).
 */
static bool drop_block(CxltrackSwapMapper *s, uint64_t block)
{
    GArray *pages = g_hash_table_lookup(s->pages_of_block, &block);
    bool ok = true;

    while (pages && pages->len) {
        uint64_t addr = g_array_index(pages, uint64_t, 0);
        struct cxlt_addr_page ap = { .addr = addr };
        struct cxlt_bat bat = {
            .op = CXLT_BAT_DISCARD,
            .flags = CXLT_BAT_F_ADDR,
            .addr = addr,
        };

        /*
         * The device page behind the address now. RAM on a kmem node may
         * have moved since the association was set: the copy wrote the
         * new page, which so has none, and the old one is not ours. An
         * address that maps no device page reaches no association.
         */
        int ret = -1;

        if (!cxltrack_mm_resident(s, addr)) {
            /* evicted pages left the maps; never touch one (see above) */
            cxltrack_swap_mapper_forget_page(s, addr);
            pages = g_hash_table_lookup(s->pages_of_block, &block);
            continue;
        }
        errno = EIO;    /* x-fail-drops */
        if (!s->fail_drops) {
            ret = ioctl(s->fd, CXLT_IOC_ADDR_PAGE, &ap);
            if (!ret) {
                bat.page = ap.page;
                ret = ioctl(s->fd, CXLT_IOC_BAT, &bat);
            }
        }
        if (ret < 0) {
            warn_report_once("cxltrack-swap-mapper %s: cannot take the"
                             " association of %p away: %s", s->tracker,
                             (void *)addr, strerror(errno));
            s->errors++;
            ok = false;
            break;      /* kept in the maps: the next write tries again */
        }
        if (bat.valid) {
            s->dropped++;
        }
        /* may free @pages with the last one */
        cxltrack_swap_mapper_forget_page(s, addr);
        pages = g_hash_table_lookup(s->pages_of_block, &block);
    }
    return ok;
}

bool cxltrack_swap_mapper_each_block(CxltrackSwapMapper *s, GHashTable *table,
                                     uint64_t first, uint64_t last,
                                     CxltrackBlockFn *fn)
{
    GHashTableIter it;
    gpointer key;
    GArray *hit;
    bool ok = true;
    uint64_t b;
    guint i;

    /* a write of a few blocks asks for each; a large one walks the table */
    if (last - first <= g_hash_table_size(table)) {
        for (b = first; b < last && ok; b++) {
            ok = fn(s, b);
        }
        return ok;
    }
    /* collected first: @fn changes @table */
    hit = g_array_new(false, false, sizeof(uint64_t));
    g_hash_table_iter_init(&it, table);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        b = *(uint64_t *)key;
        if (b >= first && b < last) {
            g_array_append_val(hit, b);
        }
    }
    for (i = 0; i < hit->len && ok; i++) {
        ok = fn(s, g_array_index(hit, uint64_t, i));
    }
    g_array_free(hit, true);
    return ok;
}

bool cxltrack_swap_mapper_write_begin(CxltrackSwapMapper *s, uint64_t offset,
                                      uint64_t bytes, QEMUIOVector *qiov,
                                      QEMUIOVector **copy)
{
    uint64_t first = offset / BLOCK_SIZE;
    uint64_t last = (offset + bytes + BLOCK_SIZE - 1) / BLOCK_SIZE;
    bool ok;

    assert(!qiov == !copy);
    if (copy) {
        *copy = NULL;
    }
    qemu_mutex_lock(&s->lock);
    s->writes_begun++;
    ok = cxltrack_swap_mapper_each_block(s, s->pages_of_block, first, last,
                                         drop_block);
    if (ok && s->mm) {
        ok = cxltrack_mm_write_begin(s, first, last, qiov, copy);
    }
    s->failed_writes += !ok;
    qemu_mutex_unlock(&s->lock);
    return ok;
}

void cxltrack_swap_mapper_write_end(CxltrackSwapMapper *s, QEMUIOVector *copy)
{
    if (copy) {
        cxltrack_mm_write_copy_free(copy);
    }
    qemu_mutex_lock(&s->lock);
    s->writes_ended++;
    qemu_mutex_unlock(&s->lock);
}

bool cxltrack_swap_mapper_can_claim(CxltrackSwapMapper *s, Object *disk,
                                    Error **errp)
{
    if (s->user && s->user != disk) {
        error_setg(errp, "cxltrack-swap-mapper: already used by another disk"
                   " (one disk per mapper: the disk id names its blocks)");
        return false;
    }
    if (s->fd < 0) {
        error_setg(errp, "cxltrack-swap-mapper: not open");
        return false;
    }
    return true;
}

void cxltrack_swap_mapper_claim(CxltrackSwapMapper *s, Object *disk)
{
    assert(!s->user || s->user == disk);
    s->user = disk;
}

/*
 * The disk goes away. Its id may name another disk's blocks next: take
 * every association this mapper made away.
 */
void cxltrack_swap_mapper_unclaim(CxltrackSwapMapper *s, Object *disk)
{
    GHashTableIter it;
    gpointer key;
    GArray *blocks;
    guint i;

    if (s->user != disk) {
        return;
    }
    qemu_mutex_lock(&s->lock);
    blocks = g_array_new(false, false, sizeof(uint64_t));
    g_hash_table_iter_init(&it, s->pages_of_block);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        g_array_append_val(blocks, *(uint64_t *)key);
    }
    for (i = 0; i < blocks->len; i++) {
        drop_block(s, g_array_index(blocks, uint64_t, i));
    }
    g_array_free(blocks, true);
    qemu_mutex_unlock(&s->lock);
    s->user = NULL;
}

static void cxltrack_swap_mapper_complete(UserCreatable *uc, Error **errp)
{
    CxltrackSwapMapper *s = CXLTRACK_SWAP_MAPPER(uc);
    struct cxlt_info info = { 0 };
    struct cxlt_addr_page ap = { 0 };
    MemoryRegion *mr;

    if (!s->memdev || !s->tracker) {
        error_setg(errp, "cxltrack-swap-mapper: memdev and tracker are"
                   " required");
        return;
    }
    mr = host_memory_backend_get_memory(s->memdev);
    if (!memory_region_is_ram(mr)) {
        error_setg(errp, "cxltrack-swap-mapper: memdev must be RAM");
        return;
    }
    s->fd = qemu_open(s->tracker, O_RDWR, errp);
    if (s->fd < 0) {
        return;
    }
    if (ioctl(s->fd, CXLT_IOC_INFO, &info) < 0) {
        error_setg_errno(errp, errno, "cxltrack-swap-mapper: %s:"
                         " CXLT_IOC_INFO", s->tracker);
        goto fail;
    }
    if ((1ULL << info.page_shift) != BLOCK_SIZE) {
        error_setg(errp, "cxltrack-swap-mapper: tracker pages of %llu bytes,"
                   " blocks of %" PRIu64, 1ULL << info.page_shift,
                   (uint64_t)BLOCK_SIZE);
        goto fail;
    }
    s->ram = memory_region_get_ram_ptr(mr);
    s->ram_size = memory_region_size(mr);
    /*
     * Anonymous RAM bound to the device's node (kmem) has no page until it
     * is written (a read maps the shared zero page): write the first byte's
     * own value back, before the VM runs, so that it gets its page.
     */
    *(volatile uint8_t *)s->ram = *(volatile uint8_t *)s->ram;
    ap.addr = (uintptr_t)s->ram;
    if (ioctl(s->fd, CXLT_IOC_ADDR_PAGE, &ap) < 0) {
        error_setg_errno(errp, errno, "cxltrack-swap-mapper: %s: memdev is"
                         " not memory of this tracker", s->tracker);
        goto fail;
    }
    s->batch = g_new(struct cxlt_bat_addr, CXLT_BAT_ADDRS_MAX);
    if (s->swap_file && !cxltrack_mm_start(s, errp)) {
        goto fail;
    }
    return;

fail:
    close(s->fd);
    s->fd = -1;
}

static bool cxltrack_swap_mapper_can_be_deleted(UserCreatable *uc)
{
    return !CXLTRACK_SWAP_MAPPER(uc)->user;
}

static void cxltrack_swap_mapper_set_tracker(Object *obj, const char *value,
                                             Error **errp)
{
    CxltrackSwapMapper *s = CXLTRACK_SWAP_MAPPER(obj);

    g_free(s->tracker);
    s->tracker = g_strdup(value);
}

static char *cxltrack_swap_mapper_get_tracker(Object *obj, Error **errp)
{
    return g_strdup(CXLTRACK_SWAP_MAPPER(obj)->tracker);
}

static bool cxltrack_swap_mapper_get_fail_drops(Object *obj, Error **errp)
{
    return CXLTRACK_SWAP_MAPPER(obj)->fail_drops;
}

static void cxltrack_swap_mapper_set_fail_drops(Object *obj, bool value,
                                                Error **errp)
{
    CXLTRACK_SWAP_MAPPER(obj)->fail_drops = value;
}

static void cxltrack_swap_mapper_init(Object *obj)
{
    CxltrackSwapMapper *s = CXLTRACK_SWAP_MAPPER(obj);
    const struct {
        const char *name;
        uint64_t *value;
    } counters[] = {
        { "associated-pages", &s->associated },
        { "unassociated-pages", &s->unassociated },
        { "dropped-associations", &s->dropped },
        { "errors", &s->errors },
        { "failed-writes", &s->failed_writes },
    };
    size_t i;

    s->fd = -1;
    qemu_mutex_init(&s->lock);
    s->pages_of_block = g_hash_table_new_full(g_int64_hash, g_int64_equal,
                                              g_free, garray_free);
    s->block_of_page = g_hash_table_new_full(g_int64_hash, g_int64_equal,
                                             g_free, g_free);
    object_property_add_link(obj, "memdev", TYPE_MEMORY_BACKEND,
                             (Object **)&s->memdev,
                             object_property_allow_set_link,
                             OBJ_PROP_LINK_STRONG);
    object_property_add_str(obj, "tracker", cxltrack_swap_mapper_get_tracker,
                            cxltrack_swap_mapper_set_tracker);
    object_property_add_uint32_ptr(obj, "disk", &s->disk,
                                   OBJ_PROP_FLAG_READWRITE);
    for (i = 0; i < ARRAY_SIZE(counters); i++) {
        object_property_add_uint64_ptr(obj, counters[i].name,
                                       counters[i].value, OBJ_PROP_FLAG_READ);
    }
    object_property_add_bool(obj, "x-fail-drops",
                             cxltrack_swap_mapper_get_fail_drops,
                             cxltrack_swap_mapper_set_fail_drops);
    cxltrack_mm_add_properties(obj);
}

static void cxltrack_swap_mapper_finalize(Object *obj)
{
    CxltrackSwapMapper *s = CXLTRACK_SWAP_MAPPER(obj);

    cxltrack_mm_stop(s);
    if (s->fd >= 0) {
        close(s->fd);
    }
    g_hash_table_destroy(s->pages_of_block);
    g_hash_table_destroy(s->block_of_page);
    g_free(s->batch);
    g_free(s->tracker);
    g_free(s->swap_file);
    g_free(s->image);
    qemu_mutex_destroy(&s->lock);
}

static void cxltrack_swap_mapper_class_init(ObjectClass *oc, void *data)
{
    UserCreatableClass *ucc = USER_CREATABLE_CLASS(oc);

    ucc->complete = cxltrack_swap_mapper_complete;
    ucc->can_be_deleted = cxltrack_swap_mapper_can_be_deleted;
}

static const TypeInfo cxltrack_swap_mapper_info = {
    .name = TYPE_CXLTRACK_SWAP_MAPPER,
    .parent = TYPE_OBJECT,
    .instance_size = sizeof(CxltrackSwapMapper),
    .instance_init = cxltrack_swap_mapper_init,
    .instance_finalize = cxltrack_swap_mapper_finalize,
    .class_init = cxltrack_swap_mapper_class_init,
    .interfaces = (InterfaceInfo[]) {
        { TYPE_USER_CREATABLE },
        { }
    },
};

static void cxltrack_swap_mapper_register_types(void)
{
    type_register_static(&cxltrack_swap_mapper_info);
}

type_init(cxltrack_swap_mapper_register_types);
