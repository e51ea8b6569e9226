//! DUMP payloads from arbitrary bytes. The input is checked as a whole payload (footer
//! included), then sealed with a correct version and CRC64 so the value decoders see it.
//! Whatever decodes must encode again, under default and under all-plain encodings, and
//! decode back to the same value. No input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_rdb::{crc64, restore, Dumper, RdbValue, WriteOptions};

fn seal(body: &[u8]) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&strata_rdb::RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

fn round_trip(v: &RdbValue, opts: WriteOptions) {
    let payload = Dumper::new(opts).dump(v);
    let again = match restore(&payload) {
        Ok(again) => again,
        Err(e) => panic!("re-encoded value refused: {e:?}\nvalue: {v:?}"),
    };
    assert!(
        again.normalized() == v.clone().normalized(),
        "round trip changed {v:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = restore(data) {
        round_trip(&v, WriteOptions::default());
    }
    if let Ok(v) = restore(&seal(data)) {
        round_trip(&v, WriteOptions::default());
        let plain = WriteOptions {
            compression: false,
            hash_max_listpack_entries: 0,
            zset_max_listpack_entries: 0,
            set_max_intset_entries: 0,
            list_max_listpack_size: 1,
            stream_node_max_entries: 1,
            ..WriteOptions::default()
        };
        round_trip(&v, plain);
    }
});
