//! The Allocator Settings view's rows: `allocator_settings` as rows of (name, value,
//! what it does).

use memviz_core::format::py_repr;
use memviz_core::snapshot::Snapshot;
use memviz_core::tree::Tree;

/// Shown when the snapshot has no `allocator_settings`.
pub const NO_SETTINGS: &str = "No allocator settings recorded in this snapshot.";

/// One line on what a setting changes in the caching allocator ("" for settings without one).
pub fn explanation(name: &str) -> &'static str {
    match name {
        "PYTORCH_CUDA_ALLOC_CONF" => "The settings string the process started with (environment variable); the rows below are what it set.",
        "expandable_segments" => "True: one segment per stream grows by mapping pages instead of new cudaMalloc calls, which avoids most fragmentation (see the Mapped Pages Timeline).",
        "max_split_size" => "Blocks larger than this are never split for smaller requests (limits fragmentation of large blocks); -1 means no limit.",
        "garbage_collection_threshold" => "When reserved memory passes this share of the allowed memory, unused cached blocks are freed before calling cudaMalloc; 0 means off.",
        "roundup_power2_divisions" => "Request sizes are rounded up to one of this many divisions of each power of two (per size bucket, in MiB); 0 means the default 512-byte rounding.",
        "release_lock_on_cudamalloc" => "True: the allocator releases its lock while calling cudaMalloc, so other threads can allocate meanwhile.",
        "pinned_use_cuda_host_register" => "True: pinned host memory is allocated with malloc and cudaHostRegister instead of cudaHostAlloc.",
        "pinned_num_register_threads" => "Threads used to register (page-lock) pinned host memory.",
        "graph_capture_record_stream_reuse" => "True: blocks freed during CUDA graph capture with record_stream may be reused within the capture.",
        "max_round_threshold" => "Requests above this size are not rounded up by roundup_power2_divisions.",
        "max_cached_size" => "Cached (reserved but free) memory is released once it passes this size.",
        "trace_alloc_max_entries" => "Size of the trace ring buffer (max_entries of _record_memory_history).",
        "trace_alloc_overflowed" => "True: the trace ring buffer wrapped, so the earliest events are missing and peaks may be undercounted.",
        _ => "",
    }
}

/// Text of a value: strings without quotes, everything else as Python prints it.
pub fn value_text(snap: &Snapshot, t: &Tree) -> String {
    match t {
        Tree::Str(s) if s.is_empty() => "(empty)".to_string(),
        Tree::Str(s) => s.clone(),
        Tree::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Tree::Dict(items) if items.iter().all(|(_, v)| !matches!(v, Tree::Dict(_) | Tree::List(_))) => items
            .iter()
            .map(|(k, v)| format!("{}: {}", value_text(snap, k), py_repr(snap, v)))
            .collect::<Vec<_>>()
            .join(", "),
        other => py_repr(snap, other),
    }
}

/// The rows of the settings table: (name, value, explanation).
pub fn rows(snap: &Snapshot) -> Vec<(String, String, &'static str)> {
    let Some(t) = &snap.allocator_settings else { return Vec::new() };
    match t {
        Tree::Dict(items) => items
            .iter()
            .map(|(k, v)| {
                let name = match k {
                    Tree::Str(s) => s.clone(),
                    other => py_repr(snap, other),
                };
                let text = value_text(snap, v);
                let e = explanation(&name);
                (name, text, e)
            })
            .collect(),
        other => vec![("allocator_settings".to_string(), py_repr(snap, other), "")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_become_rows() {
        let mut snap = Snapshot::default();
        assert!(rows(&snap).is_empty());
        snap.allocator_settings = Some(Tree::Dict(vec![
            (Tree::Str("expandable_segments".into()), Tree::Bool(true)),
            (Tree::Str("max_split_size".into()), Tree::Int(-1)),
            (Tree::Str("PYTORCH_CUDA_ALLOC_CONF".into()), Tree::Str(String::new())),
            (Tree::Str("roundup_power2_divisions".into()), Tree::Dict(vec![(Tree::Str("1".into()), Tree::Int(4))])),
        ]));
        let r = rows(&snap);
        assert_eq!(r[0].0, "expandable_segments");
        assert_eq!(r[0].1, "True");
        assert!(r[0].2.contains("mapping pages"));
        assert_eq!(r[1].1, "-1");
        assert_eq!(r[2].1, "(empty)");
        assert_eq!(r[3].1, "1: 4");
    }
}
