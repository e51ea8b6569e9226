//! SORT and SORT_RO, as Redis 7.0's sort.c: lists, sets and sorted sets; BY (a constant
//! pattern such as `nosort` skips sorting; `*` patterns weigh by strings or, with `->`,
//! hash fields), LIMIT, GET (several, `#`), ASC/DESC, ALPHA and STORE.
//!
//! # Locking
//!
//! The engine locks all of a command's keys in one call, in ascending shard order. SORT's
//! BY/GET keys derive from the source's contents, so they are unknown until the source is
//! read. SORT therefore:
//!
//! 1. locks the source alone, reads (and, for a listpack sorted set, converts, as Redis
//!    does) it and copies its elements — the read lookup Redis does once;
//! 2. unlocks, derives every key the patterns name for those elements, and locks the
//!    source, the STORE key and all of those keys in one call;
//! 3. re-reads the source under that lock; if another client changed it in between, the
//!    derived keys may be stale, so it unlocks and repeats step 2 with the new elements.
//!
//! Steps 2-3 hold every key SORT reads or writes for the rest of the command, so the
//! result is one atomic snapshot, as with Redis's single thread. When no pattern needs
//! keys (no BY with `*`, no GET other than `#`), SORT locks source and STORE key at once.
//!
//! # Where the order is Redis's
//!
//! Full sorts are stable like glibc's qsort (a merge sort); a BY sort limited by LIMIT
//! uses a port of Redis's pqsort, so ties (ALPHA over missing weights...) come out as in
//! Redis. ALPHA without STORE compares as strcoll in the C/C.UTF-8 locale (bytes up to the
//! first NUL); with STORE, whole strings byte by byte. The unsorted order of a set
//! (`BY nosort`) is its storage order: ascending for an intset, unspecified for a
//! hashtable (as in Redis, where it differs too). Weights are read with strtod's rules.

use crate::exec::command::{flags, ks, CmdError, CmdResult, Command, KeyAt, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use bytes::Bytes;
use std::cmp::Ordering;
use std::sync::atomic::AtomicUsize;
use strata_engine::{Encodings, ListValue, Locked, Ttl, Value, ZSetValue};

const COMPLEXITY: &str = "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).";

pub const COMMANDS: &[Command] = &[
    Command {
        name: "sort",
        arity: -2,
        flags: flags::WRITE | flags::DENYOOM | flags::MOVABLEKEYS | flags::DB_SHARDS,
        keys: Keys::Custom(
            sort_keys,
            &[
                KeySpec::range(ks::RO | ks::ACCESS, 1, 0, 1),
                // BY and GET patterns: keys made from the elements sorted.
                KeySpec::unknown(ks::RO | ks::ACCESS),
                // STORE may come anywhere.
                KeySpec::unknown(ks::OW | ks::UPDATE),
            ],
        ),
        group: "generic",
        summary: "Sort the elements in a list, set or sorted set",
        since: "1.0.0",
        complexity: COMPLEXITY,
        acl: &["@set", "@sortedset", "@list", "@dangerous"],
        args: "key#key [BY:pattern#pattern1] [LIMIT:offset_count=(offset#int count#int)] [GET:pattern#pattern1]...+ [order=(ASC | DESC)] [sorting=ALPHA] [STORE:destination#key2]",
        handler: sort,
        ..Command::DEFAULT
    },
    Command {
        name: "sort_ro",
        arity: -2,
        flags: flags::READONLY | flags::MOVABLEKEYS | flags::DB_SHARDS,
        keys: Keys::Specs(&[
            KeySpec::range(ks::RO | ks::ACCESS, 1, 0, 1),
            KeySpec::unknown(ks::RO | ks::ACCESS),
        ]),
        group: "generic",
        summary: "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
        since: "7.0.0",
        complexity: COMPLEXITY,
        acl: &["@set", "@sortedset", "@list", "@dangerous"],
        args: "key#key [BY:pattern#pattern1] [LIMIT:offset_count=(offset#int count#int)] [GET:pattern#pattern1]...+ [order=(ASC | DESC)] [sorting=ALPHA]",
        handler: sort_ro,
        ..Command::DEFAULT
    },
];

/// Redis's sortGetKeys: the source (read), and the key after the last STORE (written;
/// options with arguments are skipped as Redis skips them).
fn sort_keys(argv: &[Bytes], f: &mut dyn FnMut(KeyAt)) {
    f(KeyAt {
        pos: 1,
        flags: ks::RO | ks::ACCESS,
    });
    let mut store = None;
    let mut i = 2;
    while i < argv.len() {
        let a = &argv[i];
        if a.eq_ignore_ascii_case(b"limit") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"store") && i + 1 < argv.len() {
            store = Some(i + 1);
        } else if a.eq_ignore_ascii_case(b"get") || a.eq_ignore_ascii_case(b"by") {
            i += 1;
        }
        i += 1;
    }
    if let Some(pos) = store {
        f(KeyAt {
            pos,
            flags: ks::OW | ks::UPDATE,
        });
    }
}

fn sort(ctx: &mut Ctx<'_>) -> CmdResult {
    sort_generic(ctx, false)
}

fn sort_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    sort_generic(ctx, true)
}

/// The parsed options.
struct Opts<'a> {
    desc: bool,
    alpha: bool,
    limit_start: i64,
    limit_count: i64,
    store: Option<&'a [u8]>,
    sortby: Option<&'a [u8]>,
    /// A constant BY pattern was given (sticky, as in Redis, even if a later BY has `*`).
    dontsort: bool,
    gets: Vec<&'a [u8]>,
    /// Called by a script, whose result must not depend on a set's storage order.
    script: bool,
}

/// Parses SORT's options. `all_keys`: the user may read every key, which BY with a
/// pattern and GET need (they reach keys the command does not name).
fn parse<'a>(argv: &'a [Bytes], readonly: bool, all_keys: bool) -> Result<Opts<'a>, CmdError> {
    let mut o = Opts {
        desc: false,
        alpha: false,
        limit_start: 0,
        limit_count: -1,
        store: None,
        sortby: None,
        dontsort: false,
        gets: Vec::new(),
        script: false,
    };
    let int = |b: &[u8]| crate::exec::command::parse_i64(b).ok_or(CmdError::NOT_INTEGER);
    let mut j = 2;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let a = &argv[j];
        if a.eq_ignore_ascii_case(b"asc") {
            o.desc = false;
        } else if a.eq_ignore_ascii_case(b"desc") {
            o.desc = true;
        } else if a.eq_ignore_ascii_case(b"alpha") {
            o.alpha = true;
        } else if a.eq_ignore_ascii_case(b"limit") && left >= 2 {
            o.limit_start = int(&argv[j + 1])?;
            o.limit_count = int(&argv[j + 2])?;
            j += 2;
        } else if !readonly && a.eq_ignore_ascii_case(b"store") && left >= 1 {
            o.store = Some(&argv[j + 1]);
            j += 1;
        } else if a.eq_ignore_ascii_case(b"by") && left >= 1 {
            let p: &[u8] = &argv[j + 1];
            o.sortby = Some(p);
            if star(p).is_none() {
                o.dontsort = true;
            } else if !all_keys {
                return Err(CmdError::Static(
                    "ERR BY option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            j += 1;
        } else if a.eq_ignore_ascii_case(b"get") && left >= 1 {
            if !all_keys {
                return Err(CmdError::Static(
                    "ERR GET option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            o.gets.push(&argv[j + 1]);
            j += 1;
        } else {
            return Err(CmdError::SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

/// C string view: the bytes before the first NUL (Redis reads patterns with strchr/strstr).
fn cstr(s: &[u8]) -> &[u8] {
    match s.iter().position(|&b| b == 0) {
        Some(i) => &s[..i],
        None => s,
    }
}

/// Position of the first `*` of a pattern, as strchr finds it.
fn star(p: &[u8]) -> Option<usize> {
    cstr(p).iter().position(|&b| b == b'*')
}

/// What a pattern names for one element (lookupKeyByPattern).
enum Target {
    /// `#`: the element itself.
    Itself,
    /// Nothing (no `*`): always missing.
    Nothing,
    /// A string key, or a hash key and field.
    Key(Vec<u8>, Option<Vec<u8>>),
}

fn target(pattern: &[u8], subst: &[u8]) -> Target {
    if pattern.first() == Some(&b'#') && pattern.get(1).is_none_or(|&b| b == 0) {
        return Target::Itself;
    }
    let Some(p) = star(pattern) else {
        return Target::Nothing;
    };
    // strstr(p+1, "->") over the C string, with a non-empty field after it.
    let c = cstr(pattern);
    let arrow = c[p + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|i| p + 1 + i)
        .filter(|&f| f + 2 < c.len());
    let (postfix_end, field) = match arrow {
        Some(f) => (f, Some(pattern[f + 2..].to_vec())),
        None => (pattern.len(), None),
    };
    let mut key = Vec::with_capacity(p + subst.len() + postfix_end - p);
    key.extend_from_slice(&pattern[..p]);
    key.extend_from_slice(subst);
    key.extend_from_slice(&pattern[p + 1..postfix_end]);
    Target::Key(key, field)
}

/// lookupKeyByPattern: the value a pattern yields for an element (a read lookup).
fn lookup(l: &mut Locked<'_>, pattern: &[u8], subst: &[u8]) -> Option<Vec<u8>> {
    match target(pattern, subst) {
        Target::Itself => Some(subst.to_vec()),
        Target::Nothing => None,
        Target::Key(key, None) => l.get_str(&key).ok().flatten().map(<[u8]>::to_vec),
        Target::Key(key, Some(field)) => l
            .get_hash(&key)
            .ok()
            .flatten()
            .and_then(|h| h.get(&field))
            .map(<[u8]>::to_vec),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Set,
    ZSet,
}

/// The source as read: its elements in loading order and the output range.
#[derive(PartialEq)]
struct Loaded {
    kind: Kind,
    vector: Vec<Vec<u8>>,
    start: i64,
    end: i64,
    dontsort: bool,
    alpha: bool,
    /// BY applies (a `*` pattern and sorting is on).
    by: bool,
}

/// Reads the source (the first part of sortCommandGeneric). `read` makes it a read lookup
/// (statistics); the re-read under the full lock is a peek.
fn load(l: &mut Locked<'_>, key: &[u8], o: &Opts<'_>, read: bool) -> Result<Loaded, CmdError> {
    let kind = {
        let e = if read { l.get(key) } else { l.peek(key) };
        match e.as_ref().map(|e| e.value()) {
            None => Kind::List,
            Some(Some(Value::List(_))) => Kind::List,
            Some(Some(Value::Set(_))) => Kind::Set,
            Some(Some(Value::ZSet(_))) => Kind::ZSet,
            Some(_) => return Err(CmdError::WRONG_TYPE),
        }
    };
    let mut dontsort = o.dontsort;
    let mut alpha = o.alpha;
    let mut by = o.sortby.is_some();
    // An unsorted set is sorted anyway when stored or given to a script, so the result is
    // deterministic (the journal, replicas, a script's effects).
    if dontsort && kind == Kind::Set && (o.store.is_some() || o.script) {
        dontsort = false;
        alpha = true;
        by = false;
    }
    if kind == Kind::ZSet {
        to_skiplist(l, key);
    }
    let len = match l.peek(key).as_ref().and_then(|e| e.value()) {
        Some(Value::List(v)) => v.len(),
        Some(Value::Set(v)) => v.len(),
        Some(Value::ZSet(v)) => v.len(),
        _ => 0,
    } as i64;
    let mut start = o.limit_start.max(0).min(len);
    let count = o.limit_count.max(-1).min(len);
    let mut end = if count < 0 {
        len - 1
    } else {
        start + count - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    let mut vectorlen = len;
    if kind != Kind::Set && dontsort && (start != 0 || end != len - 1) {
        vectorlen = end - start + 1;
    }
    let vlen = usize::try_from(vectorlen).unwrap_or(0);
    let mut vector: Vec<Vec<u8>> = Vec::with_capacity(vlen);
    match l.peek(key).as_ref().and_then(|e| e.value()) {
        // An empty range (LIMIT past the end) loads nothing.
        Some(Value::List(_)) if dontsort && end < start => {}
        Some(Value::List(v)) if dontsort => {
            let s = start as usize;
            if o.desc {
                let first = v.len() - s; // exclusive end of a backward walk
                vector.extend(v.range(0, first).rev().take(vlen).map(|e| e.to_vec()));
            } else {
                vector.extend(v.range(s, v.len()).take(vlen).map(|e| e.to_vec()));
            }
            end -= start;
            start = 0;
        }
        Some(Value::List(v)) => vector.extend(v.iter().map(|e| e.to_vec())),
        Some(Value::Set(v)) => vector.extend(v.iter().map(|e| e.to_vec())),
        Some(Value::ZSet(z)) if dontsort => {
            let n = z.len();
            let s = start.max(0) as usize;
            if o.desc {
                let hi = n.saturating_sub(s);
                z.for_range(hi.saturating_sub(vlen), hi, true, |m, _| {
                    vector.push(m.to_vec())
                });
            } else {
                z.for_range(s, s + vlen, false, |m, _| vector.push(m.to_vec()));
            }
            end -= start;
            start = 0;
        }
        Some(Value::ZSet(z)) => z.for_range(0, z.len(), false, |m, _| vector.push(m.to_vec())),
        _ => {}
    }
    Ok(Loaded {
        kind,
        vector,
        start,
        end,
        dontsort,
        alpha,
        by: by && !dontsort,
    })
}

/// SORT converts a listpack sorted set to a skiplist (zsetConvert in sortCommandGeneric),
/// and OBJECT ENCODING shows it afterwards; so does Strata.
fn to_skiplist(l: &mut Locked<'_>, key: &[u8]) {
    if let Ok(Some(z)) = l.zset_mut(key) {
        if z.encoding() == "listpack" {
            let mut items = Vec::with_capacity(z.len());
            z.for_range(0, z.len(), false, |m, s| items.push((m.to_vec(), s)));
            let enc = Encodings {
                zset_max_listpack_entries: AtomicUsize::new(0),
                ..Encodings::default()
            };
            *z = ZSetValue::from_members(items, &enc);
        }
    }
}

/// The keys the patterns read for the loaded elements.
fn pattern_keys<'a>(o: &Opts<'a>, ld: &Loaded, keys: &mut Vec<Vec<u8>>) {
    let mut pats: Vec<&[u8]> = Vec::new();
    if ld.by {
        pats.extend(o.sortby);
    }
    pats.extend(o.gets.iter().copied());
    for p in pats {
        for e in &ld.vector {
            if let Target::Key(k, _) = target(p, e) {
                keys.push(k);
            }
        }
    }
}

fn needs_pattern_keys(o: &Opts<'_>) -> bool {
    (o.sortby.is_some() && !o.dontsort) || o.gets.iter().any(|g| star(g).is_some())
}

fn sort_generic(ctx: &mut Ctx<'_>, readonly: bool) -> CmdResult {
    let argv = ctx.argv;
    let mut o = parse(argv, readonly, ctx.may_read_all_keys())?;
    o.script = ctx.in_script();
    let src: &[u8] = &argv[1];
    let mut base: Vec<Vec<u8>> = vec![src.to_vec()];
    base.extend(o.store.map(<[u8]>::to_vec));
    if !needs_pattern_keys(&o) {
        let mut l = ctx.lock(&base);
        let ld = load(&mut l, src, &o, true)?;
        return finish(ctx, &mut l, &o, ld);
    }
    // See "Locking" at the top of this file.
    let mut ld = {
        let mut l = ctx.lock1(src);
        load(&mut l, src, &o, true)?
    };
    loop {
        let mut keys = base.clone();
        pattern_keys(&o, &ld, &mut keys);
        let mut l = ctx.lock(&keys);
        let again = load(&mut l, src, &o, false)?;
        if again == ld {
            return finish(ctx, &mut l, &o, ld);
        }
        drop(l);
        ld = again;
    }
}

/// strtod over a C string as SORT checks it: the value, or None when the text is not
/// entirely one number, overflows or underflows (ERANGE), or is NaN.
fn weight(s: &[u8]) -> Option<f64> {
    let s = cstr(s);
    if s.is_empty() {
        return Some(0.0); // strtod converts nothing and stops at the terminator
    }
    let t = s
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        .map_or(&s[s.len()..], |i| &s[i..]);
    // SORT refuses any ERANGE, and glibc sets it for subnormal results too.
    let (v, erange) = crate::num::strtod::strtod_all(t)?;
    (!(erange || v.is_subnormal() || v.is_nan())).then_some(v)
}

/// One element to sort with its weight.
struct Item {
    obj: Vec<u8>,
    score: f64,
    cmpobj: Option<Vec<u8>>,
}

/// strcoll in the C / C.UTF-8 locale: bytes up to the first NUL.
fn coll(a: &[u8], b: &[u8]) -> Ordering {
    cstr(a).cmp(cstr(b))
}

fn finish(ctx: &mut Ctx<'_>, l: &mut Locked<'_>, o: &Opts<'_>, ld: Loaded) -> CmdResult {
    let Loaded {
        kind: _,
        vector,
        start,
        end,
        dontsort,
        alpha,
        by,
    } = ld;
    let sortby = if by { o.sortby } else { None };
    let store = o.store.is_some();
    let mut items: Vec<Item> = vector
        .into_iter()
        .map(|obj| Item {
            obj,
            score: 0.0,
            cmpobj: None,
        })
        .collect();
    let mut conversion_error = false;
    if !dontsort {
        for it in &mut items {
            let byval = match sortby {
                Some(p) => match lookup(l, p, &it.obj) {
                    Some(v) => v,
                    None => continue,
                },
                None => {
                    if !alpha {
                        match weight(&it.obj) {
                            Some(v) => it.score = v,
                            None => conversion_error = true,
                        }
                    }
                    continue;
                }
            };
            if alpha {
                it.cmpobj = Some(byval);
            } else {
                match weight(&byval) {
                    Some(v) => it.score = v,
                    None => conversion_error = true,
                }
            }
        }
        let desc = o.desc;
        let mut cmp = |a: &Item, b: &Item| -> Ordering {
            let c = if !alpha {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.obj.cmp(&b.obj))
            } else if sortby.is_some() {
                match (&a.cmpobj, &b.cmpobj) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) if store => x.cmp(y),
                    (Some(x), Some(y)) => coll(x, y),
                }
            } else if store {
                a.obj.cmp(&b.obj)
            } else {
                coll(&a.obj, &b.obj)
            };
            if desc {
                c.reverse()
            } else {
                c
            }
        };
        let n = items.len() as i64;
        if sortby.is_some() && (start != 0 || end != n - 1) {
            if n > 0 {
                super::pqsort::pqsort(&mut items, &mut cmp, start, end);
            }
        } else {
            items.sort_by(&mut cmp);
        }
    }
    if conversion_error {
        return Err(CmdError::err(
            "One or more scores can't be converted into double",
        ));
    }
    let range: &[Item] = if end >= start && start >= 0 {
        items
            .get(start as usize..=(end as usize))
            .unwrap_or_default()
    } else {
        &[]
    };
    let per = if o.gets.is_empty() { 1 } else { o.gets.len() };
    let outputlen = range.len() * per;
    match o.store {
        None => {
            ctx.out.array(outputlen);
            for it in range {
                if o.gets.is_empty() {
                    ctx.out.bulk(&it.obj);
                }
                for g in &o.gets {
                    match lookup(l, g, &it.obj) {
                        Some(v) => ctx.out.bulk(&v),
                        None => ctx.out.null(),
                    }
                }
            }
        }
        Some(dest) => {
            let fill = ctx.keyspace().encodings.list_size();
            let mut list = ListValue::new(fill);
            for it in range {
                if o.gets.is_empty() {
                    list.push(false, &it.obj);
                }
                for g in &o.gets {
                    let v = lookup(l, g, &it.obj).unwrap_or_default();
                    list.push(false, &v);
                }
            }
            let removed = if outputlen > 0 {
                l.set_value(dest, Value::List(Box::new(list)), Ttl::Clear);
                false
            } else {
                l.remove(dest)
            };
            let event = (crate::services::notify::LIST, "sortstore");
            crate::commands::stored(ctx, dest, event, outputlen, removed, true);
            ctx.out.int(outputlen as i64);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_strtod() {
        assert_eq!(weight(b"12"), Some(12.0));
        assert_eq!(weight(b" 12"), Some(12.0));
        assert_eq!(weight(b""), Some(0.0));
        assert_eq!(weight(b"  "), None);
        assert_eq!(weight(b"12 "), None);
        assert_eq!(weight(b"1e5"), Some(1e5));
        assert_eq!(weight(b"0x10"), Some(16.0));
        assert_eq!(weight(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(weight(b"nan"), None);
        assert_eq!(weight(b"1e400"), None);
        assert_eq!(weight(b"1e-400"), None);
        assert_eq!(weight(b"1e-310"), None);
        assert_eq!(weight(b"0e-999"), Some(0.0));
        assert_eq!(weight(b"3\x00junk"), Some(3.0));
        assert_eq!(weight(b"abc"), None);
        assert_eq!(weight(b".5"), Some(0.5));
        assert_eq!(weight(b"5."), Some(5.0));
        assert_eq!(weight(b"1e"), None);
    }

    #[test]
    fn patterns() {
        let k = |t: Target| match t {
            Target::Key(k, f) => (k, f),
            _ => panic!(),
        };
        assert!(matches!(target(b"#", b"x"), Target::Itself));
        assert!(matches!(target(b"nosort", b"x"), Target::Nothing));
        assert_eq!(k(target(b"w_*", b"x")), (b"w_x".to_vec(), None));
        assert_eq!(
            k(target(b"h_*->f", b"x")),
            (b"h_x".to_vec(), Some(b"f".to_vec()))
        );
        assert_eq!(k(target(b"h_*->", b"x")), (b"h_x->".to_vec(), None));
        assert_eq!(k(target(b"*a*", b"x")), (b"xa*".to_vec(), None));
    }
}
