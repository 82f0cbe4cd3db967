#!/usr/bin/env python3
"""What Supercode Tray's Claude Code hooks cost, with the real Claude Code CLI, side by side in
one run (issue 32); with `--agent codex`, part 1 for Codex's hooks with the real Codex CLI
(issue 33).

    scripts/bench-claude-hooks.py [--agent codex] [--calls 20] [--calls-low 2] [--rounds 5]
                                  [--latency-rounds 20] [--tray target/release/supercode-tray]

1. Per tool call and per turn. A stand-in of the Messages API (served here) makes each turn N
   sequential Bash calls (`true`, allowed by the settings, so no prompt) and then ends it. Each
   round runs `claude -p` per configuration, in turn, once with `--calls-low` calls and once with
   `--calls`: no hooks; PreToolUse + PostToolUse running the shell builtin `true` (the issue's
   yardstick); the same two running the program `/usr/bin/true` (what starting any program
   costs: the floor for a hook that is a program); our hooks (`hooks install claude-code`).
   Per tool call: the slope between the two turn lengths, minus the no-hooks slope, as the
   median of each round's own (paired: the rounds run side by side, so a slow stretch of the
   machine moves every configuration of its round alike), and from the medians of the turns;
   per turn: what the short turn adds beyond its calls (for us a new session each time: the
   host's start, SessionStart, UserPromptSubmit, Stop, SessionEnd).
   Codex: a stand-in of the Responses API makes each turn N sequential `exec_command` calls
   (`true`), run by `codex exec` with approvals and sandbox bypassed (nothing to ask) and hook
   trust bypassed (`--dangerously-bypass-hook-trust`: the hooks are this run's own, in a temp
   home), so each call runs PreToolUse and PostToolUse.
2. Latency, with `hooks claude-code-unattended on` so that a `claude -p` turn's one Bash call
   (`date +%s%N > FILE`, not allowed by the settings) waits for the tray: from the
   PermissionRequest (a hook of the user's own beside ours writes the time it starts) to
   `supercode-tray events --json` printing the session as needs-approval; and from starting
   `supercode-tray act ID approve` to the command running (the time it wrote). p50 and p99 over
   the rounds (with 20 rounds, p99 is the slowest).
   Then our share alone, with this script playing the agent (the same hook and host; no Claude
   Code): our hook's start -> `events` shows its request; `act` -> the waiting hook prints the
   decision, each request timed alone. In the real walk the PermissionRequest follows the
   tool's PreToolUse by a few milliseconds, so the core's least time between two states one
   runtime shows (`supercode_core::agents::PUBLISH_INTERVAL`, 100 ms) holds it back; the rest of
   the difference is Claude Code's (starting an event's hooks, reading a decision, starting the
   tool).
3. An idle session's host: started by our hook for a SessionStart whose agent process is this
   script (the host cannot tell), then left alone: CPU ticks over 10 s, threads and VmRSS. Its
   token goes to the OS keychain when there is a session bus (under scripts/test-env.sh, a
   private one), as a user's does, else to the file store.
Needs the pinned CLI (scripts/install-deps.sh --test) and a built `supercode-tray` with
`supercode-tray-hook` beside it.
"""
import argparse, http.server, json, os, shutil, statistics, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLAUDE = os.path.join(ROOT, "tests/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude")
CODEX = os.path.join(ROOT, "tests/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
KEY = "sk-ant-api03-bench-key-not-a-secret-0123456789"


class StandIn(http.server.BaseHTTPRequestHandler):
    """What both stand-ins share: quiet, HTTP/1.1, a JSON reply, a request body read as JSON."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")

    def send(self, content_type, data):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def reply(self, obj):
        self.send("application/json", json.dumps(obj).encode())


def serve(handler):
    """Serves `handler` on a loopback port, in the background; returns the port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def standin(config):
    """Serves the stand-in; `config` (calls per turn, the Bash command) may change between runs."""
    class Handler(StandIn):
        def do_POST(self):
            body = self.body()
            if "count_tokens" in self.path:
                return self.reply({"input_tokens": 1})
            results = sum(
                1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
                for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
            tools = [t.get("name") for t in body.get("tools") or []]
            if "Bash" in tools and results < config["calls"]:
                block = {"type": "tool_use", "id": f"toolu_{results}", "name": "Bash", "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps({"command": config["command"], "description": "Nothing"})}
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

        def do_GET(self):
            self.reply({})

    return serve(Handler)


def codex_standin(config):
    """The Responses API: `exec_command` with `true` until the turn has `config["calls"]` outputs."""
    class Handler(StandIn):
        def do_POST(self):
            body = self.body()
            outputs = sum(1 for i in body.get("input") or [] if i.get("type") == "function_call_output")
            tools = [t.get("name") for t in body.get("tools") or []]
            if "exec_command" in tools and outputs < config["calls"]:
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
            self.send("text/event-stream",
                      "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode())

        def do_GET(self):
            self.reply({"data": [], "models": []})

    return serve(Handler)


def codex_homes(args, config, work, project, base_env):
    """A Codex home per configuration: the stand-in as the model provider, and its hooks."""
    port = codex_standin(config)
    base_env["STANDIN_API_KEY"] = "sk-proj-bench-key-not-a-secret"
    toml = (f'model = "stand-in"\nmodel_provider = "standin"\n'
            f'[model_providers.standin]\nname = "Stand-in"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
            f'wire_api = "responses"\nenv_key = "STANDIN_API_KEY"\n'
            f'[projects."{project}"]\ntrust_level = "trusted"\n')
    true_hook = [{"hooks": [{"type": "command", "command": "true", "timeout": 10}]}]
    program_hook = [{"hooks": [{"type": "command", "command": "/usr/bin/true", "timeout": 10}]}]
    homes = {}
    for name in ["none", "two true hooks", "two /usr/bin/true", "supercode hooks"]:
        home = os.path.join(work, name.replace(" ", "-").replace("/", "_"))
        os.makedirs(os.path.join(home, ".codex"))
        with open(os.path.join(home, ".codex", "config.toml"), "w") as f:
            f.write(toml)
        if name in ("two true hooks", "two /usr/bin/true"):
            hook = true_hook if name == "two true hooks" else program_hook
            with open(os.path.join(home, ".codex", "hooks.json"), "w") as f:
                json.dump({"hooks": {"PreToolUse": hook, "PostToolUse": hook}}, f)
        if name == "supercode hooks":
            subprocess.run([args.tray, "hooks", "install", "codex", "--yes"], env={**base_env, "HOME": home},
                           check=True, stdout=subprocess.DEVNULL)
        homes[name] = home
    command = [CODEX, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
               "--dangerously-bypass-hook-trust", "go"]
    return homes, command


def hook_program(args):
    """The hook program agents run (`hooks install` writes it), beside `--tray`."""
    return os.path.join(os.path.dirname(os.path.abspath(args.tray)), "supercode-tray-hook")


def follow_events(args, env, parse=lambda line: line):
    """Runs `supercode-tray events --json` and keeps, in the background, (the time in ns each line
    was read, parse(line)); returns the process, that list and a Condition notified on each."""
    events = subprocess.Popen([args.tray, "events", "--json"], env=env, stdout=subprocess.PIPE, text=True)
    lines, seen = [], threading.Condition()

    def read():
        for line in events.stdout:
            now = time.time_ns()
            item = parse(line)
            with seen:
                lines.append((now, item))
                seen.notify_all()

    threading.Thread(target=read, daemon=True).start()
    return events, lines, seen


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def latency(args, config, base_env, work, project):
    """Part 2: PermissionRequest -> events shows it, and act -> the tool runs, in ms."""
    home = os.path.join(work, "latency")
    os.makedirs(os.path.join(home, ".claude"))
    asked, ran = os.path.join(work, "asked"), os.path.join(work, "ran")
    with open(os.path.join(home, ".claude.json"), "w") as f:
        json.dump({"hasCompletedOnboarding": True, "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
                   "projects": {project: {"hasTrustDialogAccepted": True}}}, f)
    with open(os.path.join(home, ".claude", "settings.json"), "w") as f:
        json.dump({"hooks": {"PermissionRequest": [{"hooks": [{"type": "command", "command": f"date +%s%N > {asked}"}]}]}}, f)
    env = {**base_env, "HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config")}
    subprocess.run([args.tray, "hooks", "install", "claude-code", "--yes"], env=env, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([args.tray, "hooks", "claude-code-unattended", "on"], env=env, check=True, stdout=subprocess.DEVNULL)
    config.update(calls=1, command=f"date +%s%N > {ran}")
    def asking(line):
        """The runtime asking for approval in this event, or None."""
        found = None
        for runtime in json.loads(line).get("snapshot", {}).get("runtimes", []):
            if (runtime.get("state") or {}).get("value") == "needs-approval":
                found = runtime["endpoint"]
        return found

    events, lines, seen = follow_events(args, env, asking)  # lines: (time in ns, who asks, or None)
    to_events, to_tool = [], []
    for _ in range(args.latency_rounds):
        for path in (asked, ran):
            if os.path.exists(path):
                os.remove(path)
        with seen:
            start = len(lines)
        claude = subprocess.Popen([CLAUDE, "-p", "go", "--permission-mode", "default"], cwd=project, env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        with seen:
            if not seen.wait_for(lambda: any(a for _, a in lines[start:]), timeout=30):
                sys.exit("the request never showed in events")
            shown, endpoint = next((t, a) for t, a in lines[start:] if a)
        while not os.path.exists(asked) or not open(asked).read().strip():
            time.sleep(0.001)
        to_events.append((shown - int(open(asked).read())) / 1e6)
        acted = time.time_ns()
        subprocess.run([args.tray, "act", endpoint, "approve"], env=env, check=True, stdout=subprocess.DEVNULL)
        claude.wait(timeout=30)
        to_tool.append((int(open(ran).read()) - acted) / 1e6)
    events.terminate()
    subprocess.run([args.tray, "hooks", "claude-code-unattended", "off"], env=env, check=True, stdout=subprocess.DEVNULL)
    return to_events, to_tool


def our_share(args, base_env, work):
    """Part 2 without Claude Code: this script plays the agent (CLAUDE_PID is its own pid) and
    times our hook's start -> `events` shows the event, and `act` -> the waiting hook prints the
    decision, in ms."""
    env = {**base_env, "HOME": os.path.join(work, "share"), "XDG_CONFIG_HOME": os.path.join(work, "share", ".config"),
           "CLAUDE_PID": str(os.getpid())}
    subprocess.run([args.tray, "hooks", "claude-code-unattended", "on"], env=env, check=True, stdout=subprocess.DEVNULL)

    def event(name, **fields):
        return json.dumps({"session_id": "bench-share", "cwd": work, "hook_event_name": name, **fields})

    def hook(name, **fields):
        subprocess.run([hook_program(args), "claude-code"], env=env, input=event(name, **fields), text=True, check=True)

    hook("SessionStart")
    events, lines, seen = follow_events(args, env)
    to_events, to_decision = [], []
    for i in range(args.latency_rounds):
        command = f"bench-{i}-command"
        started = time.time_ns()
        waiting = subprocess.Popen([hook_program(args), "claude-code"], env=env, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
        waiting.stdin.write(event("PermissionRequest", tool_name="Bash", tool_input={"command": command}))
        waiting.stdin.close()
        with seen:
            if not seen.wait_for(lambda: any(command in line for _, line in lines), timeout=30):
                sys.exit("the request never showed in events")
            shown, line = next((t, line) for t, line in lines if command in line)
        to_events.append((shown - started) / 1e6)
        endpoint = next(r["endpoint"] for r in json.loads(line)["snapshot"]["runtimes"]
                        if (r.get("state") or {}).get("detail") == command)
        acted = time.time_ns()
        act = subprocess.Popen([args.tray, "act", endpoint, "approve"], env=env, stdout=subprocess.DEVNULL)
        waiting.stdout.readline()
        to_decision.append((time.time_ns() - acted) / 1e6)
        act.wait()
        waiting.wait()
        hook("PostToolUse", tool_name="Bash")
        # Past the core's least time between two shown states (PUBLISH_INTERVAL, 100 ms), so
        # the next request is timed alone.
        time.sleep(0.2)
    hook("SessionEnd")
    events.terminate()
    return to_events, to_decision


def idle_host(args, base_env, work):
    """Part 3: an idle session's host: CPU ticks over 10 s, threads, VmRSS (kB)."""
    env = {**base_env, "HOME": os.path.join(work, "latency"), "CLAUDE_PID": str(os.getpid())}
    # A user's host keeps its token in the OS keychain: use it when there is a session bus (run
    # under scripts/test-env.sh for a private one), else the file store.
    store = "file"
    if os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        del env["SUPERCODE_SECRET_STORE"]
        env["DBUS_SESSION_BUS_ADDRESS"] = os.environ["DBUS_SESSION_BUS_ADDRESS"]
        store = "keychain"
    event = {"session_id": "bench-idle", "cwd": work, "hook_event_name": "SessionStart", "source": "startup"}
    subprocess.run([hook_program(args), "claude-code"], env=env, input=json.dumps(event), text=True, check=True)
    host = None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"hook-host" in cmdline and b"bench-idle" in cmdline:
            host = pid
    if host is None:
        sys.exit("no host started")

    def ticks():
        fields = open(f"/proc/{host}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    time.sleep(1)
    before = ticks()
    time.sleep(10)
    used = ticks() - before
    status = dict(line.split(":", 1) for line in open(f"/proc/{host}/status").read().splitlines() if ":" in line)
    end = {**event, "hook_event_name": "SessionEnd"}
    subprocess.run([hook_program(args), "claude-code"], env=env, input=json.dumps(end), text=True, check=True)
    return used, status["Threads"].strip(), status["VmRSS"].strip(), store


def turn_costs(args, config, base_env, project, homes, command):
    """Per tool call and per turn, for each configuration in `homes` (part 1)."""
    # Each configuration runs turns of `--calls-low` and of `--calls` calls in every round: the
    # difference is what each further tool call costs (our hooks' per-call share), what is left
    # of the short turn is the per-turn share (a new session: the host's start, SessionStart,
    # UserPromptSubmit, Stop, SessionEnd).
    counts = (args.calls_low, args.calls)
    times = {(name, n): [] for name in homes for n in counts}
    for _ in range(args.rounds):
        for name, home in homes.items():
            for n in counts:
                config["calls"] = n
                start = time.monotonic()
                subprocess.run(command, cwd=project, env={**base_env, "HOME": home},
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=True)
                times[(name, n)].append(time.monotonic() - start)
    turn = {key: statistics.median(values) * 1000 for key, values in times.items()}
    calls = args.calls - args.calls_low

    def slope(name, r):
        return (times[(name, args.calls)][r] - times[(name, args.calls_low)][r]) * 1000 / calls

    per_call = {name: (turn[(name, args.calls)] - turn[(name, args.calls_low)]) / calls for name in homes}
    print(f"turns of {args.calls_low} and {args.calls} tool calls, {args.rounds} rounds, medians:")
    for name in homes:
        paired = statistics.median(slope(name, r) - slope("none", r) for r in range(args.rounds))
        extra_call = per_call[name] - per_call["none"]
        extra_turn = (turn[(name, args.calls_low)] - turn[("none", args.calls_low)]) - args.calls_low * extra_call
        print(f"  {name:18} turn {turn[(name, args.calls)]:7.0f} ms   per tool call {paired:+6.1f} ms paired,"
              f" {extra_call:+6.1f} ms from the medians   per turn {extra_turn:+7.1f} ms")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent", choices=["claude-code", "codex"], default="claude-code")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--calls-low", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency-rounds", type=int, default=20)
    parser.add_argument("--tray", default=os.path.join(ROOT, "target/release/supercode-tray"))
    args = parser.parse_args()
    config = {"calls": args.calls, "command": "true"}
    work = tempfile.mkdtemp(prefix="bench-claude-hooks-")
    project = os.path.join(work, "project")
    os.makedirs(project)
    run_dir = os.path.join(work, "run")
    os.makedirs(run_dir, mode=0o700)
    base_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "XDG_RUNTIME_DIR": run_dir,
        "SUPERCODE_RUNTIME_DIR": os.path.join(work, "receipts"), "SUPERCODE_SECRET_STORE": "file",
        "SUPERCODE_SECRET_DIR": os.path.join(work, "secrets"), "SUPERCODE_LOG_DIR": os.path.join(work, "logs"),
        "SUPERCODE_STATE_DIR": os.path.join(work, "state"), "CANON_HOME": os.path.join(work, "canon"),
    }
    if args.agent == "codex":
        homes, command = codex_homes(args, config, work, project, base_env)
        turn_costs(args, config, base_env, project, homes, command)
        shutil.rmtree(work, ignore_errors=True)
        return
    port = standin(config)
    base_env.update({
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": KEY,
        "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    })
    homes = {}
    allow = {"permissions": {"allow": ["Bash(true)", "Bash(true:*)"]}}
    true_hook = [{"hooks": [{"type": "command", "command": "true"}]}]
    program_hook = [{"hooks": [{"type": "command", "command": "/usr/bin/true"}]}]
    for name in ["none", "two true hooks", "two /usr/bin/true", "supercode hooks"]:
        home = os.path.join(work, name.replace(" ", "-").replace("/", "_"))
        os.makedirs(os.path.join(home, ".claude"))
        with open(os.path.join(home, ".claude.json"), "w") as f:
            json.dump({"hasCompletedOnboarding": True, "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
                       "projects": {project: {"hasTrustDialogAccepted": True}}}, f)
        settings = dict(allow)
        if name in ("two true hooks", "two /usr/bin/true"):
            hook = true_hook if name == "two true hooks" else program_hook
            settings["hooks"] = {"PreToolUse": hook, "PostToolUse": hook}
        with open(os.path.join(home, ".claude", "settings.json"), "w") as f:
            json.dump(settings, f)
        if name == "supercode hooks":
            subprocess.run([args.tray, "hooks", "install", "claude-code", "--yes"], env={**base_env, "HOME": home},
                           check=True, stdout=subprocess.DEVNULL)
        homes[name] = home
    turn_costs(args, config, base_env, project, homes, [CLAUDE, "-p", "go", "--permission-mode", "default"])
    to_events, to_tool = latency(args, config, base_env, work, project)
    print(f"latency, {args.latency_rounds} rounds, p50 / p99:")
    print(f"  PermissionRequest -> events shows it   {percentile(to_events, 50):6.1f} / {percentile(to_events, 99):6.1f} ms")
    print(f"  act approve -> the tool runs           {percentile(to_tool, 50):6.1f} / {percentile(to_tool, 99):6.1f} ms")
    hook_to_events, act_to_decision = our_share(args, base_env, work)
    print(f"  our share: our hook starts -> events     {percentile(hook_to_events, 50):6.1f} / {percentile(hook_to_events, 99):6.1f} ms")
    print(f"  our share: act -> the hook prints allow  {percentile(act_to_decision, 50):6.1f} / {percentile(act_to_decision, 99):6.1f} ms")
    ticks, threads, rss, store = idle_host(args, base_env, work)
    print(f"idle host ({store} secret store): {ticks} CPU ticks in 10 s, {threads} threads, VmRSS {rss}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
