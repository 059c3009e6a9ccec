//! Running the built `memviz`: its output, or its output with standard input fed.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The built binary.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_memviz"))
}

/// Runs `memviz ARGS`.
pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run memviz")
}

/// Runs `memviz ARGS` with `input` on standard input.
pub fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn memviz");
    let mut stdin = child.stdin.take().expect("stdin");
    // Written from another thread, so a large output cannot block the child while we write.
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait for memviz");
    let _ = writer.join();
    out
}

/// The standard output of `memviz ARGS`, which must succeed.
pub fn memviz(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "memviz {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// [`memviz`] read as JSON.
pub fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&memviz(args)).expect("JSON")
}
