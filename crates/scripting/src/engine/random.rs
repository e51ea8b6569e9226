//! math.random and math.randomseed as Redis has them: its own drand48 generator, seeded the
//! same way, so scripts draw the same numbers as on redis-server.

use super::{raise, ret, to_number, type_name, where_prefix, Ctx};
use mlua::{MultiValue, Value};

/// redisLrand48: the drand48 LCG, 31-bit results.
fn lrand48(state: &mut u64) -> i32 {
    *state = (0x5_DEEC_E66D_u64.wrapping_mul(*state).wrapping_add(0xB)) & ((1 << 48) - 1);
    (*state >> 17) as i32
}

/// luaL_checkint for math.random's arguments, with Lua's error text.
fn check_int(lua: &mlua::Lua, args: &MultiValue, i: usize, fname: &str) -> Result<i64, String> {
    match args.get(i).and_then(to_number) {
        Some(n) => Ok(n as i32 as i64),
        None => Err(format!(
            "{}bad argument #{} to '{}' (number expected, got {})",
            where_prefix(lua, 2),
            i + 1,
            fname,
            type_name(args.get(i))
        )),
    }
}

pub(super) fn math_random(lua: &mlua::Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    let x = {
        let Some(mut c) = lua.app_data_mut::<Ctx>() else {
            return ret(lua, vec![]);
        };
        lrand48(&mut c.rand)
    };
    let r = f64::from(x % i32::MAX) / f64::from(i32::MAX);
    let v = match args.len() {
        0 => r,
        1 => {
            let u = match check_int(lua, &args, 0, "random") {
                Ok(u) => u,
                Err(e) => return raise(e, lua),
            };
            if u < 1 {
                let m = format!(
                    "{}bad argument #1 to 'random' (interval is empty)",
                    where_prefix(lua, 2)
                );
                return raise(m, lua);
            }
            (r * u as f64).floor() + 1.0
        }
        2 => {
            let (l, u) = match (
                check_int(lua, &args, 0, "random"),
                check_int(lua, &args, 1, "random"),
            ) {
                (Ok(l), Ok(u)) => (l, u),
                (Err(e), _) | (_, Err(e)) => return raise(e, lua),
            };
            if l > u {
                let m = format!(
                    "{}bad argument #2 to 'random' (interval is empty)",
                    where_prefix(lua, 2)
                );
                return raise(m, lua);
            }
            (r * (u - l + 1) as f64).floor() + l as f64
        }
        _ => {
            return raise(
                format!("{}wrong number of arguments", where_prefix(lua, 2)),
                lua,
            )
        }
    };
    ret(lua, vec![Value::Number(v)])
}

pub(super) fn math_randomseed(lua: &mlua::Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    let seed = match check_int(lua, &args, 0, "randomseed") {
        Ok(s) => s as i32,
        Err(e) => return raise(e, lua),
    };
    if let Some(mut c) = lua.app_data_mut::<Ctx>() {
        // redisSrand48: high 32 bits from the seed, low 16 bits 0x330E.
        c.rand = ((u64::from(seed as u32)) << 16) | 0x330E;
    }
    ret(lua, vec![])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand_matches_redis() {
        // First values of math.random(1000000) on a fresh redis-server 7.0.15.
        let mut s = 0x1234_ABCD_330E;
        let mut next = || {
            let r = f64::from(lrand48(&mut s) % i32::MAX) / f64::from(i32::MAX);
            (r * 1e6).floor() as i64 + 1
        };
        assert_eq!(next(), 396465);
        assert_eq!(next(), 840486);
    }
}
