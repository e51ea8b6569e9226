//! The whole keyspace, byte for byte (DEBUG DIGEST), is the same on a server, on its
//! replica, and on the same server restarted after a SIGKILL from its journal: random
//! commands of every type (`common::model`), scripts and commands of two keys among them.
//! A command that changes a key's bytes without a write flag (PFCOUNT storing its count)
//! differed here before.

mod common;
mod repl_common;

use common::model::random_command;
use common::{serve_in, Rng};
use repl_common::{replicaof, wait_acks, wait_synced};

const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];

fn digest(c: &mut redis::Connection) -> String {
    redis::cmd("DEBUG").arg("DIGEST").query(c).unwrap()
}

#[test]
fn replicas_and_restarts_hold_the_same_bytes() {
    let dir = common::temp_dir("replay-digest");
    let before = {
        let p = serve_in(&dir, &DEBUG);
        let mut pc = p.client();
        let r = repl_common::strata(&DEBUG);
        let mut rc = r.client();
        replicaof(&mut rc, &p);
        wait_synced(&mut pc, &mut rc);
        let mut rng = Rng(0x0d16_e575);
        for _ in 0..3000 {
            let args = random_command(&mut rng);
            let mut cmd = redis::cmd(std::str::from_utf8(&args[0]).unwrap());
            for a in &args[1..] {
                cmd.arg(&a[..]);
            }
            // Errors (WRONGTYPE and the like) are part of the traffic.
            let _ = cmd.query::<redis::Value>(&mut pc);
        }
        let keys: u64 = redis::cmd("DBSIZE").query(&mut pc).unwrap();
        assert!(keys > 300, "{keys} keys");
        assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
        wait_synced(&mut pc, &mut rc);
        let d = digest(&mut pc);
        assert_eq!(digest(&mut rc), d, "the replica");
        d
    };
    // Both were killed; the restart replays the journal (appendfsync always).
    let p = serve_in(&dir, &DEBUG);
    let mut pc = p.client();
    assert_eq!(digest(&mut pc), before, "the restart");
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}
