// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack write-buffer merge slots (spec section 6).
 *
 * Window writes go through the BAR's uncached mapping (pci_iomap), so every
 * store reaches the device at once with exact byte enables, in program
 * order before the CMD_OP write that launches SLOT_MERGE (section 9 rule 4).
 *
 * Ownership: a slot allocated through a file belongs to it (slot_owner[],
 * under cmd_lock) unless allocated with CXLT_SLOT_F_KEEP; other files get
 * -EPERM; closing the file releases its OPEN slots. The owner entry is
 * cleared when the slot is merged or released and after a reset.
 */
#include <linux/capability.h>
#include <linux/unaligned.h>
#include <asm/cacheflush.h>

#include "cxltrack_core.h"

static int cxlt_slot_check(struct cxlt_dev *cd, struct cxlt_file *f, u32 slot)
{
	lockdep_assert_held(&cd->cmd_lock);
	if (slot >= cd->caps.num_slots)
		return -ERANGE;
	if (cd->slot_owner[slot] && cd->slot_owner[slot] != f)
		return -EPERM;
	/* Device-wide (KEEP) and free slots: in-kernel users and admins. */
	if (!cd->slot_owner[slot] && f && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	return 0;
}

/*
 * The slot leaves its owner (merged or released). Its events are routed to
 * the owner (cxlt_evq_deliver()): deliver those the device produced so far
 * (MERGE_DONE is queued before the merge command completes) before the
 * owner is forgotten. Caller holds cmd_lock.
 */
static void cxlt_slot_disown(struct cxlt_dev *cd, u32 slot)
{
	lockdep_assert_held(&cd->cmd_lock);
	mutex_lock(&cd->evq_mutex);
	cxlt_evq_drain(cd);
	spin_lock(&cd->evq_lock);
	cd->slot_owner[slot] = NULL;
	spin_unlock(&cd->evq_lock);
	mutex_unlock(&cd->evq_mutex);
}

/* SLOT_QUERY; caller holds cmd_lock. Validates the device's answer. */
static int cxlt_slot_query_locked(struct cxlt_dev *cd, u32 slot, u32 *state,
				  u32 *full, u32 *valid, u64 *tag)
{
	struct cxlt_cmd_res res;
	int ret;

	ret = cxlt_cmd(cd, CXLT_OP_SLOT_QUERY, 0, slot, 0, 0, &res);
	if (ret)
		return ret;
	*state = (res.r0 & CXLT_LAYOUT_SLOT_QUERY_RESULT0_STATE_MASK) >>
		 CXLT_LAYOUT_SLOT_QUERY_RESULT0_STATE_SHIFT;
	*full = !!(res.r0 & CXLT_LAYOUT_SLOT_QUERY_RESULT0_FULL_MASK);
	*valid = (res.r0 & CXLT_LAYOUT_SLOT_QUERY_RESULT0_VALID_BYTES_MASK) >>
		 CXLT_LAYOUT_SLOT_QUERY_RESULT0_VALID_BYTES_SHIFT;
	*tag = res.r1;
	if (*state > CXLT_SLOT_STATE_MERGING || *valid > CXLT_SLOT_BYTES ||
	    *full != (*valid == CXLT_SLOT_BYTES)) {
		dev_err_ratelimited(&cd->dev, "slot %u: impossible query answer %#llx\n",
				    slot, res.r0);
		return -EIO;
	}
	return 0;
}

/* Slots @f owns; caller holds cmd_lock. */
static unsigned int cxlt_slots_of(struct cxlt_dev *cd, struct cxlt_file *f)
{
	unsigned int i, n = 0;

	lockdep_assert_held(&cd->cmd_lock);
	for (i = 0; i < CXLT_SLOT_COUNT; i++)
		n += cd->slot_owner[i] == f;
	return n;
}

int cxlt_do_slot_alloc(struct cxlt_dev *cd, struct cxlt_file *f, u64 tag,
		       u32 flags, u32 *slot)
{
	struct cxlt_cmd_res res;
	int ret;

	if (flags & ~CXLT_SLOT_F_KEEP)
		return -EINVAL;
	ret = cxlt_enter(cd, f);
	if (ret)
		return ret;
	/* A tenant must not take every slot of the device. */
	if (f && !capable(CAP_SYS_ADMIN) &&
	    cxlt_slots_of(cd, f) >= READ_ONCE(cxlt_tenant_slots)) {
		cxlt_leave(cd);
		return -ENOSPC;
	}
	ret = cxlt_cmd(cd, CXLT_OP_SLOT_ALLOC, 0, tag, 0, 0, &res);
	if (!ret && res.r0 >= cd->caps.num_slots) {
		dev_err_ratelimited(&cd->dev, "SLOT_ALLOC returned slot %llu\n", res.r0);
		ret = -EIO;
	}
	if (!ret) {
		*slot = res.r0;
		cd->slot_owner[res.r0] = (flags & CXLT_SLOT_F_KEEP) ? NULL : f;
		cd->slot_tag[res.r0] = tag;
	}
	cxlt_leave(cd);
	return ret;
}

/* Naturally aligned stores of up to 8 bytes, as the spec allows. */
static void cxlt_slot_copy(void __iomem *win, u32 offset, const u8 *buf, u32 len)
{
	u32 i = 0;

	while (i < len) {
		u32 a = offset + i;

		if (!(a & 7) && len - i >= 8) {
			writeq(get_unaligned((const u64 *)(buf + i)), win + a);
			i += 8;
		} else if (!(a & 3) && len - i >= 4) {
			writel(get_unaligned((const u32 *)(buf + i)), win + a);
			i += 4;
		} else if (!(a & 1) && len - i >= 2) {
			writew(get_unaligned((const u16 *)(buf + i)), win + a);
			i += 2;
		} else {
			writeb(buf[i], win + a);
			i += 1;
		}
	}
}

int cxlt_do_slot_write(struct cxlt_dev *cd, struct cxlt_file *f, u32 slot,
		       u32 offset, const void *buf, u32 len)
{
	u32 state, full, valid;
	u64 tag;
	int ret;

	if (!len || offset >= CXLT_SLOT_BYTES || len > CXLT_SLOT_BYTES - offset)
		return -EINVAL;
	ret = cxlt_enter(cd, f);
	if (ret)
		return ret;
	ret = cxlt_slot_check(cd, f, slot);
	if (ret)
		goto out;
	/*
	 * The device refuses window writes to a slot that is not OPEN (and
	 * flags ERR_STATUS.SLOT_WRITE); check first so the caller learns it.
	 * Under cmd_lock nobody can merge or release the slot in between.
	 */
	ret = cxlt_slot_query_locked(cd, slot, &state, &full, &valid, &tag);
	if (ret)
		goto out;
	if (state != CXLT_SLOT_STATE_OPEN) {
		ret = -ENOENT;
		goto out;
	}
	cxlt_slot_copy(cd->regs + CXLT_SLOT_N(slot), offset, buf, len);
out:
	cxlt_leave(cd);
	return ret;
}

int cxlt_do_slot_merge(struct cxlt_dev *cd, struct cxlt_file *f, u32 slot,
		       u64 page, void *kaddr, u64 *valid)
{
	size_t psize = 1UL << cd->caps.page_shift;
	struct cxlt_cmd_res res;
	int ret;

	if (page >= cd->caps.pages)
		return -ERANGE;
	/* Rule 6: the old contents must have reached the page first. */
	if (kaddr)
		clflush_cache_range(kaddr, psize);
	ret = cxlt_enter(cd, f);
	if (ret)
		return ret;
	ret = cxlt_slot_check(cd, f, slot);
	if (ret)
		goto out;
	ret = cxlt_cmd(cd, CXLT_OP_SLOT_MERGE, 0, slot, page, 0, &res);
	if (!ret) {
		cxlt_slot_disown(cd, slot);
		if (res.r0 > CXLT_SLOT_BYTES) {
			dev_err_ratelimited(&cd->dev, "SLOT_MERGE: %llu valid bytes\n",
					    res.r0);
			ret = -EIO;
		}
		*valid = res.r0;
	}
out:
	cxlt_leave(cd);
	/* ... and the merge wrote memory under any cached copy. */
	if (!ret && kaddr)
		clflush_cache_range(kaddr, psize);
	return ret;
}

int cxlt_do_slot_release(struct cxlt_dev *cd, struct cxlt_file *f, u32 slot)
{
	struct cxlt_cmd_res res;
	int ret;

	ret = cxlt_enter(cd, f);
	if (ret)
		return ret;
	ret = cxlt_slot_check(cd, f, slot);
	if (ret)
		goto out;
	ret = cxlt_cmd(cd, CXLT_OP_SLOT_RELEASE, 0, slot, 0, 0, &res);
	if (!ret)
		cxlt_slot_disown(cd, slot);
out:
	cxlt_leave(cd);
	return ret;
}

int cxlt_do_slot_query(struct cxlt_dev *cd, struct cxlt_file *f,
		       struct cxlt_slot_query *q, u8 *mask)
{
	int ret;

	ret = cxlt_enter(cd, f);
	if (ret)
		return ret;
	if (q->slot >= cd->caps.num_slots) {
		ret = -ERANGE;
		goto out;
	}
	ret = cxlt_slot_query_locked(cd, q->slot, &q->state, &q->full,
				     &q->valid_bytes, &q->tag);
	if (ret)
		goto out;
	q->owned = f && cd->slot_owner[q->slot] == f;
	if (mask) {
		u64 bits;

		cxlt_read_window(cd, mask, CXLT_MASK_BYTES);
		bits = 0;
		for (ret = 0; ret < CXLT_MASK_BYTES; ret++)
			bits += hweight8(mask[ret]);
		ret = 0;
		if (bits != q->valid_bytes) {
			dev_err_ratelimited(&cd->dev, "slot %u: mask has %llu bits, count %u\n",
					    q->slot, bits, q->valid_bytes);
			ret = -EIO;
		}
	}
out:
	cxlt_leave(cd);
	return ret;
}

/*
 * The file is closing: release the OPEN slots it owns. Not interruptible,
 * so a killed process does not leak slots. While another file holds raw
 * mode the device cannot be commanded: the slots are marked orphans and
 * released when raw mode ends (cxlt_slots_recheck()). A dead device needs
 * nothing more than the pointers dropped.
 */
void cxlt_slots_release_file(struct cxlt_dev *cd, struct cxlt_file *f)
{
	struct cxlt_cmd_res res;
	bool hw;
	int ret;
	u32 i;

	cxlt_life_get(cd, false);
	mutex_lock(&cd->cmd_lock);
	hw = !cd->dead && !cd->raw_owner;
	for (i = 0; i < CXLT_SLOT_COUNT; i++) {
		if (cd->slot_owner[i] != f)
			continue;
		cd->slot_owner[i] = NULL;
		if (!hw) {
			if (!cd->dead)
				set_bit(i, cd->slot_orphan);
			continue;
		}
		/* -ENOENT: status STATE, the slot was already free. */
		ret = cxlt_cmd(cd, CXLT_OP_SLOT_RELEASE, 0, i, 0, 0, &res);
		if (ret && ret != -ENOENT)
			dev_warn(&cd->dev, "could not release slot %u of a closed file\n", i);
	}
	mutex_unlock(&cd->cmd_lock);
	up_read(&cd->life);
}

/**
 * cxlt_slots_recheck() - keep only the slot owners the device still agrees with
 * @cd: tracker; caller holds cmd_lock, raw mode has just ended
 *
 * A raw-mode user may have merged, released or re-allocated any slot. A
 * slot the device still has OPEN with the tag its owner allocated it with
 * stays that owner's (an open file must not lose its slot to any other
 * opener); any other answer drops the owner. A slot whose file closed
 * during raw mode (an orphan) is released now if the device still has it
 * OPEN with that file's tag; otherwise the raw user took it over, and it
 * stays the device-wide slot it has become.
 */
void cxlt_slots_recheck(struct cxlt_dev *cd)
{
	struct cxlt_cmd_res res;
	u32 i, state, full, valid;
	u64 tag;

	lockdep_assert_held(&cd->cmd_lock);
	for_each_set_bit(i, cd->slot_orphan, CXLT_SLOT_COUNT) {
		clear_bit(i, cd->slot_orphan);
		if (i >= cd->caps.num_slots || cd->slot_owner[i] ||
		    cxlt_slot_query_locked(cd, i, &state, &full, &valid, &tag) ||
		    state != CXLT_SLOT_STATE_OPEN || tag != cd->slot_tag[i])
			continue;
		if (cxlt_cmd(cd, CXLT_OP_SLOT_RELEASE, 0, i, 0, 0, &res))
			dev_warn(&cd->dev, "could not release slot %u of a file closed in raw mode\n",
				 i);
	}
	for (i = 0; i < CXLT_SLOT_COUNT; i++) {
		if (!cd->slot_owner[i])
			continue;
		if (i >= cd->caps.num_slots ||
		    cxlt_slot_query_locked(cd, i, &state, &full, &valid, &tag) ||
		    state != CXLT_SLOT_STATE_OPEN || tag != cd->slot_tag[i])
			cd->slot_owner[i] = NULL;
	}
}

/*
 * Serve a read from a slot (a guest load from a page whose writes the slot
 * collects). Only bytes whose mask bit is set were written; the window reads
 * 0 for the others, which must never reach a reader as data, so the mask is
 * checked first and any missing byte fails the whole read.
 */
static int cxlt_slot_read_locked(struct cxlt_dev *cd, u32 slot, u32 offset,
				 u8 *buf, u32 len)
{
	u8 mask[CXLT_MASK_BYTES];
	u32 state, full, valid, i, first, last;
	u64 tag;
	int ret;

	ret = cxlt_slot_query_locked(cd, slot, &state, &full, &valid, &tag);
	if (ret)
		return ret;
	if (state != CXLT_SLOT_STATE_OPEN)
		return -ENOENT;
	if (!full) {
		/* SLOT_QUERY left the mask in the RESULT window. */
		cxlt_read_window(cd, mask, (offset + len + 7) / 8);
		for (i = offset; i < offset + len; i++)
			if (!(mask[i / 8] & BIT(i % 8)))
				return -ENODATA;
	}
	/* The window allows aligned 32- and 64-bit reads only. */
	first = round_down(offset, 8);
	last = round_up(offset + len, 8);
	for (i = first; i < last; i += 8) {
		u64 v = readq(cd->regs + CXLT_SLOT_N(slot) + i);
		u32 lo = max(i, offset), hi = min(i + 8, offset + len);

		memcpy(buf + lo - offset, (u8 *)&v + lo - i, hi - lo);
	}
	return 0;
}

int cxlt_slot_read(struct cxlt_dev *cd, u32 slot, u32 offset, void *buf,
		   u32 len)
{
	int ret;

	if (!len || offset >= CXLT_SLOT_BYTES || len > CXLT_SLOT_BYTES - offset)
		return -EINVAL;
	ret = cxlt_enter(cd, NULL);
	if (ret)
		return ret;
	ret = cxlt_slot_check(cd, NULL, slot);
	if (!ret)
		ret = cxlt_slot_read_locked(cd, slot, offset, buf, len);
	cxlt_leave(cd);
	return ret;
}
EXPORT_SYMBOL_GPL(cxlt_slot_read);

int cxlt_slot_state(struct cxlt_dev *cd, u32 slot, u32 *state,
		    u32 *valid_bytes)
{
	u32 full;
	u64 tag;
	int ret;

	ret = cxlt_enter(cd, NULL);
	if (ret)
		return ret;
	ret = cxlt_slot_check(cd, NULL, slot);
	if (!ret)
		ret = cxlt_slot_query_locked(cd, slot, state, &full, valid_bytes,
					     &tag);
	cxlt_leave(cd);
	return ret;
}
EXPORT_SYMBOL_GPL(cxlt_slot_state);

int cxlt_slot_alloc(struct cxlt_dev *cd, u64 tag)
{
	u32 slot;
	int ret = cxlt_do_slot_alloc(cd, NULL, tag, CXLT_SLOT_F_KEEP, &slot);

	return ret ? ret : slot;
}
EXPORT_SYMBOL_GPL(cxlt_slot_alloc);

int cxlt_slot_write(struct cxlt_dev *cd, u32 slot, u32 offset,
		    const void *buf, u32 len)
{
	return cxlt_do_slot_write(cd, NULL, slot, offset, buf, len);
}
EXPORT_SYMBOL_GPL(cxlt_slot_write);

int cxlt_slot_merge(struct cxlt_dev *cd, u32 slot, u64 page, void *kaddr,
		    u64 *valid_bytes)
{
	u64 v = 0;
	int ret = cxlt_do_slot_merge(cd, NULL, slot, page, kaddr, &v);

	if (valid_bytes)
		*valid_bytes = v;
	return ret;
}
EXPORT_SYMBOL_GPL(cxlt_slot_merge);

int cxlt_slot_release(struct cxlt_dev *cd, u32 slot)
{
	return cxlt_do_slot_release(cd, NULL, slot);
}
EXPORT_SYMBOL_GPL(cxlt_slot_release);
