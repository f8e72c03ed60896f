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

/// Which steps of a fixed-step run write a frame: every `every` steps from
/// step 0 (`Every(0)`: none), or the steps of a (checked) save_at list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frames<'a> {
    Every(u64),
    At(&'a [u64]),
}

impl<'a> Frames<'a> {
    /// The list when `save_at` is not empty, else every `every` steps (a
    /// caller refuses both at once).
    pub fn of(every: u64, save_at: &'a [u64]) -> Self {
        match save_at.is_empty() {
            true => Frames::Every(every),
            false => Frames::At(save_at),
        }
    }

    /// The frames of a run of `steps` steps: `steps / every + 1` (none for
    /// `every` 0), or one per saved step (saturating: a count that large is
    /// refused by validation).
    pub fn count(&self, steps: u64) -> usize {
        match *self {
            Frames::Every(every) => steps.checked_div(every).map_or(0, |f| {
                usize::try_from(f).unwrap_or(usize::MAX).saturating_add(1)
            }),
            Frames::At(at) => at.len(),
        }
    }

    /// The frame that holds the state after `step` steps, if any.
    pub fn after(&self, step: u64) -> Option<usize> {
        match *self {
            Frames::Every(0) => None,
            Frames::Every(every) => (step % every == 0).then(|| (step / every) as usize),
            Frames::At(at) => at.binary_search(&step).ok(),
        }
    }
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
    fn frames_are_every_kth_step_or_the_listed_ones() {
        let every = Frames::of(3, &[]);
        assert_eq!(every.count(10), 4);
        assert_eq!(
            (0..=10).map(|s| every.after(s)).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(|s| (s % 3 == 0).then_some(s / 3))
        );
        assert_eq!(Frames::of(0, &[]).count(10), 0);
        assert_eq!(Frames::of(0, &[]).after(0), None);
        let at = Frames::of(0, &[0, 4, 9]);
        assert_eq!(at.count(10), 3);
        assert_eq!(
            (0..=10)
                .filter_map(|s| at.after(s).map(|k| (s, k)))
                .collect::<Vec<_>>(),
            [(0, 0), (4, 1), (9, 2)]
        );
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
