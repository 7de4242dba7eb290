// SPDX-License-Identifier: GPL-2.0-only
/*
 * prevent_reads_test: KVM's False Reads Preventer (KVM_SET_PREVENT_READS,
 * kvm/patches/0004) on guest memory on a cxltrack device.
 *
 * The host plays the VMM: it fills the test pages with their "disk"
 * contents, flags some of them (as if evicted) and then scribbles over
 * their frames, so that any byte KVM took from the frame instead of the
 * slot or the disk shows. A byte model (shadow) follows every guest write.
 *
 *   stage 1  the guest writes flagged pages: a whole page with rep stosq,
 *            partial and overlapping stores of 1-8 bytes, rep movsb across
 *            a page end, a misaligned store across the end of one flagged
 *            range into the next; then loads bytes it wrote (served from
 *            the slots: no exit), also with rep movsb out of flagged pages. The host checks each page's state
 *            (FULL for the rep stosq page, the written byte count of the
 *            others), each slot's byte-valid mask against the model, the
 *            loaded values, and that every written page is in the dirty log.
 *   stage 2  the guest loads bytes it did not write: KVM_EXIT_MMIO. The
 *            host fetches the old contents of the pages that are not FULL,
 *            unflags the range (the slots merge, slot bytes win) and
 *            completes the load from memory. Every byte of the range must
 *            then equal the model; the FULL page was never fetched.
 *   stage 3  more flagged pages (one range each) than free slots: stores
 *            that find no slot exit (KVM_EXIT_MMIO write); the host fetches
 *            the page, unflags it and applies the store.
 *            Then every remaining range is fetched and unflagged.
 *   stage 4  instructions the emulator cannot run on a flagged page: a call
 *            into code on one (its frame holds no instruction bytes), an
 *            x87 store into another. Each exits with KVM_EXIT_MEMORY_FAULT
 *            (KVM_RUN fails with EFAULT); the host fetches and unflags the
 *            page, and the CPU runs the instruction on memory.
 *   stage 5  two vCPUs write the even and the odd qwords of one flagged
 *            page at the same time: one slot, FULL, merged without a read.
 *   stage 6  the device's slot timeout (CXLT_IOC_CTRL) for a partly written
 *            page: the range's eventfd fires, the page shows the TIMEOUT
 *            event (stage 1 checked the FULL event of the rep stosq page and
 *            the NONSEQ event of the pages not written front to back). The
 *            host then drops the page (MADV_DONTNEED) before its fetch, which
 *            faults in a new frame: the slot must merge into that one.
 *            Last, a third vCPU keeps storing into a flagged page while the
 *            host unflags it: no store is lost or overtaken by the merge.
 *   stage 7  random stores (seed: -s, default 1) of 1, 2, 4 or 8 bytes at any
 *            offset of range A, flagged again, some across its end; each
 *            followed by a load of the same bytes (from the slot); then
 *            the slots' masks, a fetch and the merge against the model.
 *   end      every byte of every page equals the model.
 *
 * Run it with its memory bound to the device's NUMA node (membind). Prints
 * "prevent_reads_test: PASS ..." as its last line; exits with KSFT_SKIP
 * without KVM_CAP_PREVENT_READS.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/bitmap.h>
#include <linux/cxltrack.h>

#include "kvm_util.h"
#include "processor.h"
#include "test_util.h"
#include "ucall_common.h"

#define TEST_SLOT	10
#define TEST_GPA	0x40000000ul
#define TEST_GVA	0x40000000ul
#define PAGE_4K		4096ul
#define NPAGES		32ul
/* Stage 1/2: range A = pages 0-3, range B = pages 4-5. */
#define A_FIRST		0
#define A_PAGES		4
#define B_FIRST		4
#define B_PAGES		2
/* Stage 3: pages 6.. as one-page ranges, more than the device's slots. */
#define X_FIRST		6
#define X_PAGES		20
#define CODE_PAGE	26	/* stage 4: "ret" at offset 0 */
#define FPU_PAGE	27	/* stage 4: fstpl into it */
#define FPU_OFF		16
#define RACE_PAGE	28	/* stage 5 */
#define TIMEOUT_PAGE	29	/* stage 6 */
#define TIMEOUT_MS	20
#define SRC_PAGE	30	/* never flagged: rep movsb's source */
#define COPY_OFF	1024	/* rep movsb out of flagged pages lands here */
#define UNFLAG_PAGE	31	/* stage 6: unflagged while a vCPU writes it */
#define WRITER_PASSES	64
#define RANDOM_STORES	400

static uint64_t seed = 1;	/* stage 7's stores, the same in guest and host */

static uint64_t next_random(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Stage 7's i-th store: where (offset from range A's start), how long, what. */
static void random_store(uint64_t *x, uint64_t *off, uint32_t *len, uint64_t *val)
{
	uint64_t r = next_random(x);

	*len = 1u << (r & 3);
	*off = (r >> 2) % (A_PAGES * PAGE_4K);
	*val = next_random(x);
}
#define SCRIBBLE	0xdd
#define STOSQ_VAL	0x0123456789abcdefull

static uint8_t *page_gva(uint64_t page)
{
	return (uint8_t *)(TEST_GVA + page * PAGE_4K);
}

/* Partial and overlapping stores of stage 1 (the same table in guest and host). */
struct store {
	uint32_t page, off, len;
	uint64_t val;
};

static const struct store stores[] = {
	{ 1, 0, 8, 0x1111111111111111ull },
	{ 1, 64, 8, 0x2222222222222222ull },
	{ 1, 7, 1, 0x33 },		/* overwrites the last byte of the first */
	{ 1, 66, 2, 0x4444 },		/* inside the second */
	{ 1, 100, 4, 0x55555555 },
	{ 1, 4088, 8, 0x6666666666666666ull },	/* the page's last qword */
	{ 3, 4092, 8, 0x7777777788888888ull },	/* into page 4: ranges A and B */
};

static void store(uint8_t *p, uint32_t len, uint64_t val)
{
	switch (len) {
	case 1:
		*(volatile uint8_t *)p = val;
		break;
	case 2:
		*(volatile uint16_t *)p = val;
		break;
	case 4:
		*(volatile uint32_t *)p = val;
		break;
	default:
		*(volatile uint64_t *)p = val;
	}
}

static void guest_code(void)
{
	uint64_t i, n, v0, v1, v2;
	uint8_t *d, *s;

	/* rep movsb's source, in an unflagged page. */
	for (i = 0; i < 64; i++)
		page_gva(SRC_PAGE)[i] = 0xa0 + i;

	/* Stage 1: a full page, partial stores, rep movsb across a page end. */
	d = page_gva(0);
	n = PAGE_4K / 8;
	asm volatile("rep stosq" : "+D"(d), "+c"(n) : "a"(STOSQ_VAL) : "memory");
	for (i = 0; i < ARRAY_SIZE(stores); i++)
		store(page_gva(stores[i].page) + stores[i].off, stores[i].len, stores[i].val);
	d = page_gva(2) + PAGE_4K - 32;
	s = page_gva(SRC_PAGE);
	n = 64;
	asm volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
	/* Loads of written bytes: from the slots. */
	v0 = *(volatile uint64_t *)(page_gva(0) + 2048);
	v1 = *(volatile uint64_t *)(page_gva(1) + 0);
	v2 = *(volatile uint64_t *)(page_gva(2) + PAGE_4K - 8);
	d = page_gva(SRC_PAGE) + COPY_OFF;
	s = page_gva(2) + PAGE_4K - 32;
	n = 64;
	asm volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
	GUEST_SYNC_ARGS(1, v0, v1, v2, *(volatile uint32_t *)(page_gva(3) + 4092));

	/* Stage 2: bytes nobody wrote: the VMM must fetch. */
	v0 = *(volatile uint64_t *)(page_gva(1) + 2000);
	GUEST_SYNC_ARGS(2, v0, 0, 0, 0);

	/* Stage 3: a qword into each page of X. */
	for (i = 0; i < X_PAGES; i++)
		store(page_gva(X_FIRST + i) + 8 * i, 8, 0xc0c0c0c000000000ull | i);
	GUEST_SYNC(3);

	/* Stage 4: the emulator cannot fetch from, nor run fstpl on, these. */
	((void (*)(void))page_gva(CODE_PAGE))();
	asm volatile("fldz\n\tfstpl (%0)" : : "r"(page_gva(FPU_PAGE) + FPU_OFF) : "memory");
	GUEST_SYNC(4);

	/* Stage 5: the even qwords, while the other vCPU writes the odd ones. */
	for (i = 0; i < PAGE_4K / 8; i += 2)
		store(page_gva(RACE_PAGE) + 8 * i, 8, 0xa5a5a5a500000000ull | i);
	GUEST_SYNC(5);

	/* Stage 6: a partial page, left until its slot times out. */
	store(page_gva(TIMEOUT_PAGE) + 512, 8, 0x7171717171717171ull);
	GUEST_SYNC(6);

	/* Stage 7: random stores, each read back from the slot at once. */
	{
		uint64_t x = seed, off, val, got;
		uint32_t len;

		for (i = 0; i < RANDOM_STORES; i++) {
			random_store(&x, &off, &len, &val);
			store(page_gva(A_FIRST) + off, len, val);
			switch (len) {
			case 1:
				got = *(volatile uint8_t *)(page_gva(A_FIRST) + off);
				break;
			case 2:
				got = *(volatile uint16_t *)(page_gva(A_FIRST) + off);
				break;
			case 4:
				got = *(volatile uint32_t *)(page_gva(A_FIRST) + off);
				break;
			default:
				got = *(volatile uint64_t *)(page_gva(A_FIRST) + off);
			}
			GUEST_ASSERT_EQ(got, len == 8 ? val : val & ((1ull << (8 * len)) - 1));
		}
	}
	GUEST_SYNC(7);
	GUEST_DONE();
}

/* Every qword of the page, pass after pass: the last pass's values win. */
static void writer_code(void)
{
	uint64_t p, q;

	for (p = 1; p <= WRITER_PASSES; p++)
		for (q = 0; q < PAGE_4K / 8; q++)
			store(page_gva(UNFLAG_PAGE) + 8 * q, 8, p << 32 | q);
	GUEST_DONE();
}

static void racer_code(void)
{
	uint64_t i;

	for (i = 1; i < PAGE_4K / 8; i += 2)
		store(page_gva(RACE_PAGE) + 8 * i, 8, 0x5a5a5a5a00000000ull | i);
	GUEST_DONE();
}

static uint8_t *mem;			/* the host's mapping of the test pages */
static uint8_t disk[NPAGES * PAGE_4K];	/* the pages' old contents */
static uint8_t shadow[NPAGES * PAGE_4K];	/* what the guest must see */
/* Bytes written to each flagged page since it was flagged (its slot's mask). */
static uint8_t written[NPAGES * PAGE_4K];
static bool flagged[NPAGES];
static int efd;		/* every range's eventfd */
static uint64_t exits_read, exits_write, exits_fault;

static void model_write(uint64_t gpa, const void *val, uint64_t len)
{
	uint64_t off = gpa - TEST_GPA;

	memcpy(shadow + off, val, len);
	memset(written + off, 1, len);
}

static void prevent(struct kvm_vm *vm, uint64_t page, uint64_t n, bool set)
{
	struct kvm_prevent_reads pr = {
		.gpa = TEST_GPA + page * PAGE_4K,
		.size = n * PAGE_4K,
		.flags = set ? KVM_PREVENT_READS_SET | KVM_PREVENT_READS_EVENTFD : 0,
		.eventfd = set ? efd : 0,
	};
	uint64_t i;

	vm_ioctl(vm, KVM_SET_PREVENT_READS, &pr);
	for (i = page; i < page + n; i++) {
		flagged[i] = set;
		memset(written + i * PAGE_4K, 0, PAGE_4K);
		/* Evicted: written to "disk", then the frame's contents are gone. */
		if (set) {
			memcpy(disk + i * PAGE_4K, mem + i * PAGE_4K, PAGE_4K);
			memset(mem + i * PAGE_4K, SCRIBBLE, PAGE_4K);
		}
	}
}

static void query(struct kvm_vm *vm, uint64_t page, uint64_t n,
		  struct kvm_prevent_page_state *st)
{
	struct kvm_prevent_query q = {
		.gpa = TEST_GPA + page * PAGE_4K,
		.npages = n,
		.pages = (uint64_t)st,
	};

	vm_ioctl(vm, KVM_GET_PREVENT_READS, &q);
}

/* The state KVM reports must be the model's; the slot's mask too. */
static void check_state(struct kvm_vm *vm, uint64_t page, uint64_t n)
{
	struct kvm_prevent_page_state st[NPAGES];
	uint8_t mask[CXLT_SLOT_BYTES / 8];
	uint64_t i, b, count;
	char dev[32];
	int fd;

	query(vm, page, n, st);
	for (i = 0; i < n; i++) {
		uint64_t p = page + i;

		for (count = 0, b = 0; b < PAGE_4K; b++)
			count += written[p * PAGE_4K + b];
		if (!flagged[p]) {
			TEST_ASSERT(st[i].state == KVM_PREVENT_PAGE_NONE,
				    "page %lu: state %u, not flagged", p, st[i].state);
			continue;
		}
		TEST_ASSERT(st[i].valid_bytes == count,
			    "page %lu: %u valid bytes, the guest wrote %lu", p,
			    st[i].valid_bytes, count);
		TEST_ASSERT(st[i].state == (!count ? KVM_PREVENT_PAGE_EMPTY :
					    count == PAGE_4K ? KVM_PREVENT_PAGE_FULL :
					    KVM_PREVENT_PAGE_PARTIAL),
			    "page %lu: state %u with %lu bytes written", p, st[i].state, count);
		if (!count)
			continue;
		/* Exactly the bytes the guest wrote are valid in the device's slot. */
		snprintf(dev, sizeof(dev), "/dev/cxltrack%u", st[i].tracker);
		fd = open(dev, O_RDWR);
		TEST_ASSERT(fd >= 0, "open %s", dev);
		{
			struct cxlt_slot_query sq = {
				.slot = st[i].slot,
				.mask = (uint64_t)mask,
			};

			TEST_ASSERT(!ioctl(fd, CXLT_IOC_SLOT_QUERY, &sq), "SLOT_QUERY %d", st[i].slot);
			TEST_ASSERT(sq.state == CXLT_SLOTST_OPEN && sq.valid_bytes == count &&
				    sq.full == (count == PAGE_4K) && sq.tag == TEST_GPA + p * PAGE_4K,
				    "page %lu slot %d: state %u valid %u full %u tag %llx", p,
				    st[i].slot, sq.state, sq.valid_bytes, sq.full, sq.tag);
		}
		close(fd);
		for (b = 0; b < PAGE_4K; b++)
			TEST_ASSERT(!!(mask[b / 8] & (1u << (b % 8))) == written[p * PAGE_4K + b],
				    "page %lu byte %lu: slot mask %d, model %d", p, b,
				    !!(mask[b / 8] & (1u << (b % 8))), written[p * PAGE_4K + b]);
	}
}

/*
 * The VMM's fetch: the old contents into every page of the range that is not
 * FULL (a FULL page needs no read), then unflag (the slots merge over them).
 */
static void fetch_and_unflag(struct kvm_vm *vm, uint64_t page, uint64_t n, uint64_t *fetched)
{
	struct kvm_prevent_page_state st[NPAGES];
	uint64_t i;

	query(vm, page, n, st);
	for (i = 0; i < n; i++) {
		if (st[i].state == KVM_PREVENT_PAGE_FULL)
			continue;
		memcpy(mem + (page + i) * PAGE_4K, disk + (page + i) * PAGE_4K, PAGE_4K);
		(*fetched)++;
	}
	prevent(vm, page, n, false);
}

static void check_pages(uint64_t page, uint64_t n, const char *when)
{
	uint64_t b;

	for (b = page * PAGE_4K; b < (page + n) * PAGE_4K; b++)
		TEST_ASSERT(mem[b] == shadow[b], "%s: page %lu byte %lu is %#x, expected %#x",
			    when, b / PAGE_4K, b % PAGE_4K, mem[b], shadow[b]);
}

/* The range (first page, pages) a flagged page belongs to. */
static void range_of(uint64_t p, uint64_t *first, uint64_t *n)
{
	if (p >= A_FIRST && p < A_FIRST + A_PAGES) {
		*first = A_FIRST;
		*n = A_PAGES;
	} else if (p >= B_FIRST && p < B_FIRST + B_PAGES) {
		*first = B_FIRST;
		*n = B_PAGES;
	} else {
		*first = p;
		*n = 1;
	}
}

/*
 * KVM_EXIT_MMIO on a flagged page: fetch + unflag its range, then complete
 * the access on memory (a store after the merge: it is the newest).
 */
static void handle_mmio(struct kvm_vm *vm, struct kvm_run *run, uint64_t *fetched)
{
	uint64_t gpa = run->mmio.phys_addr, off = gpa - TEST_GPA, first, n;

	TEST_ASSERT(gpa >= TEST_GPA && off + run->mmio.len <= NPAGES * PAGE_4K &&
		    flagged[off / PAGE_4K], "MMIO exit at %lx, not a flagged page", gpa);
	range_of(off / PAGE_4K, &first, &n);
	fetch_and_unflag(vm, first, n, fetched);
	if (run->mmio.is_write) {
		exits_write++;
		memcpy(mem + off, run->mmio.data, run->mmio.len);
		model_write(gpa, run->mmio.data, run->mmio.len);
	} else {
		exits_read++;
		memcpy(run->mmio.data, mem + off, run->mmio.len);
	}
}

/* KVM_EXIT_MEMORY_FAULT: the instruction needs the page itself. */
static void handle_memory_fault(struct kvm_vm *vm, struct kvm_run *run, uint64_t *fetched)
{
	uint64_t gpa = run->memory_fault.gpa, page = (gpa - TEST_GPA) / PAGE_4K, first, n;

	TEST_ASSERT(gpa >= TEST_GPA && page < NPAGES && flagged[page] &&
		    !(gpa % PAGE_4K) && run->memory_fault.size == PAGE_4K,
		    "memory fault exit at %lx size %llx, not a flagged page", gpa,
		    run->memory_fault.size);
	range_of(page, &first, &n);
	fetch_and_unflag(vm, first, n, fetched);
	exits_fault++;
}

static atomic_bool writer_done;

static void *writer(void *arg)
{
	struct kvm_vcpu *vcpu = arg;
	struct ucall uc;

	vcpu_run(vcpu);
	TEST_ASSERT(get_ucall(vcpu, &uc) == UCALL_DONE, "writer vCPU: exit %s",
		    exit_reason_str(vcpu->run->exit_reason));
	atomic_store(&writer_done, true);
	return NULL;
}

static void *racer(void *arg)
{
	struct kvm_vcpu *vcpu = arg;
	struct ucall uc;

	vcpu_run(vcpu);
	TEST_ASSERT(get_ucall(vcpu, &uc) == UCALL_DONE, "racer vCPU: exit %s",
		    exit_reason_str(vcpu->run->exit_reason));
	return NULL;
}

/* Wait (up to 10 s) until the device reported @event for @page. */
static void wait_event(struct kvm_vm *vm, uint64_t page, uint32_t event)
{
	struct kvm_prevent_page_state st;
	struct pollfd pfd = { .fd = efd, .events = POLLIN };
	uint64_t n;
	int i;

	for (i = 0; i < 100; i++) {
		query(vm, page, 1, &st);
		if (st.events & event)
			break;
		poll(&pfd, 1, 100);
		if (read(efd, &n, sizeof(n)) < 0)
			continue;
	}
	TEST_ASSERT(st.events & event, "page %lu: no event %#x after 10 s (events %#x)",
		    page, event, st.events);
}

/* The device's SLOT_TIMEOUT.TICKS; returns the previous value. */
static uint32_t set_slot_timeout(uint32_t tracker, uint32_t ms)
{
	struct cxlt_ctrl ctrl = { 0 };
	struct cxlt_info info;
	char dev[32];
	uint32_t old;
	int fd;

	snprintf(dev, sizeof(dev), "/dev/cxltrack%u", tracker);
	fd = open(dev, O_RDWR);
	TEST_ASSERT(fd >= 0, "open %s", dev);
	TEST_ASSERT(!ioctl(fd, CXLT_IOC_INFO, &info), "CXLT_IOC_INFO");
	TEST_ASSERT(!ioctl(fd, CXLT_IOC_CTRL, &ctrl), "CXLT_IOC_CTRL (query)");
	old = ctrl.cur_timeout;
	memset(&ctrl, 0, sizeof(ctrl));
	ctrl.flags = CXLT_CTRL_TIMEOUT;
	ctrl.slot_timeout = ms ? (uint32_t)(ms * 1000000ull / info.tick_ns) ?: 1 : 0;
	TEST_ASSERT(!ioctl(fd, CXLT_IOC_CTRL, &ctrl), "CXLT_IOC_CTRL (timeout)");
	close(fd);
	return old;
}

static uint64_t le(const uint8_t *p, int len)
{
	uint64_t v = 0;

	memcpy(&v, p, len);
	return v;
}

int main(int argc, char *argv[])
{
	uint64_t i, fetched = 0, stage = 0, v;
	struct kvm_vcpu *vcpu, *vcpu1;
	unsigned long *bmap;
	pthread_t thread;
	struct kvm_vm *vm;
	struct ucall uc;
	uint8_t buf[64];

	if (argc > 2 && !strcmp(argv[1], "-s"))
		seed = strtoull(argv[2], NULL, 0) ?: 1;
	TEST_REQUIRE(kvm_check_cap(KVM_CAP_PREVENT_READS));
	efd = eventfd(0, EFD_NONBLOCK);
	TEST_ASSERT(efd >= 0, "eventfd");

	mem = mmap(NULL, NPAGES * PAGE_4K, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	TEST_ASSERT(mem != MAP_FAILED, "mmap");
	for (i = 0; i < sizeof(disk); i++)
		disk[i] = (i * 0x9e3779b1u) >> 24 ^ i / PAGE_4K;
	disk[CODE_PAGE * PAGE_4K] = 0xc3;	/* ret */
	memcpy(mem, disk, sizeof(disk));
	memcpy(shadow, disk, sizeof(disk));

	vm = __vm_create_with_one_vcpu(&vcpu, NPAGES, guest_code);
	vm_set_user_memory_region(vm, TEST_SLOT, KVM_MEM_LOG_DIRTY_PAGES, TEST_GPA,
				  NPAGES * PAGE_4K, mem);
	virt_map(vm, TEST_GVA, TEST_GPA, NPAGES);
	sync_global_to_guest(vm, seed);
	bmap = bitmap_zalloc(NPAGES);
	/* Start the dirty log afresh: the host's own writes above do not count. */
	kvm_vm_get_dirty_log(vm, TEST_SLOT, bmap);

	prevent(vm, A_FIRST, A_PAGES, true);
	prevent(vm, B_FIRST, B_PAGES, true);
	for (i = 0; i < X_PAGES; i++)
		prevent(vm, X_FIRST + i, 1, true);

	/* The guest's stage-1 writes, in the model. */
	for (i = 0; i < 64; i++)
		buf[i] = 0xa0 + i;
	model_write(TEST_GPA + SRC_PAGE * PAGE_4K, buf, 64);
	for (i = 0; i < PAGE_4K; i += 8) {
		uint64_t q = STOSQ_VAL;

		model_write(TEST_GPA + i, &q, 8);
	}
	for (i = 0; i < ARRAY_SIZE(stores); i++)
		model_write(TEST_GPA + stores[i].page * PAGE_4K + stores[i].off,
			    &stores[i].val, stores[i].len);
	model_write(TEST_GPA + 3 * PAGE_4K - 32, buf, 64);
	memcpy(buf, shadow + 3 * PAGE_4K - 32, 64);
	model_write(TEST_GPA + SRC_PAGE * PAGE_4K + COPY_OFF, buf, 64);

	for (;;) {
		if (_vcpu_run(vcpu)) {
			TEST_ASSERT(errno == EFAULT &&
				    vcpu->run->exit_reason == KVM_EXIT_MEMORY_FAULT,
				    "KVM_RUN: errno %d, exit %s", errno,
				    exit_reason_str(vcpu->run->exit_reason));
			TEST_ASSERT(stage == 3, "memory fault exit in stage %lu", stage + 1);
			handle_memory_fault(vm, vcpu->run, &fetched);
			continue;
		}
		if (vcpu->run->exit_reason == KVM_EXIT_MMIO) {
			TEST_ASSERT(stage >= 1, "stage 1 exited to user space (MMIO at %llx)",
				    vcpu->run->mmio.phys_addr);
			handle_mmio(vm, vcpu->run, &fetched);
			continue;
		}
		switch (get_ucall(vcpu, &uc)) {
		case UCALL_SYNC:
			stage = uc.args[1];
			break;
		case UCALL_ABORT:
			REPORT_GUEST_ASSERT(uc);
			break;
		case UCALL_DONE:
			goto done;
		default:
			TEST_FAIL("unexpected exit %s", exit_reason_str(vcpu->run->exit_reason));
		}

		if (stage == 1) {
			TEST_ASSERT(uc.args[2] == le(shadow + 2048, 8), "load from the full slot: %lx",
				    uc.args[2]);
			TEST_ASSERT(uc.args[3] == le(shadow + PAGE_4K, 8),
				    "load from the partial slot: %lx, expected %lx", uc.args[3],
				    le(shadow + PAGE_4K, 8));
			TEST_ASSERT(uc.args[4] == le(shadow + 3 * PAGE_4K - 8, 8),
				    "load of rep movsb's bytes: %lx", uc.args[4]);
			TEST_ASSERT(uc.args[5] == le(shadow + 4 * PAGE_4K - 4, 4),
				    "load of the crossing store's bytes: %lx", uc.args[5]);
			check_pages(SRC_PAGE, 1, "rep movsb out of flagged pages");
			check_state(vm, 0, NPAGES);
			/*
			 * The device's SLOT_FULL for the rep stosq page only; NONSEQ for
			 * the pages written here and there (1, and 3: rep movsb's bytes,
			 * then the store at its end), not for those written front to back.
			 */
			wait_event(vm, 0, KVM_PREVENT_EV_FULL);
			{
				static const uint32_t want[] = {
					KVM_PREVENT_EV_FULL, KVM_PREVENT_EV_NONSEQ, 0,
					KVM_PREVENT_EV_NONSEQ, 0, 0,
				};
				struct kvm_prevent_page_state st[ARRAY_SIZE(want)];

				query(vm, 0, ARRAY_SIZE(want), st);
				for (i = 0; i < ARRAY_SIZE(want); i++)
					TEST_ASSERT(st[i].events == want[i], "page %lu: events %#x, expected %#x",
						    i, st[i].events, want[i]);
			}
			kvm_vm_get_dirty_log(vm, TEST_SLOT, bmap);
			for (i = 0; i < NPAGES; i++) {
				for (v = 0; v < PAGE_4K && !written[i * PAGE_4K + v]; v++)
					;
				TEST_ASSERT(v == PAGE_4K || test_bit(i, bmap),
					    "page %lu was written (into its slot) but is not dirty", i);
			}
			pr_info("stage 1: slots as modelled, loads served, written pages dirty\n");
		} else if (stage == 2) {
			TEST_ASSERT(exits_read == 1, "%lu read exits in stage 2", exits_read);
			TEST_ASSERT(uc.args[2] == le(shadow + PAGE_4K + 2000, 8),
				    "load of fetched bytes: %lx", uc.args[2]);
			TEST_ASSERT(fetched == A_PAGES - 1, "fetched %lu pages of range A", fetched);
			check_pages(A_FIRST, A_PAGES, "range A after unflag");
			check_state(vm, 0, NPAGES);
			pr_info("stage 2: read exit, range A fetched (%lu pages, not the full one) and merged\n",
				fetched);
		} else if (stage == 3) {
			TEST_ASSERT(exits_write > 0, "%u pages written without running out of slots",
				    X_PAGES);
			/* Stores that found no slot were applied by the host; the rest sit in slots. */
			for (i = 0; i < X_PAGES; i++) {
				uint64_t q = 0xc0c0c0c000000000ull | i;
				uint64_t gpa = TEST_GPA + (X_FIRST + i) * PAGE_4K + 8 * i;

				if (flagged[X_FIRST + i])
					model_write(gpa, &q, 8);
				else
					TEST_ASSERT(le(shadow + gpa - TEST_GPA, 8) == q,
						    "page %lu: the store that exited is not applied",
						    X_FIRST + i);
			}
			check_state(vm, 0, NPAGES);
			pr_info("stage 3: %lu stores found no slot and exited\n", exits_write);
			fetch_and_unflag(vm, B_FIRST, B_PAGES, &fetched);
			for (i = 0; i < X_PAGES; i++)
				if (flagged[X_FIRST + i])
					fetch_and_unflag(vm, X_FIRST + i, 1, &fetched);
			check_state(vm, 0, NPAGES);
			check_pages(0, NPAGES, "after stage 3");
			prevent(vm, CODE_PAGE, 1, true);
			prevent(vm, FPU_PAGE, 1, true);
			prevent(vm, RACE_PAGE, 1, true);
		} else if (stage == 4) {
			uint64_t zero = 0;

			TEST_ASSERT(exits_fault == 2, "%lu memory fault exits in stage 4", exits_fault);
			model_write(TEST_GPA + FPU_PAGE * PAGE_4K + FPU_OFF, &zero, 8);
			check_pages(CODE_PAGE, 2, "after stage 4");
			pr_info("stage 4: code and an x87 store on flagged pages: memory fault exits\n");
			/* The other vCPU races this one's stage 5. */
			vcpu1 = vm_vcpu_add(vm, 1, racer_code);
			pthread_create(&thread, NULL, racer, vcpu1);
		} else if (stage == 5) {
			pthread_join(thread, NULL);
			for (i = 0; i < PAGE_4K / 8; i++) {
				uint64_t q = (i % 2 ? 0x5a5a5a5a00000000ull : 0xa5a5a5a500000000ull) | i;

				model_write(TEST_GPA + RACE_PAGE * PAGE_4K + 8 * i, &q, 8);
			}
			check_state(vm, 0, NPAGES);
			fetch_and_unflag(vm, RACE_PAGE, 1, &fetched);
			check_pages(RACE_PAGE, 1, "the raced page, merged without a read");
			pr_info("stage 5: two vCPUs filled one slot\n");
			prevent(vm, TIMEOUT_PAGE, 1, true);
		} else if (stage == 6) {
			struct kvm_prevent_page_state st;
			uint64_t q = 0x7171717171717171ull;
			uint32_t old;

			model_write(TEST_GPA + TIMEOUT_PAGE * PAGE_4K + 512, &q, 8);
			query(vm, TIMEOUT_PAGE, 1, &st);
			old = set_slot_timeout(st.tracker, TIMEOUT_MS);
			wait_event(vm, TIMEOUT_PAGE, KVM_PREVENT_EV_TIMEOUT);
			set_slot_timeout(st.tracker, 0);
			TEST_ASSERT(!old, "the device had a slot timeout (%u ticks) before", old);
			check_state(vm, 0, NPAGES);
			TEST_ASSERT(!madvise(mem + TIMEOUT_PAGE * PAGE_4K, PAGE_4K, MADV_DONTNEED),
				    "madvise");
			fetch_and_unflag(vm, TIMEOUT_PAGE, 1, &fetched);
			check_pages(TIMEOUT_PAGE, 1, "the timed-out page, dropped, fetched and merged");
			pr_info("stage 6: slot timeout reported through the eventfd\n");

			/* Unflag a page while another vCPU keeps storing into it. */
			prevent(vm, UNFLAG_PAGE, 1, true);
			vcpu1 = vm_vcpu_add(vm, 2, writer_code);
			pthread_create(&thread, NULL, writer, vcpu1);
			for (i = 0; i < 10000; i++) {
				query(vm, UNFLAG_PAGE, 1, &st);
				if (st.valid_bytes)
					break;
				usleep(1000);
			}
			TEST_ASSERT(st.valid_bytes, "the writer vCPU stored nothing in 10 s");
			v = atomic_load(&writer_done);
			fetch_and_unflag(vm, UNFLAG_PAGE, 1, &fetched);
			pthread_join(thread, NULL);
			for (i = 0; i < PAGE_4K / 8; i++) {
				uint64_t last = (uint64_t)WRITER_PASSES << 32 | i;

				model_write(TEST_GPA + UNFLAG_PAGE * PAGE_4K + 8 * i, &last, 8);
			}
			check_pages(UNFLAG_PAGE, 1, "the page unflagged under a writer");
			pr_info("stage 6: unflagged with %u bytes in the slot while a vCPU wrote%s\n",
				st.valid_bytes, v ? " (it had finished: no race)" : "");
			prevent(vm, A_FIRST, A_PAGES, true);
		} else if (stage == 7) {
			uint64_t x = seed, off, val;
			uint32_t len;

			for (i = 0; i < RANDOM_STORES; i++) {
				random_store(&x, &off, &len, &val);
				model_write(TEST_GPA + A_FIRST * PAGE_4K + off, &val, len);
			}
			check_state(vm, 0, NPAGES);
			fetch_and_unflag(vm, A_FIRST, A_PAGES, &fetched);
			check_pages(0, NPAGES, "after random stores");
			pr_info("stage 7: %u random stores (seed %lu), slots and merge as modelled\n",
				RANDOM_STORES, seed);
		}
	}
done:
	TEST_ASSERT(stage == 7, "done after stage %lu", stage);
	for (i = 0; i < NPAGES; i++)
		TEST_ASSERT(!flagged[i], "page %lu still flagged", i);
	check_state(vm, 0, NPAGES);
	check_pages(0, NPAGES, "the end");
	kvm_vm_free(vm);
	printf("prevent_reads_test: PASS pages=%lu fetched=%lu read_exits=%lu write_exits=%lu fault_exits=%lu\n",
	       NPAGES, fetched, exits_read, exits_write, exits_fault);
	return 0;
}
