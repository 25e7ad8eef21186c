//! The storage a path lives on: its block device (the whole disk, not the partition), the
//! device's model and whether it spins, and the filesystem, from `/proc/self/mountinfo` and
//! `/sys/dev/block`.

use crate::matrix::Storage;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Where `path` is stored (`None` where it does not exist).
pub fn storage_of(path: &Path) -> Option<Storage> {
    let dev = std::fs::metadata(path).ok()?.dev();
    let (major, minor) = split_dev(dev);
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let filesystem = filesystem_of(&mountinfo, major, minor).unwrap_or_else(|| "unknown".into());
    let sys = Path::new("/sys/dev/block").join(format!("{major}:{minor}"));
    let Ok(real) = std::fs::canonicalize(&sys) else {
        return Some(Storage {
            device: filesystem.clone(),
            filesystem,
            ..Storage::default()
        });
    };
    // A partition's directory sits inside its disk's.
    let disk = if real.join("partition").exists() {
        real.parent().map(Path::to_path_buf).unwrap_or(real)
    } else {
        real
    };
    let read = |rel: &str| {
        std::fs::read_to_string(disk.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    Some(Storage {
        device: disk
            .file_name()
            .map_or("unknown".into(), |n| n.to_string_lossy().into_owned()),
        model: read("device/model"),
        rotational: read("queue/rotational").map(|r| r == "1"),
        filesystem,
    })
}

/// Linux's `major`/`minor` of a `dev_t`.
fn split_dev(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major, minor)
}

/// The filesystem type of the mount whose device is `major:minor` in a `mountinfo` text.
fn filesystem_of(mountinfo: &str, major: u64, minor: u64) -> Option<String> {
    let want = format!("{major}:{minor}");
    mountinfo.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        (fields.nth(2)? == want).then_some(())?;
        let (_, after) = line.split_once(" - ")?;
        after.split_whitespace().next().map(str::to_string)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_names_the_filesystem() {
        let text = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                    25 22 0:21 / /tmp rw shared:2 - tmpfs tmpfs rw\n";
        assert_eq!(filesystem_of(text, 254, 0).as_deref(), Some("ext4"));
        assert_eq!(filesystem_of(text, 0, 21).as_deref(), Some("tmpfs"));
        assert_eq!(filesystem_of(text, 8, 1), None);
    }

    #[test]
    fn dev_numbers_split_as_linux_does() {
        assert_eq!(split_dev((254 << 8) | 3), (254, 3));
        assert_eq!(split_dev((259 << 8) | (1 << 20)), (259, 256));
    }

    #[test]
    fn this_directory_has_a_storage() {
        let s = storage_of(Path::new(".")).expect("the working directory exists");
        assert!(!s.device.is_empty() && s.filesystem != "unknown", "{s:?}");
        assert_eq!(storage_of(Path::new("/no/such/path")), None);
    }
}
