// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-prevent: guest writes to pages the host evicted and flagged with KVM's False Reads
 * Preventer (issue 14), every byte checked against a shadow copy.
 *
 *   cxlt-prevent race NODE SIZE IDLE SECONDS SEED
 *   cxlt-prevent partial NODE SIZE IDLE
 *   cxlt-prevent fill NODE SIZE
 *
 * race: maps SIZE bytes of anonymous memory bound to NUMA node NODE and a shadow of the same
 * size on node 0, fills both with a pattern, sleeps IDLE seconds (the host evicts the pages,
 * they are cold), then for SECONDS runs two threads (two vCPUs) that write random patterns to
 * random pages, mostly cold ones, the same bytes into the shadow:
 *  - a whole page with memset() (the C library's string stores) or `rep stosq`,
 *  - a random range with `rep movsb` or memcpy(), also one that crosses into the next page,
 *  - a few 1..8-byte stores at random places (overlapping ones too), then loads of them,
 *  - loads of random ranges, compared with the shadow at once (bytes stored and not stored),
 *  - both threads on one page at the same time, each on its own interleaved 64-byte lines.
 * The first SHARED pages are both threads', each writing lines l with l % 2 == t; of the
 * others, thread t owns pages p with ((p - SHARED) / 2) % 2 == t (page pairs, so that a range
 * crossing a page end stays its own). At the end
 * every byte is compared. Last line: "ok prevent pages=P ops=N" or "wrong bytes=B pages=W of
 * P"; exit 1 then.
 *
 * partial: as race, but after IDLE seconds writes the first half of every page (one `rep
 * stosq` each, front to back: no scattered stores, no instruction the emulator cannot run, so
 * each page's slot stays open half full), all pages one after the other, so that more
 * pages are half written at once than the device has slots; then sleeps 2 s (slot timeouts)
 * and compares every byte. Last line "ok partial pages=P" or "wrong bytes=...".
 *
 * fill: VSwapper's false-reads workload: maps SIZE bytes on NODE, writes every page whole
 * (the kernel zeroes each page at its first touch, then memset), checks every byte, and
 * prints "ok fill pages=P ms=T" (T: the writing's time) or "wrong bytes=B of P pages". With
 * CXLT_STAGE_DIR set, the writing is a stage the host can count on its own: before it the
 * tool creates DIR/at-fill and waits for DIR/go-fill, after it DIR/at-filled and
 * DIR/go-filled (the check's reads come after: pages the host evicted meanwhile are read
 * back for it, which are not false reads).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "numa.h"
#include "stage.h"

#define PAGE 4096UL
#define THREADS 2
#define LINE 64

static uint8_t *mem, *shadow;
static uint64_t pages, seconds, seed;
#define SHARED 8

static uint64_t ops[THREADS], wrong_loads[THREADS];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint8_t *map_on(int node, uint64_t size)
{
	uint8_t *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED || bind_to_node(m, size, node, 0)) {
		perror("mmap/mbind");
		exit(2);
	}
	madvise(m, size, MADV_NOHUGEPAGE);
	return m;
}

/* The x86 string instructions the kernel's emulator must run on a flagged page. */
static void rep_stosq(void *dst, uint64_t val, size_t qwords)
{
	__asm__ volatile("rep stosq" : "+D"(dst), "+c"(qwords) : "a"(val) : "memory");
}

static void rep_movsb(void *dst, const void *src, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

/* A page of thread t: page pairs alternate between the threads. */
static uint64_t own_page(int t, uint64_t *x)
{
	uint64_t pair = xorshift64(x) % ((pages - SHARED) / 4);

	return SHARED + (pair * 2 + (uint64_t)t) * 2 + xorshift64(x) % 2;
}

static void check_load(int t, uint64_t off, uint64_t len)
{
	uint8_t buf[PAGE];

	rep_movsb(buf, mem + off, len);
	if (memcmp(buf, shadow + off, len))
		wrong_loads[t]++;
}

static void one_op(int t, uint64_t *x)
{
	uint64_t p = own_page(t, x), base = p * PAGE;
	uint64_t r = xorshift64(x), op = r % 8, off, len, i;
	uint8_t src[2 * PAGE];

	for (i = 0; i < sizeof(src); i += 8)
		*(uint64_t *)(src + i) = xorshift64(x);
	switch (op) {
	case 0: /* whole page, the C library's memset */
		memset(mem + base, (int)(r >> 8), PAGE);
		memset(shadow + base, (int)(r >> 8), PAGE);
		break;
	case 1: /* whole page, rep stosq */
		rep_stosq(mem + base, r, PAGE / 8);
		rep_stosq(shadow + base, r, PAGE / 8);
		break;
	case 2: /* a range, rep movsb, maybe across the page end (the pair's next page) */
		off = xorshift64(x) % PAGE;
		len = 1 + xorshift64(x) % (p % 2 ? PAGE - off : PAGE);
		rep_movsb(mem + base + off, src, len);
		rep_movsb(shadow + base + off, src, len);
		check_load(t, base + off, len);
		break;
	case 3: /* a range, memcpy */
		off = xorshift64(x) % PAGE;
		len = 1 + xorshift64(x) % (PAGE - off);
		memcpy(mem + base + off, src, len);
		memcpy(shadow + base + off, src, len);
		break;
	case 4: /* small stores, overlapping, then loads of them */
		for (i = 0; i < 6; i++) {
			uint64_t w = xorshift64(x);
			uint64_t n = 1 + xorshift64(x) % 8;

			off = xorshift64(x) % (PAGE - 8);
			memcpy(mem + base + off, &w, n);
			memcpy(shadow + base + off, &w, n);
			if (i % 2)
				check_load(t, base + off - off % 8, 8);
		}
		break;
	case 5: /* loads: bytes stored, not stored, or both */
		off = xorshift64(x) % PAGE;
		len = 1 + xorshift64(x) % (PAGE - off);
		check_load(t, base + off, len);
		break;
	case 6: /* let pages age: the host evicts and flags them meanwhile */
		usleep(20000);
		break;
	default: /* a page both threads write, each on its own lines (often at once) */
		base = xorshift64(x) % SHARED * PAGE;
		for (i = (uint64_t)t; i < PAGE / LINE; i += THREADS) {
			uint64_t v = xorshift64(x);

			rep_stosq(mem + base + i * LINE, v, LINE / 8);
			rep_stosq(shadow + base + i * LINE, v, LINE / 8);
		}
		break;
	}
	ops[t]++;
}

static void *worker(void *arg)
{
	int t = (int)(uintptr_t)arg;
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + (uint64_t)t + 1;
	double end = now() + (double)seconds;

	while (now() < end)
		one_op(t, &x);
	return NULL;
}

/*
 * Map @size bytes on @node (the pages the host evicts) and a shadow on node 0,
 * fill both with the same random words from *@x, then wait @idle s (the host
 * evicts meanwhile).
 */
static void fill_both(int node, uint64_t size, uint64_t idle, uint64_t *x)
{
	uint64_t i;

	pages = size / PAGE;
	mem = map_on(node, size);
	shadow = map_on(0, size);
	for (i = 0; i < size; i += 8) {
		uint64_t v = xorshift64(x);

		*(uint64_t *)(mem + i) = v;
		*(uint64_t *)(shadow + i) = v;
	}
	printf("filled pages=%llu, idle %llu s\n", (unsigned long long)pages, (unsigned long long)idle);
	fflush(stdout);
	sleep((unsigned int)idle);
}

/* Bytes of mem that differ from the shadow; the pages they lie in in *@wrong_pages. */
static uint64_t wrong_bytes(uint64_t *wrong_pages)
{
	uint64_t p, i, wrong = 0;

	*wrong_pages = 0;
	for (p = 0; p < pages; p++) {
		uint64_t w = 0;

		for (i = 0; i < PAGE; i++)
			w += mem[p * PAGE + i] != shadow[p * PAGE + i];
		wrong += w;
		*wrong_pages += !!w;
	}
	return wrong;
}

static int compare(const char *what)
{
	uint64_t wrong_pages, wrong = wrong_bytes(&wrong_pages);

	if (wrong) {
		printf("wrong bytes=%llu pages=%llu of %llu\n", (unsigned long long)wrong,
		       (unsigned long long)wrong_pages, (unsigned long long)pages);
		return 1;
	}
	printf("ok %s pages=%llu\n", what, (unsigned long long)pages);
	return 0;
}

static int race(int node, uint64_t size, uint64_t idle)
{
	pthread_t th[THREADS];
	uint64_t wrong, wrong_pages, x = seed + 7;
	int t;

	fill_both(node, size, idle, &x);
	for (t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t);
	for (t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	wrong = wrong_bytes(&wrong_pages);
	if (wrong || wrong_loads[0] || wrong_loads[1]) {
		printf("wrong bytes=%llu pages=%llu of %llu loads=%llu\n", (unsigned long long)wrong,
		       (unsigned long long)wrong_pages, (unsigned long long)pages,
		       (unsigned long long)(wrong_loads[0] + wrong_loads[1]));
		return 1;
	}
	printf("ok prevent pages=%llu ops=%llu\n", (unsigned long long)pages,
	       (unsigned long long)(ops[0] + ops[1]));
	return 0;
}

static int partial(int node, uint64_t size, uint64_t idle)
{
	uint64_t p, x = seed + 11;

	fill_both(node, size, idle, &x);
	for (p = 0; p < pages; p++) {
		uint64_t v = xorshift64(&x);

		rep_stosq(mem + p * PAGE, v, PAGE / 16);
		rep_stosq(shadow + p * PAGE, v, PAGE / 16);
	}
	sleep(2);
	return compare("partial");
}

static int fill(int node, uint64_t size)
{
	double t0, ms;
	uint64_t p, i, wrong = 0;

	pages = size / PAGE;
	mem = map_on(node, size);
	stage("fill");
	t0 = now();
	for (p = 0; p < pages; p++)
		memset(mem + p * PAGE, (int)(p % 251) + 1, PAGE);
	ms = (now() - t0) * 1e3;
	stage("filled");
	for (p = 0; p < pages; p++)
		for (i = 0; i < PAGE; i++)
			wrong += mem[p * PAGE + i] != (uint8_t)(p % 251 + 1);
	if (wrong) {
		printf("wrong bytes=%llu of %llu pages\n", (unsigned long long)wrong, (unsigned long long)pages);
		return 1;
	}
	printf("ok fill pages=%llu ms=%.0f\n", (unsigned long long)pages, ms);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t size;
	int node;

	if (argc >= 5 && !strcmp(argv[1], "partial")) {
		node = atoi(argv[2]);
		size = strtoull(argv[3], NULL, 0);
		if (!size || size % PAGE)
			return 2;
		return partial(node, size, strtoull(argv[4], NULL, 0));
	}
	if (argc >= 4 && !strcmp(argv[1], "fill")) {
		node = atoi(argv[2]);
		size = strtoull(argv[3], NULL, 0);
		if (!size || size % PAGE)
			return 2;
		return fill(node, size);
	}
	if (argc != 7 || strcmp(argv[1], "race")) {
		fprintf(stderr, "usage: cxlt-prevent race NODE SIZE IDLE SECONDS SEED | partial NODE SIZE IDLE |"
			" fill NODE SIZE\n");
		return 2;
	}
	node = atoi(argv[2]);
	size = strtoull(argv[3], NULL, 0);
	seconds = strtoull(argv[5], NULL, 0);
	seed = strtoull(argv[6], NULL, 0);
	if (!size || size % (4 * PAGE) || size < (SHARED + 4) * PAGE || !seconds) {
		fprintf(stderr, "cxlt-prevent: SIZE a multiple of 16 KiB, 48 KiB at least, SECONDS > 0\n");
		return 2;
	}
	return race(node, size, strtoull(argv[4], NULL, 0));
}
