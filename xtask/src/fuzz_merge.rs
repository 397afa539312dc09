//! `cargo xtask fuzz --merge`: the committed corpus `fuzz/corpus/NAME/` becomes the few inputs of
//! the committed and working corpora that cover the most beyond the seeds.
//!
//! libFuzzer's `-set_cover_merge=1` with `-merge_control_file` runs every input once and writes
//! each one's features (coverage edges with hit-count buckets, comparison operands) to the
//! control file. From it, [`pick`] chooses greedily: the seeds' features count as covered (they
//! are our fixtures, which the test suite runs anyway), then the input that adds the most
//! features not yet covered, the smaller one on a tie, until [`COMMITTED_INPUTS`] are chosen or
//! nothing adds any. The committed regression inputs (`regression-*`) always stay. A plain
//! merge keeps every input that adds a feature (hundreds per target after an hour), too many
//! for the replay tests and for CI's quick run, which loads the whole committed corpus before it
//! mutates anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;

use crate::process::step;

/// How many inputs per target the committed corpus holds, regression inputs included: the
/// replay tests (`fuzz/tests/replay.rs`, `cli_fuzz_corpus.rs`) run each one for every preset.
pub const COMMITTED_INPUTS: usize = 50;

/// Largest input committed (the largest seed module is below it): keeps the repository and the
/// replay tests small.
const COMMITTED_MAX_LEN: usize = 16384;

/// Replaces the fuzzer inputs of `fuzz/corpus/NAME/` by the pick from the committed corpus and
/// the working corpus `target/fuzz/corpus/NAME/`, judged by `bin` (the instrumented target).
pub fn merge(root: &Path, bin: &Path, seed_dir: &Path, name: &str) -> anyhow::Result<()> {
    let committed = root.join("fuzz/corpus").join(name);
    let work = root.join("target/fuzz/corpus").join(name);
    let scratch = root.join("target/fuzz/merge").join(name);
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)?;
    }
    // A copy of the working corpus (a fuzzer still running deletes inputs it has reduced), and
    // an empty folder for libFuzzer to merge into (we only want its control file).
    let snapshot = scratch.join("snapshot");
    let out = scratch.join("out");
    for d in [&snapshot, &out, &committed, &work] {
        std::fs::create_dir_all(d)?;
    }
    for e in std::fs::read_dir(&work)?.flatten() {
        // An input deleted meanwhile is no loss: its reduced form is in the folder too.
        let _ = std::fs::copy(e.path(), snapshot.join(e.file_name()));
    }
    let control = scratch.join("control");
    let log = root.join("target/fuzz").join(format!("merge-{name}.log"));
    let log_file =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    step(
        &format!("merge {name} (log {})", log.display()),
        Command::new("nice")
            .args(["-n", "19"])
            .arg(bin)
            .arg("-set_cover_merge=1")
            .arg(format!("-merge_control_file={}", control.display()))
            .arg(format!("-max_len={COMMITTED_MAX_LEN}"))
            .arg("-timeout=60")
            .arg(&out)
            .arg(seed_dir)
            .arg(&committed)
            .arg(&snapshot)
            .stdout(Stdio::null())
            .stderr(log_file),
    )?;
    let text = std::fs::read_to_string(&control)
        .with_context(|| format!("reading {}", control.display()))?;
    let inputs = parse_control(&text);
    let is_seed = |p: &Path| p.starts_with(seed_dir);
    let before: BTreeSet<PathBuf> = fuzzer_inputs(&committed)?;
    let chosen = pick(&inputs, &is_seed, &committed, COMMITTED_INPUTS);
    // Read every chosen input before removing the old ones: some of them are among those.
    let mut files = Vec::new();
    for input in &chosen {
        let data = std::fs::read(&input.path)
            .with_context(|| format!("reading {}", input.path.display()))?;
        let name = input.path.file_name().context("an input without a name")?;
        files.push((committed.join(name), data));
    }
    for old in &before {
        std::fs::remove_file(old)?;
    }
    let mut bytes = 0;
    for (path, data) in files {
        bytes += data.len();
        std::fs::write(path, data)?;
    }
    let seeds: BTreeSet<u32> = inputs
        .iter()
        .filter(|i| is_seed(&i.path))
        .flat_map(|i| i.features.iter().copied())
        .collect();
    let was = beyond(
        &seeds,
        inputs.iter().filter(|i| i.path.starts_with(&committed)),
    );
    let now = beyond(&seeds, chosen.iter().copied());
    let all = beyond(&seeds, inputs.iter());
    eprintln!(
        "xtask fuzz: merge {name}: {} committed inputs ({bytes} bytes) now cover {now} features beyond the seeds ({was} before, {all} with every input of both corpora)",
        chosen.len()
    );
    Ok(())
}

/// How many features of `set` the seeds lack.
fn beyond<'a>(seeds: &BTreeSet<u32>, set: impl Iterator<Item = &'a Input>) -> usize {
    set.flat_map(|i| i.features.iter().copied())
        .filter(|f| !seeds.contains(f))
        .collect::<BTreeSet<u32>>()
        .len()
}

/// The committed inputs the fuzzer wrote (named by their SHA-1), not the regression inputs.
fn fuzzer_inputs(dir: &Path) -> anyhow::Result<BTreeSet<PathBuf>> {
    Ok(std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| !is_regression(p))
        .collect())
}

fn is_regression(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("regression-"))
}

/// One input of a merge and its features.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub path: PathBuf,
    pub size: usize,
    pub features: Vec<u32>,
}

/// The inputs of a merge control file: a line with the number of files, one with the number in
/// the first folder, the paths, then per input run `STARTED i size`, `FT i features...` and
/// `COV i edges...` (an input that crashed has no `FT` line and is left out).
pub fn parse_control(text: &str) -> Vec<Input> {
    let mut lines = text.lines();
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0);
    let _first = lines.next();
    let paths: Vec<&str> = lines.by_ref().take(count).collect();
    let mut sizes = BTreeMap::new();
    let mut features = BTreeMap::new();
    for line in lines {
        let mut words = line.split_ascii_whitespace();
        let (Some(tag), Some(Ok(i))) = (words.next(), words.next().map(str::parse::<usize>)) else {
            continue;
        };
        match tag {
            "STARTED" => {
                sizes.insert(i, words.next().and_then(|s| s.parse().ok()).unwrap_or(0));
            }
            "FT" => {
                features.insert(i, words.filter_map(|w| w.parse().ok()).collect());
            }
            _ => {}
        }
    }
    features
        .into_iter()
        .filter_map(|(i, features)| {
            Some(Input {
                path: PathBuf::from(paths.get(i)?),
                size: sizes.get(&i).copied().unwrap_or(0),
                features,
            })
        })
        .collect()
}

/// Chooses up to `limit` inputs (described in the module doc): the regression inputs of
/// `committed`, then greedily by the features they add beyond the seeds and what is chosen.
/// Inputs are files named by their content's hash, so one name in two folders is one input
/// (the one in `committed` is taken).
pub fn pick<'a>(
    inputs: &'a [Input],
    is_seed: &dyn Fn(&Path) -> bool,
    committed: &Path,
    limit: usize,
) -> Vec<&'a Input> {
    let mut covered: BTreeSet<u32> = BTreeSet::new();
    let mut candidates: Vec<&Input> = Vec::new();
    let mut names = BTreeSet::new();
    let mut ordered: Vec<&Input> = inputs.iter().collect();
    // Committed inputs first, so that a name in both folders is taken from `committed`.
    ordered.sort_by_key(|i| !i.path.starts_with(committed));
    for input in ordered {
        if is_seed(&input.path) {
            covered.extend(input.features.iter().copied());
        } else if names.insert(input.path.file_name().map(|n| n.to_owned())) {
            candidates.push(input);
        }
    }
    let mut chosen: Vec<&Input> = Vec::new();
    candidates.retain(|i| {
        let keep = is_regression(&i.path) && i.path.starts_with(committed);
        if keep {
            covered.extend(i.features.iter().copied());
            chosen.push(i);
        }
        !keep
    });
    while chosen.len() < limit {
        let gain = |i: &Input| i.features.iter().filter(|f| !covered.contains(f)).count();
        let Some((best, added)) = candidates
            .iter()
            .enumerate()
            .map(|(n, i)| (n, gain(i)))
            .max_by_key(|&(n, g)| (g, std::cmp::Reverse(candidates[n].size)))
        else {
            break;
        };
        if added == 0 {
            break;
        }
        let input = candidates.swap_remove(best);
        covered.extend(input.features.iter().copied());
        chosen.push(input);
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(path: &str, size: usize, features: &[u32]) -> Input {
        Input {
            path: PathBuf::from(path),
            size,
            features: features.to_vec(),
        }
    }

    #[test]
    fn the_control_file_gives_every_input_that_ran_to_the_end_with_its_features() {
        let text = "3\n0\nseeds/a\nwork/b\nwork/c\n\
                    STARTED 0 10\nFT 0 1 2 3\nCOV 0 7\n\
                    STARTED 1 20\n\
                    STARTED 2 30\nFT 2 4\nCOV 2 8\n";
        assert_eq!(
            parse_control(text),
            vec![input("seeds/a", 10, &[1, 2, 3]), input("work/c", 30, &[4])]
        );
    }

    #[test]
    fn the_pick_keeps_regressions_and_takes_the_largest_gain_beyond_the_seeds_first() {
        let inputs = [
            input("seeds/s", 1, &[1, 2, 3]),
            input("corpus/regression-x", 5, &[1]),
            input("corpus/old", 5, &[4]),
            input("work/big", 50, &[1, 2, 3, 5, 6, 7]),
            input("work/small", 5, &[5, 6]),
            input("work/same", 4, &[5, 6]),
            input("work/old", 5, &[4]),
            input("work/nothing", 1, &[2]),
        ];
        let seed = |p: &Path| p.starts_with("seeds");
        let names = |limit| -> Vec<String> {
            pick(&inputs, &seed, Path::new("corpus"), limit)
                .iter()
                .map(|i| i.path.display().to_string())
                .collect()
        };
        // big adds 5,6,7 (1,2,3 are the seeds'); then old adds 4, once, from the committed
        // folder; same and small add nothing more; nothing never adds anything.
        assert_eq!(names(10), ["corpus/regression-x", "work/big", "corpus/old"]);
        assert_eq!(names(2), ["corpus/regression-x", "work/big"]);
        // On an equal gain the smaller input wins.
        let tie = [input("work/a", 9, &[8]), input("work/b", 3, &[8])];
        let chosen = pick(&tie, &seed, Path::new("corpus"), 1);
        assert_eq!(chosen[0].path, PathBuf::from("work/b"));
    }
}
