//! Tests of [`super::focus`]: a layout focused on a window draws the largest allocations live
//! there and keeps everything else of the layout (x axis, totals, peak, invariants).

use super::focus::live_in;
use super::*;

/// `steps` repeats of one training step: `weights` allocations live throughout, then `per_step`
/// activations of sizes 1..=per_step MiB allocated and freed in reverse.
fn repeated_trace(steps: u64, weights: u64, per_step: u64) -> crate::snapshot::Snapshot {
    let mut entries = Vec::new();
    let alloc = |a: u64, s: u64| format!(r#"{{"action":"alloc","addr":{a},"size":{s},"stream":0}}"#);
    let free = |a: u64, s: u64| format!(r#"{{"action":"free_completed","addr":{a},"size":{s},"stream":0}}"#);
    for w in 0..weights {
        entries.push(alloc(0x1_0000_0000 + w * 0x1000_0000, 256 << 20));
    }
    for _ in 0..steps {
        for k in 1..=per_step {
            entries.push(alloc(0x100_0000_0000 + k * 0x1000_0000, k << 20));
        }
        for k in (1..=per_step).rev() {
            entries.push(free(0x100_0000_0000 + k * 0x1000_0000, k << 20));
        }
    }
    let json = format!(r#"{{"segments":[],"device_traces":[[{}]]}}"#, entries.join(","));
    crate::load(json.as_bytes()).expect("load")
}

#[test]
fn a_window_late_in_a_repeated_trace_draws_its_own_allocations() {
    let snap = repeated_trace(60, 4, 30);
    let full = Layout::build(&snap, 0, Options { max_entries: 40, ..Options::default() });
    // The whole trace's 40 largest: the weights and the first steps' activations.
    let step_45 = full.step_of_row(4 + 45 * 60).expect("row");
    let end_45 = full.step_of_row(4 + 46 * 60 - 1).expect("row");
    let (a, b) = (f64::from(step_45), f64::from(end_45));
    assert!(full.bytes_at(a + 40.0).1 > 0, "unfocused, step 45 is summarized");
    let rows = full.focus_rows_between(a, b).expect("rows");
    assert_eq!(rows, (4 + 45 * 60, 4 + 46 * 60 - 1));
    assert!(!full.draws_all_live_in(rows));
    let focused = Layout::build(&snap, 0, Options { max_entries: 40, focus_rows: Some(rows), ..Options::default() });
    assert!(focused.draws_all_live_in(rows));
    // Nothing of that step is summarized: every event in the window has 0 summarized bytes.
    for (i, &s) in focused.event_step.iter().enumerate() {
        if (step_45..=end_45).contains(&s) {
            assert_eq!(focused.event_summarized_bytes[i], 0, "event {i} at step {s}");
        }
    }
    // The x axis, the totals and the peak are those of any other layout.
    assert_eq!((focused.steps, &focused.event_step), (full.steps, &full.event_step));
    assert_eq!(focused.peak_bytes, full.peak_bytes);
    for x in [0.0, a, a + 17.5, b, f64::from(full.steps) - 1.0] {
        assert_eq!(focused.live_bytes_at(x), full.live_bytes_at(x), "step {x}");
    }
    // Focused on the whole trace, the layout is the unfocused one.
    let last = *full.event_row.iter().filter(|&&r| r != u32::MAX).max().expect("rows");
    let whole = Layout::build(&snap, 0, Options { max_entries: 40, focus_rows: Some((0, last)), ..Options::default() });
    assert_eq!(whole.band_element, full.band_element);
}

/// Random traces and windows: the drawn allocations live in the window are the largest live
/// there (as many as Detail allows), and the layout keeps its invariants.
#[test]
fn a_focused_layout_draws_the_largest_live_in_its_window() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for case in 0..30 {
        let mut live: Vec<(u64, u64)> = Vec::new();
        let mut entries = Vec::new();
        let mut addr = 0x7f00_0000_0000u64;
        for _ in 0..(80 + next(400)) {
            if next(100) < 55 || live.is_empty() {
                let size = 1 + next(1 << 22);
                addr += 1 << 30;
                live.push((addr, size));
                entries.push(format!(r#"{{"action":"alloc","addr":{addr},"size":{size},"stream":0}}"#));
            } else {
                let (a, size) = live.swap_remove(next(live.len() as u64) as usize);
                entries.push(format!(r#"{{"action":"free_completed","addr":{a},"size":{size},"stream":0}}"#));
            }
        }
        let json = format!(r#"{{"segments":[],"device_traces":[[{}]]}}"#, entries.join(","));
        let snap = crate::load(json.as_bytes()).expect("load");
        let n = 1 + next(12) as usize;
        let full = Layout::build(&snap, 0, Options { max_entries: n, ..Options::default() });
        for _ in 0..5 {
            let a = next(u64::from(full.steps)) as f64;
            let b = a + next(u64::from(full.steps) / 4 + 1) as f64;
            let rows = full.focus_rows_between(a, b).expect("rows");
            for hide_freed in [false, true] {
                let options = Options { max_entries: n, focus_rows: Some(rows), hide_freed, ..Options::default() };
                let l = Layout::build(&snap, 0, options);
                assert_eq!((l.steps, &l.event_step), (full.steps, &full.event_step), "case {case}");
                assert_eq!(l.peak_bytes, Layout::build(&snap, 0, Options { focus_rows: None, ..options }).peak_bytes);
                let shown: Vec<&Element> = l.elements.iter().filter(|e| !l.is_hidden(e) && live_in(e, rows)).collect();
                let drawn: Vec<u64> = shown.iter().filter(|e| e.band.is_some()).map(|e| e.size_bytes).collect();
                assert_eq!(drawn.len(), n.min(shown.len()), "case {case} rows {rows:?}");
                assert_eq!(drawn.len(), l.band_count(), "only allocations live in the window are drawn");
                let smallest_drawn = drawn.iter().copied().min().unwrap_or(u64::MAX);
                for e in shown.iter().filter(|e| e.band.is_none()) {
                    assert!(e.size_bytes <= smallest_drawn, "case {case}: a larger allocation is summarized");
                }
                assert_eq!(l.draws_all_live_in(rows), shown.len() <= n);
            }
        }
    }
}
