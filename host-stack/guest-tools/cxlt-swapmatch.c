// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-swapmatch: how many pages of a swap area equal a block of a disk image (the stock
 * baseline's silent swap writes, issue 13 item 4, measured after the fact).
 *
 *   cxlt-swapmatch SWAP IMAGE
 *
 * A host that swaps a VM with the kernel's own reclaim (the VM's QEMU in a memory cgroup)
 * keeps no count of what it wrote; the swap area keeps the pages. Every 4 KiB page of SWAP
 * but the first (the swap header) that is not all zeroes is looked up among IMAGE's blocks
 * (hash, then byte compare). A page equal to a block is a swap write the host could have
 * skipped had it known the page still held that block. A slot written twice shows only its
 * last page, so the count is a lower bound. Prints "pages=N nonzero=Z equal_to_block=E".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096UL

static uint64_t hash(const uint8_t *p)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < PAGE; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ULL;
	}
	return h | 1; /* 0: an empty bucket */
}

static uint8_t *read_all(const char *path, uint64_t *size)
{
	int fd = open(path, O_RDONLY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st)) {
		perror(path);
		exit(2);
	}
	*size = (uint64_t)st.st_size;
	if (S_ISBLK(st.st_mode)) {
		off_t end = lseek(fd, 0, SEEK_END);

		*size = end < 0 ? 0 : (uint64_t)end;
	}
	uint8_t *buf = malloc(*size + 1);

	if (!buf) {
		perror("malloc");
		exit(2);
	}
	for (uint64_t off = 0; off < *size;) {
		ssize_t n = pread(fd, buf + off, *size - off, (off_t)off);

		if (n <= 0) {
			perror(path);
			exit(2);
		}
		off += (uint64_t)n;
	}
	close(fd);
	return buf;
}

static int is_zero(const uint8_t *p)
{
	for (size_t i = 0; i < PAGE; i++)
		if (p[i])
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s SWAP IMAGE\n", argv[0]);
		return 2;
	}
	uint64_t swap_size, image_size;
	uint8_t *swap = read_all(argv[1], &swap_size), *image = read_all(argv[2], &image_size);
	uint64_t blocks = image_size / PAGE, buckets = 1;

	while (buckets < 2 * blocks + 2)
		buckets <<= 1;
	uint64_t *key = calloc(buckets, sizeof(*key));
	uint64_t *blk = calloc(buckets, sizeof(*blk));

	if (!key || !blk) {
		perror("calloc");
		return 2;
	}
	for (uint64_t b = 0; b < blocks; b++) {
		uint64_t h = hash(image + b * PAGE), i = h & (buckets - 1);

		while (key[i])
			i = (i + 1) & (buckets - 1);
		key[i] = h;
		blk[i] = b;
	}
	uint64_t pages = swap_size / PAGE, nonzero = 0, equal = 0;

	for (uint64_t p = 1; p < pages; p++) {
		const uint8_t *pg = swap + p * PAGE;

		if (is_zero(pg))
			continue;
		nonzero++;
		uint64_t h = hash(pg);

		for (uint64_t i = h & (buckets - 1); key[i]; i = (i + 1) & (buckets - 1))
			if (key[i] == h && !memcmp(pg, image + blk[i] * PAGE, PAGE)) {
				equal++;
				break;
			}
	}
	printf("pages=%llu nonzero=%llu equal_to_block=%llu\n", (unsigned long long)(pages ? pages - 1 : 0),
	       (unsigned long long)nonzero, (unsigned long long)equal);
	return 0;
}
