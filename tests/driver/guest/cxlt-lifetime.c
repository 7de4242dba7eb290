// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-lifetime: a caller of every ioctl, and callers blocked in read(),
 * poll() and epoll_wait(), each in its own process with its own open file,
 * running until SECONDS are over, while the test unbinds, removes or resets
 * the device under them (issue 11: "unbind/remove/reset during each ioctl
 * and during a blocking read/epoll").
 *
 *   cxlt-lifetime DAX SECONDS
 *
 * Prints "running N callers" once every caller has made a first call, then,
 * per caller, one line
 *
 *   caller NAME calls N recent R end END errors E=COUNT,...
 *
 * where R counts the calls of the last two seconds (a caller that still works
 * after a reset has R > 0), END is ENODEV (a call answered -ENODEV, or
 * poll/epoll reported the hang-up), "deadline" (still running when SECONDS
 * were over) or a failure (an unexpected answer: "EIO", a read that
 * returned 0, ...), and the errors are the other answers it got on the way.
 * A caller that does not end within GRACE_S of the deadline is killed and
 * reported "hung"; the exit status is 1 then. The test judges the lines.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "libcxltrack.h"
#include "cxltrack_regs.h"

#define GRACE_S		10
#define RECENT_S	2.0
#define CHUNK_OWNER	4242
#define MAX_ERRNO	160

static struct cxltrack *t;
static struct cxltrack_dax dax;
static double deadline;
static volatile sig_atomic_t stopped;
static uint64_t calls, recent, errors[MAX_ERRNO];
static int ready_fd = -1;	/* write end of the "first call made" pipe */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *err_name(int err)
{
	static char buf[16];

	switch (err) {
	case ENODEV: return "ENODEV";
	case EIO: return "EIO";
	case EINTR: return "EINTR";
	case EBUSY: return "EBUSY";
	case ENOSPC: return "ENOSPC";
	case EINVAL: return "EINVAL";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ENXIO: return "ENXIO";
	case EFAULT: return "EFAULT";
	case EAGAIN: return "EAGAIN";
	case ETIMEDOUT: return "ETIMEDOUT";
	default:
		snprintf(buf, sizeof(buf), "E%d", err);
		return buf;
	}
}

/* The caller's line, then its exit. */
static void __attribute__((noreturn)) finish(const char *name, const char *end)
{
	char list[512] = "";
	size_t n = 0;

	for (int e = 1; e < MAX_ERRNO; e++)
		if (errors[e] && n < sizeof(list) - 32)
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s=%" PRIu64,
					      n ? "," : "", err_name(e), errors[e]);
	printf("caller %s calls %" PRIu64 " recent %" PRIu64 " end %s errors %s\n", name, calls,
	       recent, end, n ? list : "none");
	fflush(stdout);
	_exit(0);
}

/*
 * One answer: 0 (or a positive count) is a call made; -ENODEV ends the
 * caller; -EIO is never a documented answer here; the rest is counted.
 */
static void answer(const char *name, int ret)
{
	if (ret >= 0) {
		if (!calls++ && ready_fd >= 0) {
			if (write(ready_fd, "", 1) != 1)
				_exit(2);
			close(ready_fd);
			ready_fd = -1;
		}
		if (now_s() > deadline - RECENT_S)
			recent++;
		return;
	}
	if (ret == -ENODEV)
		finish(name, "ENODEV");
	if (ret == -EIO)
		finish(name, "EIO");
	errors[-ret < MAX_ERRNO ? -ret : 0]++;
}

static int ioc(unsigned long req, void *arg)
{
	return ioctl(t->fd, req, arg) ? -errno : 0;
}

static uint64_t first_page(void)
{
	return dax.dpa_base >> t->info.page_shift;
}

/* --- the callers: one step each ----------------------------------------------- */
static void c_info(void)
{
	struct cxlt_info i = { 0 };

	answer("info", ioc(CXLT_IOC_INFO, &i));
}

static void c_harvest(void)
{
	uint8_t bm[64];
	uint64_t nr;

	answer("harvest", cxltrack_harvest(t, CXLT_HARVEST_DIRTY, first_page(), 512, 0, bm,
					   sizeof(bm), &nr));
}

static void c_harvest_clear(void)
{
	uint8_t bm[64];
	uint64_t nr;

	answer("harvest-clear", cxltrack_harvest(t, CXLT_HARVEST_ACCESSED, first_page() + 512,
						 512, CXLT_HARVEST_F_CLEAR, bm, sizeof(bm), &nr));
}

static void c_bat(void)
{
	uint64_t p = first_page() + 1024, blk;
	uint32_t disk;

	answer("bat", cxltrack_bat_set(t, p, calls, 1));
	answer("bat", cxltrack_bat_get(t, p, &blk, &disk));
	answer("bat", cxltrack_bat_discard(t, p, &blk, &disk));
}

static void c_slot(void)
{
	uint8_t page[4096];
	struct cxlt_slot_query q;
	int s = cxltrack_slot_alloc(t, calls, 0);

	answer("slot", s);
	if (s < 0)
		return;
	memset(page, (int)calls, sizeof(page));
	answer("slot", cxltrack_slot_write(t, (unsigned int)s, 0, page, 512));
	answer("slot", cxltrack_slot_query(t, (unsigned int)s, &q, NULL));
	answer("slot", cxltrack_slot_release(t, (unsigned int)s));
}

static void c_merge(void)
{
	uint8_t bytes[64];
	uint64_t vb;
	int s = cxltrack_slot_alloc(t, calls, 0);

	answer("merge", s);
	if (s < 0)
		return;
	memset(bytes, (int)calls, sizeof(bytes));
	answer("merge", cxltrack_slot_write(t, (unsigned int)s, 64, bytes, sizeof(bytes)));
	answer("merge", cxltrack_slot_merge(t, (unsigned int)s, first_page() + 1025, &vb));
}

static void c_chunk(void)
{
	unsigned int c = t->info.num_chunks - 1, state, owner;
	int ret = cxltrack_chunk_assign(t, c, CHUNK_OWNER);

	/* EBUSY while the device still scrubs the last release */
	answer("chunk", ret);
	answer("chunk", cxltrack_chunk_query(t, c, &state, &owner));
	if (!ret)
		answer("chunk", cxltrack_chunk_release(t, c, CHUNK_OWNER));
}

static void c_chunk_list(void)
{
	uint8_t bm[64];
	uint64_t n;

	answer("chunk-list", cxltrack_chunk_list(t, CHUNK_OWNER, bm, sizeof(bm), &n));
}

static void c_stats(void)
{
	struct cxlt_stats s;

	answer("stats", cxltrack_stats(t, &s));
}

static void c_ctrl(void)
{
	struct cxlt_ctrl c = { 0 };

	answer("ctrl", cxltrack_ctrl(t, &c));
}

static void c_event_scope(void)
{
	answer("event-scope", cxltrack_event_scope(t, calls % 2 ? CXLT_EVENTS_ALL
							       : CXLT_EVENTS_OWN));
}

static void c_addr_page(void)
{
	uint64_t p;

	answer("addr-page", cxltrack_addr_page(t, dax.map + 4096, &p));
}

static void c_bat_set_addrs(void)
{
	struct cxlt_bat_addr e[4];
	size_t done;

	for (int i = 0; i < 4; i++)
		e[i] = (struct cxlt_bat_addr){ .addr = (uintptr_t)(dax.map + (2048 + i) * 4096ul),
					       .block = calls + i, .disk = 2 };
	answer("bat-set-addrs", cxltrack_bat_set_addrs(t, e, 4, &done));
}

/* Blocked in read() with no event to come. */
static void c_read_idle(void)
{
	struct cxlt_event ev;
	ssize_t n;

	answer("read-idle", 0);	/* blocked from here on: the one "call" */
	n = read(t->fd, &ev, sizeof(ev));
	if (n < 0 && errno == EINTR && stopped)
		finish("read-idle", "deadline");
	if (n < 0)
		answer("read-idle", -errno);
	finish("read-idle", n == 0 ? "read-returned-0" : "read-returned-an-event");
}

static void c_poll_idle(void)
{
	struct pollfd p = { .fd = t->fd, .events = POLLIN };
	int r;

	answer("poll-idle", 0);
	r = poll(&p, 1, -1);
	if (r < 0 && errno == EINTR && stopped)
		finish("poll-idle", "deadline");
	if (r == 1 && (p.revents & (POLLHUP | POLLERR)))
		finish("poll-idle", "ENODEV");
	finish("poll-idle", r < 0 ? err_name(errno) : "poll-woke-without-hang-up");
}

static void c_epoll_idle(void)
{
	struct epoll_event e = { .events = EPOLLIN }, got;
	int ep = epoll_create1(0), r;

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, t->fd, &e))
		finish("epoll-idle", "epoll-setup-failed");
	answer("epoll-idle", 0);
	r = epoll_wait(ep, &got, 1, -1);
	if (r < 0 && errno == EINTR && stopped)
		finish("epoll-idle", "deadline");
	if (r == 1 && (got.events & (EPOLLHUP | EPOLLERR)))
		finish("epoll-idle", "ENODEV");
	finish("epoll-idle", r < 0 ? err_name(errno) : "epoll-woke-without-hang-up");
}

/*
 * Events that keep coming: fill an own slot (SLOT_FULL), wait for it with
 * epoll_wait() and read it, release the slot.
 */
static void c_events(void)
{
	static int ep = -1;
	struct epoll_event e = { .events = EPOLLIN }, got;
	struct cxlt_event ev[8];
	uint8_t page[4096];
	int s, r;

	if (ep < 0) {
		ep = epoll_create1(0);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, t->fd, &e))
			finish("events", "epoll-setup-failed");
	}
	s = cxltrack_slot_alloc(t, calls, 0);
	answer("events", s);
	if (s < 0)
		return;
	memset(page, 0xe5, sizeof(page));
	answer("events", cxltrack_slot_write(t, (unsigned int)s, 0, page, sizeof(page)));
	r = epoll_wait(ep, &got, 1, 1000);
	if (r == 1 && (got.events & (EPOLLHUP | EPOLLERR)))
		finish("events", "ENODEV");
	if (r == 1) {
		ssize_t n = read(t->fd, ev, sizeof(ev));

		answer("events", n < 0 ? -errno : n == 0 ? -ENODATA : 0);
	} else {
		/* a reset may swallow the SLOT_FULL of a slot it freed */
		answer("events", r < 0 ? -errno : -ETIMEDOUT);
	}
	answer("events", cxltrack_slot_release(t, (unsigned int)s));
}

static const struct caller {
	const char *name;
	void (*step)(void);
	int blocks;	/* waits in one call until the deadline's signal or the hang-up */
} callers[] = {
	{ "info", c_info, 0 }, { "harvest", c_harvest, 0 }, { "harvest-clear", c_harvest_clear, 0 },
	{ "bat", c_bat, 0 }, { "slot", c_slot, 0 }, { "merge", c_merge, 0 }, { "chunk", c_chunk, 0 },
	{ "chunk-list", c_chunk_list, 0 }, { "stats", c_stats, 0 }, { "ctrl", c_ctrl, 0 },
	{ "event-scope", c_event_scope, 0 }, { "addr-page", c_addr_page, 0 },
	{ "bat-set-addrs", c_bat_set_addrs, 0 }, { "read-idle", c_read_idle, 1 },
	{ "poll-idle", c_poll_idle, 1 }, { "epoll-idle", c_epoll_idle, 1 },
	{ "events", c_events, 0 },
};
#define NCALLERS (sizeof(callers) / sizeof(callers[0]))

static void on_stop(int sig)
{
	(void)sig;
	stopped = 1;
}

static void run_caller(const struct caller *c)
{
	struct sigaction sa = { .sa_handler = on_stop };	/* no SA_RESTART: EINTR */
	int ret;

	sigaction(SIGUSR1, &sa, NULL);
	ret = cxltrack_open(NULL, &t);
	if (ret)
		finish(c->name, ret == -ENODEV ? "ENODEV" : "open-failed");
	while (!stopped && now_s() < deadline)
		c->step();
	finish(c->name, "deadline");
}

int main(int argc, char **argv)
{
	pid_t pids[NCALLERS];
	int ready[2], hung = 0;
	size_t left = NCALLERS;
	char b;

	if (argc != 3) {
		fprintf(stderr, "usage: cxlt-lifetime DAX SECONDS\n");
		return 2;
	}
	if (cxltrack_dax_open(argv[1], 16ul << 20, &dax)) {
		fprintf(stderr, "cxlt-lifetime: cannot map %s\n", argv[1]);
		return 2;
	}
	deadline = now_s() + strtod(argv[2], NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipe(ready))
		return 2;
	for (size_t i = 0; i < NCALLERS; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return 2;
		if (!pids[i]) {
			close(ready[0]);
			ready_fd = ready[1];
			run_caller(&callers[i]);
		}
	}
	close(ready[1]);
	for (size_t i = 0; i < NCALLERS; i++)
		if (read(ready[0], &b, 1) != 1)
			break;	/* a caller ended before its first call: its line says why */
	printf("running %zu callers\n", NCALLERS);
	while (now_s() < deadline)
		usleep(100000);
	for (size_t i = 0; i < NCALLERS; i++)
		if (callers[i].blocks)
			kill(pids[i], SIGUSR1);
	deadline += GRACE_S;
	while (left && now_s() < deadline) {
		pid_t p = waitpid(-1, NULL, WNOHANG);

		if (p > 0) {
			for (size_t i = 0; i < NCALLERS; i++)
				if (pids[i] == p)
					pids[i] = 0;
			left--;
		} else {
			usleep(50000);
		}
	}
	for (size_t i = 0; i < NCALLERS; i++) {
		if (!pids[i])
			continue;
		printf("caller %s calls ? recent ? end hung errors ?\n", callers[i].name);
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
		hung = 1;
	}
	printf("done\n");
	return hung;
}
