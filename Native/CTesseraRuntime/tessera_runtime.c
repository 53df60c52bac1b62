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
#include <signal.h>
#include <spawn.h>
#include <string.h>
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

#if defined(__linux__)
/// Reads the start of a small file (a /proc entry) into `buffer`, NUL-terminated; false if it cannot.
static bool tessera_read_small_file(const char *path, char *buffer, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    ssize_t length = read(fd, buffer, size - 1);
    close(fd);
    if (length <= 0) {
        return false;
    }
    buffer[length] = '\0';
    return true;
}
#endif

int tessera_thread_schedstat(unsigned long long *on_cpu, unsigned long long *waiting) {
#if defined(__linux__)
    char buffer[128];
    if (!tessera_read_small_file("/proc/thread-self/schedstat", buffer, sizeof(buffer))) {
        return -1;
    }
    return sscanf(buffer, "%llu %llu", on_cpu, waiting) == 2 ? 0 : -1;
#else
    (void)on_cpu;
    (void)waiting;
    return -1;
#endif
}

extern char **environ;

int tessera_spawn_in_own_session(const char *path, char *const *argv, const int *fds, int count, int *pid) {
#if defined(__linux__)
    if (count < 0 || count > 64) {
        return EINVAL;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int result = posix_spawn_file_actions_init(&actions);
    if (result != 0) {
        return result;
    }
    result = posix_spawnattr_init(&attributes);
    if (result != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return result;
    }
    // Two steps, through descriptors above any target, so that a source that happens to be one of
    // the targets 3...3+count is not overwritten before it is copied.
    for (int i = 0; i < count && result == 0; i++) {
        result = posix_spawn_file_actions_adddup2(&actions, fds[i], 900 + i);
    }
    for (int i = 0; i < count && result == 0; i++) {
        result = posix_spawn_file_actions_adddup2(&actions, 900 + i, 3 + i);
        if (result == 0) {
            result = posix_spawn_file_actions_addclose(&actions, 900 + i);
        }
    }
    // Nothing else of ours reaches the child: listening sockets, database connections, files.
    if (result == 0) {
        result = posix_spawn_file_actions_addclosefrom_np(&actions, 3 + count);
    }
    if (result == 0) {
        result = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if (result == 0) {
        result = posix_spawnattr_setsigmask(&attributes, &none);
    }
    if (result == 0) {
        result = posix_spawnattr_setsigdefault(&attributes, &all);
    }
    pid_t child = 0;
    if (result == 0) {
        result = posix_spawn(&child, path, &actions, &attributes, argv, environ);
    }
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    if (result == 0) {
        *pid = (int)child;
    }
    return result;
#else
    (void)path;
    (void)argv;
    (void)fds;
    (void)count;
    (void)pid;
    return ENOSYS;
#endif
}

int tessera_set_autogroup_nice(int nice) {
#if defined(__linux__)
    int fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    char buffer[16];
    int length = snprintf(buffer, sizeof(buffer), "%d", nice);
    ssize_t written = write(fd, buffer, (size_t)length);
    close(fd);
    return written == length ? 0 : -1;
#else
    (void)nice;
    return -1;
#endif
}

int tessera_autogroup_nice(int pid) {
#if defined(__linux__)
    char path[64];
    if (pid == 0) {
        snprintf(path, sizeof(path), "/proc/self/autogroup");
    } else {
        snprintf(path, sizeof(path), "/proc/%d/autogroup", pid);
    }
    char buffer[64];
    if (!tessera_read_small_file(path, buffer, sizeof(buffer))) {
        return -100;
    }
    // "/autogroup-123 nice 19"
    const char *marker = strstr(buffer, "nice ");
    int nice = 0;
    return marker != NULL && sscanf(marker + 5, "%d", &nice) == 1 ? nice : -100;
#else
    (void)pid;
    return -100;
#endif
}

int tessera_close_from(int first) {
#if defined(__linux__)
    return (int)syscall(SYS_close_range, (unsigned int)first, ~0U, 0);
#else
    (void)first;
    return -1;
#endif
}
