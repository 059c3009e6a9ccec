//! The x axis: event steps, or wall-clock time (through [`memviz_core::plot::TimeMap`]).

pub use memviz_core::plot::TimeMap;

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

    #[test]
    fn positions_follow_the_axis() {
        let m = TimeMap::from_knots(vec![0.0, 1.0, 5.0, 6.0, 10.0], vec![0.0, 100.0, 100.0, 300.0, 400.0], 7);
        let x = XMap::time(&m);
        assert!(x.is_time());
        assert_eq!(x.pos(5.5), 200.0);
        assert_eq!(x.step(x.pos(7.0)), 7.0);
        assert!(!XMap::steps().is_time());
        assert_eq!(XMap::steps().pos(3.5), 3.5);
        assert_eq!(XMap::steps().step(3.5), 3.5);
    }

    #[test]
    fn axis_values_round_trip() {
        for a in [XAxis::Steps, XAxis::Time] {
            assert_eq!(XAxis::from_value(a.value()), Some(a));
        }
        assert_eq!(XAxis::from_value("nope"), None);
    }
}
