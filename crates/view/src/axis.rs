//! Axis ticks and their labels: bytes in binary units, event steps, and time.

/// Smallest "nice" number (1, 2 or 5 times a power of ten) that is at least `x`.
pub fn nice_step(x: f64) -> f64 {
    if !x.is_finite() || x <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= x * (1.0 - 1e-9) {
            return m * p;
        }
    }
    10.0 * p
}

/// Multiples of `step` inside `[lo, hi]`.
pub fn ticks_with_step(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    if step.is_nan() || step <= 0.0 || !lo.is_finite() || !hi.is_finite() || hi < lo {
        return Vec::new();
    }
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).take(1000).map(|k| k as f64 * step).collect()
}

/// Byte ticks for `[0, max_bytes]`, about `target` of them: steps are 1, 2 or 5 times a power of
/// ten of the binary unit of the maximum (KiB, MiB, GiB, ...), never finer than a tenth of it,
/// so [`memviz_core::format::human_size`] labels them all differently.
pub fn byte_ticks(max_bytes: f64, target: usize) -> (f64, Vec<f64>) {
    if max_bytes.is_nan() || max_bytes <= 0.0 {
        return (1.0, vec![0.0]);
    }
    let mut unit = 1.0;
    while max_bytes / unit >= 1024.0 {
        unit *= 1024.0;
    }
    let raw = max_bytes / target.max(1) as f64;
    let step = if unit > 1.0 && raw / unit < 0.1 {
        // Finer than a tenth of the unit: use the unit below.
        nice_step(raw / (unit / 1024.0)).max(1.0) * (unit / 1024.0)
    } else {
        nice_step(raw / unit).max(if unit > 1.0 { 0.1 } else { 1.0 }) * unit
    };
    (step, ticks_with_step(0.0, max_bytes, step))
}

/// The binary unit (1, 1024, 1024², ... bytes) that all labels of an axis share: that of its
/// highest tick, or the one below where the ticks are closer than a tenth of it.
pub fn byte_axis_unit(step_bytes: f64, max_tick_bytes: f64) -> f64 {
    let mut unit = 1.0f64;
    while max_tick_bytes.is_finite() && max_tick_bytes / unit >= 1024.0 && unit < 1e30 {
        unit *= 1024.0;
    }
    while unit > 1.0 && step_bytes / unit < 0.1 {
        unit /= 1024.0;
    }
    unit
}

/// Label of a byte tick in `unit` (from [`byte_axis_unit`]), with at most two decimals and no
/// trailing zeros: `0`, `0.5 GiB`, `1 GiB`, `0.25 GiB`.
pub fn byte_label_in(bytes: f64, unit: f64) -> String {
    if bytes == 0.0 {
        return "0".to_string();
    }
    const NAMES: [&str; 9] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
    let power = (unit.max(1.0).log2() / 10.0).round() as usize;
    let name = NAMES.get(power).copied().unwrap_or("YiB");
    let text = format!("{:.2}", bytes / unit.max(1.0));
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {name}")
}

/// Labels of byte ticks `step_bytes` apart, all in one unit (no `512 MiB` between `1 GiB` and
/// `1.5 GiB`: `0.5 GiB`).
pub fn byte_axis_labels(step_bytes: f64, ticks: &[f64]) -> Vec<String> {
    let unit = byte_axis_unit(step_bytes, ticks.iter().copied().fold(0.0, f64::max));
    ticks.iter().map(|&t| byte_label_in(t, unit)).collect()
}

/// Ticks for `[lo, hi]`, about `target` of them.
pub fn linear_ticks(lo: f64, hi: f64, target: usize) -> (f64, Vec<f64>) {
    let step = nice_step((hi - lo) / target.max(1) as f64);
    (step, ticks_with_step(lo, hi, step))
}

/// Ticks for an x axis of `[lo, hi]`: event steps are whole numbers, so their ticks are at least
/// one step apart and no two get the same label; time ticks may be finer.
pub fn x_ticks(lo: f64, hi: f64, target: usize, is_time: bool) -> (f64, Vec<f64>) {
    if is_time {
        return linear_ticks(lo, hi, target);
    }
    let step = nice_step((hi - lo) / target.max(1) as f64).max(1.0);
    (step, ticks_with_step(lo, hi, step))
}

/// Label of a step tick: an integer with thousands separators (`12,500`).
pub fn step_label(step: f64) -> String {
    let n = step.round() as i64;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Label of a time tick (µs), with as many decimals as the tick spacing needs.
pub fn time_label(us: f64, step_us: f64) -> String {
    let (unit, name) = if step_us >= 1e6 / 10.0 {
        (1e6, "s")
    } else if step_us >= 1e3 / 10.0 {
        (1e3, "ms")
    } else {
        (1.0, "µs")
    };
    let decimals = (-(step_us / unit).log10().floor()).max(0.0) as usize;
    format!("{:.*} {name}", decimals, us / unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_ticks_never_repeat_a_label_however_deep_the_zoom() {
        for (lo, hi) in [(3137.6, 3141.4), (0.0, 3.0), (10.2, 10.9), (0.0, 9400.0), (12.0, 16.0)] {
            let (step, ticks) = x_ticks(lo, hi, 14, false);
            assert!(step >= 1.0);
            let labels: Vec<String> = ticks.iter().map(|&t| step_label(t)).collect();
            let mut unique = labels.clone();
            unique.dedup();
            assert_eq!(labels, unique, "{lo}..{hi}: {labels:?}");
            assert!(ticks.iter().all(|t| t.fract() == 0.0));
        }
    }

    #[test]
    fn time_ticks_never_repeat_a_label() {
        for (lo, hi) in [(0.0, 1.0), (0.0, 37.0), (1e6, 1.0001e6), (0.0, 3.7e7)] {
            let (step, ticks) = x_ticks(lo, hi, 14, true);
            let labels: Vec<String> = ticks.iter().map(|&t| time_label(t, step)).collect();
            let mut unique = labels.clone();
            unique.dedup();
            assert_eq!(labels, unique, "{lo}..{hi}: {labels:?}");
        }
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(70.0), 100.0);
        assert_eq!(nice_step(0.03), 0.05);
    }

    #[test]
    fn byte_ticks_have_distinct_binary_labels() {
        for max in [1.0, 900.0, 5000.0, 423.2 * 1048576.0, 3.6 * 1073741824.0, 1.04 * 1073741824.0, 80e9, 3e15] {
            let (step, ticks) = byte_ticks(max, 6);
            assert!(ticks.len() >= 2 || max < 2.0, "{max}: {ticks:?}");
            assert!(ticks.len() <= 13, "{max}: {} ticks", ticks.len());
            assert!(step > 0.0);
            let labels = byte_axis_labels(step, &ticks);
            let mut dedup = labels.clone();
            dedup.dedup();
            assert_eq!(labels, dedup, "{max}");
            // One unit on the whole axis.
            let units: Vec<&str> = labels.iter().filter_map(|l| l.split(' ').nth(1)).collect();
            assert!(units.windows(2).all(|w| w[0] == w[1]), "{max}: {labels:?}");
        }
        let labels = |max: f64| {
            let (step, t) = byte_ticks(max, 6);
            byte_axis_labels(step, &t)
        };
        assert_eq!(labels(3.6 * 1073741824.0), ["0", "1 GiB", "2 GiB", "3 GiB"]);
        assert_eq!(labels(1.8 * 1073741824.0), ["0", "0.5 GiB", "1 GiB", "1.5 GiB"]);
        assert_eq!(labels(423.2 * 1048576.0), ["0", "100 MiB", "200 MiB", "300 MiB", "400 MiB"]);
        assert_eq!(labels(900.0), ["0", "200 B", "400 B", "600 B", "800 B"]);
        // Binary steps keep two decimals.
        const MIB: f64 = 1048576.0;
        assert_eq!(
            byte_axis_labels(256.0 * MIB, &[0.0, 256.0 * MIB, 512.0 * MIB, 768.0 * MIB, 1024.0 * MIB]),
            ["0", "0.25 GiB", "0.5 GiB", "0.75 GiB", "1 GiB"]
        );
        // Ticks finer than a tenth of the top's unit are labelled in the unit below.
        assert_eq!(byte_axis_labels(50.0 * MIB, &[1000.0 * MIB, 1050.0 * MIB]), ["1000 MiB", "1050 MiB"]);
    }

    #[test]
    fn step_and_time_labels() {
        assert_eq!(step_label(0.0), "0");
        assert_eq!(step_label(12500.0), "12,500");
        assert_eq!(step_label(1_000_000.0), "1,000,000");
        assert_eq!(time_label(1_500_000.0, 500_000.0), "1.5 s");
        assert_eq!(time_label(2_000_000.0, 1_000_000.0), "2 s");
        assert_eq!(time_label(12_500.0, 500.0), "12.5 ms");
        assert_eq!(time_label(15_000.0, 5_000.0), "15 ms");
        assert_eq!(time_label(50.0, 10.0), "50 µs");
        let (step, ticks) = linear_ticks(0.0, 476_000.0, 8);
        assert_eq!(step, 100_000.0);
        assert_eq!(ticks.len(), 5);
    }
}
