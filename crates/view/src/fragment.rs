//! The page's place as a URL fragment: file, view, device, zoom window, pinned allocation,
//! selected event, the cursor's trace entry (`entry=2302`, which a user can type), the settings
//! of the view (x axis, hide freed, Detail, the search boxes, the analysis panel's tab, the flame
//! view's mode and focused frame), of a run the focused rank and whether its overview is shown,
//! and the Compare view's two files (`compare=fixed.pickle,buggy.pickle`), e.g.
//! `#file=run.pickle&view=active-memory-timeline&device=0&x=120-4500&pin=b7f0a2c000000_e3&axis=time&find-frame=forward&panel=live`.
//! Parsing and writing only; the page reads and writes `location.hash`.

use crate::state::flame::FlameMode;
use crate::state::panels::{SearchBoxes, Tab};
use crate::view::View;
use crate::xmap::XAxis;

/// What a fragment holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fragment {
    /// File name (without the " (2)" of repeated names).
    pub file: Option<String>,
    /// View value.
    pub view: Option<View>,
    /// Device index.
    pub device: Option<i64>,
    /// Window in event steps.
    pub x_steps: Option<(f64, f64)>,
    /// Pinned allocation's key ([`crate::state::pin::pin_text`]: `b<hex>_e<alloc entry>`).
    pub pin: Option<String>,
    /// Selected event of the Allocator State History.
    pub event: Option<usize>,
    /// The x axis, when it is not steps.
    pub axis: Option<XAxis>,
    /// Allocations made and freed within the trace are left out.
    pub hide_freed: bool,
    /// Allocations drawn one by one (the Detail slider), when not the default.
    pub detail: Option<usize>,
    /// The search boxes' text.
    pub search: SearchBoxes,
    /// The analysis panel's tab, when the panel is open.
    pub panel: Option<Tab>,
    /// The trace entry the timeline's cursor is on.
    pub entry: Option<u32>,
    /// The focused rank of a run.
    pub rank: Option<u32>,
    /// A run's overview is shown (rather than the focused rank's timeline).
    pub ranks_overview: bool,
    /// The flame view's mode, when not the live set.
    pub flame: Option<FlameMode>,
    /// The flame view's focused frame: its labels from the root.
    pub flame_focus: Vec<String>,
    /// The Compare view's pair (A, B) by file name, while it is shown.
    pub compare: Option<(String, String)>,
}

/// Between the labels of the focused frame's path in the fragment (a unit separator, never in
/// a frame's text).
const PATH_SEPARATOR: char = '\u{1f}';
/// Most labels kept of a focused path.
const MAX_PATH_LABELS: usize = 64;

/// The fragment's name of a tab.
fn tab_value(t: Tab) -> &'static str {
    match t {
        Tab::Insights => "insights",
        Tab::Live => "live",
        Tab::Compare => "compare",
        Tab::Categories => "categories",
    }
}

/// Longest text kept of a search box.
const MAX_SEARCH_CHARS: usize = 200;

/// Reads a fragment (with or without the leading `#`); unknown or malformed parts are skipped.
pub fn parse(hash: &str, decode_part: impl Fn(&str) -> String) -> Fragment {
    let mut f = Fragment::default();
    for part in hash.trim_start_matches('#').split('&') {
        let Some((k, v)) = part.split_once('=') else {
            continue;
        };
        match k {
            "file" => f.file = Some(decode_part(v)).filter(|s| !s.is_empty()),
            "view" => f.view = View::from_value(v),
            "device" => f.device = v.parse().ok(),
            "x" => {
                f.x_steps = v.split_once('-').and_then(|(a, b)| {
                    let (a, b) = (a.parse::<f64>().ok()?, b.parse::<f64>().ok()?);
                    (a.is_finite() && b.is_finite() && a < b).then_some((a, b))
                });
            }
            "pin" => f.pin = Some(v.to_string()).filter(|s| s.len() <= 40 && s.starts_with('b')),
            "event" => f.event = v.parse().ok(),
            "entry" => f.entry = v.parse().ok(),
            "axis" => f.axis = XAxis::from_value(v).filter(|a| *a != XAxis::Steps),
            "hide-freed" => f.hide_freed = v == "1",
            "detail" => f.detail = v.parse().ok().filter(|&n| n > 0),
            "find-addr" | "find-frame" | "find-min" | "find-max" => {
                let text: String = decode_part(v).chars().take(MAX_SEARCH_CHARS).collect();
                let b = &mut f.search;
                match k {
                    "find-addr" => b.addr = text,
                    "find-frame" => b.frame = text,
                    "find-min" => b.min = text,
                    _ => b.max = text,
                }
            }
            "rank" => f.rank = v.parse().ok(),
            "compare" => {
                f.compare = v
                    .split_once(',')
                    .map(|(a, b)| (decode_part(a), decode_part(b)))
                    .filter(|(a, b)| !a.is_empty() && !b.is_empty())
            }
            "ranks" => f.ranks_overview = v == "overview",
            "flame" => f.flame = FlameMode::from_value(v).filter(|m| *m != FlameMode::Live),
            "frame" => {
                let text = decode_part(v);
                f.flame_focus = text.split(PATH_SEPARATOR).take(MAX_PATH_LABELS).map(str::to_string).collect();
                f.flame_focus.retain(|l| !l.is_empty());
            }
            "panel" => {
                f.panel =
                    [Tab::Insights, Tab::Live, Tab::Compare, Tab::Categories].into_iter().find(|&t| tab_value(t) == v)
            }
            _ => {}
        }
    }
    f
}

/// Writes a fragment (without the `#`).
pub fn format(f: &Fragment, encode_part: impl Fn(&str) -> String) -> String {
    let mut parts = Vec::new();
    if let Some(v) = &f.file {
        parts.push(format!("file={}", encode_part(v)));
    }
    if let Some(v) = f.view {
        parts.push(format!("view={}", v.value()));
    }
    if let Some(d) = f.device {
        parts.push(format!("device={d}"));
    }
    if let Some((a, b)) = f.x_steps {
        parts.push(format!("x={}-{}", a.round(), b.round()));
    }
    if let Some(p) = &f.pin {
        parts.push(format!("pin={p}"));
    }
    if let Some(e) = f.event {
        parts.push(format!("event={e}"));
    }
    if let Some(a) = f.axis.filter(|a| *a != XAxis::Steps) {
        parts.push(format!("axis={}", a.value()));
    }
    if f.hide_freed {
        parts.push("hide-freed=1".to_string());
    }
    if let Some(n) = f.detail {
        parts.push(format!("detail={n}"));
    }
    let b = &f.search;
    for (k, v) in [("find-addr", &b.addr), ("find-frame", &b.frame), ("find-min", &b.min), ("find-max", &b.max)] {
        if !v.is_empty() {
            parts.push(format!("{k}={}", encode_part(v)));
        }
    }
    if let Some(t) = f.panel {
        parts.push(format!("panel={}", tab_value(t)));
    }
    if let Some(e) = f.entry {
        parts.push(format!("entry={e}"));
    }
    if f.ranks_overview {
        parts.push("ranks=overview".to_string());
    }
    if let Some((a, b)) = &f.compare {
        // Each name encoded: a comma in a name is written %2C.
        parts.push(format!("compare={},{}", encode_part(a), encode_part(b)));
    }
    if let Some(r) = f.rank {
        parts.push(format!("rank={r}"));
    }
    if let Some(m) = f.flame.filter(|m| *m != FlameMode::Live) {
        parts.push(format!("flame={}", m.value()));
    }
    if !f.flame_focus.is_empty() {
        let path: Vec<&str> = f.flame_focus.iter().map(String::as_str).collect();
        parts.push(format!("frame={}", encode_part(&path.join(&PATH_SEPARATOR.to_string()))));
    }
    parts.join("&")
}

/// The name a file was opened under, without the ` (N)` added for repeated names.
pub fn base_name(name: &str) -> &str {
    match name.rfind(" (") {
        Some(i) if name.ends_with(')') && is_number(&name[i + 2..name.len() - 1]) => &name[..i],
        _ => name,
    }
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Whether the fragment `written` holds everything of `frag` but its zoom window.
pub fn same_but_window(written: &str, frag: &Fragment, decode_part: impl Fn(&str) -> String) -> bool {
    let old = parse(written, decode_part);
    Fragment { x_steps: None, ..old } == Fragment { x_steps: None, ..frag.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> String {
        s.to_string()
    }

    #[test]
    fn the_view_settings_round_trip() {
        let f = Fragment {
            file: Some("run.pickle".into()),
            axis: Some(XAxis::Time),
            hide_freed: true,
            detail: Some(500),
            search: SearchBoxes {
                addr: "7f00".into(),
                frame: "forward".into(),
                min: "1MiB".into(),
                max: "2 GiB".into(),
            },
            panel: Some(Tab::Live),
            ..Fragment::default()
        };
        let enc = |s: &str| s.replace(' ', "%20");
        let dec = |s: &str| s.replace("%20", " ");
        let text = format(&f, enc);
        assert_eq!(
            text,
            "file=run.pickle&axis=time&hide-freed=1&detail=500&find-addr=7f00&find-frame=forward&find-min=1MiB&find-max=2%20GiB&panel=live"
        );
        assert_eq!(parse(&text, dec), f);
        for t in [Tab::Insights, Tab::Live, Tab::Compare, Tab::Categories] {
            let f = Fragment { panel: Some(t), ..Fragment::default() };
            assert_eq!(parse(&format(&f, id), id), f);
        }
    }

    #[test]
    fn the_focused_rank_round_trips() {
        let f = Fragment { rank: Some(5), ranks_overview: true, ..Fragment::default() };
        assert_eq!(format(&f, id), "ranks=overview&rank=5");
        assert_eq!(parse("ranks=overview&rank=5", id), f);
        assert_eq!(parse("rank=x&ranks=no", id), Fragment::default());
    }

    #[test]
    fn the_flame_views_mode_and_focus_round_trip() {
        let f = Fragment {
            view: Some(View::FlameGraph),
            flame: Some(FlameMode::Lifetime),
            flame_focus: vec!["train.py:1 (main)".into(), "model.py:42 (forward)".into()],
            ..Fragment::default()
        };
        let enc = |s: &str| s.replace(' ', "%20").replace('\u{1f}', "%1F");
        let dec = |s: &str| s.replace("%20", " ").replace("%1F", "\u{1f}");
        let text = format(&f, enc);
        assert_eq!(text, "view=flame-graph&flame=lifetime&frame=train.py:1%20(main)%1Fmodel.py:42%20(forward)");
        assert_eq!(parse(&text, dec), f);
        // The live set is the default: not written, and read as none.
        let live = Fragment { flame: Some(FlameMode::Live), ..Fragment::default() };
        assert_eq!(format(&live, id), "");
        assert_eq!(parse("flame=live&flame=nope", id).flame, None);
        assert!(parse("frame=", id).flame_focus.is_empty());
    }

    #[test]
    fn default_settings_are_left_out_and_bad_ones_ignored() {
        assert_eq!(format(&Fragment { axis: Some(XAxis::Steps), ..Fragment::default() }, id), "");
        let f = parse("axis=steps&hide-freed=0&detail=0&panel=nope&axis=bogus", id);
        assert_eq!(f, Fragment::default());
        let long = "x".repeat(5000);
        assert_eq!(parse(&std::format!("find-frame={long}"), id).search.frame.len(), MAX_SEARCH_CHARS);
    }

    #[test]
    fn every_view_round_trips() {
        for v in View::ALL {
            let f = Fragment { view: Some(v), ..Fragment::default() };
            assert_eq!(parse(&format(&f, id), id), f);
        }
    }

    #[test]
    fn an_empty_fragment_is_empty_both_ways() {
        assert_eq!(format(&Fragment::default(), id), "");
        assert_eq!(parse("", id), Fragment::default());
        assert_eq!(parse("#", id), Fragment::default());
    }

    #[test]
    fn file_names_go_through_the_encoder() {
        let f = Fragment { file: Some("a b&c=d.pickle".into()), ..Fragment::default() };
        let enc = |s: &str| s.replace('%', "%25").replace(' ', "%20").replace('&', "%26").replace('=', "%3D");
        let dec = |s: &str| s.replace("%20", " ").replace("%26", "&").replace("%3D", "=").replace("%25", "%");
        let text = format(&f, enc);
        assert_eq!(text, "file=a%20b%26c%3Dd.pickle");
        assert_eq!(parse(&text, dec), f);
    }

    #[test]
    fn a_window_is_whole_steps_in_order() {
        let f = Fragment { x_steps: Some((10.4, 99.6)), ..Fragment::default() };
        assert_eq!(format(&f, id), "x=10-100");
        assert_eq!(parse("x=5-5", id).x_steps, None);
        assert_eq!(parse("x=9-5", id).x_steps, None);
        assert_eq!(parse("x=inf-5", id).x_steps, None);
        assert_eq!(parse("x=1-NaN", id).x_steps, None);
        assert_eq!(parse("x=1", id).x_steps, None);
    }

    #[test]
    fn the_cursor_entry_round_trips_and_junk_is_skipped() {
        let f = parse("file=a.pickle&entry=2302", id);
        assert_eq!(f.entry, Some(2302));
        assert_eq!(parse(&format(&f, id), id), f);
        assert!(format(&f, id).ends_with("&entry=2302"));
        assert_eq!(parse("entry=-3&entry=x", id).entry, None);
        assert_eq!(parse("entry=99999999999", id).entry, None);
    }

    #[test]
    fn pins_must_look_like_address_labels() {
        assert_eq!(parse("pin=b7f00_0", id).pin.as_deref(), Some("b7f00_0"));
        assert_eq!(parse("pin=s7f00_0", id).pin, None);
        assert_eq!(parse(&std::format!("pin=b{}", "0".repeat(60)), id).pin, None);
    }

    #[test]
    fn devices_and_events_are_numbers() {
        assert_eq!(parse("device=3&event=12", id).device, Some(3));
        assert_eq!(parse("device=-1", id).device, Some(-1));
        assert_eq!(parse("device=x&event=-2", id), Fragment::default());
    }

    #[test]
    fn the_last_of_a_repeated_key_wins_and_order_does_not_matter() {
        let a = parse("view=allocator-settings&device=1&view=active-memory-timeline", id);
        assert_eq!(a.view, Some(View::ActiveMemoryTimeline));
        assert_eq!(parse("device=2&file=x", id), parse("file=x&device=2", id));
    }

    #[test]
    fn repeated_names_share_the_base_name() {
        assert_eq!(base_name("run.pickle (12)"), "run.pickle");
        assert_eq!(base_name("run.pickle ()"), "run.pickle ()");
        assert_eq!(base_name("run.pickle (x)"), "run.pickle (x)");
        assert_eq!(base_name("(2)"), "(2)");
    }

    #[test]
    fn fragments_round_trip() {
        let f = Fragment {
            file: Some("run.pickle".into()),
            view: Some(View::AllocatorStateHistory),
            device: Some(1),
            x_steps: Some((120.0, 4500.0)),
            pin: Some("b7f0a2c000000_e3".into()),
            event: Some(77),
            ..Fragment::default()
        };
        let id = |s: &str| s.to_string();
        let text = format(&f, id);
        assert_eq!(
            text,
            "file=run.pickle&view=allocator-state-history&device=1&x=120-4500&pin=b7f0a2c000000_e3&event=77"
        );
        assert_eq!(parse(&format!("#{text}"), id), f);
        // Junk is skipped.
        let g = parse("#view=nope&device=x&x=5-1&pin=zzz&other=1&=&&", id);
        assert_eq!(g, Fragment::default());
        assert_eq!(base_name("a.pickle (2)"), "a.pickle");
        assert_eq!(base_name("a (b).pickle"), "a (b).pickle");
    }

    #[test]
    fn a_new_zoom_window_alone_is_told_apart() {
        let id = |s: &str| s.to_string();
        let f = Fragment {
            file: Some("run.pickle".into()),
            view: Some(View::ActiveMemoryTimeline),
            device: Some(0),
            x_steps: Some((120.0, 4500.0)),
            pin: None,
            event: None,
            ..Fragment::default()
        };
        let written = format(&f, id);
        let zoomed = Fragment { x_steps: Some((130.0, 4000.0)), ..f.clone() };
        assert!(same_but_window(&written, &zoomed, id));
        let full = Fragment { x_steps: None, ..f.clone() };
        assert!(same_but_window(&written, &full, id));
        let pinned = Fragment { pin: Some("b7f0a2c000000_e3".into()), ..zoomed };
        assert!(!same_but_window(&written, &pinned, id));
        let other_view = Fragment { view: Some(View::AllocatorStateHistory), ..f.clone() };
        assert!(!same_but_window(&written, &other_view, id));
        assert!(!same_but_window("", &f, id));
    }
}
