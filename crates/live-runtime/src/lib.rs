//! live-runtime: placeholder until its first real commit.
