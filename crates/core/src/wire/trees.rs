//! [`Wire`](super::Wire) for [`Tree`]: one tag byte per node, never deeper than the model holds.

use crate::tree::Tree;

use super::codec::{Decoder, Encoder, Wire};
use super::{err, WireError, MAX_TREE_DEPTH};

// Trees: one tag byte per node, at most MAX_TREE_DEPTH deep.
pub(super) const T_NONE: u8 = 0;
const T_BOOL: u8 = 1;
const T_INT: u8 = 2;
const T_BIGINT: u8 = 3;
const T_FLOAT: u8 = 4;
const T_STR: u8 = 5;
const T_BYTES: u8 = 6;
pub(super) const T_LIST: u8 = 7;
const T_TUPLE: u8 = 8;
const T_DICT: u8 = 9;
const T_SET: u8 = 10;
const T_FROZENSET: u8 = 11;
const T_STACK: u8 = 12;
const T_ELIDED: u8 = 13;

fn put_items(e: &mut Encoder<'_>, tag: u8, items: &[Tree]) {
    e.head.push(tag);
    e.len(items.len());
    for x in items {
        x.put(e);
    }
}

impl Wire for Tree {
    fn put(&self, e: &mut Encoder<'_>) {
        match self {
            Tree::None => e.head.push(T_NONE),
            Tree::Bool(b) => {
                e.head.push(T_BOOL);
                b.put(e);
            }
            Tree::Int(i) => {
                e.head.push(T_INT);
                i.put(e);
            }
            Tree::BigInt(s) => {
                e.head.push(T_BIGINT);
                s.put(e);
            }
            Tree::Float(f) => {
                e.head.push(T_FLOAT);
                f.put(e);
            }
            Tree::Str(s) => {
                e.head.push(T_STR);
                s.put(e);
            }
            Tree::Bytes(b) => {
                e.head.push(T_BYTES);
                e.len(b.len());
                e.bytes(b);
            }
            Tree::List(v) => put_items(e, T_LIST, v),
            Tree::Tuple(v) => put_items(e, T_TUPLE, v),
            Tree::Set(v) => put_items(e, T_SET, v),
            Tree::FrozenSet(v) => put_items(e, T_FROZENSET, v),
            Tree::Dict(kv) => {
                e.head.push(T_DICT);
                e.len(kv.len());
                for (k, v) in kv {
                    k.put(e);
                    v.put(e);
                }
            }
            Tree::Stack(id) => {
                e.head.push(T_STACK);
                id.put(e);
            }
            Tree::Elided => e.head.push(T_ELIDED),
        }
    }

    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        if d.depth >= MAX_TREE_DEPTH {
            return err("a tree is deeper than the model allows");
        }
        d.depth += 1;
        let t = tree_node(d);
        d.depth -= 1;
        t
    }
}

fn tree_items(d: &mut Decoder<'_>) -> Result<Vec<Tree>, WireError> {
    let n = d.count(1)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(<Tree as Wire>::get(d)?);
    }
    Ok(v)
}

fn tree_node(d: &mut Decoder<'_>) -> Result<Tree, WireError> {
    let tag: u8 = d.get()?;
    Ok(match tag {
        T_NONE => Tree::None,
        T_BOOL => Tree::Bool(d.get()?),
        T_INT => Tree::Int(d.get()?),
        T_BIGINT => Tree::BigInt(d.get()?),
        T_FLOAT => Tree::Float(d.get()?),
        T_STR => Tree::Str(d.get()?),
        T_BYTES => {
            let n = d.count(1)?;
            Tree::Bytes(d.take(n)?.to_vec())
        }
        T_LIST => Tree::List(tree_items(d)?),
        T_TUPLE => Tree::Tuple(tree_items(d)?),
        T_SET => Tree::Set(tree_items(d)?),
        T_FROZENSET => Tree::FrozenSet(tree_items(d)?),
        T_DICT => {
            let n = d.count(2)?;
            let mut kv = Vec::with_capacity(n);
            for _ in 0..n {
                let k = <Tree as Wire>::get(d)?;
                let v = <Tree as Wire>::get(d)?;
                kv.push((k, v));
            }
            Tree::Dict(kv)
        }
        T_STACK => Tree::Stack(d.get()?),
        T_ELIDED => Tree::Elided,
        _ => return err(format!("bad tree tag {tag}")),
    })
}
