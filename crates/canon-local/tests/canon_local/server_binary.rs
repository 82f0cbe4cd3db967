//! The `canon-test-server` binary: announces its address first, serves the contract.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[tokio::test]
async fn binary_prints_its_address_first_and_serves_state() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_canon-test-server"))
        .args(["--pending-polls", "2"])
        .env("CANON_TEST_API_KEY", "sk-from-env")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let base = first
        .trim()
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("first line {first:?}"))
        .to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    let state: serde_json::Value = reqwest::get(format!("{base}/__test/state"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(state["registerCalls"], serde_json::json!(0));
    assert_eq!(state["registrations"], serde_json::json!([]));
}
