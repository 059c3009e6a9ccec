//! The overlay of the run of eight ranks (rank 3 at 2.44x the median's peak, rank 5 growing,
//! rank 6 with an out-of-memory event; the other five, and rank 6, draw the same curve).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::ranks::tests::{attrs, run_of_8};

const MIB: u64 = 1 << 20;

#[test]
fn equal_curves_are_named_and_drawn_apart() {
    let run = run_of_8();
    assert_eq!(same_curves(&run), vec![vec![0, 1, 2, 4, 6, 7], vec![3], vec![5]]);
    let outliers = run.outliers();
    let strokes: Vec<_> = (0..8).map(|i| stroke_of(i, outliers.iter().any(|o| o.0 == i))).collect();
    for a in 0..8 {
        for b in a + 1..8 {
            assert_ne!(strokes[a], strokes[b], "ranks {a} and {b} look alike");
        }
    }
    let html = overlay_markup(&run, &outliers);
    assert_eq!(html.matches("<polyline class=\"curve").count(), 8);
    // The shared curve is drawn by its six ranks in turn: 5 px each, 25 px apart.
    let groups = same_curves(&run);
    assert_eq!(
        (interleaved(&groups, 0), interleaved(&groups, 7), interleaved(&groups, 3)),
        (Some((0, 6)), Some((5, 6)), None)
    );
    assert!(
        html.contains("data-index=\"7\" stroke=\"#ff9da7\" stroke-dasharray=\"5 25\" stroke-dashoffset=\"25\""),
        "{html}"
    );
    assert_eq!(attrs(&html, "data-same-as"), ["5", "5", "5", "0", "5", "0", "5", "5"]);
    assert!(html.contains("rank 0 · peak 356 MiB · the same curve as 5 other ranks"), "{html}");
}

#[test]
fn the_axes_name_bytes_and_iterations() {
    let run = run_of_8();
    let html = overlay_markup(&run, &run.outliers());
    let y = &html[html.find("y-axis").unwrap()..html.find("x-axis").unwrap()];
    for label in ["0", "200 MiB", "400 MiB", "600 MiB", "800 MiB"] {
        assert!(y.contains(&format!(">{label}</text>")), "{label} in {y}");
    }
    let x = &html[html.find("x-axis").unwrap()..];
    for k in 1..=5 {
        assert!(x.contains(&format!(">{k}</text>")), "iteration {k}");
    }
    assert!(x.contains("iteration →"));
}

#[test]
fn the_readout_gives_each_ranks_highest_bytes_in_its_column() {
    let run = run_of_8();
    let html = overlay_markup(&run, &run.outliers());
    let cols = attrs(&html, "data-bytes");
    assert_eq!(cols.len(), COLUMNS);
    // Independently: each rank's samples by x, the highest in each column's slice.
    let (x0, x1) = run.x_domain();
    for (c, text) in cols.iter().enumerate() {
        let got: Vec<(usize, u64)> = text
            .split(',')
            .map(|p| p.split_once(':').unwrap())
            .map(|(i, b)| (i.parse().unwrap(), b.parse().unwrap()))
            .collect();
        assert_eq!(got.len(), 8, "every rank in column {c}");
        assert!(got.windows(2).all(|w| w[0].1 >= w[1].1), "largest first");
        for (i, b) in got {
            let d = run.ranks[i].digest().unwrap();
            let (lo, hi) =
                (x0 + (x1 - x0) * c as f64 / COLUMNS as f64, x0 + (x1 - x0) * (c + 1) as f64 / COLUMNS as f64);
            let inside: Vec<u64> =
                d.curve.iter().filter(|(e, _)| (lo..hi).contains(&Run::x_of(d, *e, true))).map(|p| p.1).collect();
            if let Some(&want) = inside.iter().max() {
                assert_eq!(b, want, "rank entry {i}, column {c}");
            }
        }
    }
    // The readout names the ranks with their sizes, the outlier first where it is highest.
    assert!(html.contains("rank 3 · 868 MiB</text>"), "the outlier's peak is read somewhere");
}

#[test]
fn an_outlier_says_why_in_words() {
    let run = run_of_8();
    let why = outlier_why(&run, 3, &["peak"]);
    let m = run.median_of(3).unwrap();
    assert!(
        why.starts_with(&format!(
            "an outlier (peak): peak 868 MiB, 2.4× the median {}'s 356 MiB",
            run.ranks[m].label()
        )),
        "{why}"
    );
    assert_eq!(run.ranks[3].digest().unwrap().peak_allocated_bytes, 868 * MIB);
    let html = overlay_markup(&run, &run.outliers());
    assert!(html.contains("rank 3 · peak 868 MiB · an outlier (peak)"), "{html}");
}
