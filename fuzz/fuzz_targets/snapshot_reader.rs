//! Feeds arbitrary bytes to the snapshot loader. It must never panic, whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_engine::Encodings;
use strata_storage::load_snapshot_bytes;

fuzz_target!(|data: &[u8]| {
    let enc = Encodings::default();
    let mut n = 0u64;
    if let Ok(meta) = load_snapshot_bytes(data, &enc, |_, _, _, _| n += 1) {
        assert_eq!(meta.entries, n);
    }
});
