//! A Codex session's conversation on the page `attach` opens (issue 33): its rollout read through
//! the one transcript path, with Claude Code's caps and escaping, from a rollout of hostile
//! content in Codex 0.169's shape.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_hooks::agent::Agent;
use agent_hooks::board::Board;
use agent_hooks::event::{EventKind, HookEvent};
use agent_hooks::server::{self, CONVERSATION_PATH};
use agent_hooks::transcript::{MAX_MESSAGES, MESSAGE_CAP, TAIL_BYTES};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "codex-page-test-token-0123456789ab";

fn item(item: Value) -> String {
    json!({"timestamp": "2026-12-06T08:56:09.530Z", "ordinal": 1, "type": "event_msg",
        "payload": {"type": "item_completed", "thread_id": "t", "turn_id": "u", "item": item}})
    .to_string()
}

fn said(kind: &str, text: &str) -> String {
    let part = if kind == "UserMessage" {
        "text"
    } else {
        "Text"
    };
    item(json!({"type": kind, "id": "i", "content": [{"type": part, "text": text}]}))
}

async fn conversation(path: PathBuf) -> Value {
    let board = Board::new(agent_hooks::agent::Agent::Codex);
    let stop = CancellationToken::new();
    let address = server::serve(
        Arc::clone(&board),
        Agent::Codex,
        TOKEN,
        Duration::from_secs(30),
        stop.clone(),
    )
    .await
    .unwrap();
    board.apply(&HookEvent {
        session_id: "019a-codex".into(),
        cwd: PathBuf::from("/work/project"),
        subagent: None,
        transcript: Some(path),
        spawned: None,
        kind: EventKind::Prompt,
    });
    let body = reqwest::Client::new()
        .get(format!("http://{address}{CONVERSATION_PATH}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    stop.cancel();
    body
}

fn shown(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

// Proves: the rollout's conversation is shown as text (markup kept as text, escapes, controls
// and bidi overrides gone, each message capped); the model's raw items, instructions and broken
// lines are not shown; a failed turn shows why.
#[tokio::test]
async fn a_hostile_codex_rollout_shows_as_plain_capped_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rollout.jsonl");
    let huge = "y".repeat(MESSAGE_CAP * 3);
    let lines = [
        json!({"type": "session_meta", "payload": {"id": "019a", "base_instructions": {"text": "You are Codex"}}}).to_string(),
        json!({"type": "response_item", "payload": {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "<environment_context>secret</environment_context>"}]}}).to_string(),
        said("UserMessage", "<img src=x onerror=alert(1)> make it"),
        "{\"type\": \"event_msg\", \"payload\": {\"type\": \"item_compl".to_owned(),
        item(json!({"type": "CommandExecution", "id": "call_1",
            "command": ["/bin/bash", "-lc", "echo \u{1b}[31m<b>hi</b>\u{1b}]0;title\u{7}"],
            "aggregated_output": "secret output", "exit_code": 0})),
        said("AgentMessage", "do\u{202e}ne\u{0} \u{1b}[2J<script>x</script>"),
        item(json!({"type": "Reasoning", "id": "r", "summary": ["thinking"]})),
        said("AgentMessage", &huge),
        json!({"type": "event_msg", "payload": {"type": "task_complete", "turn_id": "u",
            "last_agent_message": null,
            "error": {"message": "stream disconnected: <b>boom</b>\u{1b}[1m", "codex_error_info": "other"}}})
        .to_string(),
        "not json at all \u{1b}[31m".to_owned(),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let body = conversation(path.clone()).await;
    let shown = shown(&body);
    let pairs: Vec<(&str, &str)> = shown
        .iter()
        .map(|(r, t)| (r.as_str(), t.as_str()))
        .collect();
    assert_eq!(
        pairs[..3],
        [
            ("user", "<img src=x onerror=alert(1)> make it"),
            ("tool", "Bash: echo <b>hi</b>"),
            ("assistant", "done <script>x</script>"),
        ],
        "{body}"
    );
    assert_eq!(pairs[3].0, "assistant");
    assert_eq!(pairs[3].1.chars().count(), MESSAGE_CAP);
    assert!(pairs[3].1.ends_with('…'));
    assert_eq!(
        pairs[4],
        (
            "assistant",
            "The turn failed: stream disconnected: <b>boom</b>"
        )
    );
    assert_eq!(pairs.len(), 5, "{body}");
    assert!(!body.to_string().contains("secret"), "{body}");
    assert_eq!(body["truncated"], false);

    // A rollout longer than the tail read: only its end, marked as cut, within the message cap.
    let many: Vec<String> = (0..(MAX_MESSAGES + 50) * 10)
        .map(|i| said("UserMessage", &format!("message {i:05} {}", "x".repeat(80))))
        .collect();
    std::fs::write(&path, many.join("\n") + "\n").unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > TAIL_BYTES);
    let body = conversation(path).await;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), MAX_MESSAGES);
    assert_eq!(body["truncated"], true);
    let last = format!("message {:05}", (MAX_MESSAGES + 50) * 10 - 1);
    assert!(messages.last().unwrap()["text"]
        .as_str()
        .unwrap()
        .starts_with(&last));
}

// Proves: one line bigger than the tail read (a huge command output) costs no more than the
// tail, and the lines after it still show.
#[tokio::test]
async fn a_line_bigger_than_the_tail_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rollout.jsonl");
    let big = item(
        json!({"type": "CommandExecution", "command": ["sh", "-c", "x"],
        "aggregated_output": "z".repeat(TAIL_BYTES as usize * 2)}),
    );
    std::fs::write(
        &path,
        [big, said("AgentMessage", "after the big one")].join("\n") + "\n",
    )
    .unwrap();
    let body = conversation(path).await;
    assert_eq!(
        shown(&body),
        [("assistant".to_owned(), "after the big one".to_owned())]
    );
    assert_eq!(body["truncated"], true);
}
