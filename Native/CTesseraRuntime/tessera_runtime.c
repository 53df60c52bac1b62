#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE  // SCHED_IDLE and SYS_gettid
#endif
#include "tessera_runtime.h"

#include <stddef.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
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

#if defined(__linux__)
static _Thread_local int tessera_priority_lowered = 0;
#endif

int tessera_lower_thread_priority(int mode) {
#if defined(__linux__)
    if (mode == 0 || tessera_priority_lowered) {
        return 0;
    }
    tessera_priority_lowered = 1;
    if (mode == 2) {
        struct sched_param param = {.sched_priority = 0};
        // pid 0: the calling thread (Linux schedules threads, not processes).
        return sched_setscheduler(0, SCHED_IDLE, &param);
    }
    // setpriority's PRIO_PROCESS takes a thread id on Linux, where nice is a per-thread value.
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
#else
    (void)mode;
    return -1;
#endif
}

int tessera_thread_scheduling(void) {
#if defined(__linux__)
    int policy = sched_getscheduler(0);
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    if (policy < 0 || (nice == -1 && errno != 0)) {
        return -1;
    }
    return policy * 100 + nice + 20;
#else
    return -1;
#endif
}

int tessera_thread_schedstat(unsigned long long *on_cpu, unsigned long long *waiting) {
#if defined(__linux__)
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    char buffer[128];
    ssize_t length = read(fd, buffer, sizeof(buffer) - 1);
    close(fd);
    if (length <= 0) {
        return -1;
    }
    buffer[length] = '\0';
    return sscanf(buffer, "%llu %llu", on_cpu, waiting) == 2 ? 0 : -1;
#else
    (void)on_cpu;
    (void)waiting;
    return -1;
#endif
}
