// SPDX-License-Identifier: Apache-2.0
/*
 * wp-log: a dirty log by write protection, the way KVM logs a guest's writes
 * without a tracking device, here in user space over the same mapping: every
 * logged page is read-only, its first write faults, the fault handler marks
 * the page dirty and makes it writable again. Taking the log swaps each word
 * of the bitmap with zero and write-protects the pages it held before they
 * are sent, so a write after the swap either lands before the send (and is
 * sent) or faults and marks the page for the next round (as
 * kvm_get_dirty_log_protect() does: get and clear, then write-protect).
 *
 * One log per process (the fault handler finds it through a static pointer).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "wp-log.h"

static struct wp_log *active;
static struct sigaction old_segv;

static void wp_fault(int sig, siginfo_t *si, void *uc)
{
	struct wp_log *l = active;
	uintptr_t a = (uintptr_t)si->si_addr, base;

	if (l) {
		base = (uintptr_t)l->base;
		if (a >= base && a < base + l->pages * l->page_size) {
			uint64_t p = (a - base) / l->page_size;

			/*
			 * Writable first, marked second (KVM's order too): a take
			 * that runs in between either takes the mark and
			 * protects the page again, or leaves the mark for the
			 * next round; never a writable page without a mark.
			 */
			if (mprotect((void *)(base + p * l->page_size), l->page_size,
				     PROT_READ | PROT_WRITE) == 0) {
				atomic_fetch_or(&l->bits[p / 64], 1ULL << (p % 64));
				atomic_fetch_add(&l->faults, 1);
				return;
			}
		}
	}
	/* not ours (or mprotect failed): the default action, i.e. a crash */
	sigaction(SIGSEGV, &old_segv, NULL);
	(void)sig;
	(void)uc;
}

int wp_log_start(struct wp_log *l, volatile uint8_t *base, uint64_t pages, uint64_t page_size)
{
	struct sigaction sa;

	if (active)
		return -EBUSY;
	memset(l, 0, sizeof(*l));
	l->base = base;
	l->pages = pages;
	l->page_size = page_size;
	l->bits = calloc((pages + 63) / 64, sizeof(*l->bits));
	if (!l->bits)
		return -ENOMEM;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = wp_fault;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	active = l;
	if (sigaction(SIGSEGV, &sa, &old_segv) ||
	    mprotect((void *)base, pages * page_size, PROT_READ)) {
		int err = -errno;

		active = NULL;
		free(l->bits);
		return err;
	}
	return 0;
}

int wp_log_take(struct wp_log *l, uint8_t *bitmap, uint64_t *nr)
{
	uint64_t n = 0;

	memset(bitmap, 0, (l->pages + 7) / 8);
	for (uint64_t w = 0; w < (l->pages + 63) / 64; w++) {
		uint64_t bits = atomic_exchange(&l->bits[w], 0);

		while (bits) {
			uint64_t p = w * 64 + __builtin_ctzll(bits);

			bits &= bits - 1;
			if (mprotect((void *)(l->base + p * l->page_size), l->page_size, PROT_READ))
				return -errno;
			bitmap[p / 8] |= 1 << (p % 8);
			n++;
		}
	}
	*nr = n;
	return 0;
}

void wp_log_stop(struct wp_log *l)
{
	mprotect((void *)l->base, l->pages * l->page_size, PROT_READ | PROT_WRITE);
	sigaction(SIGSEGV, &old_segv, NULL);
	active = NULL;
	free(l->bits);
	l->bits = NULL;
}
