/* Unit tests for core/tmpl: template.yaml parsing, normalisation and the
 * errors (line, column, field, message). SPDX-License-Identifier: Apache-2.0 */
#include "proto/cmdargs.h"
#include "testing.h"
#include "tmpl/tmpl.h"
#include "util/buf.h"
#include "util/util.h"

static asbi_tmpl_error E;

static cJSON *parse(const char *y) {
  return asbi_tmpl_parse(y, strlen(y), &E);
}

static char *print(const cJSON *v) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_json_print(v, &b);
  return asbi_buf_detach(&b, NULL);
}

#define FIELD_IS(obj, key, want)                       \
  do {                                                 \
    char *got_ = print(cJSON_GetObjectItem(obj, key)); \
    CHECK_STR(got_, want);                             \
    free(got_);                                        \
  } while (0)

static const char *FULL =
    "# a complete template\n"
    "name: c-hello\n"
    "version: 1.0\n"
    "description: A C command server\n"
    "tags: [c, demo]\n"
    "base: base\n"
    "env:\n"
    "  GREETING: Hello\n"
    "  DEBUG: true\n"
    "ports: [9000, 8080]\n"
    "resources: {cpu: 1, memory: 256Mi, disk: 2Gi}\n"
    "capabilities: [shell, commands]\n"
    "steps:\n"
    "  - copy: {src: hello.c, dest: /opt/hello/hello.c}\n"
    "  - copy: sdk /opt/hello/sdk\n"
    "    owner: user\n"
    "    mode: \"0755\"\n"
    "  - run: gcc -o /opt/hello/hello /opt/hello/hello.c\n"
    "    cwd: /opt/hello\n"
    "    timeout: 120\n"
    "  - apt: libyaml-0-2 libc6\n"
    "  - pip: [requests]\n"
    "  - make install\n"
    "start:\n"
    "  cmd: /opt/hello/hello 9000\n"
    "  env: {LOG: debug}\n"
    "ready: {port: 9000, timeout: 20}\n"
    "custom_commands:\n"
    "  shout:\n"
    "    cmd: echo {text} | tr a-z A-Z\n"
    "    description: Upper-cases\n"
    "    args:\n"
    "      - name: text\n"
    "      - {name: times, type: int, default: 2}\n"
    "      - {name: loud, type: boolean, required: false}\n"
    "  env: env | sort\n";

TEST(full) {
  cJSON *s = parse(FULL);
  if (!s) {
    ASBT_FAIL("%d:%d %s: %s", E.line, E.column, E.field, E.message);
    return;
  }
  FIELD_IS(s, "name", "\"c-hello\"");
  FIELD_IS(s, "version", "\"1.0\"");
  FIELD_IS(s, "tags", "[\"c\",\"demo\"]");
  FIELD_IS(s, "env", "{\"GREETING\":\"Hello\",\"DEBUG\":\"true\"}");
  FIELD_IS(s, "ports", "[9000,8080]");
  FIELD_IS(s, "resources", "{\"cpu\":1,\"memoryMB\":256,\"diskMB\":2048}");
  FIELD_IS(s, "capabilities", "[\"shell\",\"commands\"]");
  FIELD_IS(s, "start",
           "{\"cmd\":\"/opt/hello/hello 9000\",\"user\":\"user\",\"cwd\":\"/home/user\","
           "\"env\":{\"LOG\":\"debug\"}}");
  FIELD_IS(s, "ready", "{\"timeout\":20,\"interval\":200,\"port\":9000}");
  FIELD_IS(s, "commandsPort", "9000");
  cJSON *steps = cJSON_GetObjectItem(s, "steps");
  REQUIRE(cJSON_GetArraySize(steps) == 6);
  char *st = print(cJSON_GetArrayItem(steps, 0));
  CHECK_STR(st,
            "{\"kind\":\"copy\",\"user\":\"root\",\"cwd\":\"/\",\"env\":{},\"timeout\":600,"
            "\"line\":14,\"src\":\"hello.c\",\"dest\":\"/opt/hello/hello.c\",\"owner\":\"root\","
            "\"mode\":null}");
  free(st);
  st = print(cJSON_GetArrayItem(steps, 1));
  CHECK(strstr(st,
               "\"src\":\"sdk\",\"dest\":\"/opt/hello/sdk\",\"owner\":\"user\",\"mode\":\"0755\""));
  free(st);
  st = print(cJSON_GetArrayItem(steps, 2));
  CHECK_STR(st,
            "{\"kind\":\"run\",\"user\":\"root\",\"cwd\":\"/opt/hello\",\"env\":{},\"timeout\":120,"
            "\"line\":18,\"cmd\":\"gcc -o /opt/hello/hello /opt/hello/hello.c\"}");
  free(st);
  FIELD_IS(cJSON_GetArrayItem(steps, 3), "packages", "[\"libyaml-0-2\",\"libc6\"]");
  FIELD_IS(cJSON_GetArrayItem(steps, 4), "kind", "\"pip\"");
  FIELD_IS(cJSON_GetArrayItem(steps, 5), "cmd", "\"make install\"");
  cJSON *cmds = cJSON_GetObjectItem(s, "commands");
  REQUIRE(cJSON_GetArraySize(cmds) == 2);
  char *c0 = print(cJSON_GetArrayItem(cmds, 0));
  CHECK_STR(
      c0,
      "{\"name\":\"shout\",\"cmd\":\"echo {text} | tr a-z A-Z\",\"description\":\"Upper-cases\","
      "\"cwd\":\"/home/user\",\"user\":\"user\",\"timeout\":60,\"env\":{},\"hidden\":false,"
      "\"args\":[{\"name\":\"text\",\"type\":\"string\",\"required\":true,\"default\":null,"
      "\"description\":\"\"},{\"name\":\"times\",\"type\":\"integer\",\"required\":false,"
      "\"default\":\"2\",\"description\":\"\"},{\"name\":\"loud\",\"type\":\"boolean\","
      "\"required\":false,\"default\":null,\"description\":\"\"}]}");
  free(c0);
  FIELD_IS(cJSON_GetArrayItem(cmds, 1), "cmd", "\"env | sort\"");
  cJSON_Delete(s);
}

TEST(defaults_and_compat) {
  cJSON *s = parse("name: tiny\n");
  REQUIRE(s);
  FIELD_IS(s, "base", "\"base\"");
  FIELD_IS(s, "resources", "{\"cpu\":2,\"memoryMB\":512,\"diskMB\":1024}");
  FIELD_IS(s, "capabilities", "[\"shell\",\"files\",\"code\"]");
  FIELD_IS(s, "steps", "[]");
  FIELD_IS(s, "start", "null");
  FIELD_IS(s, "ready", "null");
  FIELD_IS(s, "commands", "[]");
  CHECK(cJSON_GetObjectItem(s, "pool") == NULL); /* no pool: section, no key */
  cJSON_Delete(s);
  /* a warm pool for the engine */
  s = parse("name: pooled\npool:\n  size: 3\n");
  REQUIRE(s);
  FIELD_IS(s, "pool", "{\"size\":3}");
  cJSON_Delete(s);
  s = parse("name: pooled\npool: {}\n");
  REQUIRE(s);
  FIELD_IS(s, "pool", "{\"size\":0}");
  cJSON_Delete(s);
  /* easy-sandbox keys: copy_files, system/python/node packages, commands,
   * then steps; cpu_count/memory_mb; start_cmd; ready_cmd */
  s = parse(
      "name: compat\n"
      "steps: [echo last]\n"
      "commands: [echo one, echo two]\n"
      "node_packages: [left-pad]\n"
      "system_packages: [curl]\n"
      "python_packages: requests flask\n"
      "copy_files: [{src: a, dest: /a}, b /b]\n"
      "cpu_count: 4\n"
      "memory_mb: 1024\n"
      "start_cmd: python3 -m http.server 8000\n"
      "ready_cmd: curl -sf localhost:8000\n");
  if (!s) {
    ASBT_FAIL("%d:%d %s: %s", E.line, E.column, E.field, E.message);
    return;
  }
  cJSON *steps = cJSON_GetObjectItem(s, "steps");
  const char *kinds[] = {"copy", "copy", "apt", "pip", "npm", "run", "run", "run"};
  REQUIRE(cJSON_GetArraySize(steps) == 8);
  for (int i = 0; i < 8; i++)
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(steps, i), "kind")->valuestring, kinds[i]);
  FIELD_IS(cJSON_GetArrayItem(steps, 3), "packages", "[\"requests\",\"flask\"]");
  FIELD_IS(cJSON_GetArrayItem(steps, 7), "cmd", "\"echo last\"");
  FIELD_IS(s, "resources", "{\"cpu\":4,\"memoryMB\":1024,\"diskMB\":1024}");
  FIELD_IS(s, "ready", "{\"timeout\":30,\"interval\":200,\"cmd\":\"curl -sf localhost:8000\"}");
  cJSON_Delete(s);
  s = parse("name: r\nstart: x\nready: 8080\n");
  REQUIRE(s);
  FIELD_IS(s, "ready", "{\"timeout\":30,\"interval\":200,\"port\":8080}");
  cJSON_Delete(s);
  /* a ready check alone (E2B's setReadyCmd without setStartCmd): kept,
   * each create waits for it (tstart.c) */
  s = parse("name: r\nready_cmd: test -f /tmp/up\n");
  REQUIRE(s);
  FIELD_IS(s, "start", "null");
  FIELD_IS(s, "ready", "{\"timeout\":30,\"interval\":200,\"cmd\":\"test -f /tmp/up\"}");
  cJSON_Delete(s);
}

/* Parses y, expects an error at line:col in field whose message contains
 * msg. */
static void expect_error(const char *y, int line, int col, const char *field, const char *msg) {
  cJSON *s = parse(y);
  if (s) {
    ASBT_FAIL("accepted: %s", y);
    cJSON_Delete(s);
    return;
  }
  if (E.line != line || E.column != col || strcmp(E.field, field) != 0 || !strstr(E.message, msg))
    ASBT_FAIL("for %s\n  got %d:%d [%s] %s\n  want %d:%d [%s] ...%s...", y, E.line, E.column,
              E.field, E.message, line, col, field, msg);
}

TEST(network) {
  cJSON *t = parse(
      "name: x\nnetwork:\n  allowInternetAccess: false\n  allowOut: [198.18.0.0/15, "
      "1.2.3.4]\n  denyOut: 10.0.0.0/8\n");
  REQUIRE(t != NULL);
  FIELD_IS(t, "network",
           "{\"allowInternetAccess\":false,\"allowOut\":[\"198.18.0.0/15\",\"1.2.3.4\"],"
           "\"denyOut\":[\"10.0.0.0/8\"]}");
  cJSON_Delete(t);
  t = parse("name: x\n");
  REQUIRE(t != NULL);
  CHECK(cJSON_GetObjectItem(t, "network") == NULL); /* absent: the engine's default */
  cJSON_Delete(t);
  expect_error("name: x\nnetwork: {rules: 1}\n", 2, 11, "network.rules", "unknown field");
  expect_error("name: x\nnetwork: {allowInternetAccess: maybe}\n", 2, 32,
               "network.allowInternetAccess", "expected true or false");
  expect_error("name: x\nnetwork: [a]\n", 2, 10, "network", "expected a mapping");
}

TEST(errors) {
  expect_error("", 0, 0, "", "empty");
  expect_error("name: x\n---\nname: y\n", 3, 1, "", "only one YAML document");
  expect_error("- a\n- b\n", 1, 1, "", "top level must be a mapping");
  expect_error("name: x\n  bad: indent\n", 2, 6, "", "YAML syntax");
  expect_error("description: no name\n", 1, 1, "name", "is required");
  expect_error("name: Hello\n", 1, 7, "name", "not a valid template name");
  expect_error("name: base\n", 1, 7, "name", "built-in");
  expect_error("name: x\nname: y\n", 2, 1, "", "'name' is given twice");
  expect_error("name: x\nimage: ubuntu\n", 2, 1, "image", "unknown field; the fields are name,");
  expect_error("name: x\nresources:\n  memory: lots\n", 3, 11, "resources.memory",
               "expected a size like 512");
  expect_error("name: x\nresources: {cpu: 0}\n", 2, 18, "resources.cpu", "1..64");
  expect_error("name: x\nresources: {gpu: 1}\n", 2, 13, "resources.gpu", "unknown field");
  expect_error("name: x\npool: {size: 1001}\n", 2, 14, "pool.size", "0..1000");
  expect_error("name: x\npool: {min: 1}\n", 2, 8, "pool.min", "unknown field (size)");
  expect_error("name: x\npool: 3\n", 2, 7, "pool", "mapping");
  expect_error("name: x\nmemory_mb: 8\n", 2, 12, "memory_mb", "out of range");
  expect_error("name: x\ncapabilities: [shell, gpu]\n", 2, 15, "capabilities",
               "unknown capability 'gpu'");
  expect_error("name: x\nports: [0]\n", 2, 9, "ports[0]", "1..65535");
  expect_error("name: x\nenv: {1BAD: x}\n", 2, 7, "env.1BAD", "not a valid variable name");
  expect_error("name: x\nenv: [a]\n", 2, 6, "env", "expected a mapping");
  expect_error("name: x\nsteps:\n  - run: a\n    apt: b\n", 4, 5, "steps[0]",
               "a step does one thing");
  expect_error("name: x\nsteps:\n  - user: root\n", 3, 5, "steps[0]", "needs one of run, copy");
  expect_error("name: x\nsteps:\n  - run: a\n    owner: user\n", 3, 5, "steps[0]",
               "belong to copy");
  expect_error("name: x\nsteps:\n  - copy: {src: /etc/passwd, dest: /x}\n", 3, 17,
               "steps[0].copy.src", "inside the template directory");
  expect_error("name: x\nsteps:\n  - copy: {src: ../up, dest: /x}\n", 3, 17, "steps[0].copy.src",
               "inside the template directory");
  expect_error("name: x\nsteps:\n  - copy: {src: a, dest: rel}\n", 3, 26, "steps[0].copy.dest",
               "absolute path");
  expect_error("name: x\nsteps:\n  - copy: {src: a}\n", 3, 11, "steps[0].copy",
               "'dest' is required");
  expect_error("name: x\nsteps:\n  - copy: just-one\n", 3, 11, "steps[0].copy", "\"<src> <dest>\"");
  expect_error("name: x\nsteps:\n  - apt: []\n", 3, 10, "steps[0].apt", "at least one package");
  expect_error("name: x\nsteps:\n  - apt: \"a;rm\"\n", 3, 10, "steps[0].apt", "not a package name");
  expect_error("name: x\nsteps:\n  - run: x\n    timeout: 0\n", 4, 14, "steps[0].timeout",
               "1..86400");
  expect_error("name: x\nsteps:\n  - run: x\n    user: admin\n", 4, 11, "steps[0].user",
               "root or user");
  expect_error("name: x\nsteps: echo\n", 2, 8, "steps", "expected a list of steps");
  expect_error("name: x\nstart: s\nready: {port: 1, cmd: x}\n", 3, 8, "ready",
               "either 'port' or 'cmd'");
  expect_error("name: x\nstart: s\nready: {}\n", 3, 8, "ready", "either 'port' or 'cmd'");
  expect_error("name: x\nstart: {user: user}\n", 2, 8, "start", "'cmd' is required");
  expect_error("name: x\nstart: s\nstart_cmd: t\n", 3, 1, "start_cmd", "given twice");
  expect_error("name: x\ncustom_commands:\n  greet:\n    cmd: echo {who}\n", 4, 10,
               "custom_commands.greet.cmd", "placeholder {who} names no declared argument");
  expect_error("name: x\ncustom_commands:\n  greet:\n    description: no cmd\n", 4, 5,
               "custom_commands.greet", "'cmd' is required");
  expect_error("name: x\ncustom_commands:\n  9lives: echo\n", 3, 3, "custom_commands.9lives",
               "not a valid command name");
  expect_error(
      "name: x\ncustom_commands:\n  g:\n    cmd: echo {n}\n    args:\n"
      "      - {name: n, type: strng}\n",
      6, 25, "custom_commands.g.args[0].type", "unknown type 'strng'");
  expect_error(
      "name: x\ncustom_commands:\n  g:\n    cmd: echo {n}\n    args:\n"
      "      - {name: n, type: integer, default: many}\n",
      6, 43, "custom_commands.g.args[0].default", "not a valid integer");
  expect_error(
      "name: x\ncustom_commands:\n  g:\n    cmd: echo {n}\n    args:\n"
      "      - {name: n, required: true, default: 1}\n",
      6, 9, "custom_commands.g.args[0]", "a required argument has no default");
  expect_error("name: x\ncustom_commands:\n  g:\n    cmd: echo {n}\n    args: [n, n]\n", 5, 15,
               "custom_commands.g.args[1]", "declared twice");
  expect_error("name: x\ncustom_commands:\n  g:\n    cmd: echo\n    args:\n      - {name: a-b}\n",
               6, 16, "custom_commands.g.args[0].name", "not a valid argument name");
  expect_error("name: x\ncustom_commands:\n  g:\n    cmd: echo\n    retries: 3\n", 5, 5,
               "custom_commands.g.retries", "unknown field");
  expect_error("name: x\ndescription: [a]\n", 2, 14, "description",
               "expected a string, got a list");
  expect_error("name: \"x\\0y\"\n", 1, 7, "name", "NUL");
  /* invalid UTF-8 */
  expect_error("name: x\ndescription: \xff\n", 0, 0, "", "not valid UTF-8");
}

TEST(alias_bomb) {
  /* a billion-laughs document: aliases make the walk explode, not memory */
  const char *y =
      "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
      "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
      "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
      "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
      "name: x\n"
      "tags: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n";
  cJSON *s = parse(y);
  CHECK(s == NULL);
  cJSON_Delete(s);
  /* an alias used sensibly is fine */
  s = parse("name: x\nenv: &e {A: b}\nstart: {cmd: c, env: *e}\n");
  CHECK(s != NULL);
  cJSON_Delete(s);
}

TEST(nesting_bomb) {
  /* 100 000 nested flow lists on one line: refused at depth 65, at once
   * (libyaml alone spends seconds on them) */
  enum { N = 100000 };
  char *y = malloc(2 * N + 32);
  REQUIRE(y);
  int n = sprintf(y, "name: x\nsteps: ");
  memset(y + n, '[', N);
  memset(y + n + N, ']', N);
  y[n + 2 * N] = '\0';
  expect_error(y, 2, 7 + 64, "", "nested deeper than 64 levels");
  /* unbalanced, as an attacker sends it */
  y[n + N] = '\0';
  expect_error(y, 2, 7 + 64, "", "nested deeper than 64 levels");
  free(y);
  /* block style counts too */
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_puts(&b, "name: x\nenv:\n");
  for (int i = 0; i < 70; i++) asbi_buf_printf(&b, "%*sk%d:\n", 2 * (i + 1), "", i);
  cJSON *s = parse(b.data);
  CHECK(s == NULL && strstr(E.message, "nested deeper than 64 levels"));
  cJSON_Delete(s);
  asbi_buf_free(&b);
  /* 64 levels are fine for the depth check (the spec then says why not) */
  char ok[256];
  n = sprintf(ok, "name: x\ntags: ");
  for (int i = 0; i < 63; i++) ok[n++] = '[';
  for (int i = 0; i < 63; i++) ok[n++] = ']';
  ok[n] = '\0';
  s = parse(ok);
  CHECK(s == NULL && !strstr(E.message, "nested"));
  cJSON_Delete(s);
}

TEST(format_and_sizes) {
  asbi_tmpl_error e = {12, 5, "resources.memory", "too big"};
  char out[256];
  asbi_tmpl_format_error(&e, "dir/template.yaml", out, sizeof out);
  CHECK_STR(out, "dir/template.yaml:12:5: resources.memory: too big");
  asbi_tmpl_error e2 = {0, 0, "", "the file is empty"};
  asbi_tmpl_format_error(&e2, NULL, out, sizeof out);
  CHECK_STR(out, "template.yaml: the file is empty");
  CHECK_INT(asbi_tmpl_parse_mib("512"), 512);
  CHECK_INT(asbi_tmpl_parse_mib("512Mi"), 512);
  CHECK_INT(asbi_tmpl_parse_mib("512MB"), 512);
  CHECK_INT(asbi_tmpl_parse_mib("2G"), 2048);
  CHECK_INT(asbi_tmpl_parse_mib("2Gi"), 2048);
  CHECK_INT(asbi_tmpl_parse_mib("1 GiB"), 1024);
  CHECK_INT(asbi_tmpl_parse_mib("1T"), -1);
  CHECK_INT(asbi_tmpl_parse_mib("-1"), -1);
  CHECK_INT(asbi_tmpl_parse_mib(""), -1);
  CHECK_INT(asbi_tmpl_parse_mib("99999999999999999999"), -1);
}

int main(void) {
  RUN(full);
  RUN(defaults_and_compat);
  RUN(errors);
  RUN(network);
  RUN(alias_bomb);
  RUN(nesting_bomb);
  RUN(format_and_sizes);
  TEST_MAIN_END();
}
