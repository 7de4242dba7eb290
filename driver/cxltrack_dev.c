// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack core: the tracker's lifetime helpers, its configuration and
 * counters, the control registers, and the life of an open file. The
 * character device and sysfs call these; they call neither.
 */
#include <linux/bitmap.h>
#include <linux/pci.h>

#include "cxltrack_core.h"

void cxlt_dev_get(struct cxlt_dev *cd)
{
	get_device(&cd->dev);
}

void cxlt_dev_put(struct cxlt_dev *cd)
{
	put_device(&cd->dev);
}

void cxlt_fill_info(struct cxlt_dev *cd, struct cxlt_info *info)
{
	const struct cxlt_caps *c = &cd->caps;

	memset(info, 0, sizeof(*info));
	info->uapi_version = CXLT_UAPI_VERSION;
	info->hw_version = c->hw_version;
	info->pages = c->pages;
	info->page_shift = c->page_shift;
	info->num_slots = c->num_slots;
	info->hot_bits = c->hot_bits;
	info->evq_depth_log2 = c->evq_depth_log2;
	info->chunk_shift = c->chunk_shift;
	info->num_chunks = c->num_chunks;
	info->disk_bits = c->disk_bits;
	info->block_bits = c->block_bits;
	info->tick_ns = c->tick_ns;
	info->harvest_align = CXLT_HARVEST_ALIGN_PAGES;
	info->id = cd->id;
	info->memdev_devfn = cd->memdev->devfn;
	info->memdev_bus = pci_domain_nr(cd->memdev->bus) << 8 | cd->memdev->bus->number;
	info->dma_addr_bits = cxlt_harvest_dma && cd->dma_buf ? cd->dma_bits : 0;
	info->chunk_copy = !!cd->copy_buf;
}

int cxlt_read_stats(struct cxlt_dev *cd, struct cxlt_stats *s)
{
	int ret;

	memset(s, 0, sizeof(*s));
	ret = cxlt_enter(cd, NULL);
	if (ret)
		return ret;
	s->reads = cxlt_rd64(cd, CXLT_STAT_READS_LO);
	s->writes = cxlt_rd64(cd, CXLT_STAT_WRITES_LO);
	s->decerr = cxlt_rd(cd, CXLT_STAT_DECERR);
	s->bat_inv = cxlt_rd(cd, CXLT_STAT_BAT_INV);
	s->evq_dropped = cxlt_rd(cd, CXLT_EVQ_DROPPED);
	s->err_status = cxlt_rd(cd, CXLT_ERR_STATUS);
	s->err_addr = cxlt_rd(cd, CXLT_ERR_ADDR);
	s->err_count = cxlt_rd(cd, CXLT_ERR_COUNT);
	cxlt_leave(cd);
	s->commands = atomic64_read(&cd->cnt.commands);
	s->cmd_errors = atomic64_read(&cd->cnt.cmd_errors);
	s->cmd_timeouts = atomic64_read(&cd->cnt.cmd_timeouts);
	s->irqs = atomic64_read(&cd->cnt.irqs);
	s->events = atomic64_read(&cd->cnt.events);
	s->events_lost = atomic64_read(&cd->cnt.events_lost);
	s->dma_commands = atomic64_read(&cd->cnt.dma_commands);
	return 0;
}

/* Write the CTRL and SLOT_TIMEOUT shadows to the device. Caller holds cmd_lock. */
void cxlt_write_ctrl(struct cxlt_dev *cd)
{
	cxlt_wr(cd, CXLT_CTRL, cd->ctrl);
	cxlt_wr(cd, CXLT_SLOT_TIMEOUT, cd->slot_timeout);
}

/**
 * cxlt_set_ctrl() - change and/or read the control registers
 * @cd: tracker
 * @c: request (set, clear, flags, slot_timeout); ctrl and cur_timeout out
 *
 * The caller checks permission (a pure query needs none).
 *
 * Return: 0, -EINVAL or an errno of cxlt_enter().
 */
int cxlt_set_ctrl(struct cxlt_dev *cd, struct cxlt_ctrl *c)
{
	u32 set = 0, clr = 0, v;
	int ret;

	if (c->flags & ~CXLT_CTRL_TIMEOUT ||
	    (c->set | c->clear) & ~(CXLT_CTRL_F_TRACK_EN | CXLT_CTRL_F_BAT_INV_EVT) ||
	    c->set & c->clear || c->reserved[0] || c->reserved[1])
		return -EINVAL;
	if (c->set & CXLT_CTRL_F_TRACK_EN)
		set |= CXLT_CTRL_TRACK_EN_MASK;
	if (c->set & CXLT_CTRL_F_BAT_INV_EVT)
		set |= CXLT_CTRL_BAT_INV_EVT_EN_MASK;
	if (c->clear & CXLT_CTRL_F_TRACK_EN)
		clr |= CXLT_CTRL_TRACK_EN_MASK;
	if (c->clear & CXLT_CTRL_F_BAT_INV_EVT)
		clr |= CXLT_CTRL_BAT_INV_EVT_EN_MASK;

	ret = cxlt_enter(cd, NULL);
	if (ret)
		return ret;
	/* A pure query (nothing to set, clear or time) does not write the device. */
	if (set | clr | (c->flags & CXLT_CTRL_TIMEOUT)) {
		/* Writes while tracking is off are not recorded anywhere. */
		if ((cd->ctrl ^ ((cd->ctrl & ~clr) | set)) & CXLT_CTRL_TRACK_EN_MASK)
			cxlt_bits_lost(cd);
		cd->ctrl = (cd->ctrl & ~clr) | set;
		if (c->flags & CXLT_CTRL_TIMEOUT)
			cd->slot_timeout = c->slot_timeout;
		cxlt_write_ctrl(cd);
	}
	c->ctrl = 0;
	v = cxlt_rd(cd, CXLT_CTRL);
	if (v & CXLT_CTRL_TRACK_EN_MASK)
		c->ctrl |= CXLT_CTRL_F_TRACK_EN;
	if (v & CXLT_CTRL_BAT_INV_EVT_EN_MASK)
		c->ctrl |= CXLT_CTRL_F_BAT_INV_EVT;
	c->cur_timeout = cxlt_rd(cd, CXLT_SLOT_TIMEOUT);
	cxlt_leave(cd);
	return 0;
}

/**
 * cxlt_file_open() - a new caller (an opened file)
 * @cd: tracker
 * @f: zeroed file state
 *
 * Return: 0, or -ENODEV once the device is gone.
 */
int cxlt_file_open(struct cxlt_dev *cd, struct cxlt_file *f)
{
	f->cd = cd;
	INIT_LIST_HEAD(&f->node);
	mutex_init(&f->read_lock);
	init_rwsem(&f->view_sem);
	spin_lock_init(&f->grant_lock);
	down_read(&cd->life);
	if (cd->dead) {
		up_read(&cd->life);
		return -ENODEV;
	}
	cxlt_evq_add_file(cd, f);
	up_read(&cd->life);
	return 0;
}

/**
 * cxlt_file_release() - the file is closed: give back what it held
 * @cd: tracker
 * @f: the closing file
 *
 * Raw mode ends, its OPEN slots and its bound chunks are released, its
 * views closed. Not interruptible, so a killed process leaks nothing.
 */
void cxlt_file_release(struct cxlt_dev *cd, struct cxlt_file *f)
{
	cxlt_raw_release(cd, f);
	cxlt_slots_release_file(cd, f);
	cxlt_chunks_release_file(cd, f);
	down_write(&f->view_sem);
	cxlt_views_release_file(cd, f);
	up_write(&f->view_sem);
	cxlt_evq_del_file(cd, f);
	mutex_destroy(&f->read_lock);
}

/**
 * cxlt_state_lost() - the device was reset: forget what it no longer holds
 * @cd: tracker; caller holds cmd_lock and evq_mutex
 *
 * Every slot and chunk is free on the device, and the chunks were freed
 * without a scrub (spec sections 7 and 11), but their memory kept its
 * content. Slot ownership is forgotten; every chunk bound to a file is
 * assigned to its owner again and stays bound, unless the driver is in raw
 * mode (it may not command the device then) or the restore fails; every
 * other chunk is marked unscrubbed (the next CHUNK_ASSIGN of each scrubs it
 * first), see cxlt_chunks_reset(). The next event record is flagged, files
 * that had chunks bound get a CXLT_EV_RESET record, in-kernel users are
 * told.
 */
void cxlt_state_lost(struct cxlt_dev *cd)
{
	lockdep_assert_held(&cd->cmd_lock);
	lockdep_assert_held(&cd->evq_mutex);
	memset(cd->slot_owner, 0, sizeof(cd->slot_owner));
	bitmap_zero(cd->slot_orphan, CXLT_SLOT_COUNT);
	/* the restore's commands learn the sequence the reset started again */
	cd->cmd_seq_valid = false;
	cd->evt_seq_valid = false;
	cd->evt_flags |= CXLT_EVENT_F_RESET;
	cxlt_chunks_reset(cd, !cd->raw_owner);
	blocking_notifier_call_chain(&cd->notifier, CXLT_NOTIFY_RESET, NULL);
}
