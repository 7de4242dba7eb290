// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-pagecmp: compare two memory dumps page by page.
 *
 *   cxlt-pagecmp A B [PAGE-SIZE]
 *
 * Prints "pages=N equal=E differ=D" and, for the first differing pages (at
 * most 8), "differ page P offset 0xO". Exit status 0 if the files are equal
 * (same size, every page equal), 1 if not, 2 on bad use. Used to check that
 * a migrated VM's memory equals its source's at the switch-over.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	size_t ps = 4096, na, nb;
	uint64_t pages = 0, differ = 0;
	FILE *a, *b;
	char *ba, *bb;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s A B [PAGE-SIZE]\n", argv[0]);
		return 2;
	}
	if (argc == 4)
		ps = strtoul(argv[3], NULL, 0);
	a = fopen(argv[1], "rb");
	b = fopen(argv[2], "rb");
	if (!a || !b || !ps) {
		fprintf(stderr, "cxlt-pagecmp: %s\n", ps ? strerror(errno) : "bad page size");
		return 2;
	}
	ba = malloc(ps);
	bb = malloc(ps);
	if (!ba || !bb)
		return 2;
	for (;;) {
		na = fread(ba, 1, ps, a);
		nb = fread(bb, 1, ps, b);
		if (!na && !nb)
			break;
		if (na != nb || memcmp(ba, bb, na)) {
			if (differ < 8)
				printf("differ page %llu offset 0x%llx\n", (unsigned long long)pages,
				       (unsigned long long)(pages * ps));
			differ++;
		}
		pages++;
		if (na != nb) {
			printf("sizes differ\n");
			break;
		}
	}
	printf("pages=%llu equal=%llu differ=%llu\n", (unsigned long long)pages,
	       (unsigned long long)(pages - differ), (unsigned long long)differ);
	return differ ? 1 : 0;
}
