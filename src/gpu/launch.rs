//! Typed kernel arguments: a kernel is declared once with its C parameter list
//! as a tuple type ([`KernelFn`], declarations in [`super::kernels`]), and a
//! launch takes a tuple of exactly those types, so an argument of the wrong
//! type, a missing one or two swapped ones no longer compile. The array of
//! pointers the driver wants is built here, and only here.
use std::ffi::c_void;
use std::marker::PhantomData;

use cudarc::driver::sys::CUdeviceptr;

use super::{
    BlsParams, BoxParams, BoxRunParams, CorrelateParams, L63Adaptive, L96Run, LsGrid, LsParams,
    LsStats, PhasefoldParams, RankParams, UniformParams,
};
use crate::float::{Complex, Float};
use crate::params::FixedWeights;

/// A value a kernel takes by value.
///
/// # Safety
/// The type's size, alignment and bits are those of the C parameter type it
/// stands for (`c_type`), so that the driver may copy it into the parameter
/// buffer as it is.
pub(crate) unsafe trait KernelParam: Copy {
    /// The parameter's type as csrc/ spells it once macros are expanded, in
    /// the normal form of the prototype test (`const T*`, `T*` or a type name).
    #[cfg(test)]
    fn c_type() -> String;
}

macro_rules! by_value {
    ($($rust:ty => $c:literal),* $(,)?) => {$(
        // SAFETY: the C type of the same size, alignment and representation
        // (the structs are bindgen's #[repr(C)] translations of the header,
        // with their layouts asserted at compile time).
        unsafe impl KernelParam for $rust {
            #[cfg(test)]
            fn c_type() -> String {
                $c.to_owned()
            }
        }
    )*};
}

by_value! {
    i32 => "int",
    i64 => "int64_t",
    f32 => "float",
    f64 => "double",
    LsParams => "kp_ls_params",
    LsGrid => "kp_ls_grid",
    BoxParams => "kp_box_params",
    BoxRunParams => "kp_box_run_params",
    CorrelateParams => "kp_correlate_params",
    L96Run => "kp_l96_run",
    L63Adaptive => "kp_l63_adaptive",
    RankParams => "kp_rank_params",
    UniformParams => "kp_uniform_params",
    BlsParams => "kp_bls_params",
    PhasefoldParams => "kp_phasefold_params",
}

// SAFETY: `kp::Weights<T, L>` of csrc/common.cuh is `struct { T w[L]; }`,
// as is the #[repr(C)] FixedWeights.
unsafe impl<T: Float, const L: usize> KernelParam for FixedWeights<T, L> {
    #[cfg(test)]
    fn c_type() -> String {
        format!("kp::Weights<{},{L}>", T::c_name())
    }
}

/// What a device pointer may point to: the element types of the kernels' arrays.
pub(crate) trait DeviceElem {
    /// The C name of the element type (`float`, `double2`, `kp_ls_stats`, ...).
    #[cfg(test)]
    fn c_name() -> &'static str;
}

impl<T: Float> DeviceElem for T {
    #[cfg(test)]
    fn c_name() -> &'static str {
        if T::NAME == "f32" {
            "float"
        } else {
            "double"
        }
    }
}

/// `float2` / `double2`: interleaved (re, im).
impl<T: Float> DeviceElem for Complex<T> {
    #[cfg(test)]
    fn c_name() -> &'static str {
        if T::NAME == "f32" {
            "float2"
        } else {
            "double2"
        }
    }
}

impl DeviceElem for i32 {
    #[cfg(test)]
    fn c_name() -> &'static str {
        "int"
    }
}

/// Raw element bits of 1 byte (the rank filters' b32 kernels read 1, 2 or
/// 4 bytes through it) and of 8 bytes.
impl DeviceElem for u8 {
    #[cfg(test)]
    fn c_name() -> &'static str {
        "unsigned char"
    }
}

/// The adaptive Lorenz 63 run's per-member counts and status.
impl DeviceElem for u32 {
    #[cfg(test)]
    fn c_name() -> &'static str {
        "uint32_t"
    }
}

impl DeviceElem for u64 {
    #[cfg(test)]
    fn c_name() -> &'static str {
        "unsigned long long"
    }
}

impl DeviceElem for i64 {
    #[cfg(test)]
    fn c_name() -> &'static str {
        "int64_t"
    }
}

/// `kp_ls_stats`, only ever passed by pointer (allocated on the host side in
/// [`crate::api::lombscargle`] as `STATS_LEN` doubles per series).
impl DeviceElem for LsStats {
    #[cfg(test)]
    fn c_name() -> &'static str {
        "kp_ls_stats"
    }
}

/// A `const T*` parameter: a device address the kernel reads `T`s from.
#[repr(transparent)]
pub(crate) struct In<T>(CUdeviceptr, PhantomData<fn() -> T>);

/// A `T*` parameter: a device address the kernel writes (and may read) `T`s at.
#[repr(transparent)]
pub(crate) struct Out<T>(CUdeviceptr, PhantomData<fn() -> T>);

macro_rules! device_pointer {
    ($name:ident, $const:literal) => {
        impl<T> $name<T> {
            pub(crate) const fn new(ptr: CUdeviceptr) -> Self {
                $name(ptr, PhantomData)
            }
        }
        impl<T> Clone for $name<T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T> Copy for $name<T> {}
        impl<T> std::fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({:#x})", stringify!($name), self.0)
            }
        }
        // SAFETY: #[repr(transparent)] over CUdeviceptr, the 64-bit device
        // address a C pointer parameter holds.
        unsafe impl<T: DeviceElem> KernelParam for $name<T> {
            #[cfg(test)]
            fn c_type() -> String {
                format!("{}{}*", $const, T::c_name())
            }
        }
    };
}

device_pointer!(In, "const ");
device_pointer!(Out, "");

impl<T> In<T> {
    /// NULL: for an input the kernel reads as absent (no offsets: one series).
    pub(crate) const fn null() -> Self {
        In::new(0)
    }
}

/// A kernel's whole argument list: a tuple of [`KernelParam`]s in the order of
/// the C parameters.
pub(crate) trait KernelArgs {
    /// Calls `f` with the driver's argument array: one pointer to each field,
    /// valid for the duration of the call (the driver copies the values at launch).
    fn with_pointers<R>(&self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R;

    /// The parameters as the prototype test and the layout test see them.
    #[cfg(test)]
    fn params() -> Vec<Param>;
}

/// One parameter of a declaration (tests only).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Param {
    pub c_type: String,
    pub size: usize,
    pub align: usize,
}

macro_rules! kernel_args {
    ($($P:ident $i:tt)+) => {
        impl<$($P: KernelParam),+> KernelArgs for ($($P,)+) {
            fn with_pointers<R>(&self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
                let mut pointers = [$(&self.$i as *const $P as *mut c_void),+];
                f(&mut pointers)
            }
            #[cfg(test)]
            fn params() -> Vec<Param> {
                vec![$(Param {
                    c_type: $P::c_type(),
                    size: std::mem::size_of::<$P>(),
                    align: std::mem::align_of::<$P>(),
                }),+]
            }
        }
    };
}

/// Implements [`KernelArgs`] for every prefix of the list: arity 1 to 19 (the
/// generic Lorenz 2005 kernel has 19 parameters).
macro_rules! kernel_args_prefixes {
    ([$($done:tt)*] $P:ident $i:tt $($rest:tt)*) => {
        kernel_args!($($done)* $P $i);
        kernel_args_prefixes!([$($done)* $P $i] $($rest)*);
    };
    ([$($done:tt)*]) => {};
}

kernel_args_prefixes!([] A0 0 A1 1 A2 2 A3 3 A4 4 A5 5 A6 6 A7 7 A8 8 A9 9 A10 10 A11 11 A12 12 A13 13 A14 14 A15 15 A16 16 A17 17 A18 18);

/// A kernel of the fatbin: its entry point's name and, as the tuple type `A`,
/// its C parameter list. Made only by the declarations in [`super::kernels`].
pub(crate) struct KernelFn<A> {
    name: &'static str,
    args: PhantomData<fn(A)>,
}

impl<A> KernelFn<A> {
    pub(super) const fn new(name: &'static str) -> Self {
        KernelFn {
            name,
            args: PhantomData,
        }
    }
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }
}

impl<A> Clone for KernelFn<A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for KernelFn<A> {}
impl<A> PartialEq for KernelFn<A> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl<A> Eq for KernelFn<A> {}
impl<A> std::fmt::Debug for KernelFn<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelFn({})", self.name)
    }
}

/// How a kernel is launched: `blocks` of its `__launch_bounds__` threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaunchConfig {
    /// Blocks of the grid; at least one is launched.
    pub blocks: u32,
    /// Dynamic shared memory per block, within the kernel's limit
    /// ([`super::Kernel::max_dynamic_shared`], set when the GPU is loaded).
    pub shared_bytes: u32,
    /// All blocks resident at once (`cuLaunchCooperativeKernel`), so the
    /// kernel may synchronise its whole grid: `blocks` is capped at one full
    /// wave ([`super::Kernel::full_grid`]); the device must support it.
    pub cooperative: bool,
}

impl LaunchConfig {
    /// A plain launch of `blocks` blocks.
    pub(crate) const fn grid(blocks: u32) -> Self {
        LaunchConfig {
            blocks,
            shared_bytes: 0,
            cooperative: false,
        }
    }
    /// A cooperative launch of `blocks` blocks, at most one full wave.
    pub(crate) const fn cooperative(blocks: u32) -> Self {
        LaunchConfig {
            blocks,
            shared_bytes: 0,
            cooperative: true,
        }
    }
    /// With `bytes` of dynamic shared memory per block.
    pub(crate) const fn shared(self, bytes: u32) -> Self {
        LaunchConfig {
            shared_bytes: bytes,
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_point_at_each_field_in_order() {
        let args = (
            7i32,
            In::<f32>::new(0xdead_beef),
            2.5f64,
            Out::<i64>::new(0),
        );
        args.with_pointers(|p| {
            assert_eq!(p.len(), 4);
            // SAFETY: each pointer points at the field of that type.
            unsafe {
                assert_eq!(*(p[0] as *const i32), 7);
                assert_eq!(*(p[1] as *const CUdeviceptr), 0xdead_beef);
                assert_eq!(*(p[2] as *const f64), 2.5);
                assert_eq!(*(p[3] as *const CUdeviceptr), 0);
            }
        });
    }

    #[test]
    fn c_spellings() {
        type A = (
            In<f32>,
            Out<f64>,
            In<Complex<f64>>,
            Out<LsStats>,
            FixedWeights<f32, 25>,
            i64,
        );
        let spelled: Vec<String> = A::params().into_iter().map(|p| p.c_type).collect();
        assert_eq!(
            spelled,
            [
                "const float*",
                "double*",
                "const double2*",
                "kp_ls_stats*",
                "kp::Weights<float,25>",
                "int64_t",
            ]
        );
        assert_eq!(std::mem::size_of::<FixedWeights<f32, 25>>(), 100);
        assert_eq!(std::mem::size_of::<In<f64>>(), 8);
    }
}
