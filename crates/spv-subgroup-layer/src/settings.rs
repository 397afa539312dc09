//! The layer's settings, read from the environment when an instance is created (so a process
//! may create instances with different settings), and its messages on stderr.

use std::ffi::OsString;
use std::path::PathBuf;

/// How much the layer writes to stderr (`SPV_SUBGROUP_LAYER_LOG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Nothing.
    Off,
    /// Refused modules and failures only (the default).
    Error,
    /// Also every module lowered, passed through or taken from the cache.
    Info,
}

/// What `SPV_SUBGROUP_LAYER_*` asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `SPV_SUBGROUP_LAYER_FORCE=1`: emulate (and lower for) the extensions even where the
    /// driver has them.
    pub force: bool,
    /// `SPV_SUBGROUP_LAYER_LOG=off|error|info`.
    pub log: LogLevel,
    /// `SPV_SUBGROUP_LAYER_CACHE=DIR`: lowered modules are also kept on disk here, if the folder
    /// is this user's and no one else may write it (`disk_cache.rs`).
    pub cache_dir: Option<PathBuf>,
    /// `SPV_SUBGROUP_LAYER_DUMP=DIR`: every original and lowered module is written here.
    pub dump_dir: Option<PathBuf>,
    /// `SPV_SUBGROUP_LAYER_SUBGROUP_SIZE=N`: the subgroup size every device reports and every
    /// module is emulated at (a power of two from 1 to 64; each device checks it against its
    /// own sizes, `DeviceFacts::emulated_size`).
    pub subgroup_size: Option<u32>,
}

/// The largest subgroup size the lowering emulates (`LowerOptions::emulate_subgroup_size`).
pub const MAX_EMULATED_SUBGROUP_SIZE: u32 = 64;

impl Settings {
    /// The settings of this process's environment now.
    pub fn from_env() -> Settings {
        Settings::from_vars(|name| std::env::var_os(name))
    }

    /// The settings the variables `var` returns give; unknown values fall back to the default
    /// (and are reported at the `error` level, since a typo should not pass silently).
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Settings {
        let text = |name: &str| var(name).map(|v| v.to_string_lossy().trim().to_owned());
        let (log, bad_log) = match text("SPV_SUBGROUP_LAYER_LOG").as_deref() {
            None | Some("") | Some("error") => (LogLevel::Error, None),
            Some("off") => (LogLevel::Off, None),
            Some("info") => (LogLevel::Info, None),
            Some(other) => (LogLevel::Error, Some(other.to_owned())),
        };
        let dir = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let (subgroup_size, bad_size) = match text("SPV_SUBGROUP_LAYER_SUBGROUP_SIZE").as_deref() {
            None | Some("") => (None, None),
            Some(t) => match t.parse::<u32>() {
                Ok(n) if n.is_power_of_two() && n <= MAX_EMULATED_SUBGROUP_SIZE => (Some(n), None),
                _ => (None, Some(t.to_owned())),
            },
        };
        let settings = Settings {
            force: matches!(
                text("SPV_SUBGROUP_LAYER_FORCE").as_deref(),
                Some("1" | "true")
            ),
            log,
            cache_dir: dir("SPV_SUBGROUP_LAYER_CACHE"),
            dump_dir: dir("SPV_SUBGROUP_LAYER_DUMP"),
            subgroup_size,
        };
        if let Some(bad) = bad_log {
            settings.error(&format!(
                "SPV_SUBGROUP_LAYER_LOG={bad:?} is not one of off, error, info; using error"
            ));
        }
        if let Some(bad) = bad_size {
            settings.error(&format!(
                "SPV_SUBGROUP_LAYER_SUBGROUP_SIZE={bad:?} is not a power of two from 1 to \
                 {MAX_EMULATED_SUBGROUP_SIZE}; ignored (devices report and run their own size)"
            ));
        }
        settings
    }

    /// Writes `message` to stderr at the `error` level.
    pub fn error(&self, message: &str) {
        if self.log >= LogLevel::Error {
            eprintln!("VK_LAYER_SPV_SUBGROUP_lower: error: {message}");
        }
    }

    /// Writes `message` to stderr at the `info` level.
    pub fn info(&self, message: &str) {
        if self.log >= LogLevel::Info {
            eprintln!("VK_LAYER_SPV_SUBGROUP_lower: {message}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Settings {
        Settings::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn defaults_lower_only_what_the_driver_lacks_and_log_errors() {
        let s = settings(&[]);
        assert!(!s.force);
        assert_eq!(s.log, LogLevel::Error);
        assert_eq!(s.cache_dir, None);
        assert_eq!(s.dump_dir, None);
        assert_eq!(s.subgroup_size, None);
    }

    #[test]
    fn the_emulated_size_is_a_power_of_two_up_to_64_or_ignored() {
        let size = |v: &str| settings(&[("SPV_SUBGROUP_LAYER_SUBGROUP_SIZE", v)]).subgroup_size;
        for n in [1, 2, 4, 8, 16, 32, 64] {
            assert_eq!(size(&n.to_string()), Some(n));
        }
        assert_eq!(size(" 8 "), Some(8));
        for bad in ["0", "3", "12", "128", "-8", "eight", "8.0"] {
            assert_eq!(size(bad), None, "{bad}");
        }
        assert_eq!(size(""), None);
    }

    #[test]
    fn each_variable_is_read() {
        let s = settings(&[
            ("SPV_SUBGROUP_LAYER_FORCE", "1"),
            ("SPV_SUBGROUP_LAYER_LOG", "info"),
            ("SPV_SUBGROUP_LAYER_CACHE", "/tmp/c"),
            ("SPV_SUBGROUP_LAYER_DUMP", "/tmp/d"),
            ("SPV_SUBGROUP_LAYER_SUBGROUP_SIZE", "8"),
        ]);
        assert_eq!(s.subgroup_size, Some(8));
        assert!(s.force);
        assert_eq!(s.log, LogLevel::Info);
        assert_eq!(s.cache_dir, Some(PathBuf::from("/tmp/c")));
        assert_eq!(s.dump_dir, Some(PathBuf::from("/tmp/d")));
        assert_eq!(
            settings(&[("SPV_SUBGROUP_LAYER_LOG", "off")]).log,
            LogLevel::Off
        );
        assert!(!settings(&[("SPV_SUBGROUP_LAYER_FORCE", "0")]).force);
        assert_eq!(
            settings(&[("SPV_SUBGROUP_LAYER_LOG", "loud")]).log,
            LogLevel::Error
        );
    }
}
