/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcxltrack: a thin C library over /dev/cxltrackN (the cxltrack driver's
 * uapi, <linux/cxltrack.h>). Every function returns 0 (or a documented
 * non-negative value) on success and a negative errno on failure; errno is
 * left as the kernel set it. cxltrack_strerror() names an error.
 */
#ifndef LIBCXLTRACK_H
#define LIBCXLTRACK_H

#include <stddef.h>
#include <stdint.h>
#include <linux/cxltrack.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cxltrack {
	int fd;
	char path[64];
	struct cxlt_info info;
};

/* Open /dev/cxltrackN (path NULL: /dev/cxltrack0) and read its info. */
int cxltrack_open(const char *path, struct cxltrack **out);
void cxltrack_close(struct cxltrack *t);
const char *cxltrack_strerror(int err);

/* Bytes a harvest of count pages produces. */
size_t cxltrack_harvest_bytes(unsigned int kind, uint64_t count);
/*
 * One CXLT_IOC_HARVEST: *done pages from start on are in buf (fewer than
 * count when a signal or a fault cut it short; with CLEAR the rest were not
 * cleared). On -EIO *done and buf are valid too.
 */
int cxltrack_harvest_part(struct cxltrack *t, unsigned int kind, uint64_t start,
			  uint64_t count, unsigned int flags, void *buf, size_t len,
			  uint64_t *nr_set, uint64_t *done);
/*
 * Every page of [start, start + count): continues short results. On an
 * error after some pages, buf holds those pages (with CLEAR: they were
 * cleared); callers that must account for them use cxltrack_harvest_part().
 */
int cxltrack_harvest(struct cxltrack *t, unsigned int kind, uint64_t start,
		     uint64_t count, unsigned int flags, void *buf, size_t len,
		     uint64_t *nr_set);

int cxltrack_bat_set(struct cxltrack *t, uint64_t page, uint64_t block, uint32_t disk);
/* get/discard: return 1 (valid/clean, block+disk filled) or 0. */
int cxltrack_bat_get(struct cxltrack *t, uint64_t page, uint64_t *block, uint32_t *disk);
int cxltrack_bat_clear(struct cxltrack *t, uint64_t page);
int cxltrack_bat_discard(struct cxltrack *t, uint64_t page, uint64_t *block, uint32_t *disk);

/* Returns the slot index. */
int cxltrack_slot_alloc(struct cxltrack *t, uint64_t tag, unsigned int flags);
int cxltrack_slot_write(struct cxltrack *t, unsigned int slot, unsigned int offset,
			const void *buf, unsigned int len);
int cxltrack_slot_merge(struct cxltrack *t, unsigned int slot, uint64_t page,
			uint64_t *valid_bytes);
int cxltrack_slot_release(struct cxltrack *t, unsigned int slot);
/* mask: NULL or 512 bytes. */
int cxltrack_slot_query(struct cxltrack *t, unsigned int slot,
			struct cxlt_slot_query *q, uint8_t *mask);

/*
 * The chunk is bound to @t: released when @t is closed, unless assigned with
 * CXLT_CHUNK_F_DETACH (then it stays until an administrator releases it).
 */
int cxltrack_chunk_assign(struct cxltrack *t, unsigned int chunk, unsigned int owner);
int cxltrack_chunk_assign_flags(struct cxltrack *t, unsigned int chunk, unsigned int owner,
				unsigned int flags);
int cxltrack_chunk_release(struct cxltrack *t, unsigned int chunk, unsigned int owner);
/* state/owner out. */
int cxltrack_chunk_query(struct cxltrack *t, unsigned int chunk,
			 unsigned int *state, unsigned int *owner);
int cxltrack_chunk_list(struct cxltrack *t, unsigned int owner, uint8_t *bitmap,
			size_t len, uint64_t *count);
/*
 * The device copies the chunk by DMA (spec 7.1) into @buf (@len >= the chunk
 * size; that many bytes are written). -EOPNOTSUPP: no copy engine (info.chunk_copy 0).
 */
int cxltrack_chunk_copy(struct cxltrack *t, unsigned int chunk, unsigned int owner,
			void *buf, size_t len);

int cxltrack_stats(struct cxltrack *t, struct cxlt_stats *s);
/* The device page that @addr (a page of this process, e.g. of a dax mapping) maps. */
int cxltrack_addr_page(struct cxltrack *t, const volatile void *addr, uint64_t *page);
/*
 * Associate the device pages behind @count pages of the caller's mappings
 * with disk blocks (CXLT_IOC_BAT_SET_ADDRS, in batches of at most
 * CXLT_BAT_ADDRS_MAX). *done: entries set, also when an error stopped it
 * (the entry at *done failed).
 */
int cxltrack_bat_set_addrs(struct cxltrack *t, const struct cxlt_bat_addr *entries,
			   size_t count, size_t *done);
int cxltrack_ctrl(struct cxltrack *t, struct cxlt_ctrl *c);

/*
 * Wait up to timeout_ms (-1: forever, 0: no wait) for events; return the
 * number of records read into ev (0 on timeout).
 */
int cxltrack_events(struct cxltrack *t, struct cxlt_event *ev, int max, int timeout_ms);
const char *cxltrack_event_name(unsigned int type);
/* Which events this handle gets: CXLT_EVENTS_OWN (default) or _ALL (CAP_SYS_ADMIN). */
int cxltrack_event_scope(struct cxltrack *t, unsigned int scope);
/*
 * This file's own view of CXLT_HARVEST_DIRTY or _ACCESSED bits over [start, start + count)
 * (CXLT_IOC_VIEW): its harvests with CLEAR take no other consumer's bits and need no
 * capability. Closing the file closes it too.
 */
int cxltrack_view_open(struct cxltrack *t, unsigned int kind, uint64_t start, uint64_t count);
int cxltrack_view_close(struct cxltrack *t, unsigned int kind);
/* Grant this handle's file the pages [start, start + count) (CXLT_IOC_GRANT, CAP_SYS_ADMIN). */
int cxltrack_grant(struct cxltrack *t, unsigned int op, uint64_t start, uint64_t count);

/* Raw register access (module parameter allow_raw=1, CAP_SYS_RAWIO). */
int cxltrack_raw(struct cxltrack *t, unsigned int op, unsigned int offset,
		 unsigned int size, uint64_t *value);

/*
 * A devdax device of a 1-way region of the tracked memdev, mapped: DPA
 * translation per spec section 10 (DPA = HPA - region start + dpa_base).
 */
struct cxltrack_dax {
	int fd;
	volatile uint8_t *map;
	size_t len;
	uint64_t dpa_base;	/* DPA of byte 0 of the mapping */
};

int cxltrack_dax_open(const char *dev, size_t len, struct cxltrack_dax *d);
void cxltrack_dax_close(struct cxltrack_dax *d);
/* Pointer to DPA dpa, or NULL when outside the mapping. */
volatile uint8_t *cxltrack_dax_ptr(struct cxltrack_dax *d, uint64_t dpa, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* LIBCXLTRACK_H */
