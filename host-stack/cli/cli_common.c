// SPDX-License-Identifier: Apache-2.0
/*
 * The cxltrack command's shared helpers (cli.h): messages and exits,
 * numbers and hex bytes from arguments, opening the device.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcxltrack.h"
#include "cli.h"

const char *prog = "cxltrack";
const char *dev_path;

void die_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	exit(2);
}

void die_err(int err, const char *what)
{
	const char *hint = "";

	switch (-err) {
	case ERANGE:
		hint = " (outside the device's limits; see `cxltrack status`)";
		break;
	case EBUSY:
		hint = " (busy: in use, or a raw-mode test holds the device)";
		break;
	case ENOSPC:
		hint = " (no free slot)";
		break;
	case ENOENT:
		hint = " (wrong state: slot not open / chunk not owned)";
		break;
	case ENODEV:
		hint = " (device removed)";
		break;
	case EPERM:
		hint = " (not permitted: other owner, or raw mode not allowed)";
		break;
	}
	fprintf(stderr, "%s: %s: %s%s\n", prog, what, cxltrack_strerror(err), hint);
	exit(1);
}

uint64_t num(const char *s, const char *what)
{
	char *end;
	uint64_t v;

	if (!s)
		die_usage("missing %s", what);
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-')
		die_usage("bad %s '%s' (expected a number)", what, s);
	return v;
}

struct cxltrack *open_dev(void)
{
	struct cxltrack *t;
	int ret = cxltrack_open(dev_path, &t);

	if (ret) {
		fprintf(stderr, "%s: cannot open %s: %s%s\n", prog,
			dev_path ? dev_path : "/dev/cxltrack0", cxltrack_strerror(ret),
			ret == -ENOENT ? " (is cxltrack.ko loaded and bound?)" : "");
		exit(1);
	}
	return t;
}

int help_requested(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

size_t parse_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = strlen(s), i;

	if (!n || n % 2 || n / 2 > max)
		return 0;
	for (i = 0; i < n / 2; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return 0;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return n / 2;
}
