//! Runtime dispatch of the GP's hot loops to the widest instruction set the
//! CPU has (pulp: AVX2 on x86-64 v3 and later, else the baseline SSE2).
//!
//! The loops are plain Rust that the compiler vectorises; an entry point
//! wraps its body (marked `#[inline(always)]`, as are the helpers it calls)
//! in a [`pulp::WithSimd`] operation, so the body is compiled once per
//! instruction set and the CPU picks at run time. Rust never fuses a
//! multiply and an add nor reorders a sum on its own, so every lane does
//! the baseline's arithmetic in the baseline's order: the results are the
//! same bits on every CPU (`vectorised_and_scalar_agree_bit_for_bit`).

use std::sync::OnceLock;

use pulp::{Arch, WithSimd};

/// The instruction set detected once per process.
fn arch() -> Arch {
    static ARCH: OnceLock<Arch> = OnceLock::new();
    *ARCH.get_or_init(Arch::new)
}

/// Runs `op` compiled for the detected instruction set.
#[inline(always)]
pub(crate) fn dispatch<Op: WithSimd>(op: Op) -> Op::Output {
    arch().dispatch(op)
}

/// Runs `op` compiled for the baseline instruction set only (tests).
#[cfg(test)]
pub(crate) fn scalar<Op: WithSimd>(op: Op) -> Op::Output {
    op.with_simd(pulp::Scalar::new())
}

/// Declares a [`WithSimd`] operation `$name` holding `$field`s whose body
/// `$body` runs with those fields bound (the body must call only
/// `#[inline(always)]` code to be compiled for the dispatched set).
macro_rules! simd_op {
    ($vis:vis struct $name:ident<$($lt:lifetime),*> { $($field:ident: $ty:ty),* $(,)? } -> $out:ty $body:block) => {
        $vis struct $name<$($lt),*> { $($field: $ty),* }
        impl<$($lt),*> pulp::WithSimd for $name<$($lt),*> {
            type Output = $out;
            #[inline(always)]
            fn with_simd<S: pulp::Simd>(self, _: S) -> $out {
                let Self { $($field),* } = self;
                $body
            }
        }
    };
}
pub(crate) use simd_op;

#[cfg(test)]
mod tests {
    /// Where the CPU has AVX2 the dispatch takes it, so the bit-for-bit
    /// tests compare two builds, not the baseline with itself.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_dispatch_takes_avx2_where_the_cpu_has_it() {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            assert!(matches!(super::arch(), pulp::Arch::V3(_)));
        }
    }
}
