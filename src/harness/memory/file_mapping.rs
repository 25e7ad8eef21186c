//! A private read-only mapping of a whole file, and which of its pages the page cache holds
//! (`mincore`): how the page cache is asked about files on kernels without `cachestat`.

/// A private read-only mapping of a whole file, unmapped on drop.
pub(crate) struct FileMapping {
    addr: *mut libc::c_void,
    len: usize,
}

impl FileMapping {
    /// Maps `file`; `None` for an empty file or a failed `mmap`.
    pub(crate) fn new(file: &std::fs::File) -> Option<FileMapping> {
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 {
            return None;
        }
        // SAFETY: a fresh read-only private mapping of an open file; nothing else aliases it.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                std::os::fd::AsRawFd::as_raw_fd(file),
                0,
            )
        };
        (addr != libc::MAP_FAILED).then_some(FileMapping { addr, len })
    }

    /// The file's bytes (reading them faults their pages in); tests touch mapped pages with it.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `len` readable bytes are mapped at `addr` until `self` is dropped.
        unsafe { std::slice::from_raw_parts(self.addr as *const u8, self.len) }
    }

    /// Bytes of page cache the file holds now (`mincore`; whole pages), `None` where it fails.
    pub(crate) fn resident_bytes(&self) -> Option<u64> {
        let page = procfs::page_size();
        let mut vec = vec![0u8; self.len.div_ceil(page as usize)];
        // SAFETY: `vec` has one byte per page of the mapping, as mincore writes.
        let ok = unsafe { libc::mincore(self.addr, self.len, vec.as_mut_ptr()) } == 0;
        let pages = vec.iter().filter(|&&b| b & 1 == 1).count() as u64;
        ok.then_some(pages * page)
    }
}

impl Drop for FileMapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped, once.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}
