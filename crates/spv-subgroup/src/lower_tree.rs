//! `spv-subgroup lower` over several inputs or directories: `-o OUTDIR` mirrors them.
//!
//! Every `*.spv` below an input directory goes to the same relative path under `OUTDIR`; an input
//! file goes to `OUTDIR/<its file name>`. The plan is made and checked before anything is written
//! (two inputs for one output, or an output that is another input, are usage errors); an output
//! directory inside an input directory is not searched, so a second run does not lower its own
//! output. Modules are lowered on all cores ([`crate::parallel`]), each staged in a temporary file
//! next to its output ([`crate::output`]) as soon as it is verified, then made durable and renamed
//! by I/O threads ([`crate::writeback`]) while the workers go on; messages come in input order,
//! each once its output is on disk, then one summary.
//! The exit status is the highest any module calls for: 3 (internal error), 2 (IO), 1 (refused).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use spv_subgroup_lower::LowerReport;

use crate::io::{eprint_line, error_chain, find_spv, is_dash, show_path, terminal_text, Walk};
use crate::lower_job::{Done, Job, Refused};
use crate::output::{stage_output, Written};
use crate::writeback::{Ticket, Writeback};
use crate::{EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE};

/// Whether the inputs call for tree mode: more than one, or a directory.
pub fn is_tree(inputs: &[PathBuf]) -> bool {
    inputs.len() > 1 || inputs.iter().any(|p| !is_dash(p) && p.is_dir())
}

/// One module to lower: where it is read from and written to.
struct Item {
    input: PathBuf,
    output: PathBuf,
}

/// What became of one module.
enum Outcome {
    Lowered(LowerReport),
    Unchanged,
    Refused(Refused),
    /// The input could not be read or the output not written.
    Io(anyhow::Error),
}

/// Counts for the summary line.
#[derive(Default)]
struct Tally {
    lowered: usize,
    ops: usize,
    unchanged: usize,
    refused: Vec<&'static str>,
    io: usize,
    internal: usize,
}

/// Lowers every module the inputs name into `out`; returns the exit status.
pub fn run(inputs: &[PathBuf], out: &Path, job: &Job, quiet: bool) -> anyhow::Result<u8> {
    if inputs.iter().any(|p| is_dash(p)) {
        bail!("stdin (`-`) cannot be one of several inputs or go with a directory: lower it on its own");
    }
    if is_dash(out) {
        bail!("with several inputs or a directory, `-o` names a directory, not stdout");
    }
    match std::fs::metadata(out) {
        Ok(m) if !m.is_dir() => bail!(
            "with several inputs or a directory, `-o` names a directory; `{}` is not one",
            show_path(out)
        ),
        _ => {}
    }
    let Plan {
        items,
        unsearchable,
        out_canon,
    } = plan(inputs, out)?;
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create the output directory `{}`", show_path(out)))?;
    let mut tally = Tally::default();
    // A directory that could not be listed is an IO error of its own; the rest of the tree goes on.
    for (dir, e) in unsearchable {
        let e = anyhow::Error::new(e).context(format!(
            "cannot search directory `{}`: its modules are not lowered",
            show_path(&dir)
        ));
        eprint_line(&error_chain(&e));
        tally.io += 1;
    }
    let writeback = Writeback::start();
    crate::parallel::for_each_ordered(
        &items,
        |item| lower_one(item, job, &out_canon, &writeback),
        |_, (outcome, write)| {
            // Reported in input order, each once its output is on disk (or failed to get there).
            let outcome = match write.map(Ticket::wait) {
                Some(Err(e)) => Outcome::Io(e),
                _ => outcome,
            };
            match outcome {
                Outcome::Lowered(report) => {
                    tally.lowered += 1;
                    tally.ops += report.rewrites.iter().map(|(_, n)| n).sum::<usize>();
                }
                Outcome::Unchanged => tally.unchanged += 1,
                Outcome::Refused(r) => {
                    eprint_line(&terminal_text(&r.message));
                    if r.exit == EXIT_INTERNAL {
                        tally.internal += 1;
                    } else {
                        tally.refused.push(r.kind);
                    }
                }
                Outcome::Io(e) => {
                    eprint_line(&error_chain(&e));
                    tally.io += 1;
                }
            }
            Ok(())
        },
    )?;
    for e in writeback.finish() {
        eprint_line(&error_chain(&e));
        tally.io += 1;
    }
    if !quiet {
        eprint_line(&terminal_text(&summary(
            &tally,
            items.len(),
            out,
            &job.opts.target.name,
        )));
    }
    Ok(if tally.internal > 0 {
        EXIT_INTERNAL
    } else if tally.io > 0 {
        EXIT_USAGE
    } else if !tally.refused.is_empty() {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    })
}

/// What a tree run will do.
struct Plan {
    /// Every module to lower, in input order.
    items: Vec<Item>,
    /// The directories below the inputs that could not be listed, with why.
    unsearchable: Vec<(PathBuf, std::io::Error)>,
    /// The output directory, absolute with its links resolved.
    out_canon: PathBuf,
}

/// Lists every module to lower with its output path, refusing plans that would lose work.
fn plan(inputs: &[PathBuf], out: &Path) -> anyhow::Result<Plan> {
    let out_canon = canonical(out)?;
    // The output directory is not searched when it exists below an input (it does when we
    // created it in a run before).
    let skip = out_canon.as_path();
    let mut items = Vec::new();
    let mut unsearchable = Vec::new();
    for p in inputs {
        if p.is_dir() {
            let mut walk = Walk::default();
            find_spv(p, Some(skip), &mut walk);
            if walk.is_empty() {
                bail!("no `*.spv` files found under `{}`", show_path(p));
            }
            unsearchable.append(&mut walk.unsearchable);
            let mut found = walk.files;
            found.sort();
            for f in found {
                let rel = f.strip_prefix(p).unwrap_or(&f).to_owned();
                items.push(Item {
                    output: out.join(rel),
                    input: f,
                });
            }
        } else {
            let Some(name) = p.file_name() else {
                bail!("`{}` names no file", show_path(p));
            };
            items.push(Item {
                output: out.join(name),
                input: p.clone(),
            });
        }
    }
    // Compared as canonical paths, so `a/../b.spv` and `b.spv` are one file. One file may be
    // several inputs (a link beside its target): each gets its own output. An input that cannot be
    // resolved (a dangling link) is reported when it is read.
    let canon_inputs: Vec<Option<PathBuf>> = items
        .iter()
        .map(|it| std::fs::canonicalize(&it.input).ok())
        .collect();
    let inputs_canon: HashMap<&Path, usize> = canon_inputs
        .iter()
        .enumerate()
        .filter_map(|(i, c)| Some((c.as_deref()?, i)))
        .collect();
    let mut outputs: HashMap<PathBuf, usize> = HashMap::new();
    for (i, it) in items.iter().enumerate() {
        let rel = it.output.strip_prefix(out).unwrap_or(&it.output);
        let canon = out_canon.join(rel);
        if let Some(&j) = outputs.get(&canon) {
            bail!(
                "`{}` and `{}` would both be written to `{}`",
                show_path(&items[j].input),
                show_path(&it.input),
                show_path(&it.output)
            );
        }
        match inputs_canon.get(canon.as_path()) {
            Some(&j) if canon_inputs[i].as_ref() != Some(&canon) => bail!(
                "`{}` would be written over `{}`, another input",
                show_path(&it.input),
                show_path(&items[j].input)
            ),
            _ => {}
        }
        outputs.insert(canon, i);
    }
    unsearchable.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Plan {
        items,
        unsearchable,
        out_canon,
    })
}

/// `p` made absolute with its symbolic links resolved, also when it does not exist yet (the
/// nearest existing ancestor is resolved, the rest appended).
fn canonical(p: &Path) -> anyhow::Result<PathBuf> {
    let abs =
        std::path::absolute(p).with_context(|| format!("cannot resolve `{}`", show_path(p)))?;
    let mut tail = Vec::new();
    let mut cur = abs.as_path();
    loop {
        if let Ok(c) = std::fs::canonicalize(cur) {
            return Ok(tail.iter().rev().fold(c, |acc: PathBuf, t| acc.join(t)));
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_owned());
                cur = parent;
            }
            _ => return Ok(abs),
        }
    }
}

/// Refuses an output path that is a symbolic link, or whose directory leads outside `out_canon`
/// (the output directory, resolved) through one: a tree's outputs are files of their own in the
/// output tree, never written through a link (in place, `tree/ext.spv -> ../outside/x.spv`
/// would rewrite the file outside the tree).
fn check_output_in_tree(output: &Path, out_canon: &Path) -> anyhow::Result<()> {
    let is_link = std::fs::symlink_metadata(output).is_ok_and(|m| m.file_type().is_symlink());
    if is_link {
        bail!(
            "cannot write `{}`: it is a symbolic link, and a tree's outputs are never written \
             through links (lower that module on its own, or remove the link)",
            show_path(output)
        );
    }
    let dir = output.parent().unwrap_or(Path::new("."));
    let dir_canon = std::fs::canonicalize(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    })
    .with_context(|| format!("cannot resolve the directory of `{}`", show_path(output)))?;
    if !dir_canon.starts_with(out_canon) {
        bail!(
            "cannot write `{}`: its directory leads outside the output directory through a \
             symbolic link (to `{}`), and a tree's outputs are never written through links",
            show_path(output),
            show_path(&dir_canon)
        );
    }
    Ok(())
}

/// Reads, lowers, verifies and stages one module; its output is committed by `writeback`, and
/// the ticket says how that went (none when nothing is left to commit).
fn lower_one(
    item: &Item,
    job: &Job,
    out_canon: &Path,
    writeback: &Writeback,
) -> (Outcome, Option<Ticket>) {
    let name = show_path(&item.input);
    let bytes = match std::fs::read(&item.input) {
        Ok(b) => b,
        Err(e) => {
            let e = anyhow::Error::new(e).context(format!("cannot read `{name}`"));
            return (Outcome::Io(e), None);
        }
    };
    let done = match job.lower(&name, &bytes, &show_path(&item.output)) {
        Ok(d) => d,
        Err(r) => return (Outcome::Refused(r), None),
    };
    let written = item
        .output
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .with_context(|| {
            format!(
                "cannot create the directory of `{}`",
                show_path(&item.output)
            )
        })
        .and_then(|()| check_output_in_tree(&item.output, out_canon))
        .and_then(|()| stage_output(&item.output, done.bytes(&bytes)));
    let ticket = match written {
        Err(e) => return (Outcome::Io(e), None),
        Ok(Written::Done) => None,
        Ok(Written::Staged(staged)) => Some(writeback.submit(staged)),
    };
    let outcome = match done {
        Done::Lowered(_, report) => Outcome::Lowered(report),
        Done::Unchanged => Outcome::Unchanged,
    };
    (outcome, ticket)
}

/// `lowered 12 files into `out` (target vulkan1.1): 9 lowered (31 ops), 2 unchanged, 1 refused (1 unsupported)`.
fn summary(t: &Tally, files: usize, out: &Path, target: &str) -> String {
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let mut parts = vec![
        format!("{} lowered ({})", t.lowered, plural(t.ops, "op")),
        format!("{} unchanged", t.unchanged),
    ];
    if !t.refused.is_empty() {
        let mut kinds: Vec<(&str, usize)> = Vec::new();
        for k in &t.refused {
            match kinds.iter_mut().find(|(name, _)| name == k) {
                Some((_, n)) => *n += 1,
                None => kinds.push((k, 1)),
            }
        }
        kinds.sort();
        let why: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
        parts.push(format!("{} refused ({})", t.refused.len(), why.join(", ")));
    }
    if t.io > 0 {
        parts.push(plural(t.io, "IO error"));
    }
    if t.internal > 0 {
        parts.push(plural(t.internal, "internal error"));
    }
    format!(
        "{} into `{}` (target {target}): {}",
        plural(files, "file"),
        show_path(out),
        parts.join(", ")
    )
}
