// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-diskread: a VM's own cache of its disk, under a host that swaps the VM (VSwapper's
 * workloads in one process).
 *
 *   cxlt-diskread NODE DEV SIZE PAUSE1 PAUSE2 [PAUSE3]
 *
 * Maps SIZE bytes of anonymous memory bound to NUMA node NODE and fills every page with a
 * pattern; waits PAUSE1 seconds (the host's memory manager evicts pages: they go to swap);
 * reads the first SIZE bytes of DEV into it with O_DIRECT (whole, aligned pages: each lands
 * in its page), so that a host that brings the old content back only for the read to
 * overwrite it makes a stale swap read; checks every page, in ROUNDS random subsets a
 * little over a period of the host's manager apart, so that the pages' ages, and the order
 * the host evicts them in, are not the disk's (VSwapper's decayed swap sequentiality: the
 * swap area holds them in eviction order); waits PAUSE2 seconds (the host evicts pages that
 * now equal their disk blocks: a silent swap write, or none with the device's associations)
 * and checks every page again in disk order, which brings them back (from swap, along its
 * slots, or from the disk image along its blocks). The check: the disk image pattern of the nested
 * harness (Host.make_disk: block number in the first 8 bytes, "%08d", the rest zero). With
 * PAUSE3: waits that long again (the host evicts the pages again), then writes the memory to
 * DEV at offset SIZE with O_DIRECT, the device reading it straight from memory the host has
 * evicted (Tesseract's double paging; the CPU does not touch it), and reads that back into
 * fresh memory to check it. DEV must hold 2 * SIZE bytes then. Last line: "ok diskread
 * pages=P" or "wrong pages=W of P"; exit 1 on a wrong page.
 *
 * With CXLT_STAGE_DIR set, the second check is a stage the host can count on its own: before
 * it the tool creates DIR/at-check2 and waits for DIR/go-check2, after it DIR/at-checked2
 * and DIR/go-checked2 (the harness reads the host's counters in between).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "numa.h"
#include "stage.h"

#define PAGE 4096UL
#define ROUNDS 32
#define ROUND_GAP_US 120000 /* the host manager's default period is 100 ms */

/* Does page p differ from its block's pattern? (reports the first few) */
static int wrong_page(const uint8_t *m, uint64_t p, uint64_t *wrong)
{
	char want[24];
	const uint8_t *pg = m + p * PAGE;
	int bad = 0;

	snprintf(want, sizeof(want), "%08llu", (unsigned long long)p);
	if (memcmp(pg, want, 8))
		bad = 1;
	for (uint64_t i = 8; i < PAGE && !bad; i++)
		bad = pg[i] != 0;
	if (bad && *wrong < 5)
		fprintf(stderr, "page %llu differs from block %llu\n", (unsigned long long)p,
			(unsigned long long)p);
	*wrong += (uint64_t)bad;
	return bad;
}

/* Pages that differ from their block's pattern, checked in disk order. */
static uint64_t check(const uint8_t *m, uint64_t pages)
{
	uint64_t wrong = 0;

	for (uint64_t p = 0; p < pages; p++)
		wrong_page(m, p, &wrong);
	return wrong;
}

/* The same, in ROUNDS random subsets ROUND_GAP_US apart (a fixed seed: runs compare). */
static uint64_t check_in_rounds(const uint8_t *m, uint64_t pages)
{
	uint64_t wrong = 0, x = 0x9e3779b97f4a7c15ULL;
	uint8_t *round = malloc(pages);

	if (!round) {
		perror("malloc");
		exit(2);
	}
	for (uint64_t p = 0; p < pages; p++) {
		round[p] = (uint8_t)(xorshift64(&x) % ROUNDS);
	}
	for (unsigned int r = 0; r < ROUNDS; r++) {
		for (uint64_t p = 0; p < pages; p++)
			if (round[p] == r)
				wrong_page(m, p, &wrong);
		usleep(ROUND_GAP_US);
	}
	free(round);
	return wrong;
}

int main(int argc, char **argv)
{
	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: %s NODE DEV SIZE PAUSE1 PAUSE2 [PAUSE3]\n", argv[0]);
		return 2;
	}
	int node = atoi(argv[1]);
	uint64_t size = strtoull(argv[3], NULL, 0);
	unsigned int pause = (unsigned int)atoi(argv[4]), pause2 = (unsigned int)atoi(argv[5]);
	if (node < 0 || node >= 64 || !size || size % PAGE) {
		fprintf(stderr, "NODE 0..63, SIZE a non-zero multiple of 4096\n");
		return 2;
	}
	uint8_t *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	if (bind_to_node(m, size, node, 0)) {
		perror("mbind");
		return 2;
	}
	for (uint64_t i = 0; i < size; i++)
		m[i] = (uint8_t)(0xa5 ^ (i >> 12) ^ i);
	sleep(pause);
	int fd = open(argv[2], O_RDONLY | O_DIRECT);
	if (fd < 0) {
		perror(argv[2]);
		return 2;
	}
	for (uint64_t off = 0; off < size;) {
		ssize_t n = pread(fd, m + off, size - off, (off_t)off);
		if (n <= 0) {
			perror("pread");
			return 2;
		}
		off += (uint64_t)n;
	}
	close(fd);
	uint64_t pages = size / PAGE, wrong = check_in_rounds(m, pages);
	sleep(pause2);
	stage("check2");
	wrong += check(m, pages);
	stage("checked2");
	if (argc == 7) {
		uint8_t *back = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				     -1, 0);

		sleep((unsigned int)atoi(argv[6]));
		fd = open(argv[2], O_RDWR | O_DIRECT);
		if (fd < 0 || back == MAP_FAILED) {
			perror(argv[2]);
			return 2;
		}
		if (pwrite(fd, m, size, (off_t)size) != (ssize_t)size ||
		    pread(fd, back, size, (off_t)size) != (ssize_t)size) {
			perror("write back");
			return 2;
		}
		close(fd);
		wrong += check(back, pages);
	}
	if (wrong) {
		printf("wrong pages=%llu of %llu (two checks)\n", (unsigned long long)wrong,
		       (unsigned long long)pages);
		return 1;
	}
	printf("ok diskread pages=%llu\n", (unsigned long long)pages);
	return 0;
}
