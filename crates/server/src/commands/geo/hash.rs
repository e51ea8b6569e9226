//! Geohash arithmetic as Redis 7.0 does it: a point is two fixed-point coordinates of
//! `step` bits each, interleaved (longitude on the odd bits, latitude on the even ones);
//! a geo set stores the 52-bit hash of step 26 as the member's score. Searches cover
//! their shape with a cell of an estimated step and its eight neighbours.
//!
//! Every floating-point expression is evaluated in the order Redis evaluates it, so
//! decoded coordinates, cell bounds and the chosen step are bit for bit Redis's.

use super::distance::{deg_rad, rad_deg, EARTH_RADIUS_M};
use std::cmp::Ordering;

/// Precision of the stored scores: 26 bits per coordinate.
pub(super) const STEP_MAX: u8 = 26;
pub(super) const LAT_MIN: f64 = -85.05112878;
pub(super) const LAT_MAX: f64 = 85.05112878;
pub(super) const LON_MIN: f64 = -180.0;
pub(super) const LON_MAX: f64 = 180.0;
/// Half the length of the Web-Mercator equator, the top of the step estimate.
const MERCATOR_MAX: f64 = 20037726.37;

/// A coordinate interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Span {
    pub min: f64,
    pub max: f64,
}

/// The ranges geo sets are encoded in (latitude limited as Web Mercator limits it).
pub(super) const LON_SPAN: Span = Span {
    min: LON_MIN,
    max: LON_MAX,
};
pub(super) const LAT_SPAN: Span = Span {
    min: LAT_MIN,
    max: LAT_MAX,
};
/// The latitude range of standard geohash strings.
pub(super) const STANDARD_LAT_SPAN: Span = Span {
    min: -90.0,
    max: 90.0,
};

/// A cell: `step` bits per coordinate, interleaved into the low `2 * step` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Cell {
    pub bits: u64,
    pub step: u8,
}

impl Cell {
    /// The lowest 52-bit score inside the cell.
    pub fn min_score(self) -> u64 {
        self.bits << (52 - 2 * u32::from(self.step))
    }

    /// The scores inside the cell: `min..max`, max excluded.
    pub fn score_range(self) -> (u64, u64) {
        let next = Cell {
            bits: self.bits + 1,
            step: self.step,
        };
        (self.min_score(), next.min_score())
    }
}

/// A cell's bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Area {
    pub lon: Span,
    pub lat: Span,
}

/// Spreads the 32 bits of `v` to the even bit positions of the result.
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// The inverse of `spread`: the even bits of `v`, packed.
fn squeeze(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    ((x | (x >> 16)) & 0xFFFF_FFFF) as u32
}

fn interleave(lat: u32, lon: u32) -> u64 {
    spread(lat) | (spread(lon) << 1)
}

/// (latitude, longitude) fixed-point parts of interleaved bits.
fn split(bits: u64) -> (u32, u32) {
    (squeeze(bits), squeeze(bits >> 1))
}

/// The cell of `step` bits holding (lon, lat) in the given ranges; None outside them or
/// outside the coordinates geo sets accept.
pub(super) fn encode(lon_span: Span, lat_span: Span, lon: f64, lat: f64, step: u8) -> Option<Cell> {
    if step == 0 || step > 32 {
        return None;
    }
    if !(LON_MIN..=LON_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_span.min || lat > lat_span.max || lon < lon_span.min || lon > lon_span.max {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let lat_offset = (lat - lat_span.min) / (lat_span.max - lat_span.min) * cells;
    let lon_offset = (lon - lon_span.min) / (lon_span.max - lon_span.min) * cells;
    // Offsets lie in 0..=2^step: the conversions truncate, as C's do.
    Some(Cell {
        bits: interleave(lat_offset as u32, lon_offset as u32),
        step,
    })
}

/// The cell of `step` bits holding (lon, lat) in the geo set ranges.
pub(super) fn encode_wgs84(lon: f64, lat: f64, step: u8) -> Option<Cell> {
    encode(LON_SPAN, LAT_SPAN, lon, lat, step)
}

/// A cell's bounds in the given ranges.
pub(super) fn decode(lon_span: Span, lat_span: Span, cell: Cell) -> Area {
    let (ilat, ilon) = split(cell.bits);
    let cells = (1u64 << cell.step) as f64;
    let lat_scale = lat_span.max - lat_span.min;
    let lon_scale = lon_span.max - lon_span.min;
    // The upper index wraps in 32 bits as Redis's unsigned arithmetic does.
    let at = |min: f64, i: u32, scale: f64| min + (f64::from(i) / cells) * scale;
    Area {
        lat: Span {
            min: at(lat_span.min, ilat, lat_scale),
            max: at(lat_span.min, ilat.wrapping_add(1), lat_scale),
        },
        lon: Span {
            min: at(lon_span.min, ilon, lon_scale),
            max: at(lon_span.min, ilon.wrapping_add(1), lon_scale),
        },
    }
}

/// A cell's bounds in the geo set ranges.
pub(super) fn decode_wgs84(cell: Cell) -> Area {
    decode(LON_SPAN, LAT_SPAN, cell)
}

/// The centre of an area, kept inside the geo set ranges: (lon, lat).
pub(super) fn centre(area: &Area) -> (f64, f64) {
    let lon = ((area.lon.min + area.lon.max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((area.lat.min + area.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// Moves a cell by `dx` columns east and `dy` rows north, wrapping around its grid. A
/// coordinate that does not move keeps its bits as they are, even when a point on the
/// top edge put it one past the grid (as Redis leaves it).
fn shift(cell: Cell, dx: i32, dy: i32) -> Cell {
    const LAT_BITS: u64 = 0x5555_5555_5555_5555;
    let mask = if cell.step >= 32 {
        u32::MAX
    } else {
        (1u32 << cell.step) - 1
    };
    let (lat, lon) = split(cell.bits);
    let mut bits = cell.bits;
    if dx != 0 {
        let lon = lon.wrapping_add_signed(dx) & mask;
        bits = (bits & LAT_BITS) | (spread(lon) << 1);
    }
    if dy != 0 {
        let lat = lat.wrapping_add_signed(dy) & mask;
        bits = (bits & !LAT_BITS) | spread(lat);
    }
    Cell {
        bits,
        step: cell.step,
    }
}

/// A search area: its shape's centre, size and unit.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    pub lon: f64,
    pub lat: f64,
    /// Meters per unit of the sizes below.
    pub conversion: f64,
    pub extent: Extent,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Extent {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// The step whose cells are about as large as the search radius (meters) at `lat`.
pub(super) fn estimate_step(range_m: f64, lat: f64) -> u8 {
    if range_m == 0.0 {
        return 26;
    }
    let mut range = range_m;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    // Meridians converge towards the poles: widen the cells there.
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// The shape's bounding box, [min lon, min lat, max lon, max lat]: the box's sides bend
/// with the meridians, so the widest edge is the one nearer the equator.
pub(super) fn bounding_box(shape: &Shape) -> [f64; 4] {
    let (half_w, half_h) = match shape.extent {
        Extent::Radius(r) => (r, r),
        Extent::Box { width, height } => (width / 2.0, height / 2.0),
    };
    let height = shape.conversion * half_h;
    let width = shape.conversion * half_w;
    let lat_delta = rad_deg(height / EARTH_RADIUS_M);
    let lon_delta_top = rad_deg(width / EARTH_RADIUS_M / deg_rad(shape.lat + lat_delta).cos());
    let lon_delta_bottom = rad_deg(width / EARTH_RADIUS_M / deg_rad(shape.lat - lat_delta).cos());
    let lon_delta = if shape.lat < 0.0 {
        lon_delta_bottom
    } else {
        lon_delta_top
    };
    [
        shape.lon - lon_delta,
        shape.lat - lat_delta,
        shape.lon + lon_delta,
        shape.lat + lat_delta,
    ]
}

/// The cells a search scans, in Redis's order: the centre's, then north, south, east,
/// west, north-east, north-west, south-east, south-west; None for a neighbour the shape
/// cannot reach.
pub(super) fn search_cells(shape: &Shape) -> [Option<Cell>; 9] {
    let [min_lon, min_lat, max_lon, max_lat] = bounding_box(shape);
    let radius_m = match shape.extent {
        Extent::Radius(r) => r,
        Extent::Box { width, height } => {
            ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
        }
    } * shape.conversion;
    let mut step = estimate_step(radius_m, shape.lat);
    let centre_at =
        |step: u8| encode_wgs84(shape.lon, shape.lat, step).unwrap_or(Cell { bits: 0, step });
    let mut cell = centre_at(step);
    // A shape near its cell's edge may reach past the neighbours: one step coarser then.
    let near = |c: Cell, dx, dy| decode_wgs84(shift(c, dx, dy));
    let too_fine = near(cell, 0, 1).lat.max < max_lat
        || near(cell, 0, -1).lat.min > min_lat
        || near(cell, 1, 0).lon.max < max_lon
        || near(cell, -1, 0).lon.min > min_lon;
    if step > 1 && too_fine {
        step -= 1;
        cell = centre_at(step);
    }
    let area = decode_wgs84(cell);
    // Neighbours on a side the bounding box does not reach are left out. A bound that
    // is NaN (an infinite box) compares as neither: that side is kept, as in Redis.
    let (mut north, mut south, mut east, mut west) = (true, true, true, true);
    if step >= 2 {
        let not = |a: f64, b: f64, o: Ordering| a.partial_cmp(&b) != Some(o);
        south = not(area.lat.min, min_lat, Ordering::Less);
        north = not(area.lat.max, max_lat, Ordering::Greater);
        west = not(area.lon.min, min_lon, Ordering::Less);
        east = not(area.lon.max, max_lon, Ordering::Greater);
    }
    let at = |keep: bool, dx, dy| keep.then(|| shift(cell, dx, dy));
    [
        Some(cell),
        at(north, 0, 1),
        at(south, 0, -1),
        at(east, 1, 0),
        at(west, -1, 0),
        at(north && east, 1, 1),
        at(north && west, -1, 1),
        at(south && east, 1, -1),
        at(south && west, -1, -1),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_squeeze_are_inverse() {
        for v in [0u32, 1, 2, 0xFFFF_FFFF, 0x1234_5678, 1 << 25] {
            assert_eq!(squeeze(spread(v)), v);
            assert_eq!(split(interleave(v, v ^ 0xA5A5)), (v, v ^ 0xA5A5));
        }
        assert_eq!(interleave(1, 0), 1);
        assert_eq!(interleave(0, 1), 2);
    }

    #[test]
    fn extreme_cells() {
        let lo = encode_wgs84(LON_MIN, LAT_MIN, STEP_MAX).map(|c| c.bits);
        assert_eq!(lo, Some(0));
        // The top edges land one past the grid, as in Redis: bits 52 and 53.
        let hi = encode_wgs84(LON_MAX, LAT_MAX, STEP_MAX).map(|c| c.bits);
        assert_eq!(hi, Some((1 << 52) | (1 << 53)));
        assert_eq!(encode_wgs84(180.1, 0.0, STEP_MAX), None);
        assert_eq!(encode_wgs84(0.0, 85.06, STEP_MAX), None);
    }

    #[test]
    fn decoding_contains_the_point() {
        for (lon, lat) in [
            (13.361389, 38.115556),
            (-122.27, 37.8),
            (0.0, 0.0),
            (179.99, -85.0),
        ] {
            let Some(c) = encode_wgs84(lon, lat, STEP_MAX) else {
                panic!("{lon},{lat} must encode");
            };
            let a = decode_wgs84(c);
            assert!(a.lon.min <= lon && lon < a.lon.max, "{lon} in {a:?}");
            assert!(a.lat.min <= lat && lat < a.lat.max, "{lat} in {a:?}");
            let (clon, clat) = centre(&a);
            assert!((clon - lon).abs() < 1e-5 && (clat - lat).abs() < 1e-5);
        }
    }

    #[test]
    fn neighbours_wrap_around_the_grid() {
        let c = Cell { bits: 0, step: 2 };
        let west = shift(c, -1, 0);
        assert_eq!(split(west.bits), (0, 3));
        let south = shift(c, 0, -1);
        assert_eq!(split(south.bits), (3, 0));
        assert_eq!(shift(west, 1, 0), c);
        let a = decode_wgs84(shift(c, 1, 1));
        assert_eq!(a.lon.min, -90.0);
        assert_eq!(a.lat.min, LAT_MIN + 170.10225756 / 4.0);
    }

    #[test]
    fn step_estimate_tracks_the_radius() {
        assert_eq!(estimate_step(0.0, 0.0), 26);
        assert!(estimate_step(1.0, 0.0) > estimate_step(1000.0, 0.0));
        assert!(estimate_step(1000.0, 0.0) > estimate_step(1000.0, 81.0));
        assert_eq!(estimate_step(1e9, 0.0), 1);
        assert_eq!(estimate_step(f64::INFINITY, 0.0), 1);
    }

    #[test]
    fn score_ranges_cover_the_cell() {
        let c = Cell {
            bits: 0b1011,
            step: 2,
        };
        assert_eq!(c.score_range(), (0b1011 << 48, 0b1100 << 48));
        let top = Cell {
            bits: 0b1111,
            step: 2,
        };
        assert_eq!(top.score_range().1, 1 << 52);
    }
}
