//! The x axis: event steps, or wall-clock time.
//!
//! With time on the x axis, a step maps to µs since the first event by interpolating between the
//! times of the layout's events (made non-decreasing), so the plot stretches where time passes
//! and shrinks where many events happen at once.

use memviz_core::snapshot::Trace;
use memviz_core::timeline::Layout;

/// What the x axis shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum XAxis {
    /// Event steps (each alloc or free is one step, a slide three more).
    #[default]
    Steps,
    /// Time since the first event (`time_us`).
    Time,
}

impl XAxis {
    /// Value of the `<option>` for this axis.
    pub fn value(self) -> &'static str {
        match self {
            XAxis::Steps => "steps",
            XAxis::Time => "time",
        }
    }

    /// The axis for an `<option>` value.
    pub fn from_value(s: &str) -> Option<XAxis> {
        match s {
            "steps" => Some(XAxis::Steps),
            "time" => Some(XAxis::Time),
            _ => None,
        }
    }
}

/// A monotone piecewise-linear map from steps to positions (µs since the first event).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimeMap {
    knot_step: Vec<f64>,
    knot_us: Vec<f64>,
    /// Absolute time of position 0, µs since the epoch.
    pub t0_us: i64,
}

impl TimeMap {
    /// Builds the map from a layout's events and their trace times; `None` without times.
    pub fn build(layout: &Layout, trace: &Trace) -> Option<TimeMap> {
        let times: Vec<Option<i64>> = layout
            .event_row
            .iter()
            .map(|&r| {
                if r == u32::MAX {
                    None
                } else {
                    trace.time_us_at(r as usize)
                }
            })
            .collect();
        let first = times.iter().flatten().next().copied()?;
        let mut knot_step = Vec::with_capacity(times.len() + 1);
        let mut knot_us = Vec::with_capacity(times.len() + 1);
        let mut last = first;
        for (i, t) in times.iter().enumerate() {
            let t = t.unwrap_or(last).max(last);
            last = t;
            knot_step.push(f64::from(layout.event_step.get(i).copied().unwrap_or(0)));
            knot_us.push((t - first) as f64);
        }
        let end = f64::from(layout.steps);
        if knot_step.last().is_none_or(|&s| s < end) {
            knot_step.push(end);
            knot_us.push((last - first) as f64);
        }
        Some(TimeMap::from_knots(knot_step, knot_us, first))
    }

    /// A map through the given knots (steps strictly increasing, µs non-decreasing).
    pub fn from_knots(knot_step: Vec<f64>, knot_us: Vec<f64>, t0_us: i64) -> TimeMap {
        TimeMap {
            knot_step,
            knot_us,
            t0_us,
        }
    }

    /// Last position (µs).
    pub fn end_us(&self) -> f64 {
        self.knot_us.last().copied().unwrap_or(0.0)
    }

    /// Position (µs since the first event) of a step.
    pub fn us_at_step(&self, step: f64) -> f64 {
        let n = self.knot_step.len();
        if n == 0 {
            return 0.0;
        }
        let i = self.knot_step.partition_point(|&s| s <= step);
        if i == 0 {
            return self.knot_us[0];
        }
        if i >= n {
            return self.knot_us[n - 1];
        }
        let (s0, s1) = (self.knot_step[i - 1], self.knot_step[i]);
        let (u0, u1) = (self.knot_us[i - 1], self.knot_us[i]);
        u0 + (u1 - u0) * (step - s0) / (s1 - s0)
    }

    /// Step at a position (µs since the first event); in a stretch where time stands still, the
    /// last step of it.
    pub fn step_at_us(&self, us: f64) -> f64 {
        let n = self.knot_us.len();
        if n == 0 {
            return 0.0;
        }
        let i = self.knot_us.partition_point(|&u| u <= us);
        if i == 0 {
            return self.knot_step[0];
        }
        if i >= n {
            return self.knot_step[n - 1];
        }
        let (s0, s1) = (self.knot_step[i - 1], self.knot_step[i]);
        let (u0, u1) = (self.knot_us[i - 1], self.knot_us[i]);
        if u1 > u0 {
            s0 + (s1 - s0) * (us - u0) / (u1 - u0)
        } else {
            s0
        }
    }
}

/// Maps steps to x positions for the chosen axis.
#[derive(Clone, Copy, Debug)]
pub struct XMap<'a> {
    time: Option<&'a TimeMap>,
}

impl<'a> XMap<'a> {
    /// Steps on the x axis.
    pub fn steps() -> XMap<'static> {
        XMap { time: None }
    }

    /// Time on the x axis.
    pub fn time(map: &'a TimeMap) -> XMap<'a> {
        XMap { time: Some(map) }
    }

    /// Whether positions are µs.
    pub fn is_time(&self) -> bool {
        self.time.is_some()
    }

    /// Position of a step.
    pub fn pos(&self, step: f64) -> f64 {
        match self.time {
            None => step,
            Some(m) => m.us_at_step(step),
        }
    }

    /// Step at a position.
    pub fn step(&self, pos: f64) -> f64 {
        match self.time {
            None => pos,
            Some(m) => m.step_at_us(pos),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    #[allow(clippy::unwrap_used)]
    fn time_maps_cross_field_by_field() {
        use memviz_core::wire::{decode_field, encode_by_field, PartList};
        let m = TimeMap::from_knots((0..50).map(f64::from).collect(), (0..50).map(|k| f64::from(k * k)).collect(), -3);
        for chunk_bytes in [1, 24, 1 << 20] {
            let mut back = TimeMap::default();
            for (field, head, parts) in encode_by_field(&m, chunk_bytes) {
                decode_field(&mut back, field, &head, &mut PartList::new(parts)).unwrap();
            }
            assert_eq!(back, m);
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn time_map_interpolates_and_inverts() {
        let m = TimeMap::from_knots(
            vec![0.0, 1.0, 5.0, 6.0, 10.0],
            vec![0.0, 100.0, 100.0, 300.0, 400.0],
            7,
        );
        assert_eq!(m.us_at_step(0.5), 50.0);
        assert_eq!(m.us_at_step(3.0), 100.0);
        assert_eq!(m.us_at_step(5.5), 200.0);
        assert_eq!(m.us_at_step(99.0), 400.0);
        assert_eq!(m.us_at_step(-1.0), 0.0);
        assert_eq!(m.step_at_us(50.0), 0.5);
        assert_eq!(m.step_at_us(100.0), 5.0);
        assert_eq!(m.step_at_us(200.0), 5.5);
        assert_eq!(m.step_at_us(1e9), 10.0);
        assert_eq!(m.end_us(), 400.0);
        let x = XMap::time(&m);
        assert!(x.is_time());
        assert_eq!(x.step(x.pos(7.0)), 7.0);
        assert_eq!(XMap::steps().pos(3.5), 3.5);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn axis_values_round_trip() {
        for a in [XAxis::Steps, XAxis::Time] {
            assert_eq!(XAxis::from_value(a.value()), Some(a));
        }
        assert_eq!(XAxis::from_value("nope"), None);
    }
}

memviz_core::wire_by_field!(TimeMap { t0_us } chunked { knot_step, knot_us });
