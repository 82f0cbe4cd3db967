#!/usr/bin/env python3
"""Per-tool-call cost of Supercode Tray's Claude Code hooks, against two `true` hooks, with the
real Claude Code CLI, side by side in one run (issue 32, item 7); with `--agent codex`, the same
for Codex's hooks with the real Codex CLI (issue 33).

    scripts/bench-claude-hooks.py [--agent codex] [--calls 20] [--rounds 5] [--tray target/release/supercode-tray]

A stand-in of the Messages API (served here) makes each turn N sequential Bash calls (`true`,
allowed by the settings, so no prompt) and then ends it. Each round runs `claude -p` once per
configuration, in turn: no hooks; PreToolUse + PostToolUse running the shell builtin `true`;
our hooks (`hooks install claude-code`). The cost per tool call of a configuration is its turn
time minus the no-hooks turn time, divided by N; the medians over the rounds are printed.
Needs the pinned CLI (scripts/install-deps.sh --test) and a built `supercode-tray`.

Codex: a stand-in of the Responses API makes each turn N sequential `exec_command` calls
(`true`), run by `codex exec` with approvals and sandbox bypassed (nothing to ask) and hook trust
bypassed (`--dangerously-bypass-hook-trust`: the hooks are this run's own, in a temp home), so
each call runs PreToolUse and PostToolUse.
"""
import argparse, http.server, json, os, shutil, statistics, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLAUDE = os.path.join(ROOT, "tests/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude")
CODEX = os.path.join(ROOT, "tests/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
KEY = "sk-ant-api03-bench-key-not-a-secret-0123456789"


def standin(calls):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if "count_tokens" in self.path:
                return self.reply({"input_tokens": 1})
            results = sum(
                1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
                for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
            tools = [t.get("name") for t in body.get("tools") or []]
            if "Bash" in tools and results < calls:
                block = {"type": "tool_use", "id": f"toolu_{results}", "name": "Bash", "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps({"command": "true", "description": "Nothing"})}
                stop = "tool_use"
            else:
                block, delta, stop = {"type": "text", "text": ""}, {"type": "text_delta", "text": "Done."}, "end_turn"
            msg = {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": [],
                   "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
            if not body.get("stream"):
                msg.update(content=[{"type": "text", "text": "ok"}], stop_reason="end_turn")
                return self.reply(msg)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for name, data in [
                ("message_start", {"type": "message_start", "message": msg}),
                ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 1}}),
                ("message_stop", {"type": "message_stop"}),
            ]:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.close_connection = True

        def reply(self, obj):
            data = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply({})

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def codex_standin(calls):
    """The Responses API: `exec_command` with `true` until the turn has `calls` outputs."""
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            outputs = sum(1 for i in body.get("input") or [] if i.get("type") == "function_call_output")
            tools = [t.get("name") for t in body.get("tools") or []]
            if "exec_command" in tools and outputs < calls:
                item = {"type": "function_call", "id": f"fc_{outputs}", "call_id": f"call_{outputs}",
                        "name": "exec_command", "status": "completed", "arguments": json.dumps({"cmd": "true"})}
            else:
                item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}
            usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                     "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
            response = lambda status, output: {"id": "resp_1", "object": "response", "status": status,
                                               "output": output, "usage": usage}
            events = [
                {"type": "response.created", "response": response("in_progress", [])},
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                {"type": "response.completed", "response": response("completed", [item])},
            ]
            data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            data = json.dumps({"data": [], "models": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def codex_homes(args, work, project, base_env):
    """A Codex home per configuration: the stand-in as the model provider, and its hooks."""
    port = codex_standin(args.calls)
    base_env["STANDIN_API_KEY"] = "sk-proj-bench-key-not-a-secret"
    config = (f'model = "stand-in"\nmodel_provider = "standin"\n'
              f'[model_providers.standin]\nname = "Stand-in"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
              f'wire_api = "responses"\nenv_key = "STANDIN_API_KEY"\n'
              f'[projects."{project}"]\ntrust_level = "trusted"\n')
    true_hook = [{"hooks": [{"type": "command", "command": "true", "timeout": 10}]}]
    homes = {}
    for name in ["none", "two true hooks", "supercode hooks"]:
        home = os.path.join(work, name.replace(" ", "-"))
        os.makedirs(os.path.join(home, ".codex"))
        with open(os.path.join(home, ".codex", "config.toml"), "w") as f:
            f.write(config)
        if name == "two true hooks":
            with open(os.path.join(home, ".codex", "hooks.json"), "w") as f:
                json.dump({"hooks": {"PreToolUse": true_hook, "PostToolUse": true_hook}}, f)
        if name == "supercode hooks":
            subprocess.run([args.tray, "hooks", "install", "codex", "--yes"], env={**base_env, "HOME": home},
                           check=True, stdout=subprocess.DEVNULL)
        homes[name] = home
    command = [CODEX, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
               "--dangerously-bypass-hook-trust", "go"]
    return homes, command


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent", choices=["claude-code", "codex"], default="claude-code")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tray", default=os.path.join(ROOT, "target/release/supercode-tray"))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-claude-hooks-")
    project = os.path.join(work, "project")
    os.makedirs(project)
    run_dir = os.path.join(work, "run")
    os.makedirs(run_dir, mode=0o700)
    if args.agent == "codex":
        base_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "XDG_RUNTIME_DIR": run_dir,
            "SUPERCODE_RUNTIME_DIR": os.path.join(work, "receipts"), "SUPERCODE_SECRET_STORE": "file",
            "SUPERCODE_SECRET_DIR": os.path.join(work, "secrets"), "SUPERCODE_LOG_DIR": os.path.join(work, "logs"),
            "SUPERCODE_STATE_DIR": os.path.join(work, "state"), "CANON_HOME": os.path.join(work, "canon"),
        }
        homes, command = codex_homes(args, work, project, base_env)
        return measure(args, work, project, base_env, homes, command)
    port = standin(args.calls)
    base_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "XDG_RUNTIME_DIR": run_dir,
        "SUPERCODE_RUNTIME_DIR": os.path.join(work, "receipts"), "SUPERCODE_SECRET_STORE": "file",
        "SUPERCODE_SECRET_DIR": os.path.join(work, "secrets"), "SUPERCODE_LOG_DIR": os.path.join(work, "logs"),
        "SUPERCODE_STATE_DIR": os.path.join(work, "state"), "CANON_HOME": os.path.join(work, "canon"),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": KEY,
        "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    homes = {}
    allow = {"permissions": {"allow": ["Bash(true)", "Bash(true:*)"]}}
    true_hook = [{"hooks": [{"type": "command", "command": "true"}]}]
    for name in ["none", "two true hooks", "supercode hooks"]:
        home = os.path.join(work, name.replace(" ", "-"))
        os.makedirs(os.path.join(home, ".claude"))
        with open(os.path.join(home, ".claude.json"), "w") as f:
            json.dump({"hasCompletedOnboarding": True, "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
                       "projects": {project: {"hasTrustDialogAccepted": True}}}, f)
        settings = dict(allow)
        if name == "two true hooks":
            settings["hooks"] = {"PreToolUse": true_hook, "PostToolUse": true_hook}
        with open(os.path.join(home, ".claude", "settings.json"), "w") as f:
            json.dump(settings, f)
        if name == "supercode hooks":
            subprocess.run([args.tray, "hooks", "install", "claude-code", "--yes"], env={**base_env, "HOME": home},
                           check=True, stdout=subprocess.DEVNULL)
        homes[name] = home
    return measure(args, work, project, base_env, homes, [CLAUDE, "-p", "go", "--permission-mode", "default"])


def measure(args, work, project, base_env, homes, command):
    """Runs `command` once per configuration per round, in turn; prints the medians."""
    times = {name: [] for name in homes}
    for _ in range(args.rounds):
        for name, home in homes.items():
            start = time.monotonic()
            subprocess.run(command, cwd=project, env={**base_env, "HOME": home}, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.monotonic() - start)
    base = statistics.median(times["none"])
    print(f"{args.calls} tool calls per turn, {args.rounds} rounds, medians:")
    for name, values in times.items():
        turn = statistics.median(values)
        extra = (turn - base) / args.calls * 1000
        print(f"  {name:16} turn {turn * 1000:7.0f} ms   per tool call {extra:+6.1f} ms")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
