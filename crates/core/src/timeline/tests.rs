use super::maxima::{BLOCK, SMALL};
use super::*;
use crate::snapshot::{Snapshot, Trace};

type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

#[test]
fn interval_index_matches_brute_force() {
    let mut items = Vec::new();
    let mut x: u64 = 12345;
    for b in 0..1000u32 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let s = (x >> 33) as u32 % 5000;
        let len = (x >> 13) as u32 % 300;
        items.push((s, s + len, b));
    }
    let idx = IntervalIndex::build(items.clone());
    for q in (0..5400).step_by(37) {
        let (a, b) = (q, q + (q % 50));
        let mut got = Vec::new();
        idx.overlapping(a, b, &mut got);
        got.sort_unstable();
        let mut want: Vec<u32> = items.iter().filter(|(s, e, _)| *s <= b && *e >= a).map(|x| x.2).collect();
        want.sort_unstable();
        assert_eq!(got, want, "query {a}..{b}");
    }
}

fn fixtures() -> Vec<std::path::PathBuf> {
    crate::test_fixtures::fixture_files_with(&["real", "synth"], &["pickle"])
}

/// Each fixture that loads, with its path, one at a time.
fn loaded_fixtures() -> impl Iterator<Item = (std::path::PathBuf, Snapshot)> {
    fixtures().into_iter().filter_map(|f| {
        let bytes = std::fs::read(&f).expect("read fixture");
        crate::load(&bytes).ok().map(|snap| (f, snap))
    })
}

/// Live requested bytes after each trace row, replayed independently of the layout.
fn independent_live(snap: &Snapshot, dev: usize) -> (u64, Vec<(u32, u64)>) {
    (crate::info::initial_live_bytes(snap, dev), crate::info::live_bytes_by_row(snap, dev))
}

fn check_invariants(l: &Layout, stride: u32) {
    let mut stack = Vec::new();
    let mut step = 0u32;
    while step < l.steps {
        for frac in [0.0, 0.5] {
            let x = f64::from(step) + frac;
            l.offsets_at(x, &mut stack);
            let sum: u64 = stack.iter().map(|&(b, _)| l.band_size(b)).sum();
            let (drawn, _) = l.bytes_at(x);
            assert_eq!(sum, drawn, "heights at step {x} sum to {sum}, drawn live bytes are {drawn}");
            for w in stack.windows(2) {
                let (lower, upper) = (w[0], w[1]);
                assert!(upper.1 + 0.5 >= lower.1 + l.band_size(lower.0) as f64, "bands overlap at step {x}: {w:?}");
            }
            if let Some(&(b, off)) = stack.last() {
                let top = off + l.band_size(b) as f64;
                assert!(
                    (top - l.drawn_top_at(x)).abs() <= 1.0 + 1e-9 * top,
                    "stack top {top} differs from the drawn top {} at step {x}",
                    l.drawn_top_at(x)
                );
            }
        }
        step += stride;
    }
    // Every event's row finds its step, and a row that is no event finds none.
    let mut is_event = std::collections::HashSet::new();
    for (i, &row) in l.event_row.iter().enumerate().filter(|&(_, &r)| r != u32::MAX) {
        assert_eq!(l.step_of_row(row), Some(l.event_step[i]), "row {row}");
        is_event.insert(row);
    }
    let last = l.event_row.iter().copied().filter(|&r| r != u32::MAX).max().unwrap_or(0);
    for row in (0..last.saturating_add(3)).filter(|r| !is_event.contains(r)) {
        assert_eq!(l.step_of_row(row), None, "row {row} is no event");
    }
    assert_eq!(l.step_of_row(u32::MAX), None);
}

/// `column_envelopes` (block maxima) equals a scan of every event.
fn check_envelopes(l: &Layout, columns: usize) {
    let bounds: Vec<f64> = (0..=columns).map(|c| f64::from(l.steps) * c as f64 / columns as f64).collect();
    let got = l.column_envelopes(&bounds);
    assert_eq!(got.len(), columns);
    for (c, (w, e)) in bounds.windows(2).zip(&got).enumerate() {
        let top = l.drawn_top_at(w[0]);
        let mut want = ColumnEnvelope {
            drawn_max_bytes: top,
            total_max_bytes: top + l.bytes_at(w[0]).1 as f64,
            drawn_at_peak_bytes: top,
        };
        for i in 0..l.event_step.len() {
            let s = f64::from(l.event_step[i]);
            // An event on a boundary belongs to the column it starts (the first column's
            // start is covered by the stack at that step).
            if (s > w[0] || (c > 0 && s == w[0])) && s < w[1] {
                let hi = l.drawn_before(i).max(l.event_drawn_bytes[i]) as f64;
                want.drawn_max_bytes = want.drawn_max_bytes.max(hi);
                if hi + l.event_summarized_bytes[i] as f64 > want.total_max_bytes {
                    want.total_max_bytes = hi + l.event_summarized_bytes[i] as f64;
                    want.drawn_at_peak_bytes = hi;
                }
            }
        }
        assert_eq!(*e, want, "column {}..{} of {columns}", w[0], w[1]);
    }
}

/// Range maxima through the blocks equal a scan of every event, for ranges that start and end
/// inside, across and on the edges of small blocks and blocks.
fn check_range_maxima(l: &Layout) {
    let n = l.event_step.len();
    let mut cuts: Vec<usize> = vec![
        0,
        1,
        SMALL - 1,
        SMALL,
        SMALL + 1,
        BLOCK - 1,
        BLOCK,
        BLOCK + 7,
        3 * BLOCK + SMALL + 3,
        n / 3,
        n / 2 + 5,
        n.saturating_sub(1),
        n,
    ];
    cuts.retain(|&c| c <= n);
    for &a in &cuts {
        for &b in &cuts {
            if a >= b {
                continue;
            }
            let want = (a..b).fold(None, |best: Option<usize>, i| match best {
                Some(k) if l.event_after_bytes(k) >= l.event_after_bytes(i) => Some(k),
                _ => Some(i),
            });
            assert_eq!(l.highest_event(a, b), want, "highest event of {a}..{b} of {n}");
            let (sa, sb) = (f64::from(l.event_step[a]), f64::from(l.event_step[b - 1]));
            let mut top = l.live_bytes_at(sa).max(l.live_bytes_at(sb));
            let (first, last) = (l.event_at(sa).unwrap_or(0), l.event_at(sb).map_or(0, |i| i + 1));
            for i in first..last {
                top = top.max(l.drawn_before(i).max(l.event_drawn_bytes[i]) + l.event_summarized_bytes[i]);
            }
            assert_eq!(l.max_live_between(sa, sb), top, "max live between steps {sa} and {sb}");
        }
    }
}

/// The sweep of `band_edges` agrees with the stack computed at each step on its own: every
/// band live at a sample has an edge, and the edge (linear between its vertices) passes
/// through the band's offset there.
fn check_edges(l: &Layout, samples: &[f64]) {
    let wanted: Vec<u32> = (0..l.band_count() as u32).collect();
    let edges = l.band_edges(&wanted, samples);
    let mut edge_of: HashMap<u32, &[(f64, f64)]> = HashMap::default();
    for (i, &b) in edges.bands.iter().enumerate() {
        let (start, end) = l.band_step_range(b);
        let e = edges.edge(i);
        assert!(!e.is_empty(), "band {b} listed without vertices");
        for w in e.windows(2) {
            assert!(w[0].0 < w[1].0, "band {b}: vertices not ascending: {w:?}");
        }
        for &(x, _) in e {
            assert!(
                f64::from(start) <= x && x <= f64::from(end),
                "band {b} has a vertex at {x} outside {start}..{end}"
            );
        }
        edge_of.insert(b, e);
    }
    let mut stack = Vec::new();
    for &x in samples {
        l.offsets_at(x, &mut stack);
        for &(b, want) in &stack {
            let e = edge_of.get(&b).unwrap_or_else(|| panic!("band {b} live at {x} has no edge"));
            let i = e.partition_point(|v| v.0 <= x);
            let got = match (i.checked_sub(1).and_then(|i| e.get(i)), e.get(i)) {
                (Some(&(x0, o0)), _) if x0 == x => o0,
                (Some(&(x0, o0)), Some(&(x1, o1))) => o0 + (o1 - o0) * (x - x0) / (x1 - x0),
                _ => panic!("band {b} live at {x}: its edge does not cover it ({e:?})"),
            };
            assert!((got - want).abs() < 0.5, "band {b} at {x}: edge {got}, stack {want}");
        }
    }
    // Bands live at the end keep their place at the last step: the edge there is the offset
    // just before it (the right edge of the stack is level, not falling to 0).
    let end = f64::from(l.steps);
    if samples.last() == Some(&end) {
        l.offsets_at(end - 0.5, &mut stack);
        for &(b, want) in &stack {
            if l.band_step_range(b).1 != l.steps {
                continue;
            }
            let last = edge_of.get(&b).and_then(|e| e.last()).copied();
            assert!(
                last.is_some_and(|(x, off)| x == end && (off - want).abs() < 0.5),
                "band {b} at the end: edge {last:?}, stack {want}"
            );
        }
    }
}

#[test]
fn detail_draws_the_largest_elements_earliest_first_among_equals() {
    for (f, snap) in loaded_fixtures() {
        for dev in 0..snap.devices.len() {
            for (n, hide_freed) in
                [(0, false), (1, false), (7, false), (100, false), (100, true), (DEFAULT_MAX_ENTRIES, false)]
            {
                let l = Layout::build(
                    &snap,
                    dev,
                    Options { max_entries: n, mode: Mode::Allocations, hide_freed, focus_rows: None },
                );
                // Sorted by size, largest first, ties in element order; the first n shown are drawn.
                let mut order: Vec<u32> =
                    (0..l.elements.len() as u32).filter(|&e| !l.is_hidden(&l.elements[e as usize])).collect();
                order.sort_by_key(|&e| (std::cmp::Reverse(l.elements[e as usize].size_bytes), e));
                let mut want: Vec<u32> = order.into_iter().take(n).collect();
                want.sort_unstable();
                let drawn: Vec<u32> =
                    (0..l.elements.len() as u32).filter(|&e| l.elements[e as usize].band.is_some()).collect();
                assert_eq!(drawn, want, "{f:?} device {dev}, {n} drawn, hide freed {hide_freed}");
            }
        }
    }
}

#[test]
fn hide_freed_keeps_only_allocations_not_freed_in_the_trace() {
    for (f, snap) in loaded_fixtures() {
        for dev in 0..snap.devices.len() {
            let all = Layout::build(
                &snap,
                dev,
                Options { max_entries: 0, mode: Mode::Allocations, hide_freed: false, focus_rows: None },
            );
            let kept = Layout::build(
                &snap,
                dev,
                Options { max_entries: usize::MAX, mode: Mode::Allocations, hide_freed: true, focus_rows: None },
            );
            for b in 0..kept.band_count() as u32 {
                let e = &kept.elements[kept.band_element[b as usize] as usize];
                assert!(e.alloc_row.is_none() || e.free_row.is_none(), "{f:?}: a band freed within the trace");
            }
            let survivors = all.elements.iter().filter(|e| e.alloc_row.is_none() || e.free_row.is_none()).count();
            assert_eq!(kept.band_count(), survivors, "{f:?} device {dev}");
            // Only never-freed allocations remain, so the end is the same and nothing goes down.
            let end = f64::from(all.steps);
            if all.steps > 0 && kept.steps > 0 {
                assert_eq!(kept.live_bytes_at(f64::from(kept.steps)), all.live_bytes_at(end), "{f:?} device {dev}");
            }
            check_invariants(&kept, (kept.steps / 2000).max(1));
            // The x axis is the same: every event keeps its step.
            assert_eq!((kept.steps, &kept.event_step, &kept.event_row), (all.steps, &all.event_step, &all.event_row));
            assert_eq!(kept.shown_count(), survivors, "{f:?} device {dev}");
            assert_eq!(all.shown_count(), all.elements.len());
        }
    }
}

#[test]
fn invariants_hold_on_every_fixture() {
    let files = fixtures();
    assert!(!files.is_empty(), "no fixtures found");
    for f in files {
        let bytes = std::fs::read(&f).expect("read fixture");
        let Ok(snap) = crate::load(&bytes) else { continue };
        for dev in 0..snap.devices.len() {
            let (initial, expect) = independent_live(&snap, dev);
            let mut peaks = Vec::new();
            for n in [DEFAULT_MAX_ENTRIES, 100, 1, 0] {
                let l = Layout::build(
                    &snap,
                    dev,
                    Options { max_entries: n, mode: Mode::Allocations, hide_freed: false, focus_rows: None },
                );
                // Nothing is lost: live bytes after every event equal the independent replay.
                assert_eq!(
                    l.initial_drawn_bytes + l.initial_summarized_bytes,
                    if expect.is_empty() && l.event_row.first() == Some(&u32::MAX) {
                        l.initial_drawn_bytes + l.initial_summarized_bytes
                    } else {
                        initial
                    },
                    "{f:?} initial"
                );
                for &(row, want) in &expect {
                    let s = l.step_of_row(row).expect("event step");
                    assert_eq!(l.live_bytes_at(f64::from(s)), want, "{f:?} n={n} row {row}");
                }
                let stride = (l.steps / 4000).max(1);
                check_invariants(&l, stride);
                check_edges(&l, &l.sample_steps(0.0, f64::from(l.steps), 300));
                check_envelopes(&l, 5);
                check_envelopes(&l, 41);
                check_range_maxima(&l);
                let mid = f64::from(l.steps) / 2.0;
                check_edges(&l, &l.sample_steps(mid, mid + 250.0, 1000));
                peaks.push(l.peak_bytes);
            }
            assert!(peaks.windows(2).all(|w| w[0] == w[1]), "{f:?}: peak changes with detail: {peaks:?}");
            let info = crate::info::info(&snap);
            assert_eq!(peaks[0], info.devices[dev].peak_allocated_bytes, "{f:?}: peak differs from info");
        }
    }
}

/// Random traces (allocs, frees in any order, frees of allocations made before the trace):
/// the invariants hold, the sweep matches the stack, nothing is lost at any detail.
#[test]
fn invariants_hold_on_generated_traces() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for case in 0..40 {
        let mut live: Vec<(u64, u64)> = Vec::new();
        let mut entries = Vec::new();
        let mut addr = 0x7f00_0000_0000u64;
        for _ in 0..(50 + next(600)) {
            let r = next(100);
            if r < 55 || live.is_empty() {
                let size = match next(4) {
                    0 => 1 + next(512),
                    1 => 4096 * (1 + next(64)),
                    2 => 1 << (20 + next(8)),
                    _ => 1 + next(1 << 20),
                };
                addr += 1 << 30;
                live.push((addr, size));
                entries.push(format!(r#"{{"action":"alloc","addr":{addr},"size":{size},"stream":0}}"#));
            } else if r < 95 {
                let (a, size) = live.swap_remove(next(live.len() as u64) as usize);
                entries.push(format!(r#"{{"action":"free_completed","addr":{a},"size":{size},"stream":0}}"#));
            } else {
                // Allocated before the trace began.
                entries.push(format!(
                    r#"{{"action":"free_completed","addr":{},"size":{},"stream":0}}"#,
                    0x10_0000 + case * 4096 + next(1000) * 8,
                    1 + next(1 << 16)
                ));
            }
        }
        let json = format!(r#"{{"segments":[],"device_traces":[[{}]]}}"#, entries.join(","));
        let snap = crate::load(json.as_bytes()).expect("load");
        let (_, expect) = independent_live(&snap, 0);
        let mut peaks = Vec::new();
        let full = Layout::build(&snap, 0, Options { max_entries: usize::MAX, ..Options::default() });
        for n in [usize::MAX, 7, 1, 0] {
            let l = Layout::build(&snap, 0, Options { max_entries: n, ..Options::default() });
            // Detail never moves an event on the x axis, nor does hiding the freed allocations.
            assert_eq!((l.steps, &l.event_step), (full.steps, &full.event_step), "case {case} n={n}");
            let hidden = Layout::build(&snap, 0, Options { max_entries: n, hide_freed: true, ..Options::default() });
            assert_eq!((hidden.steps, &hidden.event_step), (full.steps, &full.event_step), "case {case} n={n} hidden");
            check_invariants(&hidden, 1);
            check_edges(&hidden, &hidden.sample_steps(0.0, f64::from(hidden.steps), 10_000));
            for &(row, want) in &expect {
                let s = l.step_of_row(row).expect("event step");
                assert_eq!(l.live_bytes_at(f64::from(s)), want, "case {case} n={n} row {row}");
            }
            check_invariants(&l, 1);
            check_edges(&l, &l.sample_steps(0.0, f64::from(l.steps), 10_000));
            let coarse = l.sample_steps(0.0, f64::from(l.steps), 37);
            check_edges(&l, &coarse);
            // Sampling never loses the peak.
            let highest = coarse.iter().map(|&x| l.live_bytes_at(x)).max().unwrap_or(0);
            assert_eq!(
                highest.max(l.initial_drawn_bytes + l.initial_summarized_bytes),
                l.peak_bytes,
                "case {case} n={n}"
            );
            peaks.push(l.peak_bytes);
        }
        assert!(peaks.windows(2).all(|w| w[0] == w[1]), "case {case}: peak changes with detail: {peaks:?}");
    }
}

/// Interleaved short- and long-lived allocations, then every short-lived one freed from the
/// bottom up: PyTorch's layout writes two points into every band above each free, about
/// 2 x 20,000 x 30,000 here. The implicit layout stores none of them and stays exact.
#[test]
fn frees_under_many_live_bands_cost_nothing_per_band_above() {
    let pairs = 20_000u64;
    let mut entries = Vec::new();
    for k in 0..pairs {
        entries.push(format!(r#"{{"action":"alloc","addr":{},"size":512,"stream":0}}"#, 0x1000_0000 + k * 1024));
        entries.push(format!(r#"{{"action":"alloc","addr":{},"size":1024,"stream":0}}"#, 0x9000_0000 + k * 1024));
    }
    for k in 0..pairs {
        entries
            .push(format!(r#"{{"action":"free_completed","addr":{},"size":512,"stream":0}}"#, 0x1000_0000 + k * 1024));
    }
    let json = format!(r#"{{"segments":[],"device_traces":[[{}]]}}"#, entries.join(","));
    let snap = crate::load(json.as_bytes()).expect("load");
    let l = Layout::build(&snap, 0, Options { max_entries: usize::MAX, ..Options::default() });
    assert_eq!(l.band_count(), 2 * pairs as usize);
    assert_eq!(l.peak_bytes, pairs * 1536);
    // Every free slides the bands above it; at the end only the long-lived ones remain.
    let end = f64::from(l.steps) - 0.5;
    let mut stack = Vec::new();
    l.offsets_at(end, &mut stack);
    assert_eq!(stack.len(), pairs as usize);
    for (k, &(_, off)) in stack.iter().enumerate() {
        assert_eq!(off, 1024.0 * k as f64, "long-lived band {k} at the end");
    }
    // Halfway through the frees: the first half of the short-lived ones are gone.
    let half = l.step_of_row(2 * pairs as u32 + pairs as u32 / 2).expect("event");
    l.offsets_at(f64::from(half), &mut stack);
    let top = stack.last().map(|&(b, off)| off + l.band_size(b) as f64);
    assert_eq!(top, Some(l.drawn_top_at(f64::from(half))));
    l.offsets_at(f64::from(half) + f64::from(SLIDE_STEPS), &mut stack);
    let top = stack.last().map(|&(b, off)| off + l.band_size(b) as f64);
    assert_eq!(top, Some(l.bytes_at(f64::from(half)).0 as f64));
    let samples = l.sample_steps(0.0, f64::from(l.steps), 40);
    let edges = l.band_edges(&[0, 1, 2 * pairs as u32 - 1], &samples);
    assert_eq!(edges.bands, vec![0, 1, 2 * pairs as u32 - 1]);
    for (i, &b) in edges.bands.iter().enumerate() {
        for &(x, off) in edges.edge(i) {
            if x < f64::from(l.band_step_range(b).1) {
                assert_eq!(l.band_offset_at(b, x), Some(off), "band {b} at {x}");
            }
        }
    }
}

#[test]
fn hit_test_finds_the_band_under_a_point() {
    let path = crate::test_fixtures::fixture("real", "resnet50_fixed.pickle");
    let bytes = std::fs::read(path).expect("read");
    let snap = crate::load(&bytes).expect("load");
    let l = Layout::build(&snap, 0, Options::default());
    let mut checked = 0;
    for b in (0..l.band_count() as u32).step_by(7) {
        let (s0, s1) = l.band_step_range(b);
        if s1 <= s0 {
            continue;
        }
        let x = f64::from(s0) + 0.25;
        let off = l.band_offset_at(b, x).expect("live");
        let y = off + l.band_size(b) as f64 / 2.0;
        assert_eq!(l.hit_test(x, y), l.element_of_band(b).map(Hit::Element), "band {b}");
        checked += 1;
    }
    assert!(checked > 10);
    assert_eq!(l.hit_test(1.0, l.peak_bytes as f64 * 10.0), None);
}

#[test]
fn step_at_time_finds_the_nearest_timed_event() {
    let path = crate::test_fixtures::fixture("real", "resnet50_fixed.pickle");
    let bytes = std::fs::read(path).expect("read");
    let snap = crate::load(&bytes).expect("load");
    let l = Layout::build(&snap, 0, Options::default());
    let t = &snap.devices[0].trace;
    let timed: Vec<(u32, i64)> = (0..l.event_step.len())
        .filter_map(|i| {
            let r = l.event_row[i];
            (r != u32::MAX).then(|| t.time_us_at(r as usize).map(|tu| (l.event_step[i], tu))).flatten()
        })
        .collect();
    assert!(timed.len() > 100);
    // An event's own time maps to the first event with that time.
    for &(step, tu) in timed.iter().step_by(97) {
        let got = step_at_time(&l, t, tu).expect("timed");
        let first = timed.iter().find(|x| x.1 == tu).expect("present").0;
        assert_eq!(got, f64::from(first), "time {tu} (event step {step})");
    }
    // Before the first and after the last event.
    assert_eq!(step_at_time(&l, t, timed[0].1 - 1_000_000), Some(f64::from(timed[0].0)));
    let last = timed[timed.len() - 1];
    assert_eq!(
        step_at_time(&l, t, last.1 + 1_000_000),
        Some(f64::from(timed.iter().find(|x| x.1 == last.1).expect("last").0))
    );
    // Between two events: the nearer one.
    if let Some(w) = timed.windows(2).find(|w| w[1].1 - w[0].1 >= 10) {
        assert_eq!(step_at_time(&l, t, w[0].1 + 1), Some(f64::from(w[0].0)));
        assert_eq!(step_at_time(&l, t, w[1].1 - 1), Some(f64::from(w[1].0)));
    }
    // A trace without times.
    assert_eq!(step_at_time(&l, &Trace::default(), 5), None);
}

/// Keys tell apart every lifetime of a reused address: each element's key finds that element, and
/// segment_reuse.pickle reuses addresses.
#[test]
fn element_keys_are_unique_and_found() {
    let bytes = std::fs::read(crate::test_fixtures::fixture("synth", "segment_reuse.pickle")).unwrap();
    let snap = crate::load(&bytes).unwrap();
    let layout = Layout::build(&snap, 0, Options::default());
    let mut addrs = std::collections::HashSet::new();
    let mut reused = false;
    for e in 0..layout.elements.len() as u32 {
        let key = layout.element_key(ElementIndex::new(e)).unwrap();
        assert_eq!(layout.element_by_key(key), Some(ElementIndex::new(e)), "{key:?}");
        reused |= !addrs.insert(key.addr);
    }
    assert!(reused, "no address is reused in this fixture");
    assert_eq!(layout.element_by_key(ElementKey::new(1, Some(u32::MAX), None)), None);
}

/// A snapshot without history (`enabled='state'`: one entry, a free of an allocation made before
/// recording) is one moment: one step, every band flat over it, holding what was live when the
/// snapshot was taken; a traced file is not. Without expandable segments there are no mapped
/// pages at all (no segment is drawn as one).
#[test]
fn a_state_only_snapshot_is_one_moment() {
    let load = |name: &str| {
        crate::load(&std::fs::read(crate::test_fixtures::fixture("real", name)).expect("read")).expect("load")
    };
    let snap = load("state_only.pickle");
    let dev = snap.default_device().expect("device");
    for n in [DEFAULT_MAX_ENTRIES, 3] {
        let l = Layout::build(&snap, dev, Options { max_entries: n, ..Options::default() });
        assert!(l.is_moment(), "n={n}");
        assert_eq!(l.steps, 1);
        assert!(l.band_count() > 0);
        let final_bytes: u64 = snap
            .segments
            .iter()
            .filter(|s| s.device == snap.devices[dev].index)
            .flat_map(|s| snap.segment_blocks(s))
            .filter(|b| b.state == crate::snapshot::BlockState::ActiveAllocated)
            .map(|b| b.requested_size)
            .sum();
        for x in [0.0, 0.5, 0.999] {
            assert_eq!(l.live_bytes_at(x), final_bytes, "n={n} at {x}");
        }
        // Flat: no band slides, every drawn band that shows at all spans the whole step.
        for b in 0..l.band_count() as u32 {
            let (start, end) = l.band_step_range(b);
            assert!((start, end) == (0, 1) || start == end, "band {b}: {start}..{end}");
            assert!(l.band_reach(b) <= 1);
        }
        check_invariants(&l, 1);
        check_edges(&l, &[0.0, 0.5, 1.0]);
        // A level column: every band's edge is one offset from side to side.
        let edges = l.band_edges(&(0..l.band_count() as u32).collect::<Vec<_>>(), &[0.0, 1.0]);
        for i in 0..edges.bands.len() {
            let e = edges.edge(i);
            assert!(e.windows(2).all(|w| w[0].1 == w[1].1), "band {} slopes: {e:?}", edges.bands[i]);
        }
        let mapped = Layout::build(&snap, dev, Options { mode: Mode::MappedPages, ..Options::default() });
        assert!(mapped.elements.is_empty() && !mapped.is_moment());
    }
    let snap = load("oom.pickle");
    assert!(!Layout::build(&snap, 0, Options::default()).is_moment());
    let mapped = Layout::build(&snap, 0, Options { mode: Mode::MappedPages, ..Options::default() });
    assert!(mapped.elements.is_empty() && mapped.band_count() == 0);
}

/// A layout built in steps of any size is the one built in one go, field for field, in every
/// mode and with hide freed.
#[test]
fn built_in_steps_equals_built_at_once() {
    for path in fixtures() {
        let snap = crate::load(&std::fs::read(&path).expect("read")).expect("load");
        for device_pos in 0..snap.devices.len() {
            for (mode, hide_freed) in [
                (Mode::Allocations, false),
                (Mode::Allocations, true),
                (Mode::Segments, false),
                (Mode::MappedPages, false),
            ] {
                let options = Options { max_entries: 100, mode, hide_freed, focus_rows: None };
                let whole = format!("{:?}", Layout::build(&snap, device_pos, options));
                for budget in [1, 7, 1000] {
                    let mut b = LayoutBuilder::new(&snap, device_pos, options);
                    let mut steps = 0usize;
                    while !b.step(budget) {
                        steps += 1;
                    }
                    let rows = snap.devices[device_pos].trace.len();
                    assert!(
                        budget > rows || rows < 2 || steps > 0,
                        "{}: {rows} rows in one step of {budget}",
                        path.display()
                    );
                    assert_eq!(
                        format!("{:?}", b.finish()),
                        whole,
                        "{} device {device_pos} {mode:?} budget {budget}",
                        path.display()
                    );
                }
            }
        }
    }
}
