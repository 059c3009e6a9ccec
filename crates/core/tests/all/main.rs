//! The core's integration tests, in one test binary. Test data is found by one helper,
//! `src/test_fixtures.rs` (shared with the unit tests, re-exported by [`common`]): a test whose
//! data is missing fails with the path, it never skips.

// Shared helpers: where the test data lives, readable diffs, a small pickle writer.
mod common;
// Malformed and malicious inputs: the hostile files and generated bombs.
mod hostile;
// Property tests: no input panics, every input finishes quickly.
mod props;
// PyTorch's `_memory_viz stats` / `trace` text, byte for byte, and the chunked loader.
mod reference_output;
// The allocator-state simulation replayed against every real snapshot.
mod state_replay;
// Every snapshot format variant PyTorch has written.
mod variants;
