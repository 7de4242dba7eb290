// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-fuzz: bounded randomized fuzzer of the cxltrack ioctl/read/poll
 * interface. Runs in the guest against /dev/cxltrack0.
 *
 *   cxlt-fuzz ITERATIONS SECONDS SEED [PROCS] [--raw|--raw-write] [--safe]
 *
 * Each process issues up to ITERATIONS calls (stopping after SECONDS):
 * valid ioctl numbers with structures built from valid values, boundary
 * values and random bits; random ioctl numbers; bad argument and buffer
 * pointers (NULL, unmapped, read-only, kernel addresses, misaligned);
 * read() with odd sizes. Every return must be 0 or one of the errnos the
 * uapi documents; -EIO (the device misbehaved or the driver mistrusted a
 * good answer) fails the run. --raw also fuzzes CXLT_IOC_RAW (needs
 * allow_raw=1; only register reads, to keep the device usable).
 * --raw-write: the raw-mode process also writes random values to random
 * registers (commands launched behind the driver's back, TRACK_EN and
 * interrupts switched, slots and chunks taken) and now and then resets the
 * function, and it leaves raw mode and enters it again every few hundred
 * calls, so that the other processes meet a device the driver has just
 * resynchronised. The same errnos hold (never -EIO), and the audit and the
 * tests after it must find the driver whole.
 * --safe keeps the fuzzer from disturbing concurrent correctness tests:
 * harvests with CLEAR/DECAY/WRITEBACK and block-association changes only on
 * the top 64 pages, every slot (device-wide KEEP ones too) released right
 * after its allocation, tracking never switched off. Without --safe a CTRL
 * call may also clear TRACK_EN.
 * At the end, with every fuzzing process gone and its files closed, an audit
 * checks what the driver must have given back: every slot FREE but the KEEP
 * slots the fuzzers allocated (released then), every chunk FREE but the
 * fuzzed one if a detached assignment took it (released then; both checks
 * not with --safe, whose neighbours hold slots), tracking switched on again
 * and on, and a plain harvest answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/cxltrack.h>

static uint64_t s;
static struct cxlt_info info;
static uint8_t *ro_page, *hole, *buf;
static size_t buf_len = 1 << 20;
static int fuzz_raw;
static int safe;	/* --safe: CLEAR and BAT only on the top 64 pages */

/* What the fuzzing processes made that may outlive their files, for the audit. */
struct outliving {
	_Atomic uint64_t keep_slots;	/* bit n: slot n was allocated KEEP */
	_Atomic int detached_chunk;	/* the last chunk was assigned DETACH */
};
static struct outliving *outliving;

static uint64_t rnd(void)
{
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

/*
 * Tags of slots allocated through the ioctl carry a mark in their top byte.
 * With --raw-write, a command written behind the driver's back may open a
 * slot (its tag a random value, marked 1 time in 256): the device-wide slot
 * it leaves is the raw user's, not a slot a closed file leaked.
 */
#define IOCTL_TAG_MARK 0xc1ull
static uint64_t ioctl_tag(uint64_t r)
{
	return (r & ~(0xffull << 56)) | IOCTL_TAG_MARK << 56;
}

static uint64_t pick(const uint64_t *v, size_t n)
{
	return v[rnd() % n];
}

/* A value for a page/slot/chunk-like field: mostly near the limits. */
static uint64_t val(uint64_t limit)
{
	uint64_t v[] = {
		0, 1, 63, 64, limit ? limit - 64 : 0, limit ? limit - 1 : 0, limit, limit + 1,
		limit + 64, 0xffffffffull, 0x100000000ull, ~0ull, ~0ull - 63, 1ull << 63,
		rnd(), rnd() % (limit + 1), (rnd() % (limit / 64 + 1)) * 64,
	};

	return pick(v, sizeof(v) / sizeof(v[0]));
}

static uint64_t ptr(size_t need)
{
	uint64_t v[] = {
		0, 1, (uintptr_t)hole, (uintptr_t)ro_page, 0xffff888000000000ull,
		0xffffffffff600000ull, ~0ull - 7, (uintptr_t)buf + 1,
		(uintptr_t)buf + buf_len - (need > 16 ? need / 2 : 8),
	};

	if (rnd() % 3)
		return (uintptr_t)buf;	/* usually valid, to reach deeper code */
	return pick(v, sizeof(v) / sizeof(v[0]));
}

static void fill_random(void *p, size_t n)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rnd();
}

static const int allowed[] = {
	0, EINVAL, EFAULT, ERANGE, ENODEV, EBUSY, EINTR, ENOTTY, ENOENT, ENOSPC, EPERM,
	EOPNOTSUPP, ENOMEM, EAGAIN, ENXIO,
};

static uint64_t calls, errs[256], bad_errno, raw_writes, raw_resets;

static void note(long ret, const char *what)
{
	int e = ret < 0 ? errno : 0;

	calls++;
	if (e < 256)
		errs[e]++;
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (allowed[i] == e)
			return;
	bad_errno++;
	fprintf(stderr, "unexpected errno %d (%s) from %s\n", e, strerror(e), what);
}

static void one(int fd)
{
	union {
		struct cxlt_info info;
		struct cxlt_harvest h;
		struct cxlt_bat b;
		struct cxlt_slot_alloc sa;
		struct cxlt_slot_write sw;
		struct cxlt_slot_merge sm;
		struct cxlt_slot_release sr;
		struct cxlt_slot_query sq;
		struct cxlt_chunk c;
		struct cxlt_chunk_list cl;
		struct cxlt_stats st;
		struct cxlt_ctrl ctl;
		struct cxlt_raw raw;
		struct cxlt_addr_page ap;
		struct cxlt_bat_set_addrs ba;
		struct cxlt_view v;
		uint8_t bytes[512];
	} u;
	unsigned long req;
	void *arg = &u;
	int which = (int)(rnd() % 19);
	long ret;

	memset(&u, 0, sizeof(u));
	if (rnd() % 8 == 0)
		fill_random(&u, sizeof(u));
	switch (which) {
	case 0:
		req = CXLT_IOC_INFO;
		break;
	case 1:
		req = CXLT_IOC_HARVEST;
		u.h.kind = (uint32_t)(rnd() % 5 ? rnd() % 3 : rnd());
		u.h.flags = (uint32_t)(rnd() % 4 ? rnd() % 4 : rnd());
		u.h.start = val(info.pages);
		u.h.count = rnd() % 2 ? 64 * (1 + rnd() % 8) : val(info.pages);
		u.h.buf = ptr(info.pages);
		u.h.buf_len = rnd() % 4 ? buf_len : val(info.pages);
		break;
	case 2:
		req = CXLT_IOC_BAT;
		u.b.op = (uint32_t)(rnd() % 5 ? rnd() % 4 : rnd());
		u.b.page = val(info.pages);
		if (safe && u.b.op != CXLT_BAT_GET && u.b.page < info.pages - 64)
			u.b.page = info.pages - 1;
		u.b.block = val(1ull << info.block_bits);
		u.b.disk = (uint32_t)val(1ull << info.disk_bits);
		break;
	case 3:
		req = CXLT_IOC_SLOT_ALLOC;
		u.sa.tag = ioctl_tag(rnd());
		u.sa.flags = (uint32_t)pick((const uint64_t[]){ 0, 0, CXLT_SLOT_F_KEEP, rnd() }, 4);
		break;
	case 4:
		req = CXLT_IOC_SLOT_WRITE;
		u.sw.slot = (uint32_t)val(info.num_slots);
		u.sw.offset = (uint32_t)val(4096);
		u.sw.len = (uint32_t)val(4096);
		u.sw.buf = ptr(4096);
		break;
	case 5:
		req = CXLT_IOC_SLOT_MERGE;
		u.sm.slot = (uint32_t)val(info.num_slots);
		/* Merge only into the last 64 pages: the tests' data lives lower. */
		u.sm.page = rnd() % 2 ? info.pages - 1 - rnd() % 64 : val(info.pages);
		if (u.sm.page < info.pages && u.sm.page < info.pages - 64)
			u.sm.page = info.pages - 1;
		break;
	case 6:
		req = CXLT_IOC_SLOT_RELEASE;
		u.sr.slot = (uint32_t)val(info.num_slots);
		break;
	case 7:
		req = CXLT_IOC_SLOT_QUERY;
		u.sq.slot = (uint32_t)val(info.num_slots);
		u.sq.mask = rnd() % 2 ? 0 : ptr(512);
		break;
	case 8:
		req = CXLT_IOC_CHUNK;
		u.c.op = (uint32_t)(rnd() % 5 ? rnd() % 3 : rnd());
		/* Assign/release only the last chunk (scrub zero-fills it). */
		u.c.chunk = (uint32_t)(rnd() % 2 ? info.num_chunks - 1 : val(info.num_chunks));
		if (u.c.chunk < info.num_chunks - 1 && u.c.op != CXLT_CHUNK_QUERY)
			u.c.chunk = info.num_chunks - 1;
		u.c.owner = (uint32_t)(rnd() % 2 ? 1 + rnd() % 3 : val(65536));
		if (u.c.op == CXLT_CHUNK_ASSIGN)
			u.c.flags = (uint32_t)pick((const uint64_t[]){ 0, 0, CXLT_CHUNK_F_DETACH, rnd() }, 4);
		break;
	case 9:
		req = CXLT_IOC_CHUNK_LIST;
		u.cl.owner = (uint32_t)val(65536);
		u.cl.buf = ptr(4096);
		u.cl.buf_len = rnd() % 4 ? 4096 : val(info.num_chunks / 8);
		break;
	case 10:
		req = CXLT_IOC_STATS;
		break;
	case 11:
		req = CXLT_IOC_CTRL;
		/* Keep tracking on; toggle the event bit and the timeout. */
		u.ctl.set = (uint32_t)(rnd() % 4 ? rnd() % 3 & 2 : rnd());
		u.ctl.clear = (uint32_t)(rnd() % 4 ? rnd() % 3 & 2 : rnd() & ~1u);
		u.ctl.flags = (uint32_t)(rnd() % 3 ? rnd() % 2 : rnd());
		u.ctl.slot_timeout = (uint32_t)val(1000000);
		/* now and then tracking off (not with --safe: other tests run) */
		if (u.ctl.clear & CXLT_CTRL_F_TRACK_EN && (safe || rnd() % 16))
			u.ctl.clear = 0;
		break;
	case 12:
		req = CXLT_IOC_RAW;
		u.raw.op = (uint32_t)(fuzz_raw ? CXLT_RAW_READ : rnd() % 6);
		u.raw.size = (uint32_t)pick((const uint64_t[]){ 0, 1, 2, 3, 4, 8, 16 }, 7);
		u.raw.offset = (uint32_t)val(0x20000);
		break;
	case 13:
		/* A random command number of our type, or of no type at all. */
		req = rnd() % 2 ? _IOC(rnd() % 4, CXLT_IOC_MAGIC, rnd() % 64, rnd() % 1024) :
				  (unsigned long)rnd();
		break;
	case 14: {
		char rb[3 * sizeof(struct cxlt_event)];
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long r;
		size_t len = pick((const uint64_t[]){ 0, 1, 31, 32, 33, 64, 96 }, 7);

		r = poll(&p, 1, 0);
		note(r, "poll");
		/* A blocking read with nothing queued would wait forever: skip. */
		if (!(fcntl(fd, F_GETFL) & O_NONBLOCK) && !(p.revents & POLLIN))
			return;
		if (rnd() % 4 == 0)
			r = read(fd, (void *)(uintptr_t)ptr(len), len);
		else
			r = read(fd, rb, len);
		note(r, "read");
		return;
	}
	case 15:
		req = CXLT_IOC_ADDR_PAGE;
		u.ap.addr = rnd() % 2 ? ptr(4096) & ~4095ull : ptr(4096);
		break;
	case 16: {
		/* entries in buf: ordinary memory, so -ENXIO at the first good one */
		struct cxlt_bat_addr *e = (struct cxlt_bat_addr *)buf;

		req = CXLT_IOC_BAT_SET_ADDRS;
		fill_random(buf, 4 * sizeof(*e));
		for (int i = 0; i < 4 && rnd() % 2; i++)
			e[i].addr = rnd() % 2 ? ptr(4096) & ~4095ull : ptr(4096);
		u.ba.entries = ptr(4 * sizeof(*e));
		u.ba.count = (uint32_t)val(CXLT_BAT_ADDRS_MAX);
		break;
	}
	case 17:
		/* views: open, close, bad kinds, ranges and reserved fields */
		req = CXLT_IOC_VIEW;
		u.v.op = (uint32_t)(rnd() % 4 ? rnd() % 2 : rnd());
		u.v.kind = (uint32_t)(rnd() % 4 ? rnd() % 3 : rnd());
		u.v.start = val(info.pages);
		u.v.count = val(info.pages);
		break;
	default:
		/* A valid number with a bad argument pointer. */
		req = pick((const uint64_t[]){ CXLT_IOC_INFO, CXLT_IOC_HARVEST, CXLT_IOC_BAT,
					       CXLT_IOC_SLOT_QUERY, CXLT_IOC_CHUNK_LIST,
					       CXLT_IOC_STATS, CXLT_IOC_CTRL,
					       CXLT_IOC_EVENT_SCOPE, CXLT_IOC_ADDR_PAGE,
					       CXLT_IOC_BAT_SET_ADDRS, CXLT_IOC_VIEW }, 11);
		arg = (void *)(uintptr_t)pick((const uint64_t[]){ 0, 1, (uintptr_t)hole,
			(uintptr_t)ro_page, 0xffff888000000000ull, (uintptr_t)buf + buf_len - 8 }, 6);
		break;
	}
	if (req == CXLT_IOC_HARVEST && safe && u.h.flags & CXLT_HARVEST_F_ALL &&
	    u.h.start < info.pages - 64) {
		/* CLEAR, DECAY and WRITEBACK on the top 64 pages only */
		u.h.start = info.pages - 64;
		u.h.count = 64;
	}
	if (req == CXLT_IOC_RAW && fuzz_raw == 1)
		u.raw.op = CXLT_RAW_READ;
	if (req == CXLT_IOC_RAW && fuzz_raw == 2) {
		uint64_t r = rnd() % 2000;

		u.raw.op = r == 0 ? CXLT_RAW_RESET : r % 3 == 0 ? CXLT_RAW_WRITE : CXLT_RAW_READ;
		u.raw.value = rnd() % 4 ? rnd() : val(1u << 20);
		u.raw.flags = 0;
		u.raw.reserved[0] = u.raw.reserved[1] = 0;
		/* registers, not the windows past them, most of the time */
		if (rnd() % 4)
			u.raw.offset = (uint32_t)(rnd() % 0x200) & ~3u;
	}
	ret = ioctl(fd, req, arg);
	note(ret, "ioctl");
	if (req == CXLT_IOC_RAW && arg == &u && !ret) {
		raw_writes += u.raw.op == CXLT_RAW_WRITE;
		raw_resets += u.raw.op == CXLT_RAW_RESET;
	}
	if (req == CXLT_IOC_SLOT_ALLOC && arg == &u && !ret && u.sa.flags & CXLT_SLOT_F_KEEP &&
	    u.sa.slot < 64)
		outliving->keep_slots |= 1ull << u.sa.slot;
	if (req == CXLT_IOC_CHUNK && arg == &u && !ret && u.c.op == CXLT_CHUNK_ASSIGN &&
	    u.c.flags & CXLT_CHUNK_F_DETACH)
		outliving->detached_chunk = 1;
	if (req == CXLT_IOC_SLOT_ALLOC && safe && arg == &u && !ret) {
		/* Do not hoard slots other tests need. */
		struct cxlt_slot_release r = { .slot = u.sa.slot };

		ioctl(fd, CXLT_IOC_SLOT_RELEASE, &r);
	}
}

/* A chunk's state, waiting out a scrub (SCRUBBING becomes FREE). */
static uint32_t chunk_state(int fd, uint32_t c, uint32_t *owner)
{
	struct cxlt_chunk q = { .op = CXLT_CHUNK_QUERY, .chunk = c };

	for (int tries = 0; tries < 500; tries++) {
		if (ioctl(fd, CXLT_IOC_CHUNK, &q)) {
			perror("audit: CHUNK_QUERY");
			exit(1);
		}
		if (q.state != CXLT_CHUNKST_SCRUBBING)
			break;
		usleep(10000);
	}
	*owner = q.owner;
	return q.state;
}

/*
 * After the fuzzing processes are gone: what they may leave behind is only
 * what outlives a file by design (KEEP slots, detached chunks; released
 * here), tracking goes on again, and the device still answers.
 */
static int audit(int fd)
{
	struct cxlt_ctrl c = { 0 };
	unsigned int keep = 0, detached = 0, raw_left = 0, bad = 0, was_off;
	uint8_t bm[8];
	struct cxlt_harvest h = { .kind = CXLT_HARVEST_DIRTY, .count = 64,
				  .buf = (uintptr_t)bm, .buf_len = 8 };

	/* with --safe other tests' files hold slots and chunks meanwhile */
	for (uint32_t i = 0; i < info.num_slots && !safe; i++) {
		struct cxlt_slot_query q = { .slot = i };
		struct cxlt_slot_release r = { .slot = i };

		if (ioctl(fd, CXLT_IOC_SLOT_QUERY, &q)) {
			perror("audit: SLOT_QUERY");
			return 1;
		}
		if (q.state == CXLT_SLOTST_FREE)
			continue;
		if (fuzz_raw == 2 && !q.owned && q.tag >> 56 != IOCTL_TAG_MARK &&
		    (i >= 64 || !(outliving->keep_slots >> i & 1))) {
			/* opened by a raw command: device-wide, an admin releases it */
			if (ioctl(fd, CXLT_IOC_SLOT_RELEASE, &r)) {
				perror("audit: SLOT_RELEASE of a slot raw mode opened");
				bad++;
			} else {
				raw_left++;
			}
		} else if (i >= 64 || !(outliving->keep_slots >> i & 1)) {
			fprintf(stderr, "audit: slot %u left in state %u by closed files\n", i, q.state);
			bad++;
		} else if (ioctl(fd, CXLT_IOC_SLOT_RELEASE, &r)) {
			perror("audit: SLOT_RELEASE of a KEEP slot");
			bad++;
		} else {
			keep++;
		}
	}
	for (uint32_t i = 0; i < info.num_chunks && !safe; i++) {
		uint32_t owner, st = chunk_state(fd, i, &owner);
		struct cxlt_chunk rel = { .op = CXLT_CHUNK_RELEASE, .chunk = i, .owner = owner };

		if (st == CXLT_CHUNKST_FREE)
			continue;
		if (i != info.num_chunks - 1 || !outliving->detached_chunk) {
			fprintf(stderr, "audit: chunk %u left in state %u (owner %u) by closed files\n",
				i, st, owner);
			bad++;
		} else if (ioctl(fd, CXLT_IOC_CHUNK, &rel) ||
			   chunk_state(fd, i, &owner) != CXLT_CHUNKST_FREE) {
			perror("audit: release of a detached chunk");
			bad++;
		} else {
			detached++;
		}
	}
	if (ioctl(fd, CXLT_IOC_CTRL, &c)) {
		perror("audit: CTRL query");
		return 1;
	}
	was_off = !(c.ctrl & CXLT_CTRL_F_TRACK_EN);
	memset(&c, 0, sizeof(c));
	c.set = CXLT_CTRL_F_TRACK_EN;
	if (ioctl(fd, CXLT_IOC_CTRL, &c)) {
		perror("audit: CTRL set TRACK_EN");
		return 1;
	}
	memset(&c, 0, sizeof(c));
	if (ioctl(fd, CXLT_IOC_CTRL, &c) || !(c.ctrl & CXLT_CTRL_F_TRACK_EN)) {
		fprintf(stderr, "audit: tracking not on after setting TRACK_EN\n");
		bad++;
	}
	if (ioctl(fd, CXLT_IOC_HARVEST, &h)) {
		perror("audit: harvest after fuzzing");
		return 1;
	}
	printf("audit: %u KEEP slot(s), %u slot(s) raw commands opened and %u detached chunk(s) "
	       "released, tracking was %s, no other slot or chunk left, tracking on%s\n", keep,
	       raw_left, detached, was_off ? "off" : "on", bad ? ": FAILED" : "");
	return bad ? 1 : 0;
}

static int child(uint64_t iters, double seconds, uint64_t seed)
{
	struct timespec t0, t1;
	int fd = open("/dev/cxltrack0", O_RDWR | (seed % 2 ? O_NONBLOCK : 0));

	if (fd < 0) {
		perror("open /dev/cxltrack0");
		return 1;
	}
	s = seed * 0x9E3779B97F4A7C15ull | 1;
	if (ioctl(fd, CXLT_IOC_INFO, &info)) {
		perror("INFO");
		return 1;
	}
	buf = mmap(NULL, buf_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro_page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || ro_page == MAP_FAILED || hole == MAP_FAILED)
		return 1;
	/* A read-write buffer whose tail is unmapped: faults in the middle of a copy. */
	munmap(buf + buf_len - 4096, 4096);
	if (fuzz_raw) {
		struct cxlt_raw r = { .op = CXLT_RAW_ENTER };

		if (ioctl(fd, CXLT_IOC_RAW, &r) && errno != EBUSY)
			perror("raw enter");
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < iters; i++) {
		if (fuzz_raw == 2 && i % 400 == 399) {
			/* leave raw mode (the driver resynchronises) and take it again */
			struct cxlt_raw r = { .op = CXLT_RAW_EXIT };

			ioctl(fd, CXLT_IOC_RAW, &r);
			usleep(20000);	/* the others get the device for a while */
			r.op = CXLT_RAW_ENTER;
			if (ioctl(fd, CXLT_IOC_RAW, &r) && errno != EBUSY)
				perror("raw enter");
		}
		one(fd);
		if (i % 256 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if ((double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9 > seconds)
				break;
		}
	}
	close(fd);
	printf("seed %" PRIu64 ": %" PRIu64 " calls: ok %" PRIu64 " EINVAL %" PRIu64
	       " EFAULT %" PRIu64 " ERANGE %" PRIu64 " ENOTTY %" PRIu64 " EBUSY %" PRIu64
	       " ENOENT %" PRIu64 " ENOSPC %" PRIu64 " EPERM %" PRIu64 " EIO %" PRIu64
	       " other-unexpected %" PRIu64 "\n", seed, calls, errs[0], errs[EINVAL],
	       errs[EFAULT], errs[ERANGE], errs[ENOTTY], errs[EBUSY], errs[ENOENT],
	       errs[ENOSPC], errs[EPERM], errs[EIO], bad_errno);
	if (fuzz_raw == 2)
		printf("seed %" PRIu64 ": raw writes %" PRIu64 " resets %" PRIu64 "\n", seed,
		       raw_writes, raw_resets);
	fflush(stdout);
	return bad_errno || errs[EIO] ? 1 : 0;
}

int main(int argc, char **argv)
{
	uint64_t iters, seed;
	double seconds;
	int procs = 1, bad = 0, fd;

	if (argc < 4) {
		fprintf(stderr, "usage: cxlt-fuzz ITERATIONS SECONDS SEED [PROCS] [--raw|--raw-write] [--safe]\n");
		return 2;
	}
	iters = strtoull(argv[1], NULL, 0);
	seconds = strtod(argv[2], NULL);
	seed = strtoull(argv[3], NULL, 0);
	for (int i = 4; i < argc; i++) {
		if (!strcmp(argv[i], "--raw"))
			fuzz_raw = 1;
		else if (!strcmp(argv[i], "--raw-write"))
			fuzz_raw = 2;
		else if (!strcmp(argv[i], "--safe"))
			safe = 1;
		else
			procs = atoi(argv[i]);
	}
	if (procs < 1 || procs > 16)
		procs = 1;
	outliving = mmap(NULL, sizeof(*outliving), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (outliving == MAP_FAILED)
		return 1;
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(child(iters, seconds, seed + (uint64_t)p));
		if (pid < 0) {
			perror("fork");
			return 1;
		}
	}
	for (int p = 0; p < procs; p++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	fd = open("/dev/cxltrack0", O_RDWR);
	if (fd < 0 || ioctl(fd, CXLT_IOC_INFO, &info)) {
		perror("open /dev/cxltrack0 for the audit");
		return 1;
	}
	if (audit(fd))
		bad = 1;
	close(fd);
	printf(bad ? "FAIL: a fuzzer process saw an unexpected answer, or the audit failed\n" :
		     "ok fuzz: %d process(es), device still answers\n", procs);
	return bad;
}
