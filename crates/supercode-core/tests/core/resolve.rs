//! Which runtime a name means (issue 31 item 6): over real receipts, a catalog entry and the
//! inventory they make, `Supercode::resolve` finds a runtime by the NAME `list` shows, its id,
//! runtime id or catalog id, picks none when a name is shared, and says "no such runtime" in one
//! wording.

use canon_local::LocalRuntimeStatus;
use supercode_core::resolve::RuntimeAction;
use supercode_core::view::{CommandError, ErrorCode};
use supercode_core::CoreError;

use crate::support::{register, write_receipt, Fixture, Sleeper};

#[tokio::test]
async fn a_name_id_runtime_id_or_catalog_id_finds_one_runtime_and_a_shared_name_none() {
    let fx = Fixture::new();
    let (alpha, _listener) = register(fx.receipts(), "alpha", "token-a", None);
    let alpha = alpha.endpoint().to_string();
    let catalog_id = fx.add_catalog_entry(
        Some("beta"),
        &["/bin/true"],
        LocalRuntimeStatus::Offline,
        None,
    );
    // Two stale receipts (a live pid with another start time) share a name.
    let holder = Sleeper::sleep();
    let identity = holder.identity();
    let twin_a = write_receipt(fx.receipts(), identity.pid, identity.start_time + 1, "twin");
    let twin_b = write_receipt(fx.receipts(), identity.pid, identity.start_time + 1, "twin");
    let core = fx.core();

    for query in ["alpha", alpha.as_str(), "test:alpha"] {
        assert_eq!(core.resolve(query).await.unwrap().id, alpha, "{query}");
    }
    for query in ["beta", catalog_id.as_str()] {
        assert_eq!(core.resolve(query).await.unwrap().id, catalog_id, "{query}");
    }
    assert_eq!(core.resolve(&twin_b).await.unwrap().id, twin_b);

    let shared = core.resolve("twin").await.unwrap_err();
    let CoreError::AmbiguousRuntime { candidates, .. } = &shared else {
        panic!("not ambiguous: {shared}");
    };
    let mut ids: Vec<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
    ids.sort_unstable();
    let mut expected = [twin_a.as_str(), twin_b.as_str()];
    expected.sort_unstable();
    assert_eq!(ids, expected);
    assert!(candidates.iter().all(|c| c.status == "stale"));
    assert_eq!(CommandError::from(shared).code, ErrorCode::Refused);

    let none = core.resolve("gamma").await.unwrap_err();
    assert_eq!(
        none.to_string(),
        "no runtime is named \"gamma\" or has that id; `supercode-tray list` shows each runtime's NAME and ID"
    );
    assert_eq!(CommandError::from(none).code, ErrorCode::NotFound);

    // What may be asked of each is the view's own availability.
    let beta = core.resolve("beta").await.unwrap();
    let refused = beta.target_for(RuntimeAction::Attach).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "\"beta\" cannot be attached: It is not running."
    );
    assert_eq!(beta.target_for(RuntimeAction::Revive).unwrap(), catalog_id);
    let running = core.resolve("alpha").await.unwrap();
    assert_eq!(running.target_for(RuntimeAction::Attach).unwrap(), alpha);
    assert!(running.target_for(RuntimeAction::Forget).is_err());
}

#[tokio::test]
async fn reject_of_a_registration_that_does_not_exist_is_not_found() {
    let fx = Fixture::new();
    let core = fx.core();
    let error = core.reject("nobody").unwrap_err();
    assert!(
        matches!(error, CoreError::NoSuchRegistration { .. }),
        "{error}"
    );
    assert_eq!(CommandError::from(error).code, ErrorCode::NotFound);
}
