//! Redis's intset: sorted distinct integers in one buffer, all stored at the width of the
//! widest (16, 32 or 64 bits). Layout: `[width in bytes][elements, little-endian]`, kept at
//! its exact size (Redis's has an 8-byte header; this one has 1). Like Redis, the width
//! only ever grows.

#[derive(Clone, PartialEq, Eq)]
pub(crate) struct IntSet(Vec<u8>);

/// The narrowest width (bytes) that holds `v`.
fn width_of(v: i64) -> usize {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

impl Default for IntSet {
    fn default() -> Self {
        IntSet(vec![2])
    }
}

impl IntSet {
    pub fn heap_bytes(&self) -> usize {
        crate::memory::heap_of_capacity(self.0.capacity())
    }

    pub fn width(&self) -> usize {
        match self.0.first() {
            Some(&w @ (2 | 4 | 8)) => w as usize,
            _ => 2,
        }
    }

    pub fn len(&self) -> usize {
        self.0.len().saturating_sub(1) / self.width()
    }

    pub fn get(&self, i: usize) -> Option<i64> {
        let w = self.width();
        let at = 1 + i.checked_mul(w)?;
        let b = self.0.get(at..at + w)?;
        Some(match w {
            2 => i16::from_le_bytes([b[0], b[1]]) as i64,
            4 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            _ => {
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                i64::from_le_bytes(a)
            }
        })
    }

    fn put(buf: &mut Vec<u8>, w: usize, v: i64) {
        match w {
            2 => buf.extend_from_slice(&(v as i16).to_le_bytes()),
            4 => buf.extend_from_slice(&(v as i32).to_le_bytes()),
            _ => buf.extend_from_slice(&v.to_le_bytes()),
        }
    }

    /// Binary search: Ok(position) or Err(insertion point).
    fn search(&self, v: i64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid) {
                Some(x) if x < v => lo = mid + 1,
                Some(x) if x > v => hi = mid,
                Some(_) => return Ok(mid),
                None => return Err(lo),
            }
        }
        Err(lo)
    }

    pub fn contains(&self, v: i64) -> bool {
        width_of(v) <= self.width() && self.search(v).is_ok()
    }

    /// True if added.
    pub fn add(&mut self, v: i64) -> bool {
        let w = self.width();
        let need = width_of(v);
        if need > w {
            // Upgrade: a value wider than all others is the smallest or the largest.
            let n = self.len();
            let mut buf = Vec::with_capacity(1 + (n + 1) * need);
            buf.push(need as u8);
            if v < 0 {
                Self::put(&mut buf, need, v);
            }
            for i in 0..n {
                Self::put(&mut buf, need, self.get(i).unwrap_or_default());
            }
            if v >= 0 {
                Self::put(&mut buf, need, v);
            }
            self.0 = buf;
            return true;
        }
        match self.search(v) {
            Ok(_) => false,
            Err(pos) => {
                let mut enc = Vec::with_capacity(w);
                Self::put(&mut enc, w, v);
                let at = 1 + pos * w;
                self.0.reserve_exact(w);
                self.0.splice(at..at, enc);
                true
            }
        }
    }

    /// True if removed.
    pub fn remove(&mut self, v: i64) -> bool {
        if width_of(v) > self.width() {
            return false;
        }
        match self.search(v) {
            Ok(pos) => self.remove_at(pos).is_some(),
            Err(_) => false,
        }
    }

    pub fn remove_at(&mut self, pos: usize) -> Option<i64> {
        let v = self.get(pos)?;
        let w = self.width();
        let at = 1 + pos * w;
        self.0.drain(at..at + w);
        self.0.shrink_to_fit();
        Some(v)
    }

    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map_while(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_widths_upgrade() {
        let mut s = IntSet::default();
        for v in [5, -3, 100, 5, 0] {
            s.add(v);
        }
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![-3, 0, 5, 100]);
        assert_eq!(s.width(), 2);
        assert!(s.add(70000));
        assert_eq!(s.width(), 4);
        assert!(s.add(i64::MIN));
        assert_eq!(s.width(), 8);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            vec![i64::MIN, -3, 0, 5, 100, 70000]
        );
        assert!(s.contains(70000) && s.contains(i64::MIN) && !s.contains(6));
        assert!(s.remove(i64::MIN));
        assert_eq!(s.width(), 8, "never downgrades");
        assert!(!s.remove(i64::MAX));
        assert_eq!(s.len(), 5);
        let mut t = IntSet::default();
        t.add(1);
        assert!(!t.remove(1 << 40));
        assert!(!t.contains(1 << 40));
    }
}
