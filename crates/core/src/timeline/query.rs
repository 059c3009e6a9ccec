//! Questions about a [`Layout`] at a step or over a range: band sizes and offsets, sample steps,
//! column envelopes, live bytes and range maxima, hit tests, rows and steps, times to steps.

use crate::snapshot::Trace;

use super::maxima::{Piece, BLOCK, SMALL};
use super::{ColumnEnvelope, Hit, Layout, SLIDE_STEPS};

impl Layout {
    /// Number of drawn bands.
    pub fn band_count(&self) -> usize {
        self.band_element.len()
    }

    /// First and last step of a band: it appears at `start` and is gone from `end` on.
    pub fn band_step_range(&self, band: u32) -> (u32, u32) {
        let b = band as usize;
        (self.band_start.get(b).copied().unwrap_or(0), self.band_end.get(b).copied().unwrap_or(0))
    }

    /// Last step at which a band still counts in the offsets of the bands above it.
    pub(super) fn band_reach(&self, band: u32) -> u32 {
        let b = band as usize;
        let end = self.band_end.get(b).copied().unwrap_or(0);
        if self.band_slides.get(b).copied().unwrap_or(false) {
            end.saturating_add(SLIDE_STEPS)
        } else {
            end
        }
    }

    /// Size of a band's element.
    pub fn band_size(&self, band: u32) -> u64 {
        self.band_element.get(band as usize).and_then(|&e| self.elements.get(e as usize)).map_or(0, |e| e.size_bytes)
    }

    /// How much of a band's size counts below the bands above it at `step`: 1 while it is live,
    /// falling linearly to 0 over the slide after its free, 0 otherwise.
    pub(super) fn band_weight(&self, band: u32, step: f64) -> f64 {
        let (start, end) = self.band_step_range(band);
        let (start, end) = (f64::from(start), f64::from(end));
        if step < start {
            0.0
        } else if step < end {
            1.0
        } else if self.band_slides.get(band as usize).copied().unwrap_or(false) {
            (1.0 - (step - end) / f64::from(SLIDE_STEPS)).max(0.0)
        } else {
            0.0
        }
    }

    /// The drawn stack at a (fractional) step: every band live then, bottom to top, with its lower
    /// offset in bytes. O(log n + k log k) for k bands live or sliding then.
    pub fn offsets_at(&self, step: f64, out: &mut Vec<(u32, f64)>) {
        out.clear();
        if step.is_nan() || step < 0.0 {
            return;
        }
        let mut cands = Vec::new();
        let s = step.floor().min(f64::from(u32::MAX)) as u32;
        self.index.overlapping(s, s.saturating_add(1), &mut cands);
        cands.sort_unstable();
        let mut below_bytes = 0.0;
        for b in cands {
            let (start, end) = self.band_step_range(b);
            if f64::from(start) <= step && step < f64::from(end) {
                out.push((b, below_bytes));
            }
            below_bytes += self.band_weight(b, step) * self.band_size(b) as f64;
        }
    }

    /// Lower offset of a band at a (fractional) step; `None` outside its life.
    pub fn band_offset_at(&self, band: u32, step: f64) -> Option<f64> {
        let (start, end) = self.band_step_range(band);
        if step < f64::from(start) || step >= f64::from(end) {
            return None;
        }
        let mut stack = Vec::new();
        self.offsets_at(step, &mut stack);
        stack.iter().find(|x| x.0 == band).map(|x| x.1)
    }

    /// Steps at which to sample the window `[s_left, s_right]` for drawing: every integer step
    /// when there are at most `max_samples` of them (offsets are linear between integer steps, so
    /// the drawing is exact), else one step per equal slice: the step after the slice's highest
    /// event, so every column shows its peak. Ascending.
    pub fn sample_steps(&self, s_left: f64, s_right: f64, max_samples: usize) -> Vec<f64> {
        let lo = s_left.max(0.0).floor();
        let hi = s_right.min(f64::from(self.steps)).ceil();
        if hi.is_nan() || lo.is_nan() || hi < lo || max_samples == 0 {
            return Vec::new();
        }
        if hi - lo < max_samples as f64 {
            let (lo, hi) = (lo as u32, hi as u32);
            return (lo..=hi).map(f64::from).collect();
        }
        let width = (hi - lo) / max_samples as f64;
        let mut out = Vec::with_capacity(max_samples + 1);
        let mut i = self.event_step.partition_point(|&s| f64::from(s) < lo);
        for c in 0..max_samples {
            let x0 = lo + width * c as f64;
            let x1 = x0 + width;
            let end = self.first_event_from(i, x1);
            let x = self.highest_event(i, end).map_or(x0.ceil(), |k| f64::from(self.event_step[k]));
            i = end;
            if out.last().is_none_or(|&last: &f64| x > last) && x <= hi {
                out.push(x);
            }
        }
        if out.last().is_none_or(|&last| last < hi) {
            out.push(hi);
        }
        out
    }

    /// The first event at or after index `from` whose step is not below `step`, by galloping
    /// from `from` (cheap when it is near, as for consecutive columns).
    fn first_event_from(&self, from: usize, step: f64) -> usize {
        let steps = &self.event_step;
        let n = steps.len();
        if from >= n || f64::from(steps[from]) >= step {
            return from.min(n);
        }
        // steps[lo] < step; find hi with steps[hi] >= step (or n).
        let (mut lo, mut width) = (from, 1usize);
        let hi = loop {
            let probe = lo.saturating_add(width);
            if probe >= n {
                break n;
            }
            if f64::from(steps[probe]) >= step {
                break probe;
            }
            lo = probe;
            width *= 2;
        };
        lo + 1 + steps[lo + 1..hi].partition_point(|&s| f64::from(s) < step)
    }

    /// Envelopes of the drawn stack and of the total over columns whose step boundaries are
    /// `bounds` (`bounds.len() - 1` columns, non-decreasing): what is filled under the bands, and
    /// where the summarized band goes. Whole blocks of events are taken from their maxima, so a
    /// column costs O(SMALL + BLOCK / SMALL + its events / BLOCK), not O(its events).
    pub fn column_envelopes(&self, bounds: &[f64]) -> Vec<ColumnEnvelope> {
        let mut out = Vec::with_capacity(bounds.len().saturating_sub(1));
        let Some(&b0) = bounds.first() else { return out };
        let n = self.event_step.len();
        // Next event strictly after the first column's start.
        let mut j = self.event_step.partition_point(|&s| f64::from(s) <= b0);
        // Events at or before the column's start (steps are whole numbers), found by galloping
        // from the last column's.
        let mut at_start = 0usize;
        for w in bounds.windows(2) {
            let (a, b) = (w[0], w[1]);
            at_start = self.first_event_from(at_start, a.floor() + 1.0);
            let before = at_start.checked_sub(1);
            let top = self.drawn_top_after(before, a);
            let s_a = before.map_or(self.initial_summarized_bytes, |i| self.event_summarized_bytes[i]);
            let mut env =
                ColumnEnvelope { drawn_max_bytes: top, total_max_bytes: top + s_a as f64, drawn_at_peak_bytes: top };
            let end = self.first_event_from(j, b);
            let take = |env: &mut ColumnEnvelope, drawn: f64, total: f64, drawn_at_total: f64| {
                env.drawn_max_bytes = env.drawn_max_bytes.max(drawn);
                if total > env.total_max_bytes {
                    env.total_max_bytes = total;
                    env.drawn_at_peak_bytes = drawn_at_total;
                }
            };
            let end = end.min(n);
            self.for_each_piece(j, end, |p| match p {
                Piece::Event(i) => {
                    let hi = self.drawn_before(i).max(self.event_drawn_bytes[i]) as f64;
                    take(&mut env, hi, hi + self.event_summarized_bytes[i] as f64, hi);
                }
                Piece::Small(k) => {
                    let m = &self.small_blocks;
                    take(&mut env, m.drawn_max[k] as f64, m.total_max[k] as f64, m.peak_drawn[k] as f64);
                }
                Piece::Block(k) => {
                    let m = &self.blocks;
                    take(&mut env, m.drawn_max[k] as f64, m.total_max[k] as f64, m.peak_drawn[k] as f64);
                }
            });
            j = j.max(end);
            out.push(env);
        }
        out
    }

    /// Live bytes straight after event `i`.
    pub(super) fn event_after_bytes(&self, i: usize) -> u64 {
        self.event_drawn_bytes[i] + self.event_summarized_bytes[i]
    }

    /// Hands out `a..b` (event indices) as whole blocks where they fit, else whole small
    /// blocks, else single events, in order.
    fn for_each_piece(&self, a: usize, b: usize, mut f: impl FnMut(Piece)) {
        let b = b.min(self.event_step.len());
        let mut i = a;
        while i < b {
            if i % BLOCK == 0 && i + BLOCK <= b {
                f(Piece::Block(i / BLOCK));
                i += BLOCK;
            } else if i % SMALL == 0 && i + SMALL <= b {
                f(Piece::Small(i / SMALL));
                i += SMALL;
            } else {
                f(Piece::Event(i));
                i += 1;
            }
        }
    }

    /// The first event of `a..b` after which the most bytes are live, using the block maxima
    /// for whole blocks: O(SMALL + BLOCK / SMALL + (b - a) / BLOCK).
    pub(super) fn highest_event(&self, a: usize, b: usize) -> Option<usize> {
        let mut best: Option<(u64, Piece)> = None;
        self.for_each_piece(a, b, |p| {
            let v = match p {
                Piece::Event(i) => self.event_after_bytes(i),
                Piece::Small(k) => self.small_blocks.after_max[k],
                Piece::Block(k) => self.blocks.after_max[k],
            };
            if best.is_none_or(|x| v > x.0) {
                best = Some((v, p));
            }
        });
        let (v, mut piece) = best?;
        // Descend into the winning block: its first small block, then event, with that value.
        if let Piece::Block(k) = piece {
            let first = k * (BLOCK / SMALL);
            let last = (first + BLOCK / SMALL).min(self.small_blocks.after_max.len());
            piece = Piece::Small((first..last).find(|&s| self.small_blocks.after_max[s] == v).unwrap_or(first));
        }
        if let Piece::Small(k) = piece {
            let first = k * SMALL;
            let last = (first + SMALL).min(self.event_step.len());
            piece = Piece::Event((first..last).find(|&i| self.event_after_bytes(i) == v).unwrap_or(first));
        }
        match piece {
            Piece::Event(i) => Some(i),
            _ => None,
        }
    }

    /// Bands whose life overlaps steps [a, b].
    pub fn bands_overlapping(&self, a: u32, b: u32) -> Vec<u32> {
        let mut out = Vec::new();
        self.index.overlapping(a, b, &mut out);
        out
    }

    /// Index of the last event at or before `step` (`None` before the first event).
    pub(super) fn event_at(&self, step: f64) -> Option<usize> {
        let i = self.event_step.partition_point(|&s| f64::from(s) <= step);
        i.checked_sub(1)
    }

    /// Drawn and summarized live bytes at a step.
    pub fn bytes_at(&self, step: f64) -> (u64, u64) {
        match self.event_at(step) {
            None => (self.initial_drawn_bytes, self.initial_summarized_bytes),
            Some(i) => (self.event_drawn_bytes[i], self.event_summarized_bytes[i]),
        }
    }

    /// Live requested bytes (drawn + summarized) at a step.
    pub fn live_bytes_at(&self, step: f64) -> u64 {
        let (d, s) = self.bytes_at(step);
        d + s
    }

    /// Top of the drawn stack at a step, following slides (the summarized band's lower edge).
    pub fn drawn_top_at(&self, step: f64) -> f64 {
        self.drawn_top_after(self.event_at(step), step)
    }

    /// [`Layout::drawn_top_at`] with the last event at or before `step` known.
    fn drawn_top_after(&self, event: Option<usize>, step: f64) -> f64 {
        match event {
            None => self.initial_drawn_bytes as f64,
            Some(i) => {
                let after = self.event_drawn_bytes[i] as f64;
                if self.event_slides[i] {
                    let s0 = f64::from(self.event_step[i]);
                    let before = self.drawn_before(i) as f64;
                    let frac = ((step - s0) / f64::from(SLIDE_STEPS)).clamp(0.0, 1.0);
                    before + (after - before) * frac
                } else {
                    after
                }
            }
        }
    }

    /// Highest live bytes between steps a and b inclusive (for fitting the y axis to a window).
    pub fn max_live_between(&self, a: f64, b: f64) -> u64 {
        let n = self.event_step.len();
        let start = self.event_at(a);
        let mut best = self.live_bytes_at(a).max(self.live_bytes_at(b));
        let first = start.map_or(0, |i| i);
        let last = self.event_at(b).map_or(0, |i| i + 1).min(n);
        if start.is_none() {
            best = best.max(self.initial_drawn_bytes + self.initial_summarized_bytes);
        }
        self.for_each_piece(first, last, |p| {
            let v = match p {
                Piece::Event(i) => self.drawn_before(i).max(self.event_drawn_bytes[i]) + self.event_summarized_bytes[i],
                Piece::Small(k) => self.small_blocks.total_max[k],
                Piece::Block(k) => self.blocks.total_max[k],
            };
            best = best.max(v);
        });
        best
    }

    /// What is under a point: a drawn allocation, the summarized band, or nothing.
    pub fn hit_test(&self, step: f64, bytes: f64) -> Option<Hit> {
        if step.is_nan() || bytes.is_nan() || step < 0.0 || bytes < 0.0 {
            return None;
        }
        let mut stack = Vec::new();
        self.offsets_at(step, &mut stack);
        // Offsets ascend with stack position: the last band starting at or below `bytes`.
        let i = stack.partition_point(|x| x.1 <= bytes);
        if let Some(&(b, off)) = i.checked_sub(1).and_then(|i| stack.get(i)) {
            if bytes < off + self.band_size(b) as f64 {
                return self.element_of_band(b).map(Hit::Element);
            }
        }
        let top = self.drawn_top_at(step);
        let (_, summ) = self.bytes_at(step);
        if summ > 0 && bytes >= top && bytes < top + summ as f64 {
            return Some(Hit::Summarized);
        }
        None
    }

    /// Step of a trace row's event, if that row is an event of this layout.
    pub fn step_of_row(&self, row: u32) -> Option<u32> {
        // Events are in row order (a synthetic event of no row, `u32::MAX`, is one alone).
        let i = self.event_row.partition_point(|&r| r < row);
        (self.event_row.get(i) == Some(&row) && row != u32::MAX).then(|| self.event_step.get(i).copied()).flatten()
    }

    /// Step at or after which trace row `row` has happened: the step of the first event whose row
    /// is `>= row` (for placing markers of rows that are not events, such as `oom`).
    pub fn step_for_row(&self, row: u32) -> u32 {
        let i = self.event_row.partition_point(|&r| r != u32::MAX && r < row);
        self.event_step.get(i).copied().unwrap_or(self.steps)
    }

    /// Trace row of the event at a step (the last event at or before it).
    pub fn row_at(&self, step: f64) -> Option<u32> {
        self.event_at(step).and_then(|i| self.event_row.get(i)).copied().filter(|&r| r != u32::MAX)
    }
}

/// Step of the event whose trace time is nearest to `time_us`, for placing timed marks (such as
/// `external_annotations`) on the step axis. `trace` is the trace the layout was built from; its
/// times are taken as recorded, in non-decreasing order (events without a time count as earlier
/// than any time). Ties go to the earlier event. `None` when no event has a time.
pub fn step_at_time(layout: &Layout, trace: &Trace, time_us: i64) -> Option<f64> {
    let time_of = |i: usize| -> Option<i64> {
        let row = *layout.event_row.get(i)?;
        if row == u32::MAX {
            return None;
        }
        trace.time_us_at(row as usize)
    };
    let n = layout.event_step.len();
    // First event with a time >= time_us.
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if time_of(mid).is_none_or(|t| t < time_us) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let after = (lo..n).find_map(|i| time_of(i).map(|t| (i, t)));
    let before = (0..lo).rev().find_map(|i| time_of(i).map(|t| (i, t)));
    let best = match (before, after) {
        (Some((i, a)), Some((j, b))) => {
            if time_us.abs_diff(a) <= time_us.abs_diff(b) {
                i
            } else {
                j
            }
        }
        (Some((i, _)), None) | (None, Some((i, _))) => i,
        (None, None) => return None,
    };
    layout.event_step.get(best).map(|&s| f64::from(s))
}
