//! Sizes from the command line checked before anything is built from them.

/// Refuses a buffer of `counts` multiplied together values of `T` that the
/// host cannot hold (a product that overflows, past the largest array, or
/// more than the host gives), naming the options in `what`: an error before
/// the run, instead of a panic or an abort when the buffer is allocated.
pub fn check_room<T>(what: &str, counts: &[usize]) -> Result<(), String> {
    let len = counts
        .iter()
        .try_fold(1usize, |acc, &c| acc.checked_mul(c))
        .ok_or_else(|| {
            format!(
                "{what}: {} values is more than any memory holds",
                counts
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" x ")
            )
        })?;
    kernpack::api::check_host_room::<T>(what, len).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::check_room;

    #[test]
    fn sizes_no_host_can_hold_are_errors_naming_the_options() {
        assert!(check_room::<f64>("--nf", &[1000]).is_ok());
        for counts in [&[usize::MAX, 2][..], &[usize::MAX], &[1 << 40, 1 << 20]] {
            let e = check_room::<f64>("--nf", counts).unwrap_err();
            assert!(e.contains("--nf"), "{e}");
        }
    }
}
