//! strata-storage: the journal (numbered segment files of CRC-framed blocks, group commit),
//! snapshots and recovery. It knows nothing of networking; the server appends effect records
//! and replays them.
