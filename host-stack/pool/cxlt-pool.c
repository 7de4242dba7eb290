// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-pool: the swap tier's pool manager (docs/swap-design.md section 5).
 * One process for all VMs of a host: it gives each VM an owner id and
 * contiguous runs of the device's chunks (CHUNK_LIST(0), CHUNK_ASSIGN), and
 * takes them back when the VM is gone (CHUNK_RELEASE, then SCRUB_DONE of
 * every chunk before any of them is handed out again).
 *
 *   cxlt-pool serve SOCKET FIRST COUNT [-d /dev/cxltrackN]
 *       serve the chunks FIRST..FIRST+COUNT-1 on the Unix socket SOCKET
 *   cxlt-pool SOCKET REQUEST...
 *       send one request, print the answer; exit 0 on "ok", 1 on "error"
 *
 * Requests, one line each; the answer is one line, "ok ..." or "error WHY":
 *   ping                  ok pool first=F count=C chunk_bytes=B free=N vms=V resets=R
 *                         lost=L   (device resets seen; chunks of running VMs the
 *                         driver could not give back, kept out of the pool)
 *   open VM               ok vm=VM owner=O         (an owner id no chunk has)
 *   grow VM N             ok vm=VM owner=O first=C count=N dpa=0xD bytes=S
 *                         (a contiguous run of N free chunks, assigned to O)
 *   list VM               ok vm=VM owner=O chunks=N runs=C+N,...
 *   copy VM FIRST N PATH  ok vm=VM owner=O first=F count=N bytes=S ms=T passes=P path=PATH
 *                         (the device copies the VM's chunks FIRST..FIRST+N-1 by DMA,
 *                         CHUNK_COPY, into the file PATH in /dev/shm/ or /dev/hugepages/
 *                         (hugetlbfs: the VM's QEMU maps it with 2 MiB pages), created
 *                         or truncated to N chunks: the batch swap-in's one pass;
 *                         the run's dirty bits are cleared first and read after each
 *                         pass: chunks written during a pass are copied again, up to 4
 *                         passes, else the error "the run was written during each of 4
 *                         passes": a run the guest keeps writing is copied with its
 *                         vCPUs held)
 *   recopy VM FIRST N PATH  ok vm=VM ... passes=1 chunks=K path=PATH
 *                         (the final pass, with the VM's vCPUs held: the chunks of
 *                         FIRST..FIRST+N-1 written since the last pass of its copy are
 *                         copied again into PATH, which that copy made; an error if a
 *                         write reached the run during this pass: the VM was not held.
 *                         The caller then maps the copy and lets the vCPUs go, so no
 *                         write falls between the copy and the mapping)
 *   shrink VM FIRST N     ok vm=VM owner=O released=N scrub_ms=T lost=L chunks=K
 *                         (the VM's chunks FIRST..FIRST+N-1 released and scrubbed,
 *                         the VM keeps its other K; an error, and nothing released,
 *                         if any of them is not the VM's. Its QEMU must no longer map
 *                         them: NestedVm.shrink_tier revokes the device first)
 *   release VM            ok vm=VM owner=O released=N scrub_ms=T lost=L
 *                         (released, scrubbed by the device, VM forgotten; L chunks a
 *                         reset took from it went back to the pool unreleased)
 *
 * The tracker stays open for the process's life and every chunk is bound to
 * that file (not detached): when the pool dies, even by SIGKILL, the driver
 * releases its chunks and the device scrubs them, so no chunk is left owned
 * by nobody and no VM's data reaches another. A VM still running then loses
 * its tier: its QEMU must be stopped before the pool.
 *
 * A device reset (the tracker's PCI function reset) frees every chunk
 * without a scrub; memory keeps its content and the VMs keep their mappings.
 * The driver gives every chunk bound to the pool's file back to its owner
 * and sends the file a RESET record (also when the pool only waited for a
 * SCRUB_DONE, which will not come then). On that record the pool re-audits
 * its table against the device (audit()): a VM's chunk OWNED by its owner
 * again is fine; one the driver could not give back stays the VM's in the
 * table (its QEMU still maps it: it must never reach another VM) until the
 * VM is released; a released chunk whose SCRUB_DONE was awaited and is FREE
 * now goes back to the pool (the driver scrubs such a chunk before its next
 * owner gets it). What it found goes to the log.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "libcxltrack.h"
#include "cxltrack_regs.h"

#define MAX_VMS 64
#define NAME_MAX_LEN 32
#define LINE_MAX_LEN 256
/* A released chunk of the QEMU model scrubs in well under a second; hardware faster. */
#define SCRUB_WAIT_MS 60000
#define CLIENT_WAIT_S 180

struct vm {
	char name[NAME_MAX_LEN + 1];
	unsigned int owner;	/* 0: slot unused */
};

struct pool {
	struct cxltrack *t;
	unsigned int first, count;	/* the chunks this pool hands out */
	uint64_t chunk_bytes;
	unsigned int page_shift;	/* the device's tracking page */
	struct vm vms[MAX_VMS];
	int *holder;		/* per chunk of the range: index into vms, or -1 */
	uint8_t *scrubbing;	/* per chunk of the range: released, SCRUB_DONE not seen */
	uint8_t *lost;		/* per chunk of the range: its VM's, but a reset took it */
	unsigned int resets;	/* RESET records seen */
	uint8_t *bitmap;	/* CHUNK_LIST buffer over the whole device */
	size_t bitmap_len;
};

static int reply(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int reply(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, len, fmt, ap);
	va_end(ap);
	return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	*v = strtoul(s, &end, 0);
	return errno || *end || *v > max ? -1 : 0;
}

static int good_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > NAME_MAX_LEN)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') && !strchr("._-", s[i]))
			return 0;
	return 1;
}

static struct vm *find_vm(struct pool *p, const char *name)
{
	for (int i = 0; i < MAX_VMS; i++)
		if (p->vms[i].owner && !strcmp(p->vms[i].name, name))
			return &p->vms[i];
	return NULL;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * The device was reset: check every chunk of the table against the device
 * (see the top of the file) and log what was found.
 */
static void audit(struct pool *p, uint64_t lost_by_driver)
{
	unsigned int owned = 0, lost = 0, freed = 0, pending = 0, other = 0;

	p->resets++;
	for (unsigned int i = 0; i < p->count; i++) {
		unsigned int c = p->first + i, state, owner;
		int ret = cxltrack_chunk_query(p->t, c, &state, &owner);

		if (p->holder[i] >= 0 && !p->lost[i]) {
			unsigned int want = p->vms[p->holder[i]].owner;

			if (!ret && state == CXLT_CHUNK_STATE_OWNED && owner == want) {
				owned++;
				continue;
			}
			/* Its QEMU still maps it: never hand it out while the VM is there. */
			p->lost[i] = 1;
			lost++;
			fprintf(stderr, "cxlt-pool: reset: chunk %u of vm %s (owner %u) not given back: "
				"%s state %u owner %u; kept out of the pool until the vm is released\n", c,
				p->vms[p->holder[i]].name, want, ret ? cxltrack_strerror(ret) : "ok", state,
				owner);
		} else if (p->scrubbing[i]) {
			if (!ret && state == CXLT_CHUNK_STATE_FREE) {
				/* no SCRUB_DONE will come; the driver scrubs it before its next owner */
				p->scrubbing[i] = 0;
				freed++;
			} else {
				pending++;	/* released after the reset: its SCRUB_DONE comes */
			}
		} else if (p->holder[i] < 0 && !ret && state != CXLT_CHUNK_STATE_FREE) {
			other++;	/* not ours: CHUNK_LIST(0) keeps grow away from it */
		}
	}
	fprintf(stderr, "cxlt-pool: device reset %u (the driver lost %" PRIu64 " of our chunks): "
		"%u chunks of running vms OWNED by their owners again, %u lost, %u released chunks "
		"FREE without SCRUB_DONE (back in the pool), %u still scrubbing, %u held by "
		"others\n", p->resets, lost_by_driver, owned, lost, freed, pending, other);
}

/* Take the SCRUB_DONE and RESET records that arrived; wait up to timeout_ms for more. */
static int take_events(struct pool *p, int timeout_ms)
{
	struct cxlt_event ev[32];
	int n = cxltrack_events(p->t, ev, 32, timeout_ms);
	uint64_t reset_lost = 0;
	int reset = 0;

	for (int i = 0; i < n; i++) {
		unsigned int c = ev[i].index;

		/*
		 * The driver's RESET record (flagged CXLT_EVENT_F_RESET) reaches every
		 * file with chunks at stake; the flag on the device's next record, if
		 * that comes to us, is the same reset.
		 */
		if (ev[i].type == CXLT_EV_RESET) {
			reset = 1;
			reset_lost += ev[i].arg;
		}
		if (ev[i].type == CXLT_EV_SCRUB_DONE && c >= p->first && c < p->first + p->count)
			p->scrubbing[c - p->first] = 0;
	}
	/* after the batch: a SCRUB_DONE after the record is one of a release since */
	if (reset)
		audit(p, reset_lost);
	return n;
}

/* Release the n chunks which[] (indices into the range) of owner and wait for their scrub. */
static int release_run(struct pool *p, unsigned int owner, const int *which, unsigned int n,
		       unsigned int *released, double *ms, char *out, size_t len)
{
	double t0 = now_ms();
	unsigned int left;
	int ret, err = 0;

	*released = 0;
	for (unsigned int i = 0; i < n; i++) {
		unsigned int c = (unsigned int)which[i];

		if (p->lost[c]) {
			/* a reset took it from the owner: FREE, the driver scrubs it first */
			p->lost[c] = 0;
			p->holder[c] = -1;
			continue;
		}
		ret = cxltrack_chunk_release(p->t, p->first + c, owner);
		if (ret) {
			/* Still bound to this file: released when the pool exits. */
			reply(out, len, "error chunk %u: release: %s", p->first + c,
			      cxltrack_strerror(ret));
			err = -1;
			continue;
		}
		p->holder[c] = -1;
		p->scrubbing[c] = 1;
		(*released)++;
	}
	for (;;) {
		left = 0;
		for (unsigned int i = 0; i < n; i++)
			left += p->scrubbing[which[i]];
		if (!left || now_ms() - t0 > SCRUB_WAIT_MS)
			break;
		ret = take_events(p, 100);
		if (ret < 0) {
			reply(out, len, "error waiting for SCRUB_DONE: %s", cxltrack_strerror(ret));
			return -1;
		}
	}
	*ms = now_ms() - t0;
	if (left) {
		/* They stay out of the pool until their SCRUB_DONE arrives. */
		reply(out, len, "error %u chunks released but no SCRUB_DONE after %d ms", left,
		      SCRUB_WAIT_MS);
		return -1;
	}
	return err;
}

static unsigned int free_owner(struct pool *p)
{
	unsigned int num = p->t->info.num_chunks;
	uint8_t *used = calloc(CXLT_MAX_OWNER + 1, 1);
	unsigned int o;

	if (!used)
		return 0;
	for (unsigned int c = 0; c < num; c++) {
		unsigned int state, owner;

		if (!cxltrack_chunk_query(p->t, c, &state, &owner) && state != CXLT_CHUNK_STATE_FREE &&
		    owner <= CXLT_MAX_OWNER)
			used[owner] = 1;
	}
	for (int i = 0; i < MAX_VMS; i++)
		used[p->vms[i].owner] = 1;
	for (o = 1; o <= CXLT_MAX_OWNER && used[o]; o++)
		;
	free(used);
	return o <= CXLT_MAX_OWNER ? o : 0;
}

static int do_open(struct pool *p, const char *name, char *out, size_t len)
{
	struct vm *slot = NULL;
	unsigned int owner;

	if (!good_name(name))
		return reply(out, len, "error bad VM name '%s' (1..%d of A-Z a-z 0-9 . _ -)", name,
			     NAME_MAX_LEN);
	if (find_vm(p, name))
		return reply(out, len, "error vm %s is already open", name);
	for (int i = 0; i < MAX_VMS && !slot; i++)
		if (!p->vms[i].owner)
			slot = &p->vms[i];
	if (!slot)
		return reply(out, len, "error %d VMs open, no room for more", MAX_VMS);
	owner = free_owner(p);
	if (!owner)
		return reply(out, len, "error no free owner id");
	snprintf(slot->name, sizeof(slot->name), "%s", name);
	slot->owner = owner;
	return reply(out, len, "ok vm=%s owner=%u", name, owner);
}

static int do_grow(struct pool *p, struct vm *vm, unsigned int n, char *out, size_t len)
{
	unsigned int run = 0, best = 0, start = 0;
	uint64_t count;
	int ret;

	take_events(p, 0);
	ret = cxltrack_chunk_list(p->t, 0, p->bitmap, p->bitmap_len, &count);
	if (ret)
		return reply(out, len, "error chunk list: %s", cxltrack_strerror(ret));
	/* First fit: the lowest run of n chunks FREE on the device and not awaiting a scrub. */
	for (unsigned int i = 0; i < p->count; i++) {
		unsigned int c = p->first + i;
		int usable = (p->bitmap[c / 8] >> (c % 8) & 1) && !p->scrubbing[i] &&
			     p->holder[i] < 0;

		run = usable ? run + 1 : 0;
		if (run > best)
			best = run;
		if (run == n) {
			start = i + 1 - n;
			break;
		}
	}
	if (run != n)
		return reply(out, len, "error no run of %u free chunks (longest %u of %u)", n, best,
			     p->count);
	for (unsigned int i = start; i < start + n; i++) {
		ret = cxltrack_chunk_assign(p->t, p->first + i, vm->owner);
		if (ret) {
			int which[64];
			unsigned int k = 0, released;
			double ms;
			char tmp[LINE_MAX_LEN];

			/* Give back what this request took (one run at most 64 chunks). */
			for (unsigned int j = start; j < i; j++)
				which[k++] = (int)j;
			release_run(p, vm->owner, which, k, &released, &ms, tmp, sizeof(tmp));
			return reply(out, len, "error chunk %u: assign to owner %u: %s", p->first + i,
				     vm->owner, cxltrack_strerror(ret));
		}
		p->holder[i] = (int)(vm - p->vms);
	}
	return reply(out, len, "ok vm=%s owner=%u first=%u count=%u dpa=0x%" PRIx64 " bytes=%" PRIu64,
		     vm->name, vm->owner, p->first + start, n,
		     (uint64_t)(p->first + start) * p->chunk_bytes, (uint64_t)n * p->chunk_bytes);
}

static int do_list(struct pool *p, struct vm *vm, char *out, size_t len)
{
	int idx = (int)(vm - p->vms);
	unsigned int total = 0;
	size_t off;

	off = (size_t)snprintf(out, len, "ok vm=%s owner=%u", vm->name, vm->owner);
	for (unsigned int i = 0; i < p->count; i++)
		total += p->holder[i] == idx;
	off += (size_t)snprintf(out + off, len - off, " chunks=%u runs=", total);
	for (unsigned int i = 0; i < p->count && off < len; i++) {
		unsigned int n = 0;

		if (p->holder[i] != idx || (i && p->holder[i - 1] == idx))
			continue;
		while (i + n < p->count && p->holder[i + n] == idx)
			n++;
		off += (size_t)snprintf(out + off, len - off, "%s%u+%u",
					out[off - 1] == '=' ? "" : ",", p->first + i, n);
	}
	return 0;
}

/*
 * The copy goes to RAM (tmpfs or hugetlbfs) only: the pool runs as root and
 * a request must not name any file of the host; a name of safe characters.
 */
static int good_copy_path(const char *s)
{
	static const char *const dirs[] = { "/dev/shm/", "/dev/hugepages/" };

	if (strlen(s) > LINE_MAX_LEN / 2)
		return 0;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!strncmp(s, dirs[i], strlen(dirs[i])))
			return good_name(s + strlen(dirs[i]));
	return 0;
}

static uint64_t pages_per_chunk(struct pool *p)
{
	return p->chunk_bytes >> p->page_shift;
}

static uint64_t chunk_page(struct pool *p, unsigned int chunk)
{
	return (uint64_t)chunk * pages_per_chunk(p);
}

/* Which of the @n chunks @bits (one per page) has a page of into @redo; how many. */
static unsigned int written_chunks(struct pool *p, const uint8_t *bits, unsigned int n,
				   uint8_t *redo)
{
	uint64_t ppc = pages_per_chunk(p);
	unsigned int written = 0;

	for (unsigned int i = 0; i < n; i++) {
		redo[i] = 0;
		for (uint64_t q = i * ppc; q < (i + 1) * ppc && !redo[i]; q++)
			redo[i] = bits[q / 8] >> (q % 8) & 1;
		written += redo[i];
	}
	return written;
}

/*
 * copy (@final 0) or recopy (@final 1) of a VM's chunks into @path; see the
 * requests at the top.
 */
static int do_copy(struct pool *p, struct vm *vm, unsigned int first, unsigned int n,
		   const char *path, int final, char *out, size_t len)
{
	int idx = (int)(vm - p->vms);
	size_t bytes = (size_t)n * p->chunk_bytes;
	double t0 = now_ms();
	unsigned int passes = 0, copied = 0, max_passes = final ? 1 : 4;
	bool unsettled = false;	/* still written after the last pass */
	const char *what = final ? "recopy" : "copy";
	struct stat st;
	uint8_t *map;
	int fd, ret = 0;

	if (first < p->first || first - p->first + (uint64_t)n > p->count)
		return reply(out, len, "error copy: chunks %u+%u outside the pool", first, n);
	for (unsigned int i = first - p->first; i < first - p->first + n; i++)
		if (p->holder[i] != idx || p->lost[i])
			return reply(out, len, "error copy: chunk %u is not vm %s's", p->first + i,
				     vm->name);
	/* a recopy goes into the copy made before, whole, never a new file */
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (final ? 0 : O_CREAT | O_TRUNC), 0600);
	if (fd < 0)
		return reply(out, len, "error %s: %s: %s", what, path, strerror(errno));
	if (final && (fstat(fd, &st) || (uint64_t)st.st_size != bytes)) {
		close(fd);
		return reply(out, len, "error recopy: %s is not the copy of %u chunks", path, n);
	}
	if (!final && ftruncate(fd, (off_t)bytes)) {
		ret = -errno;
		close(fd);
		return reply(out, len, "error copy: %s: %s", path, strerror(-ret));
	}
	map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return reply(out, len, "error %s: mmap %s: %s", what, path, strerror(errno));
	/*
	 * copy: every chunk once, then again each chunk a write reached during the
	 * pass (its dirty bits, cleared before the first pass): the copy holds every
	 * write the device saw before the last pass's check. recopy: the chunks
	 * written since that check (their bits, still set), once; the caller holds
	 * the VM's vCPUs, so the check after it finds none.
	 */
	size_t per = cxltrack_harvest_bytes(CXLT_HARVEST_DIRTY, pages_per_chunk(p) * n);
	uint8_t *bits = calloc(1, per);
	uint8_t *redo = calloc(n, 1);
	uint64_t set = 0;
	int view = 0;

	if (!bits || !redo)
		ret = -ENOMEM;
	/*
	 * The passes clear the run's dirty bits: through a view of its own, so
	 * that they take no bit another consumer (a migration's dirty log) still
	 * has to see, and no other consumer's clear hides a write from them.
	 */
	if (!ret)
		ret = cxltrack_view_open(p->t, CXLT_HARVEST_DIRTY, chunk_page(p, first),
					 pages_per_chunk(p) * n);
	view = !ret;
	if (!ret)
		ret = cxltrack_harvest(p->t, CXLT_HARVEST_DIRTY, chunk_page(p, first),
				       pages_per_chunk(p) * n, CXLT_HARVEST_F_CLEAR, bits, per, &set);
	if (final)
		written_chunks(p, bits, n, redo);
	else
		memset(redo, 1, n);
	while (!ret && passes < max_passes) {
		passes++;
		for (unsigned int i = 0; i < n && !ret; i++) {
			if (!redo[i])
				continue;
			ret = cxltrack_chunk_copy(p->t, first + i, vm->owner,
						  map + i * p->chunk_bytes, p->chunk_bytes);
			copied++;
		}
		if (!ret)
			ret = cxltrack_harvest(p->t, CXLT_HARVEST_DIRTY, chunk_page(p, first),
					       pages_per_chunk(p) * n, CXLT_HARVEST_F_CLEAR, bits,
					       per, &set);
		if (!ret && !written_chunks(p, bits, n, redo))
			break;
		if (!ret && passes == max_passes) {
			unsettled = true;
			ret = -EAGAIN;
		}
	}
	if (view)
		cxltrack_view_close(p->t, CXLT_HARVEST_DIRTY);
	free(bits);
	free(redo);
	munmap(map, bytes);
	if (ret) {
		unlink(path);
		if (final && unsettled)
			return reply(out, len, "error recopy: the run was written during the final "
				     "pass (the VM's vCPUs were not held)");
		if (unsettled)
			return reply(out, len, "error copy: the run was written during each of "
				     "%u passes (copy it with the VM's vCPUs held)", passes);
		return reply(out, len, "error %s: chunk copy: %s", what, cxltrack_strerror(ret));
	}
	return reply(out, len, "ok vm=%s owner=%u first=%u count=%u bytes=%zu ms=%.1f passes=%u "
		     "chunks=%u path=%s", vm->name, vm->owner, first, n, bytes, now_ms() - t0,
		     passes, copied, path);
}

static int do_release(struct pool *p, struct vm *vm, char *out, size_t len)
{
	int idx = (int)(vm - p->vms);
	unsigned int n = 0, released;
	int *which = calloc(p->count, sizeof(*which));
	double ms = 0;

	unsigned int lost = 0;

	if (!which)
		return reply(out, len, "error out of memory");
	take_events(p, 0);	/* a reset not yet audited */
	for (unsigned int i = 0; i < p->count; i++)
		if (p->holder[i] == idx) {
			which[n++] = (int)i;
			lost += p->lost[i];
		}
	if (!release_run(p, vm->owner, which, n, &released, &ms, out, len)) {
		reply(out, len, "ok vm=%s owner=%u released=%u scrub_ms=%.0f lost=%u", vm->name,
		      vm->owner, released, ms, lost);
		vm->owner = 0;
	}
	free(which);
	return 0;
}

/*
 * Give back part of a VM's chunks while it keeps the rest (the tier shrinks
 * by one of its devices: the guest swapped it off and its QEMU revoked it).
 * Every chunk of FIRST..FIRST+N-1 must be this VM's, else nothing is released.
 */
static int do_shrink(struct pool *p, struct vm *vm, unsigned int first, unsigned int n,
		     char *out, size_t len)
{
	int idx = (int)(vm - p->vms);
	int which[64];
	unsigned int released, lost = 0, left = 0;
	double ms = 0;

	take_events(p, 0);	/* a reset not yet audited */
	if (first < p->first || first - p->first > p->count || n > p->count - (first - p->first))
		return reply(out, len, "error shrink: chunks %u..%u are not all in the pool (%u..%u)",
			     first, first + n - 1, p->first, p->first + p->count - 1);
	for (unsigned int i = 0; i < n; i++) {
		unsigned int c = first - p->first + i;

		if (p->holder[c] != idx)
			return reply(out, len, "error shrink: chunk %u is not vm %s's", first + i,
				     vm->name);
		which[i] = (int)c;
		lost += p->lost[c];
	}
	if (release_run(p, vm->owner, which, n, &released, &ms, out, len))
		return 0;
	for (unsigned int i = 0; i < p->count; i++)
		left += p->holder[i] == idx;
	return reply(out, len, "ok vm=%s owner=%u released=%u scrub_ms=%.0f lost=%u chunks=%u",
		     vm->name, vm->owner, released, ms, lost, left);
}

static void handle(struct pool *p, char *line, char *out, size_t len)
{
	char *argv[5];
	int argc = 0;
	struct vm *vm = NULL;
	unsigned long n, first;
	char *save = NULL;

	for (char *w = strtok_r(line, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
		if (argc == 5) {
			reply(out, len, "error too many words");
			return;
		}
		argv[argc++] = w;
	}
	if (!argc) {
		reply(out, len, "error empty request (ping, open, grow, list, shrink, release)");
		return;
	}
	if (!strcmp(argv[0], "ping") && argc == 1) {
		uint64_t free_count = 0;
		unsigned int vms = 0, lost = 0;

		take_events(p, 0);
		if (!cxltrack_chunk_list(p->t, 0, p->bitmap, p->bitmap_len, &free_count)) {
			free_count = 0;
			for (unsigned int c = p->first; c < p->first + p->count; c++)
				free_count += (p->bitmap[c / 8] >> (c % 8) & 1) &&
					      !p->scrubbing[c - p->first] && p->holder[c - p->first] < 0;
		}
		for (int i = 0; i < MAX_VMS; i++)
			vms += p->vms[i].owner != 0;
		for (unsigned int i = 0; i < p->count; i++)
			lost += p->lost[i];
		reply(out, len, "ok pool first=%u count=%u chunk_bytes=%" PRIu64 " free=%" PRIu64
		      " vms=%u resets=%u lost=%u", p->first, p->count, p->chunk_bytes, free_count, vms,
		      p->resets, lost);
		return;
	}
	if (!strcmp(argv[0], "open") && argc == 2) {
		do_open(p, argv[1], out, len);
		return;
	}
	if ((!strcmp(argv[0], "copy") || !strcmp(argv[0], "recopy")) && argc == 5) {
		vm = find_vm(p, argv[1]);
		if (!vm)
			reply(out, len, "error no vm %s (open it first)", argv[1]);
		else if (parse_uint(argv[2], UINT32_MAX, &first) || parse_uint(argv[3], 64, &n) || !n)
			reply(out, len, "error %s: bad FIRST '%s' or N '%s' (1..64)", argv[0], argv[2],
			      argv[3]);
		else if (!good_copy_path(argv[4]))
			reply(out, len, "error %s: PATH must be /dev/shm/NAME or /dev/hugepages/NAME",
			      argv[0]);
		else
			do_copy(p, vm, (unsigned int)first, (unsigned int)n, argv[4],
				argv[0][0] == 'r', out, len);
		return;
	}
	if (!strcmp(argv[0], "shrink") && argc == 4) {
		vm = find_vm(p, argv[1]);
		if (!vm)
			reply(out, len, "error no vm %s (open it first)", argv[1]);
		else if (parse_uint(argv[2], UINT32_MAX, &first) || parse_uint(argv[3], 64, &n) || !n)
			reply(out, len, "error shrink: bad FIRST '%s' or N '%s' (1..64)", argv[2],
			      argv[3]);
		else
			do_shrink(p, vm, (unsigned int)first, (unsigned int)n, out, len);
		return;
	}
	if ((!strcmp(argv[0], "grow") && argc == 3) ||
	    ((!strcmp(argv[0], "list") || !strcmp(argv[0], "release")) && argc == 2)) {
		vm = find_vm(p, argv[1]);
		if (!vm) {
			reply(out, len, "error no vm %s (open it first)", argv[1]);
			return;
		}
		if (argv[0][0] == 'l')
			do_list(p, vm, out, len);
		else if (argv[0][0] == 'r')
			do_release(p, vm, out, len);
		else if (parse_uint(argv[2], 64, &n) || !n)
			reply(out, len, "error grow: bad chunk count '%s' (1..64)", argv[2]);
		else
			do_grow(p, vm, (unsigned int)n, out, len);
		return;
	}
	reply(out, len, "error bad request '%s' (ping | open VM | grow VM N | list VM | "
	      "copy VM FIRST N PATH | shrink VM FIRST N | release VM)",
	      argv[0]);
}

static int listen_on(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, "cxlt-pool: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || (unlink(path) && errno != ENOENT) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16)) {
		fprintf(stderr, "cxlt-pool: listen on %s: %s\n", path, strerror(errno));
		return -1;
	}
	return fd;
}

static int serve(int argc, char **argv)
{
	const char *dev = NULL;
	unsigned long first, count;
	struct pool p = { 0 };
	int lfd, ret;

	if (argc == 6 && !strcmp(argv[4], "-d"))
		dev = argv[5];
	else if (argc != 4)
		goto usage;
	if (parse_uint(argv[2], 1UL << 30, &first) || parse_uint(argv[3], 1UL << 30, &count) ||
	    !count)
		goto usage;
	ret = cxltrack_open(dev, &p.t);
	if (ret) {
		fprintf(stderr, "cxlt-pool: open %s: %s\n", dev ? dev : "/dev/cxltrack0",
			cxltrack_strerror(ret));
		return 1;
	}
	if (first + count > p.t->info.num_chunks) {
		fprintf(stderr, "cxlt-pool: chunks %lu+%lu beyond the device's %u\n", first, count,
			p.t->info.num_chunks);
		return 2;
	}
	p.first = (unsigned int)first;
	p.count = (unsigned int)count;
	p.chunk_bytes = 1ULL << p.t->info.chunk_shift;
	p.page_shift = p.t->info.page_shift;
	p.bitmap_len = (p.t->info.num_chunks + 7) / 8;
	p.bitmap = calloc(1, p.bitmap_len);
	p.holder = malloc(count * sizeof(*p.holder));
	p.scrubbing = calloc(count, 1);
	p.lost = calloc(count, 1);
	if (!p.bitmap || !p.holder || !p.scrubbing || !p.lost) {
		fprintf(stderr, "cxlt-pool: out of memory\n");
		return 1;
	}
	for (unsigned long i = 0; i < count; i++)
		p.holder[i] = -1;
	signal(SIGPIPE, SIG_IGN);
	lfd = listen_on(argv[1]);
	if (lfd < 0)
		return 1;
	printf("cxlt-pool: serving chunks %lu+%lu of %s (%" PRIu64 " bytes each) on %s, pid %d\n",
	       first, count, p.t->path, p.chunk_bytes, argv[1], (int)getpid());
	fflush(stdout);
	for (;;) {
		struct timeval tv = { 5, 0 };
		char line[LINE_MAX_LEN + 1], logged[LINE_MAX_LEN + 1], out[1024];
		ssize_t got = 0, r;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "cxlt-pool: accept: %s\n", strerror(errno));
			return 1;
		}
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while (got < LINE_MAX_LEN && !memchr(line, '\n', (size_t)got)) {
			r = read(fd, line + got, (size_t)(LINE_MAX_LEN - got));
			if (r <= 0)
				break;
			got += r;
		}
		line[got] = 0;
		if (!memchr(line, '\n', (size_t)got))
			reply(out, sizeof(out), got >= LINE_MAX_LEN ? "error request longer than %d bytes"
				      : "error no complete request line (%d bytes at most)", LINE_MAX_LEN);
		memcpy(logged, line, (size_t)got + 1);
		logged[strcspn(logged, "\r\n")] = 0;
		if (memchr(line, '\n', (size_t)got))
			handle(&p, line, out, sizeof(out));
		fprintf(stderr, "cxlt-pool: %s -> %s\n", logged, out);
		dprintf(fd, "%s\n", out);
		close(fd);
	}
usage:
	fprintf(stderr, "usage: cxlt-pool serve SOCKET FIRST COUNT [-d /dev/cxltrackN]\n");
	return 2;
}

static int ask(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { CLIENT_WAIT_S, 0 };
	char req[LINE_MAX_LEN + 2], ans[2048];
	size_t off = 0;
	ssize_t got = 0, r;
	int fd;

	if (strlen(argv[1]) >= sizeof(a.sun_path)) {
		fprintf(stderr, "cxlt-pool: socket path too long: %s\n", argv[1]);
		return 2;
	}
	strcpy(a.sun_path, argv[1]);
	for (int i = 2; i < argc; i++) {
		size_t n = strlen(argv[i]);

		if (off + n + 2 > sizeof(req)) {
			fprintf(stderr, "cxlt-pool: request longer than %d bytes\n", LINE_MAX_LEN);
			return 2;
		}
		memcpy(req + off, argv[i], n);
		off += n;
		req[off++] = i + 1 < argc ? ' ' : '\n';
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		fprintf(stderr, "cxlt-pool: connect %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (write(fd, req, off) != (ssize_t)off) {
		fprintf(stderr, "cxlt-pool: send: %s\n", strerror(errno));
		return 2;
	}
	while ((r = read(fd, ans + got, sizeof(ans) - 1 - (size_t)got)) > 0)
		got += r;
	ans[got] = 0;
	if (r < 0 || !got) {
		fprintf(stderr, "cxlt-pool: no answer from %s%s%s\n", argv[1], r < 0 ? ": " : "",
			r < 0 ? strerror(errno) : "");
		return 2;
	}
	fputs(ans, stdout);
	return !strncmp(ans, "ok", 2) ? 0 : !strncmp(ans, "error", 5) ? 1 : 2;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "serve"))
		return serve(argc - 1, argv + 1);
	if (argc >= 3 && argv[1][0] != '-')
		return ask(argc, argv);
	fprintf(stderr, "usage: cxlt-pool serve SOCKET FIRST COUNT [-d /dev/cxltrackN]\n"
			"       cxlt-pool SOCKET ping | open VM | grow VM N | list VM | release VM\n");
	return 2;
}
