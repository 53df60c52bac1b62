#include "tessera_runtime.h"

#include <stddef.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

// Declared weak so that the compiler reaches it through the GOT: a direct (copy-relocated) access
// would give the executable its own copy of a variable the runtime reads from its own storage.
extern void *swift_task_enqueueGlobal_hook __attribute__((weak));

void **tessera_swift_enqueue_global_hook_address(void) {
    return &swift_task_enqueueGlobal_hook;
}

bool tessera_swift_install_enqueue_global_hook(void *hook) {
    void **slot = tessera_swift_enqueue_global_hook_address();
    if (slot == NULL) {
        return false;
    }
    void *expected = NULL;
    return __atomic_compare_exchange_n(slot, &expected, hook, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

int tessera_heap_trim(void) {
#if defined(__GLIBC__)
    return malloc_trim(0);
#else
    return -1;
#endif
}
