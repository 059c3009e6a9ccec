use super::*;

fn p(bytes: &[u8]) -> Result<Document, Error> {
    parse(bytes)
}

#[test]
fn reads_small_protocol_4_dict() {
    // pickle.dumps({'a': [1, 2], 'b': (None, True)}, protocol=4)
    let b =
        b"\x80\x04\x95\x19\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(K\x01K\x02e\x8c\x01b\x94N\x88\x86\x94u.";
    let d = p(b).expect("parses");
    let root = d.root();
    assert_eq!(d.dict_len(root), 2);
    let a = d.get(root, "a").expect("a");
    assert_eq!(d.items(a).to_vec(), vec![Value::Int(1), Value::Int(2)]);
    let bv = d.get(root, "b").expect("b");
    assert_eq!(d.items(bv).to_vec(), vec![Value::None, Value::Bool(true)]);
}

#[test]
fn refuses_reduce_with_offset() {
    let b = b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.";
    match p(b) {
        Err(Error::ForbiddenOpcode { name, offset, .. }) => {
            assert_eq!(name, "GLOBAL");
            assert_eq!(offset, 2);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn chunked_equals_whole() {
    let b =
        b"\x80\x04\x95\x19\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(K\x01K\x02e\x8c\x01b\x94N\x88\x86\x94u.";
    for cut in 1..b.len() {
        let mut ps = Parser::new();
        ps.feed(&b[..cut]).expect("feed");
        ps.feed(&b[cut..]).expect("feed");
        let d = ps.finish().expect("finish");
        assert_eq!(d.dict_len(d.root()), 2);
    }
}

#[test]
fn truncation_reports_declared_length() {
    let b = b"\x80\x04X\x00\x01\x00\x00abc";
    match p(b) {
        Err(Error::Truncated { declared: Some(256), .. }) => {}
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn big_and_negative_longs() {
    // 2**63 + 5 as LONG1 (9 bytes), -1 as LONG1, 2**70 as LONG1
    let b = b"\x80\x02]q\x00(\x8a\x09\x05\x00\x00\x00\x00\x00\x00\x80\x00\x8a\x01\xff\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40e.";
    let d = p(b).expect("parses");
    let items = d.items(d.root()).to_vec();
    assert_eq!(items[0], Value::UInt((1u64 << 63) + 5));
    assert_eq!(items[1], Value::Int(-1));
    assert!(matches!(items[2], Value::BigInt(_)));
}

#[test]
fn memo_index_bomb_is_cheap() {
    // LONG_BINPUT 0xffffffff then LONG_BINGET of it.
    let b = b"\x80\x02]r\xff\xff\xff\xffj\xff\xff\xff\xff\x86.";
    let d = p(b).expect("parses");
    assert_eq!(d.items(d.root()).len(), 2);
}

#[test]
fn deep_nesting_does_not_recurse() {
    let mut b = vec![0x80, 2];
    let n = 200_000;
    b.resize(b.len() + n, b']');
    b.resize(b.len() + n - 1, b'a');
    b.push(b'.');
    let d = p(&b).expect("parses");
    drop(d);
}

#[test]
fn protocol_0_text_opcodes() {
    // pickle.dumps({'k': [1, 2.5, 'x', 10**20, True]}, protocol=0)
    let b = b"(dp0\nVk\np1\n(lp2\nI1\naF2.5\naVx\np3\naL100000000000000000000L\naI01\nas.";
    let d = p(b).expect("parses");
    let l = d.get(d.root(), "k").expect("k");
    let items = d.items(l).to_vec();
    assert_eq!(items[0], Value::Int(1));
    assert_eq!(items[1], Value::Float(2.5));
    assert_eq!(d.as_str(items[2]), Some("x"));
    assert!(matches!(items[3], Value::BigInt(_)));
    assert_eq!(items[4], Value::Bool(true));
}

#[test]
fn duplicate_keys_last_wins() {
    // {'a': 1, 'a': 2} via SETITEMS with duplicate keys
    let b = b"\x80\x02}(X\x01\x00\x00\x00aK\x01X\x01\x00\x00\x00aK\x02u.";
    let d = p(b).expect("parses");
    assert_eq!(d.dict_len(d.root()), 1);
    assert_eq!(d.get(d.root(), "a"), Some(Value::Int(2)));
}
