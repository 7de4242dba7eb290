// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-daxcount DEV OFFSET SIZE: how many 4 KiB pages of a devdax device's
 * range [OFFSET, OFFSET + SIZE) hold a byte that is not zero. Prints
 * "pages=N nonzero=M first_nonzero=0xOFF|-". OFFSET and SIZE must be
 * multiples of the device's alignment (2 MiB is safe): devdax has no read(),
 * only mmap. The swap tier's isolation test (tests/nested/test_nested_swap_tier.py)
 * reads a VM's chunks with it in the host, before and after the pool's release.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096

static int parse(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end || *s == '-' ? -1 : 0;
}

int main(int argc, char **argv)
{
	uint64_t off, size, nonzero = 0, first = UINT64_MAX;
	volatile const uint64_t *m;
	int fd;

	if (argc != 4 || parse(argv[2], &off) || parse(argv[3], &size) || !size || size % PAGE) {
		fprintf(stderr, "usage: cxlt-daxcount DEV OFFSET SIZE (bytes, SIZE a multiple of 4 KiB)\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "cxlt-daxcount: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, (off_t)off);
	if (m == MAP_FAILED) {
		fprintf(stderr, "cxlt-daxcount: mmap %s at %llu size %llu: %s\n", argv[1],
			(unsigned long long)off, (unsigned long long)size, strerror(errno));
		return 1;
	}
	for (uint64_t p = 0; p < size / PAGE; p++) {
		uint64_t acc = 0;

		for (unsigned int i = 0; i < PAGE / 8; i++)
			acc |= m[p * (PAGE / 8) + i];
		if (acc) {
			nonzero++;
			if (first == UINT64_MAX)
				first = p * PAGE;
		}
	}
	printf("pages=%llu nonzero=%llu first_nonzero=", (unsigned long long)(size / PAGE),
	       (unsigned long long)nonzero);
	if (first == UINT64_MAX)
		printf("-\n");
	else
		printf("0x%llx\n", (unsigned long long)first);
	return 0;
}
