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
#include <time.h>

#include "libcxltrack.h"
#include "cli.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int cmd_bench(int argc, char **argv)
{
	uint64_t pages = 0, iters = 20, nr;
	struct cxltrack *t;
	uint8_t *buf;
	double t0, dt;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pages") && i + 1 < argc)
			pages = num(argv[++i], "N");
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = num(argv[++i], "K");
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
