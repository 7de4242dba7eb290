// SPDX-License-Identifier: Apache-2.0
/*
 * cxltrack-agent: the guest half of the harness's command channel.
 *
 * Runs on a virtio-serial port and executes one shell command per request.
 * Framing, protocol 2 (all integers little-endian u32, see cxltrack/harness/agent.py):
 *   request : "CXQ2" id timeout_ms cmd_len stdin_len | cmd     (cmd_len <= CHUNK_MAX)
 *   ack     : "CXA2" id next_seq received                      (agent -> host)
 *   chunk   : "CXD2" id seq len | data                         (len <= CHUNK_MAX)
 *   response: "CXR2" id status timed_out out_len err_len | stdout | stderr
 * stdin travels in chunks, one at a time: with stdin_len > 0 the agent acks the
 * request (next_seq 0) once it is ready for stdin, and acks every chunk after it
 * has read it off the port and written it to the stdin file; the host sends a
 * chunk only when its ack for the previous one has arrived. So at most one
 * chunk is ever in flight and the port's receive buffers never fill up: the
 * transfer never depends on QEMU's chardev flow control, and a stall shows up
 * as a missing ack for a named chunk instead of a request that never answers.
 * Where an ack is due the agent may answer with a response instead (status
 * 126, the reason on stderr), e.g. when the stdin file cannot be written; the
 * host then sends no more chunks of that request.
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

#define REQ_MAGIC 0x32515843u /* "CXQ2" */
#define ACK_MAGIC 0x32415843u /* "CXA2" */
#define DAT_MAGIC 0x32445843u /* "CXD2" */
#define RSP_MAGIC 0x32525843u /* "CXR2" */
#define CHUNK_MAX (32u << 10)
#define MAX_STDIN (64u << 20)

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

static int send_ack(int port, uint32_t id, uint32_t next_seq, uint32_t received)
{
	uint32_t ack[4] = { ACK_MAGIC, id, next_seq, received };

	return write_all(port, ack, sizeof(ack));
}

/* Answer a request the agent itself could not carry out: status 126, the reason on stderr. */
static int respond_error(int port, uint32_t id, const char *what, int err)
{
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "cxltrack-agent: %s %s: %s\n", what, in_path, strerror(err));

	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	return respond(port, id, 126, 0, "", 0, msg, (uint32_t)n);
}

/*
 * Receive the stdin of request `id` (len bytes) into in_path, one acknowledged
 * chunk at a time (see the framing at the top). Returns 0 when all of it is in
 * the file; 1 when the request has been answered with an error response instead
 * (the host sends nothing more for it); -1 when the port failed or the host broke
 * the framing (the agent then exits and /init restarts it).
 */
static int receive_stdin(int port, uint32_t id, uint32_t len, char *buf)
{
	uint32_t got = 0, seq = 0, hdr[4];
	int fd = open(in_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int err;

	if (fd < 0)
		return respond_error(port, id, "cannot create the stdin file", errno) < 0 ? -1 : 1;
	if (len && send_ack(port, id, 0, 0) < 0)
		goto broken;
	while (got < len) {
		if (read_all(port, hdr, sizeof(hdr)) < 0)
			goto broken;
		if (hdr[0] != DAT_MAGIC || hdr[1] != id || hdr[2] != seq || hdr[3] == 0 ||
		    hdr[3] > CHUNK_MAX || hdr[3] > len - got) {
			fprintf(stderr,
				"cxltrack-agent: request %u: bad stdin chunk header (magic %#x id %u seq %u len %u; "
				"expected seq %u, %u bytes left)\n",
				id, hdr[0], hdr[1], hdr[2], hdr[3], seq, len - got);
			goto broken;
		}
		if (read_all(port, buf, hdr[3]) < 0)
			goto broken;
		if (write_all(fd, buf, hdr[3]) < 0) {
			err = errno;
			close(fd);
			return respond_error(port, id, "cannot write the stdin file", err) < 0 ? -1 : 1;
		}
		got += hdr[3];
		if (send_ack(port, id, ++seq, got) < 0)
			goto broken;
	}
	if (close(fd) < 0)
		return respond_error(port, id, "cannot write the stdin file", errno) < 0 ? -1 : 1;
	return 0;
broken:
	close(fd);
	return -1;
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
		/* An ignored signal stays ignored across exec: give commands SIGPIPE back. */
		signal(SIGPIPE, SIG_DFL);
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
	static char cmd[CHUNK_MAX + 1], chunk[CHUNK_MAX];
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
		uint32_t hdr[5], timed_out = 0, out_len, err_len;
		char *out, *err;
		int32_t status;
		int rc;

		if (read_all(port, hdr, sizeof(hdr)) < 0)
			return 1;
		if (hdr[0] != REQ_MAGIC || hdr[3] > CHUNK_MAX || hdr[4] > MAX_STDIN) {
			fprintf(stderr, "cxltrack-agent: bad request header (magic %#x cmd_len %u stdin_len %u)\n",
				hdr[0], hdr[3], hdr[4]);
			return 1;
		}
		if (read_all(port, cmd, hdr[3]) < 0)
			return 1;
		cmd[hdr[3]] = '\0';
		rc = receive_stdin(port, hdr[1], hdr[4], chunk);
		if (rc < 0)
			return 1;
		if (rc == 0) {
			status = run(cmd, hdr[2], &timed_out);
			out = slurp(out_path, &out_len);
			err = slurp(err_path, &err_len);
			if (respond(port, hdr[1], status, timed_out, out ? out : "", out_len, err ? err : "",
				    err_len) < 0)
				return 1;
			free(out);
			free(err);
		}
		unlink(in_path);
		unlink(out_path);
		unlink(err_path);
	}
}
