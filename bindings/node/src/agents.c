/* agent-sandbox Node binding: the Agents API (agents.h): the agents a
 * sandbox's server knows, installs, sessions and their turns. Events reach
 * JS as their JSON text (EV_AGENT), in order and with back-pressure like
 * every stream of the addon; a turn's result is its turn.completed event,
 * read whole (asb_agent_turn_json), as are an event list's events.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "anode.h"
#include "events.h"
#include "gen.h"

/* The options every call but session creation takes, from gen_call:
 * l[0] port, l[1] timeout_ms, i[0] follow, s[1..3] install version,
 * registry, source; events when i[1]. */
static int agent_event(const asb_agent_event *ev, void *ud) {
  anode_call *c = ud;
  const char *json = asb_agent_event_json(ev);
  anode_msg *m = anode_msg_bytes(EV_AGENT, json ? json : "{}", json ? strlen(json) : 2);
  return m ? anode_emit(c, m) : 1;
}

static asb_agents_options agents_opts(gen_call *c) {
  asb_agents_options o = ASB_AGENTS_OPTIONS_INIT;
  o.port = (int)c->l[0];
  o.timeout_ms = c->l[1];
  o.cancel = c->base.cancel;
  o.follow = c->i[0];
  o.install_version = c->s[1];
  o.registry = c->s[2];
  o.source = c->s[3];
  if (c->i[1]) {
    o.on_event = agent_event;
    o.userdata = &c->base;
  }
  return o;
}

/* {port, timeoutMs, follow, version, registry, source, events} */
static int read_agents_opts(napi_env env, gen_call *c, napi_value o) {
  return anode_opt_long(env, o, "port", &c->l[0]) ||
         anode_opt_long(env, o, "timeoutMs", &c->l[1]) ||
         anode_opt_bool(env, o, "follow", &c->i[0]) || anode_opt_bool(env, o, "events", &c->i[1]) ||
         anode_opt_string(env, o, "version", &c->s[1]) ||
         anode_opt_string(env, o, "registry", &c->s[2]) ||
         anode_opt_string(env, o, "source", &c->s[3]);
}

/* ---- sessions as handles ------------------------------------------------------------ */

static napi_value session_value(napi_env env, asb_agent_session *s) {
  napi_value o = anode_obj(env);
  anode_set(env, o, "id", anode_str(env, asb_agent_session_id(s)));
  anode_set(env, o, "agent", anode_str(env, asb_agent_session_agent(s)));
  anode_set(env, o, "handle", anode_box_new(env, BOX_AGENT, s, NULL));
  return o;
}

enum {
  AOP_LIST = 1,
  AOP_INSTALL,
  AOP_NEW,
  AOP_CONNECT,
  AOP_SEND,
  AOP_EVENTS,
  AOP_CANCEL,
  AOP_INFO,
  AOP_CLOSE
};

static void w_agents(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_agents_options o = agents_opts(c);
  asb_agent_session *sess = c->out2; /* the session it acts on, if any */
  int rc = ASB_EINVAL;
  switch (c->op) {
    case AOP_LIST: {
      asb_agent_list *l = NULL;
      rc = asb_agents_list(&l, c->sb, &o);
      c->out = l;
      break;
    }
    case AOP_INSTALL: {
      char *v = NULL;
      rc = asb_agents_install(&v, c->sb, c->s[0], &o);
      c->out = v;
      break;
    }
    case AOP_NEW: {
      asb_agent_session_options so = ASB_AGENT_SESSION_OPTIONS_INIT;
      so.port = (int)c->l[0];
      so.timeout_ms = c->l[1];
      so.cancel = base->cancel;
      so.cwd = c->s[1];
      so.model = c->s[2];
      so.base_url = c->s[3];
      so.api_key_env = c->s[4];
      so.wire_api = c->s[5];
      so.approval = (const char *)c->data;
      so.sandbox = c->feed;
      so.args = (const char *const *)c->v[0];
      so.env = (const char *const *)c->v[1];
      so.install = c->i[2];
      asb_agent_session *s = NULL;
      rc = asb_agent_session_new(&s, c->sb, c->s[0], &so);
      c->out = s;
      break;
    }
    case AOP_CONNECT: {
      asb_agent_session *s = NULL;
      rc = asb_agent_session_connect(&s, c->sb, c->s[0], &o);
      c->out = s;
      break;
    }
    case AOP_SEND: {
      asb_agent_turn *t = NULL;
      rc = asb_agent_session_send(&t, sess, c->s[0], &o);
      c->out = t;
      break;
    }
    case AOP_EVENTS: {
      asb_agent_event_list *l = NULL;
      rc = asb_agent_session_events(&l, sess, (asb_int64)c->d[0], &o);
      c->out = l;
      break;
    }
    case AOP_CANCEL:
      rc = asb_agent_session_cancel(sess, &o);
      break;
    case AOP_INFO: {
      char *json = NULL;
      rc = asb_agent_session_info(&json, sess, &o);
      c->out = json;
      break;
    }
    case AOP_CLOSE:
      rc = asb_agent_session_close(sess, &o);
      break;
  }
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    base->rc = rc;
}

static napi_value r_agents(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (base->rc < 0) return NULL;
  switch (c->op) {
    case AOP_LIST: {
      asb_agent_list *l = c->out;
      size_t n = asb_agent_list_count(l);
      napi_value a;
      napi_create_array_with_length(env, n, &a);
      for (size_t i = 0; i < n; i++) {
        const asb_agent *ag = asb_agent_list_get(l, i);
        napi_value o = anode_obj(env);
        anode_set(env, o, "name", anode_str(env, asb_agent_name(ag)));
        anode_set(env, o, "package", anode_str(env, asb_agent_package(ag)));
        anode_set(env, o, "installed", anode_bool(env, asb_agent_installed(ag)));
        anode_set(env, o, "version", anode_str(env, asb_agent_version(ag)));
        anode_set(env, o, "path", anode_str(env, asb_agent_path(ag)));
        napi_set_element(env, a, (uint32_t)i, o);
      }
      return a;
    }
    case AOP_INSTALL:
    case AOP_INFO:
      return anode_str(env, c->out);
    case AOP_NEW:
    case AOP_CONNECT: {
      asb_agent_session *s = c->out;
      c->out = NULL;
      return s ? session_value(env, s) : NULL;
    }
    case AOP_SEND:
      return c->out ? anode_str(env, asb_agent_turn_json(c->out)) : NULL;
    case AOP_EVENTS: {
      asb_agent_event_list *l = c->out;
      size_t n = asb_agent_event_list_count(l);
      napi_value a;
      napi_create_array_with_length(env, n, &a);
      for (size_t i = 0; i < n; i++)
        napi_set_element(env, a, (uint32_t)i,
                         anode_str(env, asb_agent_event_json(asb_agent_event_list_get(l, i))));
      return a;
    }
  }
  return NULL;
}

static void c_agents(anode_call *base) {
  gen_call *c = (gen_call *)base;
  switch (c->op) {
    case AOP_LIST:
      asb_agent_list_free(c->out);
      break;
    case AOP_INSTALL:
    case AOP_INFO:
      asb_free(c->out);
      break;
    case AOP_NEW:
    case AOP_CONNECT:
      asb_agent_session_free(c->out);
      break;
    case AOP_SEND:
      asb_agent_turn_free(c->out);
      break;
    case AOP_EVENTS:
      asb_agent_event_list_free(c->out);
      break;
  }
  c->out = NULL;
  gen_cleanup(base);
}

static napi_value agents_submit(napi_env env, gen_call *c, int op, anode_box *b) {
  c->op = op;
  c->base.work = w_agents;
  c->base.result = r_agents;
  c->base.cleanup = c_agents;
  return anode_call_submit(env, &c->base, b);
}

/* agents(sandbox, op, name, opts, onEvent, cb): list (1), install (2: name,
 * opts {version, registry, source, events}), connect (4: the session id).
 * opts: {port, timeoutMs}. */
static napi_value js_agents(napi_env env, napi_callback_info info) {
  GEN_ARGS(6);
  gen_call *c = gen_new(env, argv[5]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  int32_t op = 0;
  if (!b) return gen_discard(env, c);
  napi_get_value_int32(env, argv[1], &op);
  if (op != AOP_LIST && op != AOP_INSTALL && op != AOP_CONNECT) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown agents operation");
    return gen_discard(env, c);
  }
  if ((op != AOP_LIST && anode_get_string(env, argv[2], &c->s[0])) ||
      read_agents_opts(env, c, argv[3]) || anode_call_on_event(env, &c->base, argv[4]))
    return gen_discard(env, c);
  if (op != AOP_INSTALL) c->i[1] = 0;
  return agents_submit(env, c, op, b);
}

/* agentSessionNew(sandbox, agent, opts, cb): opts {port, timeoutMs, cwd,
 * model, baseUrl, apiKeyEnv, wireApi, approval, sandbox, args[], env[]
 * ("NAME=value"), install (1, -1 or 0)} -> {id, agent, handle} */
static napi_value js_agent_session_new(napi_env env, napi_callback_info info) {
  GEN_ARGS(4);
  gen_call *c = gen_new(env, argv[3]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  napi_value o = argv[2];
  if (!b || anode_get_string(env, argv[1], &c->s[0]) || anode_opt_long(env, o, "port", &c->l[0]) ||
      anode_opt_long(env, o, "timeoutMs", &c->l[1]) || anode_opt_string(env, o, "cwd", &c->s[1]) ||
      anode_opt_string(env, o, "model", &c->s[2]) ||
      anode_opt_string(env, o, "baseUrl", &c->s[3]) ||
      anode_opt_string(env, o, "apiKeyEnv", &c->s[4]) ||
      anode_opt_string(env, o, "wireApi", &c->s[5]) ||
      /* s[] is full: the last two strings go where gen_cleanup frees them */
      anode_opt_string(env, o, "approval", &c->data) ||
      anode_opt_string(env, o, "sandbox", &c->feed) || anode_opt_strv(env, o, "args", &c->v[0]) ||
      anode_opt_strv(env, o, "env", &c->v[1]) || anode_opt_int(env, o, "install", &c->i[2]))
    return gen_discard(env, c);
  return agents_submit(env, c, AOP_NEW, b);
}

/* agentSession(session, op, arg, opts, onEvent, cb): send (5: the prompt),
 * events (6: after, a number), cancel (7), info (8), close (9). opts:
 * {port, timeoutMs, follow, events}. */
static napi_value js_agent_session(napi_env env, napi_callback_info info) {
  GEN_ARGS(6);
  gen_call *c = gen_new(env, argv[5]);
  if (!c) return NULL;
  anode_box *b = gen_box(env, c, argv[0], BOX_AGENT);
  int32_t op = 0;
  if (!b) return gen_discard(env, c);
  c->out2 = b->ptr; /* the box is kept and busy until the call is over */
  napi_get_value_int32(env, argv[1], &op);
  if (op < AOP_SEND || op > AOP_CLOSE) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown agent session operation");
    return gen_discard(env, c);
  }
  if (op == AOP_EVENTS && napi_get_value_double(env, argv[2], &c->d[0]) != napi_ok) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "after must be a number");
    return gen_discard(env, c);
  }
  if ((op == AOP_SEND && anode_get_string(env, argv[2], &c->s[0])) ||
      read_agents_opts(env, c, argv[3]) || anode_call_on_event(env, &c->base, argv[4]))
    return gen_discard(env, c);
  if (op != AOP_SEND && op != AOP_EVENTS) c->i[1] = 0;
  return agents_submit(env, c, op, b);
}

const anode_fn anode_agents_fns[] = {{"agents", js_agents},
                                     {"agentSessionNew", js_agent_session_new},
                                     {"agentSession", js_agent_session},
                                     {NULL, NULL}};
