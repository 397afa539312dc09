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
            Source::File(p) => p.display().to_string(),
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
                std::fs::read(p).with_context(|| format!("cannot read `{}`", p.display()))
            }
        }
    }
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
            find_spv(p, &mut found)
                .with_context(|| format!("cannot search directory `{}`", p.display()))?;
            if found.is_empty() {
                bail!("no `*.spv` files found under `{}`", p.display());
            }
            found.sort();
            out.extend(found.into_iter().map(Source::File));
        } else {
            out.push(Source::File(p.clone()));
        }
    }
    Ok(out)
}

/// Collects `*.spv` files below `dir`; symbolic links to directories are not followed (no cycles).
fn find_spv(dir: &Path, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let ty = entry.file_type()?;
        if ty.is_dir() {
            find_spv(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "spv") && path.is_file() {
            found.push(path);
        }
    }
    Ok(())
}

/// Writes `bytes` to `out` (`-` is stdout). A file is written to a temporary file in the same
/// directory and renamed over `out`, so a failure never leaves a partial file behind.
pub fn write_atomically(out: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if is_dash(out) {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(bytes).context("cannot write to stdout")?;
        stdout.flush().context("cannot write to stdout")?;
        return Ok(());
    }
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = out.display();
    let mut tmp = tempfile::Builder::new()
        .prefix(".spv-subgroup-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file next to `{name}`"))?;
    tmp.write_all(bytes)
        .with_context(|| format!("cannot write `{name}`"))?;
    tmp.as_file()
        .sync_all()
        .with_context(|| format!("cannot write `{name}`"))?;
    // The temporary file is private (0600); give the result the permissions a plain write would.
    let perms = match std::fs::metadata(out) {
        Ok(m) => m.permissions(),
        Err(_) => default_permissions(tmp.as_file())?,
    };
    std::fs::set_permissions(tmp.path(), perms)
        .with_context(|| format!("cannot set the permissions of `{name}`"))?;
    tmp.persist(out)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot write `{name}`"))?;
    Ok(())
}

#[cfg(unix)]
fn default_permissions(_: &std::fs::File) -> anyhow::Result<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    Ok(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn default_permissions(f: &std::fs::File) -> anyhow::Result<std::fs::Permissions> {
    Ok(f.metadata()?.permissions())
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
