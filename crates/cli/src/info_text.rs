//! Text and JSON renderings of [`memviz_core::info::Info`].

use std::io::{self, Write};

use memviz_core::format::human_size;
use memviz_core::info::Info;
use serde_json::json;

/// Human-readable summary, written to `out` line by line.
pub fn text(out: &mut dyn Write, file: &str, i: &Info) -> io::Result<()> {
    writeln!(out, "{file}")?;
    let profiler = i.format_notes.contains(&memviz_core::info::PROFILER_TRACE_NOTE);
    let fmt = if i.format_notes.is_empty() { String::new() } else { format!(", {}", i.format_notes.join(", ")) };
    let r = &i.recording;
    if profiler {
        writeln!(out, "format: {}", memviz_core::info::PROFILER_TRACE_NOTE)?;
        writeln!(out, "recording: torch.profiler with profile_memory=True; stacks are the ops and Python functions open at each event")?;
    } else {
        writeln!(out, "format: pickle protocol {}{fmt}", i.protocol)?;
        writeln!(
            out,
            "recording (inferred): enabled={} context={} stacks={}{}",
            r.enabled,
            r.context,
            r.stacks,
            if r.has_time { ", time_us recorded" } else { ", no time_us" }
        )?;
        if !r.skipped_actions.is_empty() {
            writeln!(out, "left out by the recording (inferred, skip_actions): {}", r.skipped_actions.join(", "))?;
        }
        if !r.cuda_recorded {
            writeln!(out, "CUDA not recorded (inferred, record_cuda=False): only pinned host memory has a trace")?;
        }
        if !r.internal_entries.is_empty() {
            let e: Vec<String> = r.internal_entries.iter().map(|(t, n)| format!("{t}={n}")).collect();
            writeln!(out, "allocator's own entries (internal_metadata): {}", e.join(" "))?;
        }
    }
    writeln!(
        out,
        "frames: {}  stacks: {}  annotations: {}  allocator_settings: {}",
        i.frames,
        i.stacks,
        i.annotations,
        if i.has_allocator_settings { "yes" } else { "no" }
    )?;
    for d in &i.devices {
        // Pinned host memory and a profiler trace's CPU memory go by their names.
        if d.device < 0 {
            writeln!(out, "{}: {} entries", d.name, d.entries)?;
        } else {
            writeln!(out, "device {}: {} entries", d.device, d.entries)?;
        }
        if let Some(note) = &d.trace_note {
            writeln!(out, "  trace: {note}")?;
        }
        if !d.actions.is_empty() {
            let a: Vec<String> = d.actions.iter().map(|(n, c)| format!("{n}={c}")).collect();
            writeln!(out, "  actions: {}", a.join(" "))?;
        }
        if let Some((a, b)) = d.time_span_us {
            writeln!(out, "  time span: {:.3} s", (b - a) as f64 / 1e6)?;
        }
        writeln!(
            out,
            "  peak allocated: {} ({} bytes){}",
            human_size(d.peak_allocated_bytes as f64),
            d.peak_allocated_bytes,
            match d.peak_allocated_row {
                Some(r) => format!(" at entry {r}"),
                None => " before the first entry".into(),
            }
        )?;
        if profiler {
            // The trace's segments are made up of its live allocations: no reserved bytes to show.
            writeln!(out, "  at the end: {} allocated", human_size(d.final_allocated_bytes as f64))?;
            continue;
        }
        writeln!(
            out,
            "  peak reserved: {} ({} bytes)",
            human_size(d.peak_reserved_bytes as f64),
            d.peak_reserved_bytes
        )?;
        writeln!(
            out,
            "  at snapshot: {} allocated, {} reserved in {} segments ({} expandable); blocks: {} allocated, {} pending free, {} inactive",
            human_size(d.final_allocated_bytes as f64),
            human_size(d.final_reserved_bytes as f64),
            d.segments,
            d.expandable_segments,
            d.blocks_allocated,
            d.blocks_pending_free,
            d.blocks_inactive
        )?;
        if d.streams > 1 {
            writeln!(out, "  streams: {}", d.streams)?;
        }
        if d.ooms > 0 {
            writeln!(out, "  out-of-memory events: {}", d.ooms)?;
        }
    }
    for w in &i.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

/// Machine-readable summary.
pub fn json(i: &Info) -> Result<String, serde_json::Error> {
    let devices: Vec<_> = i
        .devices
        .iter()
        .map(|d| {
            json!({
                "device": d.device,
                "name": d.name,
                "pinned_host": d.pinned_host,
                "trace_note": d.trace_note,
                "starts_mid_run": d.starts_mid_run,
                "entries": d.entries,
                "actions": d.actions.iter().map(|(n, c)| (n.to_string(), json!(c))).collect::<serde_json::Map<_, _>>(),
                "time_span_us": d.time_span_us.map(|(a, b)| json!([a, b])),
                "peak_allocated_bytes": d.peak_allocated_bytes,
                "peak_allocated_entry": d.peak_allocated_row,
                "peak_reserved_bytes": d.peak_reserved_bytes,
                "final_allocated_bytes": d.final_allocated_bytes,
                "final_reserved_bytes": d.final_reserved_bytes,
                "segments": d.segments,
                "expandable_segments": d.expandable_segments,
                "blocks": {"allocated": d.blocks_allocated, "pending_free": d.blocks_pending_free, "inactive": d.blocks_inactive},
                "streams": d.streams,
                "ooms": d.ooms,
            })
        })
        .collect();
    let v = json!({
        "protocol": i.protocol,
        "format_notes": i.format_notes,
        "recording": {
            "enabled": i.recording.enabled,
            "context": i.recording.context,
            "stacks": i.recording.stacks,
            "has_time": i.recording.has_time,
            "skipped_actions": i.recording.skipped_actions,
            "cuda_recorded": i.recording.cuda_recorded,
            "internal_metadata": i.recording.internal_entries.iter().map(|(t, n)| (t.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
        },
        "frames": i.frames,
        "stacks": i.stacks,
        "annotations": i.annotations,
        "has_allocator_settings": i.has_allocator_settings,
        "devices": devices,
        "warnings": i.warnings,
    });
    let mut s = serde_json::to_string_pretty(&v)?;
    s.push('\n');
    Ok(s)
}
