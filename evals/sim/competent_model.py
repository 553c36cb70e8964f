"""A simulated competent model: an OpenAI-compatible chat server on 127.0.0.1.

It plays a good model for every case of the project's suites under the
reference agent's ``forced`` strategy (docs/reference-agent.md), following the
case's plan in ``evals/sim/plans.py``.  The case is found from the request's
first user message, which is the case's prompt (read from the suite files);
the server keeps no state between requests: the number of ``role: tool``
messages says how many steps are done, so the same conversation always gets
the same reply.

- ``tool_choice`` names ``next_action``: a call choosing the next planned
  tool, or ``"answer"`` when the plan is done;
- ``tool_choice`` names a tool: that tool called with the planned arguments,
  checked against the tool's schema in the request;
- ``tool_choice: "none"``: the plan's reply as plain text.

Anything it cannot play (a prompt of no known case, a tool out of plan,
arguments that do not fit the schema, ``tool_choice: "auto"``) is an HTTP 400
naming the problem, so a change of the agent's protocol fails loudly.

    python evals/sim/competent_model.py --port 8766 [--suites evals]

prints ``listening on http://127.0.0.1:PORT/v1`` once it accepts requests,
and serves until it is stopped (SIGTERM or Ctrl-C).  ``GET /v1/models``
answers too, for readiness checks.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `evals.sim` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evals.sim.plans import PLANS, Plan

CONTROL = "next_action"
"""The reference agent's control function under the forced strategy."""
MODEL_ID = "simulated-competent"
"""The name ``/v1/models`` lists."""


class Unplayable(Exception):
    """The request asks for something no plan answers; the message says what."""


def prompts(suites: Path) -> dict[str, str]:
    """Case prompt -> case id, for every case of the ``*.jsonl`` files in ``suites``."""
    out: dict[str, str] = {}
    for suite in sorted(suites.glob("*.jsonl")):
        for line in suite.read_text(encoding="utf-8").splitlines():
            if line.strip():
                case = json.loads(line)
                out[str(case["prompt"])] = str(case["id"])
    return out


def _tool(body: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    for tool in body.get("tools") or ():
        function = tool.get("function") or {}
        if function.get("name") == name:
            return dict(function)
    raise Unplayable(f"tool_choice names {name!r}, which is not among the request's tools")


def _fits(function: Mapping[str, Any], args: Mapping[str, Any]) -> None:
    schema = function.get("parameters") or {}
    properties = schema.get("properties") or {}
    missing = [k for k in schema.get("required") or () if k not in args]
    unknown = [k for k in args if k not in properties]
    if missing or unknown:
        raise Unplayable(
            f"arguments {sorted(args)} do not fit {function.get('name')!r}:"
            f" missing {missing}, unknown {unknown}"
        )


class CompetentModel:
    """Turns one request body into the assistant message the plan calls for."""

    def __init__(self, cases: Mapping[str, str], plans: Mapping[str, Plan]) -> None:
        self._cases = dict(cases)
        self._plans = plans

    def plan(self, body: Mapping[str, Any]) -> tuple[str, Plan]:
        """The case the conversation is about, and its plan."""
        users = [m for m in body.get("messages") or () if m.get("role") == "user"]
        if not users:
            raise Unplayable("the request has no user message")
        prompt = users[0].get("content")
        case = self._cases.get(prompt) if isinstance(prompt, str) else None
        if case is None:
            raise Unplayable(f"no case has the prompt {str(prompt)[:80]!r}")
        plan = self._plans.get(case)
        if plan is None:
            raise Unplayable(f"no plan for case {case!r}")
        return case, plan

    def message(self, body: Mapping[str, Any]) -> dict[str, Any]:
        _, plan = self.plan(body)
        done = sum(1 for m in body.get("messages") or () if m.get("role") == "tool")
        choice = body.get("tool_choice")
        if choice == "none":
            return {"role": "assistant", "content": plan.answer}
        if not isinstance(choice, dict):
            raise Unplayable(f"this model plays forced tool choices only, got {choice!r}")
        function = _tool(body, str((choice.get("function") or {}).get("name")))
        step = plan.steps[done] if done < len(plan.steps) else None
        if function["name"] == CONTROL:
            properties = (function.get("parameters") or {}).get("properties") or {}
            enums = [
                (k, v["enum"]) for k, v in properties.items() if isinstance(v.get("enum"), list)
            ]
            if len(enums) != 1:
                raise Unplayable(f"{CONTROL!r} declares no single enum argument")
            key, allowed = enums[0]
            action = step[0] if step else "answer"
            if action not in allowed:
                raise Unplayable(f"{action!r} is not among {CONTROL!r}'s {allowed}")
            args: dict[str, Any] = {key: action}
        elif step is not None and step[0] == function["name"]:
            args = dict(step[1])
            _fits(function, args)
        else:
            raise Unplayable(f"the plan has no call of {function['name']!r} at step {done + 1}")
        call = {
            "id": f"call_{done}_{function['name']}",
            "type": "function",
            "function": {"name": function["name"], "arguments": json.dumps(args)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    def reply(self, raw: bytes) -> tuple[int, bytes]:
        """HTTP status and JSON body for one ``POST /chat/completions``."""
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise Unplayable("the request body is not a JSON object")
            message = self.message(body)
        except (ValueError, Unplayable) as exc:
            error = {"error": {"message": str(exc), "type": "invalid_request_error"}}
            return 400, json.dumps(error).encode()
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        completion = {
            "id": f"chatcmpl-{len(body.get('messages') or ())}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model", MODEL_ID),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
        }
        return 200, json.dumps(completion).encode()


def serve(model: CompetentModel, port: int) -> ThreadingHTTPServer:
    """A started server on 127.0.0.1:``port`` (0 picks a free port)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, data: bytes) -> None:
            with contextlib.suppress(OSError):
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                models = {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]}
                self._send(200, json.dumps(models).encode())
            else:
                self._send(404, b'{"error": {"message": "only /v1/models"}}')

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.path.rstrip("/").endswith("/chat/completions"):
                self._send(*model.reply(raw))
            else:
                self._send(404, b'{"error": {"message": "only /v1/chat/completions"}}')

    class Server(ThreadingHTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the simulated competent model.")
    parser.add_argument("--port", type=int, default=8766, help="0 picks a free port")
    default_suites = Path(__file__).resolve().parents[1]
    parser.add_argument("--suites", type=Path, default=default_suites, help="folder of *.jsonl")
    args = parser.parse_args(argv)
    cases = prompts(args.suites)
    missing = sorted(set(cases.values()) - set(PLANS))
    if missing:
        print(f"competent_model: no plan for {', '.join(missing)}", file=sys.stderr)
        return 2
    server = serve(CompetentModel(cases, PLANS), args.port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
