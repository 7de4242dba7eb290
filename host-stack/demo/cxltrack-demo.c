// SPDX-License-Identifier: Apache-2.0
/*
 * cxltrack-demo: the cxltrack scenario end to end, in the guest, through the
 * driver (libcxltrack) on a devdax region of the tracked memory device.
 *
 *  1. pre-copy migration: a writer thread dirties pages of the region while
 *     the migration loop harvests the device's dirty log and copies ("sends")
 *     only what changed; the final round pauses the writer, writes back the
 *     CPU caches over the region (docs/spec.md section 9, rule 1), harvests,
 *     sends, and compares the copy with the source byte for byte. Then the
 *     same again with the baseline's dirty log, write protection (wp-log.c:
 *     a fault on the first write to each page per round, as KVM logs a
 *     guest without the device);
 *  2. swap mapper: pages associated with disk blocks, some rewritten by the
 *     guest, then discard-if-clean on each (rule 2: flush before trusting);
 *  3. false-reads preventer: a slot written in full (no disk read) and one
 *     written partially, merged over the page's old contents;
 * and prints one JSON object with every count. Exit status 1 if any check of
 * the data failed (a lost dirty bit, a false clean, a wrongly merged byte).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libcxltrack.h"
#include "wp-log.h"

#define MAX_ROUNDS 32

struct opts {
	const char *dev;
	const char *dax;
	uint64_t pages;
	unsigned int rounds;
	unsigned int seed;
	unsigned int rate;
};

struct writer {
	volatile uint8_t *base;
	uint64_t pages;
	uint64_t page_size;
	unsigned int seed;
	unsigned int rate;
	atomic_int stop;
	atomic_int paused;
	atomic_int parked;
	atomic_ullong writes;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
	/* xorshift64*: deterministic per seed, cheap. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* Write back (and drop) every cache line of [p, p + len). */
static void flush_range(volatile uint8_t *p, size_t len)
{
	for (size_t off = 0; off < len; off += 64)
		__builtin_ia32_clflush((const void *)(p + off));
	__builtin_ia32_mfence();
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t s = w->seed * 2654435761ULL + 1;
	uint64_t hot = w->pages / 10 ? w->pages / 10 : 1;

	while (!atomic_load(&w->stop)) {
		if (atomic_load(&w->paused)) {
			atomic_store(&w->parked, 1);
			while (atomic_load(&w->paused) && !atomic_load(&w->stop))
				;
			atomic_store(&w->parked, 0);
			continue;
		}
		uint64_t r = rnd(&s);
		uint64_t page = (r % 10) ? (r >> 8) % hot : (r >> 8) % w->pages;
		uint64_t off = (rnd(&s) % (w->page_size / 8)) * 8;

		*(volatile uint64_t *)(w->base + page * w->page_size + off) = rnd(&s);
		/*
		 * Pace the guest at w->rate stores per second (bursts of 1 ms),
		 * so that a round dirties a fraction of the pages, as a real
		 * guest between two pre-copy rounds does.
		 */
		if (atomic_fetch_add(&w->writes, 1) % (w->rate / 1000 + 1) == 0)
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	return NULL;
}

static int harvest_dirty(struct cxltrack *t, uint64_t first, uint64_t pages, uint8_t *bitmap,
			 uint64_t *nr)
{
	int ret = cxltrack_harvest(t, CXLT_HARVEST_DIRTY, first, pages, CXLT_HARVEST_F_CLEAR,
				   bitmap, pages / 8, nr);

	if (ret < 0)
		fprintf(stderr, "cxltrack-demo: harvest: %s\n", cxltrack_strerror(ret));
	return ret;
}

static void send_page(uint8_t *dest, volatile uint8_t *src, uint64_t page, uint64_t ps)
{
	for (uint64_t i = 0; i < ps; i += 8)
		*(uint64_t *)(dest + page * ps + i) = *(volatile uint64_t *)(src + page * ps + i);
}

/* Where a pre-copy loop's dirty log comes from: the device, or write protection. */
struct dirty_log {
	struct cxltrack *t;
	uint64_t first;		/* device page of the region's first page */
	struct wp_log *wp;	/* NULL: the device */
};

static int take_dirty(struct dirty_log *log, uint64_t n, uint8_t *bitmap, uint64_t *nr)
{
	if (log->wp)
		return wp_log_take(log->wp, bitmap, nr);
	return harvest_dirty(log->t, log->first, n, bitmap, nr);
}

/* One pre-copy round: take (and clear) the dirty log, send the dirty pages; *nr = how many. */
static int send_dirty(struct dirty_log *log, uint64_t n, uint8_t *bitmap, uint8_t *dest,
		      volatile uint8_t *src, uint64_t ps, uint64_t *nr)
{
	int ret = take_dirty(log, n, bitmap, nr);

	if (ret < 0)
		return ret;
	for (uint64_t p = 0; p < n; p++)
		if (bitmap[p / 8] >> (p % 8) & 1)
			send_page(dest, src, p, ps);
	return 0;
}

static int precopy(struct cxltrack *t, struct cxltrack_dax *d, const struct opts *o, int wp,
		   FILE *js)
{
	uint64_t ps = 1ULL << t->info.page_shift;
	uint64_t first = d->dpa_base >> t->info.page_shift;
	uint64_t n = o->pages;
	uint8_t *bitmap = calloc(n / 8, 1);
	uint8_t *dest = malloc(n * ps);
	uint64_t per_round[MAX_ROUNDS + 2];
	unsigned int rounds = 0;
	uint64_t sent = 0, nr, mismatched = 0;
	struct writer w = { .base = d->map, .pages = n, .page_size = ps, .seed = o->seed,
			   .rate = o->rate };
	struct wp_log wpl;
	struct dirty_log log = { .t = t, .first = first, .wp = wp ? &wpl : NULL };
	pthread_t thr;
	double t0;
	int ret;

	if (!bitmap || !dest)
		return -ENOMEM;
	if (first % t->info.harvest_align) {
		fprintf(stderr, "cxltrack-demo: region DPA page %" PRIu64 " is not %u-aligned\n",
			first, t->info.harvest_align);
		return -EINVAL;
	}
	for (uint64_t p = 0; p < n; p++)
		*(volatile uint64_t *)(d->map + p * ps) = p * 0x9E3779B97F4A7C15ULL;
	flush_range(d->map, n * ps);
	/* start with a clean log */
	ret = wp ? wp_log_start(&wpl, d->map, n, ps) : harvest_dirty(t, first, n, bitmap, &nr);
	if (ret < 0)
		return ret;
	t0 = now();
	if (pthread_create(&thr, NULL, writer_main, &w)) {
		ret = -errno;
		if (wp)
			wp_log_stop(&wpl);
		return ret;
	}

	/* Round 0: nothing is known to be clean, send everything. */
	for (uint64_t p = 0; p < n; p++)
		send_page(dest, d->map, p, ps);
	sent += n;
	per_round[rounds++] = n;
	while (rounds < o->rounds) {
		ret = send_dirty(&log, n, bitmap, dest, d->map, ps, &nr);
		if (ret < 0)
			goto out;
		sent += nr;
		per_round[rounds++] = nr;
		if (nr < n / 100)
			break;
	}
	/* Final round: stop the vCPU (the writer), write back its caches. */
	atomic_store(&w.paused, 1);
	while (!atomic_load(&w.parked))
		;
	flush_range(d->map, n * ps);
	ret = send_dirty(&log, n, bitmap, dest, d->map, ps, &nr);
	if (ret < 0)
		goto out;
	sent += nr;
	per_round[rounds++] = nr;
	for (uint64_t p = 0; p < n; p++)
		for (uint64_t i = 0; i < ps; i += 8)
			if (*(uint64_t *)(dest + p * ps + i) !=
			    *(volatile uint64_t *)(d->map + p * ps + i)) {
				mismatched++;
				break;
			}
out:
	atomic_store(&w.stop, 1);
	pthread_join(thr, NULL);
	if (wp)
		wp_log_stop(&wpl);
	if (ret < 0)
		return ret;
	fprintf(js, "\"%s\": {\"pages\": %" PRIu64 ", \"rounds\": [", wp ? "precopy_wp" : "precopy", n);
	for (unsigned int i = 0; i < rounds; i++)
		fprintf(js, "%s%" PRIu64, i ? ", " : "", per_round[i]);
	fprintf(js, "], \"sent\": %" PRIu64 ", \"naive\": %" PRIu64 ", \"guest_writes\": %llu, "
		"\"mismatched_pages\": %" PRIu64 ", \"seconds\": %.2f, \"wp_faults\": %llu}",
		sent, n * rounds, (unsigned long long)atomic_load(&w.writes), mismatched, now() - t0,
		wp ? (unsigned long long)atomic_load(&wpl.faults) : 0ULL);
	free(bitmap);
	free(dest);
	return mismatched ? 1 : 0;
}

static int swap_mapper(struct cxltrack *t, struct cxltrack_dax *d, const struct opts *o, FILE *js)
{
	uint64_t ps = 1ULL << t->info.page_shift;
	uint64_t first = (d->dpa_base >> t->info.page_shift) + o->pages;
	const uint64_t n = 256;
	uint8_t rewritten[256] = { 0 };
	uint64_t s = o->seed + 77, clean = 0, dirty = 0, wrong = 0, nrw = 0, block;
	uint32_t disk;
	int ret;

	for (uint64_t i = 0; i < n; i++) {
		ret = cxltrack_bat_set(t, first + i, 1000 + i, 2);
		if (ret < 0) {
			fprintf(stderr, "cxltrack-demo: bat set: %s\n", cxltrack_strerror(ret));
			return ret;
		}
	}
	for (uint64_t i = 0; i < n; i++) {
		if (rnd(&s) % 5)
			continue;
		volatile uint8_t *p = cxltrack_dax_ptr(d, (first + i) * ps, ps);

		if (!p)
			return -ERANGE;
		p[rnd(&s) % ps] ^= 0x5A;
		rewritten[i] = 1;
		nrw++;
	}
	/* Rule 2: every store that happened must have reached the device. */
	flush_range(cxltrack_dax_ptr(d, first * ps, n * ps), n * ps);
	for (uint64_t i = 0; i < n; i++) {
		ret = cxltrack_bat_discard(t, first + i, &block, &disk);
		if (ret < 0)
			return ret;
		if (ret == 1) {
			clean++;
			if (rewritten[i] || block != 1000 + i || disk != 2)
				wrong++;
		} else {
			dirty++;
			if (!rewritten[i])
				wrong++;
		}
	}
	fprintf(js, "\"swap_mapper\": {\"associated\": %" PRIu64 ", \"rewritten\": %" PRIu64
		", \"discarded_clean\": %" PRIu64 ", \"needed_swap_write\": %" PRIu64
		", \"wrong_answers\": %" PRIu64 "}", n, nrw, clean, dirty, wrong);
	return wrong ? 1 : 0;
}

static int false_reads(struct cxltrack *t, struct cxltrack_dax *d, const struct opts *o, FILE *js)
{
	uint64_t ps = 1ULL << t->info.page_shift;
	uint64_t full_page = (d->dpa_base >> t->info.page_shift) + o->pages + 256;
	uint64_t part_page = full_page + 1;
	volatile uint8_t *fp = cxltrack_dax_ptr(d, full_page * ps, ps);
	volatile uint8_t *pp = cxltrack_dax_ptr(d, part_page * ps, ps);
	uint8_t *buf = calloc(ps, 1), *old = malloc(ps), *want = malloc(ps);
	uint64_t s = o->seed + 99, valid, wrong = 0, written = 0;
	struct cxlt_event ev[16];
	int full, part, ret, got_full = 0, nev;

	if (!fp || !pp || !buf || !old || !want)
		return -ENOMEM;
	/* Full: the guest zeroes a reallocated page; no disk read. */
	for (uint64_t i = 0; i < ps; i++)
		fp[i] = 0xEE;
	flush_range(fp, ps);
	full = cxltrack_slot_alloc(t, 0xF00D, 0);
	if (full < 0)
		return full;
	ret = cxltrack_slot_write(t, full, 0, buf, ps);
	if (ret < 0)
		return ret;
	nev = cxltrack_events(t, ev, 16, 1000);
	for (int i = 0; i < nev; i++)
		if (ev[i].type == CXLT_EV_SLOT_FULL && ev[i].index == (unsigned int)full)
			got_full = 1;
	ret = cxltrack_slot_merge(t, full, full_page, &valid);
	if (ret < 0)
		return ret;
	flush_range(fp, ps);	/* rule 6: drop stale cached lines */
	for (uint64_t i = 0; i < ps; i++)
		wrong += fp[i] != 0;
	/* Partial: 100 scattered bytes from the guest, old contents from "disk". */
	for (uint64_t i = 0; i < ps; i++)
		old[i] = want[i] = rnd(&s);
	part = cxltrack_slot_alloc(t, 0xBEEF, 0);
	if (part < 0)
		return part;
	for (int k = 0; k < 100; k++) {
		uint64_t off = rnd(&s) % ps;
		uint8_t b = rnd(&s);

		ret = cxltrack_slot_write(t, part, off, &b, 1);
		if (ret < 0)
			return ret;
		want[off] = b;
	}
	for (uint64_t i = 0; i < ps; i++)
		pp[i] = old[i];	/* the disk read into the destination page */
	flush_range(pp, ps);	/* rule 6: the old contents must be in the device */
	ret = cxltrack_slot_merge(t, part, part_page, &valid);
	if (ret < 0)
		return ret;
	written = valid;
	flush_range(pp, ps);
	for (uint64_t i = 0; i < ps; i++)
		wrong += pp[i] != want[i];
	fprintf(js, "\"false_reads\": {\"full_slot_event\": %s, \"full_disk_reads\": 0, "
		"\"partial_valid_bytes\": %" PRIu64 ", \"partial_disk_reads\": 1, \"wrong_bytes\": %" PRIu64
		"}", got_full ? "true" : "false", written, wrong);
	free(buf);
	free(old);
	free(want);
	return (wrong || !got_full) ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cxltrack-demo [--dev /dev/cxltrack0] [--dax /dev/dax0.0] [--pages N]\n"
		"                     [--rounds R] [--seed S] [--rate STORES_PER_S]\n"
		"Runs the cxltrack scenario (pre-copy, swap mapper, false-reads preventer) on a\n"
		"devdax region of the tracked device and prints one JSON object. A writer thread\n"
		"stores RATE 8-byte values per second (default 4000), 90 %% into a hot tenth of\n"
		"the N pages, while the pre-copy loop runs. N (default 1024)\n"
		"is a multiple of 64; the region must hold N + 258 pages. Exit 1 if a data check\n"
		"failed, 2 on bad arguments, 3 if the device could not be used.\n");
}

int main(int argc, char **argv)
{
	struct opts o = { "/dev/cxltrack0", "/dev/dax0.0", 1024, 8, 1, 4000 };
	static const struct option longopts[] = {
		{ "dev", required_argument, NULL, 'd' }, { "dax", required_argument, NULL, 'x' },
		{ "pages", required_argument, NULL, 'p' }, { "rounds", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' }, { "rate", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cxltrack *t;
	struct cxltrack_dax d;
	char *end;
	int c, ret, fail = 0;

	while ((c = getopt_long(argc, argv, "d:x:p:r:s:w:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': o.dev = optarg; break;
		case 'x': o.dax = optarg; break;
		case 'p':
			o.pages = strtoull(optarg, &end, 0);
			if (*end || !o.pages || o.pages % 64 || o.pages > (1 << 20)) {
				fprintf(stderr, "cxltrack-demo: --pages: need a multiple of 64 up to 1048576\n");
				return 2;
			}
			break;
		case 'r':
			o.rounds = strtoul(optarg, &end, 0);
			if (*end || o.rounds < 1 || o.rounds > MAX_ROUNDS) {
				fprintf(stderr, "cxltrack-demo: --rounds: need 1..%d\n", MAX_ROUNDS);
				return 2;
			}
			break;
		case 's': o.seed = strtoul(optarg, NULL, 0); break;
		case 'w':
			o.rate = strtoul(optarg, &end, 0);
			if (*end || o.rate < 1 || o.rate > 10000000) {
				fprintf(stderr, "cxltrack-demo: --rate: need 1..10000000 stores/s\n");
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	ret = cxltrack_open(o.dev, &t);
	if (ret < 0) {
		fprintf(stderr, "cxltrack-demo: %s: %s\n", o.dev, cxltrack_strerror(ret));
		return 3;
	}
	ret = cxltrack_dax_open(o.dax, (o.pages + 258) << t->info.page_shift, &d);
	if (ret < 0) {
		fprintf(stderr, "cxltrack-demo: %s: %s\n", o.dax, cxltrack_strerror(ret));
		return 3;
	}
	printf("{\"device\": {\"pages\": %" PRIu64 ", \"page_size\": %u, \"region_dpa\": %" PRIu64 "}, ",
	       (uint64_t)t->info.pages, 1u << t->info.page_shift, d.dpa_base);
	ret = precopy(t, &d, &o, 0, stdout);
	if (ret < 0)
		goto err;
	fail |= ret;
	printf(", ");
	ret = precopy(t, &d, &o, 1, stdout);
	if (ret < 0)
		goto err;
	fail |= ret;
	printf(", ");
	ret = swap_mapper(t, &d, &o, stdout);
	if (ret < 0)
		goto err;
	fail |= ret;
	printf(", ");
	ret = false_reads(t, &d, &o, stdout);
	if (ret < 0)
		goto err;
	fail |= ret;
	printf(", \"ok\": %s}\n", fail ? "false" : "true");
	cxltrack_dax_close(&d);
	cxltrack_close(t);
	return fail;
err:
	printf("}\n");
	fprintf(stderr, "cxltrack-demo: %s\n", cxltrack_strerror(ret));
	return 3;
}
