// SPDX-License-Identifier: Apache-2.0
/*
 * cxltrack zero: zero a range of device pages with the device's own scrub
 * engine and start its dirty log there afresh, so that from then on a dirty
 * bit of the range means "written since it was zeroed".
 *
 * That is what lets a migration skip the pages a VM never wrote without
 * reading them (docs/results.md, "never-written pages"): the host zeroes the
 * VM's range before the VM starts, and QEMU's cxltrack-dirty-log with
 * zeroed=on leaves out of the first round every page the device has not seen
 * written since. The scrub (spec section 7) costs no CPU store: each chunk is
 * assigned to an owner nobody uses, released, and zero-filled by the device;
 * its internal writes set the dirty bits, which one harvest with CLEAR then
 * drops. Nothing may use the range meanwhile: that harvest would also drop
 * the bit of a page written after its chunk was scrubbed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "libcxltrack.h"
#include "cxltrack_regs.h"
#include "cli.h"

/* A released chunk of the QEMU model scrubs in well under a second; hardware faster. */
#define SCRUB_WAIT_S 60

/* An owner id with no chunk, so that the range's chunks are this file's alone. */
static unsigned int unused_owner(struct cxltrack *t)
{
	size_t len = (t->info.num_chunks + 7) / 8;
	uint8_t *bm = malloc(len);

	if (!bm)
		die_err(-ENOMEM, "zero");
	for (unsigned int o = CXLT_MAX_OWNER; o; o--) {
		uint64_t count;
		int ret = cxltrack_chunk_list(t, o, bm, len, &count);

		if (ret)
			die_err(ret, "zero: chunk list");
		if (!count) {
			free(bm);
			return o;
		}
	}
	fprintf(stderr, "%s: zero: every owner id has chunks\n", prog);
	exit(1);
}

static void wait_free(struct cxltrack *t, unsigned int chunk)
{
	struct timespec tick = { 0, 1000000 };
	time_t end = time(NULL) + SCRUB_WAIT_S;

	for (;;) {
		unsigned int state, owner;
		int ret = cxltrack_chunk_query(t, chunk, &state, &owner);

		if (ret)
			die_err(ret, "zero: chunk query");
		if (state == CXLT_CHUNK_STATE_FREE)
			return;
		if (time(NULL) > end) {
			fprintf(stderr, "%s: zero: chunk %u not scrubbed after %d s\n", prog, chunk,
				SCRUB_WAIT_S);
			exit(1);
		}
		nanosleep(&tick, NULL);
	}
}

int cmd_zero(int argc, char **argv)
{
	uint64_t start, count, chunk_pages, nr;
	unsigned int first, n, owner;
	struct cxltrack *t;
	uint8_t *buf;
	size_t len;
	int ret;

	if (argc != 3)
		die_usage("zero needs START COUNT (device pages, whole chunks)");
	start = num(argv[1], "START");
	count = num(argv[2], "COUNT");
	t = open_dev();
	chunk_pages = 1ULL << (t->info.chunk_shift - t->info.page_shift);
	if (!count || start % chunk_pages || count % chunk_pages)
		die_usage("zero: START and COUNT must be multiples of a chunk (%" PRIu64
			  " pages), COUNT > 0", chunk_pages);
	if (start + count > t->info.pages || start + count < start)
		die_usage("zero: range %" PRIu64 "+%" PRIu64 " beyond the device's %" PRIu64
			  " pages", start, count, (uint64_t)t->info.pages);
	first = (unsigned int)(start / chunk_pages);
	n = (unsigned int)(count / chunk_pages);
	owner = unused_owner(t);
	/*
	 * One chunk at a time: a chunk another user owns stops the command
	 * (EBUSY) with the chunks before it zeroed and nothing owned by us.
	 */
	for (unsigned int c = first; c < first + n; c++) {
		char what[48];

		snprintf(what, sizeof(what), "zero: chunk %u: assign", c);
		ret = cxltrack_chunk_assign(t, c, owner);
		if (ret)
			die_err(ret, what);
		ret = cxltrack_chunk_release(t, c, owner);
		if (ret)
			die_err(ret, "zero: chunk release");
		wait_free(t, c);
	}
	len = cxltrack_harvest_bytes(CXLT_HARVEST_DIRTY, count);
	buf = malloc(len);
	if (!buf)
		die_err(-ENOMEM, "zero");
	ret = cxltrack_harvest(t, CXLT_HARVEST_DIRTY, start, count, CXLT_HARVEST_F_CLEAR, buf,
			       len, &nr);
	if (ret)
		die_err(ret, "zero: harvest");
	printf("zeroed pages %" PRIu64 "+%" PRIu64 ": %u chunks scrubbed by the device, "
	       "%" PRIu64 " dirty bits cleared\n", start, count, n, nr);
	free(buf);
	cxltrack_close(t);
	return 0;
}
