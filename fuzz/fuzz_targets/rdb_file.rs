//! The RDB Reader over arbitrary bytes, with the checksum check off so mutations reach
//! the decoders. Every key read must survive a DUMP round trip; when the whole input
//! reads, its keys written again with the Writer must read back the same. A reader that
//! leaves packed values for later must find the same values and the same first error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_rdb::{
    dump, restore, DecodeSpace, Entry, Item, RdbValue, Reader, WriteOptions, Writer,
};

/// The values of `data`'s keys up to the first error, packed ones decoded as they come
/// (reusing one space) when `defer`.
fn values(data: &[u8], defer: bool) -> Result<Vec<RdbValue>, String> {
    let mut reader = Reader::new(data).map_err(|e| e.to_string())?;
    reader.set_verify_checksum(false);
    reader.set_defer_packed(defer);
    let mut space = DecodeSpace::default();
    let mut out = Vec::new();
    for item in reader {
        if let Item::Key(e) = item.map_err(|e| e.to_string())? {
            match e.value {
                RdbValue::Packed(p) => {
                    let v = p.decode_in(&mut space).map_err(|e| e.to_string())?;
                    out.push(v.clone());
                    space.recycle(v);
                }
                v => out.push(v),
            }
        }
    }
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    assert_eq!(values(data, false), values(data, true));
    let Ok(mut reader) = Reader::new(data) else {
        return;
    };
    reader.set_verify_checksum(false);
    let mut keys: Vec<Entry> = Vec::new();
    let mut complete = true;
    for item in reader.by_ref() {
        match item {
            Ok(Item::Key(e)) => {
                let again = match restore(&dump(&e.value)) {
                    Ok(v) => v,
                    Err(err) => panic!("re-encoded value refused: {err:?}\nvalue: {:?}", e.value),
                };
                assert!(again.normalized() == e.value.clone().normalized());
                keys.push(e);
            }
            Ok(_) => {}
            Err(_) => {
                complete = false;
                break;
            }
        }
    }
    if !complete {
        return;
    }
    let mut w = match Writer::new(Vec::new(), WriteOptions::default()) {
        Ok(w) => w,
        Err(e) => panic!("writing to a Vec failed: {e}"),
    };
    let mut db = None;
    for e in &keys {
        if db != Some(e.db) {
            db = Some(e.db);
            w.select_db(e.db, 0, 0).expect("write");
        }
        w.key(&e.key, &e.value, &e.meta).expect("write");
    }
    let file = w.finish().expect("write");
    let back: Vec<Item> = match Reader::new(&file[..]).and_then(|r| r.collect()) {
        Ok(items) => items,
        Err(err) => panic!("rewritten file refused: {err}"),
    };
    let back: Vec<Entry> = back
        .into_iter()
        .filter_map(|i| if let Item::Key(e) = i { Some(e) } else { None })
        .collect();
    assert_eq!(back.len(), keys.len());
    for (a, b) in keys.into_iter().zip(back) {
        assert_eq!((a.db, &a.key, a.meta), (b.db, &b.key, b.meta));
        assert!(a.value.normalized() == b.value.normalized());
    }
});
