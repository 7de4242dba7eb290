/* SPDX-License-Identifier: Apache-2.0 */
/*
 * numa.h: what the guest tools share without libnuma: binding memory to a
 * NUMA node with the raw mbind(2) system call, and a xorshift64 generator.
 */
#ifndef CXLT_NUMA_H
#define CXLT_NUMA_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CXLT_MPOL_BIND 2
#define CXLT_MPOL_MF_STRICT (1 << 0)
#define CXLT_MPOL_MF_MOVE (1 << 1)
#define CXLT_MAX_NODES 1024

/* mbind(addr, len, MPOL_BIND to @node, @flags); 0, or -1 with errno (EINVAL: no node 0..1023). */
static inline int bind_to_node(void *addr, size_t len, int node, unsigned int flags)
{
	unsigned long mask[CXLT_MAX_NODES / 64] = { 0 };

	if (node < 0 || node >= CXLT_MAX_NODES) {
		errno = EINVAL;
		return -1;
	}
	mask[node / 64] |= 1UL << (node % 64);
	return (int)syscall(SYS_mbind, addr, len, CXLT_MPOL_BIND, mask, CXLT_MAX_NODES, flags);
}

/* Marsaglia's xorshift64: the next of the sequence *x (never 0 from a non-zero seed). */
static inline uint64_t xorshift64(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

#endif
