//! Feeds arbitrary bytes to the decoders of snapshot entries, which also read the tier's
//! records and a replica's full sync: `decode_entries`, and `entry_kind` and `same_entry`,
//! which read only an entry's head (TYPE and SCAN TYPE of cold keys, the crash check of a
//! kept tier). None may panic; the head readers must agree with the full decoder on the
//! first entry; and every entry that decodes must encode again and decode to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_engine::Encodings;
use strata_storage::{decode_entries, encode_value, entry_kind, same_entry};

fuzz_target!(|data: &[u8]| {
    let enc = Encodings::default();
    let mut got = Vec::new();
    let decoded = decode_entries(data, &enc, |db, key, exp, v| got.push((db, key, exp, v)));
    if let Ok(n) = decoded {
        assert_eq!(n as usize, got.len());
    }
    let head = entry_kind(data);
    if let Some((_, _, exp, v)) = got.first() {
        // The first entry decoded, so its head reads, with the same type and expiry.
        assert_eq!(head, Ok((v.kind(), *exp)));
        assert!(same_entry(data, data));
    }
    for (db, key, exp, v) in &got {
        let mut buf = Vec::new();
        encode_value(&mut buf, *db, key, *exp, v);
        let mut back = Vec::new();
        let n = decode_entries(&buf, &enc, |db, key, exp, v| back.push((db, key, exp, v)))
            .expect("an entry encoded again decodes");
        assert_eq!(n, 1);
        assert_eq!(&back[0], &(*db, key.clone(), *exp, v.clone()));
        assert_eq!(entry_kind(&buf), Ok((v.kind(), *exp)));
    }
});
