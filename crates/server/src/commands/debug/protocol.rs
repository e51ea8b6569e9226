//! DEBUG PROTOCOL <type>: one sample reply of each RESP type, in the client's protocol, as
//! Redis 7.0 sends them (clients and the scripting bridge test their parsers with it).

use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use strata_resp::Protocol;

pub(super) fn protocol(ctx: &mut Ctx<'_>) -> CmdResult {
    let resp3 = ctx.out.proto == Protocol::Resp3;
    let out = &mut ctx.out;
    match ctx.argv[2].to_ascii_lowercase().as_slice() {
        b"string" => out.bulk(b"Hello World"),
        b"integer" => out.int(12345),
        // Redis's sample value (not pi).
        #[allow(clippy::approx_constant)]
        b"double" => out.double(3.141),
        b"bignum" => out.bignum("1234567999999999999999999999999999999"),
        b"null" => out.null(),
        b"array" => {
            out.array(3);
            (0..3).for_each(|i| out.int(i));
        }
        b"set" => {
            out.set(3);
            (0..3).for_each(|i| out.int(i));
        }
        b"map" => {
            out.map(3);
            for i in 0..3 {
                out.int(i);
                out.boolean(i == 1);
            }
        }
        b"attrib" => {
            // RESP2 has no attributes: only the reply they would annotate.
            if resp3 {
                out.attribute(1);
                out.bulk(b"key-popularity");
                out.array(2);
                out.bulk(b"key:123");
                out.int(90);
            }
            out.bulk(b"Some real reply following the attribute");
        }
        b"push" => {
            if !resp3 {
                return Err(CmdError::err("RESP2 is not supported by this command"));
            }
            out.push(2);
            out.bulk(b"server-cpu-usage");
            out.int(42);
            // A push is not the command's reply: one follows, for clients that skip pushes.
            out.bulk(b"Some real reply following the push reply");
        }
        b"verbatim" => out.verbatim("txt", b"This is a verbatim\nstring"),
        b"true" => out.boolean(true),
        b"false" => out.boolean(false),
        _ => return Err(CmdError::err(
            "Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        )),
    }
    Ok(())
}
