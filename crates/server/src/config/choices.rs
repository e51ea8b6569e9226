//! Directives that take one word of a fixed set, each a Rust enum: reads compare
//! variants, never strings. A variant may have several names (`oom-score-adj yes` and
//! `relative` are one setting); CONFIG GET shows the first. A directive starts from the
//! default its declaration names; the first variant is only the type's `Default`, the
//! placeholder a value has before that default is parsed into it.

use super::value::{one, Kind, Value};

/// Declares an enum directive type: its variants and their names, in Redis's order (the
/// order its error text lists them).
macro_rules! choices {
    ($(
        $(#[doc = $doc:literal])*
        pub enum $name:ident {
            $first:ident = $fname:literal $(| $fmore:literal)*
            $(, $variant:ident = $vname:literal $(| $vmore:literal)*)* $(,)?
        }
    )*) => {$(
        $(#[doc = $doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
        pub enum $name {
            #[default]
            $first,
            $($variant,)*
        }

        impl $name {
            /// Every accepted name with its variant, in Redis's order.
            pub const NAMES: &'static [(&'static str, $name)] = &[
                ($fname, $name::$first), $(($fmore, $name::$first),)*
                $(($vname, $name::$variant), $(($vmore, $name::$variant),)*)*
            ];

            /// The name CONFIG GET shows.
            pub fn name(self) -> &'static str {
                match self {
                    $name::$first => $fname,
                    $($name::$variant => $vname,)*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl Value for $name {
            fn parse(words: &[&str], _: &Kind, _: &$name) -> Result<$name, String> {
                pick(Self::NAMES, one(words)).ok_or_else(|| choices_error(Self::NAMES))
            }
            fn render(&self, _: &Kind) -> String {
                self.name().to_string()
            }
        }
    )*};
}

/// The variant named `word` (any case).
pub fn pick<T: Copy>(names: &[(&str, T)], word: &str) -> Option<T> {
    names
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(word))
        .map(|&(_, v)| v)
}

/// Redis's error text for a word outside the set.
pub fn choices_error<T>(names: &[(&str, T)]) -> String {
    let list: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
    format!(
        "argument(s) must be one of the following: {}",
        list.join(", ")
    )
}

choices! {
    /// What happens when `maxmemory` is reached (not enforced yet).
    pub enum MaxmemoryPolicy {
        VolatileLru = "volatile-lru",
        VolatileLfu = "volatile-lfu",
        VolatileRandom = "volatile-random",
        VolatileTtl = "volatile-ttl",
        AllkeysLru = "allkeys-lru",
        AllkeysLfu = "allkeys-lfu",
        AllkeysRandom = "allkeys-random",
        Noeviction = "noeviction",
    }

    /// When the journal is fsynced.
    pub enum Appendfsync {
        Everysec = "everysec",
        Always = "always",
        No = "no",
    }

    /// Log verbosity (`nothing` as in Redis 7.2).
    pub enum Loglevel {
        Debug = "debug",
        Verbose = "verbose",
        Notice = "notice",
        Warning = "warning",
        Nothing = "nothing",
    }

    /// Scheduling policy of the worker threads.
    pub enum WorkerSched {
        Batch = "batch",
        Normal = "normal",
    }

    /// Where new plain connections go among the worker threads (`net::balance`).
    pub enum WorkerPlacement {
        Balanced = "balanced",
        RoundRobin = "round-robin",
    }

    /// Always `no`: Strata runs under a supervisor, it does not fork itself away.
    pub enum Daemonize {
        No = "no",
    }

    /// Who may use a protected feature (CONFIG SET of `dir`, DEBUG, MODULE).
    pub enum ProtectedAction {
        No = "no",
        Yes = "yes",
        Local = "local",
    }

    pub enum Supervised {
        Upstart = "upstart",
        Systemd = "systemd",
        Auto = "auto",
        No = "no",
    }

    pub enum SyslogFacility {
        User = "user",
        Local0 = "local0",
        Local1 = "local1",
        Local2 = "local2",
        Local3 = "local3",
        Local4 = "local4",
        Local5 = "local5",
        Local6 = "local6",
        Local7 = "local7",
    }

    pub enum ReplDisklessLoad {
        Disabled = "disabled",
        OnEmptyDb = "on-empty-db",
        Swapdb = "swapdb",
    }

    pub enum OomScoreAdj {
        No = "no",
        Relative = "yes" | "relative",
        Absolute = "absolute",
    }

    pub enum AclPubsubDefault {
        Allchannels = "allchannels",
        Resetchannels = "resetchannels",
    }

    pub enum SanitizeDumpPayload {
        No = "no",
        Yes = "yes",
        Clients = "clients",
    }

    pub enum ClusterEndpointType {
        Ip = "ip",
        Hostname = "hostname",
        UnknownEndpoint = "unknown-endpoint",
    }

    pub enum PropagationErrorBehavior {
        Ignore = "ignore",
        Panic = "panic",
        PanicOnReplicas = "panic-on-replicas",
    }

    pub enum TlsAuthClients {
        No = "no",
        Yes = "yes",
        Optional = "optional",
    }
}

impl MaxmemoryPolicy {
    /// An LFU policy: OBJECT FREQ works, OBJECT IDLETIME does not.
    pub fn is_lfu(self) -> bool {
        matches!(
            self,
            MaxmemoryPolicy::VolatileLfu | MaxmemoryPolicy::AllkeysLfu
        )
    }

    /// An LRU or LFU policy: Redis then shares no integer objects.
    pub fn is_lru_or_lfu(self) -> bool {
        self.is_lfu()
            || matches!(
                self,
                MaxmemoryPolicy::VolatileLru | MaxmemoryPolicy::AllkeysLru
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_any_case_first_name_shown_and_redis_order_in_errors() {
        let k = Kind::Plain;
        assert_eq!(
            OomScoreAdj::parse(&["RELATIVE"], &k, &OomScoreAdj::No),
            Ok(OomScoreAdj::Relative)
        );
        assert_eq!(OomScoreAdj::Relative.render(&k), "yes");
        assert_eq!(
            Appendfsync::parse(&["sometimes"], &k, &Appendfsync::No).unwrap_err(),
            "argument(s) must be one of the following: everysec, always, no"
        );
        assert_eq!(
            OomScoreAdj::parse(&["x"], &k, &OomScoreAdj::No).unwrap_err(),
            "argument(s) must be one of the following: no, yes, relative, absolute"
        );
        assert!(MaxmemoryPolicy::AllkeysLfu.is_lfu());
        assert!(!MaxmemoryPolicy::Noeviction.is_lru_or_lfu());
    }
}
