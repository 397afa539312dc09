//! Writing an output (`lower -o OUT`): atomically where that is possible, through the file where not.
//!
//! What `OUT` is decides how it is written (documented in `docs/cli.md`, "Where the output goes"):
//! - `-`, `/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/1`: our stdout, which must be open;
//! - a regular file, or a path that does not exist: a temporary file next to it, renamed over it;
//! - a symbolic link: followed to its final target, which is then handled by these rules
//!   (a link is never replaced by a file);
//! - anything else that is not a directory (a device such as `/dev/null`, a FIFO, a socket):
//!   written through, never replaced.
//!
//! A temporary file is removed on every failure, and on SIGINT, SIGTERM and SIGHUP ([`crate::signals`]).
//!
//! An atomic write has two halves: [`stage_output`] writes the bytes into the temporary file, and
//! [`Staged::commit`] makes them durable (`fsync`) and renames the file over the output.
//! A single output does both at once ([`write_output`]); a tree hands the second half to
//! [`crate::writeback`]'s I/O threads, so its CPU workers do not wait for the disk.

use std::fs::{File, Metadata, OpenOptions, Permissions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Context};

use crate::io::{is_dash, show_path};

/// Set at startup when file descriptor 1 was not open (`spv-subgroup ... >&-`).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Records whether stdout was open when the process started. Call first thing in `main`.
pub fn note_stdout_state() {
    STDOUT_CLOSED.store(stdout_was_closed(), Ordering::Relaxed);
}

/// Rust's runtime opens `/dev/null` read-write on a standard descriptor that is closed at exec
/// (so a later `open` cannot take its number), and our writes would vanish there with success.
/// A shell's `>/dev/null` opens it write-only, so a read-write `/dev/null` on descriptor 1 is
/// taken as a closed stdout (`1<>/dev/null` is, too; documented in `docs/cli.md`).
#[cfg(target_os = "linux")]
fn stdout_was_closed() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return true;
    };
    let (Ok(meta), Ok(null)) = (File::from(fd).metadata(), std::fs::metadata("/dev/null")) else {
        return false;
    };
    if !(meta.file_type().is_char_device() && meta.rdev() == null.rdev()) {
        return false;
    }
    std::fs::read_to_string("/proc/self/fdinfo/1")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        })
        // O_ACCMODE == O_RDWR
        .is_some_and(|flags| flags & 3 == 2)
}

#[cfg(all(unix, not(target_os = "linux")))]
fn stdout_was_closed() -> bool {
    use std::os::fd::AsFd;
    std::io::stdout().as_fd().try_clone_to_owned().is_err()
}

#[cfg(not(unix))]
fn stdout_was_closed() -> bool {
    false
}

/// Where the bytes go, once `-o OUT` is resolved.
#[derive(Debug)]
enum Dest {
    /// Our own stdout.
    Stdout,
    /// A special file (device, FIFO, socket) or a `/proc` magic link: opened and written.
    Through(PathBuf),
    /// A regular file (or none yet) at this final path: written to a temporary file and renamed.
    Replace(PathBuf, Option<Metadata>),
}

/// Paths that name our own stdout, whatever the `/proc` file system would say.
fn names_stdout(p: &Path) -> bool {
    is_dash(p)
        || p == Path::new("/dev/stdout")
        || p == Path::new("/dev/fd/1")
        || p == Path::new("/proc/self/fd/1")
}

/// Follows `out` through symbolic links (at most 40, as the kernel does) to what it names.
fn resolve(out: &Path) -> anyhow::Result<Dest> {
    let mut path = out.to_owned();
    for _ in 0..40 {
        if names_stdout(&path) {
            return Ok(Dest::Stdout);
        }
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            // A new file (or the missing target of a dangling link): created by the rename.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Dest::Replace(path, None))
            }
            Err(e) => return Err(e).with_context(|| format!("cannot write `{}`", show_path(out))),
        };
        let ty = meta.file_type();
        if ty.is_symlink() {
            let target = std::fs::read_link(&path)
                .with_context(|| format!("cannot follow the link `{}`", show_path(&path)))?;
            // `/proc/<pid>/fd/N` links name open files (`pipe:[123]`), not paths: open the link itself.
            if path.starts_with("/proc") || target.starts_with("/proc") {
                return Ok(if names_stdout(&target) {
                    Dest::Stdout
                } else {
                    Dest::Through(path)
                });
            }
            path = match path.parent() {
                Some(dir) if target.is_relative() => dir.join(target),
                _ => target,
            };
        } else if ty.is_file() {
            return Ok(Dest::Replace(path, Some(meta)));
        } else if ty.is_dir() {
            bail!("cannot write `{}`: it is a directory", show_path(out));
        } else {
            return Ok(Dest::Through(path));
        }
    }
    bail!(
        "cannot write `{}`: too many levels of symbolic links",
        show_path(out)
    )
}

/// Writes `bytes` to `out` as the module doc says, durably: on success the bytes are on disk.
pub fn write_output(out: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    match stage_output(out, bytes)? {
        Written::Done => Ok(()),
        Written::Staged(staged) => {
            let dir = staged.dir().to_owned();
            staged.commit()?;
            sync_dir(&dir)
        }
    }
}

/// What [`stage_output`] did.
#[derive(Debug)]
pub enum Written {
    /// Written in full (stdout, or through a special file): nothing is left to do.
    Done,
    /// In a temporary file next to the output, waiting for [`Staged::commit`].
    Staged(Staged),
}

/// An output's bytes in its temporary file, not yet durable nor renamed.
/// Dropping it removes the temporary file and leaves the output as it was.
#[derive(Debug)]
pub struct Staged {
    tmp: crate::signals::TempGuard,
    /// The final path (links resolved).
    path: PathBuf,
    /// `OUT` as messages show it.
    name: String,
}

impl Staged {
    /// Makes the bytes durable, then renames the temporary file over the output.
    /// On failure the temporary file is removed and the output is untouched.
    pub fn commit(self) -> anyhow::Result<()> {
        let name = &self.name;
        #[cfg(debug_assertions)]
        commit_hooks_for_tests(&self.path, name)?;
        self.tmp
            .file()
            .sync_all()
            .with_context(|| format!("cannot write `{name}`"))?;
        self.tmp
            .persist(&self.path)
            .with_context(|| format!("cannot write `{name}`"))
    }

    /// The directory the output is renamed into.
    pub fn dir(&self) -> &Path {
        parent_dir(&self.path)
    }
}

/// Writes `bytes` for `out`: in full where it is stdout or a special file, else into a
/// temporary file next to it ([`Written::Staged`]), which the caller commits.
pub fn stage_output(out: &Path, bytes: &[u8]) -> anyhow::Result<Written> {
    match resolve(out)? {
        Dest::Stdout => write_stdout(bytes).map(|()| Written::Done),
        Dest::Through(path) => write_through(&path, out, bytes).map(|()| Written::Done),
        Dest::Replace(path, meta) => stage(path, meta.as_ref(), out, bytes).map(Written::Staged),
    }
}

/// `fsync`s a directory, so the renames into it are on disk.
/// A directory we may write but not open (mode `-wx`) cannot be synced this way: that is not an
/// error (the files themselves are durable), nor is a file system that does not sync directories.
pub fn sync_dir(dir: &Path) -> anyhow::Result<()> {
    let Ok(d) = std::fs::File::open(dir) else {
        return Ok(());
    };
    match d.sync_all() {
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Ok(()),
        r => r.with_context(|| format!("cannot make the directory `{}` durable", show_path(dir))),
    }
}

/// The directory a path's file lives in (`.` for a bare name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        bail!("cannot write to stdout: it is closed (file descriptor 1 is not open)");
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes).context("cannot write to stdout")?;
    stdout.flush().context("cannot write to stdout")?;
    Ok(())
}

/// Writes into an existing special file; never creates, truncates or replaces it.
fn write_through(path: &Path, out: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let name = show_path(out);
    let mut f = OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open `{name}` for writing"))?;
    f.write_all(bytes)
        .and_then(|()| f.flush())
        .with_context(|| format!("cannot write `{name}`"))
}

/// Writes `bytes` into a new temporary file next to `path`, with the mode `path` will have.
fn stage(
    path: PathBuf,
    old: Option<&Metadata>,
    out: &Path,
    bytes: &[u8],
) -> anyhow::Result<Staged> {
    let name = show_path(out);
    let tmp = crate::signals::TempGuard::create(parent_dir(&path), new_file_permissions())
        .with_context(|| format!("cannot create a temporary file next to `{name}`"))?;
    let file: &File = tmp.file();
    #[cfg(debug_assertions)]
    pause_for_tests();
    (&*file)
        .write_all(bytes)
        .with_context(|| format!("cannot write `{name}`"))?;
    if let Some(old) = old {
        keep_metadata(file, old).with_context(|| format!("cannot set the mode of `{name}`"))?;
        if links(old) > 1 {
            // Renaming replaces this name only; the other names keep the old content (documented).
            crate::io::eprint_line(&format!(
                "note: `{name}` had {} other hard link(s); they keep the old content",
                links(old) - 1
            ));
        }
    }
    Ok(Staged { tmp, path, name })
}

/// The mode a new output is created with: 0666 less the umask, as a plain `open(O_CREAT)` gives.
fn new_file_permissions() -> Option<Permissions> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        Some(Permissions::from_mode(0o666))
    }
    #[cfg(not(unix))]
    None
}

/// An existing output keeps its owner (as far as we may set it) and mode, less setuid and setgid:
/// new content is not the program someone marked privileged.
#[cfg(unix)]
fn keep_metadata(file: &File, old: &Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // Only root may give a file away; for anyone else the owner is theirs anyway.
    let _ = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()));
    file.set_permissions(Permissions::from_mode(old.mode() & 0o1777))
}

#[cfg(not(unix))]
fn keep_metadata(file: &File, old: &Metadata) -> std::io::Result<()> {
    file.set_permissions(old.permissions())
}

#[cfg(unix)]
fn links(m: &Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(m)
}

#[cfg(not(unix))]
fn links(_: &Metadata) -> u64 {
    1
}

/// Debug builds only: `SPV_SUBGROUP_TEST_PAUSE_WRITE=MS` sleeps after the temporary file exists,
/// so the tests can send a signal in the middle of a write.
#[cfg(debug_assertions)]
fn pause_for_tests() {
    if let Some(ms) = std::env::var_os("SPV_SUBGROUP_TEST_PAUSE_WRITE")
        .and_then(|v| v.to_str().and_then(|s| s.parse::<u64>().ok()))
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Debug builds only: `SPV_SUBGROUP_TEST_PAUSE_COMMIT=MS` sleeps before an output is made durable
/// and renamed, and `SPV_SUBGROUP_TEST_FAIL_COMMIT=NAME` fails that step for outputs whose file
/// name is `NAME`, so the tests can stop or break a tree while its writes are under way.
#[cfg(debug_assertions)]
fn commit_hooks_for_tests(path: &Path, name: &str) -> anyhow::Result<()> {
    if let Some(ms) = std::env::var_os("SPV_SUBGROUP_TEST_PAUSE_COMMIT")
        .and_then(|v| v.to_str().and_then(|s| s.parse::<u64>().ok()))
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    match std::env::var_os("SPV_SUBGROUP_TEST_FAIL_COMMIT") {
        Some(fail) if path.file_name() == Some(fail.as_os_str()) => {
            bail!("cannot write `{name}`: failed on purpose (SPV_SUBGROUP_TEST_FAIL_COMMIT)")
        }
        _ => Ok(()),
    }
}
