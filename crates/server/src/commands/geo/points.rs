//! GEOADD, GEODIST, GEOHASH and GEOPOS: adding points and reading them back.

use super::hash::{self, STEP_MAX};
use super::{decode_score, distance, lonlat_arg, reply_coord, reply_distance, unit_arg};
use crate::commands::zset::zadd_pairs;
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use strata_engine::ZSetValue;

/// GEOADD key [NX|XX] [CH] lon lat member...: ZADD with each point's geohash as its
/// score (so its reply, its keyspace event "zadd" and its errors are ZADD's).
pub(super) fn geoadd(ctx: &mut Ctx<'_>) -> CmdResult {
    let argc = ctx.argv.len();
    let (mut fl, mut ch) = (0u8, false);
    let mut idx = 2;
    while idx < argc {
        match ctx.lower(idx).as_slice() {
            b"nx" => fl |= ZSetValue::NX,
            b"xx" => fl |= ZSetValue::XX,
            b"ch" => ch = true,
            _ => break,
        }
        idx += 1;
    }
    let both = ZSetValue::NX | ZSetValue::XX;
    let rest = argc - idx;
    if !rest.is_multiple_of(3) || fl & both == both || rest == 0 {
        return Err(CmdError::SYNTAX);
    }
    let mut pairs = Vec::with_capacity(rest / 3);
    for at in (idx..argc).step_by(3) {
        let (lon, lat) = lonlat_arg(ctx, at)?;
        // In range, so the encoding exists; its score is the 52-bit hash.
        let bits = hash::encode_wgs84(lon, lat, STEP_MAX).map_or(0, |c| c.min_score());
        pairs.push((bits as f64, ctx.arg(at + 2)));
    }
    zadd_pairs(ctx, fl, ch, &pairs)
}

/// GEODIST key member1 member2 [unit]
pub(super) fn geodist(ctx: &mut Ctx<'_>) -> CmdResult {
    let to_meters = match ctx.argv.len() {
        5 => unit_arg(ctx, 4)?,
        n if n > 5 => return Err(CmdError::SYNTAX),
        _ => 1.0,
    };
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(z) = l.zset_get(key)? else {
        ctx.out.null();
        return Ok(());
    };
    match (z.score(ctx.arg(2)), z.score(ctx.arg(3))) {
        (Some(a), Some(b)) => {
            let ((lon1, lat1), (lon2, lat2)) = (decode_score(a), decode_score(b));
            reply_distance(
                &mut ctx.out,
                distance::distance(lon1, lat1, lon2, lat2) / to_meters,
            );
        }
        _ => ctx.out.null(),
    }
    Ok(())
}

/// The geohash alphabet (base 32 without a, i, l, o).
const BASE32: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";

/// The standard 11-character geohash of a stored score: the position re-encoded over
/// latitudes -90..90 (geo sets use -85.05..85.05), 52 bits in 10 characters and a '0'.
fn geohash_string(score: f64) -> [u8; 11] {
    let (lon, lat) = decode_score(score);
    let bits = hash::encode(hash::LON_SPAN, hash::STANDARD_LAT_SPAN, lon, lat, STEP_MAX)
        .map_or(0, |c| c.bits);
    let mut s = [b'0'; 11];
    for (i, ch) in s.iter_mut().take(10).enumerate() {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *ch = BASE32[idx as usize];
    }
    s
}

/// GEOHASH key [member...]
pub(super) fn geohash(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let z = l.zset_get(key)?;
    let members = &ctx.argv[2..];
    ctx.out.array(members.len());
    for m in members {
        match z.and_then(|z| z.score(m)) {
            Some(score) => ctx.out.bulk(&geohash_string(score)),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

/// GEOPOS key [member...]
pub(super) fn geopos(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let z = l.zset_get(key)?;
    let members = &ctx.argv[2..];
    ctx.out.array(members.len());
    for m in members {
        match z.and_then(|z| z.score(m)) {
            Some(score) => {
                let (lon, lat) = decode_score(score);
                ctx.out.array(2);
                reply_coord(&mut ctx.out, lon);
                reply_coord(&mut ctx.out, lat);
            }
            None => ctx.out.null_array(),
        }
    }
    Ok(())
}
