//! A `filesystem` postcondition, checked by reading the file as it is
//! (the Linux desktops share it): never a FIFO or a device, never more
//! than a bounded size.

use adk_computer_use::digest::sha256_prefixed;

/// The most of a file a check reads: a bigger file fails the check.
const MOST_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// What a regular file at `path` holds, `Ok(None)` when nothing is there,
/// `Err` when what is there cannot be read as a file (a directory, a
/// device, a FIFO, a file it may not read or bigger than
/// [`MOST_FILE_BYTES`]). A FIFO is refused before it is opened, and the
/// open does not block on one swapped in since.
fn file_content(path: &str) -> Result<Option<Vec<u8>>, String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    /// `O_NONBLOCK` on Linux.
    const NONBLOCK: i32 = 0o4000;
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
        Ok(meta) if !meta.is_file() => return Err("not a regular file".into()),
        Ok(_) => {}
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() || meta.len() > MOST_FILE_BYTES {
        return Err("not a regular file of at most 16 MiB".into());
    }
    let mut content = Vec::new();
    file.take(MOST_FILE_BYTES + 1)
        .read_to_end(&mut content)
        .map_err(|e| e.to_string())?;
    if content.len() as u64 > MOST_FILE_BYTES {
        return Err("bigger than 16 MiB".into());
    }
    Ok(Some(content))
}

/// Whether the file check holds now: a path that cannot be read as a file
/// satisfies neither `exists: true` nor `exists: false`.
pub fn file_holds(path: &str, exists: bool, digest: Option<&str>) -> bool {
    match file_content(path) {
        Err(_) => false,
        Ok(content) => {
            content.is_some() == exists
                && digest
                    .is_none_or(|d| content.as_deref().map(sha256_prefixed).as_deref() == Some(d))
        }
    }
}
