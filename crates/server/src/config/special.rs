//! Directives with a syntax of their own: `save`, `client-output-buffer-limit`,
//! `notify-keyspace-events`, `bind`, `replicaof`, `oom-score-adj-values`,
//! `latency-tracking-info-percentiles` and `shutdown-on-sig*`, each parsed and shown as
//! Redis 7.0 does, with its error texts.

use super::choices::{choices_error, pick};
use super::value::{memtoull, one, string2d, strtoll, Kind, Strtoll, Value};
use crate::services::pubsub::BufferLimit;

/// The words of a multi-word directive that mean "none": no words, or one empty word
/// (`save ""`).
fn none_given(words: &[&str]) -> bool {
    words.is_empty() || (words.len() == 1 && words[0].is_empty())
}

/// A whole decimal number as C's strtoll reads it (Redis parses these lists with it).
fn c_number(word: &str) -> Option<i64> {
    match strtoll(word, 10) {
        Strtoll::Full(v) | Strtoll::Overflow(v) => Some(v),
        Strtoll::Partial => None,
    }
}

/// `save <seconds> <changes> ...`: snapshot rules. In a config file every `save` line adds
/// rules, the first one replacing the defaults; CONFIG SET replaces them all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaveRules(pub Vec<(u64, u64)>);

impl Value for SaveRules {
    const MULTI: bool = true;

    fn parse(words: &[&str], _: &Kind, _: &Self) -> Result<Self, String> {
        if none_given(words) {
            return Ok(SaveRules(Vec::new()));
        }
        const INVALID: &str = "Invalid save parameters";
        if words.len() % 2 == 1 {
            return Err(INVALID.into());
        }
        let mut rules = Vec::new();
        for pair in words.chunks(2) {
            let secs = c_number(pair[0]).filter(|&s| s >= 1).ok_or(INVALID)?;
            let changes = c_number(pair[1]).filter(|&c| c >= 0).ok_or(INVALID)?;
            rules.push((secs as u64, changes as u64));
        }
        Ok(SaveRules(rules))
    }

    fn render(&self, _: &Kind) -> String {
        let words: Vec<String> = self.0.iter().map(|(s, c)| format!("{s} {c}")).collect();
        words.join(" ")
    }

    fn accumulate(&mut self, later: Self) {
        if later.0.is_empty() {
            self.0.clear();
        }
        self.0.extend(later.0);
    }
}

/// `client-output-buffer-limit <class> <hard> <soft> <soft seconds> ...` for the normal,
/// replica and pubsub classes; a change names only the classes it changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputBufferLimits(pub [BufferLimit; 3]);

impl OutputBufferLimits {
    pub fn pubsub(&self) -> BufferLimit {
        self.0[2]
    }

    pub fn replica(&self) -> BufferLimit {
        self.0[1]
    }
}

/// Applies `<class> <hard> <soft> <seconds>` groups over `current`, all or nothing.
pub fn update_buffer_limits(
    current: [BufferLimit; 3],
    words: &[&str],
) -> Result<[BufferLimit; 3], String> {
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut limits = current;
    for group in words.chunks(4) {
        let class = pick(
            &[("normal", 0), ("slave", 1), ("replica", 1), ("pubsub", 2)],
            group[0],
        )
        .ok_or("Invalid client class specified in buffer limit configuration.")?;
        let secs = match strtoll(group[3], 10) {
            Strtoll::Full(s) | Strtoll::Overflow(s) if s >= 0 => Some(s as u64),
            _ => None,
        };
        let (Some(hard), Some(soft), Some(soft_secs)) =
            (memtoull(group[1]), memtoull(group[2]), secs)
        else {
            return Err(
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.".into(),
            );
        };
        limits[class] = BufferLimit {
            hard,
            soft,
            soft_secs,
        };
    }
    Ok(limits)
}

impl Value for OutputBufferLimits {
    const MULTI: bool = true;

    fn parse(words: &[&str], _: &Kind, current: &Self) -> Result<Self, String> {
        let words = if none_given(words) { &[][..] } else { words };
        update_buffer_limits(current.0, words).map(OutputBufferLimits)
    }

    fn render(&self, _: &Kind) -> String {
        crate::services::pubsub::render_buffer_limits(&self.0)
    }
}

/// `notify-keyspace-events`: Redis's class letters, kept as the flags of
/// `services::notify`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyspaceEvents(pub u32);

impl Value for KeyspaceEvents {
    fn parse(words: &[&str], _: &Kind, _: &Self) -> Result<Self, String> {
        crate::services::notify::parse_flags(one(words))
            .map(KeyspaceEvents)
            .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into())
    }

    fn render(&self, _: &Kind) -> String {
        crate::services::notify::render_flags(self.0)
    }
}

/// `bind`: addresses, each optionally prefixed by `-` (skip it when unavailable).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Addresses(pub Vec<String>);

impl Value for Addresses {
    const MULTI: bool = true;

    fn parse(words: &[&str], _: &Kind, _: &Self) -> Result<Self, String> {
        if words.len() > 16 {
            return Err("Too many bind addresses specified.".into());
        }
        if none_given(words) {
            return Ok(Addresses(Vec::new()));
        }
        Ok(Addresses(words.iter().map(|w| w.to_string()).collect()))
    }

    fn render(&self, _: &Kind) -> String {
        self.0.join(" ")
    }
}

/// `replicaof <host> <port>` (or `no one`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplicaOf(pub Option<(String, u16)>);

impl Value for ReplicaOf {
    const MULTI: bool = true;

    fn parse(words: &[&str], _: &Kind, _: &Self) -> Result<Self, String> {
        // No words at all: the declared default, none.
        if words.is_empty() {
            return Ok(ReplicaOf(None));
        }
        let [host, port] = words else {
            return Err("wrong number of arguments".into());
        };
        if host.eq_ignore_ascii_case("no") && port.eq_ignore_ascii_case("one") {
            return Ok(ReplicaOf(None));
        }
        match strtoll(port, 10) {
            Strtoll::Full(p) if (0..=65535).contains(&p) => {
                Ok(ReplicaOf(Some((host.to_string(), p as u16))))
            }
            _ => Err("Invalid master port".into()),
        }
    }

    fn render(&self, _: &Kind) -> String {
        match &self.0 {
            Some((host, port)) => format!("{host} {port}"),
            None => String::new(),
        }
    }
}

/// `oom-score-adj-values <primary> <replica> <background child>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OomScoreAdjValues(pub [i32; 3]);

impl Value for OomScoreAdjValues {
    const MULTI: bool = true;

    fn parse(words: &[&str], _: &Kind, _: &Self) -> Result<Self, String> {
        if words.len() != 3 {
            return Err("wrong number of arguments".into());
        }
        let mut v = [0i32; 3];
        for (slot, w) in v.iter_mut().zip(words) {
            match strtoll(w, 10) {
                Strtoll::Full(n) if (-2000..=2000).contains(&n) => *slot = n as i32,
                _ => {
                    return Err("Invalid oom-score-adj-values, elements must be between \
                                -2000 and 2000."
                        .into())
                }
            }
        }
        Ok(OomScoreAdjValues(v))
    }

    fn render(&self, _: &Kind) -> String {
        let words: Vec<String> = self.0.iter().map(i32::to_string).collect();
        words.join(" ")
    }
}

/// `latency-tracking-info-percentiles`: percentiles INFO latencystats would show.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Percentiles(pub Vec<f64>);

impl Value for Percentiles {
    const MULTI: bool = true;

    fn parse(words: &[&str], _: &Kind, _: &Self) -> Result<Self, String> {
        if none_given(words) {
            return Ok(Percentiles(Vec::new()));
        }
        let mut v = Vec::new();
        for w in words {
            let p = string2d(w).ok_or("Invalid latency-tracking-info-percentiles parameters")?;
            if !(0.0..=100.0).contains(&p) {
                return Err("latency-tracking-info-percentiles parameters should sit \
                            between [0.0,100.0]"
                    .into());
            }
            v.push(p);
        }
        Ok(Percentiles(v))
    }

    fn render(&self, _: &Kind) -> String {
        let words: Vec<String> = self.0.iter().map(|p| trimmed(*p)).collect();
        words.join(" ")
    }
}

/// `%f` without the trailing zeros (and point) Redis trims from it.
fn trimmed(p: f64) -> String {
    let s = format!("{p:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `shutdown-on-sigint` / `shutdown-on-sigterm`: `default`, or flags among `save`,
/// `nosave`, `now` and `force`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShutdownFlags(pub u8);

impl ShutdownFlags {
    pub const SAVE: u8 = 1;
    pub const NOSAVE: u8 = 2;
    pub const NOW: u8 = 4;
    pub const FORCE: u8 = 8;
    const NAMES: &'static [(&'static str, u8)] = &[
        ("default", 0),
        ("save", Self::SAVE),
        ("nosave", Self::NOSAVE),
        ("now", Self::NOW),
        ("force", Self::FORCE),
    ];
}

impl Value for ShutdownFlags {
    const MULTI: bool = true;

    fn parse(words: &[&str], _: &Kind, _: &Self) -> Result<Self, String> {
        if words.is_empty() {
            return Err(choices_error(Self::NAMES));
        }
        let mut flags = 0;
        for w in words {
            flags |= pick(Self::NAMES, w).ok_or_else(|| choices_error(Self::NAMES))?;
        }
        if flags & Self::SAVE != 0 && flags & Self::NOSAVE != 0 {
            return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
        }
        Ok(ShutdownFlags(flags))
    }

    fn render(&self, _: &Kind) -> String {
        if self.0 == 0 {
            return "default".into();
        }
        let names: Vec<&str> = Self::NAMES
            .iter()
            .filter(|&&(_, bit)| bit != 0 && self.0 & bit == bit)
            .map(|&(n, _)| n)
            .collect();
        names.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<T: Value>(s: &str) -> Result<T, String> {
        let words: Vec<&str> = if s.is_empty() {
            Vec::new()
        } else {
            s.split(' ').collect()
        };
        T::parse(&words, &Kind::Plain, &T::default())
    }

    #[test]
    fn save_rules() {
        let r: SaveRules = parse("100 10 20 5").unwrap();
        assert_eq!(r.0, vec![(100, 10), (20, 5)]);
        assert_eq!(r.render(&Kind::Plain), "100 10 20 5");
        assert_eq!(parse::<SaveRules>("").unwrap().0, vec![]);
        assert_eq!(SaveRules::parse(&[""], &Kind::Plain, &r).unwrap().0, vec![]);
        for bad in ["10", "10 x", "0 1", "10 -1", "10  1"] {
            assert_eq!(
                parse::<SaveRules>(bad).unwrap_err(),
                "Invalid save parameters",
                "{bad:?}"
            );
        }
        let mut acc = SaveRules(vec![(3600, 1)]);
        acc.accumulate(parse("900 1").unwrap());
        assert_eq!(acc.0, vec![(3600, 1), (900, 1)]);
        acc.accumulate(parse("").unwrap());
        assert!(acc.0.is_empty());
    }

    #[test]
    fn buffer_limits_change_only_the_classes_named() {
        let start = OutputBufferLimits::default();
        let words = ["pubsub", "1mb", "512kb", "1", "REPLICA", "1", "2", "3"];
        let l = OutputBufferLimits::parse(&words, &Kind::Plain, &start).unwrap();
        assert_eq!(
            l.render(&Kind::Plain),
            "normal 0 0 0 slave 1 2 3 pubsub 1048576 524288 1"
        );
        let err = |w: &[&str]| OutputBufferLimits::parse(w, &Kind::Plain, &l).unwrap_err();
        assert_eq!(
            err(&["normal", "1"]),
            "Wrong number of arguments in buffer limit configuration."
        );
        assert_eq!(
            err(&["master", "1", "1", "1"]),
            "Invalid client class specified in buffer limit configuration."
        );
        assert_eq!(
            err(&["normal", "1", "1", "x"]),
            "Error in hard, soft or soft_seconds setting in buffer limit configuration."
        );
    }

    #[test]
    fn events_addresses_replicaof_oom_percentiles_shutdown() {
        assert_eq!(
            parse::<KeyspaceEvents>("KEA").unwrap().render(&Kind::Plain),
            "AKE"
        );
        assert_eq!(
            parse::<KeyspaceEvents>("Kq").unwrap_err(),
            "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
        );
        let many = vec!["a"; 17].join(" ");
        assert_eq!(
            parse::<Addresses>(&many).unwrap_err(),
            "Too many bind addresses specified."
        );
        assert_eq!(
            parse::<Addresses>("127.0.0.1 -::1").unwrap().0,
            vec!["127.0.0.1", "-::1"]
        );
        assert_eq!(parse::<ReplicaOf>("NO ONE").unwrap().0, None);
        assert_eq!(
            parse::<ReplicaOf>("h 7000").unwrap().render(&Kind::Plain),
            "h 7000"
        );
        assert_eq!(
            parse::<ReplicaOf>("h").unwrap_err(),
            "wrong number of arguments"
        );
        assert_eq!(
            parse::<ReplicaOf>("h 70000").unwrap_err(),
            "Invalid master port"
        );
        assert_eq!(
            parse::<OomScoreAdjValues>("1 2").unwrap_err(),
            "wrong number of arguments"
        );
        assert_eq!(
            parse::<OomScoreAdjValues>("1 2 3000").unwrap_err(),
            "Invalid oom-score-adj-values, elements must be between -2000 and 2000."
        );
        assert_eq!(
            parse::<Percentiles>("50 99.99 100")
                .unwrap()
                .render(&Kind::Plain),
            "50 99.99 100"
        );
        assert_eq!(
            parse::<Percentiles>("101").unwrap_err(),
            "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
        );
        assert_eq!(
            parse::<Percentiles>("x").unwrap_err(),
            "Invalid latency-tracking-info-percentiles parameters"
        );
        assert_eq!(
            parse::<ShutdownFlags>("now SAVE")
                .unwrap()
                .render(&Kind::Plain),
            "save now"
        );
        assert_eq!(
            parse::<ShutdownFlags>("default")
                .unwrap()
                .render(&Kind::Plain),
            "default"
        );
        assert_eq!(
            parse::<ShutdownFlags>("save nosave").unwrap_err(),
            "shutdown options SAVE and NOSAVE can't be used simultaneously"
        );
        assert_eq!(
            parse::<ShutdownFlags>("bogus").unwrap_err(),
            "argument(s) must be one of the following: default, save, nosave, now, force"
        );
    }
}
