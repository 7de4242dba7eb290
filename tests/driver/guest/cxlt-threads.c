// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-threads: one open file of /dev/cxltrack0 used at once by several
 * threads, by a dup() of its descriptor and by a fork()ed child, while a
 * writer dirties device pages through a dax mapping:
 *
 *   harvester  (dup)    harvests the working set with CLEAR, ORs the bits
 *   events     (first)  poll() + read() of events
 *   slots      (dup)    SLOT_ALLOC / SLOT_WRITE / SLOT_QUERY / SLOT_RELEASE
 *   chunks     (dup)    CHUNK_ASSIGN / CHUNK_QUERY / CHUNK_RELEASE
 *   queries    (first)  INFO / STATS
 *   closer              close()s the first descriptor half-way through
 *   child      (both)   harvests without CLEAR, allocates and releases slots
 *
 * Every call must succeed or fail with an error the uapi documents for it
 * (the first descriptor's calls with EBADF once it is closed). Afterwards no
 * dirty bit may be lost (every page written is in the union of the
 * harvests, the last one made after the writer stopped), and with every
 * descriptor closed the file's slots and chunks (one of each still held at
 * the last close) must be given back.
 *
 *   cxlt-threads DAX PAGES SECONDS
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "libcxltrack.h"
#include "cxltrack_regs.h"

#define CHUNK_OWNER 4001	/* owner id of this test's chunks */

static struct cxltrack first, second;	/* the file: first descriptor and its dup */
static struct cxltrack_dax dax;
static uint64_t npages, page_size, first_page;
static uint8_t *written, *reported;	/* per page: the writer's truth, the harvests' union */
static atomic_int stop, first_closed;
static atomic_long calls, refused;

static void fail(const char *what, int err)
{
	fprintf(stderr, "FAIL: %s: %s\n", what, strerror(err));
	exit(1);
}

/*
 * One call's result: 0, or one of the errors @ok lists (a 0-terminated
 * list); EBADF on the first descriptor once it is closed.
 */
static void expect(int ret, const char *what, const int *ok, int on_first)
{
	atomic_fetch_add(&calls, 1);
	if (ret >= 0)
		return;
	if (on_first && ret == -EBADF && atomic_load(&first_closed)) {
		atomic_fetch_add(&refused, 1);
		return;
	}
	for (; ok && *ok; ok++) {
		if (-ret == *ok) {
			atomic_fetch_add(&refused, 1);
			return;
		}
	}
	fail(what, -ret);
}

static void *writer(void *arg)
{
	uint64_t i = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		uint64_t p = i++ % npages;

		written[p] = 1;
		dax.map[p * page_size + (i % 64) * 64] = (uint8_t)i;
	}
	return NULL;
}

static void harvest_into_union(struct cxltrack *t)
{
	size_t len = cxltrack_harvest_bytes(CXLT_HARVEST_DIRTY, npages);
	uint8_t *bm = calloc(1, len);
	uint64_t nr;
	int ret;

	if (!bm)
		fail("harvest", ENOMEM);
	ret = cxltrack_harvest(t, CXLT_HARVEST_DIRTY, first_page, npages, CXLT_HARVEST_F_CLEAR,
			       bm, len, &nr);
	expect(ret, "harvest with CLEAR", NULL, 0);
	for (uint64_t i = 0; i < npages; i++)
		if (bm[i / 8] >> (i % 8) & 1)
			reported[i] = 1;
	free(bm);
}

static void *harvester(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		harvest_into_union(&second);
	return NULL;
}

static void *events(void *arg)
{
	struct cxlt_event ev[8];

	(void)arg;
	while (!atomic_load(&stop)) {
		struct pollfd pfd = { .fd = first.fd, .events = POLLIN };
		int n = poll(&pfd, 1, 10);

		if (n < 0)
			fail("poll", errno);
		if (atomic_load(&first_closed))
			break;	/* the number may name nothing, or (later) another file */
		if (n && (pfd.revents & POLLIN)) {
			ssize_t got = read(first.fd, ev, sizeof(ev));

			expect(got < 0 ? -errno : 0, "read", (const int[]){ EAGAIN, 0 }, 1);
		}
	}
	return NULL;
}

static void slot_cycle(struct cxltrack *t, uint64_t tag, int on_first)
{
	static const int alloc_ok[] = { ENOSPC, 0 };
	struct cxlt_slot_query q;
	uint8_t data[64];
	int slot = cxltrack_slot_alloc(t, tag, 0);

	expect(slot, "slot alloc", alloc_ok, on_first);
	if (slot < 0)
		return;
	memset(data, (int)tag, sizeof(data));
	expect(cxltrack_slot_write(t, (unsigned int)slot, 128, data, sizeof(data)), "slot write",
	       NULL, on_first);
	expect(cxltrack_slot_query(t, (unsigned int)slot, &q, NULL), "slot query", NULL, on_first);
	expect(cxltrack_slot_release(t, (unsigned int)slot), "slot release", NULL, on_first);
}

static void *slots(void *arg)
{
	uint64_t tag = 1;

	(void)arg;
	while (!atomic_load(&stop))
		slot_cycle(&second, tag++, 0);
	return NULL;
}

static void *chunks(void *arg)
{
	static const int not_free[] = { ENOENT, EBUSY, 0 };
	unsigned int c = first.info.num_chunks - 1;

	(void)arg;
	while (!atomic_load(&stop)) {
		unsigned int state, owner;
		int ret = cxltrack_chunk_assign(&second, c, CHUNK_OWNER);

		/* ENOENT (state): still being scrubbed after the last release */
		expect(ret, "chunk assign", not_free, 0);
		expect(cxltrack_chunk_query(&second, c, &state, &owner), "chunk query", NULL, 0);
		if (!ret)
			expect(cxltrack_chunk_release(&second, c, CHUNK_OWNER), "chunk release", NULL, 0);
	}
	return NULL;
}

static void *queries(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop) && !atomic_load(&first_closed)) {
		struct cxlt_stats s;
		struct cxlt_info info;

		expect(ioctl(first.fd, CXLT_IOC_INFO, &info) < 0 ? -errno : 0, "info", NULL, 1);
		expect(cxltrack_stats(&first, &s), "stats", NULL, 1);
	}
	return NULL;
}

static void child(double seconds)
{
	struct timespec t0, t1;
	uint64_t tag = 1u << 20;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		size_t len = cxltrack_harvest_bytes(CXLT_HARVEST_DIRTY, npages);
		uint8_t *bm = calloc(1, len);
		uint64_t nr;

		if (!bm)
			fail("child", ENOMEM);
		expect(cxltrack_harvest(&second, CXLT_HARVEST_DIRTY, first_page, npages, 0, bm, len,
					&nr), "child harvest", NULL, 0);
		free(bm);
		slot_cycle(&first, tag++, 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while ((double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	_exit(0);
}

/* After every descriptor is closed: the file's slots and chunks are back. */
static void audit(void)
{
	struct cxltrack *t;
	uint8_t bm[CXLT_MAX_CHUNKS / 8];
	uint64_t count = 1;
	int ret = cxltrack_open(NULL, &t);

	if (ret)
		fail("open for the audit", -ret);
	for (unsigned int s = 0; s < t->info.num_slots; s++) {
		struct cxlt_slot_query q;

		ret = cxltrack_slot_query(t, s, &q, NULL);
		if (ret)
			fail("audit: slot query", -ret);
		if (q.state != CXLT_SLOT_STATE_FREE) {
			fprintf(stderr, "FAIL: slot %u left in state %u after close\n", s, q.state);
			exit(1);
		}
	}
	for (int i = 0; i < 1000 && count; i++) {
		ret = cxltrack_chunk_list(t, CHUNK_OWNER, bm, sizeof(bm), &count);
		if (ret)
			fail("audit: chunk list", -ret);
		usleep(1000);
	}
	if (count) {
		fprintf(stderr, "FAIL: %" PRIu64 " chunk(s) still owned after close\n", count);
		exit(1);
	}
	cxltrack_close(t);
}

int main(int argc, char **argv)
{
	pthread_t th[6];
	void *(*fn[6])(void *) = { writer, harvester, events, slots, chunks, queries };
	struct cxltrack *t;
	double seconds;
	uint64_t lost = 0, nwritten = 0;
	pid_t pid;
	int status, ret;

	if (argc != 4) {
		fprintf(stderr, "usage: cxlt-threads DAX PAGES SECONDS\n");
		return 2;
	}
	seconds = atof(argv[3]);
	ret = cxltrack_open(NULL, &t);
	if (ret)
		fail("open /dev/cxltrack0", -ret);
	first = *t;
	second = *t;
	second.fd = dup(t->fd);
	if (second.fd < 0)
		fail("dup", errno);
	page_size = 1ull << first.info.page_shift;
	npages = (strtoull(argv[2], NULL, 0) + 63) / 64 * 64;
	ret = cxltrack_dax_open(argv[1], npages * page_size, &dax);
	if (ret)
		fail(argv[1], -ret);
	first_page = dax.dpa_base / page_size;
	written = calloc(npages, 1);
	reported = calloc(npages, 1);
	if (!written || !reported)
		fail("main", ENOMEM);
	harvest_into_union(&second);	/* start from clean bits */
	memset(reported, 0, npages);

	pid = fork();	/* before any thread: the child inherits both descriptors */
	if (pid < 0)
		fail("fork", errno);
	if (!pid)
		child(seconds);
	for (int i = 0; i < 6; i++)
		if (pthread_create(&th[i], NULL, fn[i], NULL))
			fail("pthread_create", EAGAIN);
	usleep((useconds_t)(seconds * 5e5));
	atomic_store(&first_closed, 1);
	if (close(first.fd))
		fail("close of the first descriptor", errno);
	usleep((useconds_t)(seconds * 5e5));
	atomic_store(&stop, 1);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fail("the child failed", ECHILD);
	harvest_into_union(&second);	/* the writer has stopped: its last bits */
	for (uint64_t i = 0; i < npages; i++) {
		nwritten += written[i];
		if (written[i] && !reported[i]) {
			fprintf(stderr, "FAIL: page %" PRIu64 " written, never reported dirty\n",
				first_page + i);
			lost++;
		}
	}
	if (lost)
		return 1;
	cxltrack_dax_close(&dax);
	/* what the file holds when its last descriptor goes: the audit wants it back */
	ret = cxltrack_slot_alloc(&second, 0x5107, 0);
	if (ret < 0)
		fail("slot alloc before close", -ret);
	ret = cxltrack_chunk_assign(&second, first.info.num_chunks - 2, CHUNK_OWNER);
	if (ret)
		fail("chunk assign before close", -ret);
	close(second.fd);
	audit();
	printf("ok threads: %ld calls (%ld refused as documented), %" PRIu64
	       " pages written, none lost; slots and chunks given back after close\n",
	       atomic_load(&calls), atomic_load(&refused), nwritten);
	free(t);
	return 0;
}
