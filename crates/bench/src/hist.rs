//! Latency histograms: HdrHistogram at microsecond resolution, 3 significant digits,
//! auto-resizing so a stall of any length is recorded rather than clipped.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug)]
pub struct Hist(Histogram<u64>);

impl Default for Hist {
    fn default() -> Self {
        Hist::new()
    }
}

/// The figures of one histogram, in microseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub mean_us: f64,
    pub p50_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
}

impl Hist {
    pub fn new() -> Hist {
        // 1 us .. 60 s to start with; auto-resize extends the top for longer stalls.
        let mut h = Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds");
        h.auto(true);
        Hist(h)
    }

    /// Records one latency in microseconds (0 is recorded as 1: below the resolution).
    #[inline]
    pub fn record(&mut self, us: u64) {
        // With auto-resize on, recording cannot fail for any u64 value in range.
        let _ = self.0.record(us.max(1));
    }

    pub fn add(&mut self, other: &Hist) {
        let _ = self.0.add(&other.0);
    }

    pub fn len(&self) -> u64 {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn reset(&mut self) {
        self.0.reset();
    }

    pub fn quantile(&self, q: f64) -> u64 {
        self.0.value_at_quantile(q)
    }

    pub fn summary(&self) -> Summary {
        if self.0.is_empty() {
            return Summary::default();
        }
        Summary {
            mean_us: self.0.mean(),
            p50_us: self.0.value_at_quantile(0.50),
            p95_us: self.0.value_at_quantile(0.95),
            p99_us: self.0.value_at_quantile(0.99),
            p999_us: self.0.value_at_quantile(0.999),
            max_us: self.0.max(),
        }
    }

    /// HdrHistogram's V2 serialization (the format other HdrHistogram tools read), base64.
    pub fn to_base64(&self) -> String {
        let mut bytes = Vec::new();
        // Serializing into a Vec cannot fail on I/O; an error here would be a library bug.
        if V2Serializer::new().serialize(&self.0, &mut bytes).is_err() {
            return String::new();
        }
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    pub fn from_base64(s: &str) -> Result<Hist, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s.trim())
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        let mut h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &bytes[..])
            .map_err(|e| format!("histogram does not deserialize: {e:?}"))?;
        h.auto(true);
        Ok(Hist(h))
    }

    /// Latency at each of `qs`, for percentile charts.
    pub fn quantiles(&self, qs: &[f64]) -> Vec<u64> {
        qs.iter().map(|&q| self.0.value_at_quantile(q)).collect()
    }
}

/// Microseconds as milliseconds with 3 decimals, as redis-benchmark prints latencies.
pub fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut rng = Rng::new(1);
        let (mut a, mut b, mut all) = (Hist::new(), Hist::new(), Hist::new());
        for i in 0..20_000u64 {
            let v = 1 + rng.below(if i % 100 == 0 { 5_000_000 } else { 2_000 });
            all.record(v);
            if i % 3 == 0 {
                a.record(v)
            } else {
                b.record(v)
            }
        }
        let mut merged = a.clone();
        merged.add(&b);
        assert_eq!(merged.len(), a.len() + b.len());
        assert_eq!(merged.summary(), all.summary());
        // Values beyond the initial 60 s bound still land (auto-resize).
        merged.record(3_600_000_000);
        assert!(merged.summary().max_us >= 3_599_000_000);
    }

    #[test]
    fn base64_round_trip() {
        let mut h = Hist::new();
        for v in [1u64, 5, 100, 1000, 123_456, 9_999_999] {
            h.record(v);
        }
        let back = Hist::from_base64(&h.to_base64()).expect("round trip");
        assert_eq!(back.len(), h.len());
        assert_eq!(back.summary(), h.summary());
        assert!(Hist::from_base64("not base64!").is_err());
        assert!(Hist::from_base64("AAAA").is_err());
    }
}
