// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libcxltrack.h"
#include "cxltrack_regs.h"
#include "cli.h"

/*
 * raw-batch: the guest half of the shared-vector replay (tests/driver).
 * stdin: one operation per line; stdout: one answer line per operation.
 *   R OFF SIZE              -> "v VALUE"            raw BAR read
 *   W OFF SIZE VALUE        -> "ok"                 raw BAR write
 *   MR DPA SIZE             -> "m RESP VALUE"       CPU load from the dax mapping
 *   MW DPA HEX              -> "m RESP"             CPU store (one access)
 *   ZERO DPA LEN            -> "ok"                 zero memory with 8-byte stores
 *   RESET                   -> "ok"                 PCI function reset
 *   SLEEP NS                -> "ok"
 *   RACE SCHED NR N*(OFF VAL) NM M*(DPA HEX) -> "ok"
 * RESP is "decerr" when STAT_DECERR advanced across the access, else "okay".
 */
struct batch {
	struct cxltrack *t;
	struct cxltrack_dax dax;
	int have_dax;
};

static uint64_t raw_rd(struct batch *b, unsigned int off, unsigned int size)
{
	uint64_t v = 0;
	int ret = cxltrack_raw(b->t, CXLT_RAW_READ, off, size, &v);

	if (ret)
		die_err(ret, "raw read");
	return v;
}

static void raw_wr(struct batch *b, unsigned int off, unsigned int size, uint64_t v)
{
	int ret = cxltrack_raw(b->t, CXLT_RAW_WRITE, off, size, &v);

	if (ret)
		die_err(ret, "raw write");
}

static volatile uint8_t *dax_at(struct batch *b, uint64_t dpa, size_t len)
{
	volatile uint8_t *p;

	if (!b->have_dax)
		die_usage("raw-batch: memory operation without --dax");
	p = cxltrack_dax_ptr(&b->dax, dpa, len);
	if (!p) {
		fprintf(stderr, "%s: DPA 0x%" PRIx64 " outside the dax mapping\n", prog, dpa);
		exit(1);
	}
	return p;
}

static void mem_store(volatile uint8_t *p, const uint8_t *d, size_t n)
{
	uint64_t v = 0;

	memcpy(&v, d, n);
	switch (n) {
	case 1:
		*(volatile uint8_t *)p = (uint8_t)v;
		break;
	case 2:
		*(volatile uint16_t *)p = (uint16_t)v;
		break;
	case 4:
		*(volatile uint32_t *)p = (uint32_t)v;
		break;
	default:
		*(volatile uint64_t *)p = v;
		break;
	}
}

static uint64_t mem_load(volatile uint8_t *p, size_t n)
{
	switch (n) {
	case 1:
		return *(volatile uint8_t *)p;
	case 2:
		return *(volatile uint16_t *)p;
	case 4:
		return *(volatile uint32_t *)p;
	default:
		return *(volatile uint64_t *)p;
	}
}

struct race_writes {
	struct batch *b;
	int n;
	uint64_t dpa[64];
	uint8_t data[64][8];
	size_t len[64];
};

static void *race_writer(void *arg)
{
	struct race_writes *w = arg;

	for (int i = 0; i < w->n; i++)
		mem_store(dax_at(w->b, w->dpa[i], w->len[i]), w->data[i], w->len[i]);
	return NULL;
}

int cmd_raw_batch(int argc, char **argv)
{
	struct batch b = {0};
	char line[8192];
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dax") && i + 1 < argc) {
			const char *dax = argv[++i];

			ret = cxltrack_dax_open(dax, 256ul << 20, &b.dax);
			if (ret)
				die_err(ret, dax);
			b.have_dax = 1;
		} else {
			die_usage("raw-batch: unknown argument '%s'", argv[i]);
		}
	}
	b.t = open_dev();
	ret = cxltrack_raw(b.t, CXLT_RAW_ENTER, 0, 0, NULL);
	if (ret)
		die_err(ret, "raw enter (load cxltrack with allow_raw=1)");
	while (fgets(line, sizeof(line), stdin)) {
		char op[16];
		unsigned long long a = 0, c = 0, d = 0;
		char hex[64];
		uint8_t bytes[8];
		size_t n;

		if (sscanf(line, "%15s", op) != 1)
			continue;
		if (!strcmp(op, "R") && sscanf(line, "R %lli %lli", &a, &c) == 2) {
			printf("v %" PRIu64 "\n", raw_rd(&b, (unsigned int)a, (unsigned int)c));
		} else if (!strcmp(op, "W") && sscanf(line, "W %lli %lli %llu", &a, &c, &d) == 3) {
			raw_wr(&b, (unsigned int)a, (unsigned int)c, d);
			printf("ok\n");
		} else if (!strcmp(op, "MR") && sscanf(line, "MR %lli %lli", &a, &c) == 2) {
			uint64_t before = raw_rd(&b, CXLT_STAT_DECERR, 4), v;

			v = mem_load(dax_at(&b, a, c), c);
			printf("m %s %" PRIu64 "\n",
			       raw_rd(&b, CXLT_STAT_DECERR, 4) != before ? "decerr" : "okay", v);
		} else if (!strcmp(op, "MW") && sscanf(line, "MW %lli %63s", &a, hex) == 2) {
			uint64_t before = raw_rd(&b, CXLT_STAT_DECERR, 4);

			n = parse_hex(hex, bytes, 8);
			if (!n || (n & (n - 1)))
				die_usage("raw-batch: bad MW data '%s'", hex);
			mem_store(dax_at(&b, a, n), bytes, n);
			printf("m %s\n", raw_rd(&b, CXLT_STAT_DECERR, 4) != before ? "decerr" : "okay");
		} else if (!strcmp(op, "ZERO") && sscanf(line, "ZERO %lli %lli", &a, &c) == 2) {
			volatile uint8_t *p = dax_at(&b, a, c);

			for (unsigned long long k = 0; k + 8 <= c; k += 8)
				*(volatile uint64_t *)(p + k) = 0;
			printf("ok\n");
		} else if (!strcmp(op, "RESET")) {
			ret = cxltrack_raw(b.t, CXLT_RAW_RESET, 0, 0, NULL);
			if (ret)
				die_err(ret, "raw reset");
			printf("ok\n");
		} else if (!strcmp(op, "SLEEP") && sscanf(line, "SLEEP %lli", &a) == 1) {
			struct timespec ts = { (time_t)(a / 1000000000ull), (long)(a % 1000000000ull) };

			nanosleep(&ts, NULL);
			printf("ok\n");
		} else if (!strcmp(op, "RACE")) {
			struct race_writes w = { .b = &b };
			unsigned int regs_off[16];
			uint64_t regs_val[16];
			int sched, nr, pos, k;
			char *p = line + 4;
			pthread_t th;

			if (sscanf(p, "%i %i%n", &sched, &nr, &pos) != 2 || nr < 0 || nr > 16)
				die_usage("raw-batch: bad RACE");
			p += pos;
			for (k = 0; k < nr; k++) {
				if (sscanf(p, "%lli %llu%n", &a, &c, &pos) != 2)
					die_usage("raw-batch: bad RACE register write");
				regs_off[k] = (unsigned int)a;
				regs_val[k] = c;
				p += pos;
			}
			if (sscanf(p, "%i%n", &w.n, &pos) != 1 || w.n < 0 || w.n > 64)
				die_usage("raw-batch: bad RACE write count");
			p += pos;
			for (k = 0; k < w.n; k++) {
				if (sscanf(p, "%lli %63s%n", &a, hex, &pos) != 2)
					die_usage("raw-batch: bad RACE memory write");
				w.dpa[k] = a;
				w.len[k] = parse_hex(hex, w.data[k], 8);
				if (!w.len[k])
					die_usage("raw-batch: bad RACE data");
				p += pos;
			}
			if (sched == 0)
				race_writer(&w);
			else if (sched > 1 && pthread_create(&th, NULL, race_writer, &w))
				die_err(-errno, "pthread_create");
			for (k = 0; k < nr; k++)
				raw_wr(&b, regs_off[k], 4, regs_val[k]);
			if (sched == 1)
				race_writer(&w);
			else if (sched > 1)
				pthread_join(th, NULL);
			printf("ok\n");
		} else {
			die_usage("raw-batch: bad line '%s'", line);
		}
	}
	fflush(stdout);
	cxltrack_raw(b.t, CXLT_RAW_EXIT, 0, 0, NULL);
	cxltrack_close(b.t);
	if (b.have_dax)
		cxltrack_dax_close(&b.dax);
	return 0;
}
