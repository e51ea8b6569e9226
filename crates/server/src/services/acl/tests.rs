//! Rules applied, described and read back; selectors checked against calls.

use super::file;
use super::rules::Env;
use super::selector::Denied;
use super::user::Rules;
use crate::exec::table::Table;
use bytes::Bytes;

fn table() -> Table {
    Table::new(crate::commands::FAMILIES)
}

fn words(s: &str) -> Vec<Bytes> {
    s.split(' ')
        .filter(|w| !w.is_empty())
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

fn rules(env: &Env<'_>, s: &str) -> Rules {
    let mut r = Rules::new(env);
    r.apply_all(env, &words(s))
        .unwrap_or_else(|e| panic!("{s}: {e}"));
    r
}

fn argv(s: &str) -> Vec<Bytes> {
    words(s)
}

fn check(t: &Table, r: &Rules, call: &str) -> Result<(), Denied> {
    let a = argv(call);
    let id = t.lookup_call(&a).unwrap_or_else(|| panic!("{call}"));
    r.check(t, id, &a)
}

/// What ACL SAVE writes for `r`, read back as ACL LOAD reads it.
fn read_back(env: &Env<'_>, r: &Rules) -> Rules {
    let line = format!("user u {}", r.describe(env.table));
    let mut users = file::parse(&line, "t.acl", env).unwrap_or_else(|e| panic!("{line}: {e}"));
    users.remove(0).1
}

#[test]
fn descriptions_are_redis_s() {
    let t = table();
    let env = Env {
        table: &t,
        pubsub_all: false,
    };
    let commands = |s: &str| super::describe::command_rules(rules(&env, s).root(), &t);
    assert_eq!(commands(""), "-@all");
    assert_eq!(commands("+@all"), "+@all");
    assert_eq!(commands("+@all -client|kill"), "+@all -client|kill");
    assert_eq!(
        commands("+@all -client +client|id"),
        "+@all -client +client|id"
    );
    assert_eq!(
        commands("-@all +acl +config -config|set"),
        "-@all +acl +config -config|set"
    );
    assert_eq!(commands("-@all +select|0"), "-@all +select|0");
    assert_eq!(commands("+@all -@string"), "+@all -@string");
    assert_eq!(commands("-@all +@set +@hash"), "-@all +@set +@hash");
    // A category for each side, whatever the other rules.
    for (i, cat) in crate::exec::command::ACL_CATEGORIES.iter().enumerate() {
        let name = &cat[1..];
        if (0..t.commands.len()).all(|id| t.categories(id) & (1 << i) == 0) {
            continue; // no command of it here (streams)
        }
        assert_eq!(
            commands(&format!("+@all -@{name}")),
            format!("+@all -@{name}")
        );
        assert_eq!(
            commands(&format!("-@all +@{name}")),
            format!("-@all +@{name}")
        );
    }
    let r = rules(&env, "on nopass ~a* %R~b %W~c &x +get (~d +set)");
    assert_eq!(
        r.describe(&t),
        "on nopass ~a* %R~b %W~c resetchannels &x -@all +get (~d resetchannels -@all +set)"
    );
    assert_eq!(
        rules(&env, "%R~k %W~k %RW~j").root().describe_keys(),
        "~k ~j"
    );
}

#[test]
fn described_rules_read_back_the_same() {
    let t = table();
    for pubsub_all in [false, true] {
        let env = Env {
            table: &t,
            pubsub_all,
        };
        let vocab = [
            "on",
            "off",
            "nopass",
            "resetpass",
            ">a",
            ">b",
            "<a",
            "reset",
            "~k*",
            "%R~r*",
            "%W~w*",
            "allkeys",
            "resetkeys",
            "&c*",
            "allchannels",
            "resetchannels",
            "+@all",
            "-@all",
            "+@read",
            "-@write",
            "+@string",
            "-@keyspace",
            "+get",
            "-get",
            "+client",
            "-client|kill",
            "+client|id",
            "+select|0",
            "+select|1",
            "+config|get",
            "-config",
            "(+get ~x)",
            "(%R~y +@hash)",
            "clearselectors",
            "sanitize-payload",
            "skip-sanitize-payload",
            "+@pubsub",
            "-@slow",
            "+debug",
            "-@dangerous",
        ];
        // A fixed pseudo-random walk over the vocabulary: hundreds of rule sets.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..300 {
            let mut r = Rules::new(&env);
            let n = 1 + (x % 12) as usize;
            let mut applied = Vec::new();
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let op = vocab[(x % vocab.len() as u64) as usize];
                // Some rules fail where they stand (a pattern after `allkeys`...).
                if r.apply(&env, op.as_bytes()).is_ok() {
                    applied.push(op);
                }
            }
            let back = read_back(&env, &r);
            assert!(
                back.same_permissions(&r),
                "{applied:?} -> {} -> {}",
                r.describe(&t),
                back.describe(&t)
            );
        }
    }
}

#[test]
fn selectors_allow_alone_and_refusals_name_the_most_relevant_argument() {
    let t = table();
    let env = Env {
        table: &t,
        pubsub_all: false,
    };
    let r = rules(&env, "+mget ~key (+mget ~key ~otherkey)");
    assert_eq!(check(&t, &r, "get key"), Err(Denied::Command));
    assert_eq!(check(&t, &r, "mget key otherkey"), Ok(()));
    // The first selector fails at argument 1, the second at 2: 2 is reported.
    assert_eq!(
        check(&t, &r, "mget otherkey someotherkey"),
        Err(Denied::Key(2))
    );
    assert_eq!(
        check(&t, &r, "mget key otherkey someotherkey"),
        Err(Denied::Key(3))
    );
    // Read and write intents come from the declarations.
    let rw = rules(&env, "+@all %R~r* %W~w* resetchannels &ch");
    assert_eq!(check(&t, &rw, "lpush w1 a"), Ok(()));
    assert_eq!(check(&t, &rw, "lpush r1 a"), Err(Denied::Key(1)));
    assert_eq!(check(&t, &rw, "rpoplpush r1 w1"), Err(Denied::Key(1)));
    assert_eq!(check(&t, &rw, "hexists w1 f"), Ok(()));
    assert_eq!(check(&t, &rw, "set w1 v get"), Err(Denied::Key(1)));
    assert_eq!(check(&t, &rw, "bitfield r1 get u4 0"), Ok(()));
    assert_eq!(
        check(&t, &rw, "bitfield r1 get u4 0 incrby u4 0 1"),
        Err(Denied::Key(1))
    );
    // Channels: a key denial loses to a channel denial in another selector.
    assert_eq!(check(&t, &rw, "publish ch m"), Ok(()));
    assert_eq!(
        check(&t, &rw, "subscribe ch other"),
        Err(Denied::Channel(2))
    );
    assert_eq!(check(&t, &rw, "psubscribe c*"), Err(Denied::Channel(1)));
    let two = rules(&env, "-@all (+get ~a) (+publish resetchannels)");
    assert_eq!(check(&t, &two, "publish x m"), Err(Denied::Channel(1)));
    // Commands without authentication are never refused for their name.
    assert_eq!(check(&t, &rules(&env, "-@all"), "auth a b"), Ok(()));
}

#[test]
fn rule_errors_leave_the_user_as_it_was() {
    let t = table();
    let env = Env {
        table: &t,
        pubsub_all: false,
    };
    let mut r = rules(&env, "on ~a");
    let before = r.clone();
    for (bad, why) in [
        ("+get nonsense", "Error in ACL SETUSER modifier 'nonsense': Syntax error"),
        ("+nosuch", "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"),
        ("allkeys ~b", "Error in ACL SETUSER modifier '~b': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"),
        ("(+get ~x", "Unmatched parenthesis in acl selector starting at '(+get'."),
        ("+config|get|x", "Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported"),
        ("#00", "Error in ACL SETUSER modifier '#00': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"),
        ("<nope", "Error in ACL SETUSER modifier '<nope': The password you are trying to remove from the user does not exist"),
    ] {
        assert_eq!(r.apply_all(&env, &words(bad)), Err(why.to_string()), "{bad}");
        assert_eq!(r, before, "{bad}");
    }
}

#[test]
fn a_container_in_a_category_takes_its_subcommands() {
    let t = table();
    let env = Env {
        table: &t,
        pubsub_all: false,
    };
    // CLIENT is @slow: +@slow allows CLIENT and all its subcommands, fast or not.
    let r = rules(&env, "-@all +@slow");
    for sub in t.subcommand_ids(t.lookup("client").unwrap()) {
        assert!(r.root().bit(sub), "{}", t.fullnames[sub]);
    }
}

/// A key pattern's prefix shortcut answers as the glob does, for prefix patterns and for
/// the patterns that must not take it.
#[test]
fn key_patterns_match_as_globs() {
    let patterns = [
        "app:*",
        "*",
        "app",
        "a?p:*",
        "app:[ab]*",
        "app\\*",
        "app:**",
        "a*b*",
        "",
        "app:\\*",
        "counter:*",
        "counters:*",
        "k*",
    ];
    // Keys of 8 bytes or more are matched by word against prefixes of up to 8.
    let keys = [
        "app:",
        "app:1",
        "app",
        "apb:x",
        "xapp:1",
        "app:a9",
        "app*",
        "ab",
        "",
        "app:12345678",
        "apq:12345678",
        "counter:",
        "counter:1234",
        "countex:1234",
        "counters:1",
        "counter",
        "kkkkkkkkk",
        "xkkkkkkkk",
    ];
    for p in patterns {
        let kp = super::selector::KeyPattern::new(p.as_bytes(), super::selector::READ);
        for k in keys {
            assert_eq!(
                kp.matches(k.as_bytes()),
                strata_engine::glob::matches(p.as_bytes(), k.as_bytes(), false),
                "pattern {p:?} key {k:?}"
            );
        }
    }
}
