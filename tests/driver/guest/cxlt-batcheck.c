// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-batcheck DAX DAX_FIRST_PAGE IMAGE DISK FIRST_PAGE COUNT
 * cxlt-batcheck --pid PID HVA SIZE IMAGE DISK
 *
 * The audit of a swap mapper (VSwapper's Swap Mapper on the device): every
 * device page in FIRST_PAGE..+COUNT whose association names disk DISK must
 * hold what block `block` of IMAGE holds now; a page that claims a block it
 * does not equal would be dropped as "clean" and read back wrong. The pages
 * are read through the devdax device DAX, whose first byte is device page
 * DAX_FIRST_PAGE. --pid: the pages of process PID's range HVA..+SIZE (a
 * VM's RAM on a kmem node, in its QEMU), found through /proc/PID/pagemap
 * and the driver's dirty_log/hpa_map and read through /proc/PID/mem.
 * Prints "associated N equal E differ D other O" (O: associations of other
 * disks) and the first differing pages; exits 1 if any page differs, 2 on a
 * usage or system error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libcxltrack.h"

#define PAGE 4096ULL
#define DAX_ALIGN (2ULL << 20)

static uint64_t num(const char *s, const char *what)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "cxlt-batcheck: %s: not a number: %s\n", what, s);
		exit(2);
	}
	return v;
}

static struct cxltrack *t;
static int img;
static uint64_t disk, assoc, equal, differ, other;

/* Check one device page against its block; @data is its content. */
static void check_page(uint64_t p, const uint8_t *data)
{
	static uint8_t block_buf[PAGE];
	uint64_t block;
	uint32_t d;
	int ret = cxltrack_bat_get(t, p, &block, &d);

	if (ret < 0) {
		fprintf(stderr, "cxlt-batcheck: page %" PRIu64 ": %s\n", p, cxltrack_strerror(ret));
		exit(2);
	}
	if (!ret)
		return;
	if (d != disk) {
		other++;
		return;
	}
	assoc++;
	if (pread(img, block_buf, PAGE, (off_t)(block * PAGE)) != (ssize_t)PAGE) {
		/* a block beyond the image: the association cannot be right */
		differ++;
		printf("page %" PRIu64 " claims block %" PRIu64 ", beyond the image\n", p, block);
		return;
	}
	if (!memcmp(data, block_buf, PAGE))
		equal++;
	else if (++differ <= 8)
		printf("page %" PRIu64 " differs from block %" PRIu64 " it claims\n", p, block);
}

#define MAX_MAPS 8

/* --pid: a process's range on a kmem node. */
static int pid_mode(char **argv)
{
	uint64_t hva = num(argv[1], "HVA"), size = num(argv[2], "SIZE");
	uint64_t hpa[MAX_MAPS], len[MAX_MAPS], dpa[MAX_MAPS];
	static uint8_t data[PAGE];
	int maps = 0, pagemap, mem;
	char path[64];
	FILE *f;

	f = fopen("/sys/class/cxltrack/cxltrack0/dirty_log/hpa_map", "r");
	if (!f) {
		perror("cxlt-batcheck: hpa_map");
		return 2;
	}
	while (maps < MAX_MAPS && fscanf(f, "%" SCNx64 " %" SCNx64 " %" SCNx64, &hpa[maps],
					 &len[maps], &dpa[maps]) == 3)
		maps++;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%s/pagemap", argv[0]);
	pagemap = open(path, O_RDONLY);
	snprintf(path, sizeof(path), "/proc/%s/mem", argv[0]);
	mem = open(path, O_RDONLY);
	if (pagemap < 0 || mem < 0 || !maps || hva % PAGE || size % PAGE) {
		fprintf(stderr, "cxlt-batcheck: cannot read process %s (or no hpa_map)\n", argv[0]);
		return 2;
	}
	for (uint64_t va = hva; va < hva + size; va += PAGE) {
		uint64_t ent, phys;
		int m;

		if (pread(pagemap, &ent, 8, (off_t)(va / PAGE * 8)) != 8) {
			perror("cxlt-batcheck: pagemap");
			return 2;
		}
		if (!(ent >> 63))
			continue;	/* not present: no device page */
		phys = (ent & ((1ULL << 55) - 1)) * PAGE;
		for (m = 0; m < maps; m++)
			if (phys >= hpa[m] && phys < hpa[m] + len[m])
				break;
		if (m == maps)
			continue;	/* ordinary memory */
		if (pread(mem, data, PAGE, (off_t)va) != (ssize_t)PAGE) {
			perror("cxlt-batcheck: mem");
			return 2;
		}
		check_page((dpa[m] + phys - hpa[m]) / PAGE, data);
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t dax_first, first, count, map_off, map_len;
	uint8_t *map;
	int dax, ret;

	if (argc == 7 && !strcmp(argv[1], "--pid")) {
		disk = num(argv[6], "DISK");
		img = open(argv[5], O_RDONLY);
	} else if (argc == 7) {
		disk = num(argv[4], "DISK");
		img = open(argv[3], O_RDONLY);
	} else {
		fprintf(stderr, "usage: cxlt-batcheck DAX DAX_FIRST_PAGE IMAGE DISK FIRST_PAGE COUNT\n"
				"       cxlt-batcheck --pid PID HVA SIZE IMAGE DISK\n");
		return 2;
	}
	if (img < 0) {
		perror("cxlt-batcheck: image");
		return 2;
	}
	ret = cxltrack_open(NULL, &t);
	if (ret) {
		fprintf(stderr, "cxlt-batcheck: open: %s\n", cxltrack_strerror(ret));
		return 2;
	}
	if (!strcmp(argv[1], "--pid")) {
		ret = pid_mode(argv + 2);
		if (ret)
			return ret;
		goto out;
	}
	dax_first = num(argv[2], "DAX_FIRST_PAGE");
	first = num(argv[5], "FIRST_PAGE");
	count = num(argv[6], "COUNT");
	if (first < dax_first || !count) {
		fprintf(stderr, "cxlt-batcheck: pages %" PRIu64 "+%" PRIu64 " not behind %s\n", first,
			count, argv[1]);
		return 2;
	}
	dax = open(argv[1], O_RDONLY);
	if (dax < 0) {
		perror("cxlt-batcheck: open");
		return 2;
	}
	/* device dax maps whole 2 MiB units */
	map_off = (first - dax_first) * PAGE / DAX_ALIGN * DAX_ALIGN;
	map_len = ((first - dax_first + count) * PAGE - map_off + DAX_ALIGN - 1) / DAX_ALIGN *
		  DAX_ALIGN;
	map = mmap(NULL, map_len, PROT_READ, MAP_SHARED, dax, (off_t)map_off);
	if (map == MAP_FAILED) {
		perror("cxlt-batcheck: mmap");
		return 2;
	}
	for (uint64_t p = first; p < first + count; p++)
		check_page(p, map + (p - dax_first) * PAGE - map_off);
	munmap(map, map_len);
out:
	printf("associated %" PRIu64 " equal %" PRIu64 " differ %" PRIu64 " other %" PRIu64 "\n",
	       assoc, equal, differ, other);
	cxltrack_close(t);
	return differ ? 1 : 0;
}
