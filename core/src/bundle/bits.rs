//! Latent levels packed at their bits, most significant bit first.

pub(crate) fn packed_len(values: u64, bits: u32) -> u64 {
    (values * u64::from(bits)).div_ceil(8)
}

pub(crate) fn pack_levels(levels: &[u8], bits: u32, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + packed_len(levels.len() as u64, bits) as usize, 0);
    for (i, &level) in levels.iter().enumerate() {
        for b in 0..bits as usize {
            if level >> b & 1 == 1 {
                let bit = i * bits as usize + b;
                out[start + bit / 8] |= 1 << (bit % 8);
            }
        }
    }
}

pub(crate) fn unpack_levels(bytes: &[u8], count: usize, bits: u32) -> Vec<u8> {
    let mut levels = vec![0u8; count];
    for (i, level) in levels.iter_mut().enumerate() {
        for b in 0..bits as usize {
            let bit = i * bits as usize + b;
            if bytes.get(bit / 8).is_some_and(|byte| byte >> (bit % 8) & 1 == 1) {
                *level |= 1 << b;
            }
        }
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_packing_round_trips() {
        for bits in 1..=8 {
            let levels: Vec<u8> = (0..1000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8 >> (8 - bits)).collect();
            let mut packed = Vec::new();
            pack_levels(&levels, bits, &mut packed);
            assert_eq!(packed.len() as u64, packed_len(1000, bits));
            assert_eq!(unpack_levels(&packed, 1000, bits), levels);
        }
    }
}
