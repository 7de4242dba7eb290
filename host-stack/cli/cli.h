// SPDX-License-Identifier: Apache-2.0
/*
 * What the cxltrack command's parts share: its name and device, the exits
 * with a message (status 2 for bad arguments, 1 for a failed operation), and
 * argument parsing.
 */
#ifndef CXLTRACK_CLI_H
#define CXLTRACK_CLI_H

#include <stddef.h>
#include <stdint.h>

struct cxltrack;

extern const char *prog;
extern const char *dev_path;	/* -d DEV, or NULL for /dev/cxltrack0 */

void die_usage(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void die_err(int err, const char *what) __attribute__((noreturn));
uint64_t num(const char *s, const char *what);
size_t parse_hex(const char *s, uint8_t *out, size_t max);
struct cxltrack *open_dev(void);
int help_requested(int argc, char **argv);

int cmd_bench(int argc, char **argv);	/* bench.c */
int cmd_raw_batch(int argc, char **argv);	/* raw_batch.c */
int cmd_zero(int argc, char **argv);	/* zero.c */

#endif
