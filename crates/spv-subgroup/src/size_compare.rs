//! `spv-subgroup run` at several subgroup sizes: whether each buffer's contents are equal across
//! the sizes and, where not, the first 32-bit word that differs with its value at each size.
//! Words that differ between two seeds of undefined values at one size are reported as undefined,
//! not as size dependence (`run.rs` re-runs the sizes that read undefined values).

use std::fmt::Write as _;

use spv_subgroup_sim::Outcome;

/// What the comparison found.
#[derive(Debug)]
pub struct Report {
    /// The lines to print.
    pub text: String,
    /// Whether some buffer's results depend on the subgroup size.
    pub size_dependent: bool,
}

/// The little-endian 32-bit word at byte `at` (fewer bytes at the end are zero-extended).
fn word(bytes: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    for (k, b) in bytes.iter().skip(at).take(4).enumerate() {
        w[k] = *b;
    }
    u32::from_le_bytes(w)
}

/// Compares every buffer across `runs` (size, outcome); `reruns` are the same sizes run with
/// another seed where the first run read undefined values.
pub fn compare(runs: &[(u32, Outcome)], reruns: &[(u32, Outcome)]) -> Report {
    let mut text = String::new();
    let mut size_dependent = false;
    let sizes: Vec<String> = runs.iter().map(|r| r.0.to_string()).collect();
    let Some((_, first)) = runs.first() else {
        return Report {
            text,
            size_dependent,
        };
    };
    for &(set, binding) in first.buffers.keys() {
        let contents: Vec<&[u8]> = runs
            .iter()
            .map(|(_, o)| {
                o.buffers
                    .get(&(set, binding))
                    .map_or(&[][..], Vec::as_slice)
            })
            .collect();
        // Byte ranges (words) whose value changes with the seed of undefined values.
        let unstable = |at: usize| {
            reruns.iter().any(|(size, o)| {
                let again = o
                    .buffers
                    .get(&(set, binding))
                    .map_or(&[][..], Vec::as_slice);
                runs.iter()
                    .find(|r| r.0 == *size)
                    .and_then(|r| r.1.buffers.get(&(set, binding)))
                    .is_some_and(|b| word(b, at) != word(again, at))
            })
        };
        let len = contents.iter().map(|c| c.len()).max().unwrap_or(0);
        let (mut first_size, mut first_undefined, mut undefined_words) = (None, None, 0usize);
        for at in (0..len).step_by(4) {
            let values: Vec<u32> = contents.iter().map(|c| word(c, at)).collect();
            if unstable(at) {
                undefined_words += 1;
                first_undefined.get_or_insert(at);
                continue;
            }
            if first_size.is_none() && values.iter().any(|v| *v != values[0]) {
                first_size = Some((at, values));
            }
        }
        match first_size {
            Some((at, values)) => {
                size_dependent = true;
                let each: Vec<String> = runs
                    .iter()
                    .zip(&values)
                    .map(|((size, _), v)| format!("size {size}: {v:#010x} ({v})"))
                    .collect();
                let _ = writeln!(
                    text,
                    "buffer {set}.{binding}: depends on the subgroup size: first difference at byte offset {at}: {}",
                    each.join(", ")
                );
            }
            None => {
                let _ = writeln!(
                    text,
                    "buffer {set}.{binding}: equal at subgroup sizes {}",
                    sizes.join(", ")
                );
            }
        }
        if let Some(at) = first_undefined {
            let _ = writeln!(
                text,
                "buffer {set}.{binding}: {undefined_words} words depend on undefined values (first at byte offset {at}), not compared across sizes"
            );
        }
    }
    Report {
        text,
        size_dependent,
    }
}

/// The executed instructions whose results depend on the subgroup size, with how often each
/// ran at each size.
pub fn size_reads(runs: &[(u32, Outcome)]) -> String {
    let mut rows: Vec<(Option<u32>, String, String, Vec<String>)> = Vec::new();
    for (size, o) in runs {
        for r in &o.size_reads {
            let key = r.location.to_string();
            let at = match rows.iter().position(|x| x.2 == key) {
                Some(k) => k,
                None => {
                    rows.push((r.location.word, r.what.clone(), key, Vec::new()));
                    rows.len() - 1
                }
            };
            rows[at].3.push(format!("{} times at size {size}", r.count));
        }
    }
    rows.sort_by_key(|r| r.0);
    let mut text = String::new();
    for (_, what, at, counts) in &rows {
        let _ = writeln!(
            text,
            "size-dependent: {what} at {at}: executed {}",
            counts.join(", ")
        );
    }
    if rows.is_empty() {
        text.push_str("size-dependent: no instruction that reads the subgroup size ran\n");
    }
    text
}
