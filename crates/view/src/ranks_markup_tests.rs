//! The rank overview's markup on a run of eight ranks (rank 3 at 2.44x the median's peak, rank 5
//! growing, rank 6 with an out-of-memory event).

use super::*;
use crate::ranks::tests::{attrs, run_of_8};

#[test]
fn a_bar_per_rank_with_its_peaks_and_the_outliers_marked() {
    let run = run_of_8();
    let html = overview_html(&run);
    assert!(html.starts_with("<p id=\"ranks-rule\" data-rule=\""), "{html}");
    assert!(html.contains(" 8 of 8 read</p>"));
    let ranks = attrs(&html, "data-rank");
    assert_eq!(&ranks[..8], ["0", "1", "2", "3", "4", "5", "6", "7"], "bars in rank order");
    let peaks = attrs(&html, "data-peak-allocated-bytes");
    assert_eq!(peaks[3], (868u64 << 20).to_string());
    let outliers: Vec<&str> = attrs(&html, "data-outlier").into_iter().filter(|o| !o.is_empty()).collect();
    assert_eq!(outliers.len(), 3, "{outliers:?}");
    assert!(html.contains("class=\"rank-bar outlier\""));
}

#[test]
fn once_every_rank_is_read_the_curves_and_what_differs_follow() {
    let run = run_of_8();
    let html = overview_html(&run);
    assert_eq!(attrs(&html, "data-aligned-by"), ["iteration"]);
    assert_eq!(html.matches("<polyline class=\"curve").count(), 16, "8 overlaid, 8 small multiples");
    assert!(html.contains("<section class=\"differs\" data-rank=\"3\""), "the outlier against the median");
    assert!(html.contains("data-compare="), "a button compares the two in full");
    // A side's bytes are exact or a bound, never a 0 that means "not kept".
    assert!(!html.contains("data-bytes=\"0\"") || html.contains("data-at-most-bytes"));
}

#[test]
fn while_ranks_are_read_only_the_progress_and_bars_show() {
    let paths: Vec<String> = (0..3).map(|r| format!("rank{r}.pickle")).collect();
    let mut run = crate::ranks::Run::new(&paths);
    run.set_reading(1, 0.5);
    run.set_failed(2, "no <snapshot>".into());
    let html = overview_html(&run);
    assert_eq!(attrs(&html, "data-state"), ["waiting", "reading", "failed"]);
    assert!(html.contains("reading 50%"));
    assert!(html.contains("failed: no &lt;snapshot&gt;"), "escaped");
    assert!(html.contains("follow once every rank is read"));
    assert!(!html.contains("ranks-overlay"));
}
