//! What the session check's SHA-256 digest costs natively, per request: the `--instructions`
//! count of the attach bench runs under valgrind, which does not offer the CPU's SHA
//! extensions, so there `sha2` runs its portable code and the digest looks many times its
//! native cost. This measures the same digest (a 64-character hex session id, as
//! `access::digest` hashes it) on the real CPU, and says whether it has those extensions.
//!
//! `cargo bench -p benchmarks --bench session_digest` (`SESSION_DIGEST_ROUNDS`, default
//! 2,000,000).

use std::hint::black_box;
use std::time::Instant;

use sha2::{Digest, Sha256};

fn main() {
    let rounds: u32 = std::env::var("SESSION_DIGEST_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000);
    let id = "0123456789abcdef".repeat(4);
    let started = Instant::now();
    for _ in 0..rounds {
        let digest: [u8; 32] = Sha256::digest(black_box(id.as_bytes())).into();
        black_box(digest);
    }
    let ns = started.elapsed().as_secs_f64() * 1e9 / f64::from(rounds);
    let sha_extensions = has_sha_extensions();
    println!(
        "SHA-256 of a 64-character session id: {ns:.1} ns per digest over {rounds} digests \
         (CPU has the SHA extensions: {sha_extensions})"
    );
}

#[cfg(target_arch = "x86_64")]
fn has_sha_extensions() -> bool {
    std::is_x86_feature_detected!("sha")
}

#[cfg(not(target_arch = "x86_64"))]
fn has_sha_extensions() -> bool {
    false
}
