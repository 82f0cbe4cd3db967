//! canon-local: placeholder until its first real commit.
