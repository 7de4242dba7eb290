// SPDX-License-Identifier: GPL-2.0-only
/*
 * device_dirty_log_test: the dirty log of a memslot must name exactly the
 * pages the guest wrote, whether KVM write-protects them or a memory device
 * (cxltrack) logs their writes.
 *
 * Each round the guest writes a pseudo-random third of the memslot's pages
 * (the round number into the first 8 bytes of each), then stops
 * (GUEST_SYNC). With the vCPU out of KVM_RUN, the host reads the dirty log
 * (KVM_GET_DIRTY_LOG, or GET + CLEAR with manual protection) and checks:
 * every page whose contents changed is reported, and without page migration
 * no other page is. With -m, a second thread migrates the memslot's pages
 * to another NUMA node and back while the guest writes (MMU-notifier
 * invalidations: KVM may then report more pages, never fewer). With -l,
 * a command makes the device lose its dirty bits in round 2, after the
 * guest's writes and before the log is read (a tracker reset, tracking
 * switched off and on): that round's log must then name every page the
 * guest has written so far, and the rounds after it must be exact again.
 *
 *   device_dirty_log_test [-f FILE] [-n PAGES] [-r ROUNDS] [-c] [-m A,B] [-l CMD]
 *     -f FILE   back the memslot with a shared mapping of FILE (a devdax
 *               device such as /dev/dax0.0) instead of anonymous memory
 *     -n PAGES  memslot size in 4 KiB pages (default 1024)
 *     -r ROUNDS rounds (default 8)
 *     -c        manual protection, initially all set (KVM_CLEAR_DIRTY_LOG)
 *     -m A,B    keep migrating the pages between NUMA nodes A and B
 *     -l CMD    run CMD (sh -c) in round 2 before the log is read; it must
 *               make the device lose its dirty bits
 *
 * Run it with its memory bound to the device's NUMA node (membind) to test
 * the device path, or anywhere for KVM's own write protection. Prints
 * "device_dirty_log_test: PASS ..." as its last line.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bitmap.h>

#include "kvm_util.h"
#include "processor.h"
#include "test_util.h"
#include "ucall_common.h"

#define TEST_SLOT	10
#define TEST_GPA	0x40000000ul
#define TEST_GVA	0x40000000ul
#define PAGE_4K		4096ul
#define GUEST_PASSES	4
#define MPOL_MF_MOVE	(1 << 1)
#define LOSS_ROUND	2

static uint64_t npages = 1024;

/* Same answer in guest and host: is @page written in @round? */
static bool page_written(uint64_t round, uint64_t page)
{
	uint64_t x = round * 0x9e3779b97f4a7c15ull ^ page * 0xc2b2ae3d27d4eb4full;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return x % 3 == 0;
}

static void guest_code(void)
{
	uint64_t round, page, pass;

	for (round = 1;; round++) {
		/* Several passes: give a migrating thread time to race the writes. */
		for (pass = 0; pass < GUEST_PASSES; pass++)
			for (page = 0; page < npages; page++)
				if (page_written(round, page))
					vcpu_arch_put_guest(*(uint64_t *)(TEST_GVA + page * PAGE_4K),
							    round);
		GUEST_SYNC(round);
	}
}

struct migrator {
	pthread_t thread;
	atomic_bool stop;
	void *mem;
	int node, home;	/* alternate between these */
	uint64_t moves;
};

static void *migrate_loop(void *arg)
{
	struct migrator *m = arg;
	void **pages = calloc(npages, sizeof(*pages));
	int *nodes = calloc(npages, sizeof(*nodes));
	int *status = calloc(npages, sizeof(*status));
	uint64_t i;
	int to;

	TEST_ASSERT(pages && nodes && status, "out of memory");
	for (i = 0; i < npages; i++)
		pages[i] = (char *)m->mem + i * PAGE_4K;
	for (to = m->node; !atomic_load(&m->stop); to = to == m->node ? m->home : m->node) {
		for (i = 0; i < npages; i++)
			nodes[i] = to;
		/* Pages not yet faulted in report -ENOENT in status: fine. */
		if (syscall(SYS_move_pages, 0, npages, pages, nodes, status, MPOL_MF_MOVE) == 0)
			m->moves++;
	}
	free(pages);
	free(nodes);
	free(status);
	return NULL;
}

static void usage(const char *name)
{
	printf("usage: %s [-f FILE] [-n PAGES] [-r ROUNDS] [-c] [-m A,B] [-l CMD]\n", name);
	exit(KSFT_FAIL);
}

int main(int argc, char *argv[])
{
	uint64_t rounds = 8, round, page, reported, extra, total_extra = 0, total = 0;
	unsigned long *bmap;
	struct migrator mig = { .node = -1, .home = -1 };
	const char *file = NULL, *loss_cmd = NULL;
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	bool clear = false;
	struct ucall uc;
	size_t size;
	void *mem;
	int opt, fd = -1;

	while ((opt = getopt(argc, argv, "f:n:r:cm:l:")) != -1) {
		switch (opt) {
		case 'f':
			file = optarg;
			break;
		case 'n':
			npages = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			rounds = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			clear = true;
			break;
		case 'l':
			loss_cmd = optarg;
			break;
		case 'm':
			if (sscanf(optarg, "%d,%d", &mig.node, &mig.home) != 2 ||
			    mig.node < 0 || mig.home < 0)
				usage(argv[0]);
			break;
		default:
			usage(argv[0]);
		}
	}
	TEST_ASSERT(npages >= 64 && rounds >= 2, "need -n >= 64 and -r >= 2");
	TEST_ASSERT(!loss_cmd || rounds > LOSS_ROUND, "-l needs -r > %d", LOSS_ROUND);
	TEST_ASSERT(!(file && mig.node >= 0), "-m needs anonymous memory (no -f)");

	/* A devdax mapping must be a multiple of its alignment (2 MiB). */
	size = npages * PAGE_4K;
	if (file)
		size = (size + (2ul << 20) - 1) & ~((2ul << 20) - 1);
	if (file) {
		fd = open(file, O_RDWR);
		TEST_ASSERT(fd >= 0, "open %s", file);
		mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	} else {
		mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	}
	TEST_ASSERT(mem != MAP_FAILED, "mmap %zu bytes of %s", size, file ?: "anonymous memory");

	vm = __vm_create_with_one_vcpu(&vcpu, npages, guest_code);
	if (clear) {
		uint64_t caps = kvm_check_cap(KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2);

		TEST_REQUIRE(caps & KVM_DIRTY_LOG_INITIALLY_SET);
		vm_enable_cap(vm, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2,
			      KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE | KVM_DIRTY_LOG_INITIALLY_SET);
	}
	vm_set_user_memory_region(vm, TEST_SLOT, KVM_MEM_LOG_DIRTY_PAGES, TEST_GPA, size, mem);
	virt_map(vm, TEST_GVA, TEST_GPA, npages);
	sync_global_to_guest(vm, npages);
	bmap = bitmap_zalloc(size / PAGE_4K);

	if (mig.node >= 0) {
		mig.mem = mem;
		pthread_create(&mig.thread, NULL, migrate_loop, &mig);
	}

	for (round = 1; round <= rounds; round++) {
		vcpu_run(vcpu);
		switch (get_ucall(vcpu, &uc)) {
		case UCALL_SYNC:
			TEST_ASSERT(uc.args[1] == round, "guest synced round %lu, expected %lu",
				    uc.args[1], round);
			break;
		case UCALL_ABORT:
			REPORT_GUEST_ASSERT(uc);
			break;
		default:
			TEST_FAIL("unexpected exit %s", exit_reason_str(vcpu->run->exit_reason));
		}

		if (loss_cmd && round == LOSS_ROUND) {
			int ret = system(loss_cmd);

			TEST_ASSERT(ret == 0, "'%s' failed (status %d)", loss_cmd, ret);
		}
		/* The vCPU is stopped: this is what a final round looks like. */
		kvm_vm_get_dirty_log(vm, TEST_SLOT, bmap);
		if (clear)
			kvm_vm_clear_dirty_log(vm, TEST_SLOT, bmap, 0, size / PAGE_4K);

		reported = extra = 0;
		for (page = 0; page < npages; page++) {
			uint64_t v = *(volatile uint64_t *)((char *)mem + page * PAGE_4K);
			bool dirty = test_bit(page, bmap);
			/* Initially all set: the first round reports every page. */
			bool want = page_written(round, page) || (clear && round == 1);
			uint64_t r;

			/* After a loss: every page written in any round so far. */
			for (r = 1; loss_cmd && round == LOSS_ROUND && r < round; r++)
				want |= page_written(r, page);

			if (page_written(round, page))
				TEST_ASSERT(v == round, "round %lu page %lu holds %lu", round, page, v);
			TEST_ASSERT(dirty || !want,
				    "round %lu: page %lu was written but is not in the dirty log",
				    round, page);
			reported += dirty;
			if (dirty && !want)
				extra++;
		}
		TEST_ASSERT(mig.node >= 0 || (loss_cmd && round == LOSS_ROUND) || !extra,
			    "round %lu: %lu pages in the dirty log were not written", round, extra);
		total += reported;
		total_extra += extra;
		pr_info("round %lu: %lu pages dirty, %lu not written by the guest\n",
			round, reported, extra);
	}

	if (mig.node >= 0) {
		atomic_store(&mig.stop, true);
		pthread_join(mig.thread, NULL);
		TEST_ASSERT(mig.moves, "no page migration succeeded");
	}
	kvm_vm_free(vm);
	printf("device_dirty_log_test: PASS rounds=%lu pages=%lu reported=%lu extra=%lu moves=%lu\n",
	       rounds, npages, total, total_extra, mig.moves);
	return 0;
}
