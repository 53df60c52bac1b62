#ifndef TESSERA_RUNTIME_H
#define TESSERA_RUNTIME_H

#include <stdbool.h>

/// The address of Swift Concurrency's global-enqueue hook (`swift_task_enqueueGlobal_hook`), as the
/// linker resolved it. NIO finds the hook with dlsym, which works when the runtime is a shared
/// library; a binary that links the runtime statically (`--static-swift-stdlib`, as the container
/// image and release stacks do) keeps the symbol local, so dlsym cannot see it but the linker can.
/// NULL if the runtime has no such hook.
void *_Nullable *_Nullable tessera_swift_enqueue_global_hook_address(void);

/// Stores `hook` in the global-enqueue hook if none is installed yet (an atomic compare-and-swap
/// from NULL). Returns false if the hook is missing or another one is already installed.
bool tessera_swift_install_enqueue_global_hook(void *_Nonnull hook);

/// Returns the C allocator's free memory to the system: glibc's `malloc_trim(0)`, which gives back the
/// unused pages inside free chunks of every arena and the top of the main one. 1 if memory was
/// released, 0 if none was, -1 where the C library has no such call.
int tessera_heap_trim(void);

/// Lowers the calling thread's CPU priority, once per thread (later calls return at once): `mode` 1 is
/// `nice` 19, 2 is `SCHED_IDLE` (the thread runs only when no other thread of the machine wants the
/// core), 0 leaves it. Linux keeps nice values and scheduling policies per thread; lowering either
/// needs no privilege. 0 on success or when nothing was asked, -1 on failure (errno set) or where the
/// system has no such calls.
int tessera_lower_thread_priority(int mode);

/// The calling thread's scheduling as the kernel sees it: its policy (0 normal, 5 idle) times 100
/// plus its nice value + 20 (so nice 19 under the normal policy is 39). -1 where unknown. For tests.
int tessera_thread_scheduling(void);

/// The calling thread's time on a CPU and time runnable but waiting for one, in nanoseconds, from
/// Linux's /proc/thread-self/schedstat. 0 on success, -1 where unavailable.
int tessera_thread_schedstat(unsigned long long *_Nonnull on_cpu, unsigned long long *_Nonnull waiting);

/// Starts `path` with `argv` (NULL-terminated) as a child in a session of its own (`setsid`, so Linux
/// schedules it in a group of its own when autogroup is on), with `fds[i]` as its descriptor `3 + i`
/// for each of the `count` descriptors (at most 64). The child's pid goes to `pid`. 0 on success, an
/// errno value otherwise.
int tessera_spawn_in_own_session(
    const char *_Nonnull path, char *_Nullable const *_Nonnull argv, const int *_Nonnull fds, int count,
    int *_Nonnull pid);

/// Sets the nice value of the calling process's autogroup (Linux's /proc/self/autogroup: the weight the
/// scheduler gives the session's group against other sessions' groups). Raising it needs no
/// privilege. 0 on success, -1 where it failed or autogroup is off.
int tessera_set_autogroup_nice(int nice);

/// The nice value of process `pid`'s autogroup (0: the calling process), or -100 where unknown.
int tessera_autogroup_nice(int pid);

/// Closes every descriptor from `first` up. 0 on success, -1 otherwise.
int tessera_close_from(int first);

#endif
