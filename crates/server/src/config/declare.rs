//! The form of a declaration: [`Directive`], its flags, and the `directives!` macro that
//! turns one table into both the typed [`Values`](super::Values) struct and the
//! [`DIRECTIVES`](super::DIRECTIVES) list the name-based paths (files, CONFIG) walk.

use super::hooks::Hook;
use super::value::{Kind, Value};
use super::Values;

/// CONFIG SET may change it (otherwise only a file or the command line at start).
pub const LIVE: u16 = 1 << 0;
/// Set only at start (the absence of LIVE, named for the table's readability).
pub const START: u16 = 0;
/// Accepted and kept, shown by CONFIG GET, but nothing in Strata reads it yet
/// (docs/compatibility.md lists these).
pub const INERT: u16 = 1 << 1;
/// CONFIG SET may change it only as `enable-protected-configs` allows.
pub const PROTECTED: u16 = 1 << 2;
/// Holds a secret.
pub const SENSITIVE: u16 = 1 << 3;
/// CONFIG GET shows it only when asked by its exact name, not for a pattern.
pub const HIDDEN: u16 = 1 << 4;
/// Strata's own: redis-server has no such directive.
pub const OWN: u16 = 1 << 5;

/// A validation (or normalisation, like `hz`'s clamp) beyond the type's own syntax.
pub type Check<T> = fn(T) -> Result<T, &'static str>;

/// One directive, as the name-based paths see it.
pub struct Directive {
    pub name: &'static str,
    /// Older names that mean the same directive (Redis's `slave-*`, `*-ziplist-*`...).
    pub aliases: &'static [&'static str],
    /// The value before any file, option or CONFIG SET, as CONFIG GET would show it.
    pub default: &'static str,
    pub kind: Kind,
    pub flags: u16,
    /// What to run after its value changes (and once at start).
    pub hook: Option<Hook>,
    /// Takes several words.
    pub multi: bool,
    /// Its number compares with its bounds as unsigned.
    pub unsigned: bool,
    pub(super) setter: fn(&mut Values, &[&str], &Directive, bool) -> Result<bool, String>,
    pub(super) getter: fn(&Values, &Directive) -> String,
}

impl Directive {
    pub fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }

    /// Parses `words` into this directive's field of `values`; with `accumulate`, a
    /// later line of a load adds to what earlier lines set (`save`). True when the
    /// value changed.
    pub fn set(
        &self,
        values: &mut Values,
        words: &[&str],
        accumulate: bool,
    ) -> Result<bool, String> {
        (self.setter)(values, words, self, accumulate)
    }

    /// The value as CONFIG GET shows it.
    pub fn get(&self, values: &Values) -> String {
        (self.getter)(values, self)
    }

    /// The words of the declared default.
    pub fn default_words(&self) -> Vec<&'static str> {
        if self.multi {
            self.default.split_whitespace().collect()
        } else {
            vec![self.default]
        }
    }
}

/// The body of every directive's setter: parse, check, store.
pub(super) fn store<T: Value>(
    field: &mut T,
    words: &[&str],
    d: &Directive,
    accumulate: bool,
    check: Option<Check<T>>,
) -> Result<bool, String> {
    let mut new = T::parse(words, &d.kind, field)?;
    if let Some(check) = check {
        new = check(new)?;
    }
    let before = field.clone();
    if accumulate {
        field.accumulate(new);
    } else {
        *field = new;
    }
    Ok(*field != before)
}

/// Declares every directive once. Each entry:
///
/// ```text
/// /// What it does.
/// field: Type [kind] = "default", "name" | "alias", FLAGS, check function => Hook;
/// ```
///
/// `[kind]` (numbers: syntax and bounds), the aliases, `check` and `=> Hook` are
/// optional. It generates `Values`, one typed field per directive, and `DIRECTIVES`.
macro_rules! directives {
    (@kind) => { $crate::config::value::Kind::Plain };
    (@kind $kind:expr) => { $kind };
    (@hook) => { None };
    (@hook $hook:ident) => { Some($crate::config::hooks::Hook::$hook) };
    (@check) => { None };
    (@check $check:path) => { Some($check) };
    ($(
        $(#[doc = $doc:literal])*
        $field:ident : $ty:ty $([$kind:expr])? = $default:literal, $name:literal
            $(| $alias:literal)*, $flags:expr $(, check $check:path)? $(=> $hook:ident)? ;
    )*) => {
        /// Every directive's current value, typed: `server.config.get().maxmemory`.
        #[derive(Clone, Debug, Default)]
        pub struct Values {
            $($(#[doc = $doc])* pub $field: $ty,)*
        }

        /// Every directive, in declaration order.
        pub static DIRECTIVES: &[$crate::config::declare::Directive] = &[$(
            $crate::config::declare::Directive {
                name: $name,
                aliases: &[$($alias),*],
                default: $default,
                kind: directives!(@kind $($kind)?),
                flags: $flags,
                hook: directives!(@hook $($hook)?),
                multi: <$ty as $crate::config::value::Value>::MULTI,
                unsigned: <$ty as $crate::config::value::Value>::UNSIGNED,
                setter: |v, words, d, accumulate| {
                    $crate::config::declare::store(
                        &mut v.$field,
                        words,
                        d,
                        accumulate,
                        directives!(@check $($check)?),
                    )
                },
                getter: |v, d| $crate::config::value::Value::render(&v.$field, &d.kind),
            },
        )*];
    };
}

pub(super) use directives;
