//! Geo commands: the declarations of the family and the helpers its files share. A geo
//! set is a sorted set whose scores are 52-bit geohashes (`hash`); `points` holds GEOADD,
//! GEODIST, GEOHASH and GEOPOS, `search` the GEOSEARCH and GEORADIUS families over the
//! cell cover of `hash`, the distances of `distance` and the result orders of `sort`.
//! Semantics, reply shapes, number formats and error texts follow Redis 7.0's geo.c.

mod distance;
mod hash;
mod points;
mod search;
mod sort;

use crate::exec::command::{flags, ks, CmdError, Command, KeyAt, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use bytes::Bytes;
use strata_resp::{Protocol, Reply};

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "geo",
    ..Command::DEFAULT
};

const W: u32 = flags::WRITE;
const R: u32 = flags::READONLY;
const D: u32 = flags::DENYOOM;
const M: u32 = flags::MOVABLEKEYS;

const SEARCH_CPLX: &str = "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.";
const GEOSEARCH_CPLX: &str = "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape";

pub const COMMANDS: &[Command] = &[
    Command {
        name: "geoadd",
        arity: -5,
        flags: W | D,
        keys: KEY1,
        summary: "Add one or more geospatial items in the geospatial index represented using a sorted set",
        since: "3.2.0",
        complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        args: "key#key [condition=(NX | XX)] [change=CH] longitude_latitude_member=(longitude#double latitude#double member)...",
        handler: points::geoadd,
        ..FAMILY
    },
    Command {
        name: "geodist",
        arity: -4,
        flags: R,
        keys: KEY1,
        summary: "Returns the distance between two members of a geospatial index",
        since: "3.2.0",
        complexity: "O(log(N))",
        args: "key#key member1 member2 [unit=(M | KM | FT | MI)]",
        handler: points::geodist,
        ..FAMILY
    },
    Command {
        name: "geohash",
        arity: -2,
        flags: R,
        keys: KEY1,
        summary: "Returns members of a geospatial index as standard geohash strings",
        since: "3.2.0",
        complexity: "O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
        args: "key#key member...",
        handler: points::geohash,
        ..FAMILY
    },
    Command {
        name: "geopos",
        arity: -2,
        flags: R,
        keys: KEY1,
        summary: "Returns longitude and latitude of members of a geospatial index",
        since: "3.2.0",
        complexity: "O(N) where N is the number of members requested.",
        args: "key#key member...",
        handler: points::geopos,
        ..FAMILY
    },
    Command {
        name: "georadius",
        arity: -6,
        flags: W | D | M,
        keys: Keys::Custom(
            radius_keys,
            &[
                KeySpec::range(ks::RO | ks::ACCESS, 1, 0, 1),
                KeySpec::after(ks::OW | ks::UPDATE, "STORE", 6),
                KeySpec::after(ks::OW | ks::UPDATE, "STOREDIST", 6),
            ],
        ),
        summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point",
        since: "3.2.0",
        complexity: SEARCH_CPLX,
        args: "key#key longitude#double latitude#double radius#double unit=(M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count=(COUNT:count#int [ANY])] [order=(ASC | DESC)] [STORE:key#key1] [STOREDIST:key#key2]",
        handler: search::georadius,
        ..FAMILY
    },
    Command {
        name: "georadius_ro",
        arity: -6,
        flags: R,
        keys: KEY1,
        summary: "A read-only variant for GEORADIUS",
        since: "3.2.10",
        complexity: SEARCH_CPLX,
        args: "key#key longitude#double latitude#double radius#double unit=(M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count=(COUNT:count#int [ANY])] [order=(ASC | DESC)]",
        handler: search::georadius_ro,
        ..FAMILY
    },
    Command {
        name: "georadiusbymember",
        arity: -5,
        flags: W | D | M,
        keys: Keys::Custom(
            radius_member_keys,
            &[
                KeySpec::range(ks::RO | ks::ACCESS, 1, 0, 1),
                KeySpec::after(ks::OW | ks::UPDATE, "STORE", 5),
                KeySpec::after(ks::OW | ks::UPDATE, "STOREDIST", 5),
            ],
        ),
        summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member",
        since: "3.2.0",
        complexity: SEARCH_CPLX,
        args: "key#key member radius#double unit=(M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count=(COUNT:count#int [ANY])] [order=(ASC | DESC)] [STORE:key#key1] [STOREDIST:key#key2]",
        handler: search::georadiusbymember,
        ..FAMILY
    },
    Command {
        name: "georadiusbymember_ro",
        arity: -5,
        flags: R,
        keys: KEY1,
        summary: "A read-only variant for GEORADIUSBYMEMBER",
        since: "3.2.10",
        complexity: SEARCH_CPLX,
        args: "key#key member radius#double unit=(M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count=(COUNT:count#int [ANY])] [order=(ASC | DESC)]",
        handler: search::georadiusbymember_ro,
        ..FAMILY
    },
    Command {
        name: "geosearch",
        arity: -7,
        flags: R,
        keys: KEY1,
        summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.",
        since: "6.2.0",
        complexity: GEOSEARCH_CPLX,
        args: "key#key from=(FROMMEMBER:member | FROMLONLAT:longitude_latitude=(longitude#double latitude#double)) by=(circle=(BYRADIUS:radius#double unit=(M | KM | FT | MI)) | box=(BYBOX:width#double height#double unit=(M | KM | FT | MI))) [order=(ASC | DESC)] [count=(COUNT:count#int [ANY])] [WITHCOORD] [WITHDIST] [WITHHASH]",
        handler: search::geosearch,
        ..FAMILY
    },
    Command {
        name: "geosearchstore",
        arity: -8,
        flags: W | D,
        keys: Keys::Specs(&[
            KeySpec::range(ks::OW | ks::UPDATE, 1, 0, 1),
            KeySpec::range(ks::RO | ks::ACCESS, 2, 0, 1),
        ]),
        summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.",
        since: "6.2.0",
        complexity: GEOSEARCH_CPLX,
        args: "destination#key source#key1 from=(FROMMEMBER:member | FROMLONLAT:longitude_latitude=(longitude#double latitude#double)) by=(circle=(BYRADIUS:radius#double unit=(M | KM | FT | MI)) | box=(BYBOX:width#double height#double unit=(M | KM | FT | MI))) [order=(ASC | DESC)] [count=(COUNT:count#int [ANY])] [STOREDIST]",
        handler: search::geosearchstore,
        ..FAMILY
    },
];

/// Keys of GEORADIUS: the source and the destinations of STORE and STOREDIST.
fn radius_keys(argv: &[Bytes], f: &mut dyn FnMut(KeyAt)) {
    store_keys(argv, 6, f)
}

/// Keys of GEORADIUSBYMEMBER, whose options start one argument earlier.
fn radius_member_keys(argv: &[Bytes], f: &mut dyn FnMut(KeyAt)) {
    store_keys(argv, 5, f)
}

/// The source, then what Redis's key specs name (the argument after the first STORE and
/// after the first STOREDIST from `options` on: COMMAND GETKEYS lists these), then the
/// destination the command actually writes if another one: the last STORE or STOREDIST
/// as the option parser meets it.
fn store_keys(argv: &[Bytes], options: usize, f: &mut dyn FnMut(KeyAt)) {
    let is = |i: usize, word: &[u8]| argv[i].eq_ignore_ascii_case(word);
    let first_after = |word: &[u8]| {
        (options..argv.len().saturating_sub(1))
            .find(|&i| is(i, word))
            .map(|i| i + 1)
    };
    let mut keys = vec![1];
    keys.extend(first_after(b"store"));
    keys.extend(first_after(b"storedist"));
    let mut written = None;
    let mut i = options;
    while i < argv.len() {
        let has_arg = i + 1 < argv.len();
        if has_arg && (is(i, b"store") || is(i, b"storedist")) {
            written = Some(i + 1);
            i += 1;
        } else if has_arg && is(i, b"count") {
            i += 1;
        }
        i += 1;
    }
    if let Some(w) = written.filter(|w| !keys.contains(w)) {
        keys.push(w);
    }
    // The source is read; a destination is overwritten.
    for pos in keys {
        f(KeyAt {
            pos,
            flags: if pos == 1 {
                ks::RO | ks::ACCESS
            } else {
                ks::OW | ks::UPDATE
            },
        });
    }
}

// ---------------------------------------------------------------------------------------
// Shared helpers

/// Redis's getDoubleFromObject for argument `i`, with `msg` as the error ("ERR value is
/// not a valid float" without one).
fn double_arg(ctx: &Ctx<'_>, i: usize, msg: Option<&'static str>) -> Result<f64, CmdError> {
    crate::commands::zset::parse_score(ctx.arg(i)).ok_or(match msg {
        Some(m) => CmdError::Static(m),
        None => CmdError::NOT_FLOAT,
    })
}

/// A longitude and a latitude from arguments `i` and `i + 1`, inside the range geo sets
/// cover.
fn lonlat_arg(ctx: &Ctx<'_>, i: usize) -> Result<(f64, f64), CmdError> {
    let lon = double_arg(ctx, i, None)?;
    let lat = double_arg(ctx, i + 1, None)?;
    if !(hash::LON_MIN..=hash::LON_MAX).contains(&lon)
        || !(hash::LAT_MIN..=hash::LAT_MAX).contains(&lat)
    {
        return Err(CmdError::Custom(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok((lon, lat))
}

/// Meters per unit of a unit argument (m, km, ft, mi, any case).
fn unit_arg(ctx: &Ctx<'_>, i: usize) -> Result<f64, CmdError> {
    let u = ctx.arg(i);
    [
        (&b"m"[..], 1.0),
        (b"km", 1000.0),
        (b"ft", 0.3048),
        (b"mi", 1609.34),
    ]
    .into_iter()
    .find(|(name, _)| u.eq_ignore_ascii_case(name))
    .map(|(_, meters)| meters)
    .ok_or(CmdError::Static(
        "ERR unsupported unit provided. please use M, KM, FT, MI",
    ))
}

/// C's conversion of a double to a signed 64-bit integer on x86-64: truncation, and the
/// "integer indefinite" value (i64::MIN) for NaN and anything out of range.
fn c_i64(d: f64) -> i64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if (-TWO_63..TWO_63).contains(&d) {
        d as i64
    } else {
        i64::MIN
    }
}

/// C's conversion of a double to an unsigned 64-bit integer as x86-64 compilers emit it:
/// below 2^63 through the signed conversion (so -1.5 becomes 2^64 - 1), above it offset
/// by 2^63 (so 2^64 and more become 0).
fn c_u64(d: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if d >= TWO_63 {
        (c_i64(d - TWO_63) as u64) ^ (1 << 63)
    } else {
        c_i64(d) as u64
    }
}

/// The (lon, lat) a score stands for: the centre of its cell. Any score decodes, as in
/// Redis (a sorted set not made by GEOADD gives odd but well-defined positions).
fn decode_score(score: f64) -> (f64, f64) {
    let cell = hash::Cell {
        bits: c_u64(score),
        step: hash::STEP_MAX,
    };
    hash::centre(&hash::decode_wgs84(cell))
}

/// A distance as Redis prints one: rounded (half to even) to 4 decimals, as a bulk
/// string in both protocols.
fn reply_distance(out: &mut Reply<'_>, d: f64) {
    out.bulk(format_distance(d).as_bytes());
}

fn format_distance(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".into();
    }
    let scaled = (d * 10000.0).round_ties_even();
    let v = if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&scaled) {
        scaled as i64
    } else {
        // llrint's answer for what does not fit.
        i64::MIN
    };
    let sign = if v < 0 { "-" } else { "" };
    let abs = v.unsigned_abs();
    format!("{sign}{}.{:04}", abs / 10000, abs % 10000)
}

/// A coordinate as Redis prints one: 17 decimals with the trailing zeros cut; a bulk
/// string in RESP2, a double in RESP3.
fn reply_coord(out: &mut Reply<'_>, v: f64) {
    let s = format_coord(v);
    if out.proto == Protocol::Resp3 {
        out.raw(b",");
        out.raw(s.as_bytes());
        out.raw(b"\r\n");
    } else {
        out.bulk(s.as_bytes());
    }
}

fn format_coord(v: f64) -> String {
    let mut s = format!("{v:.17}");
    if s.contains('.') {
        let kept = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(kept);
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_have_four_decimals() {
        assert_eq!(format_distance(0.0), "0.0000");
        assert_eq!(format_distance(-0.0), "0.0000");
        // Exact ties (1/32 and 3/32 scaled) round to even.
        assert_eq!(format_distance(0.03125), "0.0312");
        assert_eq!(format_distance(0.09375), "0.0938");
        assert_eq!(format_distance(0.00004), "0.0000");
        assert_eq!(format_distance(12.3456789), "12.3457");
        assert_eq!(format_distance(-1.5), "-1.5000");
        assert_eq!(format_distance(f64::NAN), "-922337203685477.5808");
    }

    #[test]
    fn coordinates_lose_trailing_zeros() {
        assert_eq!(format_coord(13.5), "13.5");
        assert_eq!(format_coord(-2.0), "-2");
        assert_eq!(format_coord(-1e-20), "0");
        assert_eq!(format_coord(0.1), "0.10000000000000001");
    }

    #[test]
    fn c_conversions() {
        assert_eq!(c_i64(-1.5), -1);
        assert_eq!(c_i64(f64::NAN), i64::MIN);
        assert_eq!(c_i64(1e19), i64::MIN);
        assert_eq!(c_u64(-1.0), u64::MAX);
        assert_eq!(c_u64(1e19), 10_000_000_000_000_000_000);
        assert_eq!(c_u64(f64::INFINITY), 0);
        assert_eq!(c_u64(f64::NEG_INFINITY), 1 << 63);
    }

    #[test]
    fn radius_store_keys() {
        let argv = |s: &str| -> Vec<Bytes> {
            s.split(' ')
                .map(|a| Bytes::copy_from_slice(a.as_bytes()))
                .collect()
        };
        let pos = |find: crate::exec::command::KeyFinder, args: Vec<Bytes>| -> Vec<usize> {
            let mut v = Vec::new();
            find(&args, &mut |k| v.push(k.pos));
            v
        };
        assert_eq!(pos(radius_keys, argv("georadius k 1 2 3 km")), vec![1]);
        assert_eq!(
            pos(
                radius_keys,
                argv("georadius k 1 2 3 km store a storedist b")
            ),
            vec![1, 7, 9]
        );
        assert_eq!(
            pos(
                radius_keys,
                argv("georadius k 1 2 3 km store a count 2 store b")
            ),
            vec![1, 7, 11]
        );
        assert_eq!(
            pos(radius_keys, argv("georadius k 1 2 3 km count store")),
            vec![1]
        );
        assert_eq!(
            pos(
                radius_member_keys,
                argv("georadiusbymember k m 3 km STORE d")
            ),
            vec![1, 6]
        );
        assert_eq!(
            pos(radius_keys, argv("georadius k 1 2 3 km store")),
            vec![1]
        );
    }
}
