//! States saved at chosen steps of a fixed-step run ("save at steps"): a
//! list of step indices, sorted, unique, each in 0..=steps, frame k the state
//! after `save_at[k]` steps (0: the initial state). Any fixed-step ensemble
//! runs it the same way: cut into segments that end at the saved steps
//! ([`segments`]), the state written out after each.
use crate::error::{Error, Result};

/// `save_at` sorted, unique, each in 0..=`steps`.
pub fn check_save_at(save_at: &[u64], steps: u64) -> Result<()> {
    for (k, &s) in save_at.iter().enumerate() {
        if s > steps {
            return Err(Error::invalid(format!(
                "save_at[{k}] = {s} is past the last step, steps = {steps}"
            )));
        }
        if k > 0 && s <= save_at[k - 1] {
            return Err(Error::invalid(format!(
                "save_at must be sorted and unique: save_at[{}] = {}, save_at[{k}] = {s}",
                k - 1,
                save_at[k - 1]
            )));
        }
    }
    Ok(())
}

/// One piece of a run: `steps` steps, then the state is frame `frame` (if any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub steps: u64,
    pub frame: Option<usize>,
}

/// A run of `steps` steps cut at the (checked) saved steps, in order: one
/// segment ending at each saved step, then one to `steps` if the last saved
/// step is earlier. At least one segment (a run of 0 steps with nothing
/// saved is one empty segment: the final state is the initial one).
pub fn segments(save_at: &[u64], steps: u64) -> Vec<Segment> {
    let mut out = Vec::with_capacity(save_at.len() + 1);
    let mut at = 0;
    for (frame, &s) in save_at.iter().enumerate() {
        out.push(Segment {
            steps: s - at,
            frame: Some(frame),
        });
        at = s;
    }
    if out.is_empty() || at < steps {
        out.push(Segment {
            steps: steps - at,
            frame: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_end_at_saved_steps_and_at_the_end() {
        let seg = |s, f| Segment { steps: s, frame: f };
        assert_eq!(segments(&[], 5), vec![seg(5, None)]);
        assert_eq!(segments(&[], 0), vec![seg(0, None)]);
        assert_eq!(
            segments(&[0, 2, 5], 5),
            vec![seg(0, Some(0)), seg(2, Some(1)), seg(3, Some(2))]
        );
        assert_eq!(segments(&[3], 7), vec![seg(3, Some(0)), seg(4, None)]);
    }

    #[test]
    fn unsorted_repeated_or_late_steps_are_refused() {
        assert!(check_save_at(&[0, 3, 10], 10).is_ok());
        let msg = |r: Result<()>| r.unwrap_err().to_string();
        assert!(msg(check_save_at(&[11], 10)).contains("save_at[0] = 11"));
        assert!(msg(check_save_at(&[2, 2], 10)).contains("sorted and unique"));
        assert!(msg(check_save_at(&[3, 1], 10)).contains("save_at[1] = 1"));
    }
}
