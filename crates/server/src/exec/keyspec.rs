//! Key specs, as Redis 7 declares them: where a group of keys starts in argv (an index,
//! or after a keyword), how far it goes (a range, or a count read from an argument), and
//! what the command does to those keys (flags). COMMAND INFO shows them, COMMAND
//! GETKEYSANDFLAGS reports the flags, and lock planning finds keys with them.

use bytes::Bytes;

/// A key spec's flags (COMMAND INFO names them in `NAMES`' order).
pub mod ks {
    /// Read-only.
    pub const RO: u16 = 1 << 0;
    /// Read-write.
    pub const RW: u16 = 1 << 1;
    /// Overwrite: the value is replaced without being read.
    pub const OW: u16 = 1 << 2;
    /// Removes the key.
    pub const RM: u16 = 1 << 3;
    /// Returns, copies or uses user data from the value.
    pub const ACCESS: u16 = 1 << 4;
    /// Updates the value.
    pub const UPDATE: u16 = 1 << 5;
    /// Adds data to the value, changing nothing there.
    pub const INSERT: u16 = 1 << 6;
    /// Deletes data from the value.
    pub const DELETE: u16 = 1 << 7;
    /// Not a key (a shard channel, as a key of its slot).
    pub const NOT_KEY: u16 = 1 << 8;
    /// The spec may not find every key.
    pub const INCOMPLETE: u16 = 1 << 9;
    /// Some keys may have other flags, depending on the arguments.
    pub const VARIABLE_FLAGS: u16 = 1 << 10;

    pub const NAMES: &[(u16, &str)] = &[
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

/// Where the keys begin.
#[derive(Clone, Copy, Debug)]
pub enum Begin {
    /// At this argument.
    Index(i32),
    /// After this keyword, searched from `startfrom` (negative: from the end, backwards).
    Keyword {
        keyword: &'static str,
        startfrom: i32,
    },
    /// Known only to the command's own parsing.
    Unknown,
}

/// How many keys, from where they begin.
#[derive(Clone, Copy, Debug)]
pub enum Find {
    /// Up to `lastkey` past the first (negative: counted from the end; with `limit`, the
    /// keys take 1/limit of what remains), every `step`.
    Range {
        lastkey: i32,
        step: i32,
        limit: i32,
    },
    /// The number of keys is argument `keynumidx` past the beginning; they start
    /// `firstkey` past it, every `step`.
    Keynum {
        keynumidx: i32,
        firstkey: i32,
        step: i32,
    },
    Unknown,
}

#[derive(Clone, Copy, Debug)]
pub struct KeySpec {
    pub flags: u16,
    pub begin: Begin,
    pub find: Find,
}

impl KeySpec {
    /// Keys from argument `index` to `lastkey` past it, every `step`.
    pub const fn range(flags: u16, index: i32, lastkey: i32, step: i32) -> KeySpec {
        KeySpec {
            flags,
            begin: Begin::Index(index),
            find: Find::Range {
                lastkey,
                step,
                limit: 0,
            },
        }
    }

    /// The count of keys at argument `index`, the keys right after it.
    pub const fn keynum(flags: u16, index: i32) -> KeySpec {
        KeySpec {
            flags,
            begin: Begin::Index(index),
            find: Find::Keynum {
                keynumidx: 0,
                firstkey: 1,
                step: 1,
            },
        }
    }

    /// The one key after `keyword` (searched from `startfrom`).
    pub const fn after(flags: u16, keyword: &'static str, startfrom: i32) -> KeySpec {
        KeySpec {
            flags,
            begin: Begin::Keyword { keyword, startfrom },
            find: Find::Range {
                lastkey: 0,
                step: 1,
                limit: 0,
            },
        }
    }

    /// Keys only the command's own parsing finds.
    pub const fn unknown(flags: u16) -> KeySpec {
        KeySpec {
            flags,
            begin: Begin::Unknown,
            find: Find::Unknown,
        }
    }

    /// Calls `f` with the position of each key this spec finds in `argv`, as Redis's
    /// getKeysUsingKeySpecs does: a key count that is not a count, or that reaches past
    /// the end of `argv`, finds nothing (the command refuses such arguments before it
    /// touches a key); a range is cut at the end. Returns false when it cannot find keys
    /// (an unknown spec).
    pub fn for_each(&self, argv: &[Bytes], mut f: impl FnMut(usize)) -> bool {
        let argc = argv.len() as i64;
        let first = match self.begin {
            Begin::Index(i) => i64::from(i),
            Begin::Keyword { keyword, startfrom } => {
                let found = if startfrom > 0 {
                    (i64::from(startfrom)..argc).find(|&i| is_word(argv, i, keyword))
                } else {
                    (1..=argc + i64::from(startfrom))
                        .rev()
                        .find(|&i| is_word(argv, i, keyword))
                };
                match found {
                    Some(i) => i + 1,
                    // No keyword: no keys, and nothing wrong.
                    None => return true,
                }
            }
            Begin::Unknown => return false,
        };
        let (first, last, step) = match self.find {
            Find::Range {
                lastkey,
                step,
                limit,
            } => {
                let last = if lastkey >= 0 {
                    first + i64::from(lastkey)
                } else if limit == 0 {
                    argc + i64::from(lastkey)
                } else {
                    first + (argc - first) / i64::from(limit) + i64::from(lastkey)
                };
                (first, last, step)
            }
            Find::Keynum {
                keynumidx,
                firstkey,
                step,
            } => {
                let at = first + i64::from(keynumidx);
                let Some(n) = usize::try_from(at)
                    .ok()
                    .and_then(|at| argv.get(at))
                    .and_then(|a| crate::exec::command::parse_i64(a))
                    .filter(|n| *n >= 0)
                else {
                    return true;
                };
                let first = first + i64::from(firstkey);
                let last = first.saturating_add(n) - 1;
                if n > 0 && last >= argc {
                    return true;
                }
                (first, last, step)
            }
            Find::Unknown => return false,
        };
        let step = i64::from(step.max(1));
        let mut i = first.max(1);
        while i <= last.min(argc - 1) {
            f(i as usize);
            i += step;
        }
        true
    }
}

fn is_word(argv: &[Bytes], i: i64, word: &str) -> bool {
    usize::try_from(i)
        .ok()
        .and_then(|i| argv.get(i))
        .is_some_and(|a| a.eq_ignore_ascii_case(word.as_bytes()))
}

/// A key found in argv, with what the command does to it (its spec's flags, or what the
/// arguments make of a spec with `VARIABLE_FLAGS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyAt {
    pub pos: usize,
    pub flags: u16,
}

/// Where a command's keys are, when that does not depend on its arguments beyond their
/// count: most commands name one key at a fixed place, and the ACL check of a restricted
/// user's every command reads it from here instead of walking the specs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyShape {
    /// No keys.
    None,
    /// One key at `pos`, when argv reaches it.
    One(KeyAt),
    /// One key at this place, when argv reaches it, with flags the other arguments decide
    /// (SET's GET option makes it read the key too).
    OneVarying(usize),
    /// Found by walking the specs or the command's own finder.
    Walk,
}

impl KeyShape {
    /// The shape of keys found by `specs` (those flagged NOT_KEY are not keys).
    pub fn of_specs(specs: &[KeySpec]) -> KeyShape {
        let mut keys = specs.iter().filter(|s| s.flags & ks::NOT_KEY == 0);
        match (keys.next(), keys.next()) {
            (None, _) => KeyShape::None,
            (
                Some(&KeySpec {
                    flags,
                    begin: Begin::Index(pos @ 1..),
                    find: Find::Range { lastkey: 0, .. },
                }),
                None,
            ) => KeyShape::One(KeyAt {
                pos: pos as usize,
                flags,
            }),
            _ => KeyShape::Walk,
        }
    }
}

/// Redis's legacy (first, last, step) triple, derived from `specs` as Redis derives it
/// (populateCommandLegacyRangeSpec): the plain range specs that follow one another.
pub fn legacy_range(specs: &[KeySpec]) -> (i32, i32, i32) {
    if let [KeySpec {
        begin: Begin::Index(first),
        find: Find::Range { lastkey, step, .. },
        ..
    }] = specs
    {
        let last = if *lastkey >= 0 {
            first + lastkey
        } else {
            *lastkey
        };
        return (*first, last, *step);
    }
    let (mut first, mut last, mut prev_last) = (i32::MAX, 0i32, 0i32);
    for s in specs {
        let (Begin::Index(pos), Find::Range { lastkey, step, .. }) = (s.begin, s.find) else {
            continue;
        };
        if step != 1 || (prev_last != 0 && prev_last != pos - 1) {
            continue;
        }
        first = first.min(pos);
        let abs = if lastkey >= 0 { lastkey + pos } else { lastkey };
        // Compared as unsigned, as Redis does: a negative (from the end) wins.
        if (abs as u32) > (last as u32) {
            last = abs;
        }
        prev_last = last;
    }
    if first == i32::MAX {
        (0, 0, 0)
    } else {
        (first, last, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<Bytes> {
        s.split(' ')
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect()
    }

    fn found(spec: KeySpec, line: &str) -> Vec<usize> {
        let mut v = Vec::new();
        spec.for_each(&argv(line), |i| v.push(i));
        v
    }

    #[test]
    fn specs_find_keys_as_redis_does() {
        assert_eq!(found(KeySpec::range(ks::RW, 1, 0, 1), "get k"), [1]);
        assert_eq!(
            found(KeySpec::range(ks::OW, 1, -1, 2), "mset a 1 b 2"),
            [1, 3]
        );
        assert_eq!(
            found(KeySpec::range(ks::RO, 1, -2, 1), "blpop a b 0"),
            [1, 2]
        );
        assert_eq!(found(KeySpec::keynum(ks::RW, 2), "eval s 2 a b x"), [3, 4]);
        assert_eq!(
            found(KeySpec::keynum(ks::RW, 2), "eval s 0 x"),
            Vec::<usize>::new()
        );
        // A count past the end, or that is no count, finds nothing.
        assert_eq!(
            found(KeySpec::keynum(ks::RW, 2), "eval s 5 a"),
            Vec::<usize>::new()
        );
        assert_eq!(
            found(KeySpec::keynum(ks::RW, 2), "eval s -1 a"),
            Vec::<usize>::new()
        );
        assert_eq!(
            found(KeySpec::keynum(ks::RW, 2), "eval s x a"),
            Vec::<usize>::new()
        );
        let store = KeySpec::after(ks::OW, "STORE", 1);
        assert_eq!(found(store, "georadius k 0 0 1 m store d"), [7]);
        assert_eq!(found(store, "georadius k 0 0 1 m"), Vec::<usize>::new());
        let streams = KeySpec {
            flags: ks::RO,
            begin: Begin::Keyword {
                keyword: "STREAMS",
                startfrom: 1,
            },
            find: Find::Range {
                lastkey: -1,
                step: 1,
                limit: 2,
            },
        };
        assert_eq!(found(streams, "xread count 2 streams a b 0 0"), [4, 5]);
        let from_end = KeySpec::after(ks::RO, "KEYS", -2);
        assert_eq!(found(from_end, "migrate h p keys 0 5 keys a"), [7]);
        assert!(!KeySpec::unknown(ks::RO).for_each(&argv("sort a"), |_| {}));
    }

    #[test]
    fn legacy_triples_as_redis_derives_them() {
        assert_eq!(legacy_range(&[KeySpec::range(ks::RW, 1, 0, 1)]), (1, 1, 1));
        assert_eq!(
            legacy_range(&[KeySpec::range(ks::OW, 1, -1, 2)]),
            (1, -1, 2)
        );
        let lmove = [
            KeySpec::range(ks::RW, 1, 0, 1),
            KeySpec::range(ks::RW, 2, 0, 1),
        ];
        assert_eq!(legacy_range(&lmove), (1, 2, 1));
        let bitop = [
            KeySpec::range(ks::OW, 2, 0, 1),
            KeySpec::range(ks::RO, 3, -1, 1),
        ];
        assert_eq!(legacy_range(&bitop), (2, -1, 1));
        assert_eq!(legacy_range(&[KeySpec::keynum(ks::RW, 2)]), (0, 0, 0));
        let zstore = [KeySpec::range(ks::OW, 1, 0, 1), KeySpec::keynum(ks::RO, 2)];
        assert_eq!(legacy_range(&zstore), (1, 1, 1));
    }
}
