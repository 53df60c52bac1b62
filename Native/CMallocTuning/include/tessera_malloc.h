#ifndef TESSERA_MALLOC_H
#define TESSERA_MALLOC_H

/// Serve every allocation of at least `bytes` with its own mmap, returned to the system when freed
/// (glibc's M_MMAP_THRESHOLD, which also stops glibc from raising the threshold by itself).
/// Returns 1 on success, 0 where the C library has no such setting.
int tessera_set_mmap_threshold(int bytes);

#endif
