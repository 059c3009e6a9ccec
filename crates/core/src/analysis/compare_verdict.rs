//! The verdict of a [`Comparison`] in words, and the peak of each iteration in both files: what
//! `memviz compare` prints on top and what the page can show in the same words. Differences are
//! always B − A.
//!
//! With iterations the verdict rests on memory that crosses iteration boundaries: per site, the
//! bytes live at the peak of the last matched iteration that were allocated before that iteration
//! began (kept gradients, leaks, caches); memory both files keep the same way cancels out. Without
//! iterations it rests on the live bytes per site at each file's peak.

use serde_json::{json, Value};

use super::compare::{Alignment, Comparison, NO_PYTHON_FRAMES_LABEL};
use super::growth::BoundarySource;
use super::{signed_size_text, size_text, BEFORE_TRACE_LABEL, NO_FRAMES_LABEL};

/// One iteration's highest live bytes in both files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IterationPeak {
    /// 1-based iteration.
    pub iteration: usize,
    /// A's highest live bytes in it.
    pub peak_a_bytes: u64,
    /// B's.
    pub peak_b_bytes: u64,
}

/// What a frameless site most likely is, said in words.
fn site_note(site: &str) -> &'static str {
    match site {
        NO_PYTHON_FRAMES_LABEL | NO_FRAMES_LABEL => " (no Python frames: backward or library code)",
        BEFORE_TRACE_LABEL => " (allocated before the trace began)",
        _ => "",
    }
}

fn source_name(s: Option<&BoundarySource>) -> &'static str {
    match s {
        Some(BoundarySource::Annotation { .. }) => "iteration annotations",
        Some(BoundarySource::Periodic { .. }) => "detected iterations",
        None => "no iterations",
    }
}

impl Comparison {
    /// How the two traces were aligned, in words: `by iteration annotations`, `by detected
    /// iterations` (from the live-bytes curve), or `by trace position scaled`.
    pub fn alignment_text(&self) -> String {
        match self.alignment {
            Alignment::Iterations { a, b } => {
                let (sa, sb) =
                    (source_name(self.a_iterations.source.as_ref()), source_name(self.b_iterations.source.as_ref()));
                let how = if sa == sb { format!("by {sa}") } else { format!("by {sa} in A, {sb} in B") };
                format!("{how} (A has {a}, B has {b})")
            }
            Alignment::Proportion => "by trace position scaled (no iterations in both)".into(),
        }
    }

    /// The highest live bytes of each iteration both files have (empty without iterations).
    pub fn iteration_peaks(&self) -> Vec<IterationPeak> {
        if self.alignment == Alignment::Proportion {
            return Vec::new();
        }
        let (a, b) = (&self.a_iterations.list, &self.b_iterations.list);
        a.iter()
            .zip(b)
            .enumerate()
            .map(|(k, (ia, ib))| IterationPeak {
                iteration: k + 1,
                peak_a_bytes: ia.peak_bytes,
                peak_b_bytes: ib.peak_bytes,
            })
            .collect()
    }

    /// The verdict in words, B − A: how much more or less B holds at its peak, and the site that
    /// differs most, with whether its memory crosses iterations in one file only.
    pub fn verdict(&self) -> String {
        let d = i128::from(self.b_peak.0) - i128::from(self.a_peak.0);
        let mut s = match d.cmp(&0) {
            std::cmp::Ordering::Greater => {
                format!("B holds {} more at its peak", size_text(u64::try_from(d.unsigned_abs()).unwrap_or(u64::MAX)))
            }
            std::cmp::Ordering::Less => {
                format!("B holds {} less at its peak", size_text(u64::try_from(d.unsigned_abs()).unwrap_or(u64::MAX)))
            }
            std::cmp::Ordering::Equal => format!("B and A peak at the same {}", size_text(self.b_peak.0)),
        };
        let largest = self.basis.sites.first();
        match (self.basis.carried_into, largest) {
            (Some(k), Some(top)) => {
                let where_ = match (top.a_bytes, top.b_bytes) {
                    (0, _) => "in B only".to_string(),
                    (_, 0) => "in A only".to_string(),
                    (a, b) if b > a => "in both, more in B".to_string(),
                    _ => "in both, more in A".to_string(),
                };
                let note = self.gradients_note(top.delta()).unwrap_or_else(|| site_note(&top.site).to_string());
                s.push_str(&format!(
                    "; the largest difference: {} from `{}`{note}, live across iterations {where_} (at the peak of iteration {k}: A {}, B {})",
                    signed_size_text(top.delta()),
                    top.site,
                    size_text(top.a_bytes),
                    size_text(top.b_bytes)
                ));
            }
            (Some(k), None) => {
                s.push_str(&format!(
                    "; the memory kept across iterations is the same in both (at the peak of iteration {k})"
                ));
            }
            (None, Some(top)) => {
                s.push_str(&format!(
                    "; the largest difference at the peaks: {} from `{}`{} (A {}, B {})",
                    signed_size_text(top.delta()),
                    top.site,
                    site_note(&top.site),
                    size_text(top.a_bytes),
                    size_text(top.b_bytes)
                ));
            }
            (None, None) => s.push_str("; every site holds the same bytes at the peaks"),
        }
        if self.alignment == Alignment::Proportion {
            s.push_str("; no iterations in both files, so moments were matched by trace position scaled");
        }
        s
    }

    /// What the largest difference is when it has no Python frames and the file holding more
    /// there keeps gradients across iterations: " (the gradients B keeps across iterations: 161
    /// tensors, 97.5 MiB, made in backward; A keeps none)". `None` otherwise.
    fn gradients_note(&self, delta: i128) -> Option<String> {
        let [a, b] = self.basis.kept_gradients;
        let (more, less, (bytes, count), other) = if delta > 0 { ("B", "A", b, a) } else { ("A", "B", a, b) };
        if count == 0 || bytes <= other.0 {
            return None;
        }
        let tensors = if count == 1 { "1 tensor".to_string() } else { format!("{count} tensors") };
        let other_text = match other {
            (0, _) => format!("{less} keeps none"),
            (bytes, n) => format!("{less} keeps {n} ({})", size_text(bytes)),
        };
        Some(format!(
            " (the gradients {more} keeps across iterations: {tensors}, {}, made in backward; {other_text})",
            size_text(bytes)
        ))
    }

    /// `iterations`, `verdict` and `aligned_by` for [`Comparison::to_json`].
    pub(super) fn verdict_json(&self) -> (Value, Value, Value) {
        let its: Vec<Value> = self
            .iteration_peaks()
            .iter()
            .map(|p| json!({"iteration": p.iteration, "peak_a_bytes": p.peak_a_bytes, "peak_b_bytes": p.peak_b_bytes}))
            .collect();
        (Value::from(its), Value::from(self.verdict()), Value::from(self.alignment_text()))
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::analysis::compare::{compare, CompareOptions};
    use crate::analysis::growth::{insights, CarryKind};
    use crate::analysis::test_util::fixture;
    use crate::analysis::Replay;
    use crate::snapshot::Snapshot;

    /// Gradients buggy keeps (it never calls `zero_grad`), as `memviz insights --json
    /// tests/data/real/resnet50_buggy.pickle` reports them: 161 tensors made in backward.
    const KEPT_GRADIENT_BYTES: u64 = 102_228_128;

    /// The highest live bytes over rows `[start, end)`, from the replay's curve alone.
    fn curve_peak(r: &Replay, start: u32, end: u32) -> u64 {
        r.live_after_bytes[start as usize..end as usize].iter().copied().max().unwrap()
    }

    #[test]
    fn fixed_against_buggy_names_the_kept_gradients() {
        let (a, b) = (fixture("resnet50_fixed.pickle"), fixture("resnet50_buggy.pickle"));
        let c = compare(&a, 0, &b, 0, CompareOptions::default());
        assert_eq!(c.alignment_text(), "by iteration annotations (A has 5, B has 5)");
        // The kept gradients, by the carry-over analysis of buggy on its own.
        let grads = insights(&b, 0).carry_over.into_iter().find(|k| k.kind == CarryKind::Gradients).unwrap();
        assert_eq!((grads.bytes, grads.count), (KEPT_GRADIENT_BYTES, 161));
        assert_eq!(grads.sites, vec![(NO_FRAMES_LABEL.to_string(), KEPT_GRADIENT_BYTES, 161)]);
        // Fixed keeps none: nothing of the gradients kind crosses its iterations.
        assert!(insights(&a, 0).carry_over.iter().all(|k| k.kind != CarryKind::Gradients));
        let top = &c.basis.sites[0];
        assert_eq!(top.site, NO_PYTHON_FRAMES_LABEL);
        assert_eq!(top.delta(), i128::from(KEPT_GRADIENT_BYTES));
        assert_eq!(top.b_count - top.a_count, 161);
        let v = c.verdict();
        assert!(v.starts_with("B holds 25.3 MiB more at its peak; "), "{v}");
        assert!(v.contains("largest difference: +97.5 MiB from `<no Python frames>`"), "{v}");
        // That memory named: the gradients buggy keeps, by its own Insights.
        assert_eq!(c.basis.kept_gradients, [(0, 0), (KEPT_GRADIENT_BYTES, 161)]);
        assert!(
            v.contains(
                "(the gradients B keeps across iterations: 161 tensors, 97.5 MiB, made in backward; A keeps none)"
            ),
            "{v}"
        );
        assert!(v.contains("live across iterations in both, more in B (at the peak of iteration 5"), "{v}");
        assert_eq!(size_text(KEPT_GRADIENT_BYTES), "97.5 MiB");
        // Swapped, every sign turns.
        let s = compare(&b, 0, &a, 0, CompareOptions::default());
        assert_eq!(s.basis.sites[0].delta(), -i128::from(KEPT_GRADIENT_BYTES));
        let v = s.verdict();
        assert!(v.starts_with("B holds 25.3 MiB less at its peak; "), "{v}");
        assert!(v.contains("-97.5 MiB from `<no Python frames>`") && v.contains("in both, more in A"), "{v}");
        assert!(v.contains("(the gradients A keeps across iterations: 161 tensors, 97.5 MiB"), "{v}");
    }

    #[test]
    fn iteration_peaks_are_each_files_own() {
        let (a, b) = (fixture("resnet50_fixed.pickle"), fixture("resnet50_buggy.pickle"));
        let c = compare(&a, 0, &b, 0, CompareOptions::default());
        let peaks = c.iteration_peaks();
        assert_eq!(peaks.len(), 5);
        let (ia, ib) = (insights(&a, 0).iterations.list, insights(&b, 0).iterations.list);
        let (ra, rb) = (Replay::build(&a, 0), Replay::build(&b, 0));
        for (k, p) in peaks.iter().enumerate() {
            assert_eq!(p.iteration, k + 1);
            assert_eq!((p.peak_a_bytes, p.peak_b_bytes), (ia[k].peak_bytes, ib[k].peak_bytes));
            assert_eq!(p.peak_a_bytes, curve_peak(&ra, ia[k].start_row, ia[k].end_row));
            assert_eq!(p.peak_b_bytes, curve_peak(&rb, ib[k].start_row, ib[k].end_row));
        }
        // From the second iteration on, buggy peaks higher by the same 26,499,328 bytes.
        assert_eq!(peaks[0].peak_a_bytes, peaks[0].peak_b_bytes);
        assert!(peaks[1..].iter().all(|p| p.peak_b_bytes - p.peak_a_bytes == 26_499_328));
    }

    #[test]
    fn without_iterations_the_verdict_says_position() {
        let load = |n: &str| {
            let p = crate::test_fixtures::fixture("synth", n);
            crate::load(&std::fs::read(&p).unwrap()).unwrap()
        };
        let (a, b) = (load("oom.pickle"), load("multi_stream.pickle"));
        let c = compare(&a, 0, &b, 0, CompareOptions::default());
        assert_eq!(c.alignment, Alignment::Proportion);
        assert_eq!(c.alignment_text(), "by trace position scaled (no iterations in both)");
        assert!(c.iteration_peaks().is_empty());
        assert_eq!(c.basis.carried_into, None);
        // The sites at each file's peak, from the replays alone.
        let (ra, rb) = (Replay::build(&a, 0), Replay::build(&b, 0));
        let at_peak = |s: &Snapshot, r: &Replay| {
            let mut m: HashMap<String, u64> = HashMap::new();
            for l in r.lives.iter().filter(|l| l.live_after(r.peak_row)) {
                *m.entry(crate::analysis::life_site_label(s, l)).or_default() += l.size_bytes;
            }
            m
        };
        let (ma, mb) = (at_peak(&a, &ra), at_peak(&b, &rb));
        let top = &c.basis.sites[0];
        assert_eq!((top.a_bytes, top.b_bytes), (ma[&top.site], mb.get(&top.site).copied().unwrap_or(0)));
        let v = c.verdict();
        let less = ra.peak_bytes - rb.peak_bytes;
        assert!(v.starts_with(&format!("B holds {} less at its peak", size_text(less))), "{v}");
        assert!(v.contains(&format!("{} from `{}`", signed_size_text(top.delta()), top.site)), "{v}");
        assert!(v.ends_with("so moments were matched by trace position scaled"), "{v}");
    }
}
