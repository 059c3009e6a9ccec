//! The Live set tab: what is live at a moment (the peak unless the user picks another), by the
//! chosen grouping (the user's line unless another is picked), by innermost frame and as a
//! collapsible tree of frames; exports.

use memviz_view::state::PageInput;
use std::fmt::Write;

use memviz_core::analysis::grouping::{self, GroupBy};
use memviz_core::analysis::live::LiveSet;
use memviz_core::analysis::{size_text, Moment};
use memviz_core::describe::utc_time;
use memviz_core::snapshot::Snapshot;

use super::insights::sz;
use memviz_view::state::panels::Action;
use wasm_bindgen::JsCast;

use super::{entry_link, esc, Analysis};
use crate::input::Input;

/// Children shown per tree node at most.
const TREE_CHILDREN: usize = 12;
/// Tree nodes shown at most.
const TREE_NODES: usize = 600;
/// Sites listed at most.
const SITES: usize = 50;

/// Writes the tab.
pub fn html(snap: &Snapshot, a: &Analysis, group_by: &GroupBy, library: &[String], colour_on: bool, s: &mut String) {
    s.push_str("<div class=\"an-actions\"><button type=\"button\" data-act=\"peak\">Peak</button><button type=\"button\" data-act=\"centre\" title=\"The moment at the centre of the visible window\">Window centre</button><span class=\"hint\">or click the timeline</span></div>");
    let Some(l) = &a.live else {
        s.push_str("<p>No live set at this moment.</p>");
        return;
    };
    // The entry is a link that puts the timeline's cursor there.
    let when = match (l.moment, l.row) {
        (Moment::Peak, Some(r)) => format!("At the peak, after {}", entry_link(r, &format!("entry {r}"))),
        (Moment::Peak, None) | (Moment::Start, _) => "Before the first entry".to_string(),
        (_, Some(r)) => format!("After {}", entry_link(r, &format!("entry {r}"))),
        (_, None) => "Before the first entry".to_string(),
    };
    let time = l.time_us.map_or(String::new(), |t| format!(" ({})", esc(&utc_time(t))));
    let _ = write!(
        s,
        "<p class=\"an-live-head\" data-row=\"{}\" data-total-bytes=\"{}\" data-count=\"{}\">{when}{time}: <b>{}</b> in {}</p>",
        l.row.map_or(-1, i64::from),
        l.total_bytes,
        l.count,
        esc(&sz(l.total_bytes)),
        memviz_view::entries::count(l.count, if l.count == 1 { "allocation" } else { "allocations" })
    );
    s.push_str("<div class=\"an-actions\">Export: <button type=\"button\" data-act=\"csv\">CSV</button><button type=\"button\" data-act=\"json\">JSON</button><button type=\"button\" data-act=\"speedscope\">speedscope</button><button type=\"button\" data-act=\"png\" title=\"The timeline as shown\">PNG</button></div>");
    groups_html(snap, a, group_by, library, s);
    super::colour_by::legend_html(a, colour_on, s);
    s.push_str("<h3>By innermost frame</h3><table class=\"an-table an-nums an-sites\"><thead><tr><th class=\"site\">site</th><th class=\"num\">bytes</th><th class=\"num\">count</th></tr></thead><tbody>");
    for (i, g) in l.by_site.iter().enumerate().take(SITES) {
        let _ = write!(
            s,
            "<tr data-act=\"site\" data-i=\"{i}\" data-key=\"site:{i}\" data-bytes=\"{}\" title=\"Click to highlight these allocations\"><td class=\"site\" title=\"{}\">{}</td><td class=\"num\" title=\"{} bytes\">{}</td><td class=\"num\">{}</td></tr>",
            g.bytes,
            esc(&g.label),
            esc(&g.label),
            g.bytes,
            size_text(g.bytes),
            g.count
        );
    }
    if l.by_site.len() > SITES {
        let _ = write!(s, "<tr><td colspan=\"3\">… {} more sites (in the exports)</td></tr>", l.by_site.len() - SITES);
    }
    s.push_str("</tbody></table><h3>By frame</h3>");
    tree_html(snap, l, s);
}

/// The group-by menu and the live set's groups under it, each row a handle on its allocations.
fn groups_html(snap: &Snapshot, a: &Analysis, group_by: &GroupBy, library: &[String], s: &mut String) {
    let (Some(g), Some(l)) = (&a.grouping, &a.live) else { return };
    s.push_str("<h3 class=\"an-group-head\">By <select data-act=\"group-by\" title=\"Group the live allocations by\">");
    for (k, c) in grouping::choices(snap, a.replay.device_pos).iter().enumerate() {
        let _ = write!(
            s,
            "<option value=\"{k}\" data-by=\"{}\"{}>{}</option>",
            esc(&c.slug()),
            if c == group_by { " selected" } else { "" },
            esc(&c.title())
        );
    }
    s.push_str("</select></h3>");
    if *group_by == GroupBy::UserLine {
        // What else is not the user's code (`memviz live --library` on the command line).
        let _ = write!(
            s,
            "<p class=\"an-library\"><label>Also not my code: <input type=\"text\" data-act=\"library\" value=\"{}\" placeholder=\"path fragments, e.g. mylib/\" title=\"Files whose path holds one of these (comma-separated) are skipped, as torch and installed packages are, to find your line\" spellcheck=\"false\"></label></p>",
            esc(&library.join(", "))
        );
    }
    let _ = write!(
        s,
        "<table class=\"an-table an-nums an-groups\" data-by=\"{}\"><thead><tr><th class=\"site\">{}</th><th class=\"num\">bytes</th><th class=\"num\">count</th></tr></thead><tbody>",
        esc(&g.by.slug()),
        esc(&g.by.title())
    );
    for (i, t) in a.live_groups.iter().enumerate().take(SITES) {
        let label = g.labels.get(t.group as usize);
        let text = label.map_or_else(String::new, |l| l.text());
        let value =
            label.and_then(|l| l.value.as_deref()).map_or(String::new(), |v| format!(" data-value=\"{}\"", esc(v)));
        let _ = write!(
            s,
            "<tr data-act=\"group\" data-i=\"{i}\" data-key=\"group:{i}\" data-bytes=\"{}\" data-count=\"{}\"{value} title=\"Click to highlight these allocations\"><td class=\"site\" title=\"{}\">{}</td><td class=\"num\" title=\"{} bytes\">{}</td><td class=\"num\">{}</td></tr>",
            t.bytes,
            t.allocations,
            esc(&text),
            esc(&text),
            t.bytes,
            size_text(t.bytes),
            t.allocations
        );
    }
    if a.live_groups.len() > SITES {
        let _ = write!(s, "<tr><td colspan=\"3\">… {} more groups</td></tr>", a.live_groups.len() - SITES);
    }
    let _ = l;
    s.push_str("</tbody></table>");
}

/// The group-by menu's choice, from a `change` event in the panel.
pub fn group_by_choice(e: &web_sys::Event) -> Option<Input> {
    let target = e.target()?;
    if let Some(input) = target.dyn_ref::<web_sys::HtmlInputElement>() {
        return (input.get_attribute("data-act").as_deref() == Some("library"))
            .then(|| Input::Page(PageInput::Library(input.value())));
    }
    let el: web_sys::HtmlSelectElement = target.dyn_into().ok()?;
    if el.get_attribute("data-act").as_deref() != Some("group-by") {
        return None;
    }
    Some(Input::Page(PageInput::Analysis(Action::GroupBy(el.value().parse().ok()?))))
}

/// The tree as nested `<details>`, built without recursion.
fn tree_html(snap: &Snapshot, l: &LiveSet, s: &mut String) {
    let total = l.total_bytes.max(1);
    let min_bytes = total / 200;
    // (node, whether its children are written: then the closing tag is due).
    let mut todo: Vec<(u32, bool)> = vec![(0, false)];
    let mut shown = 0usize;
    s.push_str("<div class=\"an-tree\">");
    while let Some((n, closing)) = todo.pop() {
        if closing {
            s.push_str("</details>");
            continue;
        }
        let Some(node) = l.tree.nodes.get(n as usize) else {
            continue;
        };
        shown += 1;
        let pct = node.bytes as f64 * 100.0 / total as f64;
        let kids: Vec<u32> = node
            .children
            .iter()
            .copied()
            .filter(|&c| l.tree.nodes.get(c as usize).is_some_and(|k| k.bytes >= min_bytes))
            .take(TREE_CHILDREN)
            .collect();
        let open = if node.depth < 2 { " open" } else { "" };
        let label = esc(&l.tree.label(snap, n));
        let _ = write!(
            s,
            "<details{open}><summary data-act=\"node\" data-i=\"{n}\" data-key=\"node:{n}\"><span class=\"t-row\"><progress class=\"bar\" max=\"100\" value=\"{:.1}\"></progress><span class=\"t-label\" title=\"{label}\">{label}</span> <span class=\"muted t-bytes\">{} · {} · {:.1}%</span></span></summary>",
            pct.clamp(0.0, 100.0),
            size_text(node.bytes),
            node.count,
            pct
        );
        todo.push((n, true));
        if shown < TREE_NODES {
            for &c in kids.iter().rev() {
                todo.push((c, false));
            }
        }
    }
    s.push_str("</div>");
}
