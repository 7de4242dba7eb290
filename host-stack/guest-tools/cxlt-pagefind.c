// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-pagefind: which pages of a `cxl-memtest node` fill lie in a file, a block device or a
 * device-DAX range — where a VM's swapped-out pages went (the swap tier's hybrid overflow,
 * docs/swap-design.md section 5: the tier should keep the newest, the disk the oldest).
 *
 *   cxlt-pagefind SEED PATH [OFFSET LENGTH]
 *
 * Every 4 KiB page of the range whose first word is word i of the fill with SEED (the pattern
 * is invertible, memtest-pattern.h), i a multiple of 512, and whose 512 words all match, is
 * page i / 512 of the fill. Prints "pages=N found=F", then the page numbers found, in the
 * order they lie in the range, on one line. Reads with pread, from a block device with
 * O_DIRECT (a device that another layer writes under the page cache — the origin of a
 * dm-writecache device — is read as it is now). Not for device DAX (no read(2) there).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include "memtest-pattern.h"

#define PAGE 4096UL
#define WORDS (PAGE / 8)

static int number(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || *end || end == s ? -1 : 0;
}

/* Page number of the fill that @p holds, or -1. */
static int64_t fill_page(uint64_t seed, const uint64_t *p)
{
	uint64_t i = memtest_index(seed, p[0]);

	if (i % WORDS || i / WORDS > INT64_MAX)
		return -1;
	for (uint64_t k = 1; k < WORDS; k++)
		if (p[k] != memtest_pattern(seed, i + k))
			return -1;
	return (int64_t)(i / WORDS);
}

int main(int argc, char **argv)
{
	uint64_t seed, off = 0, len = 0, pages = 0, found = 0;
	uint64_t *page;
	int64_t *where;
	struct stat st;
	int fd;

	if ((argc != 3 && argc != 5) || number(argv[1], &seed) ||
	    (argc == 5 && (number(argv[3], &off) || number(argv[4], &len) || off % PAGE || len % PAGE))) {
		fprintf(stderr, "usage: cxlt-pagefind SEED PATH [OFFSET LENGTH] (multiples of 4096)\n");
		return 2;
	}
	fd = open(argv[2], O_RDONLY);
	if (fd >= 0 && !fstat(fd, &st) && S_ISBLK(st.st_mode)) {
		close(fd);
		fd = open(argv[2], O_RDONLY | O_DIRECT);
	}
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "cxlt-pagefind: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	if (argc == 3) {
		if (S_ISBLK(st.st_mode)) {
			if (ioctl(fd, BLKGETSIZE64, &len)) {
				fprintf(stderr, "cxlt-pagefind: size of %s: %s\n", argv[2], strerror(errno));
				return 1;
			}
		} else if (S_ISREG(st.st_mode)) {
			len = (uint64_t)st.st_size / PAGE * PAGE;
		} else {
			fprintf(stderr, "cxlt-pagefind: %s: give OFFSET and LENGTH\n", argv[2]);
			return 2;
		}
	}
	page = aligned_alloc(PAGE, PAGE);
	where = calloc(len / PAGE + 1, sizeof(*where));
	if (!page || !where)
		return 1;
	for (uint64_t at = off; at < off + len; at += PAGE) {
		ssize_t n = pread(fd, page, PAGE, (off_t)at);
		int64_t p;

		if (n != (ssize_t)PAGE) {
			fprintf(stderr, "cxlt-pagefind: %s at %" PRIu64 ": %s\n", argv[2], at,
				n < 0 ? strerror(errno) : "short read");
			return 1;
		}
		pages++;
		p = fill_page(seed, page);
		if (p >= 0)
			where[found++] = p;
	}
	printf("pages=%" PRIu64 " found=%" PRIu64 "\n", pages, found);
	for (uint64_t k = 0; k < found; k++)
		printf("%s%" PRId64, k ? " " : "", where[k]);
	printf("\n");
	return 0;
}
