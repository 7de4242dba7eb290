/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pagemap.h: the physical address behind a virtual one, from an open
 * /proc/PID/pagemap (Documentation/admin-guide/mm/pagemap.rst: bit 63
 * present, bits 0-54 the PFN; the PFN reads as 0 without CAP_SYS_ADMIN).
 */
#ifndef CXLT_PAGEMAP_H
#define CXLT_PAGEMAP_H

#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#define PAGEMAP_PAGE 4096ULL

/* 1 and *pa set: present with a PFN; 0: not present (or PFN hidden); -1: read failed. */
static inline int pagemap_pa(int fd, uint64_t va, uint64_t *pa)
{
	uint64_t ent, pfn;

	if (pread(fd, &ent, sizeof(ent), (off_t)(va / PAGEMAP_PAGE * 8)) != sizeof(ent))
		return -1;
	pfn = ent & ((1ULL << 55) - 1);
	if (!(ent >> 63) || !pfn)
		return 0;
	*pa = pfn * PAGEMAP_PAGE;
	return 1;
}

#endif
