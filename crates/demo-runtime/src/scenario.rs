//! Scenarios: what the demo runtime's status does over time and on each action.
//!
//! A scenario is a small state machine of [`Phase`]s. Each phase says what the document shows,
//! whether it moves on by itself after a delay, and where each offered action leads. The
//! contract the tray's tests and demos rely on is `approval`:
//!
//! ```text
//! working "Running the test suite"
//!   --PHASE_DELAY--> needs-approval (approve, deny*)      * destructive
//!       approve --> working "Running the test suite" --PHASE_DELAY--> needs-input "Tests pass. Anything else?"
//!       deny    --> needs-input "Denied. What should I do instead?"
//! ```
//!
//! A cue ([`crate::DemoServer::cue`]; SIGUSR1 to `supercode-tray demo-runtime`) ends a timed
//! step's wait at once. `error` works, then fails and offers `retry` (which works and fails
//! again). `switch` changes its question when cued, for testing that an action chosen from the
//! first question never runs on the second (issue 29):
//!
//! ```text
//! needs-approval "Run the unit tests?" (approve, deny*)
//!   --cue--> needs-approval "Drop the production database?" (approve*, deny*)
//!       approve --> working "Dropping the production database"
//!   approve --> working "Running the unit tests"
//!   deny    --> needs-input "Denied. What should I do instead?"
//! ```
//!
//! The other scenarios are hostile on purpose, for testing clients: `flood`, `huge`, `html`,
//! `stall`, `blank-lines`; and `no-api` does not serve the status API at all.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::feed::{Action, AgentState, Content, Controller};
use crate::status::{pause, StatusBoard};

/// How long the `approval` scenario works before each next step.
///
/// About a second: long enough for a person to see `working` in the tray before the prompt
/// appears, short enough that a demo or a test walks the whole scenario in two seconds.
pub const PHASE_DELAY: Duration = Duration::from_secs(1);

/// How many changes a second the `flood` scenario makes.
pub const FLOOD_CHANGES_PER_SECOND: u64 = 10_000;

/// How often the `flood` scenario wakes to catch up with its rate.
///
/// Ten milliseconds is coarse enough for any timer and fine enough that the flood looks
/// continuous (100 changes per wake-up); the count is computed from elapsed time, so a late
/// wake-up does not lower the rate.
const FLOOD_TICK: Duration = Duration::from_millis(10);

/// Size of the `huge` scenario's `detail`: 4 MiB, far beyond any sane client cap.
pub const HUGE_DETAIL_BYTES: usize = 4 * 1024 * 1024;

/// Size of each write of the `blank-lines` scenario: about what one read of a client's HTTP
/// stack takes in at once (hyper's buffer grows to about 400 KiB), the frame size that pinned
/// the tray's reader in issue 29.
pub const BLANK_LINES_WRITE_BYTES: usize = 512 * 1024;

/// Which status behaviour the demo runtime shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scenario {
    /// A steady `idle` state with no actions (no `--scenario`).
    #[default]
    Steady,
    /// The pinned approval walk-through (see the module docs).
    Approval,
    /// Works for [`PHASE_DELAY`], then `error` with a `retry` action that starts over.
    Failing,
    /// The status API is not served: every `/supercode/` path answers 404.
    NoApi,
    /// 10,000 document changes a second, alternating `working` and `needs-input`.
    Flood,
    /// A document whose `detail` is [`HUGE_DETAIL_BYTES`] long.
    Huge,
    /// HTML and control characters in every string, and an offered action id that is invalid.
    Html,
    /// `GET` answers, but the stream sends its headers and then nothing, not even keep-alives.
    Stall,
    /// Asks to run the unit tests until cued, then asks to drop the production database (see
    /// the module docs); it never moves on by itself.
    Switch,
    /// The stream sends its first document, then blank lines (valid SSE that completes no
    /// event) in [`BLANK_LINES_WRITE_BYTES`] writes, as fast as the reader takes them.
    BlankLines,
}

impl Scenario {
    /// Every scenario and its `--scenario` name.
    pub const ALL: [(&'static str, Scenario); 10] = [
        ("steady", Scenario::Steady),
        ("approval", Scenario::Approval),
        ("error", Scenario::Failing),
        ("no-api", Scenario::NoApi),
        ("flood", Scenario::Flood),
        ("huge", Scenario::Huge),
        ("html", Scenario::Html),
        ("stall", Scenario::Stall),
        ("blank-lines", Scenario::BlankLines),
        ("switch", Scenario::Switch),
    ];

    /// The name `--scenario` takes.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, scenario)| *scenario == self)
            .map_or("steady", |(name, _)| name)
    }

    /// Whether this scenario serves the status API at all.
    pub fn serves_status_api(self) -> bool {
        self != Scenario::NoApi
    }

    pub(crate) fn first_phase(self) -> Phase {
        match self {
            Scenario::Steady | Scenario::NoApi => Phase::Steady,
            Scenario::Approval => Phase::Preparing,
            Scenario::Failing => Phase::Attempting,
            Scenario::Flood => Phase::Flood(0),
            Scenario::Huge => Phase::Huge,
            Scenario::Html => Phase::Html,
            Scenario::Stall => Phase::Stall,
            Scenario::BlankLines => Phase::BlankLines,
            Scenario::Switch => Phase::AskingUnitTests,
        }
    }

    /// Starts work that is not a timer of one phase (the flood).
    pub(crate) fn spawn_background(self, board: &Arc<StatusBoard>) {
        if self == Scenario::Flood {
            tokio::spawn(flood(Arc::clone(board)));
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--scenario` named no known scenario.
#[derive(Debug, thiserror::Error)]
#[error(
    "unknown scenario {0:?}; choose one of: steady, approval, error, no-api, flood, huge, html, stall, blank-lines, switch"
)]
pub struct UnknownScenario(String);

impl FromStr for Scenario {
    type Err = UnknownScenario;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, scenario)| *scenario)
            .ok_or_else(|| UnknownScenario(name.to_owned()))
    }
}

/// One step of a scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    Steady,
    /// `approval`: working before it asks.
    Preparing,
    /// `approval`: waiting for approve or deny.
    AwaitingApproval,
    /// `approval`: approved, running the tests.
    RunningTests,
    /// `approval`: finished, the user's turn.
    TestsPassed,
    /// `approval`: denied, the user's turn.
    Denied,
    /// `error`: working before it fails.
    Attempting,
    /// `error`: failed, offering `retry`.
    Failed,
    /// `flood`: the n-th change.
    Flood(u64),
    Huge,
    Html,
    /// `html` after its valid action was taken.
    HtmlApproved,
    Stall,
    BlankLines,
    /// `switch`: asking to run the unit tests, until cued.
    AskingUnitTests,
    /// `switch`: approved, running the unit tests.
    RunningUnitTests,
    /// `switch`, cued: asking to drop the production database.
    AskingDropDatabase,
    /// `switch`: approved, dropping the production database.
    DroppingDatabase,
}

impl Phase {
    pub(crate) fn content(&self) -> Content {
        match self {
            Phase::Steady => content(AgentState::Idle, "Waiting for work", None, vec![]),
            Phase::Preparing | Phase::RunningTests | Phase::Attempting => content(
                AgentState::Working,
                "Running the test suite",
                Some("cargo test --workspace"),
                vec![],
            ),
            Phase::AwaitingApproval => content(
                AgentState::NeedsApproval,
                "Run the test suite?",
                Some("cargo test --workspace"),
                vec![
                    action("approve", "Approve", false, None),
                    action("deny", "Deny", true, Some("Deny running the test suite?")),
                ],
            ),
            Phase::TestsPassed => content(
                AgentState::NeedsInput,
                "Tests pass. Anything else?",
                None,
                vec![],
            ),
            Phase::Denied => content(
                AgentState::NeedsInput,
                "Denied. What should I do instead?",
                None,
                vec![],
            ),
            Phase::Failed => content(
                AgentState::Error,
                "The test runner crashed",
                Some("cargo test --workspace: exit status 101"),
                vec![action("retry", "Retry", false, None)],
            ),
            Phase::Flood(n) => {
                let state = if n % 2 == 0 {
                    AgentState::Working
                } else {
                    AgentState::NeedsInput
                };
                content(state, &format!("Flood change {n}"), None, vec![])
            }
            Phase::Huge => content(
                AgentState::NeedsInput,
                "A huge status document",
                Some(&"0123456789abcdef".repeat(HUGE_DETAIL_BYTES / 16)),
                vec![],
            ),
            Phase::Html => {
                let mut hostile = content(
                    AgentState::NeedsApproval,
                    "<img src=x onerror=\"alert('title')\">\u{7}\u{1b}[31mred\u{0}\u{85}\u{202e}txt",
                    Some("<script>alert('detail')</script>\r\nrm -rf ~\u{8}\u{8}\u{1b}]0;owned\u{7}"),
                    vec![
                        action("approve", "<b onclick=\"alert('label')\">Approve</b>\u{1b}[0m", false, Some("<script>alert('confirm')</script>")),
                        action("Delete All<script>alert('id')</script>", "Invalid id", true, None),
                    ],
                );
                hostile.controller.label =
                    Some("<iframe src=\"javascript:alert('controller')\">".into());
                hostile
            }
            Phase::HtmlApproved => content(AgentState::Idle, "<i>approved</i>\u{7}", None, vec![]),
            Phase::Stall => content(AgentState::Working, "Stalled stream", None, vec![]),
            Phase::BlankLines => content(AgentState::Working, "Sending blank lines", None, vec![]),
            Phase::AskingUnitTests => content(
                AgentState::NeedsApproval,
                "Run the unit tests?",
                Some("cargo test --lib"),
                vec![
                    action("approve", "Approve", false, None),
                    action("deny", "Deny", true, Some("Deny running the unit tests?")),
                ],
            ),
            Phase::RunningUnitTests => content(
                AgentState::Working,
                "Running the unit tests",
                Some("cargo test --lib"),
                vec![],
            ),
            Phase::AskingDropDatabase => content(
                AgentState::NeedsApproval,
                "Drop the production database?",
                Some("psql production -c 'DROP DATABASE app'"),
                vec![
                    action(
                        "approve",
                        "Approve",
                        true,
                        Some("Drop the production database? This cannot be undone."),
                    ),
                    action(
                        "deny",
                        "Deny",
                        true,
                        Some("Deny dropping the production database?"),
                    ),
                ],
            ),
            Phase::DroppingDatabase => content(
                AgentState::Working,
                "Dropping the production database",
                Some("psql production -c 'DROP DATABASE app'"),
                vec![],
            ),
        }
    }

    /// Where this phase goes by itself, after the board's phase delay ([`PHASE_DELAY`] unless
    /// configured otherwise).
    pub(crate) fn after(&self) -> Option<Phase> {
        match self {
            Phase::Preparing => Some(Phase::AwaitingApproval),
            Phase::RunningTests => Some(Phase::TestsPassed),
            Phase::Attempting => Some(Phase::Failed),
            _ => None,
        }
    }

    /// Where action `id` leads from this phase; `None` when this phase does not offer it.
    pub(crate) fn on_action(&self, id: &str) -> Option<Phase> {
        match (self, id) {
            (Phase::AwaitingApproval, "approve") => Some(Phase::RunningTests),
            (Phase::AwaitingApproval, "deny") => Some(Phase::Denied),
            (Phase::Failed, "retry") => Some(Phase::Attempting),
            (Phase::Html, "approve") => Some(Phase::HtmlApproved),
            (Phase::AskingUnitTests, "approve") => Some(Phase::RunningUnitTests),
            (Phase::AskingDropDatabase, "approve") => Some(Phase::DroppingDatabase),
            (Phase::AskingUnitTests | Phase::AskingDropDatabase, "deny") => Some(Phase::Denied),
            _ => None,
        }
    }

    /// Where a cue ([`crate::DemoServer::cue`]) leads from this phase; `None` when it does
    /// nothing here. A timed phase moves on at once, as its delay would have moved it: a test
    /// can then walk a scenario at its own pace instead of racing the delay.
    pub(crate) fn on_cue(&self) -> Option<Phase> {
        match self {
            Phase::AskingUnitTests => Some(Phase::AskingDropDatabase),
            other => other.after(),
        }
    }
}

fn content(state: AgentState, title: &str, detail: Option<&str>, actions: Vec<Action>) -> Content {
    Content {
        state,
        title: title.to_owned(),
        detail: detail.map(str::to_owned),
        actions,
        controller: Controller {
            kind: "none",
            label: None,
        },
    }
}

fn action(id: &str, label: &str, destructive: bool, confirm: Option<&str>) -> Action {
    Action {
        id: id.to_owned(),
        label: label.to_owned(),
        destructive,
        confirm: confirm.map(str::to_owned),
    }
}

/// The `flood` scenario's driver: [`FLOOD_CHANGES_PER_SECOND`] changes a second until stopped.
async fn flood(board: Arc<StatusBoard>) {
    let started = tokio::time::Instant::now();
    let mut done = 0u64;
    while pause(&board, FLOOD_TICK).await {
        let due = started.elapsed().as_millis() as u64 * FLOOD_CHANGES_PER_SECOND / 1000;
        // After a long suspension, catch up by at most one second's worth instead of stalling.
        let from = done.max(due.saturating_sub(FLOOD_CHANGES_PER_SECOND));
        for n in from..due {
            board.enter(Phase::Flood(n + 1));
        }
        done = due;
    }
}
