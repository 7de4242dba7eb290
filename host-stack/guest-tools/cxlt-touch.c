// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-touch: write pages of anonymous memory bound to one NUMA node and say
 * where they are in guest physical memory.
 *
 *   cxlt-touch NODE PAGES [SECONDS]
 *
 * Maps PAGES pages, binds them to NODE (MPOL_BIND), writes every page once
 * and prints one line per page: "gpa 0x<guest physical address>" (from
 * /proc/self/pagemap; needs root). With SECONDS, it then keeps rewriting
 * pseudo-random pages of the set for that long (a writer that dirties memory
 * while a VM migrates) and prints "rewrites N". Last line:
 * "ok node N pages P". Used in nested VMs (L2) whose node 1 lives on the
 * cxltrack device, to check that the device saw exactly these writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "numa.h"
#include "pagemap.h"

#define PAGE 4096UL

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	uint64_t pages, i, x = 88172645463325252ULL, rewrites = 0;
	double seconds = 0;
	int node, fd;
	char *mem;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s NODE PAGES [SECONDS]\n", argv[0]);
		return 2;
	}
	node = atoi(argv[1]);
	pages = strtoull(argv[2], NULL, 0);
	if (argc == 4)
		seconds = atof(argv[3]);
	if (node < 0 || node >= 1024 || pages == 0 || seconds < 0) {
		fprintf(stderr, "cxlt-touch: bad arguments\n");
		return 2;
	}
	mem = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("cxlt-touch: mmap");
		return 1;
	}
	if (bind_to_node(mem, pages * PAGE, node, 0)) {
		perror("cxlt-touch: mbind");
		return 1;
	}
	for (i = 0; i < pages; i++)
		memset(mem + i * PAGE, (int)(i & 0xff) | 1, PAGE);
	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0) {
		perror("cxlt-touch: pagemap");
		return 1;
	}
	for (i = 0; i < pages; i++) {
		uint64_t pa;
		int r = pagemap_pa(fd, (uintptr_t)(mem + i * PAGE), &pa);

		if (r < 0) {
			perror("cxlt-touch: pagemap read");
			return 1;
		}
		if (!r) {
			fprintf(stderr, "cxlt-touch: page %llu not present or no PFN (not root?)\n",
				(unsigned long long)i);
			return 1;
		}
		printf("gpa 0x%llx\n", (unsigned long long)pa);
	}
	close(fd);
	/* the addresses reach a log file before the rewrites start (a waiter reads them) */
	fflush(stdout);
	if (seconds > 0) {
		double end = now() + seconds;

		while (now() < end) {
			for (int k = 0; k < 64; k++) {
				xorshift64(&x);
				mem[(x % pages) * PAGE + (x >> 32) % PAGE] = (char)x;
				rewrites++;
			}
		}
		printf("rewrites %llu\n", (unsigned long long)rewrites);
	}
	printf("ok node %d pages %llu\n", node, (unsigned long long)pages);
	return 0;
}
