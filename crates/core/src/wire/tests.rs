use super::trees::{T_LIST, T_NONE};
use super::*;
use crate::tree::Tree;

fn round<T: Wire + PartialEq + std::fmt::Debug>(v: &T) {
    let (head, parts) = encode(v);
    let back: T = decode(&head, &mut PartList::new(parts)).unwrap();
    assert_eq!(&back, v);
}

#[test]
fn values_round_trip() {
    round(&0u8);
    round(&u64::MAX);
    round(&i128::MIN);
    round(&-0.5f64);
    round(&"héllo".to_string());
    round(&Some(vec![1u32, 2, 3]));
    round(&Option::<u32>::None);
    round(&vec![(1u32, 2u64), (3, 4)]);
    round(&vec![true, false, true]);
    let big: Vec<u64> = (0..100_000).collect();
    round(&big);
    let t = Tree::Dict(vec![
        (Tree::Str("a".into()), Tree::List(vec![Tree::Int(-1), Tree::BigInt("1".repeat(50)), Tree::None])),
        (Tree::Bytes(vec![0, 255]), Tree::Tuple(vec![Tree::Float(1.5), Tree::Stack(7), Tree::Elided])),
        (Tree::Bool(true), Tree::FrozenSet(vec![Tree::Set(vec![])])),
    ]);
    round(&t);
}

#[test]
fn big_columns_travel_as_parts() {
    let big: Vec<u64> = (0..100_000).collect();
    let (head, parts) = encode(&(big, vec![1u32, 2]));
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].len(), 800_000);
    assert!(head.len() < 100);
    // A missing or short part is an error, not a panic.
    assert!(decode::<(Vec<u64>, Vec<u32>)>(&head, &mut PartList::new(vec![])).is_err());
    assert!(decode::<(Vec<u64>, Vec<u32>)>(&head, &mut PartList::new(vec![vec![0; 8]])).is_err());
}

#[derive(Default, Debug, PartialEq)]
struct Chunked {
    n: u32,
    v: Vec<u64>,
    w: Vec<u8>,
}
crate::wire_by_field!(Chunked { n } chunked { v, w });

#[test]
fn chunks_append_in_place_and_may_not_outgrow_their_field() {
    let c = Chunked { n: 7, v: (0..50_000u64).map(|k| k * k).collect(), w: (0..50_000u32).map(|k| k as u8).collect() };
    for chunk_bytes in [1, 100, 64 << 10, 1 << 20] {
        let msgs = encode_by_field(&c, chunk_bytes);
        let mut back = Chunked::default();
        for (field, head, parts) in &msgs {
            decode_field(&mut back, *field, head, &mut PartList::new(parts.clone())).unwrap();
        }
        assert_eq!(back, c);
        // One chunk of `v` more than the field holds is refused (in a part or in the head).
        if let Some((field, head, parts)) = msgs.iter().rfind(|m| m.0 == 1) {
            let again = decode_field(&mut back, *field, head, &mut PartList::new(parts.clone()));
            assert!(again.is_err());
        }
    }
}

#[test]
fn damaged_heads_are_errors() {
    let v: Vec<(String, Tree)> = vec![("k".into(), Tree::List(vec![Tree::Int(3); 5]))];
    let (head, _) = encode(&v);
    for cut in 0..head.len() {
        assert!(decode::<Vec<(String, Tree)>>(&head[..cut], &mut PartList::new(vec![])).is_err());
    }
    for i in 0..head.len() {
        let mut h = head.clone();
        h[i] ^= 0xff;
        let _ = decode::<Vec<(String, Tree)>>(&h, &mut PartList::new(vec![]));
    }
    // A huge count is refused before allocating.
    let mut h = vec![0xff; 8];
    h.extend_from_slice(&[0; 8]);
    assert!(decode::<Vec<String>>(&h, &mut PartList::new(vec![])).is_err());
    // Deep trees are refused.
    let mut deep = Vec::new();
    for _ in 0..1000 {
        deep.push(T_LIST);
        deep.extend_from_slice(&1u64.to_le_bytes());
    }
    deep.push(T_NONE);
    assert!(decode::<Tree>(&deep, &mut PartList::new(vec![])).is_err());
}
