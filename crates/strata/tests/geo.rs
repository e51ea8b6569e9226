//! Geo commands against the real binary: random point sets and random searches run on
//! redis-server and Strata with every reply compared byte for byte (members, their order,
//! distances, hashes, coordinates), and what the byte-for-byte corpus cannot show: the
//! STORE forms journal their results (a restart rebuilds the same sets) and a GEORADIUS
//! without STORE journals nothing.

mod common;

use common::{info_field, serve_in, temp_dir, RespConn, Rng};

/// Random inputs for both servers.
struct Gen(Rng);

const LAT_MAX: f64 = 85.05112878;

impl Gen {
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.0.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.0.below(v.len() as u64) as usize]
    }
    /// Roughly normal, mean 0, deviation 1.
    fn normal(&mut self) -> f64 {
        (0..6).map(|_| self.unit()).sum::<f64>() - 3.0
    }
    /// A point anywhere, with the edges of the map (poles' limits, the antimeridian)
    /// more likely than chance would make them.
    fn anywhere(&mut self) -> (f64, f64) {
        let lon = if self.chance(0.1) {
            self.pick(&[-180.0, 180.0, 179.9999, -179.9999, 0.0])
        } else {
            self.uniform(-180.0, 180.0)
        };
        let lat = if self.chance(0.1) {
            self.pick(&[-LAT_MAX, LAT_MAX, 85.0, -85.0, 0.0])
        } else {
            self.uniform(-LAT_MAX, LAT_MAX)
        };
        (lon, lat)
    }
    /// A point near `c` (a few degrees), kept on the map.
    fn near(&mut self, c: (f64, f64)) -> (f64, f64) {
        let lon = (c.0 + 2.0 * self.normal()).clamp(-180.0, 180.0);
        let lat = (c.1 + 2.0 * self.normal()).clamp(-LAT_MAX, LAT_MAX);
        (lon, lat)
    }
    /// A coordinate as a client would type it: full precision or six decimals.
    fn num(&mut self, v: f64) -> String {
        if self.chance(0.5) {
            format!("{v}")
        } else {
            format!("{v:.6}")
        }
    }
}

/// How the points of a round are laid out.
#[derive(Clone, Copy)]
enum Layout {
    Uniform,
    Cluster,
    /// A few spots shared by many members: equal distances everywhere.
    Ties,
}

struct Round {
    members: usize,
    centre: (f64, f64),
    layout: Layout,
}

/// Two connections that must answer alike; mismatches are collected.
struct Pair {
    redis: RespConn,
    strata: RespConn,
    failures: Vec<String>,
}

impl Pair {
    fn both(&mut self, args: &[String]) {
        let a = self.redis.call(args).map(|r| r.shown());
        let b = self.strata.call(args).map(|r| r.shown());
        let (a, b) = (
            a.unwrap_or_else(|e| format!("<{e}>")),
            b.unwrap_or_else(|e| format!("<{e}>")),
        );
        if a != b && self.failures.len() < 10 {
            self.failures
                .push(format!("{}\n  redis:  {a}\n  strata: {b}", args.join(" ")));
        }
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn load(g: &mut Gen, p: &mut Pair, r: &Round) {
    let mut add = strings(&["GEOADD", "pts"]);
    let mut spots: Vec<(String, String)> = Vec::new();
    for i in 0..r.members {
        let (lon, lat) = match r.layout {
            Layout::Uniform => g.anywhere(),
            Layout::Cluster | Layout::Ties => g.near(r.centre),
        };
        let spot = match r.layout {
            Layout::Ties if spots.len() >= 4 => g.pick(&[0, 1, 2, 3]),
            _ => {
                spots.push((g.num(lon), g.num(lat)));
                spots.len() - 1
            }
        };
        add.push(spots[spot].0.clone());
        add.push(spots[spot].1.clone());
        add.push(format!("m{i}"));
        if add.len() > 3000 {
            p.both(&add);
            add.truncate(2);
        }
    }
    if add.len() > 2 {
        p.both(&add);
    }
}

/// Random result options: WITH*, an order, COUNT [ANY].
fn options(g: &mut Gen, with: bool) -> Vec<String> {
    let mut o = Vec::new();
    if with {
        for w in ["WITHDIST", "WITHCOORD", "WITHHASH"] {
            if g.chance(0.5) {
                o.push(w.to_string());
            }
        }
    }
    match g.0.below(3) {
        0 => o.push("ASC".into()),
        1 => o.push("DESC".into()),
        _ => {}
    }
    if g.chance(0.4) {
        o.push("COUNT".into());
        o.push(g.pick(&[1, 2, 3, 5, 10, 100]).to_string());
        if g.chance(0.3) {
            o.push("ANY".into());
        }
    }
    o
}

fn query(g: &mut Gen, p: &mut Pair, r: &Round) {
    let (lon, lat) = match r.layout {
        Layout::Uniform => g.anywhere(),
        _ if g.chance(0.8) => g.near(r.centre),
        _ => g.anywhere(),
    };
    let (unit, meters) = g.pick(&[("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)]);
    let scale = g.pick(&[0.0, 10.0, 1e3, 5e4, 2e5, 1e6, 5e6, 1.5e7, 2e7, 3e7]);
    let (rad, h) = (
        scale * g.unit() / meters,
        scale * g.uniform(0.1, 3.0) / meters,
    );
    let (radius, height) = (g.num(rad), g.num(h));
    let (lon, lat) = (g.num(lon), g.num(lat));
    let member = format!("m{}", g.0.below(r.members as u64));
    let store = g.chance(0.15);
    let mut cmd = match g.0.below(6) {
        0 | 1 => strings(&[
            "GEOSEARCH",
            "pts",
            "FROMLONLAT",
            &lon,
            &lat,
            "BYRADIUS",
            &radius,
            unit,
        ]),
        2 => strings(&[
            "GEOSEARCH",
            "pts",
            "FROMLONLAT",
            &lon,
            &lat,
            "BYBOX",
            &radius,
            &height,
            unit,
        ]),
        3 => strings(&[
            "GEOSEARCH",
            "pts",
            "FROMMEMBER",
            &member,
            "BYBOX",
            &radius,
            &height,
            unit,
        ]),
        4 => strings(&["GEORADIUS", "pts", &lon, &lat, &radius, unit]),
        _ => strings(&["GEORADIUSBYMEMBER", "pts", &member, &radius, unit]),
    };
    cmd.extend(options(g, !store));
    if store {
        if cmd[0] == "GEOSEARCH" {
            cmd[0] = "GEOSEARCHSTORE".into();
            cmd.insert(1, "dst".into());
            if g.chance(0.5) {
                cmd.push("STOREDIST".into());
            }
        } else {
            cmd.push(g.pick(&["STORE", "STOREDIST"]).into());
            cmd.push("dst".into());
        }
    }
    p.both(&cmd);
    if store {
        p.both(&strings(&["ZRANGE", "dst", "0", "-1", "WITHSCORES"]));
        p.both(&strings(&["OBJECT", "ENCODING", "dst"]));
    }
}

fn run_random(seed: u64, resp3: bool) {
    let rounds = common::proptest_cases(12);
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let mut p = Pair {
        redis: RespConn::new(&redis),
        strata: RespConn::new(&strata),
        failures: Vec::new(),
    };
    if resp3 {
        let hello = strings(&["HELLO", "3"]);
        p.redis.call(&hello).unwrap();
        p.strata.call(&hello).unwrap();
    }
    let mut g = Gen(Rng(seed));
    for round in 0..rounds {
        p.both(&strings(&["FLUSHALL"]));
        let r = Round {
            members: g.pick(&[5, 60, 300, 1500]),
            centre: g.anywhere(),
            layout: g.pick(&[Layout::Uniform, Layout::Cluster, Layout::Ties]),
        };
        load(&mut g, &mut p, &r);
        for _ in 0..60 {
            query(&mut g, &mut p, &r);
        }
        let some: Vec<String> = (0..r.members).step_by(7).map(|i| format!("m{i}")).collect();
        for c in ["GEOPOS", "GEOHASH"] {
            let mut cmd = strings(&[c, "pts"]);
            cmd.extend(some.iter().cloned());
            p.both(&cmd);
        }
        for _ in 0..10 {
            let a = format!("m{}", g.0.below(r.members as u64));
            let b = format!("m{}", g.0.below(r.members as u64));
            let unit = g.pick(&["m", "km", "ft", "mi"]);
            p.both(&strings(&["GEODIST", "pts", &a, &b, unit]));
        }
        assert!(
            p.failures.is_empty(),
            "seed {seed:#x}, round {round}: replies differ from redis-server:\n{}",
            p.failures.join("\n")
        );
    }
}

#[test]
fn random_geo_searches_match_redis() {
    run_random(0x9e05_ea5c, false);
}

#[test]
fn random_geo_searches_match_redis_resp3() {
    run_random(0x5eed_0003, true);
}

fn query_args(c: &mut redis::Connection, args: &[&str]) -> redis::Value {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c)
        .unwrap_or_else(|e| panic!("{}: {e}", args.join(" ")))
}

#[test]
fn store_forms_are_journaled_as_their_results() {
    let dir = temp_dir("geo-journal");
    let p = serve_in(&dir, &[]);
    let mut c = p.client();
    query_args(
        &mut c,
        &[
            "GEOADD",
            "pts",
            "13.361389",
            "38.115556",
            "Palermo",
            "15.087269",
            "37.502669",
            "Catania",
            "12.5",
            "37.8",
            "Marsala",
            "2.35",
            "48.85",
            "Paris",
        ],
    );
    let lsn = |c: &mut redis::Connection| info_field(c, "aof_written_lsn");
    let before = lsn(&mut c);
    // Searches without STORE change nothing and leave the journal alone, the write-flagged
    // GEORADIUS forms included.
    query_args(
        &mut c,
        &["GEORADIUS", "pts", "15", "37", "200", "km", "WITHDIST"],
    );
    query_args(
        &mut c,
        &["GEORADIUSBYMEMBER", "pts", "Palermo", "200", "km"],
    );
    query_args(
        &mut c,
        &[
            "GEOSEARCH",
            "pts",
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "200",
            "km",
        ],
    );
    assert_eq!(
        lsn(&mut c),
        before,
        "a search without STORE reached the journal"
    );
    let stores: [&[&str]; 5] = [
        &[
            "GEOSEARCHSTORE",
            "near",
            "pts",
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "200",
            "km",
            "STOREDIST",
        ],
        &[
            "GEORADIUS",
            "pts",
            "15",
            "37",
            "200",
            "mi",
            "STORE",
            "hashes",
        ],
        &[
            "GEORADIUSBYMEMBER",
            "pts",
            "Palermo",
            "3000",
            "km",
            "STOREDIST",
            "dists",
            "DESC",
            "COUNT",
            "3",
        ],
        &["SET", "gone", "x"],
        &[
            "GEOSEARCHSTORE",
            "gone",
            "pts",
            "FROMLONLAT",
            "0",
            "0",
            "BYRADIUS",
            "1",
            "m",
        ],
    ];
    for s in stores {
        query_args(&mut c, s);
    }
    let dump = |c: &mut redis::Connection| -> Vec<redis::Value> {
        ["near", "hashes", "dists", "gone"]
            .iter()
            .map(|k| query_args(c, &["ZRANGE", k, "0", "-1", "WITHSCORES"]))
            .collect()
    };
    let sets = dump(&mut c);
    assert!(
        sets[..3]
            .iter()
            .all(|v| matches!(v, redis::Value::Array(a) if !a.is_empty())),
        "the stores must have stored something: {sets:?}"
    );
    drop(p);
    let p = serve_in(&dir, &[]);
    let mut c = p.client();
    assert_eq!(dump(&mut c), sets, "the replayed journal built other sets");
    let gone: i64 = redis::cmd("EXISTS").arg("gone").query(&mut c).unwrap();
    assert_eq!(
        gone, 0,
        "an empty result must delete the destination after a replay too"
    );
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}
