/* SPDX-License-Identifier: Apache-2.0 */
/* wp-log: a dirty log by write protection (see wp-log.c). */
#ifndef CXLTRACK_DEMO_WP_LOG_H
#define CXLTRACK_DEMO_WP_LOG_H

#include <stdatomic.h>
#include <stdint.h>

struct wp_log {
	volatile uint8_t *base;
	uint64_t pages;
	uint64_t page_size;
	_Atomic uint64_t *bits;		/* pages written since the last take */
	atomic_ullong faults;		/* write-protect faults taken */
};

/* Write-protect [base, base + pages * page_size) and start logging; 0 or -errno. */
int wp_log_start(struct wp_log *l, volatile uint8_t *base, uint64_t pages, uint64_t page_size);
/* The pages written since the last take into bitmap (bit p % 8 of byte p / 8), clear them
 * and write-protect those pages again; *nr = how many. 0 or -errno. */
int wp_log_take(struct wp_log *l, uint8_t *bitmap, uint64_t *nr);
/* Make the range writable again and stop logging. */
void wp_log_stop(struct wp_log *l);

#endif
