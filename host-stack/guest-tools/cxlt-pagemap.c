// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-pagemap: physical addresses of another process's pages.
 *
 *   cxlt-pagemap PID < virtual addresses (one a line, 0x-hex or decimal)
 *
 * Prints, for each address, "0x<virtual> 0x<physical page address>" from
 * /proc/PID/pagemap, or "0x<virtual> -" if the page is not present. Needs
 * root (the kernel hides PFNs otherwise). A nested host uses it to find the
 * device pages behind a VM's memory when the memory is a kmem NUMA node.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pagemap.h"

int main(int argc, char **argv)
{
	char path[64], line[128];
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PID < addresses\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "/proc/%s/pagemap", argv[1]);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	while (fgets(line, sizeof(line), stdin)) {
		uint64_t va = strtoull(line, NULL, 0), pa;
		int r = pagemap_pa(fd, va, &pa);

		if (r < 0) {
			perror("cxlt-pagemap: read");
			return 1;
		}
		if (r)
			printf("0x%llx 0x%llx\n", (unsigned long long)va, (unsigned long long)pa);
		else
			printf("0x%llx -\n", (unsigned long long)va);
	}
	return 0;
}
