// SPDX-License-Identifier: Apache-2.0
/*
 * cxl-memtest: write a pattern into CXL memory and read it back.
 *
 *   cxl-memtest dax  DEV  SIZE [SEED] [write|verify|both]   via mmap of a devdax device
 *   cxl-memtest node NODE SIZE [SEED] [PAUSE|/GOFILE] [/AGAIN] anonymous memory bound to a NUMA node
 *
 * SIZE accepts K/M/G suffixes; for devdax it must be a multiple of the device's
 * alignment (2 MiB is safe). "dax ... write" and "dax ... verify" in separate
 * processes prove the data lives in the device, not in the process. For a node,
 * every page is checked with get_mempolicy(MPOL_F_NODE|MPOL_F_ADDR) to really
 * be on NODE. PAUSE: seconds to wait between writing and verifying (a host's memory
 * manager evicts the pages meanwhile); a path instead (starting with '/'): wait until that
 * file exists (the swap tier's recovery measurement, cxltrack.harness.swaptier: the harness
 * gives the memory back, then says go). Prints one "ok ..." line with the throughput and
 * verified_at= (CLOCK_BOOTTIME seconds, the clock of /proc/uptime, when every word was
 * checked), exits 1 on mismatch with a line "N of M words differ in P pages".
 * AGAIN (a path): verify once, print "pass 1 ok verified_at=...", keep the memory until that
 * file exists, then verify again (a workload whose pages were read back and stay in use: the
 * shared swap tier's overflow by the device's accessed bits, cxltrack.harness.swaptier).
 * CXL_MEMTEST_MIBPS=R in the environment (node only): fill at R MiB/s at most, a working set
 * that grows over time rather than at once (the host's agent of that overflow reacts in
 * seconds, where a guest-owned rule reacts in the swap-out path).
 * Uses raw syscalls so it needs no libnuma.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "memtest-pattern.h"
#include "numa.h"

#define MPOL_F_NODE (1 << 0)
#define MPOL_F_ADDR (1 << 1)

static uint64_t pattern(uint64_t seed, uint64_t i)
{
	return memtest_pattern(seed, i);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);
	switch (*end) {
	case 'G': case 'g': v <<= 10; /* fall through */
	case 'M': case 'm': v <<= 10; /* fall through */
	case 'K': case 'k': v <<= 10; break;
	}
	return v;
}

static void fill(volatile uint64_t *p, uint64_t words, uint64_t seed)
{
	for (uint64_t i = 0; i < words; i++)
		p[i] = pattern(seed, i);
}

/* fill() one MiB at a time, sleeping after each to stay at or below mibps MiB/s. */
static void fill_paced(volatile uint64_t *p, uint64_t words, uint64_t seed, double mibps)
{
	const uint64_t step = (1 << 20) / 8;
	double t0 = now();

	for (uint64_t done = 0; done < words; done += step) {
		uint64_t n = words - done < step ? words - done : step;
		double due;

		for (uint64_t i = done; i < done + n; i++)
			p[i] = pattern(seed, i);
		due = t0 + (double)(done + n) / step / mibps - now();
		if (due > 0) {
			struct timespec ts = { (time_t)due, (long)((due - (double)(time_t)due) * 1e9) };

			nanosleep(&ts, NULL);
		}
	}
}

static double boottime(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int check(volatile uint64_t *p, uint64_t words, uint64_t seed)
{
	uint64_t bad = 0, bad_pages = 0, last_page = UINT64_MAX;
	for (uint64_t i = 0; i < words; i++) {
		uint64_t want = pattern(seed, i), got = p[i];
		if (got != want) {
			if (i / 512 != last_page) {
				last_page = i / 512;
				bad_pages++;
			}
			if (bad < 5)
				fprintf(stderr, "mismatch at byte 0x%llx: got 0x%016llx want 0x%016llx\n",
					(unsigned long long)(i * 8), (unsigned long long)got,
					(unsigned long long)want);
			bad++;
		}
	}
	if (bad)
		fprintf(stderr, "%llu of %llu words differ in %llu pages\n", (unsigned long long)bad,
			(unsigned long long)words, (unsigned long long)bad_pages);
	return bad ? 1 : 0;
}

static int do_dax(const char *dev, uint64_t size, uint64_t seed, const char *what)
{
	int fd = open(dev, O_RDWR);
	if (fd < 0) {
		perror(dev);
		return 2;
	}
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		fprintf(stderr, "mmap %s size %llu: %s\n", dev, (unsigned long long)size, strerror(errno));
		return 2;
	}
	double t0 = now(), tw = 0, tr = 0;
	if (strcmp(what, "verify")) {
		fill(m, size / 8, seed);
		tw = now() - t0;
		/* Re-map so the read-back goes through a fresh mapping. */
		munmap(m, size);
		m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			perror("re-mmap");
			return 2;
		}
	}
	int rc = 0;
	if (strcmp(what, "write")) {
		double t1 = now();
		rc = check(m, size / 8, seed);
		tr = now() - t1;
	}
	munmap(m, size);
	close(fd);
	if (!rc)
		printf("ok dax %s bytes=%llu seed=%llu %s write_MiBps=%.1f read_MiBps=%.1f\n", dev,
		       (unsigned long long)size, (unsigned long long)seed, what,
		       tw > 0 ? size / 1048576.0 / tw : 0.0, tr > 0 ? size / 1048576.0 / tr : 0.0);
	return rc;
}

static void wait_for(const char *path)
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 };

	while (access(path, F_OK))
		nanosleep(&tick, NULL);
}

static int do_node(int node, uint64_t size, uint64_t seed, const char *pause, const char *again,
		   double mibps)
{
	long page = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	if (bind_to_node(m, size, node, CXLT_MPOL_MF_STRICT | CXLT_MPOL_MF_MOVE)) {
		perror("mbind");
		return 2;
	}
	double t0 = now();
	if (mibps > 0)
		fill_paced(m, size / 8, seed, mibps);
	else
		fill(m, size / 8, seed);
	double tw = now() - t0;
	uint64_t off_node = 0;
	if (pause && pause[0] == '/') {
		wait_for(pause);
	} else if (pause && atoi(pause) > 0) {
		sleep((unsigned int)atoi(pause));
	}
	for (uint64_t off = 0; off < size; off += (uint64_t)page) {
		int where = -1;
		if (syscall(SYS_get_mempolicy, &where, NULL, 0, (char *)m + off, MPOL_F_NODE | MPOL_F_ADDR)) {
			perror("get_mempolicy");
			return 2;
		}
		if (where != node) {
			if (off_node < 5)
				fprintf(stderr, "page at +0x%llx is on node %d, not %d\n",
					(unsigned long long)off, where, node);
			off_node++;
		}
	}
	double t1 = now();
	int rc = check(m, size / 8, seed);
	double tr = now() - t1, verified_at = boottime();
	if (again && !rc && !off_node) {
		printf("pass 1 ok verified_at=%.3f\n", verified_at);
		fflush(stdout);
		wait_for(again);
		t1 = now();
		rc = check(m, size / 8, seed);
		tr = now() - t1;
		verified_at = boottime();
	}
	if (off_node) {
		fprintf(stderr, "%llu pages not on node %d\n", (unsigned long long)off_node, node);
		rc = 1;
	}
	munmap(m, size);
	if (!rc)
		printf("ok node %d bytes=%llu seed=%llu pages_on_node=%llu write_MiBps=%.1f read_MiBps=%.1f "
		       "verified_at=%.3f\n",
		       node, (unsigned long long)size, (unsigned long long)seed,
		       (unsigned long long)(size / (uint64_t)page), size / 1048576.0 / tw,
		       size / 1048576.0 / tr, verified_at);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s dax DEV SIZE [SEED] [write|verify|both]\n"
				"       %s node NODE SIZE [SEED] [PAUSE|/GOFILE] [/AGAIN]\n", argv[0], argv[0]);
		return 2;
	}
	uint64_t size = parse_size(argv[3]);
	uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 0) : 1;
	if (!size || size % 4096) {
		fprintf(stderr, "SIZE must be a non-zero multiple of 4 KiB\n");
		return 2;
	}
	if (!strcmp(argv[1], "dax")) {
		const char *what = argc > 5 ? argv[5] : "both";
		if (strcmp(what, "write") && strcmp(what, "verify") && strcmp(what, "both")) {
			fprintf(stderr, "mode must be write, verify or both\n");
			return 2;
		}
		return do_dax(argv[2], size, seed, what);
	}
	if (!strcmp(argv[1], "node")) {
		const char *pause = argc > 5 ? argv[5] : NULL;
		const char *again = argc > 6 ? argv[6] : NULL;

		/* seconds, or a path to wait for: anything else is a typo, not "no pause" */
		if (pause && pause[0] != '/' && (!*pause || strspn(pause, "0123456789") != strlen(pause))) {
			fprintf(stderr, "PAUSE %s: seconds or an absolute path to wait for\n", pause);
			return 2;
		}
		const char *rate = getenv("CXL_MEMTEST_MIBPS");
		double mibps = 0;

		if (again && again[0] != '/') {
			fprintf(stderr, "AGAIN %s: an absolute path to wait for\n", again);
			return 2;
		}
		if (rate) {
			char *end;

			mibps = strtod(rate, &end);
			if (end == rate || *end || !(mibps > 0)) {
				fprintf(stderr, "CXL_MEMTEST_MIBPS=%s: a rate in MiB/s above 0\n", rate);
				return 2;
			}
		}
		return do_node(atoi(argv[2]), size, seed, pause, again, mibps);
	}
	fprintf(stderr, "unknown kind %s\n", argv[1]);
	return 2;
}
