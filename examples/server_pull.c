/* The server SDK served from the program's own loop (pull mode), the way a
 * Lua interpreter or a Node event loop serves commands: the command has no
 * handler, the loop polls the server's fd next to its other fds, takes each
 * call with asb_server_next_call and answers it — here some calls at once,
 * others later from a worker thread (deferred replies). A client thread
 * calls the commands through libagentsandbox, in debug mode against the
 * server's URL. Prints what the client got. SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <agentsandbox/server.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int done_pipe[2]; /* the client says it finished: another fd the loop polls */

static void *client(void *arg) {
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", *(int *)arg);
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.debug = 1;
  o.sandbox_url = url;
  asb_client *c = NULL;
  asb_sandbox *sb = NULL;
  if (asb_client_new(&c, &o) == ASB_OK && asb_sandbox_attach(&sb, c, "local", NULL) == ASB_OK) {
    asb_named_command_options no = ASB_NAMED_COMMAND_OPTIONS_INIT;
    no.port = *(int *)arg;
    const char *calls[][2] = {
        {"add", "{\"a\":40,\"b\":2}"}, {"slow_square", "{\"n\":12}"}, {"add", "{\"a\":\"x\"}"}};
    for (int i = 0; i < 3; i++) {
      char *out = NULL;
      int rc = asb_sandbox_run_command(&out, sb, calls[i][0], calls[i][1], &no);
      if (rc == ASB_OK)
        printf("%s -> %s\n", calls[i][0], out);
      else
        printf("%s -> %s: %s\n", calls[i][0], asb_status_name(rc), asb_error_last()->message);
      asb_free(out);
    }
  }
  asb_sandbox_free(sb);
  asb_client_free(c);
  if (write(done_pipe[1], "x", 1) != 1) perror("write");
  return NULL;
}

/* A worker that answers calls later, from its own thread. */
static void *answer_later(void *arg) {
  asb_server_call *call = arg;
  asb_int64 n = asb_server_call_integer(call, "n");
  asb_server_call_set_result_integer(call, n * n);
  asb_server_call_reply(call); /* thread-safe; releases the call */
  return NULL;
}

int main(void) {
  asb_server_options so = ASB_SERVER_OPTIONS_INIT;
  so.host = "127.0.0.1";
  so.token = ""; /* the example's own client sends none */
  asb_server *s = NULL;
  asb_server_command *cmd = NULL;
  if (asb_server_new(&s, &so) != ASB_OK) return 1;
  /* No handler: calls wait for the loop below. */
  asb_server_register(&cmd, s, "add", "a + b", NULL, NULL, NULL);
  asb_server_command_add_arg(cmd, "a", ASB_ARG_INTEGER, ASB_ARG_REQUIRED, NULL, NULL);
  asb_server_command_add_arg(cmd, "b", ASB_ARG_INTEGER, ASB_ARG_REQUIRED, NULL, NULL);
  asb_server_register(&cmd, s, "slow_square", "n * n, answered by a worker", NULL, NULL, NULL);
  asb_server_command_add_arg(cmd, "n", ASB_ARG_INTEGER, ASB_ARG_REQUIRED, NULL, NULL);
  if (asb_server_start_background(s, 0) != ASB_OK || pipe(done_pipe) != 0) {
    fprintf(stderr, "%s\n", asb_server_error_last()->message);
    return 1;
  }
  int port = asb_server_port(s);
  pthread_t t, workers[8];
  int nworkers = 0;
  pthread_create(&t, NULL, client, &port);
  for (int finished = 0; !finished;) {
    struct pollfd p[2] = {{asb_server_fd(s), POLLIN, 0}, {done_pipe[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) break;
    if (p[1].revents & POLLIN) finished = 1;
    asb_server_call *call = NULL;
    while ((p[0].revents & POLLIN) && asb_server_next_call(&call, s, 0) == ASB_OK) {
      if (strcmp(asb_server_call_command(call), "slow_square") == 0 && nworkers < 8) {
        pthread_create(&workers[nworkers++], NULL, answer_later, call); /* deferred */
      } else {
        asb_server_call_set_result_integer(
            call, asb_server_call_integer(call, "a") + asb_server_call_integer(call, "b"));
        asb_server_call_reply(call);
      }
    }
  }
  pthread_join(t, NULL);
  for (int i = 0; i < nworkers; i++) pthread_join(workers[i], NULL);
  asb_server_free(s);
  close(done_pipe[0]);
  close(done_pipe[1]);
  return 0;
}
