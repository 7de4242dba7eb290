// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack command engine (spec section 5) and the raw debug path.
 *
 * A command is launched by writing CMD_ARG0..2 then CMD_OP; the driver then
 * polls CMD_STATUS until BUSY clears, bounded by cmd_timeout_ms (-EIO after
 * that). It checks that CMD_STATUS.SEQ advanced by exactly one, so a
 * command launched behind the driver's back (or a device that reset under
 * it) is detected instead of trusted.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/sched.h>
#include <linux/capability.h>

#include "cxltrack_core.h"

#define CXLT_FIELD(reg, f, v) (((v) & CXLT_##reg##_##f##_MASK) >> CXLT_##reg##_##f##_SHIFT)

/**
 * cxlt_life_get() - take @life for reading once the device is not suspended
 * @cd: tracker
 * @intr: a signal ends the wait (-EINTR); else it is not interruptible
 *
 * Between suspend and resume no lock is held (the two run in different
 * tasks); the device is marked suspended instead, and callers wait here.
 *
 * Return: 0 with @life held for reading, or -EINTR.
 */
int cxlt_life_get(struct cxlt_dev *cd, bool intr)
{
	for (;;) {
		if (!intr)
			down_read(&cd->life);
		else if (down_read_interruptible(&cd->life))
			return -EINTR;
		if (!cd->suspended)
			return 0;
		up_read(&cd->life);
		if (!intr)
			wait_event(cd->wq, !READ_ONCE(cd->suspended));
		else if (wait_event_interruptible(cd->wq, !READ_ONCE(cd->suspended)))
			return -EINTR;
	}
}

/**
 * cxlt_enter() - start a device operation on behalf of a caller
 * @cd: tracker
 * @f: the calling file, or NULL for in-kernel callers
 *
 * Takes @life for reading and @cmd_lock. Fails with -ENODEV once the device
 * is gone, -EINTR on a signal and -EBUSY while a file holds raw mode.
 *
 * Return: 0 with both locks held, or a negative errno with none.
 */
int cxlt_enter(struct cxlt_dev *cd, struct cxlt_file *f)
{
	if (cxlt_life_get(cd, true))
		return -EINTR;
	if (cd->dead) {
		up_read(&cd->life);
		return -ENODEV;
	}
	if (mutex_lock_interruptible(&cd->cmd_lock)) {
		up_read(&cd->life);
		return -EINTR;
	}
	if (cd->raw_owner) {
		mutex_unlock(&cd->cmd_lock);
		up_read(&cd->life);
		return -EBUSY;
	}
	return 0;
}

void cxlt_leave(struct cxlt_dev *cd)
{
	mutex_unlock(&cd->cmd_lock);
	up_read(&cd->life);
}

static int cxlt_status_errno(u8 code)
{
	switch (code) {
	case CXLT_STATUS_OK:
		return 0;
	case CXLT_STATUS_UNKNOWN_OP:
		return -EOPNOTSUPP;
	case CXLT_STATUS_RANGE:
		return -ERANGE;
	case CXLT_STATUS_ALIGN:
	case CXLT_STATUS_FLAGS:
		return -EINVAL;
	case CXLT_STATUS_BUSY:
		return -EBUSY;
	case CXLT_STATUS_STATE:
		return -ENOENT;
	case CXLT_STATUS_NO_RESOURCE:
		return -ENOSPC;
	case CXLT_STATUS_PERM:
		return -EPERM;
	default:
		return -EIO;
	}
}

/* Wait for CMD_STATUS.BUSY to clear; return the status or a negative errno. */
static long cxlt_wait_idle(struct cxlt_dev *cd)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(cxlt_cmd_timeout_ms);
	unsigned int spins = 0;
	u32 st;

	for (;;) {
		st = cxlt_rd(cd, CXLT_CMD_STATUS);
		if (st == ~0U) {
			/* all-ones: the function no longer answers */
			dev_err_ratelimited(&cd->dev, "device not responding\n");
			return -EIO;
		}
		if (!(st & CXLT_CMD_STATUS_BUSY_MASK))
			return st;
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		if (++spins < 64)
			cpu_relax();
		else
			usleep_range(10, 50);
	}
}

/**
 * cxlt_cmd() - run one command to completion
 * @cd: tracker; caller holds cmd_lock (cxlt_enter())
 * @op: opcode
 * @opflags: CXLT_CMD_OP_CLEAR_MASK / _DECAY_MASK / _DMA_MASK
 * @a0: CMD_ARG0
 * @a1: CMD_ARG1
 * @a2: CMD_ARG2
 * @res: completion code and results
 *
 * Return: 0 when the device completed the command with status OK; the
 * errno of cxlt_status_errno() for any other status (@res is filled in
 * either case); -EIO if it did not complete in time or its sequence number
 * did not advance by one.
 */
int cxlt_cmd(struct cxlt_dev *cd, u8 op, u32 opflags, u64 a0, u64 a1, u64 a2,
	     struct cxlt_cmd_res *res)
{
	u64 args[3] = { a0, a1, a2 };
	long st;
	u16 seq;
	int i;

	lockdep_assert_held(&cd->cmd_lock);

	st = cxlt_wait_idle(cd);
	if (st < 0)
		goto timeout;
	if (!cd->cmd_seq_valid) {
		cd->cmd_seq = CXLT_FIELD(CMD_STATUS, SEQ, (u32)st);
		cd->cmd_seq_valid = true;
	}
	for (i = 0; i < 3; i++) {
		cxlt_wr(cd, CXLT_CMD_ARG0_LO + 8 * i, lower_32_bits(args[i]));
		cxlt_wr(cd, CXLT_CMD_ARG0_HI + 8 * i, upper_32_bits(args[i]));
	}
	cxlt_wr(cd, CXLT_CMD_OP, (op << CXLT_CMD_OP_OP_SHIFT) |
		(opflags & (CXLT_CMD_OP_CLEAR_MASK | CXLT_CMD_OP_DECAY_MASK |
			    CXLT_CMD_OP_DMA_MASK | CXLT_CMD_OP_LIST_MASK)));
	atomic64_inc(&cd->cnt.commands);
	if (opflags & CXLT_CMD_OP_DMA_MASK)
		atomic64_inc(&cd->cnt.dma_commands);

	st = cxlt_wait_idle(cd);
	if (st < 0)
		goto timeout;
	seq = CXLT_FIELD(CMD_STATUS, SEQ, (u32)st);
	if (seq != (u16)(cd->cmd_seq + 1)) {
		dev_err_ratelimited(&cd->dev,
				    "command 0x%02x: SEQ %u after %u, not one launch\n",
				    op, seq, cd->cmd_seq);
		cd->cmd_seq = seq;
		atomic64_inc(&cd->cnt.cmd_errors);
		return -EIO;
	}
	cd->cmd_seq = seq;
	res->code = CXLT_FIELD(CMD_STATUS, CODE, (u32)st);
	res->r0 = cxlt_rd64(cd, CXLT_CMD_RESULT0_LO);
	res->r1 = cxlt_rd64(cd, CXLT_CMD_RESULT1_LO);
	if (res->code != CXLT_STATUS_OK)
		atomic64_inc(&cd->cnt.cmd_errors);
	return cxlt_status_errno(res->code);

timeout:
	atomic64_inc(&cd->cnt.cmd_timeouts);
	cd->cmd_seq_valid = false;
	dev_err_ratelimited(&cd->dev, "command 0x%02x: no completion (%ld)\n",
			    op, st);
	return -EIO;
}

/**
 * cxlt_read_window() - copy the start of the RESULT window
 * @cd: tracker; caller holds cmd_lock
 * @dst: destination
 * @len: bytes, at most CXLT_RESULT_SIZE
 *
 * Uses aligned 64-bit reads only (spec section 4.1); never memcpy_fromio(),
 * which may issue byte reads the window refuses.
 */
void cxlt_read_window(struct cxlt_dev *cd, void *dst, size_t len)
{
	u8 *d = dst;
	size_t off;

	lockdep_assert_held(&cd->cmd_lock);
	len = min_t(size_t, len, CXLT_RESULT_SIZE);
	for (off = 0; off < len; off += 8) {
		u64 v = readq(cd->regs + CXLT_RESULT + off);

		memcpy(d + off, &v, min_t(size_t, 8, len - off));
	}
}

/**
 * cxlt_resync() - take the device back after a reset or raw mode
 * @cd: tracker; caller holds cmd_lock and evq_mutex
 * @lost: the device was reset (cxlt_state_lost()); otherwise raw mode
 *        ended, and the device may hold anything the raw user left
 *
 * Restores CTRL and SLOT_TIMEOUT from the shadows and re-enables
 * interrupts. After raw mode, a slot keeps its owner only if the device
 * still has it OPEN with the tag it was allocated with, and a chunk its
 * binding only if the device still has it OWNED by that owner; the command and
 * event sequences are re-learnt and the next event record is flagged.
 */
void cxlt_resync(struct cxlt_dev *cd, bool lost)
{
	lockdep_assert_held(&cd->cmd_lock);
	lockdep_assert_held(&cd->evq_mutex);
	if (lost) {
		cxlt_state_lost(cd);
	} else {
		cd->cmd_seq_valid = false;
		cd->evt_seq_valid = false;
		cd->evt_flags |= CXLT_EVENT_F_RESET;
		cxlt_slots_recheck(cd);
		cxlt_chunks_recheck(cd);
	}
	cxlt_write_ctrl(cd);
	cxlt_int_enable(cd, true);
}

static int cxlt_raw_access(struct cxlt_dev *cd, struct cxlt_raw *r)
{
	void __iomem *a = cd->regs + r->offset;

	if (r->op == CXLT_RAW_READ) {
		switch (r->size) {
		case 1:
			r->value = readb(a);
			break;
		case 2:
			r->value = readw(a);
			break;
		case 4:
			r->value = readl(a);
			break;
		default:
			r->value = readq(a);
			break;
		}
		return 0;
	}
	switch (r->size) {
	case 1:
		writeb(r->value, a);
		break;
	case 2:
		writew(r->value, a);
		break;
	case 4:
		writel(r->value, a);
		break;
	default:
		writeq(r->value, a);
		break;
	}
	return 0;
}

static int cxlt_raw_reset(struct cxlt_dev *cd)
{
	struct pci_dev *pdev;
	int ret;

	/* pci_reset_function() calls reset_prepare(), which takes life. */
	cxlt_life_get(cd, false);
	if (cd->dead) {
		up_read(&cd->life);
		return -ENODEV;
	}
	pdev = pci_dev_get(cd->pdev);
	up_read(&cd->life);
	ret = pci_reset_function(pdev);
	pci_dev_put(pdev);
	return ret;
}

/**
 * cxlt_raw() - raw BAR access for tests (CXLT_IOC_RAW)
 * @cd: tracker
 * @f: calling file
 * @r: request
 *
 * Return: 0 or a negative errno.
 */
int cxlt_raw(struct cxlt_dev *cd, struct cxlt_file *f, struct cxlt_raw *r)
{
	int ret = 0;

	if (!cxlt_allow_raw)
		return -EPERM;
	if (!capable(CAP_SYS_RAWIO))
		return -EPERM;
	if (r->flags || r->reserved[0] || r->reserved[1])
		return -EINVAL;
	switch (r->op) {
	case CXLT_RAW_ENTER:
	case CXLT_RAW_EXIT:
	case CXLT_RAW_RESET:
		break;
	case CXLT_RAW_READ:
	case CXLT_RAW_WRITE:
		if (r->size != 1 && r->size != 2 && r->size != 4 && r->size != 8)
			return -EINVAL;
		/*
		 * Misaligned offsets are allowed on purpose: the device must answer
		 * them (spec section 4.2, BAD_WIDTH) and x86 can issue them.
		 */
		if (r->offset >= CXLT_BAR_SIZE || r->size > CXLT_BAR_SIZE - r->offset)
			return -ERANGE;
		break;
	default:
		return -EINVAL;
	}

	if (cxlt_life_get(cd, true))
		return -EINTR;
	if (cd->dead) {
		up_read(&cd->life);
		return -ENODEV;
	}
	mutex_lock(&cd->cmd_lock);
	if (cd->raw_owner && cd->raw_owner != f) {
		ret = -EBUSY;
		goto out;
	}
	switch (r->op) {
	case CXLT_RAW_ENTER:
		if (cd->raw_owner)
			goto out;
		/* Quiesce: no more interrupts, the IRQ thread leaves the EVQ alone. */
		mutex_lock(&cd->evq_mutex);
		cxlt_bits_lost(cd);	/* harvests fail until raw mode ends */
		cd->raw_owner = f;
		cxlt_int_enable(cd, false);
		mutex_unlock(&cd->evq_mutex);
		dev_info(&cd->dev, "raw mode on (pid %d)\n", task_pid_nr(current));
		break;
	case CXLT_RAW_EXIT:
		if (!cd->raw_owner) {
			ret = -EINVAL;
			goto out;
		}
		mutex_lock(&cd->evq_mutex);
		cxlt_bits_lost(cd);	/* raw commands may have cleared dirty bits */
		cd->raw_owner = NULL;
		cxlt_resync(cd, false);
		mutex_unlock(&cd->evq_mutex);
		dev_info(&cd->dev, "raw mode off\n");
		break;
	case CXLT_RAW_RESET:
		if (cd->raw_owner != f) {
			ret = -EBUSY;
			goto out;
		}
		mutex_unlock(&cd->cmd_lock);
		up_read(&cd->life);
		return cxlt_raw_reset(cd);
	default:
		if (cd->raw_owner != f) {
			ret = -EBUSY;
			goto out;
		}
		ret = cxlt_raw_access(cd, r);
		break;
	}
out:
	mutex_unlock(&cd->cmd_lock);
	up_read(&cd->life);
	return ret;
}

/* A file that held raw mode is closed: leave raw mode. */
void cxlt_raw_release(struct cxlt_dev *cd, struct cxlt_file *f)
{
	cxlt_life_get(cd, false);
	mutex_lock(&cd->cmd_lock);
	if (cd->raw_owner == f) {
		mutex_lock(&cd->evq_mutex);
		cd->raw_owner = NULL;
		if (!cd->dead)
			cxlt_resync(cd, false);
		mutex_unlock(&cd->evq_mutex);
	}
	mutex_unlock(&cd->cmd_lock);
	up_read(&cd->life);
}
