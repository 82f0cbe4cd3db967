//! demo-runtime: placeholder until its first real commit.
