// SPDX-License-Identifier: Apache-2.0
/*
 * cxltrack: command-line front end of libcxltrack. See usage() or
 * `cxltrack --help` / `cxltrack COMMAND --help`. This file holds the device
 * commands and the dispatcher; bench.c the benchmark, raw_batch.c the raw
 * replay of the shared vectors, cli_common.c what they share (cli.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libcxltrack.h"
#include "cxltrack_regs.h"
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: cxltrack [-d /dev/cxltrackN] COMMAND [ARGS]\n"
"\n"
"Drive the cxltrack CXL memory tracker through its driver. Pages are tracking\n"
"pages of the device (see `status`), numbered by device physical address.\n"
"Numbers may be decimal or 0x-hex.\n"
"\n"
"commands:\n"
"  status                       configuration, control bits and counters\n"
"  harvest KIND START COUNT [--clear] [--decay] [--format list|hex|count]\n"
"                               KIND: dirty | accessed | hotness. START and COUNT\n"
"                               multiples of 64; any COUNT (split into commands).\n"
"                               list (default): one page per line (hotness: page value)\n"
"  watch [-n N] [-t SECONDS]    print events as they arrive (N events / timeout)\n"
"  bat set PAGE BLOCK DISK | get PAGE | clear PAGE | discard PAGE\n"
"                               block association; discard = atomic discard-if-clean,\n"
"                               prints 'clean block=B disk=D' or 'dirty'\n"
"  slot alloc TAG [--keep]      allocate a write-buffer slot (prints its index); without\n"
"                               --keep it is released when this command exits\n"
"  slot write SLOT OFFSET HEX | slot fill SLOT OFFSET LEN BYTE\n"
"  slot merge SLOT PAGE | release SLOT | query SLOT [--mask]\n"
"  chunk assign CHUNK OWNER [--keep]  give a free chunk to OWNER; without --keep it is\n"
"                               released (scrubbed) when this command exits\n"
"  chunk release CHUNK OWNER | query CHUNK | list OWNER\n"
"  chunk copy CHUNK OWNER FILE   the device copies the chunk by DMA (spec 7.1) into FILE\n"
"  zero START COUNT             zero whole chunks of pages with the device's scrub and\n"
"                               clear their dirty bits (a dirty bit then means written\n"
"                               since zeroed: a VM's first migration round skips the rest);\n"
"                               nothing may use the range meanwhile\n"
"  ctrl [track_en=0|1] [bat_inv_evt=0|1] [slot_timeout=TICKS]\n"
"  bench [--pages N] [--iters K] [--clear]\n"
"                       harvest latency, throughput and cost per GiB (--clear:\n"
"                       with CLEAR, as a dirty log does; takes every consumer's bits)\n"
"  raw-batch [--dax DEV]        test/debug: run raw register and memory operations read\n"
"                               from stdin (needs allow_raw=1; see tests/driver)\n"
"\n"
"exit status: 0 ok, 1 the operation failed, 2 bad arguments\n");
}

static int cmd_status(int argc, char **argv)
{
	struct cxltrack *t;
	struct cxlt_stats s;
	struct cxlt_ctrl c = {0};
	const struct cxlt_info *i;
	int ret;

	(void)argv;
	if (argc > 1)
		die_usage("status takes no arguments");
	t = open_dev();
	i = &t->info;
	ret = cxltrack_stats(t, &s);
	if (ret)
		die_err(ret, "stats");
	ret = cxltrack_ctrl(t, &c);
	if (ret)
		die_err(ret, "ctrl");
	printf("device: %s (uapi %u, hw %u.%u), memdev %04x:%02x:%02x.%u\n", t->path,
	       i->uapi_version, i->hw_version >> 16, i->hw_version & 0xffff,
	       i->memdev_bus >> 8, i->memdev_bus & 0xff, i->memdev_devfn >> 3,
	       i->memdev_devfn & 7);
	printf("pages: %" PRIu64 " x %u KiB (%" PRIu64 " MiB)\n", (uint64_t)i->pages,
	       1u << (i->page_shift - 10), (uint64_t)i->pages << i->page_shift >> 20);
	printf("page_shift: %u\nslots: %u\nhot_bits: %u\nevq_depth: %u\n", i->page_shift,
	       i->num_slots, i->hot_bits, 1u << i->evq_depth_log2);
	printf("chunks: %u x %u KiB\ndisk_bits: %u\nblock_bits: %u\ntick_ns: %u\n",
	       i->num_chunks, 1u << (i->chunk_shift - 10), i->disk_bits, i->block_bits,
	       i->tick_ns);
	printf("chunk_copy: %u\n", i->chunk_copy);
	printf("track_en: %u\nbat_inv_evt: %u\nslot_timeout: %u\n",
	       !!(c.ctrl & CXLT_CTRL_F_TRACK_EN), !!(c.ctrl & CXLT_CTRL_F_BAT_INV_EVT),
	       c.cur_timeout);
	printf("reads: %" PRIu64 "\nwrites: %" PRIu64 "\ndecerr: %" PRIu64
	       "\nbat_inv: %" PRIu64 "\n", (uint64_t)s.reads, (uint64_t)s.writes,
	       (uint64_t)s.decerr, (uint64_t)s.bat_inv);
	printf("evq_dropped: %" PRIu64 "\nerr_status: 0x%" PRIx64 "\nerr_count: %" PRIu64 "\n",
	       (uint64_t)s.evq_dropped, (uint64_t)s.err_status, (uint64_t)s.err_count);
	printf("commands: %" PRIu64 "\ncmd_errors: %" PRIu64 "\ncmd_timeouts: %" PRIu64
	       "\nirqs: %" PRIu64 "\nevents: %" PRIu64 "\nevents_lost: %" PRIu64 "\n",
	       (uint64_t)s.commands, (uint64_t)s.cmd_errors, (uint64_t)s.cmd_timeouts,
	       (uint64_t)s.irqs, (uint64_t)s.events, (uint64_t)s.events_lost);
	cxltrack_close(t);
	return 0;
}

static int cmd_harvest(int argc, char **argv)
{
	unsigned int kind, flags = 0;
	const char *fmt = "list";
	uint64_t start, count, nr;
	struct cxltrack *t;
	uint8_t *buf;
	size_t len;
	int ret, pos = 0;
	const char *p[3] = {0};

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--clear"))
			flags |= CXLT_HARVEST_F_CLEAR;
		else if (!strcmp(argv[i], "--decay"))
			flags |= CXLT_HARVEST_F_DECAY;
		else if (!strcmp(argv[i], "--format") && i + 1 < argc)
			fmt = argv[++i];
		else if (argv[i][0] == '-' && argv[i][1] == '-')
			die_usage("harvest: unknown option '%s'", argv[i]);
		else if (pos < 3)
			p[pos++] = argv[i];
		else
			die_usage("harvest: too many arguments");
	}
	if (pos != 3)
		die_usage("harvest needs KIND START COUNT");
	if (!strcmp(p[0], "dirty"))
		kind = CXLT_HARVEST_DIRTY;
	else if (!strcmp(p[0], "accessed"))
		kind = CXLT_HARVEST_ACCESSED;
	else if (!strcmp(p[0], "hotness"))
		kind = CXLT_HARVEST_HOTNESS;
	else
		die_usage("harvest: KIND must be dirty, accessed or hotness, not '%s'", p[0]);
	if (strcmp(fmt, "list") && strcmp(fmt, "hex") && strcmp(fmt, "count"))
		die_usage("harvest: --format must be list, hex or count");
	start = num(p[1], "START");
	count = num(p[2], "COUNT");
	if (start % 64 || count % 64 || !count)
		die_usage("harvest: START and COUNT must be multiples of 64 (COUNT > 0)");
	if ((flags & CXLT_HARVEST_F_DECAY) && kind != CXLT_HARVEST_HOTNESS)
		die_usage("harvest: --decay only applies to hotness");
	if ((flags & CXLT_HARVEST_F_DECAY) && (flags & CXLT_HARVEST_F_CLEAR))
		die_usage("harvest: --clear and --decay exclude each other");
	t = open_dev();
	if (start + count > t->info.pages || start + count < start)
		die_usage("harvest: range %" PRIu64 "+%" PRIu64 " beyond the device's %" PRIu64
			  " pages", start, count, (uint64_t)t->info.pages);
	len = cxltrack_harvest_bytes(kind, count);
	buf = calloc(1, len);
	if (!buf)
		die_err(-ENOMEM, "harvest");
	ret = cxltrack_harvest(t, kind, start, count, flags, buf, len, &nr);
	if (ret)
		die_err(ret, "harvest");
	if (!strcmp(fmt, "count")) {
		printf("%" PRIu64 "\n", nr);
	} else if (!strcmp(fmt, "hex")) {
		for (size_t i = 0; i < len; i++)
			printf("%02x", buf[i]);
		printf("\n");
	} else {
		for (uint64_t i = 0; i < count; i++) {
			if (kind == CXLT_HARVEST_HOTNESS) {
				if (buf[i])
					printf("%" PRIu64 " %u\n", start + i, buf[i]);
			} else if (buf[i / 8] >> (i % 8) & 1) {
				printf("%" PRIu64 "\n", start + i);
			}
		}
	}
	free(buf);
	cxltrack_close(t);
	return 0;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int cmd_watch(int argc, char **argv)
{
	long want = -1;
	double timeout = -1;
	struct cxltrack *t;
	struct timespec t0, now;
	long got = 0;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			want = (long)num(argv[++i], "N");
		else if (!strcmp(argv[i], "-t") && i + 1 < argc)
			timeout = strtod(argv[++i], NULL);
		else
			die_usage("watch: unknown argument '%s'", argv[i]);
	}
	t = open_dev();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* A watcher sees every event of the device, not only its own slots'. */
	ret = cxltrack_event_scope(t, CXLT_EVENTS_ALL);
	if (ret)
		die_err(ret, "watch (every event needs CAP_SYS_ADMIN)");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (!stop && (want < 0 || got < want)) {
		struct cxlt_event ev[32];
		int wait_ms = 200, n;

		if (timeout >= 0) {
			double el;

			clock_gettime(CLOCK_MONOTONIC, &now);
			el = (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
			if (el >= timeout)
				break;
			if ((timeout - el) * 1000 < wait_ms)
				wait_ms = (int)((timeout - el) * 1000) + 1;
		}
		n = cxltrack_events(t, ev, 32, wait_ms);
		if (n < 0) {
			if (n == -EINTR)
				continue;
			die_err(n, "watch");
		}
		for (int i = 0; i < n && (want < 0 || got < want); i++, got++)
			printf("%s index=%u arg=0x%" PRIx64 " seq=%u%s%s%s\n",
			       cxltrack_event_name(ev[i].type), ev[i].index,
			       (uint64_t)ev[i].arg, ev[i].seq,
			       ev[i].flags & CXLT_EVENT_F_GAP ? " gap" : "",
			       ev[i].flags & CXLT_EVENT_F_OVERRUN ? " overrun" : "",
			       ev[i].flags & CXLT_EVENT_F_RESET ? " reset" : "");
	}
	cxltrack_close(t);
	return want >= 0 && got < want ? 1 : 0;
}

static int cmd_bat(int argc, char **argv)
{
	struct cxltrack *t;
	uint64_t page, block = 0;
	uint32_t disk = 0;
	int ret;

	if (argc < 3)
		die_usage("bat needs set|get|clear|discard PAGE ...");
	page = num(argv[2], "PAGE");
	if (!strcmp(argv[1], "set")) {
		if (argc != 5)
			die_usage("bat set needs PAGE BLOCK DISK");
		block = num(argv[3], "BLOCK");
		disk = (uint32_t)num(argv[4], "DISK");
		t = open_dev();
		ret = cxltrack_bat_set(t, page, block, disk);
		if (ret)
			die_err(ret, "bat set");
	} else if (!strcmp(argv[1], "get") || !strcmp(argv[1], "discard")) {
		int discard = !strcmp(argv[1], "discard");

		if (argc != 3)
			die_usage("bat %s needs PAGE", argv[1]);
		t = open_dev();
		ret = discard ? cxltrack_bat_discard(t, page, &block, &disk) :
				cxltrack_bat_get(t, page, &block, &disk);
		if (ret < 0)
			die_err(ret, discard ? "bat discard" : "bat get");
		if (ret)
			printf("%s block=%" PRIu64 " disk=%u\n", discard ? "clean" : "valid",
			       block, disk);
		else
			printf("%s\n", discard ? "dirty" : "invalid");
	} else if (!strcmp(argv[1], "clear")) {
		if (argc != 3)
			die_usage("bat clear needs PAGE");
		t = open_dev();
		ret = cxltrack_bat_clear(t, page);
		if (ret)
			die_err(ret, "bat clear");
	} else {
		die_usage("bat: unknown operation '%s'", argv[1]);
		return 2;
	}
	cxltrack_close(t);
	return 0;
}

static int cmd_slot(int argc, char **argv)
{
	uint8_t buf[CXLT_SLOT_BYTES];
	struct cxltrack *t;
	int ret;

	if (argc < 2)
		die_usage("slot needs alloc|write|fill|merge|release|query");
	if (!strcmp(argv[1], "alloc")) {
		unsigned int flags = 0;

		if (argc < 3 || argc > 4)
			die_usage("slot alloc needs TAG [--keep]");
		if (argc == 4) {
			if (strcmp(argv[3], "--keep"))
				die_usage("slot alloc: unknown option '%s'", argv[3]);
			flags = CXLT_SLOT_F_KEEP;
		}
		t = open_dev();
		ret = cxltrack_slot_alloc(t, num(argv[2], "TAG"), flags);
		if (ret < 0)
			die_err(ret, "slot alloc");
		printf("%d\n", ret);
	} else if (!strcmp(argv[1], "write") || !strcmp(argv[1], "fill")) {
		unsigned int slot, off;
		size_t len;

		if (!strcmp(argv[1], "write")) {
			if (argc != 5)
				die_usage("slot write needs SLOT OFFSET HEXBYTES");
			len = parse_hex(argv[4], buf, sizeof(buf));
			if (!len)
				die_usage("slot write: HEXBYTES must be 1..4096 bytes of hex");
		} else {
			if (argc != 6)
				die_usage("slot fill needs SLOT OFFSET LEN BYTE");
			len = num(argv[4], "LEN");
			if (!len || len > sizeof(buf))
				die_usage("slot fill: LEN must be 1..4096");
			memset(buf, (int)num(argv[5], "BYTE"), len);
		}
		slot = (unsigned int)num(argv[2], "SLOT");
		off = (unsigned int)num(argv[3], "OFFSET");
		if (off >= CXLT_SLOT_BYTES || len > CXLT_SLOT_BYTES - off)
			die_usage("slot write: OFFSET + length must be within 4096");
		t = open_dev();
		ret = cxltrack_slot_write(t, slot, off, buf, (unsigned int)len);
		if (ret)
			die_err(ret, "slot write");
	} else if (!strcmp(argv[1], "merge")) {
		uint64_t valid;

		if (argc != 4)
			die_usage("slot merge needs SLOT PAGE");
		t = open_dev();
		ret = cxltrack_slot_merge(t, (unsigned int)num(argv[2], "SLOT"),
					  num(argv[3], "PAGE"), &valid);
		if (ret)
			die_err(ret, "slot merge");
		printf("merged %" PRIu64 " bytes\n", valid);
	} else if (!strcmp(argv[1], "release")) {
		if (argc != 3)
			die_usage("slot release needs SLOT");
		t = open_dev();
		ret = cxltrack_slot_release(t, (unsigned int)num(argv[2], "SLOT"));
		if (ret)
			die_err(ret, "slot release");
	} else if (!strcmp(argv[1], "query")) {
		static const char *const st[] = { "FREE", "OPEN", "MERGING" };
		struct cxlt_slot_query q;
		int mask;

		if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "--mask")))
			die_usage("slot query needs SLOT [--mask]");
		mask = argc == 4;
		t = open_dev();
		ret = cxltrack_slot_query(t, (unsigned int)num(argv[2], "SLOT"), &q,
					  mask ? buf : NULL);
		if (ret)
			die_err(ret, "slot query");
		printf("state=%s full=%u valid_bytes=%u tag=0x%" PRIx64 " owned=%u\n",
		       q.state < 3 ? st[q.state] : "?", q.full, q.valid_bytes,
		       (uint64_t)q.tag, q.owned);
		if (mask) {
			for (int i = 0; i < 512; i++)
				printf("%02x", buf[i]);
			printf("\n");
		}
	} else {
		die_usage("slot: unknown operation '%s'", argv[1]);
		return 2;
	}
	cxltrack_close(t);
	return 0;
}

static int cmd_chunk(int argc, char **argv)
{
	struct cxltrack *t;
	int ret;

	if (argc < 3)
		die_usage("chunk needs assign|release|query|list ...");
	if (!strcmp(argv[1], "assign") || !strcmp(argv[1], "release")) {
		int assign = !strcmp(argv[1], "assign");
		int keep = assign && argc == 5 && !strcmp(argv[4], "--keep");
		unsigned int c, o;

		if (argc != 4 + keep)
			die_usage("chunk %s needs CHUNK OWNER%s", argv[1], assign ? " [--keep]" : "");
		c = (unsigned int)num(argv[2], "CHUNK");
		o = (unsigned int)num(argv[3], "OWNER");
		if (!o || o > CXLT_MAX_OWNER)
			die_usage("chunk: OWNER must be 1..%u", CXLT_MAX_OWNER);
		t = open_dev();
		ret = assign ? cxltrack_chunk_assign_flags(t, c, o, keep ? CXLT_CHUNK_F_DETACH : 0)
			     : cxltrack_chunk_release(t, c, o);
		if (ret)
			die_err(ret, assign ? "chunk assign" : "chunk release");
	} else if (!strcmp(argv[1], "query")) {
		static const char *const st[] = { "FREE", "OWNED", "SCRUBBING" };
		unsigned int state, owner;

		if (argc != 3)
			die_usage("chunk query needs CHUNK");
		t = open_dev();
		ret = cxltrack_chunk_query(t, (unsigned int)num(argv[2], "CHUNK"), &state, &owner);
		if (ret)
			die_err(ret, "chunk query");
		printf("state=%s owner=%u\n", state < 3 ? st[state] : "?", owner);
	} else if (!strcmp(argv[1], "copy")) {
		unsigned int c, o;
		size_t len;
		void *buf;
		FILE *out;

		if (argc != 5)
			die_usage("chunk copy needs CHUNK OWNER FILE");
		c = (unsigned int)num(argv[2], "CHUNK");
		o = (unsigned int)num(argv[3], "OWNER");
		t = open_dev();
		len = (size_t)1 << t->info.chunk_shift;
		buf = malloc(len);
		if (!buf)
			die_err(-ENOMEM, "chunk copy");
		ret = cxltrack_chunk_copy(t, c, o, buf, len);
		if (ret)
			die_err(ret, "chunk copy");
		out = fopen(argv[4], "wb");
		if (!out || fwrite(buf, 1, len, out) != len || fclose(out))
			die_err(-errno, "chunk copy: writing the file");
		printf("copied=%zu\n", len);
		free(buf);
	} else if (!strcmp(argv[1], "list")) {
		uint8_t *bm;
		uint64_t count;
		size_t len;
		unsigned int o;

		if (argc != 3)
			die_usage("chunk list needs OWNER (0: free pool)");
		o = (unsigned int)num(argv[2], "OWNER");
		if (o > CXLT_MAX_OWNER)
			die_usage("chunk list: OWNER must be 0..%u", CXLT_MAX_OWNER);
		t = open_dev();
		len = (t->info.num_chunks + 7) / 8;
		bm = calloc(1, len);
		if (!bm)
			die_err(-ENOMEM, "chunk list");
		ret = cxltrack_chunk_list(t, o, bm, len, &count);
		if (ret)
			die_err(ret, "chunk list");
		printf("count=%" PRIu64 "\n", count);
		for (unsigned int i = 0; i < t->info.num_chunks; i++)
			if (bm[i / 8] >> (i % 8) & 1)
				printf("%u\n", i);
		free(bm);
	} else {
		die_usage("chunk: unknown operation '%s'", argv[1]);
		return 2;
	}
	cxltrack_close(t);
	return 0;
}

static int cmd_ctrl(int argc, char **argv)
{
	struct cxlt_ctrl c = {0};
	struct cxltrack *t;
	int ret;

	for (int i = 1; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		uint64_t v;

		if (!eq)
			die_usage("ctrl: expected NAME=VALUE, got '%s'", argv[i]);
		*eq = 0;
		v = num(eq + 1, argv[i]);
		if (!strcmp(argv[i], "track_en") || !strcmp(argv[i], "bat_inv_evt")) {
			uint32_t f = !strcmp(argv[i], "track_en") ? CXLT_CTRL_F_TRACK_EN :
								    CXLT_CTRL_F_BAT_INV_EVT;
			if (v > 1)
				die_usage("ctrl: %s must be 0 or 1", argv[i]);
			if (v)
				c.set |= f;
			else
				c.clear |= f;
		} else if (!strcmp(argv[i], "slot_timeout")) {
			if (v > UINT32_MAX)
				die_usage("ctrl: slot_timeout must fit 32 bits");
			c.slot_timeout = (uint32_t)v;
			c.flags |= CXLT_CTRL_TIMEOUT;
		} else {
			die_usage("ctrl: unknown control '%s'", argv[i]);
		}
	}
	t = open_dev();
	ret = cxltrack_ctrl(t, &c);
	if (ret)
		die_err(ret, "ctrl");
	printf("track_en=%u bat_inv_evt=%u slot_timeout=%u\n",
	       !!(c.ctrl & CXLT_CTRL_F_TRACK_EN), !!(c.ctrl & CXLT_CTRL_F_BAT_INV_EVT),
	       c.cur_timeout);
	cxltrack_close(t);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{ "status", cmd_status }, { "harvest", cmd_harvest }, { "watch", cmd_watch },
		{ "bat", cmd_bat }, { "slot", cmd_slot }, { "chunk", cmd_chunk },
		{ "ctrl", cmd_ctrl }, { "bench", cmd_bench }, { "raw-batch", cmd_raw_batch },
		{ "zero", cmd_zero },
	};
	int i = 1;

	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "-d") && i + 1 < argc) {
			dev_path = argv[i + 1];
			i += 2;
			continue;
		}
		die_usage("unknown option '%s'", argv[i]);
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
		if (!strcmp(argv[i], cmds[k].name)) {
			if (help_requested(argc - i, argv + i)) {
				usage(stdout);
				return 0;
			}
			return cmds[k].fn(argc - i, argv + i);
		}
	}
	die_usage("unknown command '%s'", argv[i]);
	return 2;
}
