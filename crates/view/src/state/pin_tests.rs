//! Tests of the pin by key ([`super`]): its URL text, and that it follows its allocation through
//! Detail, hide freed, a view of another mode and back, and never to another lifetime of its
//! address.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use memviz_core::plot::PlotData;
use memviz_core::timeline::{ElementIndex, ElementKey, Mode, Options};

use super::{parse_pin, pin_text};
use crate::state::{Target, TimelineInput, ViewState};

static REUSE: &[u8] = include_bytes!("../../../../tests/data/synth/segment_reuse.pickle");
static DEMO: &[u8] = include_bytes!("../../../../tests/data/real/gpt_amp_annotated.pickle");

fn state_with(bytes: &[u8]) -> ViewState {
    crate::test_state::open_state(bytes, "x.pickle", 15_000, ViewState::default().minimap_css)
}

fn relayout(s: &mut ViewState, options: Options) {
    let f = s.file().unwrap();
    let plot = PlotData::build(&f.snap, f.plot.device_pos, options);
    s.set_plot(plot);
}

fn pinned_key(s: &ViewState) -> Option<ElementKey> {
    match s.pinned {
        Some(Target::Element(e)) => s.file().unwrap().plot.layout.element_key(e),
        _ => None,
    }
}

/// Two lifetimes of one address: (earlier element, later element).
fn reused(s: &ViewState) -> (u32, u32) {
    let els = &s.file().unwrap().plot.layout.elements;
    for (j, b) in els.iter().enumerate() {
        if let Some(i) = els[..j].iter().position(|a| a.addr == b.addr && a.alloc_row.is_some()) {
            if b.alloc_row.is_some() {
                return (i as u32, j as u32);
            }
        }
    }
    panic!("segment_reuse.pickle reuses no address");
}

#[test]
fn pin_texts_round_trip_and_reject_other_text() {
    for k in [
        ElementKey::new(0x7f0a_2c00_0000, Some(3), Some(9)),
        ElementKey::new(0x10, None, Some(4)),
        ElementKey::new(u64::MAX, None, None),
    ] {
        assert_eq!(parse_pin(&pin_text(k)), Some(k), "{}", pin_text(k));
    }
    assert_eq!(pin_text(ElementKey::new(0xab, Some(7), None)), "bab_e7");
    assert_eq!(pin_text(ElementKey::new(0xab, None, Some(2))), "bab_p2");
    assert_eq!(pin_text(ElementKey::new(0xab, None, None)), "bab_g");
    // The older address label (`b<addr>_<version>`) is no key; nor is junk.
    for bad in ["b7f00_3", "bzz_e1", "b10_e", "b10_ex", "b10_g1", "s10_e1", "b10", "", "b_e1", "b10_q4"] {
        assert_eq!(parse_pin(bad), None, "{bad}");
    }
}

#[test]
fn a_pin_keeps_its_lifetime_at_a_reused_address_through_relayouts() {
    let mut s = state_with(REUSE);
    let (first, later) = reused(&s);
    let key = s.file().unwrap().plot.layout.element_key(ElementIndex::new(later)).unwrap();
    assert_ne!(
        Some(key),
        s.file().unwrap().plot.layout.element_key(ElementIndex::new(first)),
        "the two lifetimes have two keys"
    );
    s.focus_element(ElementIndex::new(later));
    assert_eq!(pinned_key(&s), Some(key));
    // Detail down to one drawn allocation, hide freed, both back: the same lifetime each time.
    for options in [
        Options { max_entries: 1, ..Options::default() },
        Options { hide_freed: true, ..Options::default() },
        Options { max_entries: 1, hide_freed: true, ..Options::default() },
        Options::default(),
    ] {
        relayout(&mut s, options);
        assert_eq!(s.pin_key(), Some(key), "{options:?}");
        if let Some(e) = s.file().unwrap().plot.layout.element_by_key(key) {
            assert_eq!(s.pinned, Some(Target::Element(e)), "{options:?}");
            assert_eq!(s.file().unwrap().plot.layout.elements[e.as_usize()].addr, key.addr);
        } else {
            assert_eq!(s.pinned, None, "{options:?}: not in this layout, remembered");
        }
    }
    assert_eq!(pinned_key(&s), Some(key));
    // The segment timeline has no such allocation: nothing pinned there, pinned again after.
    relayout(&mut s, Options { mode: Mode::Segments, ..Options::default() });
    assert_eq!(s.pinned, None);
    assert_eq!(s.pin_key(), Some(key), "remembered while the segments are shown");
    relayout(&mut s, Options::default());
    assert_eq!(pinned_key(&s), Some(key), "pinned again on the way back");
    // Unpinning forgets the key too.
    relayout(&mut s, Options { mode: Mode::Segments, ..Options::default() });
    s.update(TimelineInput::Unpin, 0.0);
    relayout(&mut s, Options::default());
    assert_eq!(s.pinned, None);
    assert_eq!(s.pin_key(), None);
}

#[test]
fn the_url_pin_names_the_key_and_restores_it() {
    let mut s = state_with(REUSE);
    let (_, later) = reused(&s);
    s.focus_element(ElementIndex::new(later));
    let text = pin_text(s.pin_key().unwrap());
    let el = &s.file().unwrap().plot.layout.elements[later as usize];
    assert_eq!(text, format!("b{:x}_e{}", el.addr, el.alloc_row.unwrap()));
    // A fresh state (a reload) pins the same lifetime from the text.
    let mut t = state_with(REUSE);
    t.repin(parse_pin(&text).unwrap());
    assert_eq!(t.pinned, Some(Target::Element(ElementIndex::new(later))));
    // A key no layout has is remembered, not pinned.
    t.repin(ElementKey::new(1, Some(u32::MAX), None));
    assert_eq!(t.pinned, None);
    assert!(t.pin_key().is_some());
}

#[test]
fn another_device_or_file_unpins_and_marks_survive_a_relayout() {
    let mut s = state_with(DEMO);
    let e = (0..s.file().unwrap().plot.layout.elements.len() as u32)
        .find(|&e| s.file().unwrap().plot.layout.elements[e as usize].band.is_some())
        .unwrap();
    s.focus_element(ElementIndex::new(e));
    let f = s.file().unwrap();
    let mut other = PlotData::build(&f.snap, f.plot.device_pos, Options::default());
    other.device_pos += 1;
    s.set_plot(other);
    assert_eq!((s.pinned, s.pin_key()), (None, None), "another device: nothing of it is pinned");
    // A pinned annotation stays through a new Detail (its index does not depend on the layout).
    let mut s = state_with(DEMO);
    if !s.file().unwrap().plot.annotations.is_empty() {
        relayout(&mut s, Options::default());
        s.set_pin(Some(Target::Annotation(0)));
        relayout(&mut s, Options { max_entries: 10, ..Options::default() });
        assert_eq!(s.pinned, Some(Target::Annotation(0)));
    }
    s.set_pin(Some(Target::Summarized));
    relayout(&mut s, Options::default());
    assert_eq!(s.pinned, None, "the summarized band is another set of allocations now");
}
