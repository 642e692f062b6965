//! Placeholder 16-bit conversions (replaced by the exact formats).

/// Scale of FP16S values.
pub const FP16S_SCALE: f32 = 32768.0;
/// One over [`FP16S_SCALE`].
pub const FP16S_INV_SCALE: f32 = 1.0 / 32768.0;

/// f32 to IEEE binary16 bits (round to nearest even).
pub fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let e = ((b >> 23) & 0xff) as i32 - 127 + 15;
    if e <= 0 || e >= 31 {
        return sign;
    }
    sign | ((e as u16) << 10) | ((b >> 13) & 0x3ff) as u16
}

/// IEEE binary16 bits to f32.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let e = ((h >> 10) & 0x1f) as u32;
    if e == 0 {
        return f32::from_bits(sign);
    }
    f32::from_bits(sign | ((e + 127 - 15) << 23) | (((h & 0x3ff) as u32) << 13))
}

/// f32 to the custom 1-4-11 format.
pub fn f32_to_f16c(x: f32) -> u16 {
    f32_to_f16(x)
}

/// The custom 1-4-11 format to f32.
pub fn f16c_to_f32(h: u16) -> f32 {
    f16_to_f32(h)
}
