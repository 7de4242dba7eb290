/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The words cxl-memtest writes: word i of a fill with SEED (a splitmix64-style finaliser of
 * SEED ^ i * golden ratio, so nearby words differ in every bit), and its inverse, which
 * cxlt-pagefind uses to tell which word of a fill a page found elsewhere starts with.
 */
#ifndef CXLT_MEMTEST_PATTERN_H
#define CXLT_MEMTEST_PATTERN_H

#include <stdint.h>

#define MEMTEST_GOLDEN 0x9E3779B97F4A7C15ull
#define MEMTEST_MIX 0xBF58476D1CE4E5B9ull

static inline uint64_t memtest_pattern(uint64_t seed, uint64_t i)
{
	uint64_t x = seed ^ (i * MEMTEST_GOLDEN);

	x ^= x >> 31;
	x *= MEMTEST_MIX;
	x ^= x >> 29;
	return x;
}

/* The inverse of multiplying by odd @a modulo 2^64 (Newton: each step doubles the bits). */
static inline uint64_t memtest_mul_inverse(uint64_t a)
{
	uint64_t x = a;

	for (int k = 0; k < 6; k++)
		x *= 2 - a * x;
	return x;
}

/* The i with memtest_pattern(seed, i) == w. */
static inline uint64_t memtest_index(uint64_t seed, uint64_t w)
{
	uint64_t x = w;

	x ^= (x >> 29) ^ (x >> 58);
	x *= memtest_mul_inverse(MEMTEST_MIX);
	x ^= (x >> 31) ^ (x >> 62);
	return (x ^ seed) * memtest_mul_inverse(MEMTEST_GOLDEN);
}

#endif
