/*
 * cxltrack: page tracking engine of a CXL type 3 memory expander
 *
 * The tracker is PCI function 1 of a multi-function CXL memory device whose
 * function 0 is a cxl-type3, or, in the PCIe-attached flavour of a board
 * without CXL, a cxltrack-mem (defined at the end of this file: a plain
 * PCIe function whose BAR0 is the memory window). It observes every memory
 * request that reaches function 0 (dirty, accessed and hotness per page,
 * invalidation of
 * page to disk block associations), and offers write-buffer merge slots, a
 * chunk owner table with scrub, a command engine and an event queue with an
 * MSI-X interrupt. The register interface is the generated cxltrack_regs.h.
 *
 * Commands run to completion at launch (CMD_STATUS.BUSY is never seen set).
 * A harvest with CMD_OP.DMA writes its result to guest memory with
 * pci_dma_write() from this function (bus mastering applies), in pieces of
 * CXLT_RESULT_SIZE, and completes after the last write returned; with
 * CMD_OP.LIST (dirty and accessed) it writes only a record per non-zero
 * 64-page word (docs/spec.md section 5.4).
 * A released chunk is scrubbed after its CHUNK_RELEASE completed, one chunk
 * per run of a bottom half (the chunk is SCRUBBING until then): the guest's
 * MMIO write does not zero-fill chunks under the big lock, and the main loop
 * runs between two chunks.
 *
 * Copyright (c) 2026 The cxltrack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/host-utils.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "hw/pci/pci_device.h"
#include "system/dma.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "hw/cxl/cxl.h"
#include "hw/cxl/cxltrack_regs.h"
#include "migration/vmstate.h"
#include "qemu/bswap.h"
#include "qom/object.h"
#include "system/hostmem.h"

#define TYPE_CXLTRACK "cxltrack"
OBJECT_DECLARE_SIMPLE_TYPE(CXLTrackState, CXLTRACK)

/*
 * Function 0 of the PCIe-attached flavour (docs/spec.md section 10): its
 * 64-bit prefetchable BAR0 is the memory window, BAR offset = DPA, backed by
 * a memory backend; the tracker observes it through the same hooks as a
 * cxl-type3.
 */
#define TYPE_CXLTRACK_MEM "cxltrack-mem"
OBJECT_DECLARE_SIMPLE_TYPE(CXLTrackMemState, CXLTRACK_MEM)

struct CXLTrackMemState {
    PCIDevice parent_obj;

    MemoryRegion bar;
    HostMemoryBackend *memdev;
    CXLType3Observer *observer;
};

#define CXLT_LINE 64
#define CXLT_WORD_PAGES 64
#define CXLT_MSIX_BAR 2
#define CXLT_PCIE_CAP 0x80

#define CXLT_PUT(reg, field, v) \
    (((uint32_t)(v) << CXLT_##reg##_##field##_SHIFT) & \
     CXLT_##reg##_##field##_MASK)
#define CXLT_GET(reg, field, v) \
    (((v) & CXLT_##reg##_##field##_MASK) >> CXLT_##reg##_##field##_SHIFT)
#define CXLT_LAYOUT_PUT(layout, field, v) \
    (((uint64_t)(v) << CXLT_LAYOUT_##layout##_##field##_SHIFT) & \
     CXLT_LAYOUT_##layout##_##field##_MASK)

#define CXLT_ACCESS_ERRORS (CXLT_ERR_STATUS_BAD_REG_MASK | \
                            CXLT_ERR_STATUS_BAD_WIDTH_MASK | \
                            CXLT_ERR_STATUS_CMD_OVERRUN_MASK | \
                            CXLT_ERR_STATUS_SLOT_WRITE_MASK)

typedef struct CXLTSlot {
    uint8_t state;
    bool full_reported;
    bool timeout_reported;
    uint32_t valid;
    uint64_t tag;
    uint64_t opened_at;
    uint64_t mask[CXLT_SLOT_SIZE / 64];
    uint8_t data[CXLT_SLOT_SIZE];
} CXLTSlot;

typedef struct CXLTChunk {
    uint8_t state;
    uint16_t owner;
} CXLTChunk;

typedef struct CXLTEvent {
    uint8_t type;
    uint16_t index;
    uint32_t seq;
    uint64_t arg;
} CXLTEvent;

typedef struct CXLTBat {
    uint64_t block;
    uint16_t disk;
    bool valid;
} CXLTBat;

typedef struct CXLTResult {
    uint8_t code;
    uint64_t r0;
    uint64_t r1;
    const uint8_t *window;
    uint32_t window_len;
} CXLTResult;

struct CXLTrackState {
    PCIDevice parent_obj;

    CXLType3Observer observer;
    MemoryRegion bar;
    QEMUTimer *slot_timer;
    QEMUBH *scrub_bh;

    /* Properties */
    CXLType3Dev *target;
    /* Function 0 of the PCIe-attached flavour, when there is no cxl-type3 */
    CXLTrackMemState *bar_target;
    uint64_t capacity;
    uint8_t page_shift;
    uint8_t num_slots;
    uint8_t hot_bits;
    uint8_t evq_depth_log2;
    uint8_t chunk_shift;
    uint8_t disk_bits;
    uint8_t block_bits;
    uint32_t tick_ns;

    /* Derived geometry */
    uint64_t pages;
    uint32_t num_chunks;
    uint8_t hot_max;
    uint32_t evq_depth;

    /* Tables */
    uint64_t *dirty;
    uint64_t *accessed;
    uint8_t *hot;
    CXLTBat *bat;
    CXLTSlot slots[CXLT_SLOT_COUNT];
    CXLTChunk *chunks;
    uint32_t *scrub_fifo;
    uint32_t scrub_head;
    uint32_t scrub_len;
    CXLTEvent *evq;
    uint32_t evq_head;
    uint32_t evq_len;
    uint32_t evq_seq;
    uint32_t evq_dropped;

    /* Registers */
    uint32_t ctrl;
    uint32_t slot_timeout;
    uint32_t int_status;
    uint32_t int_enable;
    uint32_t err_status;
    uint32_t err_addr;
    uint32_t err_count;
    uint64_t args[3];
    uint32_t cmd_op;
    uint32_t cmd_status;
    uint64_t cmd_result[2];
    uint8_t result[CXLT_RESULT_SIZE];
    uint8_t scratch[CXLT_RESULT_SIZE];
    uint64_t stat_reads;
    uint64_t stat_writes;
    uint32_t stat_decerr;
    uint32_t stat_bat_inv;

    bool busy;
    bool irq_line;
    uint32_t msi_count;
    uint32_t int_enable_at_reset;  /* INT_ENABLE when last reset, for tests */
    uint32_t x_miscount_harvests;  /* unstable test knobs, see instance_init */
    uint32_t x_bad_events;
    uint32_t x_ident_offset;
    uint32_t x_ident_value;
    bool chunk_copy;               /* CAP_DMA.COPY: CHUNK_COPY is accepted */
    int64_t epoch_ns;
};

/*
 * Width of the bus addresses a DMA harvest can write (CAP_DMA.ADDR_BITS):
 * pci_dma_write() takes any 64-bit address.
 */
#define CXLT_DMA_ADDR_BITS 64
/* A DMA harvest's ARG2 is 64-byte aligned (docs/spec.md section 5.3). */
#define CXLT_DMA_ALIGN 64

static inline uint32_t sat_inc32(uint32_t v)
{
    return v == UINT32_MAX ? v : v + 1;
}

static bool cxlt_tracking(CXLTrackState *s)
{
    return CXLT_GET(CTRL, TRACK_EN, s->ctrl);
}

/* ---------------------------------------------------------------- irq */

static uint32_t cxlt_int_status(CXLTrackState *s)
{
    uint32_t v = s->int_status & ~CXLT_INT_STATUS_EVQ_MASK;

    if (s->evq_len) {
        v |= CXLT_INT_STATUS_EVQ_MASK;
    }
    return v;
}

/*
 * MSI-X vector 0 fires on every rising edge of the interrupt line and, with
 * @rearm, after a write to INT_STATUS or INT_ENABLE that leaves it asserted.
 */
static void cxlt_update_irq(CXLTrackState *s, bool rearm)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    bool line = cxlt_int_status(s) & s->int_enable;

    if (line && (!s->irq_line || rearm)) {
        s->msi_count++;
        if (msix_enabled(pdev)) {
            msix_notify(pdev, 0);
        }
    }
    s->irq_line = line;
}

/* ------------------------------------------------------------- events */

static void cxlt_set_error(CXLTrackState *s, uint32_t mask, int bit,
                           bool access, hwaddr offset);

static void cxlt_push_one_event(CXLTrackState *s, uint8_t type,
                                uint16_t index, uint64_t arg);

static void cxlt_push_event(CXLTrackState *s, uint8_t type, uint16_t index,
                            uint64_t arg)
{
    if (s->x_bad_events) {
        /* a record of a type no spec defines, numbered like any other */
        s->x_bad_events--;
        cxlt_push_one_event(s, 0x7f, index, arg);
    }
    cxlt_push_one_event(s, type, index, arg);
}

static void cxlt_push_one_event(CXLTrackState *s, uint8_t type,
                                uint16_t index, uint64_t arg)
{
    uint32_t seq = s->evq_seq++;

    if (s->evq_len >= s->evq_depth) {
        s->evq_dropped = sat_inc32(s->evq_dropped);
        cxlt_set_error(s, CXLT_ERR_STATUS_EVQ_OVERFLOW_MASK,
                       CXLT_ERR_STATUS_EVQ_OVERFLOW_SHIFT, false, 0);
    } else {
        CXLTEvent *e = &s->evq[(s->evq_head + s->evq_len) % s->evq_depth];

        e->type = type;
        e->index = index;
        e->seq = seq;
        e->arg = arg;
        s->evq_len++;
    }
    cxlt_update_irq(s, false);
}

static void cxlt_pop_event(CXLTrackState *s)
{
    if (s->evq_len) {
        s->evq_head = (s->evq_head + 1) % s->evq_depth;
        s->evq_len--;
    }
}

/*
 * Record an error (docs/spec.md section 4.2). @access: an illegal BAR
 * access at @offset (latched, counted, ERROR event); otherwise the event
 * queue overflow, which only sets its bit and INT_STATUS.ERROR.
 */
static void cxlt_set_error(CXLTrackState *s, uint32_t mask, int bit,
                           bool access, hwaddr offset)
{
    bool was_set = s->err_status & mask;

    if (access && !(s->err_status & CXLT_ACCESS_ERRORS)) {
        s->err_addr = offset;
    }
    s->err_status |= mask;
    if (access) {
        s->err_count = sat_inc32(s->err_count);
    }
    if (!was_set) {
        s->int_status |= CXLT_INT_STATUS_ERROR_MASK;
        if (access) {
            cxlt_push_event(s, CXLT_EVENT_ERROR, bit, offset);
        }
    }
    cxlt_update_irq(s, false);
}

#define cxlt_access_error(s, name, offset) \
    cxlt_set_error(s, CXLT_ERR_STATUS_##name##_MASK, \
                   CXLT_ERR_STATUS_##name##_SHIFT, true, offset)

/* ------------------------------------------------------ tracking tables */

static void cxlt_touch(CXLTrackState *s, uint64_t page)
{
    s->accessed[page / 64] |= BIT_ULL(page % 64);
    if (s->hot[page] < s->hot_max) {
        s->hot[page]++;
    }
}

static void cxlt_invalidate(CXLTrackState *s, uint64_t page)
{
    if (!s->bat[page].valid) {
        return;
    }
    s->bat[page].valid = false;
    s->stat_bat_inv = sat_inc32(s->stat_bat_inv);
    if (CXLT_GET(CTRL, BAT_INV_EVT_EN, s->ctrl)) {
        cxlt_push_event(s, CXLT_EVENT_BAT_INVALIDATED, 0, page);
    }
}

/* Write-end effects on @page (external or internal write). */
static void cxlt_write_end(CXLTrackState *s, uint64_t page)
{
    if (cxlt_tracking(s)) {
        s->dirty[page / 64] |= BIT_ULL(page % 64);
    }
    cxlt_invalidate(s, page);
}

/*
 * One request of the observed device. QEMU accesses are at most 8 bytes;
 * one that crosses a 64-byte line counts as one request per line.
 */
static bool cxlt_observe_request(CXLType3Observer *obs, uint64_t dpa,
                                 unsigned size, bool is_write)
{
    CXLTrackState *s = container_of(obs, CXLTrackState, observer);
    uint64_t end = dpa + size;

    while (dpa < end) {
        uint64_t next = MIN(end, QEMU_ALIGN_DOWN(dpa, CXLT_LINE) + CXLT_LINE);
        uint64_t page;

        if (dpa >= s->capacity || next > s->capacity) {
            s->stat_decerr = sat_inc32(s->stat_decerr);
            return false;
        }
        page = dpa >> s->page_shift;
        if (is_write) {
            s->stat_writes++;
        } else {
            s->stat_reads++;
        }
        if (cxlt_tracking(s)) {
            cxlt_touch(s, page);
        }
        if (is_write) {
            cxlt_invalidate(s, page);
        }
        dpa = next;
    }
    return true;
}

static void cxlt_observe_written(CXLType3Observer *obs, uint64_t dpa,
                                 uint64_t len, bool internal)
{
    CXLTrackState *s = container_of(obs, CXLTrackState, observer);
    uint64_t first, last, page;

    if (!len || dpa >= s->capacity) {
        return;
    }
    len = MIN(len, s->capacity - dpa);
    first = dpa >> s->page_shift;
    last = (dpa + len - 1) >> s->page_shift;
    for (page = first; page <= last; page++) {
        cxlt_write_end(s, page);
    }
}

/* ------------------------------------------------ the observed memory */

static uint64_t cxlt_mem_size(CXLTrackMemState *m)
{
    return memory_region_size(host_memory_backend_get_memory(m->memdev));
}

/* As cxl_type3_dpa_rw(): by DPA, on the device's own behalf, unobserved. */
static MemTxResult cxlt_mem_dpa_rw(CXLTrackMemState *m, uint64_t dpa,
                                   void *buf, uint64_t len, bool is_write)
{
    uint64_t size = cxlt_mem_size(m);
    uint8_t *mem = memory_region_get_ram_ptr(
        host_memory_backend_get_memory(m->memdev));

    if (dpa > size || len > size - dpa) {
        return MEMTX_DECODE_ERROR;
    }
    if (is_write) {
        memcpy(mem + dpa, buf, len);
    } else {
        memcpy(buf, mem + dpa, len);
    }
    return MEMTX_OK;
}

static uint64_t cxlt_target_size(CXLTrackState *s)
{
    return s->target ? cxl_type3_static_capacity(s->target)
                     : cxlt_mem_size(s->bar_target);
}

static MemTxResult cxlt_target_rw(CXLTrackState *s, uint64_t dpa, void *buf,
                                  uint64_t len, bool is_write)
{
    return s->target ? cxl_type3_dpa_rw(s->target, dpa, buf, len, is_write)
                     : cxlt_mem_dpa_rw(s->bar_target, dpa, buf, len, is_write);
}

static CXLType3Observer **cxlt_target_observer(CXLTrackState *s)
{
    return s->target ? &s->target->observer : &s->bar_target->observer;
}

/* Device memory written by the tracker itself (merge, scrub). */
static void cxlt_internal_write(CXLTrackState *s, uint64_t dpa,
                                const void *buf, uint64_t len)
{
    if (cxlt_target_rw(s, dpa, (void *)buf, len, true) != MEMTX_OK) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cxltrack: internal write at DPA 0x%" PRIx64
                      " failed\n", dpa);
    }
}

/* --------------------------------------------------------------- slots */

static void cxlt_slot_clear(CXLTSlot *slot)
{
    slot->valid = 0;
    memset(slot->mask, 0, sizeof(slot->mask));
    memset(slot->data, 0, sizeof(slot->data));
}

static bool cxlt_slot_full(CXLTSlot *slot)
{
    return slot->valid == CXLT_SLOT_SIZE;
}

static uint64_t cxlt_now_ticks(CXLTrackState *s)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) - s->epoch_ns;

    return now > 0 ? now / s->tick_ns : 0;
}

/* Arm the timer for the next tick at which an open slot can time out. */
static void cxlt_slot_timer_arm(CXLTrackState *s)
{
    uint64_t limit = s->slot_timeout, now, next = UINT64_MAX;
    int i;

    if (!limit) {
        timer_del(s->slot_timer);
        return;
    }
    for (i = 0; i < s->num_slots; i++) {
        CXLTSlot *slot = &s->slots[i];

        if (slot->state == CXLT_SLOT_STATE_OPEN && !cxlt_slot_full(slot) &&
            !slot->timeout_reported) {
            next = MIN(next, slot->opened_at + limit);
        }
    }
    if (next == UINT64_MAX) {
        timer_del(s->slot_timer);
        return;
    }
    now = cxlt_now_ticks(s);
    next = MAX(next, now + 1);
    /* Saturate: a deadline past the end of time never fires. */
    if (next > (INT64_MAX - s->epoch_ns) / s->tick_ns) {
        timer_del(s->slot_timer);
    } else {
        timer_mod(s->slot_timer, s->epoch_ns + next * s->tick_ns);
    }
}

static void cxlt_slot_timer_cb(void *opaque)
{
    CXLTrackState *s = opaque;
    uint64_t limit = s->slot_timeout, now = cxlt_now_ticks(s);
    int i;

    for (i = 0; limit && i < s->num_slots; i++) {
        CXLTSlot *slot = &s->slots[i];

        if (slot->state == CXLT_SLOT_STATE_OPEN && !cxlt_slot_full(slot) &&
            !slot->timeout_reported && now - slot->opened_at >= limit) {
            slot->timeout_reported = true;
            cxlt_push_event(s, CXLT_EVENT_SLOT_TIMEOUT, i, slot->tag);
        }
    }
    cxlt_slot_timer_arm(s);
}

static uint64_t cxlt_window_read(CXLTrackState *s, hwaddr addr, unsigned size)
{
    unsigned index = (addr - CXLT_SLOT) / CXLT_SLOT_STRIDE;
    unsigned off = (addr - CXLT_SLOT) % CXLT_SLOT_STRIDE;
    CXLTSlot *slot;
    uint64_t v = 0;
    unsigned i;

    if (index >= s->num_slots) {
        cxlt_access_error(s, BAD_REG, addr);
        return 0;
    }
    if ((size != 4 && size != 8) || off % size) {
        cxlt_access_error(s, BAD_WIDTH, addr);
        return 0;
    }
    slot = &s->slots[index];
    for (i = 0; i < size; i++) {
        if (slot->mask[(off + i) / 64] & BIT_ULL((off + i) % 64)) {
            v |= (uint64_t)slot->data[off + i] << (8 * i);
        }
    }
    return v;
}

static void cxlt_window_write(CXLTrackState *s, hwaddr addr, uint64_t val,
                              unsigned size)
{
    unsigned index = (addr - CXLT_SLOT) / CXLT_SLOT_STRIDE;
    unsigned off = (addr - CXLT_SLOT) % CXLT_SLOT_STRIDE;
    CXLTSlot *slot;
    unsigned i;

    if (index >= s->num_slots) {
        cxlt_access_error(s, BAD_REG, addr);
        return;
    }
    if ((size != 1 && size != 2 && size != 4 && size != 8) || off % size) {
        cxlt_access_error(s, BAD_WIDTH, addr);
        return;
    }
    slot = &s->slots[index];
    if (slot->state != CXLT_SLOT_STATE_OPEN) {
        cxlt_access_error(s, SLOT_WRITE, addr);
        return;
    }
    for (i = 0; i < size; i++) {
        unsigned b = off + i;

        slot->data[b] = val >> (8 * i);
        if (!(slot->mask[b / 64] & BIT_ULL(b % 64))) {
            slot->mask[b / 64] |= BIT_ULL(b % 64);
            slot->valid++;
        }
    }
    if (cxlt_slot_full(slot) && !slot->full_reported) {
        slot->full_reported = true;
        cxlt_push_event(s, CXLT_EVENT_SLOT_FULL, index, slot->tag);
    }
}

/* ------------------------------------------------------------ commands */

static CXLTResult cxlt_status(uint8_t code)
{
    return (CXLTResult) { .code = code };
}

static bool cxlt_is_harvest(uint8_t op)
{
    return op == CXLT_OP_HARVEST_DIRTY || op == CXLT_OP_HARVEST_ACCESSED ||
           op == CXLT_OP_HARVEST_HOTNESS;
}

/*
 * Alignment and range of a harvest: 0 if fine, else the status. @limit is
 * RESULT's size in pages, which a DMA harvest does not have; it writes
 * @nbytes (at least 8) at bus address @addr instead, which must not wrap
 * 2^64 (CXLT_DMA_ADDR_BITS is 64: any other end fits).
 */
static uint8_t cxlt_harvest_range(CXLTrackState *s, uint64_t start,
                                  uint64_t count, uint64_t limit, bool dma,
                                  uint64_t addr, uint64_t nbytes)
{
    if (start % CXLT_HARVEST_ALIGN_PAGES || count % CXLT_HARVEST_ALIGN_PAGES ||
        (dma && addr % CXLT_DMA_ALIGN)) {
        return CXLT_STATUS_ALIGN;
    }
    if (count == 0 || start > s->pages || count > s->pages - start) {
        return CXLT_STATUS_RANGE;
    }
    if (!dma && count > limit) {
        return CXLT_STATUS_RANGE;
    }
    QEMU_BUILD_BUG_ON(CXLT_DMA_ADDR_BITS != 64);
    if (dma && nbytes - 1 > UINT64_MAX - addr) {
        return CXLT_STATUS_RANGE;
    }
    return CXLT_STATUS_OK;
}

/*
 * Write one piece of a DMA harvest's result; false if the write failed (an
 * address with nothing behind it, bus mastering off, the tracker's own
 * BAR). Nothing but the harvest's own bytes is written.
 */
static bool cxlt_dma_put(CXLTrackState *s, uint64_t addr, const uint8_t *buf,
                         uint64_t len)
{
    return pci_dma_write(PCI_DEVICE(s), addr, buf, len) == MEMTX_OK;
}

/*
 * A dirty or accessed harvest. With @list (only with @dma, docs/spec.md
 * section 5.4) the host gets one record per non-zero 64-page word instead of
 * the bitmap: u64 first page, u64 bits, packed from @addr; the buffer must
 * hold the worst case, one record per word, whatever the bitmap holds.
 */
static CXLTResult cxlt_harvest_bits(CXLTrackState *s, uint64_t *bitmap,
                                    uint64_t start, uint64_t count,
                                    bool clear, bool dma, bool list,
                                    uint64_t addr)
{
    uint64_t miscount = 0;
    uint64_t nbytes = list ? count / 64 * CXLT_DMA_LIST_RECORD_BYTES
                           : count / 8;
    uint8_t code = cxlt_harvest_range(s, start, count,
                                      CXLT_HARVEST_MAX_BITMAP_PAGES, dma, addr,
                                      nbytes);
    uint64_t w, total = 0, done = 0, records = 0;
    uint32_t n = 0;
    bool ok = true;

    QEMU_BUILD_BUG_ON(CXLT_RESULT_SIZE % CXLT_DMA_LIST_RECORD_BYTES);
    if (code) {
        return cxlt_status(code);
    }
    for (w = start / 64; w < (start + count) / 64; w++) {
        uint64_t v = bitmap[w];
        bool last = w + 1 == (start + count) / 64;

        if (clear) {
            bitmap[w] = 0;
        }
        total += ctpop64(v);
        if (list) {
            /* only the words with a bit set; a list of none writes nothing */
            if (v) {
                stq_le_p(s->scratch + n, w * 64);
                stq_le_p(s->scratch + n + 8, v);
                n += CXLT_DMA_LIST_RECORD_BYTES;
                records++;
            }
            if (n && (n == sizeof(s->scratch) || last)) {
                ok &= cxlt_dma_put(s, addr + done, s->scratch, n);
                done += n;
                n = 0;
            }
            continue;
        }
        stq_le_p(s->scratch + n, v);
        n += 8;
        /*
         * A failed piece does not stop the harvest: every step runs, and
         * the range is marked again at the end (the rule all
         * implementations share, so that their tables agree afterwards).
         */
        if (dma && (n == sizeof(s->scratch) || last)) {
            ok &= cxlt_dma_put(s, addr + done, s->scratch, n);
            done += n;
            n = 0;
        }
    }
    if (dma && !ok) {
        /*
         * The host may not have the bits the steps read and cleared: mark
         * the whole range again (docs/spec.md section 5.3, never lose a
         * dirty bit). Every step has run by now.
         */
        if (clear) {
            for (w = start / 64; w < (start + count) / 64; w++) {
                bitmap[w] = UINT64_MAX;
            }
        }
        return cxlt_status(CXLT_STATUS_DMA_ERROR);
    }
    if (s->x_miscount_harvests) {
        s->x_miscount_harvests--;
        miscount = 1;
    }
    if (dma) {
        return (CXLTResult) { .r0 = total + miscount, .r1 = records };
    }
    return (CXLTResult) { .r0 = total + miscount, .window = s->scratch,
                          .window_len = n };
}

static CXLTResult cxlt_harvest_hotness(CXLTrackState *s, uint64_t start,
                                       uint64_t count, bool clear, bool decay,
                                       bool dma, uint64_t addr)
{
    uint8_t code = cxlt_harvest_range(s, start, count,
                                      CXLT_HARVEST_MAX_HOTNESS_PAGES, dma,
                                      addr, count);
    uint64_t i, nonzero = 0, done = 0;
    uint32_t n = 0;
    bool ok = true;

    if (code) {
        return cxlt_status(code);
    }
    for (i = 0; i < count; i++) {
        uint8_t c = s->hot[start + i];

        s->scratch[n++] = c;
        nonzero += c != 0;
        if (clear) {
            s->hot[start + i] = 0;
        } else if (decay) {
            s->hot[start + i] = c >> 1;
        }
        if (dma && (n == sizeof(s->scratch) || i + 1 == count)) {
            ok &= cxlt_dma_put(s, addr + done, s->scratch, n);
            done += n;
            n = 0;
        }
    }
    if (dma && !ok) {
        /* As for the bitmaps: no counter of the range may read 0 now. */
        if (clear || decay) {
            for (i = 0; i < count; i++) {
                s->hot[start + i] = MAX(s->hot[start + i], 1);
            }
        }
        return cxlt_status(CXLT_STATUS_DMA_ERROR);
    }
    if (dma) {
        return (CXLTResult) { .r0 = nonzero };
    }
    return (CXLTResult) { .r0 = nonzero, .window = s->scratch,
                          .window_len = count };
}

static uint64_t cxlt_bat_result1(uint16_t disk, bool valid)
{
    return CXLT_LAYOUT_PUT(BAT_RESULT1, DISK, disk) |
           CXLT_LAYOUT_PUT(BAT_RESULT1, VALID, valid);
}

static CXLTResult cxlt_slot_merge(CXLTrackState *s, uint64_t index,
                                  uint64_t page)
{
    CXLTSlot *slot;
    uint64_t base;
    uint32_t valid;
    unsigned b = 0;

    if (index >= s->num_slots || page >= s->pages) {
        return cxlt_status(CXLT_STATUS_RANGE);
    }
    slot = &s->slots[index];
    if (slot->state != CXLT_SLOT_STATE_OPEN) {
        return cxlt_status(CXLT_STATUS_STATE);
    }
    slot->state = CXLT_SLOT_STATE_MERGING;
    base = page << s->page_shift;
    valid = slot->valid;
    /* Write each run of valid bytes: bytes with a clear mask bit stay. */
    while (b < CXLT_SLOT_SIZE) {
        unsigned e;

        if (!(slot->mask[b / 64] & BIT_ULL(b % 64))) {
            b++;
            continue;
        }
        e = b;
        while (e < CXLT_SLOT_SIZE && (slot->mask[e / 64] & BIT_ULL(e % 64)) &&
               (e == b || e % CXLT_LINE)) {
            e++;
        }
        cxlt_internal_write(s, base + b, slot->data + b, e - b);
        cxlt_write_end(s, page);
        b = e;
    }
    slot->state = CXLT_SLOT_STATE_FREE;
    cxlt_slot_clear(slot);
    cxlt_push_event(s, CXLT_EVENT_MERGE_DONE, index, page);
    return (CXLTResult) { .r0 = valid };
}

static CXLTResult cxlt_slot_query(CXLTrackState *s, uint64_t index)
{
    CXLTSlot *slot;
    int i;

    if (index >= s->num_slots) {
        return cxlt_status(CXLT_STATUS_RANGE);
    }
    slot = &s->slots[index];
    for (i = 0; i < ARRAY_SIZE(slot->mask); i++) {
        stq_le_p(s->scratch + 8 * i, slot->mask[i]);
    }
    return (CXLTResult) {
        .r0 = CXLT_LAYOUT_PUT(SLOT_QUERY_RESULT0, STATE, slot->state) |
              CXLT_LAYOUT_PUT(SLOT_QUERY_RESULT0, FULL, cxlt_slot_full(slot)) |
              CXLT_LAYOUT_PUT(SLOT_QUERY_RESULT0, VALID_BYTES, slot->valid),
        .r1 = slot->tag,
        .window = s->scratch,
        .window_len = sizeof(slot->mask),
    };
}

static bool cxlt_chunk_args(CXLTrackState *s, uint64_t chunk, uint64_t owner)
{
    return chunk < s->num_chunks && owner >= 1 && owner <= CXLT_MAX_OWNER;
}

/* Zero-fill one released chunk with internal writes, then free it. */
static void cxlt_scrub_chunk(CXLTrackState *s, uint32_t index)
{
    static const uint8_t zero[4 * KiB];
    uint64_t per_chunk = 1ULL << (s->chunk_shift - s->page_shift);
    uint64_t page = (uint64_t)index * per_chunk, end = page + per_chunk;
    uint64_t page_size = 1ULL << s->page_shift;
    CXLTChunk *chunk = &s->chunks[index];
    uint16_t owner = chunk->owner;

    for (; page < end; page++) {
        uint64_t off;

        for (off = 0; off < page_size; off += sizeof(zero)) {
            cxlt_internal_write(s, (page << s->page_shift) + off, zero,
                                sizeof(zero));
        }
        cxlt_write_end(s, page);
    }
    chunk->state = CXLT_CHUNK_STATE_FREE;
    chunk->owner = 0;
    cxlt_push_event(s, CXLT_EVENT_SCRUB_DONE, index, owner);
}

/*
 * CHUNK_COPY (docs/spec.md section 7.1): the chunk's bytes from the backing
 * memory to bus address @addr with pci_dma_write(), in pieces of a bounce
 * buffer. The reads go straight to the backing memory, not through the
 * observer: they are not requests, so no dirty, accessed or hotness bit
 * changes (a copy neither hides a write nor makes the tier look hot). A
 * failed piece does not stop the copy (every piece is tried, as the other
 * implementations do); a piece the device cannot read from its own memory
 * counts as failed too, so the host never takes zeros for data.
 */
#define CXLT_COPY_PIECE (64 * KiB)

static CXLTResult cxlt_chunk_copy(CXLTrackState *s, uint64_t index,
                                  uint64_t owner, uint64_t addr)
{
    uint64_t size = 1ULL << s->chunk_shift, base, off;
    uint64_t piece = MIN(size, CXLT_COPY_PIECE);
    CXLTChunk *chunk;
    g_autofree uint8_t *buf = NULL;
    bool ok = true;

    if (addr % CXLT_DMA_ALIGN) {
        return cxlt_status(CXLT_STATUS_ALIGN);
    }
    QEMU_BUILD_BUG_ON(CXLT_DMA_ADDR_BITS != 64);
    if (!cxlt_chunk_args(s, index, owner) || size - 1 > UINT64_MAX - addr) {
        return cxlt_status(CXLT_STATUS_RANGE);
    }
    chunk = &s->chunks[index];
    if (chunk->state != CXLT_CHUNK_STATE_OWNED) {
        return cxlt_status(CXLT_STATUS_STATE);
    }
    if (chunk->owner != owner) {
        return cxlt_status(CXLT_STATUS_PERM);
    }
    buf = g_malloc(piece);
    base = index << s->chunk_shift;
    for (off = 0; off < size; off += piece) {
        if (cxlt_target_rw(s, base + off, buf, piece, false) != MEMTX_OK) {
            qemu_log_mask(LOG_GUEST_ERROR, "cxltrack: CHUNK_COPY could not "
                          "read DPA 0x%" PRIx64 "\n", base + off);
            ok = false;
            continue;
        }
        ok &= cxlt_dma_put(s, addr + off, buf, piece);
    }
    if (!ok) {
        return cxlt_status(CXLT_STATUS_DMA_ERROR);
    }
    return (CXLTResult) { .r0 = size };
}

/* The scrub engine: the oldest released chunk, then again for the next. */
static void cxlt_scrub_bh(void *opaque)
{
    CXLTrackState *s = opaque;
    uint32_t index;

    if (!s->scrub_len) {
        return;
    }
    index = s->scrub_fifo[s->scrub_head];
    s->scrub_head = (s->scrub_head + 1) % s->num_chunks;
    s->scrub_len--;
    cxlt_scrub_chunk(s, index);
    if (s->scrub_len) {
        qemu_bh_schedule(s->scrub_bh);
    }
}

static CXLTResult cxlt_chunk_list(CXLTrackState *s, uint64_t owner)
{
    uint32_t i, count = 0, n = DIV_ROUND_UP(s->num_chunks, 8);

    if (owner > CXLT_MAX_OWNER) {
        return cxlt_status(CXLT_STATUS_RANGE);
    }
    memset(s->scratch, 0, n);
    for (i = 0; i < s->num_chunks; i++) {
        CXLTChunk *c = &s->chunks[i];
        bool hit = owner ? c->state == CXLT_CHUNK_STATE_OWNED &&
                           c->owner == owner
                         : c->state == CXLT_CHUNK_STATE_FREE;

        if (hit) {
            s->scratch[i / 8] |= 1 << (i % 8);
            count++;
        }
    }
    return (CXLTResult) { .r0 = count, .window = s->scratch,
                          .window_len = n };
}

static CXLTResult cxlt_execute(CXLTrackState *s, uint8_t op, bool clear,
                               bool decay, bool dma, bool list, uint32_t rsvd,
                               const uint64_t *arg)
{
    CXLTSlot *slot;
    CXLTChunk *chunk;
    CXLTBat *bat;
    int i;

    /* Checks in spec order: opcode, flags, alignment, ranges, state. */
    if (!CXLT_OP_KNOWN(op)) {   /* the register map's opcode list */
        return cxlt_status(CXLT_STATUS_UNKNOWN_OP);
    }
    if (rsvd || ((clear || decay) && !cxlt_is_harvest(op))) {
        return cxlt_status(CXLT_STATUS_FLAGS);
    }
    if (decay && (op != CXLT_OP_HARVEST_HOTNESS || clear)) {
        return cxlt_status(CXLT_STATUS_FLAGS);
    }
    if (dma && !cxlt_is_harvest(op)) {   /* CAP_DMA.PRESENT is 1 here */
        return cxlt_status(CXLT_STATUS_FLAGS);
    }
    /* LIST: with DMA on the bitmap harvests only (CAP_DMA.LIST is 1 here) */
    if (list && (!dma || (op != CXLT_OP_HARVEST_DIRTY &&
                          op != CXLT_OP_HARVEST_ACCESSED))) {
        return cxlt_status(CXLT_STATUS_FLAGS);
    }
    if (op == CXLT_OP_CHUNK_COPY && !s->chunk_copy) {
        return cxlt_status(CXLT_STATUS_FLAGS);
    }

    switch (op) {
    case CXLT_OP_HARVEST_DIRTY:
        return cxlt_harvest_bits(s, s->dirty, arg[0], arg[1], clear, dma,
                                 list, arg[2]);
    case CXLT_OP_HARVEST_ACCESSED:
        return cxlt_harvest_bits(s, s->accessed, arg[0], arg[1], clear, dma,
                                 list, arg[2]);
    case CXLT_OP_HARVEST_HOTNESS:
        return cxlt_harvest_hotness(s, arg[0], arg[1], clear, decay, dma,
                                    arg[2]);
    case CXLT_OP_BAT_SET:
        if (arg[0] >= s->pages || arg[1] >> s->block_bits ||
            arg[2] >> s->disk_bits) {
            return cxlt_status(CXLT_STATUS_RANGE);
        }
        bat = &s->bat[arg[0]];
        bat->valid = true;
        bat->block = arg[1];
        bat->disk = arg[2];
        return cxlt_status(CXLT_STATUS_OK);
    case CXLT_OP_BAT_GET:
    case CXLT_OP_BAT_DISCARD:
        if (arg[0] >= s->pages) {
            return cxlt_status(CXLT_STATUS_RANGE);
        }
        bat = &s->bat[arg[0]];
        if (!bat->valid) {
            return (CXLTResult) {
                .r1 = op == CXLT_OP_BAT_GET ? cxlt_bat_result1(0, false) : 0,
            };
        }
        if (op == CXLT_OP_BAT_DISCARD) {
            /* Read and clear in one step: no write can come in between. */
            bat->valid = false;
        }
        return (CXLTResult) { .r0 = bat->block,
                              .r1 = cxlt_bat_result1(bat->disk, true) };
    case CXLT_OP_BAT_CLEAR:
        if (arg[0] >= s->pages) {
            return cxlt_status(CXLT_STATUS_RANGE);
        }
        s->bat[arg[0]].valid = false;
        return cxlt_status(CXLT_STATUS_OK);
    case CXLT_OP_SLOT_ALLOC:
        for (i = 0; i < s->num_slots; i++) {
            slot = &s->slots[i];
            if (slot->state == CXLT_SLOT_STATE_FREE) {
                cxlt_slot_clear(slot);
                slot->state = CXLT_SLOT_STATE_OPEN;
                slot->tag = arg[0];
                slot->opened_at = cxlt_now_ticks(s);
                slot->full_reported = false;
                slot->timeout_reported = false;
                cxlt_slot_timer_arm(s);
                return (CXLTResult) { .r0 = i };
            }
        }
        return cxlt_status(CXLT_STATUS_NO_RESOURCE);
    case CXLT_OP_SLOT_MERGE:
        return cxlt_slot_merge(s, arg[0], arg[1]);
    case CXLT_OP_SLOT_RELEASE:
        if (arg[0] >= s->num_slots) {
            return cxlt_status(CXLT_STATUS_RANGE);
        }
        slot = &s->slots[arg[0]];
        if (slot->state != CXLT_SLOT_STATE_OPEN) {
            return cxlt_status(CXLT_STATUS_STATE);
        }
        slot->state = CXLT_SLOT_STATE_FREE;
        cxlt_slot_clear(slot);
        return cxlt_status(CXLT_STATUS_OK);
    case CXLT_OP_SLOT_QUERY:
        return cxlt_slot_query(s, arg[0]);
    case CXLT_OP_CHUNK_ASSIGN:
        if (!cxlt_chunk_args(s, arg[0], arg[1])) {
            return cxlt_status(CXLT_STATUS_RANGE);
        }
        chunk = &s->chunks[arg[0]];
        if (chunk->state != CXLT_CHUNK_STATE_FREE) {
            return cxlt_status(CXLT_STATUS_BUSY);
        }
        chunk->state = CXLT_CHUNK_STATE_OWNED;
        chunk->owner = arg[1];
        return cxlt_status(CXLT_STATUS_OK);
    case CXLT_OP_CHUNK_RELEASE:
        if (!cxlt_chunk_args(s, arg[0], arg[1])) {
            return cxlt_status(CXLT_STATUS_RANGE);
        }
        chunk = &s->chunks[arg[0]];
        if (chunk->state != CXLT_CHUNK_STATE_OWNED) {
            return cxlt_status(CXLT_STATUS_STATE);
        }
        if (chunk->owner != arg[1]) {
            return cxlt_status(CXLT_STATUS_PERM);
        }
        chunk->state = CXLT_CHUNK_STATE_SCRUBBING;
        s->scrub_fifo[(s->scrub_head + s->scrub_len) % s->num_chunks] = arg[0];
        s->scrub_len++;
        return cxlt_status(CXLT_STATUS_OK);
    case CXLT_OP_CHUNK_QUERY:
        if (arg[0] >= s->num_chunks) {
            return cxlt_status(CXLT_STATUS_RANGE);
        }
        chunk = &s->chunks[arg[0]];
        return (CXLTResult) { .r0 = chunk->state, .r1 = chunk->owner };
    case CXLT_OP_CHUNK_LIST:
        return cxlt_chunk_list(s, arg[1]);
    case CXLT_OP_CHUNK_COPY:
        return cxlt_chunk_copy(s, arg[0], arg[1], arg[2]);
    case CXLT_OP_NOP:
    default:
        return cxlt_status(CXLT_STATUS_OK);
    }
}

static void cxlt_launch(CXLTrackState *s, uint32_t val, hwaddr addr)
{
    uint32_t seq;
    CXLTResult r;

    if (s->busy) {
        cxlt_access_error(s, CMD_OVERRUN, addr);
        return;
    }
    s->cmd_op = val;
    seq = (CXLT_GET(CMD_STATUS, SEQ, s->cmd_status) + 1) & 0xffff;
    s->cmd_status = CXLT_CMD_STATUS_BUSY_MASK |
                    (s->cmd_status & CXLT_CMD_STATUS_CODE_MASK) |
                    CXLT_PUT(CMD_STATUS, SEQ, seq);
    s->cmd_result[0] = s->cmd_result[1] = 0;
    s->busy = true;

    r = cxlt_execute(s, CXLT_GET(CMD_OP, OP, val), CXLT_GET(CMD_OP, CLEAR, val),
                     CXLT_GET(CMD_OP, DECAY, val), CXLT_GET(CMD_OP, DMA, val),
                     CXLT_GET(CMD_OP, LIST, val), CXLT_GET(CMD_OP, RSVD, val),
                     s->args);

    s->busy = false;
    s->cmd_status = CXLT_PUT(CMD_STATUS, CODE, r.code) |
                    CXLT_PUT(CMD_STATUS, SEQ, seq);
    s->cmd_result[0] = r.r0;
    s->cmd_result[1] = r.r1;
    if (r.window) {
        memcpy(s->result, r.window, r.window_len);
    }
    s->int_status |= CXLT_INT_STATUS_CMD_DONE_MASK;
    cxlt_update_irq(s, false);
    /* The scrub engine runs after the release completed. */
    if (s->scrub_len) {
        qemu_bh_schedule(s->scrub_bh);
    }
}

/* ----------------------------------------------------------- registers */

static uint64_t cxlt_reg_value(CXLTrackState *s, hwaddr addr, bool *ok)
{
    CXLTEvent *head = s->evq_len ? &s->evq[s->evq_head] : NULL;

    *ok = true;
    if (addr == s->x_ident_offset && addr <= CXLT_CAP_TICK) {
        return s->x_ident_value;
    }
    switch (addr) {
    case CXLT_ID:
        return CXLT_ID_RESET;
    case CXLT_VERSION:
        return CXLT_VERSION_RESET;
    case CXLT_CAP_PAGES_LO:
        return (uint32_t)s->pages;
    case CXLT_CAP_PAGES_HI:
        return s->pages >> 32;
    case CXLT_CAP_GEOM:
        return CXLT_PUT(CAP_GEOM, PAGE_SHIFT, s->page_shift) |
               CXLT_PUT(CAP_GEOM, NUM_SLOTS, s->num_slots) |
               CXLT_PUT(CAP_GEOM, HOT_BITS, s->hot_bits) |
               CXLT_PUT(CAP_GEOM, EVQ_DEPTH_LOG2, s->evq_depth_log2);
    case CXLT_CAP_CHUNK:
        return CXLT_PUT(CAP_CHUNK, CHUNK_SHIFT, s->chunk_shift) |
               CXLT_PUT(CAP_CHUNK, NUM_CHUNKS, s->num_chunks);
    case CXLT_CAP_BAT:
        return CXLT_PUT(CAP_BAT, DISK_BITS, s->disk_bits) |
               CXLT_PUT(CAP_BAT, BLOCK_BITS, s->block_bits);
    case CXLT_CAP_TICK:
        return s->tick_ns;
    case CXLT_CAP_DMA:
        return CXLT_PUT(CAP_DMA, PRESENT, 1) | CXLT_PUT(CAP_DMA, LIST, 1) |
               CXLT_PUT(CAP_DMA, COPY, s->chunk_copy) |
               CXLT_PUT(CAP_DMA, ADDR_BITS, CXLT_DMA_ADDR_BITS);
    case CXLT_CTRL:
        return s->ctrl;
    case CXLT_SLOT_TIMEOUT:
        return s->slot_timeout;
    case CXLT_INT_STATUS:
        return cxlt_int_status(s);
    case CXLT_INT_ENABLE:
        return s->int_enable;
    case CXLT_ERR_STATUS:
        return s->err_status;
    case CXLT_ERR_ADDR:
        return s->err_addr;
    case CXLT_ERR_COUNT:
        return s->err_count;
    case CXLT_CMD_ARG0_LO:
    case CXLT_CMD_ARG1_LO:
    case CXLT_CMD_ARG2_LO:
        return (uint32_t)s->args[(addr - CXLT_CMD_ARG0_LO) / 8];
    case CXLT_CMD_ARG0_HI:
    case CXLT_CMD_ARG1_HI:
    case CXLT_CMD_ARG2_HI:
        return s->args[(addr - CXLT_CMD_ARG0_HI) / 8] >> 32;
    case CXLT_CMD_OP:
        return s->cmd_op;
    case CXLT_CMD_STATUS:
        return s->cmd_status;
    case CXLT_CMD_RESULT0_LO:
        return (uint32_t)s->cmd_result[0];
    case CXLT_CMD_RESULT0_HI:
        return s->cmd_result[0] >> 32;
    case CXLT_CMD_RESULT1_LO:
        return (uint32_t)s->cmd_result[1];
    case CXLT_CMD_RESULT1_HI:
        return s->cmd_result[1] >> 32;
    case CXLT_EVQ_COUNT:
        return s->evq_len;
    case CXLT_EVQ_DROPPED:
        return s->evq_dropped;
    case CXLT_EVT_HEAD0:
        return head ? CXLT_PUT(EVT_HEAD0, TYPE, head->type) |
                      CXLT_PUT(EVT_HEAD0, INDEX, head->index) : 0;
    case CXLT_EVT_HEAD1:
        return head ? head->seq : 0;
    case CXLT_EVT_ARG_LO:
        return head ? (uint32_t)head->arg : 0;
    case CXLT_EVT_ARG_HI:
        return head ? head->arg >> 32 : 0;
    case CXLT_STAT_READS_LO:
        return (uint32_t)s->stat_reads;
    case CXLT_STAT_READS_HI:
        return s->stat_reads >> 32;
    case CXLT_STAT_WRITES_LO:
        return (uint32_t)s->stat_writes;
    case CXLT_STAT_WRITES_HI:
        return s->stat_writes >> 32;
    case CXLT_STAT_DECERR:
        return s->stat_decerr;
    case CXLT_STAT_BAT_INV:
        return s->stat_bat_inv;
    default:
        /* Reserved offsets and the write-only EVQ_POP. */
        *ok = false;
        return 0;
    }
}

static bool cxlt_in_slots(hwaddr addr)
{
    return addr >= CXLT_SLOT &&
           addr < CXLT_SLOT + CXLT_SLOT_COUNT * CXLT_SLOT_STRIDE;
}

static bool cxlt_in_result(hwaddr addr)
{
    return addr >= CXLT_RESULT && addr < CXLT_RESULT + CXLT_RESULT_SIZE;
}

static uint64_t cxlt_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    CXLTrackState *s = opaque;
    uint64_t v;
    bool ok;

    if (cxlt_in_slots(addr)) {
        return cxlt_window_read(s, addr, size);
    }
    if (cxlt_in_result(addr)) {
        if ((size != 4 && size != 8) || addr % size) {
            cxlt_access_error(s, BAD_WIDTH, addr);
            return 0;
        }
        return ldn_le_p(s->result + (addr - CXLT_RESULT), size);
    }
    /* Decode (by 32-bit word) first, then direction, then width. */
    v = cxlt_reg_value(s, addr & ~3ULL, &ok);
    if (!ok) {
        cxlt_access_error(s, BAD_REG, addr);
        return 0;
    }
    if (size != 4 || addr % 4) {
        cxlt_access_error(s, BAD_WIDTH, addr);
        return 0;
    }
    return v;
}

static void cxlt_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    CXLTrackState *s = opaque;
    uint32_t v = val;

    if (cxlt_in_slots(addr)) {
        cxlt_window_write(s, addr, val, size);
        return;
    }
    if (cxlt_in_result(addr)) {
        cxlt_access_error(s, BAD_REG, addr);
        return;
    }
    if (!CXLT_REG_WRITABLE(addr & ~3ULL)) {   /* the register map's table */
        /* Read-only registers and reserved offsets. */
        cxlt_access_error(s, BAD_REG, addr);
        return;
    }
    if (size != 4 || addr % 4) {
        cxlt_access_error(s, BAD_WIDTH, addr);
        return;
    }

    /* Write and write-1-to-clear masks: the register map's. */
    switch (addr) {
    case CXLT_CTRL:
        s->ctrl = v & CXLT_CTRL_WRITE_MASK;
        cxlt_update_irq(s, false);
        break;
    case CXLT_SLOT_TIMEOUT:
        s->slot_timeout = v & CXLT_SLOT_TIMEOUT_WRITE_MASK;
        cxlt_update_irq(s, false);
        cxlt_slot_timer_arm(s);
        break;
    case CXLT_INT_ENABLE:
        s->int_enable = v & CXLT_INT_ENABLE_WRITE_MASK;
        cxlt_update_irq(s, true);
        break;
    case CXLT_INT_STATUS:
        s->int_status &= ~(v & CXLT_INT_STATUS_W1C_MASK);
        cxlt_update_irq(s, true);
        break;
    case CXLT_ERR_STATUS:
        s->err_status &= ~(v & CXLT_ERR_STATUS_W1C_MASK);
        break;
    case CXLT_EVQ_POP:
        if (v & CXLT_EVQ_POP_POP_MASK) {
            cxlt_pop_event(s);
            cxlt_update_irq(s, false);
        }
        break;
    case CXLT_CMD_ARG0_LO:
    case CXLT_CMD_ARG1_LO:
    case CXLT_CMD_ARG2_LO:
        s->args[(addr - CXLT_CMD_ARG0_LO) / 8] =
            deposit64(s->args[(addr - CXLT_CMD_ARG0_LO) / 8], 0, 32, v);
        break;
    case CXLT_CMD_ARG0_HI:
    case CXLT_CMD_ARG1_HI:
    case CXLT_CMD_ARG2_HI:
        s->args[(addr - CXLT_CMD_ARG0_HI) / 8] =
            deposit64(s->args[(addr - CXLT_CMD_ARG0_HI) / 8], 32, 32, v);
        break;
    case CXLT_CMD_OP:
        cxlt_launch(s, v, addr);
        break;
    default:
        /* Not writable: answered above. */
        break;
    }
}

static const MemoryRegionOps cxlt_mmio_ops = {
    .read = cxlt_mmio_read,
    .write = cxlt_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    /* Every width and alignment reaches the device: it judges them. */
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

/* --------------------------------------------------------------- reset */

static void cxlt_reset_state(CXLTrackState *s)
{
    int i;

    memset(s->dirty, 0, DIV_ROUND_UP(s->pages, 64) * sizeof(uint64_t));
    memset(s->accessed, 0, DIV_ROUND_UP(s->pages, 64) * sizeof(uint64_t));
    memset(s->hot, 0, s->pages);
    memset(s->bat, 0, s->pages * sizeof(CXLTBat));
    for (i = 0; i < CXLT_SLOT_COUNT; i++) {
        s->slots[i].state = CXLT_SLOT_STATE_FREE;
        s->slots[i].tag = 0;
        s->slots[i].opened_at = 0;
        s->slots[i].full_reported = false;
        s->slots[i].timeout_reported = false;
        cxlt_slot_clear(&s->slots[i]);
    }
    memset(s->chunks, 0, s->num_chunks * sizeof(CXLTChunk));
    s->scrub_head = s->scrub_len = 0;
    s->evq_head = s->evq_len = s->evq_seq = s->evq_dropped = 0;

    s->ctrl = CXLT_CTRL_RESET;
    s->slot_timeout = CXLT_SLOT_TIMEOUT_RESET;
    s->int_status = CXLT_INT_STATUS_RESET;
    s->int_enable = CXLT_INT_ENABLE_RESET;
    s->err_status = CXLT_ERR_STATUS_RESET;
    s->err_addr = CXLT_ERR_ADDR_RESET;
    s->err_count = CXLT_ERR_COUNT_RESET;
    s->args[0] = s->args[1] = s->args[2] = 0;
    s->cmd_op = CXLT_CMD_OP_RESET;
    s->cmd_status = CXLT_CMD_STATUS_RESET;
    s->cmd_result[0] = s->cmd_result[1] = 0;
    memset(s->result, 0, sizeof(s->result));
    s->stat_reads = s->stat_writes = 0;
    s->stat_decerr = s->stat_bat_inv = 0;
    s->busy = false;
    s->irq_line = false;
    s->msi_count = 0;
    s->epoch_ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    timer_del(s->slot_timer);
}

static void cxlt_reset(DeviceState *dev)
{
    CXLTrackState *s = CXLTRACK(dev);

    /* what a driver left enabled when the function was reset (for tests) */
    s->int_enable_at_reset = s->int_enable;
    cxlt_reset_state(s);
}

/* ------------------------------------------------------------- realize */

static bool cxlt_check_config(CXLTrackState *s, Error **errp)
{
    uint64_t static_cap = cxlt_target_size(s);

    const struct {
        const char *name;
        uint64_t value, min, max;
    } ranges[] = {
        { "page-shift", s->page_shift,
          CXLT_CFG_PAGE_SHIFT_MIN, CXLT_CFG_PAGE_SHIFT_MAX },
        { "slots", s->num_slots, CXLT_CFG_SLOTS_MIN, CXLT_CFG_SLOTS_MAX },
        { "hot-bits", s->hot_bits,
          CXLT_CFG_HOT_BITS_MIN, CXLT_CFG_HOT_BITS_MAX },
        { "evq-depth-log2", s->evq_depth_log2,
          CXLT_CFG_EVQ_DEPTH_LOG2_MIN, CXLT_CFG_EVQ_DEPTH_LOG2_MAX },
        { "chunk-shift", s->chunk_shift,
          CXLT_CFG_CHUNK_SHIFT_MIN, CXLT_CFG_CHUNK_SHIFT_MAX },
        { "disk-bits", s->disk_bits,
          CXLT_CFG_BAT_DISK_BITS_MIN, CXLT_CFG_BAT_DISK_BITS_MAX },
        { "block-bits", s->block_bits,
          CXLT_CFG_BAT_BLOCK_BITS_MIN, CXLT_CFG_BAT_BLOCK_BITS_MAX },
        { "tick-ns", s->tick_ns, CXLT_CFG_TICK_NS_MIN, CXLT_CFG_TICK_NS_MAX },
    };

    /* the legal ranges are the register map's (regmap/cxltrack.rdl) */
    for (size_t i = 0; i < ARRAY_SIZE(ranges); i++) {
        uint64_t v = ranges[i].value;

        if (v < ranges[i].min || v > ranges[i].max) {
            error_setg(errp, "%s must be %" PRIu64 "..%" PRIu64,
                       ranges[i].name, ranges[i].min, ranges[i].max);
            return false;
        }
    }
    if (s->chunk_shift < s->page_shift) {
        error_setg(errp, "chunk-shift must not be below page-shift");
        return false;
    }
    if (!s->capacity) {
        s->capacity = static_cap;
    }
    if (!s->capacity || s->capacity > static_cap) {
        error_setg(errp, "capacity 0x%" PRIx64 " must be 1..0x%" PRIx64
                   " (the memory of function 0)",
                   s->capacity, static_cap);
        return false;
    }
    if (s->capacity % (64ULL << s->page_shift) ||
        s->capacity % (1ULL << s->chunk_shift)) {
        error_setg(errp, "capacity must be a multiple of 64 pages and of "
                   "the chunk size");
        return false;
    }
    if ((s->capacity >> s->chunk_shift) > CXLT_MAX_CHUNKS) {
        error_setg(errp, "at most %d chunks", CXLT_MAX_CHUNKS);
        return false;
    }
    if ((s->capacity >> s->page_shift) > (1ULL << 28)) {
        error_setg(errp, "at most 2^28 tracked pages");
        return false;
    }
    return true;
}

static void cxlt_realize(PCIDevice *pdev, Error **errp)
{
    CXLTrackState *s = CXLTRACK(pdev);
    uint64_t words;

    if (!s->target) {
        /*
         * By default, track function 0 of this slot: a cxl-type3, or the
         * memory window of the PCIe-attached flavour.
         */
        PCIDevice *fn0 = pci_get_function_0(pdev);

        if (fn0 && fn0 != pdev &&
            object_dynamic_cast(OBJECT(fn0), TYPE_CXL_TYPE3)) {
            s->target = CXL_TYPE3(fn0);
        } else if (fn0 && fn0 != pdev &&
                   object_dynamic_cast(OBJECT(fn0), TYPE_CXLTRACK_MEM)) {
            s->bar_target = CXLTRACK_MEM(fn0);
        } else {
            error_setg(errp, "no 'target' given and function 0 of this slot "
                       "is neither a cxl-type3 nor a " TYPE_CXLTRACK_MEM);
            return;
        }
        object_ref(OBJECT(fn0)); /* as the link property would */
    }
    /*
     * The tracker keeps a pointer to its memory and scrubs it from a bottom
     * half: a target in another slot could be unplugged under it. In one
     * slot, unplugging function 0 unplugs the tracker with it.
     */
    if (s->target && PCI_DEVICE(s->target) != pci_get_function_0(pdev)) {
        error_setg(errp, "target must be function 0 of the tracker's slot: "
                   "a device in another slot could be unplugged under it");
        return;
    }
    /*
     * Dynamic capacity lies beyond the static capacity in DPA order, outside
     * the tracked range: every access to it would be a decode error
     * (spec 2.1). Say so now rather than fail the guest's accesses.
     */
    if (s->target && s->target->dc.num_regions) {
        error_setg(errp, "target has dynamic capacity, which the tracker does"
                   " not cover (it tracks the volatile and persistent"
                   " capacity): use a target without DC regions");
        return;
    }
    if (*cxlt_target_observer(s)) {
        error_setg(errp, "function 0 is already tracked");
        return;
    }
    if (!cxlt_check_config(s, errp)) {
        return;
    }
    s->pages = s->capacity >> s->page_shift;
    s->num_chunks = s->capacity >> s->chunk_shift;
    s->hot_max = (1u << s->hot_bits) - 1;
    s->evq_depth = 1u << s->evq_depth_log2;

    words = DIV_ROUND_UP(s->pages, 64);
    s->dirty = g_try_new0(uint64_t, words);
    s->accessed = g_try_new0(uint64_t, words);
    s->hot = g_try_malloc0(s->pages);
    s->bat = g_try_new0(CXLTBat, s->pages);
    s->chunks = g_new0(CXLTChunk, s->num_chunks);
    s->scrub_fifo = g_new0(uint32_t, s->num_chunks);
    s->evq = g_new0(CXLTEvent, s->evq_depth);
    if (!s->dirty || !s->accessed || !s->hot || !s->bat) {
        error_setg(errp, "cannot allocate tracking tables for %" PRIu64
                   " pages", s->pages);
        goto fail;
    }

    pdev->config[PCI_INTERRUPT_PIN] = 0;
    memory_region_init_io(&s->bar, OBJECT(s), &cxlt_mmio_ops, s,
                          "cxltrack-regs", CXLT_BAR_SIZE);
    pci_register_bar(pdev, CXLT_BAR, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->bar);
    if (msix_init_exclusive_bar(pdev, CXLT_MSIX_VECTORS, CXLT_MSIX_BAR,
                                errp)) {
        goto fail;
    }
    msix_vector_use(pdev, 0);
    if (pcie_endpoint_cap_init(pdev, CXLT_PCIE_CAP) < 0) {
        error_setg(errp, "cannot add the PCIe capability");
        msix_uninit_exclusive_bar(pdev);
        goto fail;
    }
    pcie_cap_flr_init(pdev);

    s->slot_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, cxlt_slot_timer_cb, s);
    s->scrub_bh = qemu_bh_new_guarded(cxlt_scrub_bh, s,
                                      &DEVICE(s)->mem_reentrancy_guard);
    s->observer.request = cxlt_observe_request;
    s->observer.written = cxlt_observe_written;
    *cxlt_target_observer(s) = &s->observer;
    cxlt_reset_state(s);
    return;

fail:
    g_free(s->dirty);
    g_free(s->accessed);
    g_free(s->hot);
    g_free(s->bat);
    g_free(s->chunks);
    g_free(s->scrub_fifo);
    g_free(s->evq);
    s->dirty = s->accessed = NULL;
    s->hot = NULL;
    s->bat = NULL;
    s->chunks = NULL;
    s->scrub_fifo = NULL;
    s->evq = NULL;
}

static void cxlt_exit(PCIDevice *pdev)
{
    CXLTrackState *s = CXLTRACK(pdev);

    if ((s->target || s->bar_target) &&
        *cxlt_target_observer(s) == &s->observer) {
        *cxlt_target_observer(s) = NULL;
    }
    timer_free(s->slot_timer);
    qemu_bh_delete(s->scrub_bh);
    msix_vector_unuse(pdev, 0);
    msix_uninit_exclusive_bar(pdev);
    pcie_cap_exit(pdev);
    g_free(s->dirty);
    g_free(s->accessed);
    g_free(s->hot);
    g_free(s->bat);
    g_free(s->chunks);
    g_free(s->scrub_fifo);
    g_free(s->evq);
}

static void cxlt_config_write(PCIDevice *pdev, uint32_t addr, uint32_t val,
                              int len)
{
    pci_default_write_config(pdev, addr, val, len);
    pcie_cap_flr_write_config(pdev, addr, val, len);
}

static void cxlt_instance_init(Object *obj)
{
    CXLTrackState *s = CXLTRACK(obj);

    /* How often vector 0 was signalled since reset (for tests). */
    object_property_add_uint32_ptr(obj, "msi-count", &s->msi_count,
                                   OBJ_PROP_FLAG_READ);
    /* INT_ENABLE just before the last reset: a driver quiesces first. */
    object_property_add_uint32_ptr(obj, "int-enable-at-reset",
                                   &s->int_enable_at_reset,
                                   OBJ_PROP_FLAG_READ);
    /*
     * Unstable, for the driver's tests: the next N dirty/accessed harvests
     * do all they should (CLEAR included) but report one more set page in
     * RESULT0 than the window holds, the answer of a faulty device that the
     * driver must turn into -EIO with every page of the command set.
     */
    object_property_add_uint32_ptr(obj, "x-miscount-harvests",
                                   &s->x_miscount_harvests,
                                   OBJ_PROP_FLAG_READWRITE);
    /*
     * Unstable, for the driver's tests: the next N events are each preceded
     * by a record of an undefined type, which the driver must drop without
     * flagging a gap in the sequence on the record after it.
     */
    object_property_add_uint32_ptr(obj, "x-bad-events", &s->x_bad_events,
                                   OBJ_PROP_FLAG_READWRITE);
    /*
     * Unstable, for the driver's tests: the identification register at
     * offset x-ident-offset (ID to CAP_TICK; none by default) reads as
     * x-ident-value, as a device of another version or a broken one would
     * show itself to a probe. Nothing else changes.
     */
    s->x_ident_offset = UINT32_MAX;
    object_property_add_uint32_ptr(obj, "x-ident-offset", &s->x_ident_offset,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint32_ptr(obj, "x-ident-value", &s->x_ident_value,
                                   OBJ_PROP_FLAG_READWRITE);
}

static const VMStateDescription vmstate_cxlt = {
    .name = TYPE_CXLTRACK,
    .unmigratable = 1,
};

static const Property cxlt_props[] = {
    DEFINE_PROP_LINK("target", CXLTrackState, target, TYPE_CXL_TYPE3,
                     CXLType3Dev *),
    DEFINE_PROP_SIZE("capacity", CXLTrackState, capacity, 0),
    DEFINE_PROP_UINT8("page-shift", CXLTrackState, page_shift, 12),
    DEFINE_PROP_UINT8("slots", CXLTrackState, num_slots, 8),
    DEFINE_PROP_UINT8("hot-bits", CXLTrackState, hot_bits, 8),
    DEFINE_PROP_UINT8("evq-depth-log2", CXLTrackState, evq_depth_log2, 6),
    DEFINE_PROP_UINT8("chunk-shift", CXLTrackState, chunk_shift, 21),
    DEFINE_PROP_UINT8("disk-bits", CXLTrackState, disk_bits, 8),
    DEFINE_PROP_UINT8("block-bits", CXLTrackState, block_bits, 40),
    DEFINE_PROP_UINT32("tick-ns", CXLTrackState, tick_ns, 1000),
    /* Off: a 1.3 device without the copy engine (CAP_DMA.COPY 0) */
    DEFINE_PROP_BOOL("chunk-copy", CXLTrackState, chunk_copy, true),
};

static void cxlt_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);

    pc->realize = cxlt_realize;
    pc->exit = cxlt_exit;
    pc->config_write = cxlt_config_write;
    pc->vendor_id = CXLT_PCI_VENDOR_ID;
    pc->device_id = CXLT_PCI_DEVICE_ID;
    pc->revision = 1;
    pc->class_id = PCI_CLASS_MEMORY_OTHER;
    dc->desc = "cxltrack page tracker (function 1 beside the memory)";
    dc->vmsd = &vmstate_cxlt;
    device_class_set_legacy_reset(dc, cxlt_reset);
    device_class_set_props(dc, cxlt_props);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo cxlt_info = {
    .name = TYPE_CXLTRACK,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(CXLTrackState),
    .instance_init = cxlt_instance_init,
    .class_init = cxlt_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

/* ---------------------------------------------- cxltrack-mem (function 0) */

/*
 * A request to the memory window. Offsets beyond the tracked capacity are
 * decode errors for the tracker (read zero, write dropped, STAT_DECERR) and
 * still complete normally on PCIe (spec section 10).
 */
static MemTxResult cxlt_mem_read(void *opaque, hwaddr addr, uint64_t *data,
                                 unsigned size, MemTxAttrs attrs)
{
    CXLTrackMemState *m = opaque;
    uint64_t bytes = 0;

    *data = 0;
    if (m->observer &&
        !m->observer->request(m->observer, addr, size, false)) {
        return MEMTX_OK;
    }
    if (cxlt_mem_dpa_rw(m, addr, &bytes, size, false) == MEMTX_OK) {
        *data = ldn_le_p(&bytes, size);
    }
    return MEMTX_OK;
}

static MemTxResult cxlt_mem_write(void *opaque, hwaddr addr, uint64_t data,
                                  unsigned size, MemTxAttrs attrs)
{
    CXLTrackMemState *m = opaque;
    uint64_t bytes = 0;

    if (m->observer &&
        !m->observer->request(m->observer, addr, size, true)) {
        return MEMTX_OK;
    }
    stn_le_p(&bytes, size, data);
    if (cxlt_mem_dpa_rw(m, addr, &bytes, size, true) == MEMTX_OK &&
        m->observer) {
        m->observer->written(m->observer, addr, size, false);
    }
    return MEMTX_OK;
}

static const MemoryRegionOps cxlt_mem_ops = {
    .read_with_attrs = cxlt_mem_read,
    .write_with_attrs = cxlt_mem_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

static void cxlt_mem_realize(PCIDevice *pdev, Error **errp)
{
    CXLTrackMemState *m = CXLTRACK_MEM(pdev);
    uint64_t size;

    if (!m->memdev) {
        error_setg(errp, "'memdev' property is not set");
        return;
    }
    if (host_memory_backend_is_mapped(m->memdev)) {
        error_setg(errp, "memory backend %s is already in use",
                   object_get_canonical_path_component(OBJECT(m->memdev)));
        return;
    }
    size = cxlt_mem_size(m);
    if (!size || !memory_region_get_ram_ptr(
            host_memory_backend_get_memory(m->memdev))) {
        error_setg(errp, "the memory backend has no RAM");
        return;
    }
    pdev->config[PCI_INTERRUPT_PIN] = 0;
    /* A power of two, at least the memory: the BAR covers it all. */
    memory_region_init_io(&m->bar, OBJECT(m), &cxlt_mem_ops, m,
                          "cxltrack-mem-window", pow2ceil(size));
    pci_register_bar(pdev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &m->bar);
    if (pcie_endpoint_cap_init(pdev, CXLT_PCIE_CAP) < 0) {
        error_setg(errp, "cannot add the PCIe capability");
        return;
    }
    host_memory_backend_set_mapped(m->memdev, true);
}

static void cxlt_mem_exit(PCIDevice *pdev)
{
    CXLTrackMemState *m = CXLTRACK_MEM(pdev);

    pcie_cap_exit(pdev);
    host_memory_backend_set_mapped(m->memdev, false);
}

static const VMStateDescription vmstate_cxlt_mem = {
    .name = TYPE_CXLTRACK_MEM,
    .unmigratable = 1,
};

static const Property cxlt_mem_props[] = {
    DEFINE_PROP_LINK("memdev", CXLTrackMemState, memdev, TYPE_MEMORY_BACKEND,
                     HostMemoryBackend *),
};

static void cxlt_mem_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);

    pc->realize = cxlt_mem_realize;
    pc->exit = cxlt_mem_exit;
    pc->vendor_id = CXLT_PCI_VENDOR_ID;
    pc->device_id = CXLT_PCI_MEM_DEVICE_ID;
    pc->revision = 1;
    pc->class_id = PCI_CLASS_MEMORY_RAM;
    dc->desc = "cxltrack PCIe memory window (function 0, no CXL)";
    dc->vmsd = &vmstate_cxlt_mem;
    device_class_set_props(dc, cxlt_mem_props);
    set_bit(DEVICE_CATEGORY_STORAGE, dc->categories);
}

static const TypeInfo cxlt_mem_info = {
    .name = TYPE_CXLTRACK_MEM,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(CXLTrackMemState),
    .class_init = cxlt_mem_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void cxlt_register_types(void)
{
    type_register_static(&cxlt_info);
    type_register_static(&cxlt_mem_info);
}

type_init(cxlt_register_types)
