//! What the area modules share: the demo runtime served on loopback with a known token, and a
//! client that calls it with that token within a step's deadline.

use std::time::Duration;

use demo_runtime::{serve, DemoConfig, DemoServer, Scenario};
use live_runtime::Sensitive;
use tokio::time::timeout;

/// Generous bound for any single step, so a slow CI machine does not make tests flaky.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(20);
/// The demo runtime's bearer token: a canary no response may contain.
pub const TOKEN: &str = "canary-token-5a1f9e3c7d";

/// A demo runtime named `demo-alpha` in the default scenario, and its base URL.
pub async fn start() -> (DemoServer, String) {
    serve_config(DemoConfig::new(
        "demo-alpha",
        Sensitive::new(TOKEN.to_owned()),
    ))
    .await
}

/// A demo runtime named `demo-status` playing `scenario` (with its own keep-alive period, if
/// given), and its base URL.
pub async fn start_with(scenario: Scenario, keep_alive: Option<Duration>) -> (DemoServer, String) {
    let mut config = DemoConfig::new("demo-status", Sensitive::new(TOKEN.to_owned()));
    config.scenario = scenario;
    if let Some(keep_alive) = keep_alive {
        config.keep_alive = keep_alive;
    }
    serve_config(config).await
}

/// A demo runtime served with `config`, and its base URL.
pub async fn serve_config(config: DemoConfig) -> (DemoServer, String) {
    let server = serve(config).await.expect("demo runtime starts");
    let base = format!("http://{}", server.local_addr().expose());
    (server, base)
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().build().unwrap()
}

/// GETs `path` with the token; fails the test if it does not answer within [`STEP_TIMEOUT`].
pub async fn get_authed(base: &str, path: &str) -> reqwest::Response {
    timeout(
        STEP_TIMEOUT,
        client()
            .get(format!("{base}{path}"))
            .bearer_auth(TOKEN)
            .send(),
    )
    .await
    .expect("request finishes in time")
    .expect("request succeeds")
}
