// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-batset: CXLT_IOC_BAT_SET_ADDRS, block associations set from the
 * caller's addresses in batches (a hypervisor after its VM's disk reads).
 * Every entry of a batch lands on the device page its address maps, batches
 * longer than CXLT_BAT_ADDRS_MAX are split by libcxltrack, a bad entry stops
 * the batch with the entries before it set and `done` saying so, a bad
 * argument is refused before anything is set, and a caller without
 * CAP_SYS_ADMIN is refused. Needs the region's HPA map (cxl-region track).
 * --anon: the region is onlined as System RAM (kmem) and the caller's own
 * anonymous memory lies on it (run under `membind NODE`), as a hypervisor's
 * VM memory does when user space manages it with userfaultfd: such pages are
 * associated through their addresses too.
 *
 *   cxlt-batset DAX
 *   cxlt-batset --anon
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "libcxltrack.h"

#define PAGES 256

static struct cxltrack *t;
static struct cxltrack_dax dax;
static uint64_t page_size, first_page;

static void fail(const char *fmt, const char *what, int err)
{
	fprintf(stderr, "FAIL: ");
	fprintf(stderr, fmt, what, err);
	fprintf(stderr, "\n");
	exit(1);
}

static struct cxlt_bat_addr entry(uint64_t i, uint64_t block, uint32_t disk)
{
	return (struct cxlt_bat_addr){
		.addr = (uintptr_t)(dax.map + i * page_size), .block = block, .disk = disk,
	};
}

/* The association of the mapping's page i must be (block, disk), or none. */
static void expect_bat(uint64_t i, int valid, uint64_t block, uint32_t disk)
{
	uint64_t b;
	uint32_t d;
	int ret = cxltrack_bat_get(t, first_page + i, &b, &d);

	if (ret < 0)
		fail("%s: BAT_GET: %d", "expect_bat", ret);
	if (ret != valid || (valid && (b != block || d != disk))) {
		fprintf(stderr, "FAIL: page %" PRIu64 ": association %s block=%" PRIu64
			" disk=%u, expected %s block=%" PRIu64 " disk=%u\n", i,
			ret ? "valid" : "invalid", b, d, valid ? "valid" : "invalid", block, disk);
		exit(1);
	}
}

/* The block of page i after the batch of 1100 entries (entry j: page j % PAGES, block 5000 + j). */
static uint64_t last_block(uint64_t i)
{
	return 5000 + (i < 1100 % PAGES ? 1024 : 768) + i;
}

/* One batch that must stop at entry @done_want with @err. */
static void expect_stop(const char *what, struct cxlt_bat_addr *e, size_t n, int err,
			size_t done_want)
{
	size_t done = 99;
	int ret = cxltrack_bat_set_addrs(t, e, n, &done);

	if (ret != err || done != done_want) {
		fprintf(stderr, "FAIL: %s: got %d done=%zu, expected %d done=%zu\n", what, ret, done,
			err, done_want);
		exit(1);
	}
}

/* A malformed argument: refused with @err before any entry. */
static void expect_refused(const char *what, struct cxlt_bat_set_addrs a, int err)
{
	int ret = ioctl(t->fd, CXLT_IOC_BAT_SET_ADDRS, &a) ? -errno : 0;

	if (ret != err || a.done)
		fail("%s: wrong answer (%d)", what, ret);
}

/* Anonymous memory of the caller on the device (kmem, membind). */
static int anon_mode(void)
{
	struct cxlt_bat_addr e[64];
	volatile uint8_t *m;
	uint64_t pages[64];
	size_t done;
	int ret;

	m = aligned_alloc(page_size, 64 * page_size);
	if (!m)
		fail("%s: %d", "aligned_alloc", -ENOMEM);
	for (int i = 0; i < 64; i++) {
		m[i * page_size] = (uint8_t)i;	/* fault it in, on the bound node */
		ret = cxltrack_addr_page(t, m + i * page_size, &pages[i]);
		if (ret)
			fail("%s: %d (is the memory on the device? run under membind)", "ADDR_PAGE",
			     ret);
		e[i] = (struct cxlt_bat_addr){
			.addr = (uintptr_t)(m + i * page_size), .block = 300 + i, .disk = 4,
		};
	}
	ret = cxltrack_bat_set_addrs(t, e, 64, &done);
	if (ret || done != 64)
		fail("%s: %d", "batch of anonymous pages", ret);
	for (int i = 0; i < 64; i++) {
		uint64_t b;
		uint32_t d;

		if (cxltrack_bat_get(t, pages[i], &b, &d) != 1 || b != 300u + i || d != 4)
			fail("%s: page %d not associated", "anon", i);
	}
	m[7 * page_size + 9] = 1;	/* a store still invalidates */
	if (cxltrack_bat_get(t, pages[7], NULL, NULL) != 0)
		fail("%s: %d", "anon: store did not invalidate", 7);
	/*
	 * A discard (no data changes) through the caller's own mapping: allowed
	 * on System RAM; by page number alone, or through a mapping of another
	 * page, refused even to root.
	 */
	{
		struct cxlt_bat d = { .op = CXLT_BAT_DISCARD, .page = pages[8] };

		if (ioctl(t->fd, CXLT_IOC_BAT, &d) == 0 || errno != EPERM)
			fail("%s: %d", "anon: discard by page number not refused", errno);
		d.flags = CXLT_BAT_F_ADDR;
		d.addr = (uintptr_t)(m + 9 * page_size);
		if (ioctl(t->fd, CXLT_IOC_BAT, &d) == 0 || errno != EPERM)
			fail("%s: %d", "anon: discard through another page's mapping not refused",
			     errno);
		d.addr = (uintptr_t)(m + 8 * page_size);
		if (ioctl(t->fd, CXLT_IOC_BAT, &d) || !d.valid || d.block != 308 || d.disk != 4)
			fail("%s: %d", "anon: discard through the own mapping", errno);
		if (cxltrack_bat_get(t, pages[8], NULL, NULL) != 0 ||
		    cxltrack_bat_get(t, pages[9], NULL, NULL) != 1)
			fail("%s: %d", "anon: discard took the wrong association", 8);
	}
	/*
	 * A page its owner write-protected with userfaultfd (a memory manager
	 * evicting it) is still the owner's to discard through. A driver that
	 * pinned it for write would fault into the owner's handler (here
	 * nobody: the call would never return).
	 */
	{
		uint8_t *p10 = (uint8_t *)m + 10 * page_size;
		int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		struct uffdio_api api = {
			.api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP,
		};
		struct uffdio_register reg = {
			.range = { .start = (uintptr_t)p10, .len = page_size },
			.mode = UFFDIO_REGISTER_MODE_WP,
		};
		struct uffdio_writeprotect wp = {
			.range = reg.range, .mode = UFFDIO_WRITEPROTECT_MODE_WP,
		};
		struct cxlt_bat d = {
			.op = CXLT_BAT_DISCARD, .flags = CXLT_BAT_F_ADDR, .page = pages[10],
			.addr = (uintptr_t)p10,
		};

		if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg) ||
		    ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
			fail("%s: %d", "anon: userfaultfd write-protection", errno);
		if (ioctl(t->fd, CXLT_IOC_BAT, &d) || !d.valid || d.block != 310)
			fail("%s: %d", "anon: discard of a write-protected page", errno);
		close(uffd);
	}
	/* A page mapped read-only: the caller could not write it, so no discard. */
	{
		struct cxlt_bat d = {
			.op = CXLT_BAT_DISCARD, .flags = CXLT_BAT_F_ADDR, .page = pages[11],
			.addr = (uintptr_t)(m + 11 * page_size),
		};

		if (mprotect((void *)(m + 11 * page_size), page_size, PROT_READ))
			fail("%s: %d", "mprotect", errno);
		if (ioctl(t->fd, CXLT_IOC_BAT, &d) == 0 || errno != EPERM)
			fail("%s: %d", "anon: discard through a read-only mapping not refused", errno);
		if (cxltrack_bat_get(t, pages[11], NULL, NULL) != 1)
			fail("%s: %d", "anon: refused discard took the association", 11);
	}
	printf("ok batset --anon: 64 anonymous pages on the device (System RAM) associated "
	       "through their addresses, device pages 0x%" PRIx64 "..., discards through "
	       "the own mapping (also write-protected with userfaultfd), none through a "
	       "read-only one\n", pages[0]);
	return 0;
}

int main(int argc, char **argv)
{
	static struct cxlt_bat_addr e[1100];
	uint8_t *heap;
	size_t done;
	pid_t pid;
	int status, ret;

	if (argc != 2) {
		fprintf(stderr, "usage: cxlt-batset DAX | --anon\n");
		return 2;
	}
	ret = cxltrack_open(NULL, &t);
	if (ret)
		fail("%s: %d", "open", ret);
	page_size = 1ull << t->info.page_shift;
	if (!strcmp(argv[1], "--anon"))
		return anon_mode();
	ret = cxltrack_dax_open(argv[1], PAGES * page_size, &dax);
	if (ret)
		fail("%s: %d", argv[1], ret);
	first_page = dax.dpa_base / page_size;
	heap = aligned_alloc(page_size, page_size);
	if (!heap)
		fail("%s: %d", "aligned_alloc", -ENOMEM);
	memset(heap, 1, page_size);

	/* One batch: every page gets its own block. */
	for (uint64_t i = 0; i < 200; i++)
		e[i] = entry(i, 1000 + i, 1 + i % 3);
	ret = cxltrack_bat_set_addrs(t, e, 200, &done);
	if (ret || done != 200)
		fail("%s: %d", "batch of 200", ret);
	for (uint64_t i = 0; i < 200; i++)
		expect_bat(i, 1, 1000 + i, 1 + i % 3);
	expect_bat(200, 0, 0, 0);
	/* The device still invalidates on a store. */
	dax.map[5 * page_size + 100] = 1;
	expect_bat(5, 0, 0, 0);

	/* More entries than one call takes: split, in order (the last of a page wins). */
	for (uint64_t i = 0; i < 1100; i++)
		e[i] = entry(i % PAGES, 5000 + i, 2);
	ret = cxltrack_bat_set_addrs(t, e, 1100, &done);
	if (ret || done != 1100)
		fail("%s: %d", "batch of 1100", ret);
	for (uint64_t i = 0; i < PAGES; i++)
		expect_bat(i, 1, last_block(i), 2);

	/* A bad entry stops the batch there; the entries before it are set. */
	e[0] = entry(10, 7, 3);
	e[1] = entry(11, 8, 3);
	e[2] = entry(12, 9, 3);
	e[2].addr += 8;
	e[3] = entry(13, 10, 3);
	expect_stop("misaligned address", e, 4, -EINVAL, 2);
	expect_bat(10, 1, 7, 3);
	expect_bat(11, 1, 8, 3);
	expect_bat(13, 1, last_block(13), 2);	/* after the stop: untouched */
	e[2] = entry(12, 9, 3);
	e[2].reserved = 1;
	expect_stop("reserved field", e, 3, -EINVAL, 2);
	e[1].addr = (uintptr_t)heap;
	expect_stop("ordinary memory", e, 2, -ENXIO, 1);
	e[1].addr = 4096;
	expect_stop("unmapped address", e, 2, -EFAULT, 1);
	e[1] = entry(11, 1ull << t->info.block_bits, 3);
	expect_stop("block beyond block_bits", e, 2, -ERANGE, 1);

	/* Malformed arguments: nothing set. */
	e[0] = entry(20, 1, 1);
	expect_refused("count 0", (struct cxlt_bat_set_addrs){ .entries = (uintptr_t)e }, -EINVAL);
	expect_refused("count > max", (struct cxlt_bat_set_addrs){
		.entries = (uintptr_t)e, .count = CXLT_BAT_ADDRS_MAX + 1 }, -EINVAL);
	expect_refused("flags", (struct cxlt_bat_set_addrs){
		.entries = (uintptr_t)e, .count = 1, .flags = 1 }, -EINVAL);
	expect_refused("reserved", (struct cxlt_bat_set_addrs){
		.entries = (uintptr_t)e, .count = 1, .reserved = { 0, 1 } }, -EINVAL);
	expect_refused("entries NULL", (struct cxlt_bat_set_addrs){ .count = 1 }, -EFAULT);
	expect_bat(20, 1, last_block(20), 2);

	/* Without CAP_SYS_ADMIN (the file handed to a tenant): refused. */
	pid = fork();
	if (pid < 0)
		fail("%s: %d", "fork", -errno);
	if (!pid) {
		if (setgid(65534) || setuid(65534))
			_exit(3);
		ret = cxltrack_bat_set_addrs(t, e, 1, &done);
		_exit(ret == -EPERM && !done ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fail("%s: status %d", "unprivileged caller not refused", status);
	expect_bat(20, 1, last_block(20), 2);

	free(heap);
	cxltrack_dax_close(&dax);
	cxltrack_close(t);
	printf("ok batset: batches of 200 and 1100 (split) set from addresses, bad entries stop "
	       "with done, bad arguments and an unprivileged caller refused\n");
	return 0;
}
