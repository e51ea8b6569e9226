//! COMMAND against redis-server: for every command and subcommand both servers have, COMMAND
//! INFO must give the same arity, flags, legacy key positions, ACL categories, tips and key
//! specs (the key specs' `notes`, Redis's prose, are left out). COMMAND GETKEYS and
//! GETKEYSANDFLAGS on particular commands are in tests/diff/server.txt.

mod common;

use common::{Proc, RawReply, RespConn};
use std::collections::BTreeMap;

/// Every command and subcommand COMMAND lists, by full name.
fn commands(p: &Proc) -> BTreeMap<String, RawReply> {
    fn walk(entry: &RawReply, out: &mut BTreeMap<String, RawReply>) {
        out.insert(text(&entry.elems[0]), entry.clone());
        for sub in &entry.elems[9].elems {
            walk(sub, out);
        }
    }
    let all = RespConn::new(p).call(&["COMMAND"]).expect("COMMAND");
    let mut out = BTreeMap::new();
    for e in &all.elems {
        walk(e, &mut out);
    }
    out
}

/// A bulk or simple string reply's text.
fn text(r: &RawReply) -> String {
    let s = String::from_utf8_lossy(&r.raw).into_owned();
    match s.split_once("\r\n") {
        Some((head, rest)) if head.starts_with('$') => rest.trim_end_matches("\r\n").to_string(),
        _ => s.trim_start_matches(['+', ':']).trim_end().to_string(),
    }
}

/// A set-like reply's members, sorted.
fn members(r: &RawReply) -> Vec<String> {
    let mut v: Vec<String> = r.elems.iter().map(text).collect();
    v.sort();
    v
}

/// A key spec without its `notes`: its other fields' raw bytes, in order.
fn spec_without_notes(spec: &RawReply) -> Vec<Vec<u8>> {
    spec.elems
        .chunks(2)
        .filter(|kv| text(&kv[0]) != "notes")
        .flat_map(|kv| kv.iter().map(|e| e.raw.clone()))
        .collect()
}

#[test]
fn command_info_matches_redis_for_every_shared_command() {
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let want = commands(&redis);
    let got = commands(&strata);
    let mut compared = 0;
    let mut diffs = Vec::new();
    for (name, g) in &got {
        let Some(w) = want.get(name) else {
            // Strata's own (CLIENT NO-TOUCH, DEBUG's hidden ones): nothing to compare.
            continue;
        };
        compared += 1;
        let fields = [
            ("arity", vec![text(&w.elems[1])], vec![text(&g.elems[1])]),
            ("flags", members(&w.elems[2]), members(&g.elems[2])),
            (
                "first last step",
                w.elems[3..6].iter().map(text).collect(),
                g.elems[3..6].iter().map(text).collect(),
            ),
            ("acl categories", members(&w.elems[6]), members(&g.elems[6])),
            ("tips", members(&w.elems[7]), members(&g.elems[7])),
        ];
        for (field, a, b) in fields {
            if a != b {
                diffs.push(format!("{name} {field}: redis {a:?}, strata {b:?}"));
            }
        }
        let specs = |r: &RawReply| -> Vec<Vec<Vec<u8>>> {
            r.elems[8].elems.iter().map(spec_without_notes).collect()
        };
        if specs(w) != specs(g) {
            diffs.push(format!(
                "{name} key specs:\n  redis  {}\n  strata {}",
                w.elems[8].shown(),
                g.elems[8].shown()
            ));
        }
    }
    assert!(compared > 200, "only {compared} commands compared");
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// Every command's documentation map (COMMAND DOCS), by full name, subcommands included.
fn docs(p: &Proc) -> BTreeMap<String, RawReply> {
    fn walk(name: String, doc: &RawReply, out: &mut BTreeMap<String, RawReply>) {
        for kv in doc.elems.chunks(2) {
            if text(&kv[0]) == "subcommands" {
                for sub in kv[1].elems.chunks(2) {
                    walk(text(&sub[0]), &sub[1], out);
                }
            }
        }
        out.insert(name, doc.clone());
    }
    let all = RespConn::new(p)
        .call(&["COMMAND", "DOCS"])
        .expect("COMMAND DOCS");
    let mut out = BTreeMap::new();
    for kv in all.elems.chunks(2) {
        walk(text(&kv[0]), &kv[1], &mut out);
    }
    out
}

/// An argument list, without what documents history (`since`, `deprecated_since`).
fn args_shape(args: &RawReply) -> String {
    let mut s = String::new();
    for a in &args.elems {
        s.push('{');
        for kv in a.elems.chunks(2) {
            let k = text(&kv[0]);
            match k.as_str() {
                "since" | "deprecated_since" => {}
                "arguments" => s.push_str(&format!("arguments: [{}] ", args_shape(&kv[1]))),
                "flags" => s.push_str(&format!("flags: {:?} ", members(&kv[1]))),
                _ => s.push_str(&format!("{k}: {} ", text(&kv[1]))),
            }
        }
        s.push('}');
    }
    s
}

/// The arguments of a documentation map, if it lists any.
fn arguments(doc: &RawReply) -> Option<String> {
    doc.elems
        .chunks(2)
        .find(|kv| text(&kv[0]) == "arguments")
        .map(|kv| args_shape(&kv[1]))
}

/// COMMAND DOCS lists each command's arguments as Redis does: names, types, tokens, key
/// specs, optional and repeated ones, groups (the history of each, `since`, is left out).
#[test]
fn command_docs_arguments_match_redis() {
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let want = docs(&redis);
    let got = docs(&strata);
    let mut compared = 0;
    let mut diffs = Vec::new();
    for (name, g) in &got {
        let Some(w) = want.get(name) else { continue };
        compared += 1;
        let (a, b) = (arguments(w), arguments(g));
        if a != b {
            diffs.push(format!("{name}:\n  redis  {a:?}\n  strata {b:?}"));
        }
    }
    assert!(compared > 200, "only {compared} commands compared");
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
