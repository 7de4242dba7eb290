// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-racewrite: writes and disk reads racing a host that evicts the VM's memory, every byte
 * checked against a shadow copy (issue 13 item 6).
 *
 *   cxlt-racewrite NODE DEV SIZE SECONDS
 *
 * Maps SIZE bytes of anonymous memory bound to NUMA node NODE and a shadow of the same size
 * on node 0, fills both with a pattern, and for SECONDS runs THREADS threads, each owning the
 * pages p with p % THREADS == its number, that pick random pages of their own and
 *  - read a random 4 KiB block of DEV into the page with O_DIRECT (the host associates the
 *    page with the block) and the same block into the shadow, or
 *  - store a random 8-byte word at a random place of the page and the shadow, right after
 *    such a read as often as not (the association must go, the page is no longer clean), or
 *  - sleep a little, so that pages age and the host evicts them meanwhile.
 * A host that drops a written page as clean, loses a store that raced an eviction, or brings
 * a page back from the wrong place leaves a page that differs from its shadow. At the end
 * every page is compared. DEV must not be written meanwhile (the shadow reads it again).
 * Last line: "ok racewrite pages=P reads=R stores=S" or "wrong pages=W of P"; exit 1 then.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "numa.h"

#define PAGE 4096UL
#define THREADS 2

static uint8_t *mem, *shadow;
static uint64_t pages, disk_blocks, seconds;
static int disk_fd;
static uint64_t reads[THREADS], stores[THREADS];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void read_block(uint8_t *dst, uint64_t block)
{
	if (pread(disk_fd, dst, PAGE, (off_t)(block * PAGE)) != (ssize_t)PAGE) {
		perror("pread");
		exit(2);
	}
}

static void store(uint64_t p, uint64_t *x)
{
	uint64_t off = (xorshift64(x) % (PAGE / 8)) * 8, v = xorshift64(x);

	memcpy(mem + p * PAGE + off, &v, 8);
	memcpy(shadow + p * PAGE + off, &v, 8);
}

static void *worker(void *arg)
{
	uint64_t k = (uint64_t)(uintptr_t)arg, x = 0x9e3779b97f4a7c15ULL * (k + 1);
	double end = now() + (double)seconds;

	while (now() < end) {
		uint64_t p = (xorshift64(&x) % (pages / THREADS)) * THREADS + k;
		uint64_t what = xorshift64(&x) % 8;

		if (p >= pages)
			continue;
		if (what < 3) {
			uint64_t block = xorshift64(&x) % disk_blocks;

			read_block(mem + p * PAGE, block);
			read_block(shadow + p * PAGE, block);
			reads[k]++;
			if (what == 0) {
				store(p, &x);
				stores[k]++;
			}
		} else if (what < 7) {
			store(p, &x);
			stores[k]++;
		} else {
			usleep((useconds_t)(xorshift64(&x) % 20000));
		}
	}
	return NULL;
}

static uint8_t *map_on(int node, uint64_t size)
{
	uint8_t *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED || bind_to_node(m, size, node, 0)) {
		perror("mmap/mbind");
		exit(2);
	}
	return m;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];

	if (argc != 5) {
		fprintf(stderr, "usage: %s NODE DEV SIZE SECONDS\n", argv[0]);
		return 2;
	}
	int node = atoi(argv[1]);
	uint64_t size = strtoull(argv[3], NULL, 0);

	seconds = strtoull(argv[4], NULL, 0);
	if (node < 0 || node >= 64 || !size || size % PAGE || !seconds) {
		fprintf(stderr, "NODE 0..63, SIZE a non-zero multiple of 4096, SECONDS > 0\n");
		return 2;
	}
	pages = size / PAGE;
	mem = map_on(node, size);
	shadow = map_on(0, size);
	for (uint64_t i = 0; i < size; i += 8) {
		uint64_t v = i * 0x9E3779B97F4A7C15ull;

		memcpy(mem + i, &v, 8);
		memcpy(shadow + i, &v, 8);
	}
	disk_fd = open(argv[2], O_RDONLY | O_DIRECT);
	off_t disk_size = disk_fd < 0 ? -1 : lseek(disk_fd, 0, SEEK_END);
	if (disk_size < (off_t)PAGE) {
		perror(argv[2]);
		return 2;
	}
	disk_blocks = (uint64_t)disk_size / PAGE;
	for (uint64_t k = 0; k < THREADS; k++)
		if (pthread_create(&t[k], NULL, worker, (void *)(uintptr_t)k)) {
			perror("pthread_create");
			return 2;
		}
	for (uint64_t k = 0; k < THREADS; k++)
		pthread_join(t[k], NULL);
	uint64_t wrong = 0, nreads = 0, nstores = 0;

	for (uint64_t p = 0; p < pages; p++) {
		if (!memcmp(mem + p * PAGE, shadow + p * PAGE, PAGE))
			continue;
		if (wrong < 5)
			fprintf(stderr, "page %llu differs from its shadow\n", (unsigned long long)p);
		wrong++;
	}
	for (uint64_t k = 0; k < THREADS; k++) {
		nreads += reads[k];
		nstores += stores[k];
	}
	if (wrong) {
		printf("wrong pages=%llu of %llu\n", (unsigned long long)wrong, (unsigned long long)pages);
		return 1;
	}
	printf("ok racewrite pages=%llu reads=%llu stores=%llu\n", (unsigned long long)pages,
	       (unsigned long long)nreads, (unsigned long long)nstores);
	return 0;
}
