//! A stable 64-bit hash: the same value in every run, process and
//! machine (unlike `std`'s `DefaultHasher`), for ids and seeded keys.

/// 64-bit FNV-1a of `parts`, with a separator between parts that cannot
/// occur inside validated names (so `["ab", "c"]` and `["a", "bc"]`
/// differ). One part: plain FNV-1a of its bytes.
pub fn fnv1a64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h ^= 0xff;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        for b in p.iter() {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors_and_separated_parts() {
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        assert_ne!(fnv1a64(&[b"ab", b"c"]), fnv1a64(&[b"a", b"bc"]));
        // Known FNV-1a vectors.
        assert_eq!(fnv1a64(&[b""]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(&[b"a"]), 0xaf63_dc4c_8601_ec8c);
    }
}
