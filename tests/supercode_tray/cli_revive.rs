//! `revive` as a user runs it: the plan printed and asked for, variables refused until
//! allowed, and a hostile record's plan reaching a real terminal escaped.

use crate::cli::{
    raw_controls, run_on_a_terminal, stale_receipt, stale_receipt_named, Home, HOSTILE_ARG,
    HOSTILE_NAME,
};

/// Issue 13: `revive` prints the plan (absolute program, each argument, working directory, every
/// variable), runs nothing without `--yes` when stdin is not a terminal, refuses `LD_PRELOAD`
/// with its reason until `--allow-env LD_PRELOAD`, and remembers that allow; a harmless `LANG`
/// needs no allow (issue 29).
#[test]
fn revive_prints_the_plan_asks_for_yes_and_refuses_ld_preload_until_allowed() {
    let home = Home::new();
    let marker = home.path("workspace").join("ran");
    let script = format!("echo ran > '{}'; exit 3", marker.display());
    let receipt = stale_receipt(
        &home,
        &["sh", "-c", &script],
        serde_json::json!({ "LD_PRELOAD": "/nonexistent/hook.so", "LANG": "C.UTF-8" }),
    );
    let id = receipt.endpoint.as_str();
    let mut printed = String::new();

    let refused = home.run(&["revive", id, "--yes"], &mut printed);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let plan = String::from_utf8_lossy(&refused.stdout).into_owned();
    let program = plan
        .lines()
        .find_map(|l| l.trim().strip_prefix("program:"))
        .map(|p| p.trim().trim_matches('"').to_owned())
        .unwrap_or_else(|| panic!("no program line: {plan}"));
    assert!(
        program.starts_with('/') && program.ends_with("/sh"),
        "{plan}"
    );
    assert!(
        plan.contains("(recorded as \"sh\", found on PATH)"),
        "{plan}"
    );
    assert!(plan.contains(" 1. \"-c\""), "{plan}");
    assert!(plan.contains(&format!(" 2. {script:?}")), "{plan}");
    let workspace = home.path("workspace").display().to_string();
    assert!(
        plan.contains(&format!("working directory: {workspace:?}")),
        "{plan}"
    );
    assert!(plan.contains("    LANG=\"C.UTF-8\"\n"), "{plan}");
    assert!(
        plan.contains(
            "LD_PRELOAD=\"/nonexistent/hook.so\"  NEEDS --allow-env: LD_PRELOAD is not one of the few harmless variables"
        ),
        "{plan}"
    );
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(stderr.contains("--allow-env LD_PRELOAD"), "{stderr}");
    assert!(!marker.exists(), "a refused plan ran");

    let unconfirmed = home.run(&["revive", id, "--allow-env", "LD_PRELOAD"], &mut printed);
    assert_eq!(unconfirmed.status.code(), Some(1), "{unconfirmed:?}");
    let stderr = String::from_utf8_lossy(&unconfirmed.stderr).into_owned();
    assert!(stderr.contains("run again with --yes"), "{stderr}");
    assert!(!marker.exists(), "ran without a confirmation");

    let allowed = home.run(
        &["revive", id, "--yes", "--allow-env", "LD_PRELOAD"],
        &mut printed,
    );
    let stderr = String::from_utf8_lossy(&allowed.stderr).into_owned();
    assert!(stderr.contains("exited before it came up"), "{stderr}");
    assert!(marker.exists(), "the allowed plan ran");

    std::fs::remove_file(&marker).unwrap();
    let remembered = home.run(&["revive", id, "--yes"], &mut printed);
    let stdout = String::from_utf8_lossy(&remembered.stdout).into_owned();
    assert!(stdout.contains("(allowed for this runtime)"), "{stdout}");
    assert!(marker.exists(), "the allow was remembered");
}

/// Issue 29: on a real terminal, the revive plan of a record whose name and argument carry
/// escape sequences, a carriage return, a newline, C1 and bidirectional controls shows each as a
/// visible `\u{..}` escape: the terminal receives none of them, the plan has one program line
/// (the real one), and the record's text stays on its own line. Answered no, nothing runs.
#[test]
fn issue_29_a_hostile_records_revive_plan_reaches_a_real_terminal_escaped() {
    let home = Home::new();
    let marker = home.path("workspace").join("ran");
    let script = format!("echo ran > '{}'", marker.display());
    let receipt = stale_receipt_named(
        &home,
        HOSTILE_NAME,
        &["sh", "-c", &script, HOSTILE_ARG],
        serde_json::json!({ "LANG": "C.UTF-8" }),
    );
    let (code, terminal) = run_on_a_terminal(&home, &["revive", &receipt.endpoint], "n\n");

    assert_eq!(raw_controls(&terminal), [], "{terminal:?}");
    assert_eq!(code, Some(1), "{terminal}");
    assert!(
        terminal.contains(
            r#"Revive planned\u{1b}[2K\u{d}  program:           "/usr/local/bin/canon-agent"\u{a}\u{9b}31m\u{202e}evil will run:"#
        ),
        "{terminal}"
    );
    let programs: Vec<&str> = terminal
        .lines()
        .filter(|l| l.trim_start().starts_with("program:"))
        .collect();
    assert_eq!(programs.len(), 1, "{terminal}");
    assert!(programs[0].trim_end().ends_with(r#"/sh""#), "{terminal}");
    assert!(
        terminal.contains(r#" 3. "\u{1b}[1A\u{1b}[2K     1. \"serve\"\u{2066}""#),
        "{terminal}"
    );
    assert!(
        terminal.contains(r#"LANG="C.UTF-8""#),
        "a harmless variable: {terminal}"
    );
    assert!(
        terminal.contains(r#"\u{202e}evil? [y/N]"#),
        "asked: {terminal}"
    );
    assert!(terminal.contains("was not revived"), "{terminal}");
    assert!(!marker.exists(), "answered no, yet it ran");
}

/// Issue 29: a record that sets a variable whose name is not `[A-Za-z_][A-Za-z0-9_]*` (an
/// escape sequence in it, or bash's exported-function form) is refused with the reason, the
/// name shown escaped, and nothing runs.
#[test]
fn issue_29_a_variable_name_that_is_not_plain_refuses_the_revive_with_the_reason() {
    let home = Home::new();
    let marker = home.path("workspace").join("ran");
    let script = format!("echo ran > '{}'", marker.display());
    for (name, shown) in [
        ("X\u{1b}[2K\rPATH", r#""X\u{1b}[2K\rPATH""#),
        ("BASH_FUNC_x%%", r#""BASH_FUNC_x%%""#),
    ] {
        let receipt = stale_receipt(
            &home,
            &["sh", "-c", &script],
            serde_json::json!({ name: "() { echo evil; }" }),
        );
        let mut printed = String::new();
        let refused = home.run(
            &["revive", &receipt.endpoint, "--yes", "--allow-env", name],
            &mut printed,
        );
        assert_eq!(refused.status.code(), Some(1), "{refused:?}");
        assert_eq!(raw_controls(&printed), [], "{printed:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains(&format!(
                "sets an environment variable named {shown}, which is not a plain name"
            )),
            "{stderr}"
        );
        assert!(!marker.exists(), "{name:?} ran");
    }
}
