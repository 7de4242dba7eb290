// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-shmfill: fault in every page of a tmpfs file on one NUMA node, in the caller's memory
 * cgroup (the stock baseline's device node, issue 13 item 4).
 *
 *   cxlt-shmfill PATH SIZE NODE
 *
 * Creates PATH (on tmpfs) of SIZE bytes, binds a shared mapping of it to NUMA node NODE and
 * writes the first byte of every page. Shared memory stays charged to the memory cgroup that
 * faulted it in, also after a swap-out and the swap-in that follows (the swap entry keeps its
 * cgroup), so a VM whose RAM maps PATH has that RAM, and nothing else of it, under the
 * cgroup's memory.max. Prints "ok shmfill pages=N".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "numa.h"

#define PAGE 4096UL

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s PATH SIZE NODE\n", argv[0]);
		return 2;
	}
	uint64_t size = strtoull(argv[2], NULL, 0);
	int node = atoi(argv[3]);

	if (!size || size % PAGE || node < 0 || node >= 64) {
		fprintf(stderr, "SIZE a non-zero multiple of 4096, NODE 0..63\n");
		return 2;
	}
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || ftruncate(fd, (off_t)size)) {
		perror(argv[1]);
		return 2;
	}
	volatile uint8_t *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (m == MAP_FAILED || bind_to_node((void *)m, size, node, 0)) {
		perror("mmap/mbind");
		return 2;
	}
	for (uint64_t off = 0; off < size; off += PAGE)
		m[off] = 0;
	printf("ok shmfill pages=%llu\n", (unsigned long long)(size / PAGE));
	return 0;
}
