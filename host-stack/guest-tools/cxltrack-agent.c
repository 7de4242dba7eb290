// SPDX-License-Identifier: Apache-2.0
/*
 * cxltrack-agent: the guest half of the harness's command channel.
 *
 * Runs on a virtio-serial port and executes one shell command per request.
 * Framing (all integers little-endian u32, see cxltrack/harness/agent.py):
 *   request : "CXQ1" id timeout_ms cmd_len stdin_len | cmd | stdin
 *   response: "CXR1" id status timed_out out_len err_len | stdout | stderr
 * status is the exit code, or 128+signal. On start it sends one response with
 * id 0 and stdout "ready <uptime>\n" so the host knows the guest is up.
 * The command runs as `/bin/sh -c cmd` in its own session, stdout/stderr go to
 * files in /tmp, and on timeout its whole process group is killed.
 * The agent also runs on a host pty for the harness's own fast tests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REQ_MAGIC 0x31515843u /* "CXQ1" */
#define RSP_MAGIC 0x31525843u /* "CXR1" */
#define MAX_REQ (64u << 20)

/* Scratch files; the directory is $CXLTRACK_AGENT_TMP (default /tmp). */
static char in_path[512], out_path[512], err_path[512];

static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static char *slurp(const char *path, uint32_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY);

	*len = 0;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || st.st_size == 0 || !(buf = malloc((size_t)st.st_size))) {
		close(fd);
		return NULL;
	}
	if (read_all(fd, buf, (size_t)st.st_size) < 0) {
		free(buf);
		close(fd);
		return NULL;
	}
	close(fd);
	*len = (uint32_t)st.st_size;
	return buf;
}

static int respond(int port, uint32_t id, int32_t status, uint32_t timed_out,
		   const char *out, uint32_t out_len, const char *err, uint32_t err_len)
{
	uint32_t hdr[6] = { RSP_MAGIC, id, (uint32_t)status, timed_out, out_len, err_len };

	if (write_all(port, hdr, sizeof(hdr)) < 0 || write_all(port, out, out_len) < 0 ||
	    write_all(port, err, err_len) < 0)
		return -1;
	return 0;
}

static int write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int rc;

	if (fd < 0)
		return -1;
	rc = write_all(fd, data, len);
	close(fd);
	return rc;
}

/* Run cmd; return its status (exit code or 128+signal), set *timed_out. */
static int32_t run(const char *cmd, uint32_t timeout_ms, uint32_t *timed_out)
{
	sigset_t chld;
	struct timespec deadline, now, left;
	int status = 0;
	pid_t pid;

	*timed_out = 0;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		setsid();
		int in = open(in_path, O_RDONLY);
		int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (in < 0 || out < 0 || err < 0)
			_exit(126);
		dup2(in, 0);
		dup2(out, 1);
		dup2(err, 2);
		if (chdir("/") < 0)
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = deadline.tv_sec - now.tv_sec;
		left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (timeout_ms && left.tv_sec < 0) {
			*timed_out = 1;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		if (!timeout_ms) {
			left.tv_sec = 3600;
			left.tv_nsec = 0;
		}
		sigtimedwait(&chld, NULL, &left);
	}
	sigprocmask(SIG_UNBLOCK, &chld, NULL);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

int main(int argc, char **argv)
{
	char ready[64];
	double up = 0;
	FILE *f;
	int port;

	if (argc != 2) {
		fprintf(stderr, "usage: %s /dev/vportNpM\n", argv[0]);
		return 2;
	}
	port = open(argv[1], O_RDWR);
	if (port < 0) {
		perror(argv[1]);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	const char *tmp = getenv("CXLTRACK_AGENT_TMP");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	snprintf(in_path, sizeof(in_path), "%s/.cxltrack-agent.in", tmp);
	snprintf(out_path, sizeof(out_path), "%s/.cxltrack-agent.out", tmp);
	snprintf(err_path, sizeof(err_path), "%s/.cxltrack-agent.err", tmp);
	f = fopen("/proc/uptime", "r");
	if (f) {
		if (fscanf(f, "%lf", &up) != 1)
			up = 0;
		fclose(f);
	}
	snprintf(ready, sizeof(ready), "ready %.2f\n", up);
	if (respond(port, 0, 0, 0, ready, (uint32_t)strlen(ready), "", 0) < 0)
		return 1;
	for (;;) {
		uint32_t hdr[5], timed_out, out_len, err_len;
		char *cmd, *in, *out, *err;
		int32_t status;

		if (read_all(port, hdr, sizeof(hdr)) < 0)
			return 1;
		if (hdr[0] != REQ_MAGIC || hdr[3] > MAX_REQ || hdr[4] > MAX_REQ) {
			fprintf(stderr, "cxltrack-agent: bad request header\n");
			return 1;
		}
		cmd = calloc(1, hdr[3] + 1);
		in = malloc(hdr[4] + 1);
		if (!cmd || !in || read_all(port, cmd, hdr[3]) < 0 || read_all(port, in, hdr[4]) < 0)
			return 1;
		timed_out = 0;
		if (write_file(in_path, in, hdr[4]) < 0)
			status = 126;
		else
			status = run(cmd, hdr[2], &timed_out);
		out = slurp(out_path, &out_len);
		err = slurp(err_path, &err_len);
		if (respond(port, hdr[1], status, timed_out, out ? out : "", out_len, err ? err : "", err_len) < 0)
			return 1;
		free(cmd);
		free(in);
		free(out);
		free(err);
		unlink(in_path);
		unlink(out_path);
		unlink(err_path);
	}
}
