//! The lattice kernels' variants, written once: each collision model and number format beside
//! the name piece of its entry points, and the product of models, formats and streaming.
//!
//! [`lbm_variants!`](crate::lbm_variants) hands the lists to a callback macro. `common` builds
//! the kernel table from them ([`crate::kernel::KERNELS`]) and `kernels-gpu` its entry points,
//! both writing an entry point's name as `concat!` of the same pieces, so a type cannot be
//! paired with another variant's name on either side.

/// Calls `$callback! { $($args)* formats: [..], storages: [..], variants: [..] }` with
/// - `formats`: `(Format, "fp32")` for every number format of the populations (pull streaming);
/// - `storages`: `(Storage, "fp32", "")` and `(InPlace<Format>, "fp32", "_in_place")`, every
///   format streamed both ways;
/// - `variants`: `(Model, "bgk", Storage, "fp32", "_in_place")`, every model on every storage.
///
/// The types are full paths; an entry point's name is the kernel's prefix, the model's piece,
/// `_`, the format's piece and the streaming suffix (`lbm_stream_collide_bgk_fp32_in_place`).
/// Each list closes with a comma. A new collision model or number format is one line below.
#[macro_export]
macro_rules! lbm_variants {
    ($callback:ident $({ $($args:tt)* })?) => {
        $crate::__lbm_product! {
            callback: $callback { $($($args)*)? },
            models: [
                ($crate::lbm::Bgk, "bgk"),
                ($crate::lbm::RmMrt, "rm_mrt"),
                ($crate::lbm::AcmMrt, "acm_mrt"),
            ],
            formats: [
                ($crate::lbm::Fp32, "fp32"),
                ($crate::lbm::Fp16S, "fp16s"),
                ($crate::lbm::Fp16C, "fp16c"),
            ],
        }
    };
}

/// The products behind [`lbm_variants!`](crate::lbm_variants): formats times streaming, then
/// one model at a time times the storages, accumulated before the one call of the callback.
#[doc(hidden)]
#[macro_export]
macro_rules! __lbm_product {
    (
        callback: $callback:ident { $($args:tt)* },
        models: $models:tt,
        formats: [$(($f:ty, $fname:literal)),* $(,)?],
    ) => {
        $crate::__lbm_product! {
            @models $callback { $($args)* },
            models: $models,
            formats: [$(($f, $fname),)*],
            storages: [
                $(($f, $fname, ""),)*
                $(($crate::lbm::InPlace<$f>, $fname, "_in_place"),)*
            ],
            variants: [],
        }
    };
    (
        @models $callback:ident { $($args:tt)* },
        models: [($m:ty, $mname:literal), $($models:tt)*],
        formats: $formats:tt,
        storages: [$(($s:ty, $sname:literal, $stream:literal),)*],
        variants: [$($variants:tt)*],
    ) => {
        $crate::__lbm_product! {
            @models $callback { $($args)* },
            models: [$($models)*],
            formats: $formats,
            storages: [$(($s, $sname, $stream),)*],
            variants: [$($variants)* $(($m, $mname, $s, $sname, $stream),)*],
        }
    };
    (
        @models $callback:ident { $($args:tt)* },
        models: [],
        formats: $formats:tt,
        storages: $storages:tt,
        variants: $variants:tt,
    ) => {
        $callback! {
            $($args)*
            formats: $formats,
            storages: $storages,
            variants: $variants,
        }
    };
}

#[cfg(test)]
mod tests {
    /// Collects the lists as names, the way both sides build them.
    macro_rules! names {
        (
            formats: [$(($f:ty, $fname:literal),)*],
            storages: [$(($s:ty, $sname:literal, $stream:literal),)*],
            variants: [$(($vm:ty, $mname:literal, $vs:ty, $vsname:literal, $vstream:literal),)*],
        ) => {
            (
                &[$($fname),*],
                &[$(concat!($sname, $stream)),*],
                &[$(concat!($mname, "_", $vsname, $vstream)),*],
            )
        };
    }

    #[test]
    fn every_model_on_every_storage() {
        let (formats, storages, variants): (&[&str], &[&str], &[&str]) =
            crate::lbm_variants!(names);
        assert_eq!(formats, ["fp32", "fp16s", "fp16c"]);
        assert_eq!(
            storages,
            [
                "fp32",
                "fp16s",
                "fp16c",
                "fp32_in_place",
                "fp16s_in_place",
                "fp16c_in_place"
            ]
        );
        assert_eq!(variants.len(), 3 * 6);
        assert_eq!(variants[0], "bgk_fp32");
        assert_eq!(variants[6 + 3], "rm_mrt_fp32_in_place");
        assert_eq!(variants[17], "acm_mrt_fp16c_in_place");
    }
}
