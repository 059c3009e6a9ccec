//! File names short enough for a menu: without their endings (`.pickle`, `.json.gz`), cut in
//! the middle (`gpt_amp_annotated` → `gpt_am…notated`), and never so that two names of one menu
//! look the same; the name a file is shown under when its name is taken (`x.pickle (2)`); and
//! source paths as short as still say where they are ([`short_path`]); names in the order a
//! person counts ([`natural_key`]: `rank2` before `rank10`).

/// Endings of snapshot files, left out of a menu's text (a menu's names rarely differ there).
const EXTENSIONS: [&str; 8] = [".pickle", ".pkl", ".json", ".gz", ".zst", ".xz", ".bz2", ".html"];

/// `name` without its snapshot file endings (`x.pickle.gz` → `x`); a name that is nothing
/// but an ending stays whole.
pub fn without_extension(name: &str) -> &str {
    let mut s = name;
    while let Some(e) = EXTENSIONS.iter().find(|e| s.len() > e.len() && s.ends_with(*e)) {
        s = &s[..s.len() - e.len()];
    }
    s
}

/// The text of each name in a menu: [`short_names`] of the names without their endings, the
/// names that read the same that way given their endings back.
pub fn menu_names(names: &[String], max_chars: usize) -> Vec<String> {
    let bare: Vec<String> = names
        .iter()
        .map(|n| {
            let b = without_extension(n);
            let clash = names.iter().any(|m| m != n && without_extension(m) == b);
            if clash {
                n.clone()
            } else {
                b.to_string()
            }
        })
        .collect();
    short_names(&bare, max_chars)
}

/// The name a file opened as `name` is shown under beside the files open as `open`: `name`
/// itself, or `name (N)` when the name is taken (N counting the files of that name, this one
/// included).
pub fn name_beside<'a>(open: impl Iterator<Item = &'a str>, name: &str) -> String {
    let prefix = format!("{name} (");
    let same = open.filter(|g| *g == name || g.starts_with(&prefix)).count();
    if same == 0 {
        name.to_string()
    } else {
        format!("{name} ({})", same + 1)
    }
}

/// `name` in at most `max_chars` characters: its start and its end around `…` (the end keeps
/// a little more, for the suffix and the extension). Names that fit are unchanged.
pub fn middle_ellipsis(name: &str, max_chars: usize) -> String {
    let n = name.chars().count();
    if n <= max_chars || max_chars < 3 {
        return name.to_string();
    }
    let keep = max_chars - 1;
    let head = keep / 2;
    let tail = keep - head;
    let start: String = name.chars().take(head).collect();
    let end: String = name.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

/// Every name in at most `max_chars` characters ([`middle_ellipsis`]), names that would read
/// the same given more until they differ (at worst whole).
pub fn short_names(names: &[String], max_chars: usize) -> Vec<String> {
    let mut limits = vec![max_chars; names.len()];
    let longest = names.iter().map(|s| s.chars().count()).max().unwrap_or(0);
    loop {
        let short: Vec<String> = names.iter().zip(&limits).map(|(s, &m)| middle_ellipsis(s, m)).collect();
        let mut clash = false;
        for i in 0..names.len() {
            let same = (0..names.len()).any(|j| j != i && short[j] == short[i] && names[j] != names[i]);
            if same && limits[i] < longest {
                limits[i] += 2;
                clash = true;
            }
        }
        if !clash {
            return short;
        }
    }
}

/// A path as short as still says where it is: inside an installed package, from the package on
/// (`torch/nn/modules/module.py`); else its last two parts (`project/model.py`).
pub fn short_path(filename: &str) -> &str {
    for marker in ["site-packages/", "dist-packages/"] {
        if let Some(i) = filename.rfind(marker) {
            return &filename[i + marker.len()..];
        }
    }
    let mut cut = filename.rmatch_indices('/').map(|(i, _)| i);
    match (cut.next(), cut.next()) {
        (Some(_), Some(i)) => &filename[i + 1..],
        _ => filename,
    }
}

/// A sort key that puts numbers in names in numeric order (`rank2` before `rank10`).
pub fn natural_key(name: &str) -> Vec<(String, u64)> {
    let mut key = Vec::new();
    let mut text = String::new();
    let mut digits = String::new();
    for c in name.chars().chain(std::iter::once('\0')) {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        if !digits.is_empty() {
            key.push((std::mem::take(&mut text), digits.parse().unwrap_or(u64::MAX)));
            digits.clear();
        }
        if c != '\0' {
            text.push(c);
        }
    }
    key.push((text, 0));
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_in_the_middle() {
        assert_eq!(middle_ellipsis("gpt_amp_annotated.pickle", 20), "gpt_amp_a…ted.pickle");
        assert_eq!(middle_ellipsis("oom.pickle", 20), "oom.pickle");
        assert_eq!(middle_ellipsis("été_été_été_été.pickle", 9), "été_…ckle");
    }

    #[test]
    fn a_taken_name_gets_a_number() {
        let open = ["x.pickle", "x.pickle (2)", "y.pickle"];
        assert_eq!(name_beside(open.iter().copied(), "z.pickle"), "z.pickle");
        assert_eq!(name_beside(open.iter().copied(), "x.pickle"), "x.pickle (3)");
        assert_eq!(name_beside(open.iter().copied(), "y.pickle"), "y.pickle (2)");
    }

    #[test]
    fn menus_leave_the_endings_out_unless_they_tell_names_apart() {
        let names: Vec<String> =
            ["resnet50_fixed.pickle", "trace.json.gz", "run.pickle", "run.json", ".pickle"].map(String::from).to_vec();
        assert_eq!(without_extension("x.pickle.gz"), "x");
        assert_eq!(menu_names(&names, 14), ["resnet50_fixed", "trace", "run.pickle", "run.json", ".pickle"]);
    }

    /// Two names that read the same when cut are given more until they differ; the others stay
    /// short, and one name opened twice reads the same twice.
    #[test]
    fn names_of_one_menu_never_look_the_same() {
        let names: Vec<String> = [
            "snapshot_rank_00_iteration_final.pickle",
            "snapshot_rank_01_iteration_final.pickle",
            "snapshot_rank_00_iteration_final.pickle",
            "gpt_amp_annotated.pickle",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(middle_ellipsis(&names[0], 20), middle_ellipsis(&names[1], 20));
        let short = short_names(&names, 20);
        assert_ne!(short[0], short[1], "{short:?}");
        assert_eq!(short[0], short[2]);
        assert!(short[0].chars().count() < names[0].chars().count(), "{short:?}");
        assert_eq!(short[3], "gpt_amp_a…ted.pickle");
    }

    #[test]
    fn numbers_in_names_sort_by_value() {
        let mut names = vec!["rank10.pickle", "rank2.pickle", "rank1.pickle", "b.pickle", "a10b2", "a10b10", "a9"];
        names.sort_by_key(|n| natural_key(n));
        assert_eq!(names, ["a9", "a10b2", "a10b10", "b.pickle", "rank1.pickle", "rank2.pickle", "rank10.pickle"]);
    }
}
