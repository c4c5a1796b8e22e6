/* server.agents: the server SDK's agents service in this process — so the
 * sanitizer tree checks it, which it cannot in a sandbox, where the
 * template's server is the plain build — driving the real Codex CLI (from
 * the host-wide prefix scripts/agents-cache.sh fills) against the scripted
 * model (tests/agents/scripted_model.py), over raw HTTP with libcurl.
 *
 * Everything runs in a network namespace of its own with only its
 * loopback (so neither the CLI nor anything else can send a packet off the
 * machine) and a mount namespace with a private /tmp (the script's tool
 * writes /tmp/x; the CLI's home is there too).
 *
 * Checks: the listing; a turn as NDJSON (numbered events, the tool's
 * command and exit code, the file written, the final message); a second
 * turn as SSE that needs the first's context; events?after=N; a turn
 * started with stream=none and cancelled while its tool blocks (409 for
 * another turn meanwhile, the tool's process gone after); bad requests;
 * DELETE; and freeing the server while a turn runs (it cancels and waits:
 * LSan sees nothing left). Skipped (77) without root or without codex.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox/server.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testing.h"

#ifndef ASB_AGENTS_TESTS_DIR
#error "define ASB_AGENTS_TESTS_DIR"
#endif

#define HOST_PREFIX "/usr/local/lib/agent-sandbox/agents"
#define TOKEN "agents-test-token"

typedef struct resp {
  long status;
  char *body;
  size_t len;
} resp;

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  resp *r = ud;
  char *nb = realloc(r->body, r->len + sz * n + 1);
  if (!nb) return 0;
  memcpy(nb + r->len, p, sz * n);
  r->len += sz * n;
  nb[r->len] = 0;
  r->body = nb;
  return sz * n;
}

static int port;

static resp http(const char *method, const char *path, const char *body) {
  resp r = {0, NULL, 0};
  CURL *c = curl_easy_init();
  char url[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  h = curl_slist_append(h, "X-Access-Token: " TOKEN);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
  if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  if (!r.body) r.body = strdup("");
  return r;
}

/* Whether the scripted slow tool (`timeout 300 tail -f /dev/null`) runs in
 * this test's network namespace (the host's other tail processes, other
 * tests' sandboxes included, are not ours). */
static int slow_running(void) {
  char self[64] = "", ns[64], link[64];
  ssize_t k = readlink("/proc/self/ns/net", self, sizeof self - 1);
  if (k <= 0) return 0;
  self[k] = 0;
  DIR *d = opendir("/proc");
  if (!d) return 0;
  int found = 0;
  struct dirent *e;
  while (!found && (e = readdir(d))) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    snprintf(link, sizeof link, "/proc/%s/ns/net", e->d_name);
    k = readlink(link, ns, sizeof ns - 1);
    if (k <= 0) continue;
    ns[k] = 0;
    if (strcmp(ns, self) != 0) continue;
    char path[64], cmd[256];
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    ssize_t n = read(fd, cmd, sizeof cmd - 1);
    close(fd);
    if (n <= 0) continue;
    cmd[n] = 0; /* argv[0] */
    if (!strcmp(cmd, "tail") && n > 5 && memmem(cmd, (size_t)n, "/dev/null", 9)) found = 1;
  }
  closedir(d);
  return found;
}

/* The value of "key":"..." (or a number) in json after position from; into
 * out. */
static int field(const char *json, const char *key, char *out, size_t n) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = json ? strstr(json, pat) : NULL;
  if (!p) return -1;
  p += strlen(pat);
  size_t k = 0;
  if (*p == '"') {
    for (p++; *p && *p != '"' && k + 1 < n; p++) out[k++] = *p;
  } else {
    for (; *p && *p != ',' && *p != '}' && k + 1 < n; p++) out[k++] = *p;
  }
  out[k] = 0;
  return 0;
}

/* NDJSON: every line an event, seqs contiguous from first; the last one's
 * type into last_type, its line into last. Returns the count (-1 on a gap). */
static int events(const char *body, long long first, char *last, size_t lastn) {
  int count = 0;
  long long want = first;
  for (const char *l = body; l && *l;) {
    const char *nl = strchr(l, '\n');
    size_t len = nl ? (size_t)(nl - l) : strlen(l);
    if (len) {
      char line[1 << 14], seq[32];
      snprintf(line, sizeof line, "%.*s", (int)len, l);
      if (field(line, "seq", seq, sizeof seq) || atoll(seq) != want) return -1;
      want++;
      count++;
      if (last) snprintf(last, lastn, "%s", line);
    }
    l = nl ? nl + 1 : l + len;
  }
  return count;
}

static pid_t model_pid;

static void stop_model(void) {
  if (model_pid > 0) {
    kill(-model_pid, SIGKILL);
    waitpid(model_pid, NULL, 0);
    model_pid = 0;
  }
}

/* The test's own files, held by an fd opened before /tmp is replaced: the
 * source tree may itself be under /tmp (a clone in /tmp/x), and the private
 * /tmp would hide it. The model is started through /proc/self/fd/N. */
static int tests_dir_fd = -1;

/* A namespace of our own: loopback only, and a private /tmp. */
static int own_namespaces(void) {
  tests_dir_fd = open(ASB_AGENTS_TESTS_DIR, O_PATH | O_DIRECTORY); /* inherited by the model */
  if (tests_dir_fd < 0) return -1;
  if (unshare(CLONE_NEWNET | CLONE_NEWNS) != 0) return -1;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return -1;
  if (mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777") != 0) return -1;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  int rc = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 ? 0 : -1;
  ifr.ifr_flags |= IFF_UP;
  if (!rc) rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
  if (fd >= 0) close(fd);
  return rc;
}

static int start_model(void) {
  model_pid = fork();
  if (model_pid == 0) {
    setpgid(0, 0);
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    char script[64];
    snprintf(script, sizeof script, "/proc/self/fd/%d/scripted_model.py", tests_dir_fd);
    execl("/usr/bin/python3", "python3", script, "--ready-file", "/tmp/model.port", (char *)NULL);
    _exit(127);
  }
  for (long long until = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < until;) {
    FILE *f = fopen("/tmp/model.port", "r");
    int p = 0;
    if (f) {
      if (fscanf(f, "%d", &p) != 1) p = 0;
      fclose(f);
    }
    if (p > 0) return p;
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return 0;
}

static asb_server *S;
static char session_body[1024];

static asb_server *make_server(void) {
  asb_server_options o = ASB_SERVER_OPTIONS_INIT;
  o.host = "127.0.0.1";
  o.token = TOKEN;
  asb_server *s = NULL;
  if (asb_server_new(&s, &o) != ASB_OK) return NULL;
  asb_server_agents_options ao = ASB_SERVER_AGENTS_OPTIONS_INIT;
  ao.prefix = "/tmp/agents-prefix";
  ao.search_path = HOST_PREFIX;
  if (asb_server_enable_agents(s, &ao) != ASB_OK || asb_server_start_background(s, 0) != ASB_OK) {
    asb_server_free(s);
    return NULL;
  }
  port = asb_server_port(s);
  return s;
}

static char *new_session(void) {
  resp r = http("POST", "/agents/sessions", session_body);
  char id[64] = "";
  if (r.status != 201 || field(r.body, "id", id, sizeof id))
    ASBT_FAIL("create session: HTTP %ld %s", r.status, r.body);
  free(r.body);
  return *id ? strdup(id) : NULL;
}

TEST(turns_streams_and_log) {
  resp r = http("GET", "/agents", NULL);
  CHECK_INT(r.status, 200);
  CHECK(strstr(r.body, "\"name\":\"codex\",\"package\":\"@openai/codex\""));
  CHECK(strstr(r.body, HOST_PREFIX "/bin/codex"));
  free(r.body);
  char *id = new_session();
  if (!id) return;
  char path[256], last[1 << 14];
  /* a turn as NDJSON */
  snprintf(path, sizeof path, "/agents/sessions/%s/messages?stream=ndjson", id);
  r = http("POST", path, "{\"prompt\":\"please WRITE the file\"}");
  CHECK_INT(r.status, 200);
  int n = events(r.body, 1, last, sizeof last);
  CHECK(n >= 5);
  CHECK(strstr(last, "\"type\":\"turn.completed\"") && strstr(last, "\"status\":\"completed\""));
  CHECK(strstr(last, "\"final_message\":\"done\""));
  CHECK(strstr(last, "echo hi > /tmp/x") && strstr(last, "\"exit_code\":0"));
  CHECK(strstr(r.body, "\"type\":\"tool.completed\"") && strstr(r.body, "\"native\":"));
  free(r.body);
  char data[16] = "";
  FILE *f = fopen("/tmp/x", "r");
  if (f) {
    if (!fgets(data, sizeof data, f)) data[0] = 0;
    fclose(f);
  }
  CHECK_STR(data, "hi\n");
  /* a second turn as SSE: the agent's own context */
  snprintf(path, sizeof path, "/agents/sessions/%s/messages?stream=sse", id);
  r = http("POST", path, "{\"prompt\":\"RECALL what you did\"}");
  CHECK_INT(r.status, 200);
  char want[64];
  snprintf(want, sizeof want, "id: %d\nevent: turn.started\n", n + 1);
  CHECK(strstr(r.body, want));
  CHECK(strstr(r.body, "event: turn.completed\ndata: ") && strstr(r.body, "recall: yes"));
  free(r.body);
  /* turns back to back: the next prompt goes as soon as turn.completed has
   * been read (the session is idle by then, never 409) */
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "/agents/sessions/%s/messages?stream=ndjson", id);
    r = http("POST", path, "{\"prompt\":\"hello\"}");
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "\"type\":\"turn.completed\"") &&
          strstr(r.body, "\"final_message\":\"ok\""));
    free(r.body);
  }
  /* the log after turn 1 */
  snprintf(path, sizeof path, "/agents/sessions/%s/events?after=%d", id, n);
  r = http("GET", path, NULL);
  CHECK_INT(r.status, 200);
  CHECK(strstr(r.body, "\"status\":\"idle\"") && strstr(r.body, "\"more\":false"));
  CHECK(strstr(r.body, "\"turn\":2") && strstr(r.body, "\"turn\":4") &&
        !strstr(r.body, "\"turn\":1,"));
  free(r.body);
  snprintf(path, sizeof path, "/agents/sessions/%s", id);
  r = http("DELETE", path, NULL);
  CHECK_INT(r.status, 200);
  free(r.body);
  r = http("GET", path, NULL);
  CHECK_INT(r.status, 404);
  free(r.body);
  free(id);
}

static int wait_slow(int running) {
  for (long long until = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < until;) {
    if (slow_running() == running) return 1;
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return 0;
}

TEST(cancel_and_conflicts) {
  char *id = new_session();
  if (!id) return;
  char path[256], last[1 << 14];
  snprintf(path, sizeof path, "/agents/sessions/%s/messages?stream=none", id);
  resp r = http("POST", path, "{\"prompt\":\"SLEEP a while\"}");
  CHECK_INT(r.status, 202);
  CHECK(strstr(r.body, "\"turn\":1") && strstr(r.body, "\"after\":0"));
  free(r.body);
  CHECK(wait_slow(1));
  r = http("POST", path, "{\"prompt\":\"another\"}");
  CHECK_INT(r.status, 409);
  CHECK(strstr(r.body, "TurnInProgressError"));
  free(r.body);
  snprintf(path, sizeof path, "/agents/sessions/%s/cancel", id);
  r = http("POST", path, NULL);
  CHECK_INT(r.status, 200);
  CHECK(strstr(r.body, "\"cancelled\":true"));
  free(r.body);
  /* follow the log to the turn's end */
  snprintf(path, sizeof path, "/agents/sessions/%s/events?after=0&stream=ndjson", id);
  r = http("GET", path, NULL);
  CHECK_INT(r.status, 200);
  CHECK(events(r.body, 1, last, sizeof last) >= 2);
  CHECK(strstr(last, "\"type\":\"turn.completed\"") && strstr(last, "\"status\":\"cancelled\""));
  free(r.body);
  CHECK(wait_slow(0));
  free(id);
}

TEST(bad_requests) {
  resp r = http("POST", "/agents/sessions", "{\"agent\":\"codex\",\"colour\":\"red\"}");
  CHECK_INT(r.status, 400);
  CHECK(strstr(r.body, "unknown field 'colour'"));
  free(r.body);
  r = http("POST", "/agents/sessions", "{\"agent\":\"nope\"}");
  CHECK_INT(r.status, 404);
  CHECK(strstr(r.body, "available: codex, qwen, claude, opencode"));
  free(r.body);
  r = http("POST", "/agents/sessions", "{\"agent\":\"codex\",\"cwd\":\"/no/such\"}");
  CHECK_INT(r.status, 400);
  free(r.body);
  r = http("POST", "/agents/sessions", "[1,2]");
  CHECK_INT(r.status, 400);
  free(r.body);
  r = http("GET", "/agents/sessions/ags_nope/events?after=-1", NULL);
  CHECK_INT(r.status, 404);
  free(r.body);
}

TEST(free_while_a_turn_runs) {
  char *id = new_session();
  if (!id) return;
  char path[256];
  snprintf(path, sizeof path, "/agents/sessions/%s/messages?stream=none", id);
  resp r = http("POST", path, "{\"prompt\":\"SLEEP a while\"}");
  CHECK_INT(r.status, 202);
  free(r.body);
  CHECK(wait_slow(1));
  asb_server_free(S); /* cancels the turn and waits for it */
  S = NULL;
  CHECK(wait_slow(0));
  free(id);
}

int main(void) {
  if (geteuid() != 0) {
    printf("skipped: needs root (a network namespace of its own)\n");
    return 77;
  }
  if (access(HOST_PREFIX "/bin/codex", X_OK) != 0) {
    printf("skipped: no codex in %s (scripts/agents-cache.sh)\n", HOST_PREFIX);
    return 77;
  }
  if (own_namespaces() != 0) {
    fprintf(stderr, "cannot make a network and mount namespace: %s\n", strerror(errno));
    return 1;
  }
  setenv("HOME", "/tmp", 1);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  int mport = start_model();
  if (!mport) {
    fprintf(stderr, "the scripted model did not start\n");
    stop_model();
    return 1;
  }
  snprintf(session_body, sizeof session_body,
           "{\"agent\":\"codex\",\"cwd\":\"/tmp\",\"model\":\"scripted\","
           "\"base_url\":\"http://127.0.0.1:%d/v1\",\"api_key_env\":\"ASB_TEST_KEY\","
           "\"env\":{\"ASB_TEST_KEY\":\"sk-scripted\"},\"install\":false}",
           mport);
  S = make_server();
  if (!S) {
    fprintf(stderr, "cannot start the server: %s\n", asb_server_error_last()->message);
    stop_model();
    return 1;
  }
  RUN(turns_streams_and_log);
  RUN(cancel_and_conflicts);
  RUN(bad_requests);
  RUN(free_while_a_turn_runs);
  asb_server_free(S);
  stop_model();
  curl_global_cleanup();
  TEST_MAIN_END();
}
