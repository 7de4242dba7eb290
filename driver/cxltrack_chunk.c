// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack chunk owner table and scrub (spec section 7). The device does
 * not check ownership on memory access; the host does, with its mappings.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>

#include "cxltrack_core.h"

/* CHUNK_QUERY's state; caller holds cmd_lock. */
static int cxlt_chunk_state(struct cxlt_dev *cd, u32 chunk, u64 *state)
{
	struct cxlt_cmd_res res;
	int ret;

	ret = cxlt_cmd(cd, CXLT_OP_CHUNK_QUERY, 0, chunk, 0, 0, &res);
	if (ret)
		return ret;
	*state = (res.r0 & CXLT_LAYOUT_CHUNK_QUERY_RESULT0_STATE_MASK) >>
		 CXLT_LAYOUT_CHUNK_QUERY_RESULT0_STATE_SHIFT;
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
		ret = cxlt_chunk_state(cd, chunk, &state);
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

int cxlt_do_chunk(struct cxlt_dev *cd, struct cxlt_file *f,
		  struct cxlt_chunk *c)
{
	static const u8 ops[] = {
		[CXLT_CHUNK_ASSIGN] = CXLT_OP_CHUNK_ASSIGN,
		[CXLT_CHUNK_RELEASE] = CXLT_OP_CHUNK_RELEASE,
		[CXLT_CHUNK_QUERY] = CXLT_OP_CHUNK_QUERY,
	};
	struct cxlt_cmd_res res;
	int ret;

	if (c->op > CXLT_CHUNK_QUERY || c->flags || c->reserved0 ||
	    c->reserved[0] || c->reserved[1])
		return -EINVAL;
	if (c->chunk >= cd->caps.num_chunks)
		return -ERANGE;
	if (c->op != CXLT_CHUNK_QUERY && (!c->owner || c->owner > CXLT_MAX_OWNER))
		return -ERANGE;

	ret = cxlt_enter(cd, f);
	if (ret)
		return ret;
	if (c->op == CXLT_CHUNK_ASSIGN && test_bit(c->chunk, cd->unscrubbed))
		ret = cxlt_chunk_scrub(cd, c->chunk, c->owner);
	if (!ret)
		ret = cxlt_cmd(cd, ops[c->op], 0, c->chunk,
			       c->op == CXLT_CHUNK_QUERY ? 0 : c->owner, 0, &res);
	/* A released chunk is scrubbed by the device before it is FREE. */
	if (!ret && c->op == CXLT_CHUNK_RELEASE)
		clear_bit(c->chunk, cd->unscrubbed);
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
	size_t len = DIV_ROUND_UP(cd->caps.num_chunks, 8);
	struct cxlt_cmd_res res;
	u64 bits = 0;
	size_t i;
	int ret;

	if (owner > CXLT_MAX_OWNER)
		return -ERANGE;
	ret = cxlt_enter(cd, f);
	if (ret)
		return ret;
	ret = cxlt_cmd(cd, CXLT_OP_CHUNK_LIST, 0, 0, owner, 0, &res);
	if (!ret)
		cxlt_read_window(cd, bitmap, len);
	cxlt_leave(cd);
	if (ret)
		return ret;
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
