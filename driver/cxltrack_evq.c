// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack event queue and interrupt (spec section 8).
 *
 * MSI-X vector 0 is signalled on every rising edge of
 * |(INT_STATUS & INT_ENABLE) and after every write to INT_STATUS or
 * INT_ENABLE that leaves it asserted. The threaded handler therefore:
 * drains the queue (EVT_* then EVQ_POP, bounded by the queue depth so a
 * broken device cannot keep it looping), writes the sticky CMD_DONE/ERROR
 * bits it saw back to INT_STATUS (W1C), which re-arms the line: an event
 * that arrived while it ran makes the device signal again.
 *
 * Popped events go to in-kernel notifiers and to the open files they
 * concern: a slot's events (SLOT_FULL, SLOT_TIMEOUT, MERGE_DONE) to the file
 * that owns the slot; a chunk's SCRUB_DONE to the file that released it
 * (named before the release command, matched by owner, taken once); every
 * event to the files subscribed to all of them
 * (CXLT_EVENTS_ALL, monitors). The owner is read under evq_lock; code that takes a slot from
 * its owner drains the queue first, so events are routed to the owner they
 * were produced for.
 */
#include <linux/interrupt.h>
#include <linux/ktime.h>
#include <linux/poll.h>

#include "cxltrack_core.h"

#define CXLT_INT_ALL (CXLT_INT_ENABLE_EVQ_MASK | CXLT_INT_ENABLE_ERROR_MASK)

/* Caller holds evq_mutex (or is probe/remove with the IRQ not requested). */
void cxlt_int_enable(struct cxlt_dev *cd, bool on)
{
	cxlt_wr(cd, CXLT_INT_ENABLE, on ? CXLT_INT_ALL : 0);
}

/*
 * The file an event is about: the slot's owner, or the file that released
 * the chunk (once), or NULL. Caller holds evq_lock.
 */
static struct cxlt_file *cxlt_evq_owner(struct cxlt_dev *cd,
					const struct cxlt_event *ev)
{
	struct cxlt_chunk_bind *b;
	struct cxlt_file *f;

	switch (ev->type) {
	case CXLT_EV_SLOT_FULL:
	case CXLT_EV_SLOT_TIMEOUT:
	case CXLT_EV_MERGE_DONE:
		if (ev->index < CXLT_SLOT_COUNT)
			return cd->slot_owner[ev->index];
		return NULL;
	case CXLT_EV_SCRUB_DONE:
		if (ev->index >= cd->caps.num_chunks)
			return NULL;
		b = &cd->chunk_bind[ev->index];
		if (!b->scrub_for || b->scrub_owner != ev->arg)
			return NULL;
		f = b->scrub_for;
		b->scrub_for = NULL;
		return f;
	default:
		return NULL;
	}
}

/* Route the next SCRUB_DONE(@chunk, @owner) to @f (NULL: to nobody in particular). */
void cxlt_evq_scrub_for(struct cxlt_dev *cd, u32 chunk, u32 owner,
			struct cxlt_file *f)
{
	spin_lock(&cd->evq_lock);
	cd->chunk_bind[chunk].scrub_for = f;
	cd->chunk_bind[chunk].scrub_owner = owner;
	spin_unlock(&cd->evq_lock);
}

/* Put @ev on @f's ring (or flag its overrun); caller holds evq_lock. */
static void cxlt_evq_put(struct cxlt_file *f, const struct cxlt_event *ev)
{
	struct cxlt_event *slot;

	if (f->head - f->tail >= CXLT_FILE_RING) {
		f->overrun = true;
		return;
	}
	slot = &f->ring[f->head % CXLT_FILE_RING];
	*slot = *ev;
	if (f->overrun) {
		slot->flags |= CXLT_EVENT_F_OVERRUN;
		f->overrun = false;
	}
	f->head++;
}

static void cxlt_evq_deliver(struct cxlt_dev *cd, const struct cxlt_event *ev)
{
	struct cxlt_file *f, *owner;

	spin_lock(&cd->evq_lock);
	owner = cxlt_evq_owner(cd, ev);
	list_for_each_entry(f, &cd->files, node)
		if (f->all_events || f == owner)
			cxlt_evq_put(f, ev);
	spin_unlock(&cd->evq_lock);
	blocking_notifier_call_chain(&cd->notifier, ev->type, (void *)ev);
}

/**
 * cxlt_evq_reset_records() - tell files with chunks that the device was reset
 * @cd: tracker; caller holds cmd_lock (the files' reset notes)
 *
 * Each file noted by cxlt_chunks_reset() gets a CXLT_EV_RESET record (from
 * the driver, SEQ 0) whose ARG is the number of its chunks it lost.
 */
void cxlt_evq_reset_records(struct cxlt_dev *cd)
{
	struct cxlt_event ev = {
		.type = CXLT_EV_RESET,
		.flags = CXLT_EVENT_F_RESET,
		.timestamp_ns = ktime_get_ns(),
	};
	struct cxlt_file *f;
	bool woke = false;

	lockdep_assert_held(&cd->cmd_lock);
	spin_lock(&cd->evq_lock);
	list_for_each_entry(f, &cd->files, node) {
		if (!f->reset_note)
			continue;
		ev.arg = f->reset_lost;
		cxlt_evq_put(f, &ev);
		f->reset_note = false;
		f->reset_lost = 0;
		woke = true;
	}
	spin_unlock(&cd->evq_lock);
	if (woke)
		wake_up_interruptible(&cd->wq);
}

/**
 * cxlt_evq_drain() - pop every queued event from the device
 * @cd: tracker; caller holds evq_mutex, the BAR is mapped
 *
 * At most 2^evq_depth_log2 + 1 events are popped per call; a device that
 * reports more (or impossible types) is not trusted further this round.
 */
void cxlt_evq_drain(struct cxlt_dev *cd)
{
	unsigned int limit = (1U << cd->caps.evq_depth_log2) + 1;
	bool woke = false;

	lockdep_assert_held(&cd->evq_mutex);
	if (cd->raw_owner)
		return;
	while (limit--) {
		struct cxlt_event ev = {};
		u32 cnt, h0;
		bool gap;

		cnt = cxlt_rd(cd, CXLT_EVQ_COUNT);
		if (cnt == ~0U || !(cnt & CXLT_EVQ_COUNT_COUNT_MASK))
			break;
		h0 = cxlt_rd(cd, CXLT_EVT_HEAD0);
		ev.type = (h0 & CXLT_EVT_HEAD0_TYPE_MASK) >> CXLT_EVT_HEAD0_TYPE_SHIFT;
		ev.index = (h0 & CXLT_EVT_HEAD0_INDEX_MASK) >> CXLT_EVT_HEAD0_INDEX_SHIFT;
		ev.seq = cxlt_rd(cd, CXLT_EVT_HEAD1);
		ev.arg = cxlt_rd64(cd, CXLT_EVT_ARG_LO);
		cxlt_wr(cd, CXLT_EVQ_POP, CXLT_EVQ_POP_POP_MASK);
		ev.timestamp_ns = ktime_get_ns();
		/*
		 * SEQ is checked for every record the device popped, delivered
		 * or not: a record dropped here for its type is not a gap in
		 * the device's queue, and must not make the next one look like
		 * one.
		 */
		gap = cd->evt_seq_valid && ev.seq != cd->evt_seq + 1;
		cd->evt_seq = ev.seq;
		cd->evt_seq_valid = true;
		if (ev.type < CXLT_EV_SLOT_FULL || ev.type > CXLT_EV_ERROR) {
			dev_warn_ratelimited(&cd->dev, "bad event type %u (seq %u)\n",
					     ev.type, ev.seq);
			cd->evt_flags |= gap ? CXLT_EVENT_F_GAP : 0;
			continue;
		}
		ev.flags = cd->evt_flags;
		cd->evt_flags = 0;
		if (gap) {
			ev.flags |= CXLT_EVENT_F_GAP;
			atomic64_inc(&cd->cnt.events_lost);
		}
		atomic64_inc(&cd->cnt.events);
		if (ev.type == CXLT_EV_ERROR)
			dev_warn_ratelimited(&cd->dev,
					     "device error bit %u at offset 0x%llx\n",
					     ev.index, ev.arg);
		cxlt_evq_deliver(cd, &ev);
		woke = true;
	}
	if (woke)
		wake_up_interruptible(&cd->wq);
}

static irqreturn_t cxlt_irq_thread(int irq, void *data)
{
	struct cxlt_dev *cd = data;
	u32 st;

	atomic64_inc(&cd->cnt.irqs);
	mutex_lock(&cd->evq_mutex);
	if (cd->raw_owner) {
		mutex_unlock(&cd->evq_mutex);
		return IRQ_HANDLED;
	}
	st = cxlt_rd(cd, CXLT_INT_STATUS);
	if (st == ~0U) {
		mutex_unlock(&cd->evq_mutex);
		return IRQ_NONE;
	}
	cxlt_evq_drain(cd);
	if (st & CXLT_INT_STATUS_ERROR_MASK) {
		u32 err = cxlt_rd(cd, CXLT_ERR_STATUS);

		/* Re-arm the sticky error bits so the next error is seen too. */
		if (err != ~0U && err)
			cxlt_wr(cd, CXLT_ERR_STATUS, err);
	}
	/* W1C the sticky bits; the write re-signals if anything is left. */
	cxlt_wr(cd, CXLT_INT_STATUS, st & (CXLT_INT_STATUS_CMD_DONE_MASK |
					   CXLT_INT_STATUS_ERROR_MASK));
	mutex_unlock(&cd->evq_mutex);
	return IRQ_HANDLED;
}

int cxlt_irq_setup(struct cxlt_dev *cd)
{
	struct pci_dev *pdev = cd->pdev;
	int ret;

	ret = pci_alloc_irq_vectors(pdev, 1, CXLT_MSIX_VECTORS, PCI_IRQ_MSIX);
	if (ret < 0) {
		dev_err(&pdev->dev, "no MSI-X vector: %d\n", ret);
		return ret;
	}
	cd->irq = pci_irq_vector(pdev, 0);
	ret = request_threaded_irq(cd->irq, NULL, cxlt_irq_thread, IRQF_ONESHOT,
				   dev_name(&cd->dev), cd);
	if (ret) {
		pci_free_irq_vectors(pdev);
		cd->irq = -1;
		return ret;
	}
	mutex_lock(&cd->evq_mutex);
	/* Clear stale sticky bits and events from before we were bound. */
	cxlt_wr(cd, CXLT_INT_STATUS, CXLT_INT_STATUS_CMD_DONE_MASK |
		CXLT_INT_STATUS_ERROR_MASK);
	cxlt_int_enable(cd, true);
	mutex_unlock(&cd->evq_mutex);
	return 0;
}

void cxlt_irq_teardown(struct cxlt_dev *cd)
{
	if (cd->irq < 0)
		return;
	mutex_lock(&cd->evq_mutex);
	cxlt_int_enable(cd, false);
	mutex_unlock(&cd->evq_mutex);
	free_irq(cd->irq, cd);
	pci_free_irq_vectors(cd->pdev);
	cd->irq = -1;
}

void cxlt_evq_add_file(struct cxlt_dev *cd, struct cxlt_file *f)
{
	spin_lock(&cd->evq_lock);
	list_add_tail(&f->node, &cd->files);
	spin_unlock(&cd->evq_lock);
}

void cxlt_evq_del_file(struct cxlt_dev *cd, struct cxlt_file *f)
{
	u32 c;

	spin_lock(&cd->evq_lock);
	list_del(&f->node);
	/* a later file at the same address must not get this one's events */
	for (c = 0; c < cd->caps.num_chunks; c++)
		if (cd->chunk_bind[c].scrub_for == f)
			cd->chunk_bind[c].scrub_for = NULL;
	spin_unlock(&cd->evq_lock);
}

bool cxlt_evq_pending(struct cxlt_dev *cd, struct cxlt_file *f)
{
	bool ret;

	spin_lock(&cd->evq_lock);
	ret = f->head != f->tail;
	spin_unlock(&cd->evq_lock);
	return ret;
}

/*
 * Copy up to @max records from the front of the file's ring without taking
 * them; return how many. The caller holds f->read_lock, so they stay at the
 * front until cxlt_evq_consume() (the IRQ thread only adds at the back).
 */
int cxlt_evq_peek(struct cxlt_dev *cd, struct cxlt_file *f,
		  struct cxlt_event *out, int max)
{
	unsigned int t;
	int n = 0;

	lockdep_assert_held(&f->read_lock);
	spin_lock(&cd->evq_lock);
	for (t = f->tail; n < max && t != f->head; t++)
		out[n++] = f->ring[t % CXLT_FILE_RING];
	spin_unlock(&cd->evq_lock);
	return n;
}

void cxlt_evq_set_scope(struct cxlt_dev *cd, struct cxlt_file *f, bool all)
{
	spin_lock(&cd->evq_lock);
	f->all_events = all;
	spin_unlock(&cd->evq_lock);
}

/* Take @n records peeked by cxlt_evq_peek() off the ring. */
void cxlt_evq_consume(struct cxlt_dev *cd, struct cxlt_file *f, int n)
{
	lockdep_assert_held(&f->read_lock);
	spin_lock(&cd->evq_lock);
	f->tail += n;
	spin_unlock(&cd->evq_lock);
}

int cxlt_register_notifier(struct cxlt_dev *cd, struct notifier_block *nb)
{
	return blocking_notifier_chain_register(&cd->notifier, nb);
}
EXPORT_SYMBOL_GPL(cxlt_register_notifier);

int cxlt_unregister_notifier(struct cxlt_dev *cd, struct notifier_block *nb)
{
	return blocking_notifier_chain_unregister(&cd->notifier, nb);
}
EXPORT_SYMBOL_GPL(cxlt_unregister_notifier);
