//! [`ViewState::apply`]: each input's change of the state and the effects it asks for.

use super::*;
use crate::state::panels::Tab;
use crate::theme::ThemeChoice;

static DEMO: &[u8] = include_bytes!("../../../../tests/data/real/gpt_amp_annotated.pickle");
static OOM: &[u8] = include_bytes!("../../../../tests/data/synth/oom.pickle");

fn two_files() -> ViewState {
    let mut s = crate::test_state::open_state(DEMO, "demo.pickle", 15_000, (1000.0, 60.0));
    let other = crate::test_state::open_state(OOM, "oom.pickle", 15_000, (1000.0, 60.0)).files.remove(0);
    s.push_file(other, Some("oom|1|0".into()), false);
    s
}

#[test]
fn files_are_shown_closed_and_read_again_through_effects() {
    let mut s = two_files();
    assert_eq!(s.apply(PageInput::SelectFile(1), 0.0), [Effect::FileShown]);
    assert_eq!(s.current, Some(1));
    assert!(s.apply(PageInput::SelectFile(1), 0.0).is_empty(), "shown already");
    assert!(s.apply(PageInput::SelectFile(7), 0.0).is_empty(), "no such file");
    assert_eq!(s.apply(PageInput::CloseFile, 0.0), [Effect::FileClosed]);
    assert_eq!((s.files.len(), s.current), (1, Some(0)));
    assert!(s.apply(PageInput::ReopenFile(0), 0.0).is_empty(), "nothing released");
    s.released.push(crate::state::ReleasedFile { name: "x".into(), source: "x|1|0".into() });
    assert_eq!(s.apply(PageInput::ReopenFile(0), 0.0), [Effect::ReadAgain(0)]);
    assert_eq!(s.apply(PageInput::CloseFile, 0.0), [Effect::FileClosed]);
    assert!(s.apply(PageInput::CloseFile, 0.0).is_empty(), "no file left");
}

#[test]
fn device_and_detail_lay_out_again_only_when_they_change() {
    let mut s = two_files();
    let n = s.file().map_or(0, |f| f.max_entries);
    assert!(s.apply(PageInput::SetDetail(n), 0.0).is_empty());
    assert_eq!(s.apply(PageInput::PreviewDetail(5), 0.0), []);
    assert_eq!(s.detail_preview, Some(5));
    assert_eq!(s.apply(PageInput::SetDetail(5), 0.0), [Effect::LayOut { device: None, detail: Some(5) }]);
    assert_eq!(s.detail_preview, None);
    let d = s.file().map_or(0, |f| f.plot.device_pos);
    assert!(s.apply(PageInput::SelectDevice(d), 0.0).is_empty(), "the device shown");
    assert!(s.apply(PageInput::SelectDevice(99), 0.0).is_empty(), "no such device");
}

#[test]
fn search_theme_fold_and_chrome() {
    let mut s = two_files();
    let boxes = SearchBoxes { frame: "forward".into(), ..SearchBoxes::default() };
    s.apply(PageInput::Search(boxes.clone()), 0.0);
    assert_eq!(s.search, boxes.query());
    assert_eq!(s.search_boxes, boxes);
    s.theme.choice = ThemeChoice::Auto;
    s.theme.system_dark = false;
    assert_eq!(s.apply(PageInput::CycleTheme, 0.0), [Effect::KeepTheme], "auto (light) to light: same colours");
    assert_eq!(s.apply(PageInput::CycleTheme, 0.0), [Effect::KeepTheme, Effect::ThemeChanged]);
    assert!(s.apply(PageInput::SystemTheme(true), 0.0).is_empty(), "a chosen theme ignores the system's");
    assert_eq!(s.apply(PageInput::ToggleStack, 0.0), [Effect::KeepStackFold]);
    assert!(s.stack_collapsed);
    s.error = Some("bad".into());
    s.apply(PageInput::DismissError, 0.0);
    assert_eq!(s.error, None);
    s.apply(PageInput::DragHover(true), 0.0);
    assert!(s.drag_hover);
    assert_eq!(s.apply(PageInput::CancelLoad, 0.0), [Effect::CancelLoad]);
}

#[test]
fn views_panels_and_runs() {
    let mut s = two_files();
    assert_eq!(s.apply(PageInput::SelectView(View::FlameGraph), 0.0), [Effect::ViewShown { relayout: false }]);
    assert_eq!(s.view, View::FlameGraph);
    assert_eq!(
        s.apply(PageInput::SelectView(View::ActiveCachedSegmentTimeline), 0.0),
        [Effect::ViewShown { relayout: true }]
    );
    s.apply(PageInput::Analysis(Action::Toggle), 0.0);
    s.apply(PageInput::Analysis(Action::Tab(Tab::Live)), 0.0);
    assert!(s.analysis.open);
    assert_eq!(s.analysis.tab, Tab::Live);
    let h = PanelInput::PoolPointer(Some((1.0, 2.0)));
    assert_eq!(s.apply(PageInput::PoolPointer(Some((1.0, 2.0))), 0.0), [Effect::Panel(h)]);
    assert_eq!(s.apply(PageInput::FocusRank(3), 0.0), [Effect::FocusRank(3)]);
    assert_eq!(s.apply(PageInput::CompareRank(3), 0.0), [Effect::CompareRank(3)]);
    assert_eq!(s.apply(PageInput::ToggleOverview, 0.0), [Effect::LayoutChanged]);
}
