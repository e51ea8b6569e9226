//! GEOSEARCH, GEOSEARCHSTORE and the GEORADIUS family: one generic search, as Redis's
//! georadiusGeneric. The shape is covered by a cell of an estimated step and its eight
//! neighbours; each cell is a score range of the sorted set, scanned in score order, its
//! points kept if inside the shape; the results are then ordered (or not) and replied or
//! stored. Errors come in Redis's order, options are parsed as it parses them, and the
//! scan, the early stop of ANY and the sorts are Redis's so that even ties come out the
//! same.

use super::distance::within;
use super::hash::{search_cells, Extent, Shape};
use super::sort::merge_sort;
use super::{
    c_i64, decode_score, double_arg, lonlat_arg, radius_keys, radius_member_keys, reply_coord,
    reply_distance, unit_arg,
};
use crate::commands::pqsort::pqsort;
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::exec::effects::cmd;
use crate::services::notify;
use bytes::Bytes;
use std::cmp::Ordering;
use strata_engine::{Ttl, Value, ZSetValue};
use strata_resp::format_g17;

/// Which command runs the search.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS and GEORADIUS_RO: a centre from arguments 2 and 3.
    Radius,
    /// GEORADIUSBYMEMBER and its _RO: the centre is a member's position.
    RadiusByMember,
    /// GEOSEARCH: FROMMEMBER/FROMLONLAT and BYRADIUS/BYBOX options.
    Search,
    /// GEOSEARCHSTORE: GEOSEARCH storing into argument 1.
    SearchStore,
}

pub(super) fn georadius(ctx: &mut Ctx<'_>) -> CmdResult {
    search(ctx, Form::Radius, true)
}

pub(super) fn georadius_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    search(ctx, Form::Radius, false)
}

pub(super) fn georadiusbymember(ctx: &mut Ctx<'_>) -> CmdResult {
    search(ctx, Form::RadiusByMember, true)
}

pub(super) fn georadiusbymember_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    search(ctx, Form::RadiusByMember, false)
}

pub(super) fn geosearch(ctx: &mut Ctx<'_>) -> CmdResult {
    search(ctx, Form::Search, false)
}

pub(super) fn geosearchstore(ctx: &mut Ctx<'_>) -> CmdResult {
    search(ctx, Form::SearchStore, false)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// The options after the fixed arguments.
struct Options {
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    any: bool,
    sort: Sort,
    /// 0: no limit.
    count: usize,
    /// The argument naming the destination, if the results are stored.
    store: Option<usize>,
    storedist: bool,
}

/// A point found: its member, position (its cell's centre), distance from the shape's
/// centre in meters, and score.
#[derive(Clone, Copy)]
struct Point<'z> {
    member: &'z [u8],
    lon: f64,
    lat: f64,
    dist: f64,
    score: f64,
}

/// Where `member` is, or Redis's error for a missing one.
fn member_position(z: &ZSetValue, member: &[u8]) -> Result<(f64, f64), CmdError> {
    z.score(member).map(decode_score).ok_or(CmdError::Static(
        "ERR could not decode requested zset member",
    ))
}

/// A radius and its unit from arguments `i` and `i + 1`: (radius, meters per unit).
fn radius_arg(ctx: &Ctx<'_>, i: usize) -> Result<(f64, f64), CmdError> {
    let r = double_arg(ctx, i, Some("ERR need numeric radius"))?;
    if r < 0.0 {
        return Err(CmdError::Static("ERR radius cannot be negative"));
    }
    Ok((r, unit_arg(ctx, i + 1)?))
}

/// A box's width, height and unit from arguments `i..i + 3`.
fn box_arg(ctx: &Ctx<'_>, i: usize) -> Result<(f64, f64, f64), CmdError> {
    let w = double_arg(ctx, i, Some("ERR need numeric width"))?;
    let h = double_arg(ctx, i + 1, Some("ERR need numeric height"))?;
    if h < 0.0 || w < 0.0 {
        return Err(CmdError::Static("ERR height or width cannot be negative"));
    }
    Ok((w, h, unit_arg(ctx, i + 2)?))
}

fn search(ctx: &mut Ctx<'_>, form: Form, may_store: bool) -> CmdResult {
    let src_at = if form == Form::SearchStore { 2 } else { 1 };
    // The keys the command was planned with: the source, and the destination of a store.
    let positions = match form {
        Form::SearchStore => vec![1, 2],
        Form::Radius | Form::RadiusByMember if may_store => {
            let find = match form {
                Form::Radius => radius_keys,
                _ => radius_member_keys,
            };
            let mut v = Vec::new();
            find(ctx.argv, &mut |k| v.push(k.pos));
            v
        }
        _ => vec![1],
    };
    let keys: Vec<&[u8]> = positions.into_iter().map(|i| ctx.arg(i)).collect();
    let mut l = ctx.lock(&keys);
    let src = ctx.arg(src_at);
    let z = l.zset_get(src)?;

    let mut shape = Shape {
        lon: 0.0,
        lat: 0.0,
        conversion: 0.0,
        extent: Extent::Radius(0.0),
    };
    let base = match form {
        Form::Radius => {
            (shape.lon, shape.lat) = lonlat_arg(ctx, 2)?;
            let (r, unit) = radius_arg(ctx, 4)?;
            (shape.extent, shape.conversion) = (Extent::Radius(r), unit);
            6
        }
        Form::RadiusByMember => {
            // Without a source the arguments are still read, for the reply's shape.
            if let Some(z) = z {
                (shape.lon, shape.lat) = member_position(z, ctx.arg(2))?;
                let (r, unit) = radius_arg(ctx, 3)?;
                (shape.extent, shape.conversion) = (Extent::Radius(r), unit);
            }
            5
        }
        Form::Search => 2,
        Form::SearchStore => 3,
    };
    let searching = matches!(form, Form::Search | Form::SearchStore);
    let mut o = Options {
        withdist: false,
        withhash: false,
        withcoord: false,
        any: false,
        sort: Sort::None,
        count: 0,
        store: (form == Form::SearchStore).then_some(1),
        storedist: false,
    };
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let argc = ctx.argv.len();
    let mut i = base;
    while i < argc {
        let left = argc - i - 1;
        match ctx.lower(i).as_slice() {
            b"withdist" => o.withdist = true,
            b"withhash" => o.withhash = true,
            b"withcoord" => o.withcoord = true,
            b"any" => o.any = true,
            b"asc" => o.sort = Sort::Asc,
            b"desc" => o.sort = Sort::Desc,
            b"count" if left >= 1 => {
                let n = ctx.int_arg(i + 1)?;
                if n <= 0 {
                    return Err(CmdError::Static("ERR COUNT must be > 0"));
                }
                o.count = usize::try_from(n).unwrap_or(usize::MAX);
                i += 1;
            }
            opt @ (b"store" | b"storedist") if left >= 1 && may_store => {
                o.store = Some(i + 1);
                o.storedist = opt == b"storedist";
                i += 1;
            }
            b"storedist" if form == Form::SearchStore => o.storedist = true,
            b"frommember" if left >= 1 && searching && !fromloc => {
                if let Some(z) = z {
                    (shape.lon, shape.lat) = member_position(z, ctx.arg(i + 1))?;
                }
                frommember = true;
                i += 1;
            }
            b"fromlonlat" if left >= 2 && searching && !frommember => {
                (shape.lon, shape.lat) = lonlat_arg(ctx, i + 1)?;
                fromloc = true;
                i += 2;
            }
            b"byradius" if left >= 2 && searching && !bybox => {
                let (r, unit) = radius_arg(ctx, i + 1)?;
                (shape.extent, shape.conversion) = (Extent::Radius(r), unit);
                byradius = true;
                i += 2;
            }
            b"bybox" if left >= 3 && searching && !byradius => {
                let (width, height, unit) = box_arg(ctx, i + 1)?;
                (shape.extent, shape.conversion) = (Extent::Box { width, height }, unit);
                bybox = true;
                i += 3;
            }
            _ => return Err(CmdError::SYNTAX),
        }
        i += 1;
    }
    if o.store.is_some() && (o.withdist || o.withhash || o.withcoord) {
        let what = if form == Form::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(CmdError::Custom(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )));
    }
    let name = || String::from_utf8_lossy(ctx.arg(0)).into_owned();
    if searching && !(frommember || fromloc) {
        return Err(CmdError::Custom(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            name()
        )));
    }
    if searching && !(byradius || bybox) {
        return Err(CmdError::Custom(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
            name()
        )));
    }
    if o.any && o.count == 0 {
        return Err(CmdError::Static(
            "ERR the ANY argument requires COUNT argument",
        ));
    }
    if o.count != 0 && o.sort == Sort::None && !o.any {
        // The nearest COUNT points are wanted: that needs an order.
        o.sort = Sort::Asc;
    }

    let mut points = Vec::new();
    if let Some(z) = z {
        collect(z, &shape, if o.any { o.count } else { 0 }, &mut points);
    }
    let returned = if o.count == 0 {
        points.len()
    } else {
        points.len().min(o.count)
    };
    order(&mut points, o.sort, returned);
    let points = &points[..returned];

    let Some(dst_at) = o.store else {
        if form == Form::Radius || form == Form::RadiusByMember {
            // GEORADIUS without STORE is declared a write but changes nothing.
            ctx.no_effect();
        }
        reply_points(ctx, &o, points, shape.conversion);
        return Ok(());
    };
    // Stored: member → position hash, or (STOREDIST) distance in the unit asked for.
    let mut items: Vec<(Vec<u8>, f64)> = points
        .iter()
        .map(|p| {
            let score = if o.storedist {
                p.dist / shape.conversion
            } else {
                p.score
            };
            (p.member.to_vec(), score)
        })
        .collect();
    if items.iter().any(|(_, s)| s.is_nan()) {
        // Not reachable with real coordinates (the haversine stays defined); Redis would
        // abort on it, a sorted set cannot hold it.
        return Err(CmdError::Static(
            "ERR resulting score is not a number (NaN)",
        ));
    }
    let dst = ctx.arg(dst_at);
    if !keys.contains(&dst) {
        // The planned keys name every destination the parser accepts; never write outside them.
        return Err(CmdError::SYNTAX);
    }
    let n = items.len();
    if n > 0 {
        sort_unique(&mut items);
        let mut zadd = Vec::with_capacity(2 + 2 * items.len());
        zadd.push(Bytes::from_static(b"ZADD"));
        zadd.push(Bytes::copy_from_slice(dst));
        for (m, s) in &items {
            zadd.push(Bytes::from(format_g17(*s)));
            zadd.push(Bytes::copy_from_slice(m));
        }
        let value = ZSetValue::from_members(items, &ctx.keyspace().encodings);
        l.set_value(dst, Value::ZSet(Box::new(value)), Ttl::Clear);
        drop(l);
        // The journal gets the result, not the search: a replay then builds exactly
        // this set whatever its floating point does.
        ctx.rewrite(vec![cmd(&[b"DEL", dst]), zadd]);
        ctx.signal_key_ready(dst);
        let event = if searching {
            "geosearchstore"
        } else {
            "georadiusstore"
        };
        ctx.notify(notify::ZSET, event, dst);
    } else {
        let removed = l.remove(dst);
        drop(l);
        if removed {
            ctx.rewrite1(cmd(&[b"DEL", dst]));
            ctx.notify(notify::GENERIC, "del", dst);
        } else {
            ctx.no_effect();
        }
    }
    ctx.out.int(n as i64);
    Ok(())
}

/// Appends the points of the shape found in its cells, in Redis's scan order; with a
/// `limit` (ANY), stops once that many are found.
fn collect<'z>(z: &'z ZSetValue, shape: &Shape, limit: usize, points: &mut Vec<Point<'z>>) {
    let cells = search_cells(shape);
    let full = |points: &Vec<Point<'z>>| limit > 0 && points.len() >= limit;
    // Redis skips a cell equal to the last one scanned, except after the centre's.
    let mut last = 0;
    for (i, cell) in cells.iter().enumerate() {
        let Some(cell) = *cell else {
            continue;
        };
        if last != 0 && cells[last] == Some(cell) {
            continue;
        }
        if full(points) {
            break;
        }
        let (min, max) = cell.score_range();
        let (min, max) = (min as f64, max as f64);
        let span = z.span(false, &|_, s| s >= min, &|_, s| s < max, false);
        if let Some((lo, hi)) = span {
            z.walk(lo, hi + 1, false, |member, score| {
                let (lon, lat) = decode_score(score);
                if let Some(dist) = within(shape, lon, lat) {
                    points.push(Point {
                        member,
                        lon,
                        lat,
                        dist,
                        score,
                    });
                }
                !full(points)
            });
        }
        last = i;
    }
}

/// Redis's result comparator: by distance, NaN sorting as "less" against anything.
fn by_distance(a: &Point<'_>, b: &Point<'_>) -> Ordering {
    if a.dist > b.dist {
        Ordering::Greater
    } else if a.dist == b.dist {
        Ordering::Equal
    } else {
        Ordering::Less
    }
}

/// Orders the points as asked; when only the first `returned` are wanted, only those.
fn order(points: &mut [Point<'_>], sort: Sort, returned: usize) {
    let asc = by_distance;
    let desc = |a: &Point<'_>, b: &Point<'_>| by_distance(a, b).reverse();
    let all = returned == points.len();
    match sort {
        Sort::None => {}
        Sort::Asc if all => merge_sort(points, &asc),
        Sort::Desc if all => merge_sort(points, &desc),
        // A partial sort only happens for COUNT, so at least one point is wanted.
        Sort::Asc => pqsort(points, &mut |a, b| asc(a, b), 0, returned as i64 - 1),
        Sort::Desc => pqsort(points, &mut |a, b| desc(a, b), 0, returned as i64 - 1),
    }
}

/// Sorts stored results by (score, member) and drops a member seen twice (the cells
/// scanned never overlap, so this only guards the set's invariant).
fn sort_unique(items: &mut Vec<(Vec<u8>, f64)>) {
    items.sort_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    });
    items.dedup_by(|a, b| a.0 == b.0);
}

fn reply_points(ctx: &mut Ctx<'_>, o: &Options, points: &[Point<'_>], conversion: f64) {
    let extra = usize::from(o.withdist) + usize::from(o.withcoord) + usize::from(o.withhash);
    let out = &mut ctx.out;
    out.array(points.len());
    for p in points {
        if extra > 0 {
            out.array(extra + 1);
        }
        out.bulk(p.member);
        if o.withdist {
            reply_distance(out, p.dist / conversion);
        }
        if o.withhash {
            out.int(c_i64(p.score));
        }
        if o.withcoord {
            out.array(2);
            reply_coord(out, p.lon);
            reply_coord(out, p.lat);
        }
    }
}
