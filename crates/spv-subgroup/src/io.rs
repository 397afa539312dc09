//! Reading inputs (files, directories, stdin), writing outputs atomically, and `BrokenPipe` handling.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// One module to read: a file, or stdin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Standard input.
    Stdin,
    /// A file on disk.
    File(PathBuf),
}

impl Source {
    /// The name findings and messages use for this input.
    pub fn display_name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".to_owned(),
            Source::File(p) => show_path(p),
        }
    }

    /// Reads the whole input.
    pub fn read(&self) -> anyhow::Result<Vec<u8>> {
        match self {
            Source::Stdin => {
                let mut bytes = Vec::new();
                std::io::stdin()
                    .lock()
                    .read_to_end(&mut bytes)
                    .context("cannot read stdin")?;
                Ok(bytes)
            }
            Source::File(p) => {
                std::fs::read(p).with_context(|| format!("cannot read `{}`", show_path(p)))
            }
        }
    }
}

/// A path as messages and JSON show it: its UTF-8 text, with `\\` for a backslash, `\u{..}` for a
/// control character and `\xNN` for each byte that is not UTF-8, so two different names never
/// print the same and no name can send escape sequences to a terminal.
pub fn show_path(p: &Path) -> String {
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str());
    #[cfg(not(unix))]
    let lossy = p.to_string_lossy();
    #[cfg(not(unix))]
    let bytes = lossy.as_bytes();
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid().replace('\\', "\\\\");
        out.push_str(&spv_subgroup_validate::escape_controls(&valid));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Whether the argument means stdin/stdout.
pub fn is_dash(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// A single input argument as a [`Source`].
pub fn source_of(p: &Path) -> Source {
    if is_dash(p) {
        Source::Stdin
    } else {
        Source::File(p.to_owned())
    }
}

/// Refuses to read SPIR-V from an interactive terminal (the user probably forgot the file name).
pub fn check_stdin_not_terminal() -> anyhow::Result<()> {
    if std::io::stdin().is_terminal() {
        bail!("no input given and stdin is a terminal: pass a SPIR-V file, a directory, or pipe a module into `-`");
    }
    Ok(())
}

/// Expands the command line's inputs: `-` or nothing is stdin, a directory is every `*.spv`
/// below it (recursively, sorted), anything else is a file.
pub fn expand_inputs(inputs: &[PathBuf]) -> anyhow::Result<Vec<Source>> {
    // A second read of stdin would see an empty stream and report it as a malformed module.
    if inputs.iter().filter(|p| is_dash(p)).count() > 1 {
        bail!("stdin (`-`) is given more than once: it can be read only once");
    }
    if inputs.is_empty() {
        check_stdin_not_terminal()?;
        return Ok(vec![Source::Stdin]);
    }
    let mut out = Vec::new();
    for p in inputs {
        if is_dash(p) {
            check_stdin_not_terminal()?;
            out.push(Source::Stdin);
        } else if p.is_dir() {
            let mut found = Vec::new();
            find_spv(p, None, &mut found)
                .with_context(|| format!("cannot search directory `{}`", show_path(p)))?;
            if found.is_empty() {
                bail!("no `*.spv` files found under `{}`", show_path(p));
            }
            found.sort();
            out.extend(found.into_iter().map(Source::File));
        } else {
            out.push(Source::File(p.clone()));
        }
    }
    Ok(out)
}

/// Collects `*.spv` entries below `dir`; symbolic links to directories are not followed (no cycles).
/// A `*.spv` symbolic link that leads nowhere (dangling, or a loop) is collected too, so reading it
/// fails and the run reports it as unreadable rather than passing over a missing build product.
/// `skip` (a canonical path) is a directory not to enter: `lower`'s output inside its input.
pub fn find_spv(dir: &Path, skip: Option<&Path>, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let ty = entry.file_type()?;
        if ty.is_dir() {
            if skip.is_some_and(|s| std::fs::canonicalize(&path).is_ok_and(|c| c == s)) {
                continue;
            }
            find_spv(&path, skip, found)?;
        } else if path.extension().is_some_and(|e| e == "spv") && !path.is_dir() {
            found.push(path);
        }
    }
    Ok(())
}

/// Writes `bytes` to `out`: `-` (and `/dev/stdout`) is stdout; see [`crate::output`] for files.
pub fn write_atomically(out: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    crate::output::write_output(out, bytes)
}

/// Whether the error comes from writing into a closed pipe (e.g. `spv-subgroup ... | head`).
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Writes text to stdout, reporting `BrokenPipe` as an error (unlike `print!`, which panics).
pub fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// `error: ...` with anyhow's `Caused by:` list, without the backtrace `{:?}` adds when
/// `RUST_BACKTRACE` is set (a user-facing message, not a crash report).
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut s = format!("error: {e}");
    let causes: Vec<String> = e.chain().skip(1).map(|c| c.to_string()).collect();
    if !causes.is_empty() {
        s.push_str("\n\nCaused by:");
        for (i, c) in causes.iter().enumerate() {
            if causes.len() == 1 {
                s.push_str(&format!("\n    {c}"));
            } else {
                s.push_str(&format!("\n    {i}: {c}"));
            }
        }
    }
    s
}
