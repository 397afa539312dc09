//! Scalar bit helpers: values live in `u64` lanes (integers zero-extended to their width, floats as
//! the bit pattern of their width, bools as 0/1); these convert to and from `i64`/`f64` and
//! little-endian bytes in memory.

/// The low `width` bits set.
pub fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Sign-extends the low `width` bits.
pub fn sext(width: u32, bits: u64) -> i64 {
    if width >= 64 {
        bits as i64
    } else {
        let shift = 64 - width;
        ((bits << shift) as i64) >> shift
    }
}

/// Reads the little-endian value of up to 8 bytes.
pub fn read_le(bytes: &[u8]) -> u64 {
    match bytes.len() {
        4 => u64::from(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
        8 => u64::from_le_bytes([
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
        ]),
        _ => bytes
            .iter()
            .enumerate()
            .fold(0, |v, (k, b)| v | u64::from(*b) << (8 * k)),
    }
}

/// Writes the low `bytes.len()` bytes of `v`, little-endian.
pub fn write_le(bytes: &mut [u8], v: u64) {
    match bytes.len() {
        4 => bytes.copy_from_slice(&(v as u32).to_le_bytes()),
        8 => bytes.copy_from_slice(&v.to_le_bytes()),
        _ => {
            for (k, byte) in bytes.iter_mut().enumerate() {
                *byte = (v >> (8 * k)) as u8;
            }
        }
    }
}

/// An IEEE half as `f64` (exact).
pub fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = u32::from((h >> 10) & 0x1f);
    let man = f64::from(h & 0x3ff);
    match exp {
        0 => sign * man * 2f64.powi(-24),
        0x1f if man == 0.0 => sign * f64::INFINITY,
        0x1f => {
            // Keep the payload: shift the 10 mantissa bits to the top of f64's 52.
            let bits =
                (u64::from(h & 0x8000) << 48) | (0x7ffu64 << 52) | (u64::from(h & 0x3ff) << 42);
            f64::from_bits(bits | (1u64 << 51))
        }
        e => sign * (1.0 + man / 1024.0) * 2f64.powi(e as i32 - 15),
    }
}

/// `f64` to the nearest IEEE half (round to nearest even), NaN payload's top bits kept.
pub fn f64_to_f16(x: f64) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 48) & 0x8000) as u16;
    if x.is_nan() {
        return sign | 0x7e00 | ((bits >> 42) & 0x1ff) as u16;
    }
    let a = x.abs();
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    if a < 2f64.powi(-14) {
        // Subnormal (or zero): units of 2^-24, rounded to nearest even.
        let q = a * 2f64.powi(24);
        let r = q.round();
        let r = if (r - q).abs() == 0.5 && r % 2.0 != 0.0 {
            r - 1.0
        } else {
            r
        };
        return sign | r as u16;
    }
    let e = a.log2().floor() as i32;
    // Correct log2's rounding at the edges.
    let e = if 2f64.powi(e) > a {
        e - 1
    } else if 2f64.powi(e + 1) <= a {
        e + 1
    } else {
        e
    };
    let q = a / 2f64.powi(e - 10); // in [1024, 2048)
    let r = q.round();
    let r = if (r - q).abs() == 0.5 && r % 2.0 != 0.0 {
        r - 1.0
    } else {
        r
    };
    let (r, e) = if r >= 2048.0 {
        (r / 2.0, e + 1)
    } else {
        (r, e)
    };
    if e > 15 {
        return sign | 0x7c00;
    }
    sign | (((e + 15) as u16) << 10) | ((r as u16) & 0x3ff)
}

/// A float of `width` bits as `f64`.
pub fn fget(width: u32, bits: u64) -> f64 {
    match width {
        16 => f16_to_f64(bits as u16),
        32 => f64::from(f32::from_bits(bits as u32)),
        _ => f64::from_bits(bits),
    }
}

/// `f64` rounded to a float of `width` bits.
pub fn fput(width: u32, x: f64) -> u64 {
    match width {
        16 => u64::from(f64_to_f16(x)),
        32 => u64::from((x as f32).to_bits()),
        _ => x.to_bits(),
    }
}

/// The lanes of a mask, lowest first.
pub fn lanes(m: u128) -> Lanes {
    Lanes {
        lo: m as u64,
        hi: (m >> 64) as u64,
    }
}

/// The iterator of [`lanes`]: the mask as two 64-bit halves (most subgroups fit the low one,
/// and 64-bit bit scans are half the work of 128-bit ones on every lane of every loop).
#[derive(Clone, Copy, Debug)]
pub struct Lanes {
    lo: u64,
    hi: u64,
}

impl Iterator for Lanes {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.lo != 0 {
            let l = self.lo.trailing_zeros();
            self.lo &= self.lo - 1;
            Some(l)
        } else if self.hi != 0 {
            let l = self.hi.trailing_zeros();
            self.hi &= self.hi - 1;
            Some(l + 64)
        } else {
            None
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.lo.count_ones() + self.hi.count_ones()) as usize;
        (n, Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_round_trips_every_pattern() {
        for h in 0..=u16::MAX {
            let x = f16_to_f64(h);
            let back = f64_to_f16(x);
            if x.is_nan() {
                assert!(f16_to_f64(back).is_nan(), "{h:#x}");
            } else {
                assert_eq!(back, h, "{h:#x} -> {x}");
            }
        }
    }

    #[test]
    fn half_rounds_to_nearest_even() {
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11)), 0x3c00);
        assert_eq!(f64_to_f16(1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
        assert_eq!(f64_to_f16(65519.0), 0x7bff);
        assert_eq!(f64_to_f16(65520.0), 0x7c00);
    }

    #[test]
    fn sext_and_mask() {
        assert_eq!(sext(8, 0xff), -1);
        assert_eq!(sext(16, 0x7fff), 0x7fff);
        assert_eq!(mask(64), u64::MAX);
        assert_eq!(mask(1), 1);
    }
}
