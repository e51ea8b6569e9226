//! Distances on the sphere Redis uses: the haversine formula with a fixed earth radius,
//! and the in-shape tests of GEOSEARCH (circle, and the box measured along the parallel
//! and the meridian of the point). The operations follow Redis's order exactly, so the
//! distances printed are Redis's to the last digit.

use super::hash::{Extent, Shape};
use std::cmp::Ordering;

/// The earth's quadratic mean radius, in meters, as Redis takes it.
pub(super) const EARTH_RADIUS_M: f64 = 6372797.560856;
const DEG_TO_RAD: f64 = std::f64::consts::PI / 180.0;

pub(super) fn deg_rad(deg: f64) -> f64 {
    deg * DEG_TO_RAD
}

pub(super) fn rad_deg(rad: f64) -> f64 {
    rad / DEG_TO_RAD
}

/// The distance between two latitudes along a meridian.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The great-circle distance in meters between two (lon, lat) points in degrees.
pub(super) fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(lon2) - deg_rad(lon1)) / 2.0).sin();
    if v == 0.0 {
        // Same meridian: the formula reduces to the latitude difference.
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// The distance from the shape's centre to (lon, lat) if the point is inside the shape.
pub(super) fn within(shape: &Shape, lon: f64, lat: f64) -> Option<f64> {
    match shape.extent {
        Extent::Radius(r) => {
            // Most points a search scans are outside its circle, many by latitude alone;
            // those need no trigonometry. The haversine is never shorter than the distance
            // between the latitudes (its first term alone gives that), so with a margin far
            // above rounding this skips only points Redis would reject as well.
            let limit = r * shape.conversion;
            if lat_distance(lat, shape.lat) > limit * (1.0 + 1e-9) + 1e-6 {
                return None;
            }
            let d = distance(shape.lon, shape.lat, lon, lat);
            // Only a distance known to be larger is outside: NaN is inside, as in Redis.
            (d.partial_cmp(&(r * shape.conversion)) != Some(Ordering::Greater)).then_some(d)
        }
        Extent::Box { width, height } => {
            let (w, h) = (width * shape.conversion, height * shape.conversion);
            if lat_distance(lat, shape.lat) > h / 2.0 {
                return None;
            }
            if distance(lon, lat, shape.lon, lat) > w / 2.0 {
                return None;
            }
            Some(distance(shape.lon, shape.lat, lon, lat))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_distances() {
        // Haversine against the spherical law of cosines (Palermo to Catania).
        let (lon1, lat1, lon2, lat2) = (13.361389, 38.115556, 15.087269, 37.502669);
        let d = distance(lon1, lat1, lon2, lat2);
        let (p1, p2) = (deg_rad(lat1), deg_rad(lat2));
        let cosines = (p1.sin() * p2.sin() + p1.cos() * p2.cos() * deg_rad(lon2 - lon1).cos())
            .acos()
            * EARTH_RADIUS_M;
        assert!((d - cosines).abs() < 1e-3, "{d} vs {cosines}");
        assert!(d > 166_000.0 && d < 167_000.0, "{d}");
        assert_eq!(distance(1.0, 2.0, 1.0, 2.0), 0.0);
        let meridian = distance(10.0, 0.0, 10.0, 1.0);
        assert_eq!(meridian, EARTH_RADIUS_M * deg_rad(1.0));
    }

    #[test]
    fn shapes() {
        let circle = Shape {
            lon: 0.0,
            lat: 0.0,
            conversion: 1000.0,
            extent: Extent::Radius(100.0),
        };
        assert!(within(&circle, 0.5, 0.5).is_some());
        assert!(within(&circle, 1.0, 0.0).is_none());
        let boxed = Shape {
            extent: Extent::Box {
                width: 400.0,
                height: 100.0,
            },
            ..circle
        };
        assert!(within(&boxed, 1.5, 0.0).is_some());
        assert!(within(&boxed, 0.0, 0.5).is_none());
    }
}
