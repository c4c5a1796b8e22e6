/* The public C API against a real agent-sandboxd: the control plane, the
 * router, lifetimes, pause/resume, restarts and leaks. Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <curl/curl.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "asb_testing.h"
#include "engine_http.h"
#include "mounts.h"

static engine_fixture F;
static asb_client *C;

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int make(asb_sandbox **sb, long timeout_ms, const char *const *meta, const char *const *envs,
                int auto_pause) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = timeout_ms;
  o.metadata = meta;
  o.envs = envs;
  o.auto_pause = auto_pause;
  return asb_sandbox_create(sb, C, &o);
}

TEST(create_run_info_kill) {
  const char *meta[] = {"owner=tests", "purpose=basics", NULL};
  const char *envs[] = {"GREETING=hello world", NULL};
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, 60000, meta, envs, 0), ASB_OK);
  CHECK(strlen(asb_sandbox_id(sb)) == 20);
  char *out = asbt_run_out(sb, "echo \"$GREETING\"; hostname; id -un; pwd; echo $E2B_SANDBOX");
  char want[256];
  snprintf(want, sizeof want, "hello world\n%s\nuser\n/home/user\ntrue\n", asb_sandbox_id(sb));
  CHECK_STR(out, want);
  free(out);

  asb_sandbox_info *info = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&info, sb, NULL), ASB_OK);
  CHECK_STR(asb_sandbox_info_id(info), asb_sandbox_id(sb));
  CHECK_STR(asb_sandbox_info_template_id(info), "base");
  CHECK_STR(asb_sandbox_info_state(info), "running");
  CHECK_STR(asb_sandbox_info_metadata(info, "owner"), "tests");
  CHECK(asb_sandbox_info_end_at(info) - asb_sandbox_info_started_at(info) >= 59);
  CHECK(asb_sandbox_info_cpu_count(info) > 0);
  CHECK(asb_sandbox_info_memory_mb(info) >= 128);
  asb_sandbox_info_free(info);
  CHECK_INT(asb_sandbox_is_running(sb, NULL), 1);

  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  CHECK_INT(asb_sandbox_is_running(sb, NULL), 0);
  CHECK_RC(asb_sandbox_get_info(&info, sb, NULL), ASB_ESANDBOXGONE);
  CHECK_STR(asb_error_last()->reason, "killed");
  asb_command_result *r = NULL;
  CHECK_RC(asb_commands_run(&r, sb, "true", NULL), ASB_ESANDBOXGONE);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_ESANDBOXGONE);
  asb_sandbox_free(sb);
}

TEST(unknown_sandbox_and_bad_input) {
  asb_sandbox *sb = NULL;
  CHECK_RC(asb_sandbox_connect(&sb, C, "doesnotexist0000000x", 0, NULL), ASB_ESANDBOXNOTFOUND);
  CHECK_RC(asb_sandbox_kill_id(C, "doesnotexist0000000x", NULL), ASB_ESANDBOXNOTFOUND);
  CHECK_RC(asb_sandbox_connect(&sb, C, "../../etc", 0, NULL), ASB_EINVAL);
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = "no-such-template";
  CHECK_RC(asb_sandbox_create(&sb, C, &o), ASB_ENOTFOUND);
  const char *bad[] = {"novalue", NULL};
  o.template_id = NULL;
  o.metadata = bad;
  CHECK_RC(asb_sandbox_create(&sb, C, &o), ASB_EINVAL);
}

TEST(api_key_and_envd_token_are_required) {
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.api_url = F.url;
  o.sandbox_url = F.url;
  o.api_key = "e2b_0000000000000000000000000000000000000000";
  asb_client *bad = NULL;
  REQUIRE_RC(asb_client_new(&bad, &o), ASB_OK);
  asb_sandbox *sb = NULL;
  CHECK_RC(asb_sandbox_create(&sb, bad, NULL), ASB_EAUTH);
  CHECK_INT(asb_error_last()->http_status, 401);
  asb_sandbox_page *p = NULL;
  CHECK_RC(asb_sandbox_list(&p, bad, NULL), ASB_EAUTH);

  REQUIRE_RC(make(&sb, 60000, NULL, NULL, 0), ASB_OK);
  asb_sandbox_attach_options a = ASB_SANDBOX_ATTACH_OPTIONS_INIT;
  a.envd_access_token = "wrong-token";
  asb_sandbox *thief = NULL;
  REQUIRE_RC(asb_sandbox_attach(&thief, bad, asb_sandbox_id(sb), &a), ASB_OK);
  asb_command_result *r = NULL;
  CHECK_RC(asb_commands_run(&r, thief, "touch /tmp/pwned", NULL), ASB_EAUTH);
  char *d = NULL;
  size_t n;
  CHECK_RC(asb_files_read(&d, &n, thief, "/etc/hostname", NULL), ASB_EAUTH);
  char *out = asbt_run_out(sb, "test -e /tmp/pwned && echo yes || echo no");
  CHECK_STR(out, "no\n");
  free(out);
  asb_sandbox_free(thief);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(bad);
}

TEST(lifetime_timeout_and_connect_never_shortens) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, 1000, NULL, NULL, 0), ASB_OK);
  asb_command_result *r = NULL;
  int rc = ASB_OK;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; rc == ASB_OK && asbt_now_ms() < end;) {
    usleep(100000);
    rc = asb_commands_run(&r, sb, "true", NULL);
    asb_command_result_free(r);
    r = NULL;
  }
  CHECK_RC(rc, ASB_ESANDBOXGONE);
  CHECK_STR(asb_error_last()->reason, "timeout");
  asb_sandbox_free(sb);

  REQUIRE_RC(make(&sb, 60000, NULL, NULL, 0), ASB_OK);
  asb_sandbox *again = NULL;
  REQUIRE_RC(asb_sandbox_connect(&again, C, asb_sandbox_id(sb), 5000, NULL), ASB_OK);
  asb_sandbox_info *info = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&info, sb, NULL), ASB_OK);
  CHECK(asb_sandbox_info_end_at(info) - (asb_int64)time(NULL) >= 50);
  asb_sandbox_info_free(info);
  /* set_timeout sets it, shorter or longer. */
  REQUIRE_RC(asb_sandbox_set_timeout(sb, 120000, NULL), ASB_OK);
  REQUIRE_RC(asb_sandbox_get_info(&info, sb, NULL), ASB_OK);
  CHECK(asb_sandbox_info_end_at(info) - (asb_int64)time(NULL) >= 110);
  asb_sandbox_info_free(info);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(again);
  asb_sandbox_free(sb);
}

TEST(pause_resume_keeps_id_and_files) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, 120000, NULL, NULL, 0), ASB_OK);
  char id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  for (int i = 0; i < 20; i++) {
    char path[64], body[32];
    snprintf(path, sizeof path, "/home/user/f%d", i);
    snprintf(body, sizeof body, "cycle %d", i);
    REQUIRE_RC(asb_files_write(NULL, sb, path, body, strlen(body), NULL), ASB_OK);
    REQUIRE_RC(asb_sandbox_pause(sb, NULL), 1);
    CHECK_RC(asb_sandbox_pause(sb, NULL), 0); /* already paused */
    CHECK_INT(asb_sandbox_is_running(sb, NULL), 0);
    asb_sandbox *back = NULL;
    REQUIRE_RC(asb_sandbox_connect(&back, C, id, 60000, NULL), ASB_OK);
    CHECK_STR(asb_sandbox_id(back), id);
    asb_sandbox_free(back);
  }
  char *out = asbt_run_out(sb, "cat /home/user/f*; echo");
  CHECK(strstr(out, "cycle 0") && strstr(out, "cycle 19"));
  free(out);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

TEST(auto_pause_on_timeout) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, 1000, NULL, NULL, 1), ASB_OK);
  REQUIRE_RC(asb_files_write(NULL, sb, "/home/user/keep", "kept", 4, NULL), ASB_OK);
  asb_sandbox_info *info = NULL;
  int paused = 0;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; !paused && asbt_now_ms() < end;) {
    usleep(100000);
    REQUIRE_RC(asb_sandbox_get_info(&info, sb, NULL), ASB_OK);
    paused = strcmp(asb_sandbox_info_state(info), "paused") == 0;
    asb_sandbox_info_free(info);
  }
  CHECK(paused);
  REQUIRE_RC(asb_sandbox_resume(sb, 60000, NULL), ASB_OK);
  char *out = asbt_run_out(sb, "cat /home/user/keep");
  CHECK_STR(out, "kept");
  free(out);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

static long get_port_path(const char *id, int port, const char *path, char *body);
static long get_port(const char *id, int port, char *body) {
  return get_port_path(id, port, "/index.txt", body);
}

static size_t sink(char *p, size_t s, size_t n, void *ud) {
  char *b = ud;
  size_t len = s * n, have = strlen(b);
  if (have + len < 1024) {
    memcpy(b + have, p, len);
    b[have + len] = 0;
  }
  return len;
}

/* GET path of sandbox id's port through the router; the reply's body
 * appended to body (1024 bytes). */
static long get_port_path(const char *id, int port, const char *path, char *body) {
  engine_req r = {.sandbox = id, .port = port};
  char *b = NULL;
  long st = engine_http(&F, "GET", path, &r, &b);
  size_t have = strlen(body);
  snprintf(body + have, 1024 - have, "%s", b);
  free(b);
  return st;
}

TEST(router_reaches_ports_and_names_closed_ones) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, 60000, NULL, NULL, 0), ASB_OK);
  REQUIRE_RC(
      asb_files_write(NULL, sb, "/home/user/www/index.txt", "served from the sandbox", 23, NULL),
      ASB_OK);
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.cwd = "/home/user/www";
  o.timeout_ms = -1;
  asb_process *p = NULL;
  REQUIRE_RC(asb_commands_start(&p, sb, "python3 -m http.server 8000 --bind 127.0.0.1", &o),
             ASB_OK);
  char body[1024] = "";
  long st = 0;
  /* until the server is up */
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; st != 200 && asbt_now_ms() < end;) {
    body[0] = 0;
    st = get_port(asb_sandbox_id(sb), 8000, body);
    if (st != 200) usleep(100000);
  }
  CHECK_INT(st, 200);
  CHECK_STR(body, "served from the sandbox");
  body[0] = 0;
  CHECK_INT(get_port(asb_sandbox_id(sb), 8001, body), 502);
  CHECK(strstr(body, "8001") != NULL);
  char url[256];
  REQUIRE_RC(asb_sandbox_get_url(url, sizeof url, sb, 8000), ASB_OK);
  char want[256];
  snprintf(want, sizeof want, "http://8000-%s.localhost:%d", asb_sandbox_id(sb), F.port);
  CHECK_STR(url, want);
  asb_process_kill(p, NULL);
  asb_process_free(p);
  char id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  /* a killed sandbox's port: 502 in E2B's proxy's shape, our reason kept */
  body[0] = 0;
  CHECK_INT(get_port(id, 8000, body), 502);
  char key[128];
  snprintf(key, sizeof key, "\"sandboxId\":\"%s\"", id);
  CHECK(strstr(body, key) != NULL);
  /* E2B's message word for word (its SDK suite compares it), ours beside */
  CHECK(strstr(body, "\"message\":\"The sandbox was not found\",") != NULL);
  CHECK(strstr(body, "\"reason\":\"killed\"") != NULL);
}

/* An HTTP/1.1 server in the sandbox that answers with how many connections
 * it has accepted: the router must keep and reuse its upstream connection
 * (sized bodies, empty ones, 204) instead of opening one per request. */
static const char k_counting_server[] =
    "import http.server, socketserver\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    protocol_version = 'HTTP/1.1'\n"
    "    def do_GET(self):\n"
    "        if self.path == '/none':\n"
    "            self.send_response(204); self.end_headers(); return\n"
    "        body = b'' if self.path == '/empty' else str(self.server.conns).encode()\n"
    "        self.send_response(200)\n"
    "        self.send_header('Content-Length', str(len(body)))\n"
    "        self.end_headers()\n"
    "        self.wfile.write(body)\n"
    "    def log_message(self, *a): pass\n"
    "class S(socketserver.ThreadingMixIn, http.server.HTTPServer):\n"
    "    conns = 0\n"
    "    daemon_threads = True\n"
    "    def get_request(self):\n"
    "        r = super().get_request(); S.conns += 1; return r\n"
    "S(('127.0.0.1', 8002), H).serve_forever()\n";

TEST(router_reuses_upstream_connections) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, 60000, NULL, NULL, 0), ASB_OK);
  REQUIRE_RC(asb_files_write(NULL, sb, "/home/user/count.py", k_counting_server,
                             strlen(k_counting_server), NULL),
             ASB_OK);
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.timeout_ms = -1;
  asb_process *p = NULL;
  REQUIRE_RC(asb_commands_start(&p, sb, "python3 /home/user/count.py", &o), ASB_OK);
  char body[1024] = "";
  long st = 0;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; st != 200 && asbt_now_ms() < end;) {
    body[0] = 0;
    st = get_port_path(asb_sandbox_id(sb), 8002, "/count", body);
    if (st != 200) usleep(100000);
  }
  REQUIRE(st == 200);
  int first = atoi(body);
  for (int i = 0; i < 10; i++) {
    char b[1024] = "";
    CHECK_INT(get_port_path(asb_sandbox_id(sb), 8002, "/empty", b), 200);
    CHECK_STR(b, "");
    b[0] = 0;
    CHECK_INT(get_port_path(asb_sandbox_id(sb), 8002, "/count", b), 200);
    CHECK_INT(get_port_path(asb_sandbox_id(sb), 8002, "/none", b), 204);
    b[0] = 0;
    CHECK_INT(get_port_path(asb_sandbox_id(sb), 8002, "/count", b), 200);
  }
  body[0] = 0;
  CHECK_INT(get_port_path(asb_sandbox_id(sb), 8002, "/count", body), 200);
  /* 31 requests after the first: all on the connection it opened */
  CHECK_INT(atoi(body), first);
  asb_process_kill(p, NULL);
  asb_process_free(p);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

/* A signed /files URL sent to the engine with no sandbox named (E2B's SDKs
 * with E2B_SANDBOX_URL set): the router finds the sandbox whose token
 * verifies the signature; a wrong signature reaches no sandbox. */
static long plain_files_request(const char *signed_url, const char *tamper, const char *upload,
                                char *body) {
  const char *q = strstr(signed_url, "/files?");
  if (!q) return -1;
  char url[2048];
  snprintf(url, sizeof url, "%s%s%s", F.url, q, tamper ? tamper : "");
  CURL *h = curl_easy_init();
  curl_mime *m = NULL;
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
  if (upload) {
    m = curl_mime_init(h);
    curl_mimepart *part = curl_mime_addpart(m);
    curl_mime_name(part, "file");
    curl_mime_filename(part, "up.txt");
    curl_mime_data(part, upload, CURL_ZERO_TERMINATED);
    curl_easy_setopt(h, CURLOPT_MIMEPOST, m);
  }
  long st = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
  curl_mime_free(m);
  curl_easy_cleanup(h);
  return st;
}

TEST(signed_file_urls_without_routing) {
  asb_sandbox *a = NULL, *b = NULL;
  REQUIRE_RC(make(&a, 60000, NULL, NULL, 0), ASB_OK);
  REQUIRE_RC(make(&b, 60000, NULL, NULL, 0), ASB_OK);
  REQUIRE_RC(asb_files_write(NULL, a, "/home/user/mine.txt", "a's file", 8, NULL), ASB_OK);
  REQUIRE_RC(asb_files_write(NULL, b, "/home/user/mine.txt", "b's file", 8, NULL), ASB_OK);
  char *du = NULL, *uu = NULL;
  REQUIRE_RC(asb_files_download_url(&du, b, "/home/user/mine.txt", NULL, 60), ASB_OK);
  char body[1024] = "";
  CHECK_INT(plain_files_request(du, NULL, NULL, body), 200);
  CHECK_STR(body, "b's file");
  body[0] = 0; /* a tampered signature: no sandbox's token verifies it */
  CHECK_INT(plain_files_request(du, "x", NULL, body), 401);
  CHECK(strstr(body, "b's file") == NULL);
  REQUIRE_RC(asb_files_upload_url(&uu, a, "/home/user/up.txt", NULL, 60), ASB_OK);
  body[0] = 0;
  CHECK_INT(plain_files_request(uu, NULL, "uploaded through a signed URL", body), 200);
  char *d = NULL;
  size_t n = 0;
  REQUIRE_RC(asb_files_read(&d, &n, a, "/home/user/up.txt", NULL), ASB_OK);
  CHECK_MEM(d, n, "uploaded through a signed URL", 29);
  free(d);
  CHECK_RC(asb_files_read(&d, &n, b, "/home/user/up.txt", NULL), ASB_ENOTFOUND);
  asb_free(du);
  asb_free(uu);
  asb_sandbox_kill(a, NULL);
  asb_sandbox_free(a);
  asb_sandbox_kill(b, NULL);
  asb_sandbox_free(b);
}

TEST(list_filters_and_pages) {
  const char *meta[] = {"group=paging", NULL};
  asb_sandbox *sbs[3];
  for (int i = 0; i < 3; i++) REQUIRE_RC(make(&sbs[i], 60000, meta, NULL, 0), ASB_OK);
  asb_sandbox_list_options o = ASB_SANDBOX_LIST_OPTIONS_INIT;
  o.metadata = meta;
  o.limit = 2;
  asb_sandbox_page *p = NULL;
  REQUIRE_RC(asb_sandbox_list(&p, C, &o), ASB_OK);
  CHECK_INT(asb_sandbox_page_count(p), 2);
  REQUIRE(asb_sandbox_page_next_token(p) != NULL);
  char token[64];
  snprintf(token, sizeof token, "%s", asb_sandbox_page_next_token(p));
  asb_sandbox_page_free(p);
  o.next_token = token;
  REQUIRE_RC(asb_sandbox_list(&p, C, &o), ASB_OK);
  CHECK_INT(asb_sandbox_page_count(p), 1);
  CHECK(asb_sandbox_page_next_token(p) == NULL);
  asb_sandbox_page_free(p);
  asb_sandbox_pause(sbs[0], NULL);
  asb_sandbox_list_options q = ASB_SANDBOX_LIST_OPTIONS_INIT;
  q.metadata = meta;
  q.paused = 1;
  REQUIRE_RC(asb_sandbox_list(&p, C, &q), ASB_OK);
  CHECK_INT(asb_sandbox_page_count(p), 1);
  CHECK_STR(asb_sandbox_info_id(asb_sandbox_page_get(p, 0)), asb_sandbox_id(sbs[0]));
  asb_sandbox_page_free(p);
  const char *none[] = {"group=nobody", NULL};
  q.metadata = none;
  q.paused = 0;
  REQUIRE_RC(asb_sandbox_list(&p, C, &q), ASB_OK);
  CHECK_INT(asb_sandbox_page_count(p), 0);
  asb_sandbox_page_free(p);
  /* Kill what the first page showed, then ask for the next: the token is a
   * cursor, so the one not shown yet is still on it (an offset would skip
   * it, as many places as were killed). */
  o.next_token = NULL;
  REQUIRE_RC(asb_sandbox_list(&p, C, &o), ASB_OK);
  CHECK_INT(asb_sandbox_page_count(p), 2);
  int shown[3] = {0, 0, 0};
  for (size_t i = 0; i < asb_sandbox_page_count(p); i++) {
    const char *id = asb_sandbox_info_id(asb_sandbox_page_get(p, i));
    for (int k = 0; k < 3; k++) shown[k] |= strcmp(id, asb_sandbox_id(sbs[k])) == 0;
    CHECK_RC(asb_sandbox_kill_id(C, id, NULL), ASB_OK);
  }
  const char *nt = asb_sandbox_page_next_token(p);
  snprintf(token, sizeof token, "%s", nt ? nt : "");
  asb_sandbox_page_free(p);
  o.next_token = token;
  REQUIRE_RC(asb_sandbox_list(&p, C, &o), ASB_OK);
  CHECK_INT(asb_sandbox_page_count(p), 1);
  for (int k = 0; k < 3 && asb_sandbox_page_count(p) == 1; k++)
    if (!shown[k])
      CHECK_STR(asb_sandbox_info_id(asb_sandbox_page_get(p, 0)), asb_sandbox_id(sbs[k]));
  CHECK(asb_sandbox_page_next_token(p) == NULL);
  asb_sandbox_page_free(p);
  p = NULL;
  const char *bad[] = {"o2", "c", "c.abc", "c12", "c12.", "c-1.abc", "c12.ABC", "c12.a/b"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    o.next_token = bad[i];
    CHECK_RC(asb_sandbox_list(&p, C, &o), ASB_EINVAL);
    asb_sandbox_page_free(p);
    p = NULL;
  }
  for (int i = 0; i < 3; i++) {
    asb_sandbox_kill(sbs[i], NULL);
    asb_sandbox_free(sbs[i]);
  }
}

TEST(metrics) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, 60000, NULL, NULL, 0), ASB_OK);
  asb_metrics *m = NULL;
  REQUIRE_RC(asb_sandbox_get_metrics(&m, sb, 0, 0, NULL), ASB_OK);
  REQUIRE(asb_metrics_count(m) >= 1);
  size_t last = asb_metrics_count(m) - 1;
  CHECK(asb_metrics_mem_total(m, last) > 0);
  CHECK(asb_metrics_mem_used(m, last) > 0);
  CHECK(asb_metrics_disk_total(m, last) > 0);
  CHECK(asb_metrics_sampled_at(m, last) > 1700000000);
  asb_metrics_free(m);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

TEST(sandboxes_do_not_see_each_other) {
  asb_sandbox *a = NULL, *b = NULL;
  REQUIRE_RC(make(&a, 60000, NULL, NULL, 0), ASB_OK);
  REQUIRE_RC(make(&b, 60000, NULL, NULL, 0), ASB_OK);
  REQUIRE_RC(asb_files_write(NULL, a, "/tmp/secret-of-a", "a", 1, NULL), ASB_OK);
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  asb_process *p = NULL;
  REQUIRE_RC(asb_commands_start(&p, a, "sleep 30", &o), ASB_OK);
  CHECK_RC(asb_files_exists(b, "/tmp/secret-of-a", NULL), 0);
  char *out = asbt_run_out(b, "ps -e -o comm= | grep -c '^sleep$' || true");
  CHECK_STR(out, "0\n");
  free(out);
  asb_process_free(p);
  asb_sandbox_kill(a, NULL);
  asb_sandbox_kill(b, NULL);
  asb_sandbox_free(a);
  asb_sandbox_free(b);
}

TEST(engine_restart_adopts_live_sandboxes) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, 120000, NULL, NULL, 0), ASB_OK);
  REQUIRE_RC(asb_files_write(NULL, sb, "/home/user/survivor", "still here", 10, NULL), ASB_OK);
  /* A crash: kill -9, then a new engine on the same state and port. */
  engine_fixture_signal(&F, SIGKILL);
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  char *d = NULL;
  size_t n = 0;
  REQUIRE_RC(asb_files_read(&d, &n, sb, "/home/user/survivor", NULL), ASB_OK);
  CHECK_MEM(d, n, "still here", 10);
  asb_free(d);
  char *out = asbt_run_out(sb, "echo alive");
  CHECK_STR(out, "alive\n");
  free(out);
  asb_sandbox_info *info = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&info, sb, NULL), ASB_OK);
  CHECK_STR(asb_sandbox_info_state(info), "running");
  asb_sandbox_info_free(info);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

TEST(session_reconnects_from_another_process) {
  char dir[128];
  snprintf(dir, sizeof dir, "/tmp/asb-e2e-sessions-%d", (int)getpid());
  setenv("ASB_SESSION_DIR", dir, 1);
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, 60000, NULL, NULL, 0), ASB_OK);
  REQUIRE_RC(asb_files_write(NULL, sb, "/home/user/note", "from the first process", 22, NULL),
             ASB_OK);
  const char *meta[] = {"task=e2e", NULL};
  REQUIRE_RC(asb_session_save("agent-work", sb, meta), ASB_OK);
  pid_t kid = fork();
  if (kid == 0) {
    asb_client *c = NULL;
    asb_sandbox *again = NULL;
    char *d = NULL;
    size_t n = 0;
    if (engine_fixture_client(&F, &c) || asb_session_load(&again, c, "agent-work", 0, NULL) ||
        asb_files_read(&d, &n, again, "/home/user/note", NULL) || n != 22 ||
        memcmp(d, "from the first process", 22) != 0)
      _exit(1);
    _exit(0);
  }
  int st = 0;
  waitpid(kid, &st, 0);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  asb_sandbox_kill(sb, NULL);
  asb_client *c2 = NULL;
  asb_sandbox *gone = NULL;
  REQUIRE_RC(engine_fixture_client(&F, &c2), ASB_OK);
  CHECK_RC(asb_session_load(&gone, c2, "agent-work", 0, NULL), ASB_ESANDBOXGONE);
  CHECK_RC(asb_session_delete("agent-work"), ASB_OK);
  asb_client_free(c2);
  asb_sandbox_free(sb);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
}

/* ---- leaks ----------------------------------------------------------------------- */

static int count_dir(const char *path) {
  DIR *d = opendir(path);
  if (!d) return 0;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

/* Loop devices backing a sandbox's disk (pooled spares are not counted:
 * the pool refills in the background). */
static int count_sandbox_loops(void) {
  DIR *d = opendir("/sys/block");
  if (!d) return 0;
  char want[256];
  snprintf(want, sizeof want, "%s/sandboxes/", F.state);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strncmp(de->d_name, "loop", 4) != 0) continue;
    char path[512], back[512] = "";
    snprintf(path, sizeof path, "/sys/block/%s/loop/backing_file", de->d_name);
    FILE *f = fopen(path, "r");
    if (f && fgets(back, sizeof back, f) && strncmp(back, want, strlen(want)) == 0) n++;
    if (f) fclose(f);
  }
  closedir(d);
  return n;
}

static int count_cgroups(void) {
  /* Every cgroup the engine made carries its name. */
  char cmd[256];
  snprintf(cmd, sizeof cmd, "find /sys/fs/cgroup -maxdepth 6 -type d -name '%s' 2>/dev/null",
           F.cgroup);
  FILE *p = popen(cmd, "r");
  int n = 0;
  char line[512];
  while (p && fgets(line, sizeof line, p)) {
    line[strcspn(line, "\n")] = 0;
    n += count_dir(line);
  }
  if (p) pclose(p);
  return n;
}

TEST(create_kill_loop_leaks_nothing) {
  asbt_mounts mounts0;
  asbt_mounts_take(&mounts0);
  int loops0 = count_sandbox_loops();
  int cg0 = count_cgroups();
  char sdir[256];
  snprintf(sdir, sizeof sdir, "%s/sandboxes", F.state);
  int dirs0 = count_dir(sdir);
  uint64_t t0 = now_ms();
  for (int i = 0; i < 50; i++) {
    asb_sandbox *sb = NULL;
    REQUIRE_RC(make(&sb, 60000, NULL, NULL, 0), ASB_OK);
    if (i % 10 == 0) {
      char *out = asbt_run_out(sb, "echo ok");
      CHECK_STR(out, "ok\n");
      free(out);
    }
    REQUIRE_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
    asb_sandbox_free(sb);
  }
  printf("  50 create+kill cycles in %llu ms\n", (unsigned long long)(now_ms() - t0));
  CHECK_INT(asbt_mounts_new(&mounts0, F.state), 0);
  asbt_mounts_free(&mounts0);
  CHECK_INT(count_sandbox_loops(), loops0);
  CHECK_INT(loops0, 0);
  CHECK_INT(count_cgroups(), cg0);
  CHECK_INT(count_dir(sdir), dirs0);
}

int main(void) {
  /* An operator's strict umask must not reach the sandboxes' dirs: the
   * engine sets its own before any thread (a umask changed for a moment in
   * one thread once gave a pooled writable layer a 0700 "/"). */
  umask(077);
  if (engine_fixture_start(&F, "e2e") != 0 || engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine (%s)\n", ASB_ENGINE_BIN);
    engine_fixture_stop(&F);
    return 1;
  }
  RUN(create_run_info_kill);
  RUN(unknown_sandbox_and_bad_input);
  RUN(api_key_and_envd_token_are_required);
  RUN(lifetime_timeout_and_connect_never_shortens);
  RUN(pause_resume_keeps_id_and_files);
  RUN(auto_pause_on_timeout);
  RUN(router_reaches_ports_and_names_closed_ones);
  RUN(router_reuses_upstream_connections);
  RUN(signed_file_urls_without_routing);
  RUN(list_filters_and_pages);
  RUN(metrics);
  RUN(sandboxes_do_not_see_each_other);
  RUN(engine_restart_adopts_live_sandboxes);
  RUN(session_reconnects_from_another_process);
  RUN(create_kill_loop_leaks_nothing);
  asb_client_free(C);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
