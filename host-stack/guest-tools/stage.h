/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stages a guest tool and the harness meet at (tests/nested): with CXLT_STAGE_DIR set, the
 * tool creates DIR/at-NAME and waits for DIR/go-NAME, so the host can count what happens
 * before a step on its own. Without it, a stage costs nothing.
 */
#ifndef CXLT_STAGE_H
#define CXLT_STAGE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Tell the harness we are at @name, and wait for its go (with CXLT_STAGE_DIR). */
static inline void stage(const char *name)
{
	const char *dir = getenv("CXLT_STAGE_DIR");
	char path[512];
	int fd;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/at-%s", dir, name);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	close(fd);
	snprintf(path, sizeof(path), "%s/go-%s", dir, name);
	while (access(path, F_OK))
		usleep(10000);
}

#endif
