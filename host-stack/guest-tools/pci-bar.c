// SPDX-License-Identifier: Apache-2.0
/*
 * pci-bar: read and write registers of a PCI BAR through its sysfs resource
 * file (mmap), the way the cxltrack tracker will be read from guest user space.
 *
 *   pci-bar /sys/bus/pci/devices/BDF/resourceN read  OFFSET [32|64]
 *   pci-bar /sys/bus/pci/devices/BDF/resourceN write OFFSET VALUE [32|64]
 *   pci-bar /sys/bus/pci/devices/BDF/resourceN dump  OFFSET COUNT      (32-bit words)
 *
 * Prints values as 0x%x, one a line. The BAR must not be claimed by a driver
 * (CONFIG_IO_STRICT_DEVMEM refuses to map busy regions).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int usage(const char *p)
{
	fprintf(stderr, "usage: %s RESOURCE read OFF [32|64] | write OFF VAL [32|64] | dump OFF COUNT\n", p);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return usage(argv[0]);
	const char *what = argv[2];
	uint64_t off = strtoull(argv[3], NULL, 0);
	int writing = !strcmp(what, "write");
	int fd = open(argv[1], writing ? O_RDWR : O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	size_t len = (size_t)st.st_size;
	volatile uint8_t *bar = mmap(NULL, len, writing ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	if (bar == MAP_FAILED) {
		fprintf(stderr, "mmap %s (%zu bytes): %s\n", argv[1], len, strerror(errno));
		return 1;
	}
	if (!strcmp(what, "read")) {
		int width = argc > 4 ? atoi(argv[4]) : 32;
		if (off + (unsigned)width / 8 > len || off % ((unsigned)width / 8))
			return usage(argv[0]);
		if (width == 64)
			printf("0x%llx\n", (unsigned long long)*(volatile uint64_t *)(bar + off));
		else
			printf("0x%x\n", *(volatile uint32_t *)(bar + off));
	} else if (writing) {
		if (argc < 5)
			return usage(argv[0]);
		uint64_t val = strtoull(argv[4], NULL, 0);
		int width = argc > 5 ? atoi(argv[5]) : 32;
		if (off + (unsigned)width / 8 > len || off % ((unsigned)width / 8))
			return usage(argv[0]);
		if (width == 64)
			*(volatile uint64_t *)(bar + off) = val;
		else
			*(volatile uint32_t *)(bar + off) = (uint32_t)val;
	} else if (!strcmp(what, "dump")) {
		if (argc < 5)
			return usage(argv[0]);
		uint64_t count = strtoull(argv[4], NULL, 0);
		if (off % 4 || off + count * 4 > len)
			return usage(argv[0]);
		for (uint64_t i = 0; i < count; i++)
			printf("0x%x\n", *(volatile uint32_t *)(bar + off + i * 4));
	} else {
		return usage(argv[0]);
	}
	munmap((void *)bar, len);
	close(fd);
	return 0;
}
