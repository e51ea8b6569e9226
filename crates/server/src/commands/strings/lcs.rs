//! LCS: the longest common subsequence of two strings, with IDX, MINMATCHLEN and
//! WITHMATCHLEN as Redis 7.0 answers them.

use super::{is_opt, max_string_len};
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;

pub(super) fn lcs(ctx: &mut Ctx<'_>) -> CmdResult {
    let (ka, kb) = (ctx.arg(1), ctx.arg(2));
    // Copy the values out, so the quadratic work below runs without the lock.
    let (a, b) = {
        let mut l = ctx.lock(&[ka, kb]);
        let not_string = || CmdError::err("The specified keys must contain string values");
        let a = match l.get(ka) {
            None => Vec::new(),
            Some(e) => e.as_str().ok_or_else(not_string)?.to_vec(),
        };
        let b = match l.get(kb) {
            None => Vec::new(),
            Some(e) => e.as_str().ok_or_else(not_string)?.to_vec(),
        };
        (a, b)
    };
    let (mut getlen, mut getidx, mut withmatchlen) = (false, false, false);
    let mut minmatchlen: i64 = 0;
    let mut j = 3;
    while j < ctx.argv.len() {
        let opt = ctx.arg(j);
        let more = j + 1 < ctx.argv.len();
        if is_opt(opt, b"idx") {
            getidx = true;
        } else if is_opt(opt, b"len") {
            getlen = true;
        } else if is_opt(opt, b"withmatchlen") {
            withmatchlen = true;
        } else if is_opt(opt, b"minmatchlen") && more {
            minmatchlen = ctx.int_arg(j + 1)?.max(0);
            j += 1;
        } else {
            return Err(CmdError::SYNTAX);
        }
        j += 1;
    }
    if getidx && getlen {
        return Err(CmdError::err(
            "If you want both the length and indexes, please just use IDX.",
        ));
    }
    if a.len() as u64 >= u64::from(u32::MAX - 1) || b.len() as u64 >= u64::from(u32::MAX - 1) {
        return Err(CmdError::err("String too long for LCS"));
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u128 + 1) * (blen as u128 + 1);
    if cells * 4 > u128::from(max_string_len(ctx)) {
        return Err(CmdError::err(
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let w = blen + 1;
    let mut table: Vec<u32> = Vec::new();
    if table.try_reserve_exact(cells as usize).is_err() {
        return Err(CmdError::err(
            "Insufficient memory, failed allocating transient memory for LCS",
        ));
    }
    table.resize(cells as usize, 0);
    for i in 1..=alen {
        for jj in 1..=blen {
            table[i * w + jj] = if a[i - 1] == b[jj - 1] {
                table[(i - 1) * w + jj - 1] + 1
            } else {
                table[(i - 1) * w + jj].max(table[i * w + jj - 1])
            };
        }
    }
    let total = table[alen * w + blen];

    // Walk back from the end, building the string and the matching ranges as Redis does.
    let computelcs = getidx || !getlen;
    let mut result = vec![0u8; if computelcs { total as usize } else { 0 }];
    let mut idx = total as usize;
    let mut ranges: Vec<[u32; 5]> = Vec::new();
    let (mut i, mut jj) = (alen, blen);
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0usize, 0usize, 0usize);
    while computelcs && i > 0 && jj > 0 {
        let mut emit = false;
        if a[i - 1] == b[jj - 1] {
            result[idx - 1] = a[i - 1];
            if a_start == alen {
                a_start = i - 1;
                a_end = i - 1;
                b_start = jj - 1;
                b_end = jj - 1;
            } else if a_start == i && b_start == jj {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            jj -= 1;
        } else {
            if table[(i - 1) * w + jj] > table[i * w + jj - 1] {
                i -= 1;
            } else {
                jj -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        let match_len = a_end.wrapping_sub(a_start).wrapping_add(1);
        if emit {
            if (minmatchlen == 0 || match_len as u64 >= minmatchlen as u64) && getidx {
                ranges.push([
                    a_start as u32,
                    a_end as u32,
                    b_start as u32,
                    b_end as u32,
                    match_len as u32,
                ]);
            }
            a_start = alen;
        }
    }
    drop(table);
    if getidx {
        ctx.out.map(2);
        ctx.out.bulk(b"matches");
        ctx.out.array(ranges.len());
        for r in &ranges {
            ctx.out.array(if withmatchlen { 3 } else { 2 });
            ctx.out.array(2);
            ctx.out.int(i64::from(r[0]));
            ctx.out.int(i64::from(r[1]));
            ctx.out.array(2);
            ctx.out.int(i64::from(r[2]));
            ctx.out.int(i64::from(r[3]));
            if withmatchlen {
                ctx.out.int(i64::from(r[4]));
            }
        }
        ctx.out.bulk(b"len");
        ctx.out.int(i64::from(total));
    } else if getlen {
        ctx.out.int(i64::from(total));
    } else {
        ctx.out.bulk(&result);
    }
    Ok(())
}
