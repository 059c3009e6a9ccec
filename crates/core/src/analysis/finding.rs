//! [`Finding`]: a problem or a note in words, as the analyses report them (growth, carry-over, OOMs).

use serde_json::{json, Value};

/// A problem or a note, in words, with the figures and elements behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// Whether it is a problem worth fixing.
    pub problem: bool,
    /// `growth`, `gradients`, `held_over`, `optimizer_state`, `allocated_once`, `oom`, `steady`.
    pub kind: &'static str,
    /// One line.
    pub title: String,
    /// Evidence, one line each.
    pub details: Vec<String>,
    /// What to try.
    pub suggestions: Vec<String>,
    /// Bytes concerned.
    pub bytes: u64,
    /// Timeline elements concerned.
    pub elements: Vec<u32>,
}

impl Finding {
    /// JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "problem": self.problem,
            "kind": self.kind,
            "title": self.title,
            "details": self.details,
            "suggestions": self.suggestions,
            "bytes": self.bytes,
            "elements": self.elements,
        })
    }
}
