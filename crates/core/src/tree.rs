//! A small owned value tree for the parts of a snapshot that have no fixed schema
//! (`allocator_settings`, unusual trace entries), bounded in depth and size so that dropping or
//! printing one never recurses deeply.

use crate::pickle::{Document, Value};

/// Deepest nesting kept; deeper values become [`Tree::Elided`].
pub const MAX_DEPTH: usize = 48;
/// Most nodes kept in one tree; the rest become [`Tree::Elided`].
pub const MAX_NODES: usize = 200_000;

/// An owned Python value.
#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    /// `None`.
    None,
    /// `bool`.
    Bool(bool),
    /// `int` (any value up to 128 bits).
    Int(i128),
    /// `int` beyond 128 bits, as decimal text.
    BigInt(String),
    /// `float`.
    Float(f64),
    /// `str`.
    Str(String),
    /// `bytes`.
    Bytes(Vec<u8>),
    /// `list`.
    List(Vec<Tree>),
    /// `tuple`.
    Tuple(Vec<Tree>),
    /// `dict`, in insertion order.
    Dict(Vec<(Tree, Tree)>),
    /// `set`.
    Set(Vec<Tree>),
    /// `frozenset`.
    FrozenSet(Vec<Tree>),
    /// A list of frames, kept as an id into the snapshot's stack table.
    Stack(u32),
    /// Left out: too deep or too large.
    Elided,
}

impl Tree {
    /// The dict value for a string key.
    pub fn get(&self, key: &str) -> Option<&Tree> {
        match self {
            Tree::Dict(items) => items.iter().find(|(k, _)| matches!(k, Tree::Str(s) if s == key)).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The integer value, if this is an int.
    pub fn as_int(&self) -> Option<i128> {
        match self {
            Tree::Int(i) => Some(*i),
            Tree::Bool(b) => Some(i128::from(*b)),
            _ => None,
        }
    }
}

/// Converts a document value to a tree. `stack_of` may turn a frame list into [`Tree::Stack`].
pub fn from_value(doc: &Document, root: Value, stack_of: &mut dyn FnMut(Value) -> Option<u32>) -> Tree {
    let mut budget = MAX_NODES;
    convert(doc, root, 0, &mut budget, stack_of)
}

/// [`from_value`] with at most `*budget` nodes (and never more than [`MAX_NODES`]); the nodes made
/// are taken off `*budget`.
pub fn from_value_budgeted(
    doc: &Document,
    root: Value,
    budget: &mut usize,
    stack_of: &mut dyn FnMut(Value) -> Option<u32>,
) -> Tree {
    let mut b = (*budget).min(MAX_NODES);
    let start = b;
    let t = convert(doc, root, 0, &mut b, stack_of);
    *budget -= start - b;
    t
}

fn convert(
    doc: &Document,
    v: Value,
    depth: usize,
    budget: &mut usize,
    stack_of: &mut dyn FnMut(Value) -> Option<u32>,
) -> Tree {
    if *budget == 0 || depth > MAX_DEPTH {
        return Tree::Elided;
    }
    *budget -= 1;
    match v {
        Value::None => Tree::None,
        Value::Bool(b) => Tree::Bool(b),
        Value::Int(i) => Tree::Int(i128::from(i)),
        Value::UInt(u) => Tree::Int(i128::from(u)),
        Value::BigInt(i) => big_to_tree(doc.bigints.get(i as usize).map_or(&[][..], |b| b)),
        Value::Float(f) => Tree::Float(f),
        Value::Str(s) => Tree::Str(doc.str(s).to_owned()),
        Value::Bytes(b) => Tree::Bytes(doc.bytes(b).to_vec()),
        Value::List(_) => {
            if let Some(id) = stack_of(v) {
                return Tree::Stack(id);
            }
            Tree::List(doc.items(v).iter().map(|x| convert(doc, x, depth + 1, budget, stack_of)).collect())
        }
        Value::Tuple(_) => {
            Tree::Tuple(doc.items(v).iter().map(|x| convert(doc, x, depth + 1, budget, stack_of)).collect())
        }
        Value::Set(_) => Tree::Set(doc.items(v).iter().map(|x| convert(doc, x, depth + 1, budget, stack_of)).collect()),
        Value::FrozenSet(_) => {
            Tree::FrozenSet(doc.items(v).iter().map(|x| convert(doc, x, depth + 1, budget, stack_of)).collect())
        }
        Value::Dict(_) => Tree::Dict(
            doc.dict_iter(v)
                .map(|(k, x)| {
                    let key = convert(doc, k, depth + 1, budget, stack_of);
                    let mut no_stack = |_: Value| None;
                    let val = if matches!(&key, Tree::Str(s) if s == "frames") {
                        convert(doc, x, depth + 1, budget, stack_of)
                    } else {
                        convert(doc, x, depth + 1, budget, &mut no_stack)
                    };
                    (key, val)
                })
                .collect(),
        ),
    }
}

fn big_to_tree(le: &[u8]) -> Tree {
    if le.len() <= 16 {
        let negative = le.last().is_some_and(|&b| b & 0x80 != 0);
        let mut bytes = if negative { [0xffu8; 16] } else { [0u8; 16] };
        bytes[..le.len()].copy_from_slice(le);
        return Tree::Int(i128::from_le_bytes(bytes));
    }
    Tree::BigInt(bigint_to_decimal(le))
}

/// Integers longer than this many bytes are not converted to decimal (the conversion is quadratic;
/// Python itself refuses to print ints of more than 4300 digits).
pub const MAX_DECIMAL_BYTES: usize = 4096;

/// Decimal text of a little-endian two's complement integer of any size (a placeholder for
/// integers longer than [`MAX_DECIMAL_BYTES`]).
pub fn bigint_to_decimal(le: &[u8]) -> String {
    let negative = le.last().is_some_and(|&b| b & 0x80 != 0);
    if le.len() > MAX_DECIMAL_BYTES {
        return format!("<{}int of {} bits>", if negative { "negative " } else { "" }, le.len() * 8);
    }
    let mut mag: Vec<u8> = le.to_vec();
    if negative {
        let mut carry = 1u16;
        for b in &mut mag {
            let x = u16::from(!*b) + carry;
            *b = (x & 0xff) as u8;
            carry = x >> 8;
        }
    }
    // Repeated division by 10 over big-endian digits.
    let mut be: Vec<u8> = mag.into_iter().rev().collect();
    let mut digits = Vec::new();
    while be.iter().any(|&b| b != 0) {
        let mut rem = 0u32;
        for b in &mut be {
            let cur = (rem << 8) | u32::from(*b);
            *b = (cur / 10) as u8;
            rem = cur % 10;
        }
        digits.push(b'0' + rem as u8);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    if negative {
        digits.push(b'-');
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}
