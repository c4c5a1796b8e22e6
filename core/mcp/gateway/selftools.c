/* mcp-gateway's own tools: the sandbox it runs in, as MCP tools named
 * "sandbox.<tool>" (the prefix is reserved: gwconf.c refuses a server
 * whose prefix is "sandbox"). agent-sandbox-mcp's tools act on sandboxes
 * through the API from outside; these act on this one from inside, so
 * they are plain processes: each runs as the sandbox's user ("user", as
 * E2B's commands do by default; the gateway's own user if there is none)
 * in a session of its own, with a time limit, its output capped.
 *
 *   sandbox.run_command {command, cwd?, timeout_s?}  sh -c, in $HOME
 *   sandbox.read_file   {path}                       cat
 *   sandbox.write_file  {path, content}              mkdir -p + cat >
 *   sandbox.list_files  {path}                       ls -la
 *
 * Internal. SPDX-License-Identifier: Apache-2.0 */
#include "selftools.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"

#define SELF_MAX_OUT (1u << 20)
#define SELF_DEFAULT_TIMEOUT_S 60
#define SELF_MAX_TIMEOUT_S 3600

static const char SELF_TOOLS[] =
    "["
    "{\"name\":\"sandbox.run_command\",\"description\":\"Run a shell command (sh -c) in this "
    "sandbox as its user and return stdout, stderr and the exit code.\",\"inputSchema\":{"
    "\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"},\"cwd\":{\"type\":"
    "\"string\",\"description\":\"Default: the user's home.\"},\"timeout_s\":{\"type\":"
    "\"integer\",\"minimum\":1,\"maximum\":3600,\"default\":60}},\"required\":[\"command\"]}},"
    "{\"name\":\"sandbox.read_file\",\"description\":\"Read a text file of this sandbox.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},"
    "\"required\":[\"path\"]}},"
    "{\"name\":\"sandbox.write_file\",\"description\":\"Write a text file of this sandbox "
    "(its directories made as needed).\",\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"}},\"required\":[\"path\","
    "\"content\"]}},"
    "{\"name\":\"sandbox.list_files\",\"description\":\"List a directory of this sandbox (ls "
    "-la).\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":"
    "\"string\"}},\"required\":[\"path\"]}}"
    "]";

cJSON *gw_self_tools(void) {
  return cJSON_Parse(SELF_TOOLS);
}

typedef struct run_out {
  asbi_buf out, err;
  int status; /* wait status */
  int timed_out;
} run_out;

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Runs argv as the sandbox's user, feeding input (may be NULL), collecting
 * stdout and stderr (each capped at SELF_MAX_OUT; the rest is read and
 * dropped). 0, or -1 with errno (fork, pipes). */
static int run_as_user(char *const argv[], const char *cwd, const char *input, size_t inlen,
                       long timeout_s, run_out *ro) {
  asbi_buf_init(&ro->out, 0);
  asbi_buf_init(&ro->err, 0);
  ro->status = -1;
  ro->timed_out = 0;
  struct passwd pwbuf, *pw = NULL;
  char pwmem[4096];
  if (getpwnam_r("user", &pwbuf, pwmem, sizeof pwmem, &pw) != 0) pw = NULL;
  char home[512] = "/", user[128] = "root", envhome[600], envuser[200], envlog[200];
  if (pw) {
    snprintf(home, sizeof home, "%s", pw->pw_dir);
    snprintf(user, sizeof user, "%s", pw->pw_name);
  }
  snprintf(envhome, sizeof envhome, "HOME=%s", home);
  snprintf(envuser, sizeof envuser, "USER=%s", user);
  snprintf(envlog, sizeof envlog, "LOGNAME=%s", user);
  char *envp[] = {envhome, envuser, envlog,
                  (char *)"PATH=/opt/agent-sandbox/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:"
                          "/usr/bin:/sbin:/bin",
                  (char *)"LANG=C.UTF-8", NULL};
  const char *dir = cwd && *cwd ? cwd : home;
  int pin[2], pout[2], perr[2];
  if (pipe2(pin, O_CLOEXEC) != 0) return -1;
  if (pipe2(pout, O_CLOEXEC) != 0) {
    close(pin[0]);
    close(pin[1]);
    return -1;
  }
  if (pipe2(perr, O_CLOEXEC) != 0) {
    close(pin[0]);
    close(pin[1]);
    close(pout[0]);
    close(pout[1]);
    return -1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    setsid();
    if (dup2(pin[0], 0) < 0 || dup2(pout[1], 1) < 0 || dup2(perr[1], 2) < 0) _exit(126);
    if (pw && getuid() == 0 &&
        (setgroups(0, NULL) != 0 || initgroups(pw->pw_name, pw->pw_gid) != 0 ||
         setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)) {
      static const char m[] = "mcp-gateway: cannot become the sandbox's user\n";
      (void)!write(2, m, sizeof m - 1);
      _exit(126);
    }
    if (chdir(dir) != 0) {
      static const char m[] = "mcp-gateway: cannot enter the working directory\n";
      (void)!write(2, m, sizeof m - 1);
      _exit(126);
    }
    execve(argv[0], argv, envp);
    _exit(127);
  }
  close(pin[0]);
  close(pout[1]);
  close(perr[1]);
  if (pid < 0) {
    close(pin[1]);
    close(pout[0]);
    close(perr[0]);
    return -1;
  }
  int infd = pin[1];
  if (!input || !inlen) {
    close(infd);
    infd = -1;
  } else {
    fcntl(infd, F_SETFL, O_NONBLOCK);
  }
  size_t inoff = 0;
  int fds[2] = {pout[0], perr[0]};
  asbi_buf *bufs[2] = {&ro->out, &ro->err};
  uint64_t deadline = mono_ms() + (uint64_t)timeout_s * 1000u;
  char chunk[16384];
  while (fds[0] >= 0 || fds[1] >= 0) {
    struct pollfd p[3];
    int np = 0, map[3];
    for (int i = 0; i < 2; i++)
      if (fds[i] >= 0) {
        p[np] = (struct pollfd){fds[i], POLLIN, 0};
        map[np++] = i;
      }
    if (infd >= 0) {
      p[np] = (struct pollfd){infd, POLLOUT, 0};
      map[np++] = 2;
    }
    uint64_t now = mono_ms();
    if (now >= deadline) {
      ro->timed_out = 1;
      kill(-pid, SIGKILL);
      break;
    }
    int n = poll(p, (nfds_t)np, (int)(deadline - now));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int j = 0; j < np; j++) {
      if (!p[j].revents) continue;
      int i = map[j];
      if (i == 2) {
        ssize_t w = write(infd, input + inoff, inlen - inoff);
        if (w > 0) inoff += (size_t)w;
        if (w < 0 && errno != EAGAIN && errno != EINTR) inoff = inlen;
        if (inoff >= inlen) {
          close(infd);
          infd = -1;
        }
        continue;
      }
      ssize_t r = read(fds[i], chunk, sizeof chunk);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) {
        close(fds[i]);
        fds[i] = -1;
        continue;
      }
      size_t room = bufs[i]->len < SELF_MAX_OUT ? SELF_MAX_OUT - bufs[i]->len : 0;
      asbi_buf_append(bufs[i], chunk, (size_t)r < room ? (size_t)r : room);
    }
  }
  if (infd >= 0) close(infd);
  for (int i = 0; i < 2; i++)
    if (fds[i] >= 0) close(fds[i]);
  /* Its output is closed; wait for it to end (it may still be on its way
   * out) until the deadline, then end what it left in its group. */
  for (;;) {
    pid_t w = waitpid(pid, &ro->status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (w == 0 && mono_ms() >= deadline) {
      ro->timed_out = 1;
      kill(-pid, SIGKILL);
      while (waitpid(pid, &ro->status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    struct timespec nap = {0, 5 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
  kill(-pid, SIGKILL); /* what it left behind in its group */
  return 0;
}

static cJSON *result_text(const char *text, size_t len, int is_error, cJSON *structured) {
  cJSON *res = cJSON_CreateObject();
  cJSON *c = cJSON_AddArrayToObject(res, "content");
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "type", "text");
  /* cJSON wants a C string: output with NULs is cut there */
  char *s = malloc(len + 1);
  if (s) {
    memcpy(s, text, len);
    s[len] = 0;
  }
  cJSON_AddStringToObject(t, "text", s ? s : "");
  free(s);
  cJSON_AddItemToArray(c, t);
  if (structured) cJSON_AddItemToObject(res, "structuredContent", structured);
  cJSON_AddBoolToObject(res, "isError", is_error);
  return res;
}

static cJSON *fail(const char *msg) {
  return result_text(msg, strlen(msg), 1, NULL);
}

static const char *str_arg(const cJSON *args, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int exit_code(const run_out *ro) {
  if (WIFEXITED(ro->status)) return WEXITSTATUS(ro->status);
  if (WIFSIGNALED(ro->status)) return 128 + WTERMSIG(ro->status);
  return -1;
}

/* A file call's failure: the tool's stderr, or its exit. */
static cJSON *file_fail(const char *what, const char *path, run_out *ro) {
  asbi_buf m;
  asbi_buf_init(&m, 0);
  asbi_buf_printf(&m, "%s %s: ", what, path);
  if (ro->err.len)
    asbi_buf_append(&m, ro->err.data, ro->err.len);
  else
    asbi_buf_printf(&m, "exit code %d", exit_code(ro));
  while (m.len && m.data[m.len - 1] == '\n') m.data[--m.len] = 0;
  cJSON *r = fail(m.data ? m.data : what);
  asbi_buf_free(&m);
  return r;
}

cJSON *gw_self_call(const char *tool, const cJSON *args) {
  run_out ro;
  if (!strcmp(tool, "run_command")) {
    const char *cmd = str_arg(args, "command"), *cwd = str_arg(args, "cwd");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(args, "timeout_s");
    long timeout = SELF_DEFAULT_TIMEOUT_S;
    if (!cmd) return fail("arguments.command must be a string");
    if (t && (!cJSON_IsNumber(t) || t->valuedouble < 1 || t->valuedouble > SELF_MAX_TIMEOUT_S ||
              t->valuedouble != (double)(long)t->valuedouble))
      return fail("arguments.timeout_s must be an integer from 1 to 3600");
    if (t) timeout = (long)t->valuedouble;
    char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)cmd, NULL};
    if (run_as_user(argv, cwd, NULL, 0, timeout, &ro) != 0)
      return fail("run_command: cannot start the command");
    cJSON *st = cJSON_CreateObject();
    char *o = asbi_buf_detach(&ro.out, NULL), *e = asbi_buf_detach(&ro.err, NULL);
    cJSON_AddStringToObject(st, "stdout", o ? o : "");
    cJSON_AddStringToObject(st, "stderr", e ? e : "");
    free(o);
    free(e);
    cJSON_AddNumberToObject(st, "exit_code", exit_code(&ro));
    if (ro.timed_out) cJSON_AddBoolToObject(st, "timed_out", 1);
    char *text = cJSON_PrintUnformatted(st);
    cJSON *r = result_text(text ? text : "{}", text ? strlen(text) : 2, ro.timed_out, st);
    cJSON_free(text);
    return r;
  }
  if (strcmp(tool, "read_file") && strcmp(tool, "write_file") && strcmp(tool, "list_files"))
    return NULL;
  const char *path = str_arg(args, "path");
  if (!path || !*path) return fail("arguments.path must be a non-empty string");
  cJSON *r;
  if (!strcmp(tool, "read_file")) {
    char *argv[] = {(char *)"/bin/cat", (char *)"--", (char *)path, NULL};
    if (run_as_user(argv, NULL, NULL, 0, SELF_DEFAULT_TIMEOUT_S, &ro) != 0)
      return fail("read_file: cannot start");
    r = exit_code(&ro) == 0 ? result_text(ro.out.data ? ro.out.data : "", ro.out.len, 0, NULL)
                            : file_fail("read_file", path, &ro);
  } else if (!strcmp(tool, "write_file")) {
    const char *content = str_arg(args, "content");
    if (!content) return fail("arguments.content must be a string");
    char *argv[] = {(char *)"/bin/sh",
                    (char *)"-c",
                    (char *)"mkdir -p -- \"$(dirname -- \"$1\")\" && cat > \"$1\"",
                    (char *)"sh",
                    (char *)path,
                    NULL};
    if (run_as_user(argv, NULL, content, strlen(content), SELF_DEFAULT_TIMEOUT_S, &ro) != 0)
      return fail("write_file: cannot start");
    if (exit_code(&ro) == 0) {
      char msg[600];
      snprintf(msg, sizeof msg, "wrote %zu bytes to %.500s", strlen(content), path);
      r = result_text(msg, strlen(msg), 0, NULL);
    } else {
      r = file_fail("write_file", path, &ro);
    }
  } else if (!strcmp(tool, "list_files")) {
    char *argv[] = {(char *)"/bin/ls", (char *)"-la", (char *)"--", (char *)path, NULL};
    if (run_as_user(argv, NULL, NULL, 0, SELF_DEFAULT_TIMEOUT_S, &ro) != 0)
      return fail("list_files: cannot start");
    r = exit_code(&ro) == 0 ? result_text(ro.out.data ? ro.out.data : "", ro.out.len, 0, NULL)
                            : file_fail("list_files", path, &ro);
  } else {
    return NULL;
  }
  asbi_buf_free(&ro.out);
  asbi_buf_free(&ro.err);
  return r;
}
