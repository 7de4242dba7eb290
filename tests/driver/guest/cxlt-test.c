// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-test: guest-side checks of the cxltrack driver against ground truth,
 * writing device memory through a /dev/daxN.M mapping (devdax region of the
 * tracked memdev). Each mode prints "ok ..." and exits 0, or prints what
 * differed and exits 1.
 *
 *   cxlt-test dirty    DAX PAGES ROUNDS SEED   random writes; harvest == truth
 *   cxlt-test accessed DAX PAGES ROUNDS SEED   random reads/writes; accessed == truth
 *   cxlt-test race     DAX PAGES SECONDS SEED  writer thread vs harvest thread (property a)
 *   cxlt-test sigrace  DAX PAGES SECONDS SEED  the same over the whole device, with signals
 *                                              on the harvester, a second file contending for
 *                                              the engine and buf pages write-protected at
 *                                              random: short results lose nothing
 *   cxlt-test views    DAX PAGES SECONDS SEED  consumer views (CXLT_IOC_VIEW): what a view
 *                                              reports after another consumer's CLEAR; then
 *                                              two unprivileged tenants harvest with CLEAR
 *                                              through views while a privileged thief without
 *                                              one clears too and a writer writes: no tenant
 *                                              loses a write, none sees an unwritten page
 *   cxlt-test dmaab    DAX PAGES ROUNDS SEED   DMA harvests (spec 5.3) against the RESULT-window
 *                                              path (CXLT_HARVEST_F_MMIO) and the truth: dirty,
 *                                              accessed and hotness equal byte for byte, with
 *                                              and without CLEAR; DMA commands were used
 *   cxlt-test dmarace  DAX PAGES SECONDS SEED  the race mode's writer against DMA harvests with
 *                                              CLEAR: no lost write, and DMA commands were used
 *   cxlt-test density  DAX PAGES N SEED        one DMA dirty harvest with CLEAR after writing N
 *                                              pages (N <= PAGES / 64: one page in each of N
 *                                              words, so N words are non-zero; else N random
 *                                              pages): reported == written; the range is
 *                                              cleaned and checked by MMIO harvests, which
 *                                              leave the driver's list/bitmap choice alone
 *   cxlt-test dmafault DAX BDF PAGES           bus mastering of BDF (the tracker) turned off under
 *                                              the driver: a DMA harvest with CLEAR is EIO with
 *                                              every page reported set, and after bus mastering
 *                                              is back every written page is still reported
 *   cxlt-test cpubench DAX ROUNDS PERMILLE     the CPU time of one dirty-log round (CLEAR
 *                                              harvest of the whole device after PERMILLE of
 *                                              the dax pages were written) through the RESULT
 *                                              window, by DMA as the driver chooses and by
 *                                              DMA with the bitmap forced, in turn; prints medians
 *   cxlt-test eio      DAX                     a harvest with CLEAR that the device answers
 *                                              wrongly (the host set the tracker's unstable
 *                                              x-miscount-harvests) is -EIO with every page
 *                                              of the command reported set: nothing lost
 *   cxlt-test evbad    DAX                     an event after a record of an undefined type
 *                                              (the host set x-bad-events) arrives, with no
 *                                              GAP flag: the dropped record was no gap
 *   cxlt-test bat      DAX PAGES ROUNDS SEED   association invalidated by CPU stores
 *   cxlt-test discard  DAX PAGES ROUNDS SEED   discard-if-clean racing a writer (property b)
 *   cxlt-test slot     DAX PAGES ROUNDS SEED   full-page and partial merges (property c)
 *   cxlt-test events   DAX                     SLOT_FULL/MERGE_DONE/SCRUB_DONE/BAT_INVALIDATED
 *                                              arrive through poll()+read()
 *   cxlt-test evfault  DAX                     read() into a bad buffer keeps the event
 *   cxlt-test tenant   DAX                     two files handed to unprivileged tenants:
 *                                              what each may do (also on pages granted to
 *                                              a file), and whose events it sees
 *   cxlt-test chunkbind DAX                    chunks bound to the file that assigned them:
 *                                              only it releases them, its owner id is its
 *                                              own, closing (or being killed) releases them
 *   cxlt-test chunkreset DAX BDF               a chunk bound to this file, written through
 *                                              DAX, across a function reset of BDF (the
 *                                              tracker): OWNED by its owner again with its
 *                                              data, a RESET record with nothing lost, no
 *                                              other file takes it, the release scrubs it;
 *                                              a detached chunk is FREE
 *   cxlt-test chunkresetraw DAX                a reset while another file holds raw mode
 *   cxlt-test closeraw DAX                     a file closed in another's raw mode leaks nothing
 *                                              (needs allow_raw=1): the driver cannot give
 *                                              the chunk back; the file's RESET record says
 *                                              it lost it, the next owner reads zeros
 *   cxlt-test cache    DAX                     user-space CPU-cache contract: BAT and merge
 *                                              calls that name the caller's mapping, harvest
 *                                              with WRITEBACK
 *   cxlt-test addrpage DAX                     CXLT_IOC_ADDR_PAGE: the device page of each
 *                                              page of a dax mapping; bad addresses fail
 *   cxlt-test rawkeep  DAX                     a slot stays its file's after another file's
 *                                              raw mode (needs allow_raw=1)
 *   cxlt-test peek     DAX DPA LEN             print LEN bytes at DPA as hex (loads)
 *   cxlt-test poke     DAX DPA HEX             store the bytes at DPA (byte stores)
 *   cxlt-test hold     SECONDS                 keep /dev/cxltrack0 open issuing ioctls;
 *                                              report how they ended (lifetime tests)
 *
 * PAGES bounds the working set (the emulated window is slow under TCG). All
 * pages are device pages counted from the DPA of the dax mapping's start.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "libcxltrack.h"

static struct cxltrack *t;
static struct cxltrack_dax dax;
static uint64_t npages, page_size, first_page;
static uint64_t rng_state;
static volatile uint8_t *map_base;	/* mapping of the working set */

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static void check(int ret, const char *what)
{
	if (ret < 0)
		fail("%s: %s", what, cxltrack_strerror(ret));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile uint8_t *page_ptr(uint64_t p)
{
	return map_base + (p - first_page) * page_size;
}

static void setup(const char *daxdev, uint64_t pages, uint64_t seed)
{
	const char *b = getenv("CXLT_BASE_PAGE");	/* disjoint working sets */
	uint64_t base = b ? strtoull(b, NULL, 0) : 0;

	check(cxltrack_open(NULL, &t), "open /dev/cxltrack0");
	page_size = 1ull << t->info.page_shift;
	npages = (pages + 63) / 64 * 64;
	if (base % 64)
		fail("CXLT_BASE_PAGE must be a multiple of 64");
	check(cxltrack_dax_open(daxdev, (base + npages) * page_size, &dax), daxdev);
	if (dax.dpa_base % (64 * page_size))
		fail("dax DPA base 0x%" PRIx64 " not 64-page aligned", dax.dpa_base);
	first_page = dax.dpa_base / page_size + base;
	map_base = dax.map + base * page_size;
	if (first_page + npages > t->info.pages)
		fail("working set beyond the tracked pages");
	rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
}

static uint8_t *harvest(unsigned int kind, unsigned int flags, uint64_t *nr)
{
	size_t len = cxltrack_harvest_bytes(kind, npages);
	uint8_t *buf = calloc(1, len);

	if (!buf)
		fail("oom");
	check(cxltrack_harvest(t, kind, first_page, npages, flags, buf, len, nr), "harvest");
	return buf;
}

static int bit(const uint8_t *bm, uint64_t i)
{
	return bm[i / 8] >> (i % 8) & 1;
}

static void compare(const char *what, int round, const uint8_t *got, const uint8_t *want)
{
	for (uint64_t i = 0; i < npages; i++)
		if (bit(got, i) != bit(want, i))
			fail("%s round %d: page %" PRIu64 " reported %d, truth %d", what, round,
			     first_page + i, bit(got, i), bit(want, i));
}

static int mode_dirty(uint64_t rounds, int accessed)
{
	unsigned int kind = accessed ? CXLT_HARVEST_ACCESSED : CXLT_HARVEST_DIRTY;
	size_t len = npages / 8;
	uint64_t total = 0, nr;
	uint8_t *truth = calloc(1, len);

	free(harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_CLEAR, &nr));
	free(harvest(CXLT_HARVEST_ACCESSED, CXLT_HARVEST_F_CLEAR, &nr));
	for (uint64_t r = 0; r < rounds; r++) {
		uint64_t ops = 1 + rnd() % (npages / 4 + 1), want = 0;
		uint8_t *got;

		memset(truth, 0, len);
		for (uint64_t k = 0; k < ops; k++) {
			uint64_t p = rnd() % npages, off = rnd() % page_size;
			volatile uint8_t *a = page_ptr(first_page + p) + off;

			if (accessed && rnd() % 2) {
				(void)*a;	/* a load: accessed, not dirty */
			} else {
				*a = (uint8_t)rnd();
			}
			truth[p / 8] |= 1 << (p % 8);
		}
		for (uint64_t i = 0; i < npages; i++)
			want += bit(truth, i);
		got = harvest(kind, CXLT_HARVEST_F_CLEAR, &nr);
		compare(accessed ? "accessed" : "dirty", (int)r, got, truth);
		if (nr != want)
			fail("round %" PRIu64 ": nr_set %" PRIu64 ", truth %" PRIu64, r, nr, want);
		free(got);
		/* Cleared: a second harvest sees nothing. */
		got = harvest(kind, 0, &nr);
		if (nr)
			fail("round %" PRIu64 ": %" PRIu64 " pages still set after CLEAR", r, nr);
		free(got);
		total += want;
	}
	printf("ok %s: %" PRIu64 " rounds, %" PRIu64 " pages reported, all equal to the truth\n",
	       accessed ? "accessed" : "dirty", rounds, total);
	free(truth);
	return 0;
}

/* --- race: property (a) ------------------------------------------------ */
/*
 * The writer of the race modes: random 8-byte stores to random pages, each page's last one
 * stamped with a global sequence number taken just before it. A harvest that ended at
 * sequence h reported page p: every store to p stamped below h had reached the device when
 * the harvest began or was reported by it or an earlier one, so a page whose last stamp is
 * not below the end of the last harvest that reported it lost a write. In shared memory, so
 * that forked consumers (views) check against the same stamps.
 */
struct stamps {
	_Atomic uint64_t gseq;
	atomic_int open;		/* views: tenants whose view is open */
	atomic_int stop;		/* views: the writer stopped */
	_Atomic uint64_t last_write[];	/* per page: gseq taken just before its last store */
};

static struct stamps *st;
static atomic_int writer_stop;
static int sparse_writes;	/* views: a pause now and then, so not every page is dirty */
static uint64_t writes_done;

static void stamps_new(void)
{
	st = mmap(NULL, sizeof(*st) + npages * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	st->gseq = 1;
}

static void *stamp_writer(void *arg)
{
	uint64_t s = rng_state ^ 0x1234567;

	(void)arg;
	while (!atomic_load(&writer_stop)) {
		uint64_t p, seq;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		p = s % npages;
		seq = atomic_fetch_add(&st->gseq, 1);
		st->last_write[p] = seq;
		*(volatile uint64_t *)(page_ptr(first_page + p) + (s >> 32) % (page_size / 8) * 8) = s;
		writes_done++;
		if (sparse_writes && !(s & 15))
			usleep(50);
	}
	return NULL;
}

/* Record a harvest (bitmap of the working set) that ended at @h_end; return its pages. */
static uint64_t take_reports(const uint8_t *got, uint64_t h_end, uint64_t *last_report,
			     const char *who)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < npages; i++) {
		if (!bit(got, i))
			continue;
		n++;
		/* A reported page was written (no spurious dirty bit)... */
		if (!st->last_write[i])
			fail("%s: page %" PRIu64 " reported but never written", who, first_page + i);
		last_report[i] = h_end;
	}
	return n;
}

/* ... and every page's last write is covered by a report that ended after it. */
static void check_last_writes(const uint64_t *last_report, const char *who)
{
	for (uint64_t i = 0; i < npages; i++)
		if (st->last_write[i] && last_report[i] <= st->last_write[i])
			fail("LOST WRITE in %s: page %" PRIu64 " last written at seq %" PRIu64
			     ", last reported by a harvest ending at %" PRIu64, who,
			     first_page + i, st->last_write[i], last_report[i]);
}

static int mode_race(double seconds)
{
	uint64_t *last_report = calloc(npages, sizeof(uint64_t));
	uint64_t harvests = 0, reports = 0, nr;
	pthread_t th;
	double end;

	stamps_new();
	free(harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_CLEAR, &nr));
	if (pthread_create(&th, NULL, stamp_writer, NULL))
		fail("pthread_create");
	end = now_s() + seconds;
	for (int final = 0; final < 2;) {
		uint64_t h_end;
		uint8_t *got;

		if (now_s() >= end && !atomic_load(&writer_stop)) {
			atomic_store(&writer_stop, 1);
			pthread_join(th, NULL);
			final = 1;	/* one more harvest with the writer stopped */
		} else if (final) {
			final = 2;
		}
		got = harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_CLEAR, &nr);
		h_end = atomic_load(&st->gseq);
		harvests++;
		reports += take_reports(got, h_end, last_report, "race");
		free(got);
		if (final == 2)
			break;
	}
	check_last_writes(last_report, "race");
	printf("ok race: %" PRIu64 " writes, %" PRIu64 " harvests racing them, %" PRIu64
	       " page reports, no lost write, no spurious page\n", writes_done, harvests, reports);
	return 0;
}

/* --- views: consumer views, no consumer takes another's bits --------------- */
static int expect_err(int ret, int want, const char *what);

static uint8_t *harvest_on(struct cxltrack *h, unsigned int kind, unsigned int flags,
			   uint64_t *nr)
{
	size_t len = cxltrack_harvest_bytes(kind, npages);
	uint8_t *buf = calloc(1, len);

	if (!buf)
		fail("oom");
	check(cxltrack_harvest(h, kind, first_page, npages, flags, buf, len, nr), "harvest");
	return buf;
}

/* One page written and then cleared by a consumer without a view: what views see. */
static void views_semantics(unsigned int kind)
{
	const char *k = kind == CXLT_HARVEST_DIRTY ? "dirty" : "accessed";
	struct cxltrack *a, *b;
	uint64_t p = 5, nr;
	uint8_t *bm;

	check(cxltrack_open(NULL, &a), "open (view A)");
	check(cxltrack_open(NULL, &b), "open (view B)");
	free(harvest(kind, CXLT_HARVEST_F_CLEAR, &nr));
	check(cxltrack_view_open(a, kind, first_page, npages), "VIEW_OPEN A");
	check(cxltrack_view_open(b, kind, first_page, npages), "VIEW_OPEN B");
	if (kind == CXLT_HARVEST_DIRTY)
		*(volatile uint64_t *)page_ptr(first_page + p) = 1;
	else
		(void)*(volatile uint64_t *)page_ptr(first_page + p);
	/* The thief (no view) clears the device... */
	bm = harvest(kind, CXLT_HARVEST_F_CLEAR, &nr);
	if (nr != 1 || !bit(bm, p))
		fail("%s: the thief's harvest did not see the page (%" PRIu64 " set)", k, nr);
	free(bm);
	/* ... and each view still has the page: without CLEAR (kept), with CLEAR (taken). */
	bm = harvest_on(a, kind, 0, &nr);
	if (nr != 1 || !bit(bm, p))
		fail("%s: view A lost the page to another consumer's CLEAR (%" PRIu64 " set)", k, nr);
	free(bm);
	bm = harvest_on(a, kind, CXLT_HARVEST_F_CLEAR, &nr);
	if (nr != 1 || !bit(bm, p))
		fail("%s: view A's CLEAR did not report its pending page", k);
	free(bm);
	bm = harvest_on(a, kind, CXLT_HARVEST_F_CLEAR, &nr);
	if (nr)
		fail("%s: view A reported %" PRIu64 " pages again after taking them", k, nr);
	free(bm);
	/* A's CLEAR took nothing from B. */
	bm = harvest_on(b, kind, CXLT_HARVEST_F_CLEAR, &nr);
	if (nr != 1 || !bit(bm, p))
		fail("%s: view B lost the page to view A's CLEAR", k);
	free(bm);
	/* A consumer without a view sees the device only: B took nothing from it either. */
	bm = harvest(kind, 0, &nr);
	if (nr)
		fail("%s: %" PRIu64 " pages on the device after the thief's CLEAR", k, nr);
	free(bm);
	expect_err(cxltrack_view_open(a, kind, first_page, npages), -EBUSY, "second VIEW_OPEN");
	bm = calloc(1, npages / 8 + 8);
	if (!bm)
		fail("oom");
	expect_err(cxltrack_harvest(a, kind, first_page, npages + 64, 0, bm, npages / 8 + 8, &nr),
		   -ERANGE, "harvest beyond the view");
	free(bm);
	check(cxltrack_view_close(a, kind), "VIEW_CLOSE");
	expect_err(cxltrack_view_close(a, kind), -ENOENT, "VIEW_CLOSE without a view");
	cxltrack_close(a);
	cxltrack_close(b);	/* closes B's view */
}

/* An unprivileged tenant: its view, its CLEAR harvests until the writer stops. */
static int views_tenant(struct cxltrack *h, int id, double seconds)
{
	uint64_t *last_report = calloc(npages, sizeof(uint64_t)), harvests = 0, reports = 0, nr;
	char who[32];
	struct cxlt_view bad = { .op = CXLT_VIEW_OPEN, .kind = CXLT_HARVEST_HOTNESS,
				 .start = first_page, .count = npages };
	uint8_t bm[8];

	snprintf(who, sizeof(who), "tenant %d's view", id);
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		fail("cannot drop privileges: %s", strerror(errno));
	expect_err(cxltrack_harvest(h, CXLT_HARVEST_DIRTY, first_page, 64, CXLT_HARVEST_F_CLEAR,
				    bm, sizeof(bm), &nr), -EPERM, "CLEAR without a view");
	if (ioctl(h->fd, CXLT_IOC_VIEW, &bad) != -1 || errno != EINVAL)
		fail("VIEW_OPEN of hotness counters: not EINVAL");
	expect_err(cxltrack_view_open(h, CXLT_HARVEST_DIRTY, first_page + 1, npages), -EINVAL,
		   "VIEW_OPEN misaligned");
	expect_err(cxltrack_view_open(h, CXLT_HARVEST_DIRTY, 0, h->info.pages + 64), -ERANGE,
		   "VIEW_OPEN beyond the device");
	check(cxltrack_view_open(h, CXLT_HARVEST_DIRTY, first_page, npages), "VIEW_OPEN (tenant)");
	expect_err(cxltrack_harvest(h, CXLT_HARVEST_DIRTY, first_page, 64,
				    CXLT_HARVEST_F_CLEAR | CXLT_HARVEST_F_WRITEBACK, bm, sizeof(bm),
				    &nr), -EPERM, "CLEAR|WRITEBACK through a view");
	atomic_fetch_add(&st->open, 1);
	for (int final = 0; final < 2;) {
		uint64_t h_end;
		uint8_t *got;

		if (final == 0 && atomic_load(&st->stop))
			final = 1;	/* one more harvest with the writer stopped */
		else if (final == 1)
			final = 2;
		got = harvest_on(h, CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_CLEAR, &nr);
		h_end = atomic_load(&st->gseq);
		harvests++;
		reports += take_reports(got, h_end, last_report, who);
		free(got);
		if (final == 2)
			break;
		usleep((useconds_t)(rnd() % 20000));
	}
	check_last_writes(last_report, who);
	printf("ok views tenant %d: %" PRIu64 " CLEAR harvests, %" PRIu64
	       " page reports, no lost write (%.0f s)\n", id, harvests, reports, seconds);
	return 0;
}

static int mode_views(double seconds)
{
	uint64_t thefts = 0, stolen = 0, nr;
	struct cxltrack *ten[2];
	pid_t pid[2];
	pthread_t wr;
	int bad = 0;
	double end;

	views_semantics(CXLT_HARVEST_DIRTY);
	views_semantics(CXLT_HARVEST_ACCESSED);
	printf("ok views: another consumer's CLEAR leaves a view its pages, a view's CLEAR "
	       "takes only its own (dirty and accessed)\n");

	stamps_new();
	sparse_writes = 1;
	free(harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_CLEAR, &nr));
	for (int i = 0; i < 2; i++) {
		check(cxltrack_open(NULL, &ten[i]), "open (tenant)");
		pid[i] = fork();
		if (pid[i] < 0)
			fail("fork: %s", strerror(errno));
		if (!pid[i]) {
			rng_state += (uint64_t)i + 1;
			_exit(views_tenant(ten[i], i, seconds));
		}
		cxltrack_close(ten[i]);
	}
	while (atomic_load(&st->open) < 2) {
		int st;

		/* A tenant that failed before opening its view must not hang the test. */
		for (int i = 0; i < 2; i++)
			if (pid[i] > 0 && waitpid(pid[i], &st, WNOHANG) == pid[i])
				fail("tenant %d exited before its view was open (status %d)", i, st);
		usleep(1000);
	}
	if (pthread_create(&wr, NULL, stamp_writer, NULL))
		fail("pthread_create");
	/* The thief: a privileged consumer without a view, clearing all the time. */
	end = now_s() + seconds;
	while (now_s() < end) {
		free(harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_CLEAR, &nr));
		thefts++;
		stolen += nr;
		usleep((useconds_t)(rnd() % 5000));
	}
	atomic_store(&writer_stop, 1);
	pthread_join(wr, NULL);
	atomic_store(&st->stop, 1);
	for (int i = 0; i < 2; i++) {
		int st;

		if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "tenant %d failed (status %d)\n", i, st);
			bad = 1;
		}
	}
	if (bad)
		fail("a tenant's view lost a write or reported an unwritten page");
	if (!stolen)
		fail("the thief took no bits: the race did not happen");
	printf("ok views: %" PRIu64 " writes; a thief without a view cleared %" PRIu64
	       " times (%" PRIu64 " pages) and no tenant lost a write\n", writes_done, thefts, stolen);
	return 0;
}

/* --- eio: a failed CLEAR command reports its pages set ------------------------ */
static int mode_eio(void)
{
	uint8_t bm[64 / 8];
	uint64_t nr = 0, done = 0;
	int ret;

	*(volatile uint64_t *)page_ptr(first_page + 3) = 1;
	*(volatile uint64_t *)page_ptr(first_page + 9) = 2;
	memset(bm, 0, sizeof(bm));
	ret = cxltrack_harvest_part(t, CXLT_HARVEST_DIRTY, first_page, 64, CXLT_HARVEST_F_CLEAR,
				    bm, sizeof(bm), &nr, &done);
	if (ret != -EIO)
		fail("harvest answered wrongly by the device: %s, expected EIO",
		     ret ? cxltrack_strerror(ret) : "success");
	if (done != 64 || nr != 64)
		fail("after EIO: done %" PRIu64 " nr_set %" PRIu64 ", expected 64 and 64", done, nr);
	for (int i = 0; i < 64; i++)
		if (!bit(bm, (uint64_t)i))
			fail("after EIO: page %d reported clean (its state on the device is unknown)", i);
	/* The device did clear: the all-set report was the only one of pages 3 and 9. */
	memset(bm, 0, sizeof(bm));
	check(cxltrack_harvest_part(t, CXLT_HARVEST_DIRTY, first_page, 64, 0, bm, sizeof(bm), &nr,
				    &done), "harvest after EIO");
	if (nr)
		fail("%" PRIu64 " pages still dirty on the device after the failed CLEAR", nr);
	printf("ok eio: the failed CLEAR command was EIO with all 64 pages reported set\n");
	return 0;
}

/* --- dma: DMA harvests (spec 5.3) ------------------------------------------ */
static uint64_t dma_commands(void)
{
	struct cxlt_stats s;

	check(cxltrack_stats(t, &s), "stats");
	return s.dma_commands;
}

static void need_dma(void)
{
	if (!t->info.dma_addr_bits)
		fail("the driver does not harvest by DMA (info.dma_addr_bits 0)");
	/* 512: above any sensible dma_min_bytes (the driver's default is 128) */
	if (cxltrack_harvest_bytes(CXLT_HARVEST_DIRTY, npages) < 512)
		fail("%" PRIu64 " pages: too few for a DMA harvest (dma_min_bytes)", npages);
}

static int mode_dmaab(uint64_t rounds)
{
	static const unsigned int kinds[] = { CXLT_HARVEST_DIRTY, CXLT_HARVEST_ACCESSED,
					      CXLT_HARVEST_HOTNESS };
	uint64_t before, nr_dma, nr_mmio, checked = 0;

	need_dma();
	before = dma_commands();
	for (uint64_t r = 0; r < rounds; r++) {
		uint64_t ops = 1 + rnd() % (npages / 8 + 1);

		for (uint64_t k = 0; k < ops; k++) {
			volatile uint8_t *a = page_ptr(first_page + rnd() % npages) + rnd() % page_size;

			if (rnd() % 3)
				*a = (uint8_t)rnd();
			else
				(void)*a;
		}
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			size_t len = cxltrack_harvest_bytes(kinds[k], npages);
			/* Without CLEAR both paths read the same state. */
			uint8_t *d = harvest(kinds[k], 0, &nr_dma);
			uint8_t *m = harvest(kinds[k], CXLT_HARVEST_F_MMIO, &nr_mmio);

			if (nr_dma != nr_mmio || memcmp(d, m, len))
				fail("round %" PRIu64 " kind %u: DMA and MMIO results differ (%" PRIu64
				     " vs %" PRIu64 " set)", r, kinds[k], nr_dma, nr_mmio);
			free(m);
			/* CLEAR (DECAY for hotness) by DMA, then MMIO sees what it left. */
			free(d);
			d = harvest(kinds[k], kinds[k] == CXLT_HARVEST_HOTNESS ?
				    CXLT_HARVEST_F_DECAY : CXLT_HARVEST_F_CLEAR, &nr_dma);
			if (nr_dma != nr_mmio)
				fail("round %" PRIu64 " kind %u: CLEAR by DMA saw %" PRIu64 ", %" PRIu64
				     " before", r, kinds[k], nr_dma, nr_mmio);
			m = harvest(kinds[k], CXLT_HARVEST_F_MMIO, &nr_mmio);
			for (size_t i = 0; i < len; i++) {
				uint8_t want = kinds[k] == CXLT_HARVEST_HOTNESS ? d[i] >> 1 : 0;

				if (m[i] != want)
					fail("round %" PRIu64 " kind %u: byte %zu is %#x after the DMA "
					     "harvest, expected %#x", r, kinds[k], i, m[i], want);
			}
			free(d);
			free(m);
			checked += len;
		}
	}
	if (dma_commands() - before < rounds * 3 * 2)
		fail("only %" PRIu64 " DMA commands for %" PRIu64 " rounds",
		     dma_commands() - before, rounds);
	printf("ok dmaab: %" PRIu64 " rounds, %" PRIu64 " bytes equal by DMA and by MMIO, %" PRIu64
	       " DMA commands\n", rounds, checked, dma_commands() - before);
	return 0;
}

/*
 * One round of a dirty log for the driver's list-or-bitmap choice (test_dma_harvest.py reads
 * its counters between rounds): exactly one DMA harvest, the others by MMIO.
 */
static int mode_density(uint64_t n)
{
	uint64_t words = npages / 64, nr, want = 0;
	uint8_t *truth = calloc(1, npages / 8), *got;
	uint64_t *perm = malloc(npages * sizeof(*perm));

	need_dma();
	if (!truth || !perm)
		fail("oom");
	if (n > npages)
		fail("N %" PRIu64 " > PAGES %" PRIu64, n, npages);
	free(harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_MMIO | CXLT_HARVEST_F_CLEAR, &nr));
	for (uint64_t i = 0; i < npages; i++)
		perm[i] = i;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t p;

		if (n <= words) {
			p = k * words / n * 64 + rnd() % 64;
		} else {
			uint64_t j = k + rnd() % (npages - k), tmp = perm[j];

			perm[j] = perm[k];
			perm[k] = tmp;
			p = tmp;
		}
		page_ptr(first_page + p)[rnd() % page_size] = (uint8_t)rnd();
		truth[p / 8] |= 1 << (p % 8);
	}
	for (uint64_t i = 0; i < npages; i++)
		want += bit(truth, i);
	got = harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_CLEAR, &nr);
	compare("density", 0, got, truth);
	if (nr != want || want != n)
		fail("nr_set %" PRIu64 ", truth %" PRIu64 ", written %" PRIu64, nr, want, n);
	free(got);
	got = harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_MMIO, &nr);
	if (nr)
		fail("%" PRIu64 " pages still set after CLEAR", nr);
	free(got);
	free(perm);
	free(truth);
	printf("ok density: %" PRIu64 " pages written, reported exactly\n", n);
	return 0;
}

/* Write PCI_COMMAND of @bdf with bus mastering on or off (the test runs as root). */
static void bus_master(const char *bdf, int on)
{
	char path[128];
	uint16_t cmd;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", bdf);
	f = fopen(path, "r+b");
	if (!f)
		fail("%s: %s", path, strerror(errno));
	if (fseek(f, 4, SEEK_SET) || fread(&cmd, 2, 1, f) != 1)
		fail("%s: cannot read PCI_COMMAND", path);
	cmd = on ? cmd | 0x4 : cmd & ~0x4;
	if (fseek(f, 4, SEEK_SET) || fwrite(&cmd, 2, 1, f) != 1 || fclose(f))
		fail("%s: cannot write PCI_COMMAND", path);
}

static int mode_dmafault(const char *bdf)
{
	size_t len = npages / 8;
	uint8_t *bm = calloc(1, len);
	uint64_t nr = 0, done = 0, written[3] = { 1, npages / 2, npages - 1 };
	int ret;

	need_dma();
	free(harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_CLEAR, &nr));
	for (int i = 0; i < 3; i++)
		*(volatile uint64_t *)page_ptr(first_page + written[i]) = i + 1;
	bus_master(bdf, 0);
	ret = cxltrack_harvest_part(t, CXLT_HARVEST_DIRTY, first_page, npages, CXLT_HARVEST_F_CLEAR,
				    bm, len, &nr, &done);
	/* The RESULT window needs no bus mastering: the MMIO path still works. */
	if (!ret)
		fail("a DMA harvest with bus mastering off succeeded");
	if (ret != -EIO)
		fail("DMA harvest with bus mastering off: %s, expected EIO", cxltrack_strerror(ret));
	for (uint64_t i = 0; i < done; i++)
		if (!bit(bm, i))
			fail("after EIO: page %" PRIu64 " reported clean", first_page + i);
	free(bm);
	bm = harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_MMIO, &nr);
	for (int i = 0; i < 3; i++)
		if (!bit(bm, written[i]))
			fail("bus mastering off: page %" PRIu64 " lost by the failed DMA CLEAR",
			     first_page + written[i]);
	free(bm);
	bus_master(bdf, 1);
	bm = harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_CLEAR, &nr);
	for (int i = 0; i < 3; i++)
		if (!bit(bm, written[i]))
			fail("page %" PRIu64 " lost across the failed DMA harvest",
			     first_page + written[i]);
	free(bm);
	bm = harvest(CXLT_HARVEST_DIRTY, 0, &nr);
	if (nr)
		fail("%" PRIu64 " pages still dirty after the DMA CLEAR with bus mastering on", nr);
	free(bm);
	printf("ok dmafault: EIO with %" PRIu64 " pages reported set, nothing lost, DMA works again\n",
	       done);
	return 0;
}

static double thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* harvest_list, the driver's module parameter: 1 lets it choose list or bitmap, 0 forces the bitmap. */
static void set_harvest_list(int on)
{
	FILE *f = fopen("/sys/module/cxltrack/parameters/harvest_list", "w");

	if (!f || fprintf(f, "%d\n", on) < 0 || fclose(f))
		fail("harvest_list=%d: %s", on, strerror(errno));
}

/*
 * One dirty-log round = one CXLT_IOC_HARVEST with CLEAR over the whole device into a user
 * bitmap, as QEMU's cxltrack-dirty-log does at each migration sync. Thread CPU time counts
 * the syscall (the driver's MMIO loads or its DMA command and copy), not the writes before.
 * Each round is taken three ways after its own writes: by MMIO, by DMA as the driver chooses
 * (harvest_list=1: a list while rounds are sparse), and by DMA with the bitmap forced
 * (harvest_list=0); the parameter is restored to 1 at the end.
 */
static int mode_cpubench(uint64_t rounds, uint64_t permille)
{
	enum { MMIO, DMA, BITMAP, WAYS };
	uint64_t pages = t->info.pages, nr, before = dma_commands();
	size_t len = pages / 8;
	uint8_t *buf = malloc(len);
	double *us[WAYS];

	for (int w = 0; w < WAYS; w++)
		us[w] = calloc(rounds, sizeof(double));
	if (!buf || !us[MMIO] || !us[DMA] || !us[BITMAP])
		fail("oom");
	if (!t->info.dma_addr_bits)
		fail("the driver does not harvest by DMA (info.dma_addr_bits 0)");
	check(cxltrack_harvest(t, CXLT_HARVEST_DIRTY, 0, pages, CXLT_HARVEST_F_CLEAR, buf, len, &nr),
	      "harvest");
	for (uint64_t r = 0; r < rounds; r++) {
		for (int w = 0; w < WAYS; w++) {
			unsigned int flags = CXLT_HARVEST_F_CLEAR | (w == MMIO ? CXLT_HARVEST_F_MMIO : 0);
			double t0;

			set_harvest_list(w != BITMAP);
			for (uint64_t k = 0; k < npages * permille / 1000; k++)
				*(volatile uint64_t *)page_ptr(first_page + rnd() % npages) = r;
			t0 = thread_cpu_us();
			check(cxltrack_harvest(t, CXLT_HARVEST_DIRTY, 0, pages, flags, buf, len, &nr),
			      "harvest");
			us[w][r] = thread_cpu_us() - t0;
		}
	}
	set_harvest_list(1);
	if (dma_commands() - before < 2 * rounds)
		fail("only %" PRIu64 " DMA commands in %" PRIu64 " rounds", dma_commands() - before,
		     rounds);
	for (int w = 0; w < WAYS; w++)
		qsort(us[w], rounds, sizeof(double), cmp_double);
	printf("cpubench pages=%" PRIu64 " rounds=%" PRIu64 " permille=%" PRIu64
	       " mmio_us=%.1f dma_us=%.1f bitmap_us=%.1f\n", pages, rounds, permille,
	       us[MMIO][rounds / 2], us[DMA][rounds / 2], us[BITMAP][rounds / 2]);
	return 0;
}

/* --- evbad: a dropped record of a bad type is no gap ------------------------- */
static int mode_evbad(void)
{
	uint8_t full[4096];
	struct cxlt_event ev[8];

	memset(full, 0x5a, sizeof(full));
	/*
	 * Two rounds: the first record of all has no sequence to follow, so only
	 * the second shows whether a dropped record broke the sequence.
	 */
	for (int round = 0; round < 2; round++) {
		double end = now_s() + 10;
		int slot, n, seen = 0;

		slot = cxltrack_slot_alloc(t, 0xbad, 0);
		check(slot, "SLOT_ALLOC");
		check(cxltrack_slot_write(t, slot, 0, full, sizeof(full)), "SLOT_WRITE (full page)");
		while (!seen && now_s() < end) {
			n = cxltrack_events(t, ev, 8, 1000);
			check(n, "events");
			for (int i = 0; i < n; i++) {
				if (ev[i].type != CXLT_EV_SLOT_FULL || ev[i].index != slot)
					continue;
				if (ev[i].flags & CXLT_EVENT_F_GAP)
					fail("FALSE GAP: SLOT_FULL after a dropped record flagged GAP "
					     "(round %d, seq %u)", round, ev[i].seq);
				seen = 1;
			}
		}
		if (!seen)
			fail("no SLOT_FULL for slot %d within 10 s", slot);
		check(cxltrack_slot_release(t, slot), "SLOT_RELEASE");
	}
	printf("ok evbad: the events after dropped records arrived without a GAP flag\n");
	return 0;
}

/* --- sigrace: property (a) at the ioctl boundary --------------------------- */
static atomic_int side_stop;
static pthread_t harvester;
static uint8_t *sig_buf;		/* two output pages per command, see mode_sigrace */
static size_t sig_len;

static void on_sigusr1(int sig)
{
	(void)sig;
}

/* Interrupt the harvester's ioctls: its locks are waited for interruptibly. */
static void *sig_sender(void *arg)
{
	(void)arg;
	while (!atomic_load(&side_stop)) {
		pthread_kill(harvester, SIGUSR1);
		usleep(50 + rnd() % 200);
	}
	return NULL;
}

/* A second file keeps the command engine busy, so the harvester waits for it. */
static void *contender(void *arg)
{
	struct cxltrack *t2;
	size_t len = cxltrack_harvest_bytes(CXLT_HARVEST_DIRTY, t->info.pages);
	uint8_t *buf = malloc(len);

	(void)arg;
	check(cxltrack_open(NULL, &t2), "open (contender)");
	while (!atomic_load(&side_stop))
		check(cxltrack_harvest(t2, CXLT_HARVEST_DIRTY, 0, t->info.pages, 0, buf, len,
				       NULL), "contender harvest");
	cxltrack_close(t2);
	free(buf);
	return NULL;
}

/* Write-protect the harvester's output at random: faults after a CLEAR. */
static void *protector(void *arg)
{
	(void)arg;
	while (!atomic_load(&side_stop)) {
		mprotect(sig_buf, sig_len, PROT_READ);
		usleep(rnd() % 300);
		mprotect(sig_buf, sig_len, PROT_READ | PROT_WRITE);
		usleep(rnd() % 300);
	}
	mprotect(sig_buf, sig_len, PROT_READ | PROT_WRITE);
	return NULL;
}

/*
 * Harvest-with-CLEAR the whole device (several device commands per call)
 * while a writer dirties the working set, signals hit the harvester, a
 * second file contends for the engine and the output is write-protected at
 * random. Pages are credited only as the driver reports them done; a short
 * result is continued from where it stopped. Every write must be covered by
 * a report that ended after it (as in race), so a call that cleared pages
 * and then failed without saying so shows up as a LOST WRITE.
 */
static int mode_sigrace(double seconds)
{
	uint64_t total = t->info.pages, count_calls = 0, shorts = 0, eintr = 0, efault = 0;
	uint64_t *last_report = calloc(npages, sizeof(uint64_t));
	struct sigaction sa = { .sa_handler = on_sigusr1 };	/* no SA_RESTART */
	pthread_t wr, sg, ct, pr;
	double end;

	sig_len = (cxltrack_harvest_bytes(CXLT_HARVEST_DIRTY, total) + 4095) & ~4095ul;
	sig_buf = mmap(NULL, sig_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stamps_new();
	if (sig_buf == MAP_FAILED || !last_report)
		fail("oom");
	if (total < 2 * 32768)
		fail("sigrace needs a device of at least 65536 pages (two commands per call)");
	sigaction(SIGUSR1, &sa, NULL);
	harvester = pthread_self();
	check(cxltrack_harvest(t, CXLT_HARVEST_DIRTY, 0, total, CXLT_HARVEST_F_CLEAR, sig_buf,
			       sig_len, NULL), "initial harvest");
	if (pthread_create(&wr, NULL, stamp_writer, NULL) ||
	    pthread_create(&sg, NULL, sig_sender, NULL) ||
	    pthread_create(&ct, NULL, contender, NULL) ||
	    pthread_create(&pr, NULL, protector, NULL))
		fail("pthread_create");
	end = now_s() + seconds;
	for (int final = 0; final < 2;) {
		uint64_t pos = 0;

		if (now_s() >= end && !final) {
			atomic_store(&writer_stop, 1);
			atomic_store(&side_stop, 1);
			pthread_join(wr, NULL);
			pthread_join(sg, NULL);
			pthread_join(ct, NULL);
			pthread_join(pr, NULL);
			final = 1;	/* one more round with everything stopped */
		} else if (final) {
			final = 2;
		}
		/* One round: the whole device, in as many calls as it takes. */
		while (pos < total) {
			uint64_t done = 0, nr = 0, h_end;
			int ret;

			ret = cxltrack_harvest_part(t, CXLT_HARVEST_DIRTY, pos, total - pos,
						    CXLT_HARVEST_F_CLEAR, sig_buf + pos / 8,
						    sig_len - pos / 8, &nr, &done);
			h_end = atomic_load(&st->gseq);
			count_calls++;
			if (ret == -EINTR || ret == -EFAULT) {
				if (done)
					fail("error %d with %" PRIu64 " pages done", ret, done);
				eintr += ret == -EINTR;
				efault += ret == -EFAULT;
				continue;
			}
			check(ret, "harvest");
			if (done > total - pos || done % 64)
				fail("done %" PRIu64 " at %" PRIu64, done, pos);
			if (pos + done < total)
				shorts++;
			for (uint64_t i = 0; i < npages; i++) {
				uint64_t p = first_page + i;

				if (p >= pos && p < pos + done && bit(sig_buf, p))
					last_report[i] = h_end;
			}
			pos += done;
		}
	}
	check_last_writes(last_report, "sigrace");
	printf("ok sigrace: %" PRIu64 " writes, %" PRIu64 " calls (%" PRIu64 " short, %" PRIu64
	       " EINTR, %" PRIu64 " EFAULT), no lost write\n", writes_done, count_calls, shorts,
	       eintr, efault);
	return 0;
}

/* --- BAT invalidation by CPU stores ------------------------------------ */
static int mode_bat(uint64_t rounds)
{
	uint64_t block, inval = 0;
	uint32_t disk;
	uint32_t dmax = (1u << t->info.disk_bits) - 1;
	uint64_t bmax = t->info.block_bits >= 64 ? ~0ull : (1ull << t->info.block_bits) - 1;

	for (uint64_t r = 0; r < rounds; r++) {
		uint64_t p = first_page + rnd() % npages, b = rnd() & bmax;
		uint32_t d = (uint32_t)(rnd() & dmax);
		int store = rnd() % 2, ret;

		check(cxltrack_bat_set(t, p, b, d), "bat set");
		ret = cxltrack_bat_get(t, p, &block, &disk);
		check(ret, "bat get");
		if (ret != 1 || block != b || disk != d)
			fail("page %" PRIu64 ": set %" PRIu64 "/%u, get %d %" PRIu64 "/%u", p, b, d,
			     ret, block, disk);
		if (store)
			page_ptr(p)[rnd() % page_size] = (uint8_t)rnd();
		else
			(void)page_ptr(p)[rnd() % page_size];	/* a load never invalidates */
		ret = cxltrack_bat_get(t, p, &block, &disk);
		check(ret, "bat get");
		if (ret == store)
			fail("page %" PRIu64 ": after a %s the association is %s", p,
			     store ? "store" : "load", ret ? "still valid" : "gone");
		inval += store;
		check(cxltrack_bat_clear(t, p), "bat clear");
	}
	printf("ok bat: %" PRIu64 " associations, %" PRIu64 " invalidated by a CPU store, "
	       "loads never invalidate\n", rounds, inval);
	return 0;
}

/* --- discard-if-clean racing a writer: property (b) -------------------- */
static atomic_int go, done_store;
static atomic_uint_fast64_t target_page;
static uint64_t delay_spins;

static void *discard_writer(void *arg)
{
	(void)arg;
	for (;;) {
		while (!atomic_load(&go))
			;
		if (atomic_load(&go) < 0)
			return NULL;
		for (volatile uint64_t i = 0; i < delay_spins; i++)
			;
		*(volatile uint32_t *)page_ptr(atomic_load(&target_page)) = 0xdeadbeef;
		atomic_store(&done_store, 1);
		atomic_store(&go, 0);
	}
}

static int mode_discard(uint64_t rounds)
{
	uint64_t clean = 0, dirty = 0, block;
	uint32_t disk;
	pthread_t th;
	int ret;

	/* Without a writer: clean gives the association back, exactly once. */
	for (uint64_t r = 0; r < 16; r++) {
		uint64_t p = first_page + rnd() % npages;

		check(cxltrack_bat_set(t, p, r + 100, 1), "bat set");
		ret = cxltrack_bat_discard(t, p, &block, &disk);
		check(ret, "discard");
		if (ret != 1 || block != r + 100 || disk != 1)
			fail("quiet discard of %" PRIu64 ": %d %" PRIu64 "/%u", p, ret, block, disk);
		ret = cxltrack_bat_discard(t, p, &block, &disk);
		check(ret, "discard");
		if (ret != 0)
			fail("second discard of %" PRIu64 " said clean", p);
	}
	if (pthread_create(&th, NULL, discard_writer, NULL))
		fail("pthread_create");
	for (uint64_t r = 0; r < rounds; r++) {
		uint64_t p = first_page + rnd() % npages;
		int before;

		check(cxltrack_bat_set(t, p, r, 2), "bat set");
		atomic_store(&done_store, 0);
		atomic_store(&target_page, p);
		delay_spins = rnd() % 20000;
		atomic_store(&go, 1);
		for (volatile uint64_t i = 0; i < rnd() % 20000; i++)
			;
		before = atomic_load(&done_store);
		ret = cxltrack_bat_discard(t, p, &block, &disk);
		check(ret, "discard");
		while (atomic_load(&go) > 0)
			;
		/* Property (b): a store that completed before the discard began is never "clean". */
		if (ret == 1 && before)
			fail("FALSE CLEAN: page %" PRIu64 " written before the discard, discard said clean",
			     p);
		ret == 1 ? clean++ : dirty++;
		ret = cxltrack_bat_get(t, p, &block, &disk);
		check(ret, "bat get");
		if (ret)
			fail("page %" PRIu64 ": association survived a discard", p);
	}
	atomic_store(&go, -1);
	pthread_join(th, NULL);
	printf("ok discard: %" PRIu64 " racing discards (%" PRIu64 " clean, %" PRIu64
	       " dirty), no false clean\n", rounds, clean, dirty);
	return 0;
}

/* --- slots: property (c) ----------------------------------------------- */
static void fill_page(uint64_t p, uint8_t *out)
{
	for (uint64_t i = 0; i < page_size; i += 8) {
		uint64_t v = rnd();

		memcpy(out + i, &v, 8);
		*(volatile uint64_t *)(page_ptr(p) + i) = v;
	}
}

static int mode_slot(uint64_t rounds)
{
	uint8_t *old = malloc(page_size), *want = malloc(page_size), *slotb = malloc(4096);
	uint8_t *valid = malloc(4096), mask[512];
	uint64_t full = 0, partial = 0, nr, vb;
	struct cxlt_slot_query q;

	if (page_size != 4096)
		fail("slot test needs 4 KiB pages");
	for (uint64_t r = 0; r < rounds; r++) {
		uint64_t p = first_page + rnd() % npages;
		int is_full = r % 2 == 0, slot;
		uint64_t nvalid = 0;
		uint8_t *got;

		fill_page(p, old);
		memcpy(want, old, page_size);
		memset(valid, 0, 4096);
		slot = cxltrack_slot_alloc(t, 0x1000 + r, 0);
		check(slot, "slot alloc");
		if (is_full) {
			for (int i = 0; i < 4096; i++)
				slotb[i] = (uint8_t)rnd();
			check(cxltrack_slot_write(t, (unsigned int)slot, 0, slotb, 4096), "slot write");
			memcpy(want, slotb, 4096);
			memset(valid, 1, 4096);
		} else {
			int pieces = 1 + (int)(rnd() % 12);

			for (int k = 0; k < pieces; k++) {
				unsigned int off = (unsigned int)(rnd() % 4096);
				unsigned int len = 1 + (unsigned int)(rnd() % (4096 - off < 300 ? 4096 - off : 300));

				for (unsigned int i = 0; i < len; i++)
					slotb[i] = (uint8_t)rnd();
				check(cxltrack_slot_write(t, (unsigned int)slot, off, slotb, len),
				      "slot write");
				memcpy(want + off, slotb, len);
				memset(valid + off, 1, len);
			}
		}
		for (int i = 0; i < 4096; i++)
			nvalid += valid[i];
		check(cxltrack_slot_query(t, (unsigned int)slot, &q, mask), "slot query");
		if (q.state != CXLT_SLOTST_OPEN || q.valid_bytes != nvalid || q.full != (unsigned int)is_full ||
		    !q.owned || q.tag != 0x1000 + r)
			fail("slot %d query: state %u valid %u (want %" PRIu64 ") full %u owned %u",
			     slot, q.state, q.valid_bytes, nvalid, q.full, q.owned);
		for (int i = 0; i < 4096; i++)
			if ((mask[i / 8] >> (i % 8) & 1) != valid[i])
				fail("slot %d: mask bit %d wrong", slot, i);
		free(harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_CLEAR, &nr));
		check(cxltrack_bat_set(t, p, r, 3), "bat set");
		check(cxltrack_slot_merge(t, (unsigned int)slot, p, &vb), "slot merge");
		if (vb != nvalid)
			fail("merge wrote %" PRIu64 " bytes, want %" PRIu64, vb, nvalid);
		for (uint64_t i = 0; i < page_size; i++)
			if (page_ptr(p)[i] != want[i])
				fail("page %" PRIu64 " byte %" PRIu64 ": 0x%02x, want 0x%02x (%s, %s)", p,
				     i, page_ptr(p)[i], want[i], is_full ? "full" : "partial",
				     valid[i] ? "slot byte" : "old byte");
		got = harvest(CXLT_HARVEST_DIRTY, CXLT_HARVEST_F_CLEAR, &nr);
		if (nr != 1 || !bit(got, p - first_page))
			fail("merge into %" PRIu64 ": dirty harvest has %" PRIu64 " pages", p, nr);
		free(got);
		if (cxltrack_bat_get(t, p, &vb, &(uint32_t){0}) != 0)
			fail("merge did not clear the association of %" PRIu64, p);
		check(cxltrack_slot_query(t, (unsigned int)slot, &q, NULL), "slot query");
		/* FREE, or already reallocated by another process (with its own tag). */
		if (q.owned || (q.state != CXLT_SLOTST_FREE && q.tag == 0x1000 + r))
			fail("slot %d not FREE after merge (state %u)", slot, q.state);
		is_full ? full++ : partial++;
	}
	printf("ok slot: %" PRIu64 " full-page and %" PRIu64 " partial merges gave the right "
	       "bytes, dirty set, association cleared\n", full, partial);
	return 0;
}

/* --- events ------------------------------------------------------------ */
static int wait_event(unsigned int type, uint16_t index, uint64_t arg, int timeout_ms)
{
	struct cxlt_event ev[16];
	double end = now_s() + timeout_ms / 1000.0;

	while (now_s() < end) {
		int n = cxltrack_events(t, ev, 16, 200);

		check(n, "events");
		for (int i = 0; i < n; i++) {
			printf("  event %s index=%u arg=0x%" PRIx64 " seq=%u flags=%u\n",
			       cxltrack_event_name(ev[i].type), ev[i].index, (uint64_t)ev[i].arg,
			       ev[i].seq, ev[i].flags);
			if (ev[i].type == type && ev[i].index == index && ev[i].arg == arg)
				return 0;
		}
	}
	fail("no %s index=%u arg=0x%" PRIx64 " within %d ms", cxltrack_event_name(type), index,
	     arg, timeout_ms);
}

static int mode_events(void)
{
	uint8_t buf[4096];
	struct cxlt_ctrl c = { .set = CXLT_CTRL_F_BAT_INV_EVT };
	unsigned int state, owner, chunk = t->info.num_chunks - 1;
	uint64_t vb, p = first_page + 1;
	int slot;

	/* Chunk and BAT events belong to no file: a monitor gets them. */
	check(cxltrack_event_scope(t, CXLT_EVENTS_ALL), "event scope ALL");

	memset(buf, 0x5a, sizeof(buf));
	slot = cxltrack_slot_alloc(t, 0xabc, 0);
	check(slot, "slot alloc");
	check(cxltrack_slot_write(t, (unsigned int)slot, 0, buf, 4096), "slot write");
	wait_event(CXLT_EV_SLOT_FULL, (uint16_t)slot, 0xabc, 5000);
	check(cxltrack_slot_merge(t, (unsigned int)slot, p, &vb), "slot merge");
	wait_event(CXLT_EV_MERGE_DONE, (uint16_t)slot, p, 5000);

	check(cxltrack_ctrl(t, &c), "ctrl");
	check(cxltrack_bat_set(t, p, 7, 1), "bat set");
	*(volatile uint8_t *)page_ptr(p) = 1;
	wait_event(CXLT_EV_BAT_INVALIDATED, 0, p, 5000);
	c.set = 0;
	c.clear = CXLT_CTRL_F_BAT_INV_EVT;
	check(cxltrack_ctrl(t, &c), "ctrl");

	/* The last chunk: outside the small working set the other tests use. */
	check(cxltrack_chunk_assign(t, chunk, 42), "chunk assign");
	check(cxltrack_chunk_release(t, chunk, 42), "chunk release");
	/*
	 * Two SCRUB_DONE(chunk, 42) may come: the driver scrubs a chunk it has
	 * not seen scrubbed since probe before its first assignment (with the
	 * new owner's id), then the release's own. After the first, the chunk
	 * may still be SCRUBBING for the second; after the second it is FREE.
	 */
	for (int seen = 0;;) {
		wait_event(CXLT_EV_SCRUB_DONE, (uint16_t)chunk, 42, 10000);
		seen++;
		check(cxltrack_chunk_query(t, chunk, &state, &owner), "chunk query");
		if (state == CXLT_CHUNKST_FREE && !owner)
			break;
		if (seen == 2 || state != CXLT_CHUNKST_SCRUBBING)
			fail("chunk %u after scrub: state %u owner %u", chunk, state, owner);
	}
	/*
	 * Per-file ring: 300 MERGE_DONE events left unread fill this file's ring
	 * (256 records); the rest are dropped for this file only and the next
	 * record it gets carries CXLT_EVENT_F_OVERRUN.
	 */
	{
		struct cxlt_event ev[64];
		int n, got = 0, flagged = 0;

		struct cxlt_stats s0, s1;
		uint64_t dropped;

		while (cxltrack_events(t, ev, 64, 0) > 0)
			;
		check(cxltrack_stats(t, &s0), "stats");
		for (int k = 0; k < 300; k++) {
			slot = cxltrack_slot_alloc(t, (uint64_t)k, 0);
			check(slot, "slot alloc");
			check(cxltrack_slot_write(t, (unsigned int)slot, 0, buf, 1), "slot write");
			check(cxltrack_slot_merge(t, (unsigned int)slot, p, &vb), "slot merge");
			/* Let the IRQ thread drain the device's queue (64 deep by default). */
			if (k % 16 == 15)
				usleep(2000);
		}
		usleep(200000);
		while ((n = cxltrack_events(t, ev, 64, 0)) > 0)
			got += n;
		check(n, "events");
		/*
		 * On a loaded host the IRQ thread may still fall behind and the
		 * device drop events (counted in EVQ_DROPPED, never silently):
		 * those never reach any file. Every event that did reach the
		 * driver must be in this file's ring, up to its 256 records.
		 */
		check(cxltrack_stats(t, &s1), "stats");
		dropped = s1.evq_dropped - s0.evq_dropped;
		if ((uint64_t)got != (300 - dropped < 256 ? 300 - dropped : 256))
			fail("read %d records after 300 unread events (%llu dropped by the device), want %llu",
			     got, (unsigned long long)dropped,
			     (unsigned long long)(300 - dropped < 256 ? 300 - dropped : 256));
		slot = cxltrack_slot_alloc(t, 999, 0);
		check(slot, "slot alloc");
		check(cxltrack_slot_release(t, (unsigned int)slot), "slot release");
		slot = cxltrack_slot_alloc(t, 998, 0);
		check(slot, "slot alloc");
		/* a full slot: SLOT_FULL */
		check(cxltrack_slot_write(t, (unsigned int)slot, 0, buf, 4096), "slot write");
		n = cxltrack_events(t, ev, 64, 2000);
		check(n, "events");
		for (int k = 0; k < n; k++)
			flagged += !!(ev[k].flags & CXLT_EVENT_F_OVERRUN);
		/* Only a ring that really overflowed flags its next record. */
		if (300 - dropped > 256 &&
		    (n < 1 || !(ev[0].flags & CXLT_EVENT_F_OVERRUN) || flagged != 1))
			fail("after an overrun: %d records, first flags %u, %d flagged", n,
			     n > 0 ? ev[0].flags : 0, flagged);
		if (300 - dropped <= 256 && flagged)
			fail("no ring overrun (%llu dropped by the device), yet %d records flagged",
			     (unsigned long long)dropped, flagged);
	}
	printf("ok events: SLOT_FULL, MERGE_DONE, BAT_INVALIDATED, SCRUB_DONE arrived via poll+read; "
	       "a full per-file ring flags the next record OVERRUN\n");
	return 0;
}

/* --- hold: lifetime ---------------------------------------------------- */
static int mode_hold(double seconds)
{
	struct cxlt_stats s;
	uint64_t ok = 0, nr;
	uint8_t buf[8];
	double end = now_s() + seconds;
	int ret = 0;

	check(cxltrack_open(NULL, &t), "open");
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("holding\n");
	while (now_s() < end) {
		ret = cxltrack_harvest(t, CXLT_HARVEST_DIRTY, 0, 64, 0, buf, 8, &nr);
		if (!ret)
			ret = cxltrack_stats(t, &s);
		if (ret)
			break;
		ok++;
	}
	if (ret) {
		struct cxlt_event ev;

		printf("ioctl ended with %s after %" PRIu64 " calls\n", cxltrack_strerror(ret), ok);
		ret = cxltrack_events(t, &ev, 1, 0);
		printf("events: %s\n", ret < 0 ? cxltrack_strerror(ret) : "still readable");
		cxltrack_close(t);
		return 0;
	}
	printf("no error in %" PRIu64 " calls\n", ok);
	cxltrack_close(t);
	return 0;
}

/* --- evfault: read() into a bad buffer ---------------------------------------- */
static int mode_evfault(void)
{
	struct cxlt_event ev;
	void *ro;
	ssize_t r;
	int slot;

	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED)
		fail("mmap");
	/* A SLOT_FULL event: fill a slot completely. */
	slot = cxltrack_slot_alloc(t, 0xEF, 0);
	check(slot, "slot alloc");
	{
		uint8_t page[4096];

		memset(page, 0x5a, sizeof(page));
		check(cxltrack_slot_write(t, slot, 0, page, sizeof(page)), "slot write");
	}
	{
		struct pollfd pfd = { .fd = t->fd, .events = POLLIN };

		if (poll(&pfd, 1, 5000) != 1)
			fail("no event within 5 s");
	}
	r = read(t->fd, ro, sizeof(ev));
	if (r != -1 || errno != EFAULT)
		fail("read into a read-only page: %zd (%s), expected EFAULT", r, strerror(errno));
	/* An address nothing is mapped at (the compiler must not see a constant). */
	r = read(t->fd, (void *)(uintptr_t)getenv("CXLT_NO_SUCH_VAR") + 8, sizeof(ev));
	if (r != -1 || errno != EFAULT)
		fail("read into an unmapped address: %zd (%s), expected EFAULT", r, strerror(errno));
	/* The record is still there. */
	wait_event(CXLT_EV_SLOT_FULL, (uint16_t)slot, 0xEF, 2000);
	check(cxltrack_slot_release(t, slot), "slot release");
	printf("ok evfault: the event survived two faulting read()s\n");
	return 0;
}

/* --- tenant: the permission model as seen by unprivileged callers ------------- */
static int expect_err(int ret, int want, const char *what)
{
	if (ret != want)
		fail("%s: got %s, expected %s", what, ret < 0 ? cxltrack_strerror(ret) : "success",
		     cxltrack_strerror(want));
	return 0;
}

/*
 * Events of @type for @slot that reach @who within a second. Other events may
 * come first (the MERGE_DONE of the tenant's own merge just before), and one
 * read returns what is queued when it wakes, so read until the wanted one came
 * or the second is over.
 */
static int tenant_events(struct cxltrack *who, unsigned int type, unsigned int slot)
{
	struct cxlt_event ev[16];
	int n, hits = 0;
	double end = now_s() + 1.0, left;

	while (!hits && (left = end - now_s()) > 0) {
		n = cxltrack_events(who, ev, 16, (int)(left * 1000) + 1);
		check(n, "events");
		for (int i = 0; i < n; i++)
			hits += ev[i].type == type && ev[i].index == slot;
	}
	return hits;
}

/* CHUNK_ASSIGN, waiting out the scrub of a chunk released just before (-EBUSY). */
static int assign_when_free(struct cxltrack *who, unsigned int chunk, unsigned int owner,
			    unsigned int flags)
{
	int ret, tries = 500;

	while ((ret = cxltrack_chunk_assign_flags(who, chunk, owner, flags)) == -EBUSY && --tries)
		usleep(10000);
	return ret;
}

static int mode_tenant(void)
{
	struct cxltrack *a, *b;
	struct cxlt_ctrl c = { 0 };
	struct cxlt_stats st;
	struct cxlt_slot_query q;
	unsigned int state, owner, chunk = t->info.num_chunks - 2;
	uint8_t page[4096], *bm = calloc(1, 4096);
	uint64_t blk, nr, vb;
	uint32_t disk;
	int keep, sa, eperm = 0;

	memset(page, 0x77, sizeof(page));
	/* Set up by the privileged process: a device-wide slot, an owned chunk. */
	keep = cxltrack_slot_alloc(t, 0x4b, CXLT_SLOT_F_KEEP);
	check(keep, "KEEP slot (admin)");
	/* Bound to t: an earlier run's binding went (and its scrub ran) when it exited. */
	check(assign_when_free(t, chunk, 7, 0), "chunk assign (admin)");
	check(cxltrack_bat_set(t, first_page + 2, 99, 3), "BAT_SET (admin)");
	/* The tenant's mapping: pages [0, 512) writable, [512, 1024) read-only. */
	if (mprotect((void *)page_ptr(first_page + 512), 512 * page_size, PROT_READ))
		fail("mprotect: %s", strerror(errno));
	check(cxltrack_open(NULL, &a), "open (tenant A)");
	check(cxltrack_open(NULL, &b), "open (tenant B)");
	/* A's file is granted pages [768, 832), which it maps read-only only (below). */
	check(cxltrack_grant(a, CXLT_GRANT_ADD, first_page + 768, 64), "GRANT (admin)");
	check(cxltrack_grant(a, CXLT_GRANT_ADD, first_page + 900, 1), "GRANT (admin, second)");
	check(cxltrack_grant(a, CXLT_GRANT_REVOKE, first_page + 900, 1), "GRANT REVOKE (admin)");
	expect_err(cxltrack_grant(a, CXLT_GRANT_REVOKE, first_page + 900, 1), -ENOENT,
		   "REVOKE of a range not granted");
	expect_err(cxltrack_grant(a, CXLT_GRANT_ADD, t->info.pages - 1, 2), -ERANGE,
		   "GRANT past the device");
	check(cxltrack_bat_set(t, first_page + 770, 55, 3), "BAT_SET (admin, granted page)");
	/* Hand the files over: drop every privilege. */
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		fail("cannot drop privileges: %s", strerror(errno));

#define DENIED(call, what) do { expect_err((call), -EPERM, what); eperm++; } while (0)
	DENIED(cxltrack_harvest(a, CXLT_HARVEST_DIRTY, first_page, 64, CXLT_HARVEST_F_CLEAR, bm,
				4096, &nr), "harvest CLEAR");
	DENIED(cxltrack_harvest(a, CXLT_HARVEST_HOTNESS, first_page, 64, CXLT_HARVEST_F_DECAY, bm,
				4096, &nr), "harvest DECAY");
	DENIED(cxltrack_harvest(a, CXLT_HARVEST_DIRTY, first_page, 64, CXLT_HARVEST_F_WRITEBACK,
				bm, 4096, &nr), "harvest WRITEBACK");
	DENIED(cxltrack_bat_set(a, first_page, 1, 1), "BAT_SET");
	DENIED(cxltrack_bat_clear(a, first_page), "BAT_CLEAR");
	DENIED(cxltrack_bat_discard(a, first_page, &blk, &disk), "BAT_DISCARD");
	DENIED(cxltrack_slot_alloc(a, 1, CXLT_SLOT_F_KEEP), "SLOT_ALLOC KEEP");
	DENIED(cxltrack_slot_write(a, keep, 0, page, 64), "SLOT_WRITE to a KEEP slot");
	DENIED(cxltrack_slot_release(a, keep), "SLOT_RELEASE of a KEEP slot");
	DENIED(cxltrack_chunk_assign(a, chunk - 1, 8), "CHUNK_ASSIGN");
	DENIED(cxltrack_chunk_release(a, chunk, 7), "CHUNK_RELEASE of another owner's chunk");
	c.clear = CXLT_CTRL_F_TRACK_EN;
	DENIED(cxltrack_ctrl(a, &c), "CTRL clear TRACK_EN");
	memset(&c, 0, sizeof(c));
	c.flags = CXLT_CTRL_TIMEOUT;
	c.slot_timeout = 1;
	DENIED(cxltrack_ctrl(a, &c), "CTRL SLOT_TIMEOUT");

	/* What a tenant may do: read, and use slots of its own. */
	check(cxltrack_stats(a, &st), "STATS");
	memset(&c, 0, sizeof(c));
	check(cxltrack_ctrl(a, &c), "CTRL query");
	if (!(c.ctrl & CXLT_CTRL_F_TRACK_EN))
		fail("TRACK_EN was cleared by a tenant");
	check(cxltrack_harvest(a, CXLT_HARVEST_DIRTY, first_page, 64, 0, bm, 4096, &nr),
	      "harvest without CLEAR");
	check(cxltrack_bat_get(a, first_page, &blk, &disk), "BAT_GET");
	check(cxltrack_chunk_query(a, chunk, &state, &owner), "CHUNK_QUERY");
	if (state != CXLT_CHUNKST_OWNED || owner != 7)
		fail("chunk %u: state %u owner %u after a tenant's RELEASE", chunk, state, owner);
	sa = cxltrack_slot_alloc(a, 0xA, 0);
	check(sa, "SLOT_ALLOC (own)");
	{
		/* A tenant holds at most tenant_slots (2) slots: the device has more. */
		int more = cxltrack_slot_alloc(a, 0xB, 0);

		check(more, "SLOT_ALLOC (own, second)");
		expect_err(cxltrack_slot_alloc(a, 0xC, 0), -ENOSPC, "SLOT_ALLOC past tenant_slots");
		check(cxltrack_slot_release(a, more), "SLOT_RELEASE (second)");
	}
	DENIED(cxltrack_slot_merge(a, sa, first_page, &vb), "SLOT_MERGE");
	/*
	 * A page the tenant maps writable is its own: a merge into it and a discard of
	 * its association, naming the mapping, are allowed; naming another page, or a
	 * read-only mapping, is not.
	 */
	{
		struct cxlt_slot_merge sm = { .slot = (uint32_t)sa, .flags = CXLT_SLOT_MERGE_F_ADDR };
		struct cxlt_bat d = { .op = CXLT_BAT_DISCARD, .flags = CXLT_BAT_F_ADDR };
		int own = cxltrack_slot_alloc(a, 0xD, 0);

		check(own, "SLOT_ALLOC (own, for a merge)");
		check(cxltrack_slot_write(a, own, 0, page, 64), "SLOT_WRITE (own)");
		sm.slot = (uint32_t)own;
		sm.page = first_page + 1;
		sm.addr = (uintptr_t)page_ptr(first_page);
		DENIED(ioctl(a->fd, CXLT_IOC_SLOT_MERGE, &sm) ? -errno : 0, "SLOT_MERGE naming another page's mapping");
		sm.page = first_page + 512;
		sm.addr = (uintptr_t)page_ptr(first_page + 512);
		DENIED(ioctl(a->fd, CXLT_IOC_SLOT_MERGE, &sm) ? -errno : 0, "SLOT_MERGE into a read-only mapping");
		sm.page = first_page + 1;
		sm.addr = (uintptr_t)page_ptr(first_page + 1);
		if (ioctl(a->fd, CXLT_IOC_SLOT_MERGE, &sm))
			fail("SLOT_MERGE into the tenant's own page: %s", strerror(errno));
		if (sm.valid_bytes != 64 || page_ptr(first_page + 1)[0] != 0x77)
			fail("own merge: %" PRIu64 " bytes, page starts %02x", (uint64_t)sm.valid_bytes,
			     page_ptr(first_page + 1)[0]);
		d.page = first_page + 2;
		d.addr = (uintptr_t)page_ptr(first_page + 3);
		DENIED(ioctl(a->fd, CXLT_IOC_BAT, &d) ? -errno : 0, "BAT_DISCARD naming another page's mapping");
		d.addr = (uintptr_t)page_ptr(first_page + 2);
		if (ioctl(a->fd, CXLT_IOC_BAT, &d))
			fail("BAT_DISCARD of the tenant's own page: %s", strerror(errno));
		if (!d.valid || d.block != 99 || d.disk != 3)
			fail("own discard: valid %u block %" PRIu64 " disk %u", d.valid, (uint64_t)d.block, d.disk);
	}
	/*
	 * Granted pages are A's without a mapping: a merge into one and a discard of its
	 * association work by page number; the page next to the grant, another tenant, a
	 * tenant's own grant and a revoked range do not.
	 */
	{
		int own = cxltrack_slot_alloc(a, 0xE, 0);
		uint64_t gblk;
		uint32_t gdisk;

		check(own, "SLOT_ALLOC (own, for a granted page)");
		check(cxltrack_slot_write(a, own, 0, page, 64), "SLOT_WRITE (granted)");
		check(cxltrack_slot_merge(a, own, first_page + 768, &vb), "SLOT_MERGE into a granted page");
		if (vb != 64)
			fail("granted merge: %" PRIu64 " bytes", vb);
		check(cxltrack_bat_discard(a, first_page + 770, &gblk, &gdisk),
		      "BAT_DISCARD of a granted page");
		if (gblk != 55 || gdisk != 3)
			fail("granted discard: block %" PRIu64 " disk %u", gblk, gdisk);
		own = cxltrack_slot_alloc(a, 0xF, 0);
		check(own, "SLOT_ALLOC (own, second granted)");
		DENIED(cxltrack_slot_merge(a, own, first_page + 832, &vb), "SLOT_MERGE next to the grant");
		DENIED(cxltrack_slot_merge(b, own, first_page + 768, &vb), "SLOT_MERGE by another tenant");
		DENIED(cxltrack_bat_discard(b, first_page + 768, &gblk, &gdisk),
		       "BAT_DISCARD of another tenant's granted page");
		DENIED(cxltrack_slot_merge(a, own, first_page + 900, &vb), "SLOT_MERGE into a revoked page");
		DENIED(cxltrack_grant(b, CXLT_GRANT_ADD, first_page + 768, 64), "GRANT by a tenant");
		check(cxltrack_slot_release(a, own), "SLOT_RELEASE (second granted)");
	}
	/* Tenant B can neither write nor release A's slot, nor see its events. */
	DENIED(cxltrack_slot_write(b, sa, 0, page, 64), "SLOT_WRITE to another tenant's slot");
	DENIED(cxltrack_slot_release(b, sa), "SLOT_RELEASE of another tenant's slot");
	check(cxltrack_slot_write(a, sa, 0, page, sizeof(page)), "SLOT_WRITE (own, full)");
	if (tenant_events(a, CXLT_EV_SLOT_FULL, sa) != 1)
		fail("tenant A did not get the SLOT_FULL of its slot %d", sa);
	if (tenant_events(b, CXLT_EV_SLOT_FULL, sa) != 0)
		fail("EVENT LEAK: tenant B got the SLOT_FULL of tenant A's slot %d", sa);
	check(cxltrack_slot_query(a, sa, &q, NULL), "SLOT_QUERY");
	if (!q.owned || !q.full)
		fail("slot %d: owned %u full %u", sa, q.owned, q.full);
	check(cxltrack_slot_release(a, sa), "SLOT_RELEASE (own)");
#undef DENIED
	printf("ok tenant: %d privileged operations refused, own slot and reads work, "
	       "no event leaked to the other tenant\n", eperm);
	return 0;
}

/* --- chunkbind: a chunk is the file's that assigned it ------------------------- */
static void expect_chunk(struct cxltrack *who, unsigned int chunk, unsigned int want_state,
			 unsigned int want_owner, const char *when)
{
	unsigned int state, owner;

	check(cxltrack_chunk_query(who, chunk, &state, &owner), "chunk query");
	/* Released means on its way back to the pool: SCRUBBING, then FREE. */
	if (want_state == CXLT_CHUNKST_FREE ? state == CXLT_CHUNKST_OWNED
					    : state != want_state || owner != want_owner)
		fail("chunk %u %s: state %u owner %u", chunk, when, state, owner);
}

/*
 * The SCRUB_DONE of a release reaches the file that released the chunk, once
 * (not the one of the driver's own scrub before a first assignment), and
 * no other file that did not subscribe to all events.
 */
static void expect_scrub_done(struct cxltrack *to, struct cxltrack *other, unsigned int chunk,
			      unsigned int owner)
{
	double end = now_s() + 10;
	struct cxlt_event ev[16];
	int n, got = 0;

	while (now_s() < end) {
		n = cxltrack_events(to, ev, 16, got ? 500 : 200);
		check(n, "events (releasing file)");
		for (int i = 0; i < n; i++)
			if (ev[i].type == CXLT_EV_SCRUB_DONE && ev[i].index == chunk) {
				if (ev[i].arg != owner)
					fail("SCRUB_DONE of chunk %u with owner %" PRIu64 ", want %u",
					     chunk, (uint64_t)ev[i].arg, owner);
				got++;
			}
		if (got && !n)
			break;
	}
	if (got != 1)
		fail("SCRUB_DONE of chunk %u: %d records for the file that released it, want 1",
		     chunk, got);
	n = cxltrack_events(other, ev, 16, 0);
	check(n, "events (other file)");
	for (int i = 0; i < n; i++)
		if (ev[i].type == CXLT_EV_SCRUB_DONE && ev[i].index == chunk)
			fail("SCRUB_DONE of chunk %u reached a file that did not release it", chunk);
}

static int mode_chunkbind(void)
{
	unsigned int x = t->info.num_chunks - 3, y = x - 1, z = x - 2;
	int pipefd[2], status, eperm = 0;
	struct cxltrack *a, *b;
	pid_t child;
	char c;

	check(cxltrack_open(NULL, &a), "open (tenant A)");
	check(cxltrack_open(NULL, &b), "open (tenant B)");
	/* A privileged manager assigns on A's file: the chunks and owner 11 are A's. */
	check(assign_when_free(a, x, 11, 0), "assign x to owner 11 (bound to A)");
	check(assign_when_free(a, y, 11, 0), "assign y to owner 11 (bound to A)");
	expect_chunk(b, x, CXLT_CHUNKST_OWNED, 11, "after A's assign");
#define DENIED(call, what) do { expect_err((call), -EPERM, what); eperm++; } while (0)
	/* Even with CAP_SYS_ADMIN, another file may not take what is A's. */
	DENIED(cxltrack_chunk_release(b, x, 11), "RELEASE of A's chunk by B (admin)");
	DENIED(cxltrack_chunk_assign(b, z, 11), "ASSIGN to A's owner by B (admin)");
	DENIED(cxltrack_chunk_assign_flags(b, z, 11, CXLT_CHUNK_F_DETACH),
	       "detached ASSIGN to A's owner (admin)");
	DENIED(cxltrack_chunk_release(t, y, 11), "RELEASE of A's chunk by a third file (admin)");
	expect_err(cxltrack_chunk_assign_flags(a, z, 12, 2), -EINVAL, "ASSIGN with an unknown flag");
	expect_chunk(b, z, CXLT_CHUNKST_FREE, 0, "after refused assigns");
	/* A detached chunk of another owner stays after its file closes. */
	check(assign_when_free(b, z, 13, CXLT_CHUNK_F_DETACH), "detached assign z (B)");

	/* A child's tenant is killed while holding a bound chunk: it comes back. */
	if (pipe(pipefd))
		fail("pipe: %s", strerror(errno));
	child = fork();
	if (child < 0)
		fail("fork: %s", strerror(errno));
	if (!child) {
		struct cxltrack *k;

		if (cxltrack_open(NULL, &k) || assign_when_free(k, z - 1, 14, 0))
			_exit(3);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(4);
		pause();
		_exit(5);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &c, 1) != 1)
		fail("the child did not assign its chunk");
	expect_chunk(b, z - 1, CXLT_CHUNKST_OWNED, 14, "held by the child");
	kill(child, SIGKILL);
	if (waitpid(child, &status, 0) != child || !WIFSIGNALED(status))
		fail("child did not die by SIGKILL (status %#x)", status);
	expect_chunk(b, z - 1, CXLT_CHUNKST_FREE, 0, "after its holder was killed");

	/* Handed to a tenant without privileges: A releases its own chunk, B still cannot. */
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		fail("cannot drop privileges: %s", strerror(errno));
	check(cxltrack_chunk_release(a, x, 11), "RELEASE of its own chunk (A, unprivileged)");
	expect_scrub_done(a, b, x, 11);
	expect_chunk(b, x, CXLT_CHUNKST_FREE, 0, "after A's release");
	DENIED(cxltrack_chunk_release(b, y, 11), "RELEASE of A's chunk by B (unprivileged)");
	DENIED(cxltrack_chunk_release(a, z, 13), "RELEASE of a detached chunk (unprivileged)");
	DENIED(cxltrack_chunk_assign(a, x, 11), "ASSIGN (unprivileged)");
	/* Closing A releases y. */
	cxltrack_close(a);
	expect_chunk(b, y, CXLT_CHUNKST_FREE, 0, "after A closed");
	cxltrack_close(b);
	expect_chunk(t, z, CXLT_CHUNKST_OWNED, 13, "after B closed (detached)");
#undef DENIED
	printf("ok chunkbind: %d refusals, own release unprivileged with its SCRUB_DONE, close and "
	       "SIGKILL release, detached chunk kept\n", eperm);
	return 0;
}

/* --- chunkreset: a function reset gives a file's chunks back to it -------------- */
#define RESET_MARK 0x7265736574000000ULL /* | chunk page: one word per page of the chunk */

/* The tracker and the first 256 MiB of @daxdev, where the reset modes' chunks lie. */
static void open_first_chunks(const char *daxdev)
{
	check(cxltrack_open(NULL, &t), "open");
	check(cxltrack_dax_open(daxdev, 256ul << 20, &dax), daxdev);
	setvbuf(stdout, NULL, _IOLBF, 0);
}

/* One word at the start of each page of @chunk (the mark, or zero), then its last word. */
static void chunk_words(unsigned int chunk, int write, int want_zero, const char *when)
{
	uint64_t bytes = 1ULL << t->info.chunk_shift, pages = bytes / 4096;
	volatile uint64_t *p = (volatile uint64_t *)cxltrack_dax_ptr(&dax,
		(uint64_t)chunk << t->info.chunk_shift, bytes);
	unsigned int bad = 0;

	if (!p)
		fail("chunk %u outside the dax mapping", chunk);
	for (uint64_t i = 0; i <= pages; i++) {
		uint64_t at = i < pages ? i * 512 : bytes / 8 - 1;
		uint64_t want = want_zero ? 0 : RESET_MARK | i;

		if (write) {
			p[at] = want;
		} else if (p[at] != want && !bad++) {
			printf("chunk %u %s: word %" PRIu64 " is %#" PRIx64 ", want %#" PRIx64 "\n",
			       chunk, when, at, (uint64_t)p[at], want);
		}
	}
	if (bad)
		fail("chunk %u %s: %u of %" PRIu64 " words wrong", chunk, when, bad, pages + 1);
}

/* The RESET record of @who (exactly one within 5 s); its ARG, the chunks @who lost. */
static uint64_t reset_record(struct cxltrack *who)
{
	double end = now_s() + 5;
	struct cxlt_event ev[16];
	uint64_t lost = 0;
	int n, resets = 0;

	while (!resets && now_s() < end) {
		n = cxltrack_events(who, ev, 16, 500);
		check(n, "events");
		for (int i = 0; i < n; i++) {
			if (ev[i].type != CXLT_EV_RESET)
				continue;
			if (!(ev[i].flags & CXLT_EVENT_F_RESET) || ev[i].seq)
				fail("RESET record: flags %#x seq %u", ev[i].flags, ev[i].seq);
			lost = ev[i].arg;
			resets++;
		}
	}
	n = cxltrack_events(who, ev, 16, 200);
	check(n, "events");
	for (int i = 0; i < n; i++)
		resets += ev[i].type == CXLT_EV_RESET;
	if (resets != 1)
		fail("%d RESET records for a file with a chunk bound, want 1", resets);
	return lost;
}

static int mode_chunkreset(const char *daxdev, const char *bdf)
{
	unsigned int x = 3, y = 4, z = 5;	/* inside the first 256 MiB, none of chunkbind's */
	struct cxltrack *a, *b;
	struct cxlt_event ev[16];
	char path[128];
	FILE *f;
	int n;

	open_first_chunks(daxdev);
	check(cxltrack_open(NULL, &a), "open (tenant A)");
	check(cxltrack_open(NULL, &b), "open (tenant B)");
	check(assign_when_free(a, x, 21, 0), "assign x to owner 21 (bound to A)");
	check(assign_when_free(b, z, 23, CXLT_CHUNK_F_DETACH), "detached assign z to owner 23");
	chunk_words(x, 1, 0, "written");
	chunk_words(x, 0, 0, "before the reset");
	while (cxltrack_events(a, ev, 16, 0) > 0)
		;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", bdf);
	f = fopen(path, "w");
	if (!f || fputs("1", f) < 0 || fclose(f))
		fail("%s: %s", path, strerror(errno));
	/* x is A's again, with its data; the detached z was freed (and is unscrubbed). */
	expect_chunk(b, x, CXLT_CHUNKST_OWNED, 21, "after the reset");
	expect_chunk(b, z, CXLT_CHUNKST_FREE, 0, "after the reset (detached)");
	chunk_words(x, 0, 0, "after the reset");
	/* A learns of the reset from its own file, with nothing lost. */
	if (reset_record(a))
		fail("RESET record: chunks lost, want none");
	n = cxltrack_events(b, ev, 16, 0);
	check(n, "events (B)");
	for (int i = 0; i < n; i++)
		if (ev[i].type == CXLT_EV_RESET)
			fail("a RESET record for B, which had no chunk bound");
	/* No other file takes it or its owner id. */
	expect_err(cxltrack_chunk_assign(b, x, 22), -EBUSY, "ASSIGN of A's chunk by B after the reset");
	expect_err(cxltrack_chunk_assign(b, y, 21), -EPERM, "ASSIGN to A's owner by B after the reset");
	expect_err(cxltrack_chunk_release(b, x, 21), -EPERM, "RELEASE of A's chunk by B after the reset");
	expect_chunk(b, x, CXLT_CHUNKST_OWNED, 21, "after B's attempts");
	chunk_words(x, 0, 0, "after B's attempts");
	/* A's own release scrubs it, and A gets the SCRUB_DONE. */
	check(cxltrack_chunk_release(a, x, 21), "RELEASE of its own chunk (A)");
	expect_scrub_done(a, b, x, 21);
	expect_chunk(b, x, CXLT_CHUNKST_FREE, 0, "after A's release");
	chunk_words(x, 0, 1, "after A's release");
	cxltrack_close(a);
	cxltrack_close(b);
	printf("ok chunkreset: chunk %u OWNED by owner 21 after the reset with its %u pages intact, "
	       "one RESET record (none lost), refused to another file, scrubbed by the owner's "
	       "release; detached chunk %u FREE\n", x, 1U << (t->info.chunk_shift - 12), z);
	return 0;
}

static int mode_chunkreset_raw(const char *daxdev)
{
	unsigned int x = 6;
	struct cxltrack *a, *b, *raw;
	struct cxlt_event ev[16];
	uint8_t *bitmap;
	uint64_t count, lost;
	size_t len;

	open_first_chunks(daxdev);
	check(cxltrack_open(NULL, &a), "open (tenant A)");
	check(cxltrack_open(NULL, &b), "open (tenant B)");
	check(cxltrack_open(NULL, &raw), "open (raw)");
	check(assign_when_free(a, x, 25, 0), "assign x to owner 25 (bound to A)");
	chunk_words(x, 1, 0, "written");
	while (cxltrack_events(a, ev, 16, 0) > 0)
		;
	/* In raw mode the driver may not command the device: it cannot give x back. */
	check(cxltrack_raw(raw, CXLT_RAW_ENTER, 0, 0, NULL), "raw enter");
	check(cxltrack_raw(raw, CXLT_RAW_RESET, 0, 0, NULL), "raw reset");
	check(cxltrack_raw(raw, CXLT_RAW_EXIT, 0, 0, NULL), "raw exit");
	lost = reset_record(a);
	if (lost != 1)
		fail("RESET record: %" PRIu64 " chunks lost, want 1", lost);
	expect_chunk(b, x, CXLT_CHUNKST_FREE, 0, "after a reset in raw mode");
	len = (t->info.num_chunks + 7) / 8;
	bitmap = calloc(1, len);
	if (!bitmap)
		fail("oom");
	check(cxltrack_chunk_list(a, 25, bitmap, len, &count), "CHUNK_LIST(25)");
	free(bitmap);
	if (count)
		fail("owner 25 still has %" PRIu64 " chunks after losing x", count);
	expect_err(cxltrack_chunk_release(a, x, 25), -ENOENT, "RELEASE of a lost chunk");
	/* Unbound and unscrubbed: its next owner gets it scrubbed. */
	check(assign_when_free(b, x, 26, 0), "assign x to owner 26 (bound to B)");
	expect_chunk(a, x, CXLT_CHUNKST_OWNED, 26, "B's");
	chunk_words(x, 0, 1, "for its next owner");
	check(cxltrack_chunk_release(b, x, 26), "RELEASE (B)");
	cxltrack_close(raw);
	cxltrack_close(a);
	cxltrack_close(b);
	printf("ok chunkresetraw: chunk %u lost by its file at a reset in raw mode (RESET record: "
	       "1 lost), FREE, scrubbed for its next owner\n", x);
	return 0;
}

/* --- cache: the spec 9 guarantees for user-space callers ------------------------ */
#define CACHE_MARK 0x6378746c63616368ULL /* the page's first 8 bytes, for the trace */

static int bat_at(unsigned int op, uint64_t page, uint64_t addr, struct cxlt_bat *out)
{
	struct cxlt_bat b = { .op = op, .page = page, .block = 42, .disk = 1,
			      .flags = addr ? CXLT_BAT_F_ADDR : 0, .addr = addr };
	int ret = ioctl(t->fd, CXLT_IOC_BAT, &b) ? -errno : 0;

	if (out)
		*out = b;
	return ret;
}

static int mode_cache(void)
{
	uint64_t p = first_page + 3, nr;
	uint64_t addr = (uintptr_t)page_ptr(p);
	struct cxlt_slot_merge sm = { 0 };
	uint8_t data[256], *bm = calloc(1, 4096);
	struct cxlt_bat b;
	int slot;

	/*
	 * SET and DISCARD through the caller's mapping: the driver writes the lines back. The
	 * page starts with a mark that a kprobe on the kernel's flush sees (the test's trace).
	 */
	*(volatile uint64_t *)page_ptr(p) = CACHE_MARK;
	check(bat_at(CXLT_BAT_SET, p, addr, NULL), "BAT_SET with ADDR");
	check(bat_at(CXLT_BAT_DISCARD, p, addr, &b), "BAT_DISCARD with ADDR");
	if (!b.valid || b.block != 42)
		fail("discard after set: valid %u block %" PRIu64, b.valid, (uint64_t)b.block);
	/* A bad mapping fails before the device is asked: the association survives. */
	check(bat_at(CXLT_BAT_SET, p, addr, NULL), "BAT_SET with ADDR (again)");
	expect_err(bat_at(CXLT_BAT_DISCARD, p, addr + 8, NULL), -EINVAL, "misaligned ADDR");
	expect_err(bat_at(CXLT_BAT_DISCARD, p, 4096, NULL), -EFAULT, "unmapped ADDR");
	expect_err(bat_at(CXLT_BAT_GET, p, addr, NULL), -EINVAL, "ADDR on GET");
	check(bat_at(CXLT_BAT_GET, p, 0, &b), "BAT_GET");
	if (!b.valid)
		fail("a DISCARD that failed on its ADDR discarded the association");
	/* A merge that names the destination's mapping. */
	memset(data, 0xc3, sizeof(data));
	slot = cxltrack_slot_alloc(t, 0xcace, 0);
	check(slot, "slot alloc");
	check(cxltrack_slot_write(t, slot, 0, data, sizeof(data)), "slot write");
	sm.slot = slot;
	sm.page = p;
	sm.flags = CXLT_SLOT_MERGE_F_ADDR;
	sm.addr = addr;
	if (ioctl(t->fd, CXLT_IOC_SLOT_MERGE, &sm))
		fail("SLOT_MERGE with ADDR: %s", strerror(errno));
	if (sm.valid_bytes != sizeof(data) || page_ptr(p)[0] != 0xc3 || page_ptr(p)[255] != 0xc3)
		fail("merge with ADDR: %" PRIu64 " bytes, page starts %02x", (uint64_t)sm.valid_bytes,
		     page_ptr(p)[0]);
	/* The final round of a migration: every CPU cache written back first. */
	check(cxltrack_harvest(t, CXLT_HARVEST_DIRTY, first_page, 64,
			       CXLT_HARVEST_F_CLEAR | CXLT_HARVEST_F_WRITEBACK, bm, 4096, &nr),
	      "harvest CLEAR|WRITEBACK");
	if (!bit(bm, 3))
		fail("the merged page is not dirty");
	printf("ok cache: BAT and merge flush through the caller's mapping, bad mappings fail "
	       "first, harvest WRITEBACK\n");
	return 0;
}

/* --- addrpage: the device page a mapping of the dax device maps -------------- */
static int mode_addrpage(void)
{
	struct cxlt_addr_page ap = { 0 };
	uint8_t *heap = aligned_alloc(page_size, page_size);
	uint64_t page;

	if (!heap)
		fail("oom");
	for (uint64_t i = 0; i < npages; i += 7) {
		check(cxltrack_addr_page(t, page_ptr(first_page + i), &page), "ADDR_PAGE");
		if (page != first_page + i)
			fail("ADDR_PAGE of the mapping's page %" PRIu64 ": device page 0x%" PRIx64
			     ", expected 0x%" PRIx64, i, page, first_page + i);
	}
	expect_err(cxltrack_addr_page(t, page_ptr(first_page) + 8, &page), -EINVAL, "misaligned");
	expect_err(cxltrack_addr_page(t, (void *)4096, &page), -EFAULT, "unmapped");
	memset(heap, 1, page_size);
	expect_err(cxltrack_addr_page(t, heap, &page), -ENXIO, "ordinary memory");
	ap.addr = (uintptr_t)page_ptr(first_page);
	ap.reserved[1] = 1;
	expect_err(ioctl(t->fd, CXLT_IOC_ADDR_PAGE, &ap) ? -errno : 0, -EINVAL, "reserved field");
	free(heap);
	printf("ok addrpage: %" PRIu64 " pages from device page 0x%" PRIx64 "\n", npages, first_page);
	return 0;
}

/* --- rawkeep: raw mode on another file does not free this file's slot -------- */
static int mode_rawkeep(void)
{
	struct cxltrack *raw, *other;
	uint8_t data[64];
	int slot, ret;

	memset(data, 0x3c, sizeof(data));
	slot = cxltrack_slot_alloc(t, 0x7a11, 0);
	check(slot, "slot alloc");
	check(cxltrack_slot_write(t, slot, 0, data, sizeof(data)), "slot write");
	check(cxltrack_open(NULL, &raw), "open (raw)");
	check(cxltrack_raw(raw, CXLT_RAW_ENTER, 0, 0, NULL), "raw enter");
	check(cxltrack_raw(raw, CXLT_RAW_EXIT, 0, 0, NULL), "raw exit");
	check(cxltrack_open(NULL, &other), "open (other)");
	ret = cxltrack_slot_write(other, slot, 64, data, sizeof(data));
	if (ret != -EPERM)
		fail("SLOT STOLEN: another file wrote slot %d after raw mode: %s", slot,
		     cxltrack_strerror(ret));
	ret = cxltrack_slot_release(other, slot);
	if (ret != -EPERM)
		fail("SLOT STOLEN: another file released slot %d: %s", slot, cxltrack_strerror(ret));
	check(cxltrack_slot_write(t, slot, 64, data, sizeof(data)), "owner's write after raw mode");
	check(cxltrack_slot_release(t, slot), "owner's release");
	cxltrack_close(raw);
	cxltrack_close(other);
	printf("ok rawkeep: slot %d stayed its file's across raw mode\n", slot);
	return 0;
}

/*
 * A file closes while another holds raw mode (the driver may not command the
 * device then): its slot and its bound chunk are released when raw mode
 * ends, not left OPEN/OWNED by nobody (the raw-write fuzzer's audit found
 * such a slot).
 */
static int mode_closeraw(const char *daxdev)
{
	unsigned int x = 7, state, owner;
	struct cxltrack *a, *raw;
	struct cxlt_slot_query q;
	int slot;

	open_first_chunks(daxdev);
	check(cxltrack_open(NULL, &a), "open (A)");
	check(cxltrack_open(NULL, &raw), "open (raw)");
	slot = cxltrack_slot_alloc(a, 0xc105e, 0);
	check(slot, "slot alloc (A)");
	check(assign_when_free(a, x, 28, 0), "assign x to owner 28 (bound to A)");
	check(cxltrack_raw(raw, CXLT_RAW_ENTER, 0, 0, NULL), "raw enter");
	cxltrack_close(a);
	/* raw mode still on: the device keeps both until it ends */
	check(cxltrack_raw(raw, CXLT_RAW_EXIT, 0, 0, NULL), "raw exit");
	check(cxltrack_slot_query(t, (unsigned int)slot, &q, NULL), "slot query");
	if (q.state != CXLT_SLOTST_FREE)
		fail("slot %d of a file closed in raw mode: state %u after raw mode, want FREE",
		     slot, q.state);
	check(cxltrack_chunk_query(t, x, &state, &owner), "chunk query");
	if (state == CXLT_CHUNKST_OWNED)
		fail("chunk %u of a file closed in raw mode: OWNED by %u after raw mode", x, owner);
	/* a later raw session leaves alone what a still-open file holds (mode rawkeep) */
	cxltrack_close(raw);
	printf("ok closeraw: slot %d and chunk %u of a file closed in raw mode released when it "
	       "ended (chunk state %u)\n", slot, x, state);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t pages, n, seed;

	if (argc >= 3 && !strcmp(argv[1], "hold"))
		return mode_hold(strtod(argv[2], NULL));
	if (argc == 5 && (!strcmp(argv[1], "peek") || !strcmp(argv[1], "poke"))) {
		uint64_t dpa = strtoull(argv[3], NULL, 0);
		volatile uint8_t *p;
		size_t len;

		check(cxltrack_open(NULL, &t), "open");
		check(cxltrack_dax_open(argv[2], 256ul << 20, &dax), argv[2]);
		len = argv[1][1] == 'e' ? strtoull(argv[4], NULL, 0) : strlen(argv[4]) / 2;
		p = cxltrack_dax_ptr(&dax, dpa, len);
		if (!p || !len)
			fail("DPA range outside the mapping");
		for (size_t i = 0; i < len; i++) {
			if (argv[1][1] == 'e') {
				printf("%02x", p[i]);
			} else {
				unsigned int b;

				if (sscanf(argv[4] + 2 * i, "%2x", &b) != 1)
					fail("bad hex");
				p[i] = (uint8_t)b;
			}
		}
		if (argv[1][1] == 'e')
			printf("\n");
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "events")) {
		setup(argv[2], 64, 1);
		return mode_events();
	}
	if (argc >= 3 && !strcmp(argv[1], "tenant")) {
		setup(argv[2], 1024, 1);
		return mode_tenant();
	}
	if (argc >= 3 && !strcmp(argv[1], "chunkbind")) {
		setup(argv[2], 64, 1);
		return mode_chunkbind();
	}
	if (argc >= 4 && !strcmp(argv[1], "chunkreset")) {
		return mode_chunkreset(argv[2], argv[3]);
	}
	if (argc >= 3 && !strcmp(argv[1], "chunkresetraw"))
		return mode_chunkreset_raw(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "closeraw"))
		return mode_closeraw(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "cache")) {
		setup(argv[2], 64, 1);
		return mode_cache();
	}
	if (argc >= 3 && !strcmp(argv[1], "addrpage")) {
		setup(argv[2], 4096, 1);
		return mode_addrpage();
	}
	if (argc >= 3 && !strcmp(argv[1], "rawkeep")) {
		setup(argv[2], 64, 1);
		return mode_rawkeep();
	}
	if (argc >= 3 && !strcmp(argv[1], "evbad")) {
		setup(argv[2], 64, 1);
		return mode_evbad();
	}
	if (argc >= 5 && !strcmp(argv[1], "cpubench")) {
		setup(argv[2], 4096, 7);
		return mode_cpubench(strtoull(argv[3], NULL, 0) | 1, strtoull(argv[4], NULL, 0));
	}
	if (argc >= 5 && !strcmp(argv[1], "dmafault")) {
		setup(argv[2], strtoull(argv[4], NULL, 0), 1);
		return mode_dmafault(argv[3]);
	}
	if (argc >= 3 && !strcmp(argv[1], "eio")) {
		setup(argv[2], 64, 1);
		return mode_eio();
	}
	if (argc >= 3 && !strcmp(argv[1], "evfault")) {
		setup(argv[2], 64, 1);
		return mode_evfault();
	}
	if (argc != 6) {
		fprintf(stderr, "usage: cxlt-test MODE DAX PAGES N SEED (see the source)\n");
		return 2;
	}
	pages = strtoull(argv[3], NULL, 0);
	n = strtoull(argv[4], NULL, 0);
	seed = strtoull(argv[5], NULL, 0);
	setup(argv[2], pages, seed);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "dirty"))
		return mode_dirty(n, 0);
	if (!strcmp(argv[1], "accessed"))
		return mode_dirty(n, 1);
	if (!strcmp(argv[1], "race"))
		return mode_race((double)n);
	if (!strcmp(argv[1], "dmaab"))
		return mode_dmaab(n);
	if (!strcmp(argv[1], "density"))
		return mode_density(n);
	if (!strcmp(argv[1], "dmarace")) {
		uint64_t before;
		int ret;

		need_dma();
		before = dma_commands();
		ret = mode_race((double)n);
		if (dma_commands() == before)
			fail("dmarace: no DMA command was used");
		printf("ok dmarace: %" PRIu64 " DMA commands\n", dma_commands() - before);
		return ret;
	}
	if (!strcmp(argv[1], "sigrace"))
		return mode_sigrace((double)n);
	if (!strcmp(argv[1], "views"))
		return mode_views((double)n);
	if (!strcmp(argv[1], "bat"))
		return mode_bat(n);
	if (!strcmp(argv[1], "discard"))
		return mode_discard(n);
	if (!strcmp(argv[1], "slot"))
		return mode_slot(n);
	fprintf(stderr, "unknown mode %s\n", argv[1]);
	return 2;
}
