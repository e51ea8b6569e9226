//! DUMP payloads: made with a per-thread encoder (its scratch buffers reused from call to
//! call) under the server's options, and RESTORE's replies for payloads it refuses.

use super::save::write_options;
use crate::exec::command::CmdError;
use crate::server::Server;
use std::cell::RefCell;
use strata_rdb::{Dumper, PayloadError, RdbValue, WriteOptions};

thread_local! {
    static DUMPER: RefCell<Option<(WriteOptions, Dumper)>> = const { RefCell::new(None) };
}

/// The DUMP payload of `v`, in the encodings and compression of the server's settings.
pub fn dump_payload(server: &Server, v: &RdbValue) -> Vec<u8> {
    let opts = write_options(server);
    DUMPER.with_borrow_mut(|slot| {
        if slot.as_ref().is_none_or(|(o, _)| *o != opts) {
            *slot = Some((opts.clone(), Dumper::new(opts)));
        }
        match slot {
            Some((_, d)) => d.dump(v),
            None => strata_rdb::dump(v),
        }
    })
}

/// Redis's reply to a payload RESTORE cannot take; a malformed value's reason goes to
/// the log, as Redis logs it.
pub fn payload_error(e: &PayloadError) -> CmdError {
    match e {
        PayloadError::VersionOrChecksum => {
            CmdError::Static("ERR DUMP payload version or checksum are wrong")
        }
        PayloadError::BadData(e) => {
            tracing::warn!("DUMP payload refused: {e}");
            CmdError::Static("ERR Bad data format")
        }
    }
}

/// How RESTORE and FUNCTION RESTORE check a payload's footer: its CRC64 too, unless
/// DEBUG SET-SKIP-CHECKSUM-VALIDATION 1.
pub fn verify(server: &Server) -> strata_rdb::Verify {
    if server
        .debug
        .skip_checksum
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        strata_rdb::Verify::VersionOnly
    } else {
        strata_rdb::Verify::Checksum
    }
}
