/* agent-sandbox-mcp: sandboxes as MCP tools for LLM agents, over stdio
 * (the default: an MCP client starts it) or Streamable HTTP (--http).
 * Configured like every libagentsandbox program (ASB_* / E2B_* variables,
 * or nothing: the local engine); see docs/mcp.md.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp.h"
#include "proto/pjson.h"
#include "util/util.h"

int mcp_signal_pipe[2] = {-1, -1};

static void on_signal(int sig) {
  (void)sig;
  char b = 's';
  if (write(mcp_signal_pipe[1], &b, 1) < 0) {
  }
}

static int usage(FILE *f) {
  fprintf(
      f,
      "usage: agent-sandbox-mcp [options]\n"
      "\n"
      "Serves sandboxes as Model Context Protocol tools: over stdin/stdout by default\n"
      "(an MCP client starts it), or over Streamable HTTP with --http.\n"
      "\n"
      "transport\n"
      "  --http                  serve Streamable HTTP instead of stdio\n"
      "  --listen HOST:PORT      HTTP address (implies --http; default 127.0.0.1:49985)\n"
      "  --path PATH             HTTP endpoint (default /mcp)\n"
      "  --token TOKEN           bearer token clients must send (or $ASB_MCP_TOKEN)\n"
      "  --token-file FILE       read the token from FILE; made (0600) if missing\n"
      "                          (with neither, a fresh token is printed at start)\n"
      "  --no-auth               no token (only when listening on loopback)\n"
      "  --allow-origin ORIGIN   a browser Origin to accept besides loopback ones\n"
      "  --session-idle S        end HTTP sessions idle this long (default 3600)\n"
      "  --max-sessions N        concurrent HTTP sessions (default 64)\n"
      "sandboxes\n"
      "  --template T            template of the default sandbox (default base)\n"
      "  --sandbox-timeout S     the default sandbox lives S seconds past its last use\n"
      "                          (default 900)\n"
      "  --keep                  keep the default sandbox when the session ends\n"
      "  --api-url URL, --domain D, --sandbox-url URL\n"
      "                          where the sandboxes are (default: $ASB_*/$E2B_*, else the\n"
      "                          local engine); the API key comes from ASB_API_KEY/E2B_API_KEY\n"
      "limits and tools\n"
      "  --max-message-bytes N   largest incoming message (default 4194304)\n"
      "  --max-read-bytes N      largest file read_file returns (default 1048576)\n"
      "  --max-output-bytes N    output of each stream kept in a result (default 65536)\n"
      "  --max-calls N           requests in flight per session (default 64)\n"
      "  --disable-tool NAME     do not offer this tool (repeatable)\n"
      "  --print-tools-json      print the tools (as tools/list sends them) and exit\n"
      "  --print-tools-markdown  print the tool reference of docs/mcp.md and exit\n"
      "  -v, --verbose           log sessions and calls to stderr\n"
      "  --version, --help\n");
  return f == stdout ? 0 : 2;
}

static int parse_size(const char *s, size_t *out) {
  int64_t v;
  if (!s || asbi_parse_i64(s, strlen(s), &v) != 0 || v <= 0) return -1;
  *out = (size_t)v;
  return 0;
}

static int parse_long(const char *s, long *out) {
  int64_t v;
  if (!s || asbi_parse_i64(s, strlen(s), &v) != 0 || v <= 0 || v > 10000000) return -1;
  *out = (long)v;
  return 0;
}

/* The token in file, or a fresh one written there (0600, never through a
 * symlink). */
static char *token_from_file(const char *path) {
  asbi_buf b = ASBI_BUF_INIT;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0) return NULL;
    size_t len = (size_t)n;
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ')) len--;
    if (len < 16) {
      fprintf(stderr, "agent-sandbox-mcp: %s: the token must have at least 16 characters\n", path);
      return NULL;
    }
    asbi_buf_append(&b, buf, len);
    return asbi_buf_detach(&b, NULL);
  }
  if (errno != ENOENT) {
    fprintf(stderr, "agent-sandbox-mcp: %s: %s\n", path, strerror(errno));
    return NULL;
  }
  char tok[65];
  if (asbi_random_hex(tok, 64) != 0) return NULL;
  fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, tok, 64) != 64 || write(fd, "\n", 1) != 1) {
    fprintf(stderr, "agent-sandbox-mcp: cannot write %s: %s\n", path, strerror(errno));
    if (fd >= 0) close(fd);
    return NULL;
  }
  close(fd);
  return asbi_strdup(tok);
}

static int is_loopback_listen(const char *l) {
  return asbi_startswith(l, "127.") || asbi_startswith(l, "[::1]") ||
         asbi_startswith(l, "localhost:");
}

/* The option lists (--disable-tool, --allow-origin) live as long as the
 * program: freed at exit, whichever of main's returns ends it (--version
 * and every usage error return early). */
static char **opt_disabled, **opt_origins;
static void free_option_lists(void) {
  free(opt_disabled);
  free(opt_origins);
}

int main(int argc, char **argv) {
  mcp_config cfg = {0};
  cfg.sandbox_timeout_s = 900;
  cfg.max_message = 4u << 20;
  cfg.max_read = 1u << 20;
  cfg.max_output = 64u << 10;
  cfg.max_stream = 1u << 20;
  cfg.max_calls = 64;
  asb_client_options copts = ASB_CLIENT_OPTIONS_INIT;
  mcp_http_options ho = {0};
  ho.listen = "127.0.0.1:49985";
  ho.path = "/mcp";
  ho.session_idle_s = 3600;
  ho.max_sessions = 64;
  int http = 0, print_md = 0, print_json = 0;
  const char *token = NULL, *token_file = NULL;
  char **disabled = opt_disabled = calloc((size_t)argc + 1, sizeof *disabled);
  char **origins = opt_origins = calloc((size_t)argc + 1, sizeof *origins);
  size_t nd = 0, no = 0;
  if (atexit(free_option_lists) != 0 || !disabled || !origins) return 1;
#define NEED_ARG()                                                 \
  do {                                                             \
    if (i + 1 >= argc) {                                           \
      fprintf(stderr, "agent-sandbox-mcp: %s needs a value\n", a); \
      return 2;                                                    \
    }                                                              \
  } while (0)
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    long l;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout);
    if (!strcmp(a, "--version")) {
      printf("agent-sandbox-mcp %s\n", asb_version(NULL, NULL, NULL));
      return 0;
    }
    if (!strcmp(a, "--stdio")) {
      http = 0;
    } else if (!strcmp(a, "--http")) {
      http = 1;
    } else if (!strcmp(a, "--listen")) {
      NEED_ARG();
      ho.listen = argv[++i];
      http = 1;
    } else if (!strcmp(a, "--path")) {
      NEED_ARG();
      ho.path = argv[++i];
      if (ho.path[0] != '/') {
        fprintf(stderr, "agent-sandbox-mcp: --path must start with /\n");
        return 2;
      }
    } else if (!strcmp(a, "--token")) {
      NEED_ARG();
      token = argv[++i];
    } else if (!strcmp(a, "--token-file")) {
      NEED_ARG();
      token_file = argv[++i];
    } else if (!strcmp(a, "--no-auth")) {
      ho.no_auth = 1;
    } else if (!strcmp(a, "--allow-origin")) {
      NEED_ARG();
      origins[no++] = argv[++i];
    } else if (!strcmp(a, "--session-idle")) {
      NEED_ARG();
      if (parse_long(argv[++i], &ho.session_idle_s)) goto bad;
    } else if (!strcmp(a, "--max-sessions")) {
      NEED_ARG();
      if (parse_long(argv[++i], &l)) goto bad;
      ho.max_sessions = (int)l;
    } else if (!strcmp(a, "--template")) {
      NEED_ARG();
      cfg.template_id = argv[++i];
    } else if (!strcmp(a, "--sandbox-timeout")) {
      NEED_ARG();
      if (parse_long(argv[++i], &cfg.sandbox_timeout_s) || cfg.sandbox_timeout_s > 86400) goto bad;
    } else if (!strcmp(a, "--keep")) {
      cfg.keep = 1;
    } else if (!strcmp(a, "--api-url")) {
      NEED_ARG();
      copts.api_url = argv[++i];
    } else if (!strcmp(a, "--domain")) {
      NEED_ARG();
      copts.domain = argv[++i];
    } else if (!strcmp(a, "--sandbox-url")) {
      NEED_ARG();
      copts.sandbox_url = argv[++i];
    } else if (!strcmp(a, "--max-message-bytes")) {
      NEED_ARG();
      if (parse_size(argv[++i], &cfg.max_message)) goto bad;
    } else if (!strcmp(a, "--max-read-bytes")) {
      NEED_ARG();
      if (parse_size(argv[++i], &cfg.max_read)) goto bad;
    } else if (!strcmp(a, "--max-output-bytes")) {
      NEED_ARG();
      if (parse_size(argv[++i], &cfg.max_output)) goto bad;
    } else if (!strcmp(a, "--max-calls")) {
      NEED_ARG();
      if (parse_long(argv[++i], &l)) goto bad;
      cfg.max_calls = (int)l;
    } else if (!strcmp(a, "--disable-tool")) {
      NEED_ARG();
      disabled[nd++] = argv[++i];
    } else if (!strcmp(a, "--print-tools-markdown")) {
      print_md = 1;
    } else if (!strcmp(a, "--print-tools-json")) {
      print_json = 1;
    } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
      cfg.verbose = 1;
    } else {
      fprintf(stderr, "agent-sandbox-mcp: unknown option %s\n", a);
      return usage(stderr);
    }
    continue;
  bad:
    fprintf(stderr, "agent-sandbox-mcp: %s: bad value %s\n", a, argv[i]);
    return 2;
  }
  cfg.disabled = disabled;
  ho.allowed_origins = origins;

  if (print_md || print_json) {
    mcp_server srv;
    if (mcp_server_init(&srv, &cfg, NULL)) return 1;
    char *out = print_md ? mcp_tools_markdown(srv.tools) : cJSON_Print(srv.tools);
    fputs(out ? out : "", stdout);
    if (print_json) fputc('\n', stdout);
    free(out);
    (void)mcp_server_free(&srv);
    return 0;
  }

  char *owned_token = NULL;
  if (http) {
    if (!token) token = asbi_getenv("ASB_MCP_TOKEN");
    if (ho.no_auth) {
      if (token || token_file) {
        fprintf(stderr, "agent-sandbox-mcp: --no-auth with a token makes no sense\n");
        return 2;
      }
      if (!is_loopback_listen(ho.listen)) {
        fprintf(stderr, "agent-sandbox-mcp: --no-auth is only allowed on a loopback address\n");
        return 2;
      }
    } else if (token) {
      if (strlen(token) < 16) {
        fprintf(stderr, "agent-sandbox-mcp: the token must have at least 16 characters\n");
        return 2;
      }
      ho.token = token;
    } else if (token_file) {
      owned_token = token_from_file(token_file);
      if (!owned_token) return 1;
      ho.token = owned_token;
    } else {
      char tok[65];
      if (asbi_random_hex(tok, 64) != 0) return 1;
      owned_token = asbi_strdup(tok);
      ho.token = owned_token;
      printf("token: %s\n", tok);
      fflush(stdout);
    }
  }

  if (pipe2(mcp_signal_pipe, O_CLOEXEC) != 0) return 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  if (asb_global_init() != ASB_OK) {
    fprintf(stderr, "agent-sandbox-mcp: %s\n", asb_error_last()->message);
    return 1;
  }
  mcp_server srv;
  if (mcp_server_init(&srv, &cfg, &copts)) return 1;
  int rc = http ? mcp_http_run(&srv, &ho) : mcp_stdio_run(&srv);
  if (mcp_server_free(&srv)) {
    /* A call is stuck in the library past every grace: its thread still
     * uses the client, so nothing may be torn down under it. */
    fprintf(stderr, "agent-sandbox-mcp: calls still running at exit; leaving without cleanup\n");
    fflush(stdout);
    _exit(rc);
  }
  asb_global_cleanup();
  free(owned_token);
  return rc;
}
