//! attach-proxy: placeholder until its first real commit.
