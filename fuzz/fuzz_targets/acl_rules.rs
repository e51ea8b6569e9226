//! ACL rules as ACL SETUSER and ACL files give them: arbitrary words applied to a new
//! user must never panic; whatever applies must describe itself (ACL LIST, ACL SAVE)
//! into a line that ACL LOAD reads back to the same permissions, and calls checked
//! against it must not panic either.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use strata_server::exec::table::Table;
use strata_server::services::acl::{file, rules::Env, user::Rules};

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| Table::new(strata_server::commands::FAMILIES))
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let table = table();
    let env = Env {
        table,
        pubsub_all: first & 1 != 0,
    };
    // Words: the rules; a line break starts the call checked afterwards.
    let (rules_part, call_part) = match input.iter().position(|&b| b == b'\n') {
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (input, &[][..]),
    };
    let words: Vec<Bytes> = rules_part
        .split(|&b| b == b' ')
        .map(Bytes::copy_from_slice)
        .collect();
    let mut rules = Rules::new(&env);
    if rules.apply_all(&env, &words).is_err() {
        return;
    }
    let description = rules.describe(table);
    // A description holds patterns as written; one that a file line can't carry back (a
    // parenthesis or quote inside a selector, bytes that are not UTF-8) is not compared.
    let plain = rules.selectors.iter().all(|s| {
        s.keys
            .iter()
            .map(|k| &k.pattern)
            .chain(s.channels.iter())
            .all(|p| std::str::from_utf8(p).is_ok() && !p.iter().any(|c| b"()\"'\\".contains(c)))
    });
    if plain {
        let line = format!("user u {description}");
        let back = file::parse(&line, "fuzz.acl", &env)
            .unwrap_or_else(|e| panic!("{line:?} does not read back: {e}"));
        assert!(
            back[0].1.same_permissions(&rules),
            "{line:?} reads back as {:?}",
            back[0].1.describe(table)
        );
    }
    let argv: Vec<Bytes> = call_part
        .split(|&b| b == b' ')
        .map(Bytes::copy_from_slice)
        .collect();
    if let Some(id) = table.lookup_call(&argv) {
        let _ = rules.check(table, id, &argv);
    }
});
