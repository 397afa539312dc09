//! "Did you mean ...?" for names a user types: presets, environments, rule codes and names.
//!
//! The closest candidate by edit distance (insertions, deletions, substitutions and swaps of
//! neighbours, case-insensitive), offered only when it is close enough to be a slip of the
//! hand: at most a third of the longer name's length, and at least one edit.

/// The candidate closest to `typed`, if one is close enough.
pub fn closest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = typed.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (distance(&typed, &c.to_lowercase()), c))
        .filter(|(d, c)| *d <= (typed.chars().count().max(c.chars().count()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// ` (did you mean `X`?)` for [`closest`], or nothing.
pub fn hint<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(typed, candidates)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

/// The optimal-string-alignment distance between `a` and `b` (Damerau-Levenshtein without
/// repeated edits of one substring): two rows of the table and the one before them.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(before[j - 2] + 1);
            }
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_names_are_offered_and_far_ones_are_not() {
        let presets = ["vulkan1.1", "vulkan1.2", "lavapipe", "nvidia", "naga"];
        assert_eq!(closest("lavapip", presets), Some("lavapipe"));
        assert_eq!(closest("Nvidia", presets), Some("nvidia"));
        assert_eq!(closest("vulkan11", presets), Some("vulkan1.1"));
        assert_eq!(
            closest("lvaapipe", presets),
            Some("lavapipe"),
            "a swap is one edit"
        );
        assert_eq!(closest("radv", presets), None);
        assert_eq!(closest("SG0110", ["SG0101", "SG0201"]), Some("SG0101"));
        assert_eq!(hint("mystery", presets), "");
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
