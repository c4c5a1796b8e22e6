/* asb — a small command-line tool over libagentsandbox: templates (build,
 * list, get, delete), sandboxes (create, list, exec, ls, cp, kill) and
 * named commands (run, commands). With nothing configured it talks to the
 * local engine (starting it if needed), like the library; the E2B_* and
 * ASB_* variables point it elsewhere. See docs/cli.md.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tmpl/tmpl.h"

static asb_client *client;

static int usage(FILE *f) {
  fprintf(f,
          "usage: asb <command> [arguments]\n"
          "\n"
          "templates\n"
          "  asb template build <dir> [--force] [--log]  build from <dir>/template.yaml\n"
          "  asb template list                           every template\n"
          "  asb template get <id|name>                  one template, as JSON\n"
          "  asb template delete <id|name>\n"
          "  asb template check <dir>                    validate template.yaml only\n"
          "sandboxes\n"
          "  asb create [--template T] [--timeout S] [--env K=V]... [--meta K=V]...\n"
          "                                              prints the new sandbox's id\n"
          "  asb list                                    running and paused sandboxes\n"
          "  asb exec <id> [--user U] [--cwd DIR] [--timeout S] -- <command...>\n"
          "  asb ls <id> [path]\n"
          "  asb cp <src> <dst>                          one side is <id>:<path>\n"
          "  asb kill <id>\n"
          "named commands\n"
          "  asb commands <id> [--port P]                what the sandbox serves\n"
          "  asb run <id> <name> [json-args] [--port P]  call one; prints its JSON result\n"
          "\n"
          "Configuration: E2B_API_URL/ASB_API_URL, E2B_API_KEY/ASB_API_KEY, E2B_DOMAIN,\n"
          "E2B_SANDBOX_URL; none = the local engine (docs/reference/client.md).\n");
  return f == stdout ? 0 : 2;
}

static int fail(const char *what) {
  const asb_error *e = asb_error_last();
  fprintf(stderr, "asb: %s: %s (%s)\n", what, e->message, asb_status_name(e->code));
  switch (e->code) {
    case ASB_EINVAL:
      return 2;
    case ASB_ENOTFOUND:
    case ASB_ESANDBOXNOTFOUND:
    case ASB_ECOMMANDNOTFOUND:
      return 3;
    default:
      return 1;
  }
}

static int connect_to(const char *id, asb_sandbox **sb) {
  int rc = asb_sandbox_connect(sb, client, id, 0, NULL);
  return rc == ASB_OK ? 0 : fail(id);
}

/* ---- templates -------------------------------------------------------------- */

static int template_check(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/template.yaml", dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(path, sizeof path, "%s/template.yml", dir);
    f = fopen(path, "r");
  }
  if (!f) {
    fprintf(stderr, "asb: %s has no template.yaml\n", dir);
    return 2;
  }
  static char buf[ASBI_TMPL_MAX_BYTES + 1];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  asbi_tmpl_error err;
  cJSON *spec = asbi_tmpl_parse(buf, n, &err);
  if (!spec) {
    char msg[1024];
    asbi_tmpl_format_error(&err, path, msg, sizeof msg);
    fprintf(stderr, "asb: %s\n", msg);
    return 2;
  }
  cJSON_Delete(spec);
  return 0;
}

static int template_cmd(int argc, char **argv) {
  if (argc < 1) return usage(stderr);
  const char *sub = argv[0];
  if (!strcmp(sub, "check") && argc == 2) {
    int rc = template_check(argv[1]);
    if (!rc) printf("%s/template.yaml: ok\n", argv[1]);
    return rc;
  }
  if (!strcmp(sub, "build") && argc >= 2) {
    asb_template_build_options o = ASB_TEMPLATE_BUILD_OPTIONS_INIT;
    int show_log = 0;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--force"))
        o.force = 1;
      else if (!strcmp(argv[i], "--log"))
        show_log = 1;
      else if (!dir)
        dir = argv[i];
      else
        return usage(stderr);
    }
    if (!dir) return usage(stderr);
    int rc = template_check(dir); /* clear errors before uploading */
    if (rc) return rc;
    asb_template *t = NULL;
    if (asb_templates_build(&t, client, dir, &o) != ASB_OK) return fail("template build");
    if (show_log && asb_template_build_log(t)) fputs(asb_template_build_log(t), stderr);
    printf("%s %s %s (%s)\n", asb_template_name(t), asb_template_id(t), asb_template_build_id(t),
           asb_template_cached(t) ? "cached" : "built");
    asb_template_free(t);
    return 0;
  }
  if (!strcmp(sub, "list") && argc == 1) {
    asb_template_list *l = NULL;
    if (asb_templates_list(&l, client, NULL) != ASB_OK) return fail("template list");
    printf("%-22s %-24s %-8s %4s %7s %7s  %s\n", "ID", "NAME", "STATUS", "CPU", "MEM_MB", "DISK_MB",
           "DESCRIPTION");
    for (size_t i = 0; i < asb_template_list_count(l); i++) {
      const asb_template *t = asb_template_list_get(l, i);
      /* "ready", or "waiting" for a bundled template not built yet */
      cJSON *j = cJSON_Parse(asb_template_json(t));
      const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "buildStatus");
      printf("%-22s %-24s %-8s %4d %7d %7d  %s\n", asb_template_id(t), asb_template_name(t),
             cJSON_IsString(st) ? st->valuestring : "ready", asb_template_cpu_count(t),
             asb_template_memory_mb(t), asb_template_disk_mb(t), asb_template_description(t));
      cJSON_Delete(j);
    }
    asb_template_list_free(l);
    return 0;
  }
  if (!strcmp(sub, "get") && argc == 2) {
    asb_template *t = NULL;
    if (asb_templates_get(&t, client, argv[1], NULL) != ASB_OK) return fail(argv[1]);
    printf("%s\n", asb_template_json(t));
    asb_template_free(t);
    return 0;
  }
  if (!strcmp(sub, "delete") && argc == 2) {
    if (asb_templates_delete(client, argv[1], NULL) != ASB_OK) return fail(argv[1]);
    return 0;
  }
  return usage(stderr);
}

/* ---- sandboxes ----------------------------------------------------------------- */

static int create_cmd(int argc, char **argv) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  const char *envs[64], *meta[64];
  int ne = 0, nm = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--template") && i + 1 < argc)
      o.template_id = argv[++i];
    else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
      o.timeout_ms = atol(argv[++i]) * 1000;
    else if (!strcmp(argv[i], "--env") && i + 1 < argc && ne < 63)
      envs[ne++] = argv[++i];
    else if (!strcmp(argv[i], "--meta") && i + 1 < argc && nm < 63)
      meta[nm++] = argv[++i];
    else
      return usage(stderr);
  }
  envs[ne] = meta[nm] = NULL;
  if (ne) o.envs = envs;
  if (nm) o.metadata = meta;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, client, &o) != ASB_OK) return fail("create");
  printf("%s\n", asb_sandbox_id(sb));
  asb_sandbox_free(sb);
  return 0;
}

static int list_cmd(void) {
  /* Every page, not only the first 100. */
  asb_sandbox_list_options o = ASB_SANDBOX_LIST_OPTIONS_INIT;
  char *token = NULL;
  printf("%-22s %-24s %-8s %s\n", "ID", "TEMPLATE", "STATE", "ENDS");
  do {
    asb_sandbox_page *p = NULL;
    o.next_token = token;
    int rc = asb_sandbox_list(&p, client, &o);
    free(token);
    token = NULL;
    if (rc != ASB_OK) return fail("list");
    for (size_t i = 0; i < asb_sandbox_page_count(p); i++) {
      const asb_sandbox_info *s = asb_sandbox_page_get(p, i);
      const char *name = asb_sandbox_info_name(s);
      printf("%-22s %-24s %-8s in %llds\n", asb_sandbox_info_id(s),
             name ? name : asb_sandbox_info_template_id(s), asb_sandbox_info_state(s),
             (long long)(asb_sandbox_info_end_at(s) - (asb_int64)time(NULL)));
    }
    const char *next = asb_sandbox_page_next_token(p);
    if (next && !(token = strdup(next))) {
      asb_sandbox_page_free(p);
      fprintf(stderr, "asb: list: out of memory\n");
      return 1;
    }
    asb_sandbox_page_free(p);
  } while (token);
  return 0;
}

static int to_stdout(const char *data, size_t len, void *ud) {
  (void)ud;
  fwrite(data, 1, len, stdout);
  fflush(stdout);
  return 0;
}

static int to_stderr(const char *data, size_t len, void *ud) {
  (void)ud;
  fwrite(data, 1, len, stderr);
  return 0;
}

static int exec_cmd(int argc, char **argv) {
  if (argc < 1) return usage(stderr);
  const char *id = argv[0];
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--"); i++) {
    if (!strcmp(argv[i], "--user") && i + 1 < argc)
      o.user = argv[++i];
    else if (!strcmp(argv[i], "--cwd") && i + 1 < argc)
      o.cwd = argv[++i];
    else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
      o.timeout_ms = atol(argv[++i]) * 1000;
    else
      break;
  }
  if (i < argc && !strcmp(argv[i], "--")) i++;
  if (i >= argc) return usage(stderr);
  char cmd[65536] = "";
  for (size_t n = 0; i < argc; i++)
    n += (size_t)snprintf(cmd + n, sizeof cmd - n, "%s%s", n ? " " : "", argv[i]);
  asb_sandbox *sb = NULL;
  int rc = connect_to(id, &sb);
  if (rc) return rc;
  o.on_stdout = to_stdout; /* streamed as it comes */
  o.on_stderr = to_stderr;
  o.discard_output = 1;
  asb_command_result *r = NULL;
  int st = asb_commands_run(&r, sb, cmd, &o);
  int code;
  if (r) {
    code = asb_command_result_exit_code(r);
    if (code < 0) code = 128;
  } else {
    code = fail("exec");
  }
  if (r && st != ASB_OK && st != ASB_ECOMMANDEXIT) fail("exec");
  asb_command_result_free(r);
  asb_sandbox_free(sb);
  return code;
}

static int ls_cmd(int argc, char **argv) {
  if (argc < 1 || argc > 2) return usage(stderr);
  asb_sandbox *sb = NULL;
  int rc = connect_to(argv[0], &sb);
  if (rc) return rc;
  asb_entry_list *l = NULL;
  if (asb_files_list(&l, sb, argc > 1 ? argv[1] : "/home/user", 1, NULL) != ASB_OK) {
    asb_sandbox_free(sb);
    return fail("ls");
  }
  for (size_t i = 0; i < asb_entry_list_count(l); i++) {
    const asb_entry *e = asb_entry_list_get(l, i);
    printf("%s %-8s %10lld %s%s\n", asb_entry_permissions(e), asb_entry_owner(e),
           (long long)asb_entry_size(e), asb_entry_name(e),
           asb_entry_type(e) == ASB_FILE_TYPE_DIR ? "/" : "");
  }
  asb_entry_list_free(l);
  asb_sandbox_free(sb);
  return 0;
}

/* "<id>:<path>" → id (in buf) and path; NULL if arg is a local path. */
static const char *remote(const char *arg, char *id, size_t len) {
  const char *colon = strchr(arg, ':');
  if (!colon || colon == arg || (size_t)(colon - arg) >= len || strchr(arg, '/') < colon)
    return NULL;
  snprintf(id, len, "%.*s", (int)(colon - arg), arg);
  return colon + 1;
}

static int cp_cmd(int argc, char **argv) {
  if (argc != 2) return usage(stderr);
  char id_src[64], id_dst[64];
  const char *rsrc = remote(argv[0], id_src, sizeof id_src);
  const char *rdst = remote(argv[1], id_dst, sizeof id_dst);
  if (!!rsrc == !!rdst) {
    fprintf(stderr, "asb: cp: exactly one side must be <sandbox-id>:<path>\n");
    return 2;
  }
  asb_sandbox *sb = NULL;
  int rc = connect_to(rsrc ? id_src : id_dst, &sb);
  if (rc) return rc;
  if (rsrc) { /* download */
    char *data = NULL;
    size_t len = 0;
    if (asb_files_read(&data, &len, sb, rsrc, NULL) != ASB_OK) {
      asb_sandbox_free(sb);
      return fail("cp");
    }
    FILE *f = !strcmp(argv[1], "-") ? stdout : fopen(argv[1], "wb");
    if (!f || fwrite(data, 1, len, f) != len) rc = 1;
    if (f && f != stdout) fclose(f);
    if (rc) fprintf(stderr, "asb: cp: cannot write %s: %s\n", argv[1], strerror(errno));
    asb_free(data);
  } else { /* upload */
    FILE *f = !strcmp(argv[0], "-") ? stdin : fopen(argv[0], "rb");
    if (!f) {
      fprintf(stderr, "asb: cp: %s: %s\n", argv[0], strerror(errno));
      asb_sandbox_free(sb);
      return 1;
    }
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap);
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
      len += n;
      if (len == cap) {
        char *nb = realloc(buf, cap *= 2);
        if (!nb) {
          free(buf);
          buf = NULL;
        } else {
          buf = nb;
        }
      }
    }
    if (f != stdin) fclose(f);
    if (!buf || asb_files_write(NULL, sb, rdst, buf, len, NULL) != ASB_OK) rc = fail("cp");
    free(buf);
  }
  asb_sandbox_free(sb);
  return rc;
}

static int kill_cmd(int argc, char **argv) {
  if (argc != 1) return usage(stderr);
  if (asb_sandbox_kill_id(client, argv[0], NULL) != ASB_OK) return fail(argv[0]);
  return 0;
}

/* ---- named commands ------------------------------------------------------------- */

static int port_opt(int *argc, char **argv, asb_named_command_options *o) {
  for (int i = 0; i < *argc; i++)
    if (!strcmp(argv[i], "--port") && i + 1 < *argc) {
      o->port = atoi(argv[i + 1]);
      memmove(argv + i, argv + i + 2, (size_t)(*argc - i - 2) * sizeof *argv);
      *argc -= 2;
      return 0;
    }
  return 0;
}

static int commands_cmd(int argc, char **argv) {
  asb_named_command_options o = ASB_NAMED_COMMAND_OPTIONS_INIT;
  port_opt(&argc, argv, &o);
  if (argc != 1) return usage(stderr);
  asb_sandbox *sb = NULL;
  int rc = connect_to(argv[0], &sb);
  if (rc) return rc;
  asb_named_command_list *l = NULL;
  if (asb_sandbox_commands_list(&l, sb, &o) != ASB_OK) {
    asb_sandbox_free(sb);
    return fail("commands");
  }
  for (size_t i = 0; i < asb_named_command_list_count(l); i++) {
    const asb_named_command *c = asb_named_command_list_get(l, i);
    printf("%s(", asb_named_command_name(c));
    for (size_t k = 0; k < asb_named_command_arg_count(c); k++) {
      const char *d = asb_named_command_arg_default(c, k);
      printf("%s%s: %s%s%s%s", k ? ", " : "", asb_named_command_arg_name(c, k),
             asb_named_command_arg_type(c, k), d ? " = " : "", d ? d : "",
             asb_named_command_arg_required(c, k) ? "" : (d ? "" : " (optional)"));
    }
    printf(")%s%s\n", *asb_named_command_description(c) ? "  " : "",
           asb_named_command_description(c));
  }
  asb_named_command_list_free(l);
  asb_sandbox_free(sb);
  return 0;
}

static int run_cmd(int argc, char **argv) {
  asb_named_command_options o = ASB_NAMED_COMMAND_OPTIONS_INIT;
  port_opt(&argc, argv, &o);
  if (argc < 2 || argc > 3) return usage(stderr);
  asb_sandbox *sb = NULL;
  int rc = connect_to(argv[0], &sb);
  if (rc) return rc;
  char *out = NULL;
  if (asb_sandbox_run_command(&out, sb, argv[1], argc > 2 ? argv[2] : NULL, &o) != ASB_OK) {
    asb_sandbox_free(sb);
    return fail(argv[1]);
  }
  printf("%s\n", out);
  asb_free(out);
  asb_sandbox_free(sb);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage(stderr);
  const char *cmd = argv[1];
  if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) return usage(stdout);
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
    printf("asb %s\n", asb_version(NULL, NULL, NULL));
    return 0;
  }
  if (!strcmp(cmd, "template") && argc >= 3 && !strcmp(argv[2], "check"))
    return template_cmd(argc - 2, argv + 2); /* no engine needed */
  if (asb_client_new(&client, NULL) != ASB_OK) return fail("client");
  int rc;
  if (!strcmp(cmd, "template") || !strcmp(cmd, "templates"))
    rc = template_cmd(argc - 2, argv + 2);
  else if (!strcmp(cmd, "create"))
    rc = create_cmd(argc - 2, argv + 2);
  else if (!strcmp(cmd, "list") || !strcmp(cmd, "ps"))
    rc = list_cmd();
  else if (!strcmp(cmd, "exec"))
    rc = exec_cmd(argc - 2, argv + 2);
  else if (!strcmp(cmd, "ls"))
    rc = ls_cmd(argc - 2, argv + 2);
  else if (!strcmp(cmd, "cp"))
    rc = cp_cmd(argc - 2, argv + 2);
  else if (!strcmp(cmd, "kill"))
    rc = kill_cmd(argc - 2, argv + 2);
  else if (!strcmp(cmd, "commands"))
    rc = commands_cmd(argc - 2, argv + 2);
  else if (!strcmp(cmd, "run"))
    rc = run_cmd(argc - 2, argv + 2);
  else
    rc = usage(stderr);
  asb_client_free(client);
  return rc;
}
