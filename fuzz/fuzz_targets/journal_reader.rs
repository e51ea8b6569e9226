//! Feeds arbitrary bytes to the journal reader as a segment file: as the last segment (torn
//! tail allowed) and as an earlier one. It must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_storage::{scan_segment, Problem};

fuzz_target!(|data: &[u8]| {
    for is_last in [true, false] {
        let mut seen = 0u64;
        let r = scan_segment(data, 1, is_last, 0, |b| {
            seen += 1;
            assert!(b.offset as usize + b.payload.len() <= data.len());
            Ok::<(), ()>(())
        });
        let Ok(scan) = r else { return };
        assert_eq!(scan.blocks, seen);
        assert!(scan.end as usize <= data.len());
        if !is_last {
            assert!(!matches!(scan.problem, Some((Problem::Torn, _, _))));
        }
    }
});
