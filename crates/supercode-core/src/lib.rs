//! supercode-core: placeholder until its first real commit.
