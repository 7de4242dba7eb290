// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack chunk owner table and scrub (spec section 7). The device does
 * not check ownership on memory access; the host does, with its mappings.
 *
 * Binding (driver/README.md "Permissions"): a chunk a file assigns is bound
 * to that file with its owner id, unless the file asks for a detached chunk
 * (CXLT_CHUNK_F_DETACH). Only the binding file may release a bound chunk,
 * and closing the file releases it, so a tenant that dies gives its memory
 * back scrubbed. An owner id with a bound chunk belongs to that file: no
 * other file, detached assignment or in-kernel user may assign to it, so
 * events and CHUNK_LIST of that owner describe one tenant. The device's own
 * list (CHUNK_LIST) is the authority on which chunks an owner has.
 */
#include <linux/capability.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/slab.h>

#include "cxltrack_core.h"

/* CHUNK_QUERY's state and owner (@owner may be NULL); caller holds cmd_lock. */
static int cxlt_chunk_state(struct cxlt_dev *cd, u32 chunk, u64 *state,
			    u64 *owner)
{
	struct cxlt_cmd_res res;
	int ret;

	ret = cxlt_cmd(cd, CXLT_OP_CHUNK_QUERY, 0, chunk, 0, 0, &res);
	if (ret)
		return ret;
	*state = (res.r0 & CXLT_LAYOUT_CHUNK_QUERY_RESULT0_STATE_MASK) >>
		 CXLT_LAYOUT_CHUNK_QUERY_RESULT0_STATE_SHIFT;
	if (owner)
		*owner = res.r1;
	return 0;
}

/*
 * A chunk the device calls FREE may still hold an earlier owner's data
 * after a reset (spec section 7). Scrub it before it is handed out: assign
 * it to the new owner, release it (the device zero-fills it) and wait until
 * it is FREE again. cmd_lock is held throughout, so nobody can take the
 * chunk in between. The device queues a SCRUB_DONE for it (ARG = @owner).
 */
static int cxlt_chunk_scrub(struct cxlt_dev *cd, u32 chunk, u32 owner)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(cxlt_cmd_timeout_ms);
	struct cxlt_cmd_res res;
	u64 state;
	int ret;

	lockdep_assert_held(&cd->cmd_lock);
	ret = cxlt_cmd(cd, CXLT_OP_CHUNK_ASSIGN, 0, chunk, owner, 0, &res);
	if (ret)
		return ret;
	ret = cxlt_cmd(cd, CXLT_OP_CHUNK_RELEASE, 0, chunk, owner, 0, &res);
	if (ret)
		return ret;
	for (;;) {
		ret = cxlt_chunk_state(cd, chunk, &state, NULL);
		if (ret)
			return ret;
		if (state == CXLT_CHUNK_STATE_FREE)
			break;
		if (time_after(jiffies, deadline)) {
			dev_err_ratelimited(&cd->dev, "chunk %u: scrub did not finish\n", chunk);
			return -EIO;
		}
		usleep_range(50, 200);
	}
	clear_bit(chunk, cd->unscrubbed);
	return 0;
}

/* Bind @chunk to @file with @owner, or unbind it (NULL, 0); caller holds cmd_lock. */
static void cxlt_chunk_bind(struct cxlt_dev *cd, u32 chunk, struct cxlt_file *file,
			    u32 owner)
{
	cd->chunk_bind[chunk].file = file;
	cd->chunk_bind[chunk].owner = owner;
}

/* CHUNK_LIST(@owner) into @bitmap (ceil(num_chunks / 8) bytes); caller holds cmd_lock. */
static int cxlt_chunk_list_locked(struct cxlt_dev *cd, u32 owner, u8 *bitmap,
				  u64 *count)
{
	size_t len = DIV_ROUND_UP(cd->caps.num_chunks, 8);
	struct cxlt_cmd_res res;
	u64 bits = 0;
	size_t i;
	int ret;

	lockdep_assert_held(&cd->cmd_lock);
	ret = cxlt_cmd(cd, CXLT_OP_CHUNK_LIST, 0, 0, owner, 0, &res);
	if (ret)
		return ret;
	cxlt_read_window(cd, bitmap, len);
	/* Bits past num_chunks are not produced by the device: drop them. */
	if (cd->caps.num_chunks % 8)
		bitmap[len - 1] &= (1U << (cd->caps.num_chunks % 8)) - 1;
	for (i = 0; i < len; i++)
		bits += hweight8(bitmap[i]);
	if (bits != res.r0) {
		dev_err_ratelimited(&cd->dev, "CHUNK_LIST(%u): count %llu, bitmap %llu\n",
				    owner, res.r0, bits);
		return -EIO;
	}
	*count = bits;
	return 0;
}

/*
 * May @bind (a file, or NULL for a detached or in-kernel assignment) give a
 * chunk to @owner? Only if every chunk the device lists for @owner is bound
 * to @bind: an owner id is one file's, or nobody's in particular. Caller
 * holds cmd_lock.
 */
static int cxlt_chunk_owner_free_for(struct cxlt_dev *cd, u32 owner,
				     struct cxlt_file *bind)
{
	size_t len = DIV_ROUND_UP(cd->caps.num_chunks, 8);
	unsigned long c;
	u64 count;
	u8 *bitmap;
	int ret;

	bitmap = kzalloc(len, GFP_KERNEL);
	if (!bitmap)
		return -ENOMEM;
	ret = cxlt_chunk_list_locked(cd, owner, bitmap, &count);
	if (!ret) {
		/* The window's bitmap: bit c % 8 of byte c / 8 is chunk c. */
		for (c = 0; c < cd->caps.num_chunks; c++) {
			if (!(bitmap[c / 8] & BIT(c % 8)))
				continue;
			if (cd->chunk_bind[c].file != bind) {
				ret = -EPERM;
				break;
			}
		}
	}
	kfree(bitmap);
	return ret;
}

/*
 * Release permission for the caller: a chunk bound to a file is that file's
 * alone (the kernel included); an unbound chunk needs CAP_SYS_ADMIN from a
 * file. Caller holds cmd_lock.
 */
static int cxlt_chunk_may_release(struct cxlt_dev *cd, struct cxlt_file *f,
				  u32 chunk)
{
	struct cxlt_file *holder = cd->chunk_bind[chunk].file;

	if (holder)
		return holder == f ? 0 : -EPERM;
	if (f && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	return 0;
}

int cxlt_do_chunk(struct cxlt_dev *cd, struct cxlt_file *f,
		  struct cxlt_chunk *c)
{
	static const u8 ops[] = {
		[CXLT_CHUNK_ASSIGN] = CXLT_OP_CHUNK_ASSIGN,
		[CXLT_CHUNK_RELEASE] = CXLT_OP_CHUNK_RELEASE,
		[CXLT_CHUNK_QUERY] = CXLT_OP_CHUNK_QUERY,
	};
	struct cxlt_file *bind = NULL;
	struct cxlt_cmd_res res;
	bool named;
	int ret;

	if (c->op > CXLT_CHUNK_QUERY || c->reserved0 || c->reserved[0] ||
	    c->reserved[1])
		return -EINVAL;
	if (c->flags & ~CXLT_CHUNK_F_DETACH ||
	    (c->flags && c->op != CXLT_CHUNK_ASSIGN))
		return -EINVAL;
	if (c->chunk >= cd->caps.num_chunks)
		return -ERANGE;
	if (c->op != CXLT_CHUNK_QUERY && (!c->owner || c->owner > CXLT_MAX_OWNER))
		return -ERANGE;
	if (c->op == CXLT_CHUNK_ASSIGN && !(c->flags & CXLT_CHUNK_F_DETACH))
		bind = f;

	ret = cxlt_enter(cd, f);
	if (ret)
		return ret;
	if (c->op == CXLT_CHUNK_ASSIGN)
		ret = cxlt_chunk_owner_free_for(cd, c->owner, bind);
	else if (c->op == CXLT_CHUNK_RELEASE)
		ret = cxlt_chunk_may_release(cd, f, c->chunk);
	if (!ret && c->op == CXLT_CHUNK_ASSIGN && test_bit(c->chunk, cd->unscrubbed))
		ret = cxlt_chunk_scrub(cd, c->chunk, c->owner);
	/* named before the command: the scrub may be done before it returns */
	named = !ret && c->op == CXLT_CHUNK_RELEASE && f;
	if (named)
		cxlt_evq_scrub_for(cd, c->chunk, c->owner, f);
	if (!ret)
		ret = cxlt_cmd(cd, ops[c->op], 0, c->chunk,
			       c->op == CXLT_CHUNK_QUERY ? 0 : c->owner, 0, &res);
	if (ret && named)
		cxlt_evq_scrub_for(cd, c->chunk, 0, NULL);
	if (!ret && c->op == CXLT_CHUNK_ASSIGN)
		cxlt_chunk_bind(cd, c->chunk, bind, bind ? c->owner : 0);
	/* A released chunk is scrubbed by the device before it is FREE. */
	if (!ret && c->op == CXLT_CHUNK_RELEASE) {
		clear_bit(c->chunk, cd->unscrubbed);
		cxlt_chunk_bind(cd, c->chunk, NULL, 0);
	}
	cxlt_leave(cd);
	if (ret)
		return ret;
	if (c->op == CXLT_CHUNK_QUERY) {
		u64 state = (res.r0 & CXLT_LAYOUT_CHUNK_QUERY_RESULT0_STATE_MASK) >>
			    CXLT_LAYOUT_CHUNK_QUERY_RESULT0_STATE_SHIFT;

		if (state > CXLT_CHUNK_STATE_SCRUBBING || res.r1 > CXLT_MAX_OWNER ||
		    (state == CXLT_CHUNK_STATE_FREE && res.r1) ||
		    (state != CXLT_CHUNK_STATE_FREE && !res.r1)) {
			dev_err_ratelimited(&cd->dev, "chunk %u: impossible state %#llx owner %#llx\n",
					    c->chunk, res.r0, res.r1);
			return -EIO;
		}
		c->state = state;
		c->owner = res.r1;
	}
	return 0;
}

/**
 * cxlt_do_chunk_copy() - the device copies one chunk to user memory by DMA
 * @cd: tracker
 * @f: calling file
 * @chunk: chunk index
 * @owner: its owner (1..CXLT_MAX_OWNER), checked by the device
 * @dst: user buffer of at least one chunk
 *
 * The device writes the chunk into copy_buf (spec 7.1: no tracking effect),
 * which is then copied to @dst outside cmd_lock, under copy_lock only, so
 * that a fault on @dst never waits for the command engine. Permission is
 * that of a release: the chunk's bound file, or CAP_SYS_ADMIN for an
 * unbound one; a chunk's data is its tenant's.
 *
 * Return: 0 or a negative errno (-EIO: the DMA failed, @dst untouched).
 */
int cxlt_do_chunk_copy(struct cxlt_dev *cd, struct cxlt_file *f, u32 chunk,
		       u32 owner, void __user *dst)
{
	size_t len = (size_t)1 << cd->caps.chunk_shift;
	struct cxlt_cmd_res res;
	int ret;

	if (!cd->copy_buf)
		return -EOPNOTSUPP;
	if (chunk >= cd->caps.num_chunks || !owner || owner > CXLT_MAX_OWNER)
		return -ERANGE;
	if (mutex_lock_interruptible(&cd->copy_lock))
		return -EINTR;
	ret = cxlt_enter(cd, f);
	if (!ret) {
		ret = cxlt_chunk_may_release(cd, f, chunk);
		if (!ret)
			ret = cxlt_cmd(cd, CXLT_OP_CHUNK_COPY, 0, chunk, owner,
				       cd->copy_addr, &res);
		cxlt_leave(cd);
	}
	if (!ret && res.r0 != len) {
		dev_err_ratelimited(&cd->dev, "CHUNK_COPY of chunk %u: %llu bytes, not %zu\n",
				    chunk, res.r0, len);
		ret = -EIO;
	}
	if (!ret && copy_to_user(dst, cd->copy_buf, len))
		ret = -EFAULT;
	mutex_unlock(&cd->copy_lock);
	return ret;
}

/**
 * cxlt_do_chunk_list() - the set of chunks of one owner (0: the free pool)
 * @cd: tracker
 * @f: calling file or NULL
 * @owner: 0..CXLT_MAX_OWNER
 * @bitmap: out, ceil(num_chunks / 8) bytes
 * @count: out: chunks in the set (checked against the bitmap)
 *
 * Return: 0 or a negative errno.
 */
int cxlt_do_chunk_list(struct cxlt_dev *cd, struct cxlt_file *f, u32 owner,
		       u8 *bitmap, u64 *count)
{
	int ret;

	if (owner > CXLT_MAX_OWNER)
		return -ERANGE;
	ret = cxlt_enter(cd, f);
	if (ret)
		return ret;
	ret = cxlt_chunk_list_locked(cd, owner, bitmap, count);
	cxlt_leave(cd);
	return ret;
}

/**
 * cxlt_chunks_release_file() - the file is closed: release its bound chunks
 * @cd: tracker
 * @f: the closing file
 *
 * Each chunk bound to @f is released (the device scrubs it before anyone
 * gets it again). Not interruptible, so a killed tenant leaks nothing.
 */
void cxlt_chunks_release_file(struct cxlt_dev *cd, struct cxlt_file *f)
{
	struct cxlt_cmd_res res;
	u32 c, owner;
	bool hw;
	int ret;

	cxlt_life_get(cd, false);
	mutex_lock(&cd->cmd_lock);
	hw = !cd->dead && !cd->raw_owner;
	for (c = 0; c < cd->caps.num_chunks; c++) {
		if (cd->chunk_bind[c].file != f)
			continue;
		owner = cd->chunk_bind[c].owner;
		cxlt_chunk_bind(cd, c, NULL, 0);
		if (!hw) {
			/* another file holds raw mode: release it when that ends */
			if (!cd->dead) {
				cd->chunk_bind[c].owner = owner;
				cd->chunk_bind[c].orphan = true;
			}
			continue;
		}
		ret = cxlt_cmd(cd, CXLT_OP_CHUNK_RELEASE, 0, c, owner, 0, &res);
		if (ret)
			dev_warn(&cd->dev, "could not release chunk %u of a closed file: %d\n",
				 c, ret);
		else
			clear_bit(c, cd->unscrubbed);
	}
	mutex_unlock(&cd->cmd_lock);
	up_read(&cd->life);
}

/*
 * Give bound chunk @c back to its owner after a reset: FREE (the reset freed
 * it) is assigned again, OWNED by the owner already is left. Caller holds
 * cmd_lock. Return: 0 when the device has it OWNED by the owner.
 */
static int cxlt_chunk_restore(struct cxlt_dev *cd, u32 c)
{
	u32 want = cd->chunk_bind[c].owner;
	struct cxlt_cmd_res res;
	u64 state, owner;
	int ret;

	ret = cxlt_chunk_state(cd, c, &state, &owner);
	if (ret)
		return ret;
	if (state == CXLT_CHUNK_STATE_OWNED && owner == want)
		return 0;
	if (state != CXLT_CHUNK_STATE_FREE)
		return -EBUSY;
	/* no scrub: the content is this owner's (spec 14, "Reset") */
	return cxlt_cmd(cd, CXLT_OP_CHUNK_ASSIGN, 0, c, want, 0, &res);
}

/**
 * cxlt_chunks_reset() - the device was reset: give bound chunks back
 * @cd: tracker; caller holds cmd_lock and evq_mutex (no command of anyone
 *      else can run before this one's)
 * @restore: the driver may command the device (false in raw mode)
 *
 * A reset frees every chunk without a scrub, but the memory keeps its
 * content (a CXL function reset does not touch CXL.mem), and whoever a
 * file handed its chunks to (a VM's swap tier) still maps them. So every
 * chunk bound to a file is assigned to its owner again, without a scrub,
 * and stays bound. One that cannot be (raw mode, a command failed) loses
 * its binding and stays unscrubbed, as every unbound chunk does (detached
 * and in-kernel assignments, chunks released but not yet scrubbed): the
 * next CHUNK_ASSIGN of it scrubs it first. SCRUB_DONE routes are dropped:
 * no scrub from before the reset completes. Every file that had a chunk
 * bound, or waited for the SCRUB_DONE of one it released, gets a
 * CXLT_EV_RESET record saying how many bound chunks it lost.
 */
void cxlt_chunks_reset(struct cxlt_dev *cd, bool restore)
{
	struct cxlt_file *f;
	u32 c, restored = 0, lost = 0;
	int ret;

	lockdep_assert_held(&cd->cmd_lock);
	lockdep_assert_held(&cd->evq_mutex);
	bitmap_fill(cd->unscrubbed, cd->caps.num_chunks);
	for (c = 0; c < cd->caps.num_chunks; c++) {
		/* a file waiting for a SCRUB_DONE that will not come hears of it */
		spin_lock(&cd->evq_lock);
		f = cd->chunk_bind[c].scrub_for;
		if (f)
			f->reset_note = true;
		cd->chunk_bind[c].scrub_for = NULL;
		cd->chunk_bind[c].scrub_owner = 0;
		spin_unlock(&cd->evq_lock);
		/* the reset freed an orphan (unscrubbed, as every chunk now) */
		if (cd->chunk_bind[c].orphan) {
			cd->chunk_bind[c].orphan = false;
			cd->chunk_bind[c].owner = 0;
		}
		f = cd->chunk_bind[c].file;
		if (!f)
			continue;
		f->reset_note = true;
		ret = restore ? cxlt_chunk_restore(cd, c) : -EBUSY;
		if (!ret) {
			clear_bit(c, cd->unscrubbed);
			restored++;
			continue;
		}
		dev_warn_ratelimited(&cd->dev, "chunk %u of owner %u not given back after a reset: %d\n",
				     c, cd->chunk_bind[c].owner, ret);
		f->reset_lost++;
		lost++;
		cxlt_chunk_bind(cd, c, NULL, 0);
	}
	if (restored || lost)
		dev_info(&cd->dev, "reset: %u bound chunks given back to their owners, %u lost\n",
			 restored, lost);
	cxlt_evq_reset_records(cd);
}

/**
 * cxlt_chunks_recheck() - keep only the bindings the device still agrees with
 * @cd: tracker; caller holds cmd_lock, raw mode has just ended
 *
 * A raw-mode user may have released or re-assigned any chunk. A bound chunk
 * the device still has OWNED by the same owner stays bound; any other
 * answer drops the binding (the file did not release what it no longer has).
 * A chunk whose file closed during raw mode (an orphan) is released now if
 * the device still has it OWNED by that file's owner.
 */
void cxlt_chunks_recheck(struct cxlt_dev *cd)
{
	struct cxlt_cmd_res res;
	u64 state, owner;
	u32 c;

	lockdep_assert_held(&cd->cmd_lock);
	for (c = 0; c < cd->caps.num_chunks; c++) {
		if (cd->chunk_bind[c].orphan) {
			u32 want = cd->chunk_bind[c].owner;

			cd->chunk_bind[c].orphan = false;
			cd->chunk_bind[c].owner = 0;
			if (cxlt_chunk_state(cd, c, &state, &owner) ||
			    state != CXLT_CHUNK_STATE_OWNED || owner != want)
				continue;
			if (cxlt_cmd(cd, CXLT_OP_CHUNK_RELEASE, 0, c, want, 0, &res))
				dev_warn(&cd->dev, "could not release chunk %u of a file closed in raw mode\n",
					 c);
			else
				clear_bit(c, cd->unscrubbed);
			continue;
		}
		if (!cd->chunk_bind[c].file)
			continue;
		if (!cxlt_chunk_state(cd, c, &state, &owner) &&
		    state == CXLT_CHUNK_STATE_OWNED && owner == cd->chunk_bind[c].owner)
			continue;
		cxlt_chunk_bind(cd, c, NULL, 0);
	}
}

int cxlt_chunk_assign(struct cxlt_dev *cd, u32 chunk, u32 owner)
{
	struct cxlt_chunk c = { .op = CXLT_CHUNK_ASSIGN, .chunk = chunk,
				.owner = owner };

	return cxlt_do_chunk(cd, NULL, &c);
}
EXPORT_SYMBOL_GPL(cxlt_chunk_assign);

int cxlt_chunk_release(struct cxlt_dev *cd, u32 chunk, u32 owner)
{
	struct cxlt_chunk c = { .op = CXLT_CHUNK_RELEASE, .chunk = chunk,
				.owner = owner };

	return cxlt_do_chunk(cd, NULL, &c);
}
EXPORT_SYMBOL_GPL(cxlt_chunk_release);
