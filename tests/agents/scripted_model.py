#!/usr/bin/env python3
"""A scripted model: a small HTTP server speaking the OpenAI Chat Completions
and Responses APIs and the Anthropic Messages API (streaming SSE, or one JSON
reply without "stream"), which plays a fixed script instead of thinking.

It is what the agents tests point the real coding-agent CLIs at (Codex, Qwen
Code, Claude Code, OpenCode): the CLIs are real, the sandbox is real, only
the model is scripted. Standard library only; runs inside a sandbox.

The script is chosen by the last user message of the conversation (what the
test sent as the prompt):

  contains "WRITE"   turn 1: call the request's shell tool with
                     `echo hi > /tmp/x`; turn 2 (a tool result is in the
                     conversation): answer "done"
  contains "RECALL"  answer "recall: yes" when the conversation holds the
                     earlier `echo hi > /tmp/x` call (the agent kept its
                     context across turns), else "recall: no"
  contains "SLEEP"   call the shell tool with `timeout 300 tail -f /dev/null`
                     (a turn to cancel; Qwen Code refuses a plain `sleep 300`)
  contains "FAIL"    answer HTTP 400 with an OpenAI-style error
  anything else      answer "ok"

The shell tool is whichever the request offers (by name: shell,
shell_command, exec_command, run_shell_command, Bash, bash, ...), with the
argument shape its JSON schema asks for, so the same script works with every
CLI. Every request is appended to the log file given with --log (one JSON
line: path, model, tool names, the script step taken), which the tests read.

usage: scripted_model.py --port N [--log FILE] [--ready-file FILE]
SPDX-License-Identifier: Apache-2.0
"""

import argparse
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SHELL_TOOLS = ("shell", "shell_command", "exec_command", "local_shell", "run_shell_command",
               "bash", "Bash", "run_command", "execute_command", "terminal")
WRITE_CMD = "echo hi > /tmp/x"
SLEEP_CMD = "timeout 300 tail -f /dev/null"
LOG_LOCK = threading.Lock()
ARGS = None


def log(entry):
    if not ARGS.log:
        return
    with LOG_LOCK, open(ARGS.log, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


# ---- reading a conversation in any of the three formats ----------------------------------

def text_of(content):
    """The text of a message's content: a string, or a list of parts."""
    if isinstance(content, str):
        return content
    out = []
    if isinstance(content, list):
        for p in content:
            if isinstance(p, dict):
                for k in ("text", "content", "output"):
                    v = p.get(k)
                    if isinstance(v, str):
                        out.append(v)
                    elif isinstance(v, list):
                        out.append(text_of(v))
            elif isinstance(p, str):
                out.append(p)
    return "\n".join(out)


def conversation(api, body):
    """(last user text, whole conversation as text, a tool result follows
    the last user message)."""
    items = []  # (role, text)
    if api == "responses":
        inp = body.get("input")
        if isinstance(inp, str):
            items.append(("user", inp))
        for it in inp if isinstance(inp, list) else []:
            if not isinstance(it, dict):
                continue
            t = it.get("type", "message")
            if t == "message":
                items.append((it.get("role", "user"), text_of(it.get("content"))))
            elif t in ("function_call", "custom_tool_call", "local_shell_call"):
                items.append(("call", json.dumps(it.get("arguments") or it.get("input")
                                                 or it.get("action"))))
            elif t.endswith("_output"):
                items.append(("tool", text_of(it.get("output"))))
    elif api == "chat":
        for m in body.get("messages") or []:
            if not isinstance(m, dict):
                continue
            role = m.get("role")
            if role == "tool":
                items.append(("tool", text_of(m.get("content"))))
                continue
            for tc in m.get("tool_calls") or []:
                items.append(("call", json.dumps((tc.get("function") or {}).get("arguments"))))
            items.append((role, text_of(m.get("content"))))
    else:  # anthropic messages
        for m in body.get("messages") or []:
            if not isinstance(m, dict):
                continue
            role = m.get("role")
            c = m.get("content")
            if isinstance(c, list):
                for p in c:
                    if not isinstance(p, dict):
                        continue
                    if p.get("type") == "tool_use":
                        items.append(("call", json.dumps(p.get("input"))))
                    elif p.get("type") == "tool_result":
                        items.append(("tool", text_of(p.get("content"))))
                    elif p.get("type") == "text":
                        items.append((role, p.get("text", "")))
            else:
                items.append((role, text_of(c)))
    last_user, after = "", False
    for role, text in items:
        if role == "user" and text.strip() and not text.lstrip().startswith("<"):
            last_user, after = text, False
        elif role == "tool":
            after = True
    # a CLI may wrap the prompt in context blocks: fall back to any user text
    if not last_user:
        for role, text in items:
            if role == "user":
                last_user = text
    whole = "\n".join(t for _, t in items)
    return last_user, whole, after


def tools_of(api, body):
    """{name: parameters schema} of the request's function tools."""
    out = {}
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if api == "chat" or "function" in t:
            f = t.get("function") or {}
            out[f.get("name", "")] = f.get("parameters") or {}
        elif api == "anthropic":
            out[t.get("name", "")] = t.get("input_schema") or {}
        else:
            out[t.get("name", "")] = t.get("parameters") or {}
    return out


def shell_call(tools, cmd):
    """(tool name, arguments) for running cmd with the request's shell tool."""
    name = next((n for n in SHELL_TOOLS if n in tools), None)
    if name is None:
        name = next((n for n in tools if "shell" in n.lower() or "bash" in n.lower()
                     or "exec" in n.lower()), None)
    if name is None:
        return None, None
    props = (tools[name] or {}).get("properties") or {}
    for key in ("command", "cmd", "commands", "script"):
        if key in props:
            typ = props[key].get("type")
            if typ == "array":
                return name, {key: ["bash", "-lc", cmd]}
            args = {key: cmd}
            if "description" in props:
                args["description"] = "run a shell command"
            return name, args
    return name, {"command": cmd}


def decide(api, body):
    """The script: ("text", str) | ("tool", name, args) | ("error", status, msg)."""
    last, whole, after_tool = conversation(api, body)
    tools = tools_of(api, body)
    if "FAIL" in last:
        return ("error", 400, "scripted failure: the model endpoint refuses this request")
    if "RECALL" in last:
        return ("text", "recall: yes" if WRITE_CMD in whole else "recall: no")
    if "WRITE" in last or "SLEEP" in last:
        if after_tool:
            return ("text", "done")
        name, args = shell_call(tools, WRITE_CMD if "WRITE" in last else SLEEP_CMD)
        if name is None:
            return ("text", "no shell tool offered: " + ",".join(sorted(tools)))
        return ("tool", name, args)
    return ("text", "ok")


# ---- the three wire formats ----------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            return self.reply_json(200, {"object": "list", "data": [
                {"id": "scripted", "object": "model", "created": 0, "owned_by": "test"}]})
        return self.reply_json(404, {"error": {"message": "no such route", "type": "not_found"}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self.reply_json(400, {"error": {"message": "bad JSON", "type": "invalid_request_error"}})
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/responses"):
            api = "responses"
        elif path.endswith("/chat/completions"):
            api = "chat"
        elif path.endswith("/messages"):
            api = "anthropic"
        else:
            return self.reply_json(404, {"error": {"message": "no such route " + path,
                                                   "type": "not_found"}})
        step = decide(api, body)
        log({"path": path, "api": api, "model": body.get("model"), "stream": bool(body.get("stream")),
             "tools": sorted(tools_of(api, body)), "step": list(step),
             "auth": bool(self.headers.get("Authorization") or self.headers.get("x-api-key"))})
        if step[0] == "error":
            if api == "anthropic":
                return self.reply_json(step[1], {"type": "error", "error": {
                    "type": "invalid_request_error", "message": step[2]}})
            return self.reply_json(step[1], {"error": {"message": step[2],
                                                       "type": "invalid_request_error",
                                                       "code": "scripted_failure"}})
        getattr(self, "reply_" + api)(body, step)

    # -- plumbing
    def reply_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, obj, event=None):
        out = ""
        if event:
            out += "event: " + event + "\n"
        out += "data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n"
        self.wfile.write(out.encode())
        self.wfile.flush()

    # -- OpenAI Responses
    def reply_responses(self, body, step):
        rid = "resp_" + uuid.uuid4().hex[:16]
        usage = {"input_tokens": 11, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 18}
        if step[0] == "text":
            item = {"type": "message", "id": "msg_" + uuid.uuid4().hex[:12], "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": step[1], "annotations": []}]}
        else:
            item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:12],
                    "status": "completed", "call_id": "call_" + uuid.uuid4().hex[:12],
                    "name": step[1], "arguments": json.dumps(step[2])}
        resp = {"id": rid, "object": "response", "created_at": int(time.time()),
                "status": "in_progress", "model": body.get("model", "scripted"), "output": []}
        if not body.get("stream"):
            resp.update(status="completed", output=[item], usage=usage)
            return self.reply_json(200, resp)
        self.start_sse()
        self.sse({"type": "response.created", "response": resp}, "response.created")
        self.sse({"type": "response.in_progress", "response": resp}, "response.in_progress")
        if item["type"] == "message":
            added = dict(item, status="in_progress", content=[])
            self.sse({"type": "response.output_item.added", "output_index": 0, "item": added},
                     "response.output_item.added")
            self.sse({"type": "response.content_part.added", "item_id": item["id"],
                      "output_index": 0, "content_index": 0,
                      "part": {"type": "output_text", "text": "", "annotations": []}},
                     "response.content_part.added")
            text = step[1]
            for i in range(0, len(text), 4):
                self.sse({"type": "response.output_text.delta", "item_id": item["id"],
                          "output_index": 0, "content_index": 0, "delta": text[i:i + 4]},
                         "response.output_text.delta")
            self.sse({"type": "response.output_text.done", "item_id": item["id"],
                      "output_index": 0, "content_index": 0, "text": text},
                     "response.output_text.done")
            self.sse({"type": "response.content_part.done", "item_id": item["id"],
                      "output_index": 0, "content_index": 0, "part": item["content"][0]},
                     "response.content_part.done")
        else:
            self.sse({"type": "response.output_item.added", "output_index": 0,
                      "item": dict(item, status="in_progress", arguments="")},
                     "response.output_item.added")
            self.sse({"type": "response.function_call_arguments.delta", "item_id": item["id"],
                      "output_index": 0, "delta": item["arguments"]},
                     "response.function_call_arguments.delta")
            self.sse({"type": "response.function_call_arguments.done", "item_id": item["id"],
                      "output_index": 0, "arguments": item["arguments"]},
                     "response.function_call_arguments.done")
        self.sse({"type": "response.output_item.done", "output_index": 0, "item": item},
                 "response.output_item.done")
        resp.update(status="completed", output=[item], usage=usage)
        self.sse({"type": "response.completed", "response": resp}, "response.completed")

    # -- OpenAI Chat Completions
    def reply_chat(self, body, step):
        cid = "chatcmpl-" + uuid.uuid4().hex[:16]
        model = body.get("model", "scripted")
        usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
        base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model}
        if step[0] == "text":
            msg = {"role": "assistant", "content": step[1]}
            finish = "stop"
        else:
            call = {"id": "call_" + uuid.uuid4().hex[:12], "type": "function",
                    "function": {"name": step[1], "arguments": json.dumps(step[2])}}
            msg = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        if not body.get("stream"):
            return self.reply_json(200, {"id": cid, "object": "chat.completion",
                                         "created": base["created"], "model": model,
                                         "choices": [{"index": 0, "message": msg,
                                                      "finish_reason": finish}],
                                         "usage": usage})
        self.start_sse()
        self.sse(dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                      "finish_reason": None}]))
        if step[0] == "text":
            text = step[1]
            for i in range(0, len(text), 4):
                self.sse(dict(base, choices=[{"index": 0, "delta": {"content": text[i:i + 4]},
                                              "finish_reason": None}]))
        else:
            tc = dict(msg["tool_calls"][0], index=0)
            self.sse(dict(base, choices=[{"index": 0, "delta": {"tool_calls": [tc]},
                                          "finish_reason": None}]))
        self.sse(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
        self.sse(dict(base, choices=[], usage=usage))
        self.sse("[DONE]")

    # -- Anthropic Messages
    def reply_anthropic(self, body, step):
        mid = "msg_" + uuid.uuid4().hex[:16]
        model = body.get("model", "scripted")
        if step[0] == "text":
            block = {"type": "text", "text": step[1]}
            stop = "end_turn"
        else:
            block = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:12],
                     "name": step[1], "input": step[2]}
            stop = "tool_use"
        usage = {"input_tokens": 11, "output_tokens": 7}
        if not body.get("stream"):
            return self.reply_json(200, {"id": mid, "type": "message", "role": "assistant",
                                         "model": model, "content": [block],
                                         "stop_reason": stop, "stop_sequence": None,
                                         "usage": usage})
        self.start_sse()
        self.sse({"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 0}}}, "message_start")
        if block["type"] == "text":
            self.sse({"type": "content_block_start", "index": 0,
                      "content_block": {"type": "text", "text": ""}}, "content_block_start")
            t = block["text"]
            for i in range(0, len(t), 4):
                self.sse({"type": "content_block_delta", "index": 0,
                          "delta": {"type": "text_delta", "text": t[i:i + 4]}},
                         "content_block_delta")
        else:
            self.sse({"type": "content_block_start", "index": 0,
                      "content_block": dict(block, input={})}, "content_block_start")
            self.sse({"type": "content_block_delta", "index": 0,
                      "delta": {"type": "input_json_delta",
                                "partial_json": json.dumps(block["input"])}},
                     "content_block_delta")
        self.sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
        self.sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                  "usage": {"output_tokens": 7}}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--log")
    p.add_argument("--ready-file")
    ARGS = p.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    srv.daemon_threads = True
    if ARGS.ready_file:
        with open(ARGS.ready_file + ".tmp", "w") as f:
            f.write(str(srv.server_address[1]))
        import os
        os.rename(ARGS.ready_file + ".tmp", ARGS.ready_file)
    print("listening on", srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
