/* hello-server: the command server of the c-hello example template, made
 * with libagentsandbox-server. The template builds it inside its build
 * sandbox with the host's gcc (template.yaml) and starts it on port 9000.
 *
 *   hello(name, greeting = $HELLO_GREETING)  {"greeting": "Hello, Ada!", ...}
 *   add(a, b)                                a + b (integers)
 *   echo(value)                              value, as given (any JSON)
 *   fail(reason)                             raises HelloError(reason)
 *
 * SIGTERM / SIGINT stop it gracefully.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox/server.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static asb_server *server;

static void on_signal(int sig) {
  (void)sig;
  asb_server_stop(server); /* async-signal-safe */
}

/* JSON-escapes s into out (enough for names and greetings). */
static void json_str(char *out, size_t len, const char *s) {
  size_t o = 0;
  out[o++] = '"';
  for (; s && *s && o + 8 < len; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out[o++] = '\\';
      out[o++] = (char)c;
    } else if (c < 0x20) {
      o += (size_t)snprintf(out + o, len - o, "\\u%04x", c);
    } else {
      out[o++] = (char)c;
    }
  }
  out[o++] = '"';
  out[o] = '\0';
}

static int hello(asb_server_call *call, void *userdata) {
  char greeting[512], name[512], text[1024], sandbox[128], out[2048];
  (void)userdata;
  snprintf(text, sizeof text, "%s, %s!", asb_server_call_string(call, "greeting"),
           asb_server_call_string(call, "name"));
  json_str(greeting, sizeof greeting, text);
  json_str(name, sizeof name, asb_server_call_string(call, "name"));
  json_str(sandbox, sizeof sandbox, getenv("ASB_SANDBOX_ID") ? getenv("ASB_SANDBOX_ID") : "");
  snprintf(out, sizeof out, "{\"greeting\":%s,\"name\":%s,\"sandbox\":%s}", greeting, name,
           sandbox);
  return asb_server_call_set_result_json(call, out);
}

static int add(asb_server_call *call, void *userdata) {
  (void)userdata;
  return asb_server_call_set_result_integer(
      call, asb_server_call_integer(call, "a") + asb_server_call_integer(call, "b"));
}

static int echo(asb_server_call *call, void *userdata) {
  (void)userdata;
  const char *v = asb_server_call_json(call, "value");
  return asb_server_call_set_result_json(call, v ? v : "null");
}

static int fail(asb_server_call *call, void *userdata) {
  (void)userdata;
  return asb_server_call_error(call, "HelloError", asb_server_call_string(call, "reason"));
}

int main(int argc, char **argv) {
  int port = argc > 1 ? atoi(argv[1]) : 9000;
  const char *greeting = getenv("HELLO_GREETING");
  asb_server_command *c;
  if (asb_server_new(&server, NULL) != ASB_OK) {
    fprintf(stderr, "hello-server: %s\n", asb_server_error_last()->message);
    return 1;
  }
  asb_server_register(&c, server, "hello", "Greets someone", hello, NULL, NULL);
  asb_server_command_add_arg(c, "name", ASB_ARG_STRING, ASB_ARG_REQUIRED, NULL, "who to greet");
  asb_server_command_add_arg(c, "greeting", ASB_ARG_STRING, 0,
                             greeting && *greeting ? greeting : "Hello", "the greeting word");
  asb_server_register(&c, server, "add", "Adds two integers", add, NULL, NULL);
  asb_server_command_add_arg(c, "a", ASB_ARG_INTEGER, ASB_ARG_REQUIRED, NULL, NULL);
  asb_server_command_add_arg(c, "b", ASB_ARG_INTEGER, 0, "0", NULL);
  asb_server_register(&c, server, "echo", "Returns its argument", echo, NULL, NULL);
  asb_server_command_add_arg(c, "value", ASB_ARG_JSON, 0, "null", "any JSON value");
  asb_server_register(&c, server, "fail", "Always raises HelloError", fail, NULL, NULL);
  asb_server_command_add_arg(c, "reason", ASB_ARG_STRING, 0, "nothing to see here", NULL);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  printf("hello-server: serving on port %d\n", port);
  fflush(stdout);
  int rc = asb_server_start(server, port); /* until a signal stops it */
  if (rc != ASB_OK) fprintf(stderr, "hello-server: %s\n", asb_server_error_last()->message);
  asb_server_free(server);
  return rc == ASB_OK ? 0 : 1;
}
