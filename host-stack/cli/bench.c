// SPDX-License-Identifier: Apache-2.0
/*
 * cxltrack bench: harvest and BAT-lookup latency and throughput through the
 * driver, for each harvest kind over a page range.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "libcxltrack.h"
#include "cli.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU time of this process, user + system: the driver's share of a harvest is system time. */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static uint64_t commands_issued(struct cxltrack *t)
{
	struct cxlt_stats s;
	int ret = cxltrack_stats(t, &s);

	if (ret)
		die_err(ret, "bench stats");
	return s.commands;
}

/*
 * What a dirty-log round costs per GiB of logged memory: the device commands the driver
 * issued (the device's command counter, so also another user's commands meanwhile), the
 * bytes it read through the RESULT window (the bitmap, read with 8-byte MMIO loads), and
 * the CPU time of the calls.
 */
static void harvest_cost(struct cxltrack *t, uint64_t pages, uint64_t iters,
			 uint32_t flags, uint8_t *buf)
{
	size_t len = cxltrack_harvest_bytes(CXLT_HARVEST_DIRTY, pages);
	uint64_t cmds = commands_issued(t), nr;
	double c0 = cpu_s(), t0 = now_s(), gib;
	int ret;

	for (uint64_t i = 0; i < iters; i++) {
		ret = cxltrack_harvest(t, CXLT_HARVEST_DIRTY, 0, pages, flags, buf, len, &nr);
		if (ret)
			die_err(ret, "bench harvest");
	}
	gib = (double)pages * (double)iters * (double)(1ULL << t->info.page_shift) / (double)(1ULL << 30);
	printf("harvest cost per GiB logged (dirty%s): commands=%.1f mmio_bytes=%.0f cpu_ms=%.3f wall_ms=%.3f\n",
	       flags & CXLT_HARVEST_F_CLEAR ? ", clear" : "",
	       (double)(commands_issued(t) - cmds) / gib, (double)len * (double)iters / gib,
	       (cpu_s() - c0) * 1e3 / gib, (now_s() - t0) * 1e3 / gib);
}

int cmd_bench(int argc, char **argv)
{
	uint64_t pages = 0, iters = 20, nr;
	uint32_t cost_flags = 0;
	struct cxltrack *t;
	uint8_t *buf;
	double t0, dt;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pages") && i + 1 < argc)
			pages = num(argv[++i], "N");
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = num(argv[++i], "K");
		else if (!strcmp(argv[i], "--clear"))
			cost_flags = CXLT_HARVEST_F_CLEAR;
		else
			die_usage("bench: unknown argument '%s'", argv[i]);
	}
	t = open_dev();
	if (!pages)
		pages = t->info.pages;
	if (pages % 64 || pages > t->info.pages || !iters)
		die_usage("bench: --pages must be a multiple of 64 within the device, --iters > 0");
	buf = calloc(1, pages);
	if (!buf)
		die_err(-ENOMEM, "bench");
	for (unsigned int kind = 0; kind <= CXLT_HARVEST_HOTNESS; kind++) {
		static const char *const names[] = { "dirty", "accessed", "hotness" };

		t0 = now_s();
		for (uint64_t i = 0; i < iters; i++) {
			ret = cxltrack_harvest(t, kind, 0, pages, 0, buf, pages, &nr);
			if (ret)
				die_err(ret, "bench harvest");
		}
		dt = now_s() - t0;
		printf("harvest %-8s %8" PRIu64 " pages: %9.1f us/call, %10.1f Mpages/s\n",
		       names[kind], pages, dt / (double)iters * 1e6,
		       (double)pages * (double)iters / dt / 1e6);
	}
	harvest_cost(t, pages, iters, cost_flags, buf);
	t0 = now_s();
	for (uint64_t i = 0; i < iters * 10; i++) {
		uint64_t b;
		uint32_t d;

		ret = cxltrack_bat_get(t, i % t->info.pages, &b, &d);
		if (ret < 0)
			die_err(ret, "bench bat get");
	}
	dt = now_s() - t0;
	printf("bat get: %9.1f us/call\n", dt / (double)(iters * 10) * 1e6);
	free(buf);
	cxltrack_close(t);
	return 0;
}
