use super::value::render_number;
use super::*;

fn get(c: &Config, name: &str) -> String {
    let (d, _) = lookup(name).unwrap();
    d.get(&c.get())
}

#[test]
fn every_default_parses_and_reads_back_the_same() {
    let defaults = defaults();
    for d in DIRECTIVES {
        let mut v = Values::default();
        d.set(&mut v, &d.default_words(), false)
            .unwrap_or_else(|e| panic!("{}: default {:?}: {e}", d.name, d.default));
        let shown = d.get(&defaults);
        // What CONFIG GET shows, set again, shows the same (CONFIG REWRITE relies on it).
        let words: Vec<&str> = if d.multi {
            shown.split_whitespace().collect()
        } else {
            vec![&shown]
        };
        let mut again = Values::default();
        d.set(&mut again, &words, false)
            .unwrap_or_else(|e| panic!("{}: {shown:?}: {e}", d.name));
        assert_eq!(d.get(&again), shown, "{}", d.name);
    }
}

#[test]
fn numeric_bounds_fit_their_fields() {
    for d in DIRECTIVES {
        let (min, max) = match d.kind {
            Kind::Plain => continue,
            Kind::Int { min, max }
            | Kind::Memory { min, max }
            | Kind::MemoryOrPercent { min, max }
            | Kind::Octal { min, max } => (min, max),
        };
        let min = if matches!(d.kind, Kind::MemoryOrPercent { .. }) {
            0
        } else {
            min
        };
        // hz is kept within 1..500 whatever its bounds (hz_is_clamped_as_redis).
        if d.name == "hz" {
            continue;
        }
        for bound in [min, max] {
            let text = match d.kind {
                Kind::Octal { .. } => render_number(bound, &d.kind),
                _ if d.unsigned => (bound as u64).to_string(),
                _ => bound.to_string(),
            };
            let mut v = Values::default();
            d.set(&mut v, &[&text], false)
                .unwrap_or_else(|e| panic!("{} {text}: {e}", d.name));
            assert_eq!(d.get(&v), text, "{} holds {text}", d.name);
        }
    }
}

#[test]
fn names_and_aliases_are_unique_and_lower_case() {
    let mut seen = std::collections::HashSet::new();
    for d in DIRECTIVES {
        for n in std::iter::once(&d.name).chain(d.aliases) {
            assert_eq!(*n, n.to_ascii_lowercase());
            assert!(seen.insert(*n), "{n} declared twice");
        }
    }
}

#[test]
fn file_and_runtime_rules() {
    let c = Config::new(None);
    c.load_text("# comment\nport 7000\nrequirepass \"a b\"\nsave ''\n")
        .unwrap();
    assert_eq!(c.get().port, 7000);
    assert_eq!(c.get().requirepass, "a b");
    assert!(c.get().save.0.is_empty());
    assert!(c.load_text("nonsense 1").unwrap_err().contains("line 1"));
    assert!(
        c.set("databases", "16", true).is_err(),
        "Redis's start-only: refused"
    );
    c.set("threads", "0", true).unwrap();
    assert!(
        c.set("threads", "3", true).is_err(),
        "Strata's own start-only: only the value it has"
    );
    c.set("port", "7001", true).unwrap();
    assert_eq!(c.get().port, 7001);
    assert!(c.set("maxclients", "x", true).is_err());
    c.set("maxclients", "5", true).unwrap();
    assert_eq!(c.get().maxclients, 5);
    let max: Vec<String> = c.matching(&[b"max*"]).into_iter().map(|(n, _)| n).collect();
    let declared = DIRECTIVES
        .iter()
        .flat_map(|d| std::iter::once(&d.name).chain(d.aliases))
        .filter(|n| n.starts_with("max"))
        .count();
    assert_eq!(max.len(), declared);
    assert!(max.contains(&"maxmemory-policy".to_string()));
    assert_eq!(c.get().client_query_buffer_limit, 1 << 30);
}

#[test]
fn file_errors_and_multi_word_lines_as_redis() {
    let c = Config::new(None);
    let err = |text: &str| c.load_text(text).unwrap_err();
    assert!(err("hz 1 2").ends_with("wrong number of arguments"));
    assert!(err("nosuch 1").ends_with("Bad directive or wrong number of arguments"));
    assert!(err("maxmemory lots").ends_with("argument must be a memory value"));
    assert!(err("requirepass \"open").contains("Unbalanced quotes"));
    // Directives Redis dropped before 7.0 are still accepted in files.
    c.load_text("list-max-ziplist-entries 512\nlua-replicate-commands yes\n")
        .unwrap();
    // Aliases, any case.
    c.load_text("HASH-MAX-ZIPLIST-ENTRIES 7\nslaveof 10.0.0.1 6380\nlua-time-limit 100\n")
        .unwrap();
    assert_eq!(c.get().hash_max_listpack_entries, 7);
    assert_eq!(c.get().replicaof.0, Some(("10.0.0.1".to_string(), 6380)));
    assert_eq!(c.get().busy_reply_threshold, 100);
    // A multi-word directive given as one quoted word is split.
    c.load_text("save \"900 1 300 10\"\n").unwrap();
    assert_eq!(c.get().save.0, vec![(900, 1), (300, 10)]);
}

#[test]
fn save_lines_of_one_load_add_up() {
    let c = Config::new(None);
    let mut load = c.load();
    load.text("save 900 1\nsave 300 10\n").unwrap();
    load.directive("save", &["60", "10000"]).unwrap();
    load.finish();
    assert_eq!(c.get().save.0, vec![(900, 1), (300, 10), (60, 10000)]);
    // A new load starts over; `save ""` clears.
    c.load_text("save 10 1\n").unwrap();
    assert_eq!(c.get().save.0, vec![(10, 1)]);
    c.load_text("save \"\"\n").unwrap();
    assert!(c.get().save.0.is_empty());
}

#[test]
fn hz_is_clamped_as_redis() {
    let c = Config::new(None);
    c.set_many(&[("hz", "1000")], true).unwrap();
    assert_eq!(c.get().hz, 500);
    c.set_many(&[("hz", "0")], true).unwrap();
    assert_eq!(get(&c, "hz"), "1");
}

#[test]
fn config_set_is_all_or_nothing_with_redis_errors() {
    let c = Config::new(None);
    let epoch = c.epoch();
    let e = c
        .set_many(&[("maxmemory", "1mb"), ("maxmemory-policy", "bogus")], true)
        .unwrap_err();
    assert!(e.starts_with(
        "CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) \
         must be one of the following: volatile-lru,"
    ));
    assert_eq!(c.get().maxmemory, 0);
    assert_eq!(c.epoch(), epoch, "a refused CONFIG SET changes nothing");
    assert_eq!(
        c.set_many(&[("hz", "5"), ("HZ", "6")], true).unwrap_err(),
        "CONFIG SET failed (possibly related to argument 'HZ') - duplicate parameter"
    );
    assert_eq!(
        c.set_many(
            &[
                ("hash-max-ziplist-entries", "1"),
                ("hash-max-listpack-entries", "2")
            ],
            true
        )
        .unwrap_err(),
        "CONFIG SET failed (possibly related to argument 'hash-max-listpack-entries') - \
         duplicate parameter"
    );
    assert_eq!(
        c.set_many(&[("DATABASES", "4")], true).unwrap_err(),
        "CONFIG SET failed (possibly related to argument 'DATABASES') - can't set immutable config"
    );
    // The first failing argument is the one reported.
    assert_eq!(
        c.set_many(&[("nosuch", "1"), ("databases", "4")], true)
            .unwrap_err(),
        "Unknown option or number of arguments for CONFIG SET - 'nosuch'"
    );
    assert!(c
        .set_many(&[("databases", "4"), ("nosuch", "1")], true)
        .unwrap_err()
        .contains("immutable"));
    // A parse error names the directive as found (lower case, alias kept).
    assert_eq!(
        c.set_many(&[("LUA-TIME-LIMIT", "x")], true).unwrap_err(),
        "CONFIG SET failed (possibly related to argument 'lua-time-limit') - argument \
         couldn't be parsed into an integer"
    );
    let hooks = c
        .set_many(
            &[("maxmemory", "1mb"), ("zset-max-ziplist-value", "1k")],
            true,
        )
        .unwrap();
    assert_eq!(c.get().maxmemory, 1 << 20);
    assert_eq!(c.get().zset_max_listpack_value, 1000);
    assert_eq!(hooks, vec![Hook::Maxmemory, Hook::Encodings]);
    assert!(c.epoch() > epoch);
    // Setting the value it has changes nothing, so no hook runs.
    assert!(c
        .set_many(&[("zset-max-listpack-value", "1000")], true)
        .unwrap()
        .is_empty());
}

#[test]
fn protected_directives_follow_enable_protected_configs() {
    let c = Config::new(None);
    let refused =
        "CONFIG SET failed (possibly related to argument 'dir') - can't set protected config";
    assert_eq!(c.set_many(&[("dir", "/x")], true).unwrap_err(), refused);
    c.load_text("enable-protected-configs local\n").unwrap();
    assert_eq!(c.set_many(&[("dir", "/x")], false).unwrap_err(), refused);
    c.set_many(&[("dir", "/x")], true).unwrap();
    assert_eq!(c.get().dir, "/x");
}

#[test]
fn config_get_names_as_redis() {
    let c = Config::new(None);
    let names = |patterns: &[&[u8]]| -> Vec<String> {
        c.matching(patterns).into_iter().map(|(n, _)| n).collect()
    };
    assert_eq!(names(&[b"HZ"]), vec!["HZ"]);
    assert_eq!(names(&[b"hz", b"HZ", b"h?"]), vec!["hz"]);
    assert_eq!(
        names(&[b"hash-max-ziplist-entries"]),
        vec!["hash-max-ziplist-entries"]
    );
    let mut both = names(&[b"hash-max-*-entries"]);
    both.sort();
    assert_eq!(
        both,
        vec!["hash-max-listpack-entries", "hash-max-ziplist-entries"]
    );
    assert!(names(&[b"nosuch"]).is_empty());
    // Hidden directives answer to their exact name only.
    assert_eq!(names(&[b"key-load-delay"]), vec!["key-load-delay"]);
    assert!(names(&[b"key-load-*"]).is_empty());
    let all = c.matching(&[b"*"]);
    let value = |n: &str| all.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    assert_eq!(value("list-max-ziplist-size"), Some("-2"));
    assert_eq!(value("proto-max-bulk-len"), Some("536870912"));
}

#[test]
fn rewrite_writes_what_differs_and_reads_back_the_same() {
    let c = Config::new(None);
    c.load_text(concat!(
        "slave-read-only no\n",
        "requirepass \"p \\\"w\\\" \\\\ d\"\n",
        "save 900 1\nsave 60 5\n",
        "client-output-buffer-limit pubsub 1mb 2mb 3\n",
        "bind 127.0.0.1 -::1\n",
        "maxmemory-clients 5%\n",
        "unixsocketperm 700\n",
        "latency-tracking-info-percentiles \"\"\n",
        "replicaof h 1\n",
        "shutdown-on-sigterm now force\n",
        "notify-keyspace-events KEA\n",
    ))
    .unwrap();
    let text = c.rewrite_text();
    assert!(text.contains("replica-read-only \"no\"\n"), "{text}");
    assert!(!text.contains("hz "), "defaults are left out: {text}");
    let back = Config::new(None);
    back.load_text(&text).unwrap();
    for d in DIRECTIVES {
        assert_eq!(d.get(&back.get()), d.get(&c.get()), "{}", d.name);
    }
}

/// docs/compatibility.md lists the INERT directives between two markers; this is that
/// list, generated from the declarations.
fn inert_list() -> String {
    let items: Vec<String> = DIRECTIVES
        .iter()
        .filter(|d| d.has(INERT))
        .map(|d| {
            let mut s = format!("`{}`", d.name);
            for a in d.aliases {
                s.push_str(&format!(" (`{a}`)"));
            }
            s
        })
        .collect();
    let mut out = String::new();
    let mut line = String::new();
    for (i, item) in items.iter().enumerate() {
        let item = if i + 1 == items.len() {
            format!("{item}.")
        } else {
            format!("{item},")
        };
        if !line.is_empty() && line.len() + 1 + item.len() > 90 {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&item);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[test]
fn compatibility_doc_lists_the_inert_directives() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/compatibility.md");
    let doc = std::fs::read_to_string(path).unwrap();
    const START: &str = "<!-- inert directives: generated from the declarations -->\n";
    const END: &str = "<!-- end of inert directives -->";
    let listed = doc
        .split_once(START)
        .and_then(|(_, rest)| rest.split_once(END))
        .map(|(list, _)| list)
        .expect("docs/compatibility.md has the inert directives markers");
    let want = inert_list();
    assert!(
        listed == want,
        "docs/compatibility.md's list of directives without effect is stale; it should \
         read:\n{want}"
    );
}
